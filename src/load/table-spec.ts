import type { LoadValue, RawCopyTextBody, RawCsvBody, SetAsideRecord } from '../copy-text/bodies.js';

/**
 * Declarations of warehouse tables (made by pipelines/ from the catalog) and of what a load gets
 * from a parser. The loader knows nothing of CSV, XML, JSON or HTTP: only these shapes.
 */

/** A data column of a cybs.* table. `pgType` is a PostgreSQL type such as `text`, `numeric`, `timestamptz`. */
export interface ColumnDecl {
  name: string;
  pgType: string;
  description?: string;
}

/** The lineage columns every cybs.* table has, after its data columns. */
export const LINEAGE_COLUMNS: readonly ColumnDecl[] = [
  {
    name: '_organization_id',
    pgType: 'text',
    description: 'CyberSource organization (merchant) the row belongs to.',
  },
  {
    name: '_source',
    pgType: 'text',
    description:
      'Where the row came from, stable across re-fetches: report name + report date, endpoint + time window, or file name for imports.',
  },
  {
    name: '_source_row',
    pgType: 'bigint',
    description: 'Line (CSV) or record (XML, JSON) number within the source.',
  },
  { name: '_run_id', pgType: 'bigint', description: 'etl.runs.id of the run that last wrote the row.' },
  { name: '_loaded_at', pgType: 'timestamptz', description: 'When the row was last written.' },
  {
    name: '_source_key',
    pgType: 'bigint',
    description:
      "etl.sources.source_key of the row's (_organization_id, _source): the compact form of the two in the table's indexes.",
  },
];

export interface TableDecl {
  schema: string;
  name: string;
  description: string;
  /** Data columns known up front (more may be added by schema evolution). */
  columns: ColumnDecl[];
  /**
   * Columns whose values identify a row. Always starts with `_organization_id`. Where the data has
   * no natural key, `['_organization_id', '_source', '_source_row']` (indexed as `_source_key`,
   * `_source_row`: see naturalKeyIndexColumns).
   */
  naturalKey: string[];
  /** One sentence saying why this key identifies a row (shown in COMMENT ON TABLE and docs). */
  keyDescription: string;
  /**
   * A child table (the repeated items of a record, e.g. its line items): the table of the records
   * (same schema) and the data columns of that table's natural key that this table's rows carry
   * (`request_id`; none when the records are keyed by source and row, which the child rows share).
   * Loaded in the same window as the records, from the same source: the items of a record the load
   * writes replace the ones other sources had left for it.
   */
  parent?: { table: string; key: readonly string[] };
}

/** One typed record; `values` is aligned with the source's `columns`. */
export interface LoadRecord {
  recordNumber: number;
  raw: string;
  values: LoadValue[];
}

/** A record the parser could not type: it goes to etl.rejects with its raw text. */
export interface LoadReject {
  recordNumber: number;
  raw: string;
  code: string;
  message: string;
}

export interface LoadBatch {
  records: LoadRecord[];
  rejects: LoadReject[];
}

/** A column as it arrives from a source (a report header or a JSON key), mapped to a warehouse column. */
export interface SourceColumn {
  name: string;
  pgType: string;
  description?: string;
  /** True when the header is not in the catalog (added as text, reported as unknown). */
  unknown?: boolean;
}

/**
 * The rows of one table from one source (a report file, all pages of an on-demand section), in
 * one of four forms; the loader has one strategy per kind (src/load/window/strategy.ts).
 */
export type LoadSource = RecordsSource | CsvBytesSource | CopyLinesSource | SpooledSource;

/** What every kind of source has. */
export interface LoadSourceBase {
  /** Lineage key, stable when the same data is fetched again. */
  source: string;
  columns: SourceColumn[];
}

/** Typed records, batch by batch: the per-row path (every value encoded and checked in JavaScript). */
export interface RecordsSource extends LoadSourceBase {
  kind: 'records';
  batches: AsyncIterable<LoadBatch>;
}

