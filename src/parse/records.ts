/**
 * The one record interface of all report formats (CSV, XML, on-demand JSON), so the loader never
 * knows the format:
 *
 *  - `RecordSource.metadata`: what the file says about itself (metadata line, `<Report>` attributes,
 *    top-level JSON scalars);
 *  - `RecordSource.columns`: the columns, in value order; append-only (XML discovers columns as it
 *    reads, CSV knows them from the header); `unknownColumns` are the ones the catalog does not know
 *    (text; the loader adds them to the table);
 *  - `RecordSource.batches`: bounded batches (≤ `batchSize` records+rejects, default 1,000, and
 *    ≤ `maxBatchChars` characters of values, default 4 Mi; small batches die young in the GC, which
 *    keeps peak RSS low — the loader may stream several batches into one COPY). Every record of a batch has exactly
 *    `batch.columnCount` values, aligned with `columns`; `batch.newColumns` lists the columns added
 *    since the source was opened or since the previous batch.
 *
 * Values: `text` as string, `numeric`/`timestamptz`/`date`/`bigint` as canonical strings, `integer`
 * as number, `boolean` as boolean, empty as null. A row that cannot be typed is a `RejectedRecord`;
 * per file, records + rejects = data rows (blank lines excluded, counted in `summary().blankLines`).
 *
 * Error codes:
 *  - thrown (whole file unusable), CybsError stage 'parse': `PARSE_CSV_INVALID` (broken quote, record
 *    too large), `PARSE_CSV_TRUNCATED` (the file ends inside its last line), `PARSE_XML_INVALID` (malformed XML), `PARSE_JSON_INVALID` (wrong body or section
 *    shape), `PARSE_EMPTY` (no content, or a metadata line without a header),
 *    `PARSE_UNSUPPORTED_ENCODING` / `PARSE_INVALID_ENCODING` (UTF-32; UTF-16 that is not); context
 *    `{ file, line | record, … }`;
 *  - rejects: `MAP_INVALID_VALUE` (a value that does not fit its column's type), `PARSE_CSV_COLUMN_COUNT`
 *    (a CSV row with the wrong number of values), `PARSE_INVALID_UTF8` (a CSV value with bytes that
 *    are not UTF-8), `PARSE_JSON_INVALID` (a JSON item that is not an object).
 */
import { Readable } from 'node:stream';
import { CybsError } from '../errors.js';
import { EXPECTED_FORM, coercerFor, truncateForMessage, unknownColumnName } from '../catalog/index.js';
import type { Coercer, OnDemandField, PgType, ResolvedField, TypedValue } from '../catalog/index.js';

/**
 * A column the reader makes itself, with no name in the file or the catalog (the position of an
 * XML repeated item: `reply_number`).
 */
export interface DerivedField {
  readonly kind: 'derived';
  readonly column: string;
  readonly pgType: PgType;
  readonly description: string | undefined;
}

/**
 * What a column comes from: a catalog field, an unknown header, an on-demand section field, or a
 * column the reader derives.
 */
export type ColumnField = ResolvedField | OnDemandField | DerivedField;

export type ReportFormat = 'csv' | 'xml' | 'json';

export interface ColumnSpec {
  /** Warehouse column name (unique within the source). */
  column: string;
  /** The catalog field, the unknown-field descriptor of a header the catalog does not know, or the
   *  on-demand section field. */
  field: ColumnField;
  pgType: PgType;
  /** The name in the file: CSV header, XML path (`Batch.BatchID`), JSON key. */
  sourceName: string;
  description: string | undefined;
}

export interface TypedRecord {
  /** CSV: the line the row starts on; XML: the n-th record element; JSON: the n-th item (1-based). */
  recordNumber: number;
  values: TypedValue[];
}

export interface RejectedRecord {
  recordNumber: number;
  /** The row as text: CSV row (re-serialised), XML record element, JSON item. */
  raw: string;
  code: string;
  message: string;
  /** Source name of the offending field. */
  field?: string;
  /** The offending value, truncated to 80 characters. */
  value?: string;
}

