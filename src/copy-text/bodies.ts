/**
 * The shapes of what a parser hands the loader for a COPY: typed cell values, and the bodies of
 * the fast paths (a CSV file's data bytes, ready COPY text lines of an XML file).
 */
import type { PgType } from '../catalog/index.js';

/** A typed cell value as the parsers make it and the encoders write it. */
export type LoadValue = string | number | boolean | null;

/** The data bytes of a CSV file for the loader's raw COPY (a `csv-bytes` LoadSource). */
export interface RawCsvBody {
  fileName: string;
  /** Line number of the first data record. */
  firstLine: number;
  /**
   * The bytes after the header line, checked record by record as they pass (call once): the
   * iterator throws a refusal on what COPY must not see or would read differently from the
   * per-row path (see RawCsvChecks). `inTurn`: the consumer is done with each chunk before it asks
   * for the next (a COPY written in turn), so the chunks may share one buffer.
   */
  read(checks: RawCsvChecks, options?: { inTurn?: boolean }): AsyncIterable<Buffer>;
  /** Records handed to COPY (final once `read` is exhausted). */
  records(): number;
  /** Records not handed to COPY, for the per-row path (final once `read` is exhausted). */
  setAside(): SetAsideRecord[];
}

/**
 * What every record is checked for while its bytes pass to COPY, column by column in header
 * order. A value of a non-text column must be written in the canonical form that the catalog's
 * coercer (per-row path) and PostgreSQL's input function (COPY into the typed staging table) read
 * identically; a natural-key value must not be empty. Anything else refuses the file, and the
 * per-row path types and rejects it with its own messages.
 */
export interface RawCsvChecks {
  /** The type each column is copied into (its staging column's type). */
  types: readonly PgType[];
  /** Columns that must not be empty (natural-key columns). */
  required: readonly number[];
  /**
   * COPY text (RAW_CSV_COPY_OPTIONS) appended to every record after its line number (starting with
   * a comma): the values of the constant lineage columns when the bytes go straight into the
   * target table (see copyTextField).
   */
  append?: string;
}

/** A record the scanner could not vouch for: its text (without line end) and its line number. */
export interface SetAsideRecord {
  line: number;
  text: string;
}

/** Ready COPY text lines of raw values (the fast XML path; their form: src/load/window/raw-text-copy.ts). */
export interface RawCopyTextBody {
  /**
   * COPY text lines as UTF-8 bytes, whole lines per chunk; the iterator throws a refusal on what it
   * cannot judge. Read in turn: a chunk is valid until the next is asked for (the chunks may share
   * one buffer), so a COPY of them is written in turn (WarehouseSession.copyFrom).
   */
  chunks: AsyncIterable<Buffer>;
  /** Lines produced (final once `chunks` is exhausted). */
  records(): number;
}