/**
 * The data bytes of a CSV file (the fast path, src/parse/csv/raw-csv-report.ts): they go straight to
 * COPY, checked by the scanner on their way; the load throws LOAD_FAST_PATH_REFUSED (rolling back
 * the window) when the file needs the per-row path.
 */
export interface CsvBytesSource extends LoadSourceBase {
  kind: 'csv-bytes';
  body: RawCsvBody;
  /**
   * The same bytes again, from the start: a first load copies them straight into the table and,
   * when a key turns out to be there already or twice, reads them again into the staging table.
   */
  reopen: () => Promise<RawCsvBody>;
  /**
   * The per-row path for the records of `body` its scanner set aside (a value not in canonical
   * form, an empty key): their typed records and rejects, as the per-row path gives them.
   */
  perRowRecords: (records: SetAsideRecord[]) => AsyncIterable<LoadBatch>;
  /**
   * The records the query wants, by the line each starts on (the file read again from its start,
   * as far as the query says), typed by the per-row path, and their lines; undefined when the file
   * is not plain enough to tell its records by line for sure: a re-load then reads it whole.
   */
  recordsOn?: RecordsOn;
}

/**
 * Which records of a source to read again (recordsOn), by their `_source_row`: for a CSV file the
 * line a record starts on, for a spooled source the record's number.
 */
export interface RecordLinesQuery {
  /** Whether the record of this `_source_row` is wanted. */
  wants(line: number): boolean;
  /** The source is read up to this record (Infinity: to its end); a source may read further. */
  through: number;
}

/** The records a RecordLinesQuery wanted, typed as the per-row path types them, and their rows. */
export type RecordsOn = (
  query: RecordLinesQuery,
) => Promise<{ lines: number[]; batches: AsyncIterable<LoadBatch> } | undefined>;

/**
 * Ready COPY text lines of raw values (the fast XML path, src/load/window/raw-text-copy.ts): as for
 * `csv-bytes`, the load throws LOAD_FAST_PATH_REFUSED when it cannot judge them.
 */
export interface CopyLinesSource extends LoadSourceBase {
  kind: 'copy-lines';
  body: RawCopyTextBody;
  /**
   * The same lines again, from the start: a first load copies `body` straight into the table and,
   * when a key is there already or twice, stages them instead.
   */
  reopen: () => Promise<RawCopyTextBody>;
}

/**
 * Records already encoded as COPY text (src/pipeline/copy-text-spool.ts), with the records that
 * still need the per-row path. The segments' lines are copied as they are when every column's
 * table type is of the source type's family (no value needs checking); otherwise the loader reads
 * `allBatches`, which holds every record.
 */
export interface SpooledSource extends LoadSourceBase {
  kind: 'spooled';
  /** The pre-encoded records, in files of lines of the first `columns` source columns. */
  segments: CopyTextSegment[];
  /** The records that still need the per-row path (and the parser's rejects). */
  perRowBatches: AsyncIterable<LoadBatch>;
  /** Every record as typed batches (the segments' lines decoded, and the per-row ones). */
  allBatches: AsyncIterable<LoadBatch>;
  /** The records a query wants, by record number, typed as in `allBatches` (read again). */
  recordsOn?: RecordsOn;
}

/** A file of pre-encoded COPY text lines: data cells in `columns` order, then `_source_row`. */
export interface CopyTextSegment {
  /** Number of data columns of each line (a prefix of the source's columns). */
  columns: number;
  lines: number;
  /**
   * The lines' bytes (opened when called). `into`: a buffer the bytes may be read into, a chunk at
   * a time, each valid until the next is asked for (for a consumer that is done with a chunk by
   * then: one that copies it, or a COPY written in turn).
   */
  chunks: (into?: Buffer) => AsyncIterable<Uint8Array>;
  /** The record number of the n-th line (1-based), for PostgreSQL's errors. */
  recordAt: (line: number) => number | undefined;
}