export interface RecordBatch {
  records: TypedRecord[];
  rejects: RejectedRecord[];
  columnCount: number;
  newColumns: ColumnSpec[];
}

export interface ReportMetadata {
  format: ReportFormat;
  fileName: string;
  /** Report definition the file was read as (option or recognised from the metadata). */
  reportDefinition: string | undefined;
  organizationId: string | undefined;
  reportName: string | undefined;
  reportType: string | undefined;
  version: string | undefined;
  /** The time range as written. */
  rawStart: string | undefined;
  rawEnd: string | undefined;
  /** The range normalised to ISO UTC (date-only = midnight UTC), undefined if unparseable. */
  startTime: string | undefined;
  endTime: string | undefined;
  /** Everything else: CSV metadata fields (`field0`…), XML root attributes, JSON top-level scalars. */
  attributes: Record<string, string>;
}

export interface SourceSummary {
  records: number;
  rejects: number;
  /** records + rejects. */
  dataRows: number;
  blankLines: number;
  batches: number;
}

export interface RecordSource {
  metadata: ReportMetadata;
  columns: ColumnSpec[];
  unknownColumns: ColumnSpec[];
  batches: AsyncIterable<RecordBatch>;
  /** Counts so far (final once `batches` is exhausted). */
  summary(): SourceSummary;
}

export interface OpenReportOptions {
  /** Name of the file or download, for messages and error context. */
  fileName: string;
  /** Report definition name (e.g. `PaymentBatchDetailClass`); recognised from the file if omitted. */
  report?: string;
  batchSize?: number;
  maxBatchChars?: number;
  /**
   * CSV: the file must end with a line break (CyberSource's files do), so that a body cut off in
   * its last line fails as `PARSE_CSV_TRUNCATED` instead of loading a shortened last value. Set for
   * downloads from the API; local imports accept an unterminated last line when it is complete.
   */
  requireFinalLineBreak?: boolean;
  /**
   * CSV: the line number of the first record after the header (default: the line after it), for a
   * record parsed on its own, out of its file, that must keep its line number.
   */
  firstDataLine?: number;
}

export const DEFAULT_BATCH_SIZE = 1_000;
export const DEFAULT_MAX_BATCH_CHARS = 4 * 1024 * 1024;

export type ReportInput = AsyncIterable<Uint8Array | string> | NodeJS.ReadableStream;
/** The report's bytes as one Node stream, whatever form the caller gave them in. */

export function toReadable(input: ReportInput): Readable {
  if (input instanceof Readable) return input;
  return Readable.from(input as AsyncIterable<Uint8Array | string>, { objectMode: false });
}

export function emptyMetadata(format: ReportFormat, fileName: string): ReportMetadata {
  return {
    format,
    fileName,
    reportDefinition: undefined,
    organizationId: undefined,
    reportName: undefined,
    reportType: undefined,
    version: undefined,
    rawStart: undefined,
    rawEnd: undefined,
    startTime: undefined,
    endTime: undefined,
    attributes: {},
  };
}

/** The columns of one source: unique names, precomputed coercers, append-only. */
export class ColumnSet {
  readonly columns: ColumnSpec[] = [];
  readonly unknownColumns: ColumnSpec[] = [];
  readonly coercers: Coercer[] = [];
  private readonly byColumn = new Map<string, number>();

  /** Index of the column for `field`, adding it if new; `shareField` reuses a field's column. */
  add(field: ColumnField, sourceName: string, shareField: boolean): number {
    if (shareField) {
      const existing = this.byColumn.get(field.column);
      if (existing !== undefined && this.columns[existing]!.field === field) return existing;
    }
    let column = field.column;
    let resolved: ColumnField = field;
    if (this.byColumn.has(column)) {
      // The same field twice in one header, or an unknown header whose name equals a known column:
      // the later one becomes an unknown text column `<column>_2`, `_3`, …
      let n = 2;
      while (this.byColumn.has(unknownColumnName(`${column}_${n}`))) n++;
      column = unknownColumnName(`${column}_${n}`);
      resolved = {
        kind: 'unknown',
        header: sourceName,
        column,
        pgType: 'text',
        description: undefined,
      };
    }
    const spec: ColumnSpec = {
      column,
      field: resolved,
      pgType: resolved.pgType,
      sourceName,
      description: resolved.description,
    };
    const index = this.columns.length;
    this.columns.push(spec);
    if (resolved.kind === 'unknown') this.unknownColumns.push(spec);
    this.coercers.push(coercerFor(resolved.pgType));
    this.byColumn.set(column, index);
    return index;
  }
}

export function invalidValueReject(
  fileName: string,
  where: 'line' | 'record' | 'item',
  recordNumber: number,
  raw: string,
  column: ColumnSpec,
  value: string,
  detail?: string,
): RejectedRecord {
  const shown = truncateForMessage(value);
  return {
    recordNumber,
    raw,
    code: 'MAP_INVALID_VALUE',
    field: column.sourceName,
    value: shown,
    message:
      `${fileName} ${where} ${recordNumber}: field ${column.sourceName} (column ${column.column}, ${column.pgType}) ` +
      `has ${JSON.stringify(shown)}; expected ${detail ?? EXPECTED_FORM[column.pgType]}`,
  };
}

export function parseError(
  code:
    | 'PARSE_CSV_INVALID'
    | 'PARSE_CSV_TRUNCATED'
    | 'PARSE_XML_INVALID'
    | 'PARSE_JSON_INVALID'
    | 'PARSE_EMPTY'
    | 'PARSE_UNSUPPORTED_ENCODING'
    | 'PARSE_INVALID_ENCODING',
  message: string,
  context: Record<string, unknown>,
  cause?: unknown,
): CybsError {
  return new CybsError(code, message, { stage: 'parse', context, ...(cause === undefined ? {} : { cause }) });
}

/** Accumulates records and rejects and cuts bounded batches. */
export class BatchBuilder {
  records: TypedRecord[] = [];
  rejects: RejectedRecord[] = [];
  chars = 0;
  private announced: number;
  readonly totals: SourceSummary = { records: 0, rejects: 0, dataRows: 0, blankLines: 0, batches: 0 };

  constructor(
    private readonly set: ColumnSet,
    private readonly batchSize: number,
    private readonly maxChars: number,
  ) {
    this.announced = set.columns.length;
  }

  /** Columns known when the source is handed out are not "new" in the first batch. */
  markAnnounced(): void {
    this.announced = this.set.columns.length;
  }

  get full(): boolean {
    return this.records.length + this.rejects.length >= this.batchSize || this.chars >= this.maxChars;
  }

  get size(): number {
    return this.records.length + this.rejects.length;
  }

  take(): RecordBatch {
    const columnCount = this.set.columns.length;
    for (const record of this.records) {
      const values = record.values;
      while (values.length < columnCount) values.push(null);
    }
    const batch: RecordBatch = {
      records: this.records,
      rejects: this.rejects,
      columnCount,
      newColumns: this.set.columns.slice(this.announced),
    };
    this.announced = columnCount;
    this.totals.records += this.records.length;
    this.totals.rejects += this.rejects.length;
    this.totals.dataRows += this.records.length + this.rejects.length;
    this.totals.batches++;
    this.records = [];
    this.rejects = [];
    this.chars = 0;
    return batch;
  }
}

export function summaryOf(builder: BatchBuilder): SourceSummary {
  const t = builder.totals;
  return {
    records: t.records,
    rejects: t.rejects,
    dataRows: t.dataRows,
    blankLines: t.blankLines,
    batches: t.batches,
  };
}

/** Read a whole record source once, to learn every column it has (first pass of an XML file). */
export async function collectColumns(records: RecordSource): Promise<ColumnSpec[]> {
  for await (const batch of records.batches) void batch;
  return [...records.columns];
}
