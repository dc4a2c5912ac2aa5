/**
 * The fast load path of CSV report files on PostgreSQL: JavaScript reads only the metadata and
 * header lines; the data bytes go untouched to `COPY … (FORMAT csv)` into a TEMP table of `text`
 * columns, and PostgreSQL checks and casts them set-wise into the typed staging table of
 * loadWindow (then the usual merge, delete and window bookkeeping, in the same transaction).
 *
 * It produces exactly what the per-row path (openCsvReport → toLoadSource → loadWindow) produces,
 * or refuses (`LOAD_FAST_PATH_REFUSED`) and the caller loads the file through the per-row path.
 * It refuses, rather than risk a difference, whenever a file is outside the common case:
 *  - the warehouse is PGlite (no streaming COPY there), or a column's type drifted from the table's;
 *  - a carriage return outside quotes that is not part of a CRLF line end, a blank line, a
 *    blank line between metadata and header, a one-column header;
 *  - a row PostgreSQL's CSV parser refuses (a ragged row, padding values, NUL, invalid UTF-8) or a
 *    row count that differs from the line count JavaScript saw;
 *  - a non-text value not written in the canonical form that both the catalog's coercers and
 *    PostgreSQL read identically (numeric `-?digits[.digits]`, timestamps `YYYY-MM-DDTHH:MM:SS[.ffffff]Z`,
 *    dates `YYYY-MM-DD`, integers, Y/N-style booleans), or an empty natural key: such rows are
 *    rejects (or unusual forms) that the per-row path types and rejects with its exact messages.
 * So a clean daily report loads at COPY speed; a file with bad rows is loaded correctly, slower.
 */
import type { Readable } from 'node:stream';
import { parse } from 'csv-parse/sync';
import { guessReportDefinition, resolveHeader } from '../catalog/index.js';
import type { PgType } from '../catalog/index.js';
import { CybsError } from '../errors.js';
import { parseCsvMetadataLine, truncatedCsvError } from '../parse/csv-report.js';
import { ColumnSet, emptyMetadata } from '../parse/records.js';
import type { ColumnSpec, ReportMetadata } from '../parse/records.js';

export const FAST_PATH_REFUSED = 'LOAD_FAST_PATH_REFUSED';

export function refuseFastPath(reason: string): CybsError {
  return new CybsError(FAST_PATH_REFUSED, `The fast CSV path cannot load this file: ${reason}.`, {
    stage: 'load',
    context: { reason },
  });
}

export function isFastPathRefusal(error: unknown): boolean {
  return error instanceof CybsError && error.code === FAST_PATH_REFUSED;
}

/** The data bytes of a CSV file for the loader's raw COPY (see LoadSource.rawCsv). */
export interface RawCsvBody {
  fileName: string;
  /** Line number of the first data record. */
  firstLine: number;
  /** The bytes after the header line; the iterator throws a refusal on what COPY must not see. */
  chunks: AsyncIterable<Buffer>;
  /** Records the scanner counted (final once `chunks` is exhausted). */
  records(): number;
  /**
   * Line breaks inside quoted values: from record ordinal `starts[i]` on, records start `shifts[i]`
   * lines further down (final once `chunks` is exhausted).
   */
  lineShifts(): { starts: number[]; shifts: number[] };
}

export interface RawCsvReport {
  metadata: ReportMetadata;
  columns: ColumnSpec[];
  unknownColumns: ColumnSpec[];
  body: RawCsvBody;
}

const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;

/**
 * Open a CSV report for the fast path: metadata and header as openCsvReport reads them, and the
 * rest of the bytes. Throws a refusal when the head is unusual (the caller falls back).
 */
export async function openRawCsvReport(
  input: Readable | AsyncIterable<Buffer | string>,
  options: { fileName: string; report?: string; requireFinalLineBreak?: boolean },
): Promise<RawCsvReport> {
  const iterator = (input as AsyncIterable<Buffer | string>)[Symbol.asyncIterator]();
  let buffer: Buffer = Buffer.alloc(0);
  let ended = false;
  const more = async (): Promise<boolean> => {
    if (ended) return false;
    const next = await iterator.next();
    if (next.done) {
      ended = true;
      return false;
    }
    const chunk = typeof next.value === 'string' ? Buffer.from(next.value, 'utf8') : next.value;
    buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
    return true;
  };
  let offset = 0;
  /** The next line (without its LF), or undefined at the end; refuses on quotes spanning lines. */
  const nextLine = async (): Promise<string | undefined> => {
    for (;;) {
      const lf = buffer.indexOf(LF, offset);
      if (lf >= 0) {
        const line = buffer.subarray(offset, lf);
        offset = lf + 1;
        return checkedLine(line);
      }
      if (buffer.length - offset > 1 << 20) throw refuseFastPath('a header line longer than 1 MiB');
      if (!(await more())) {
        if (offset >= buffer.length) return undefined;
        const line = buffer.subarray(offset);
        offset = buffer.length;
        return checkedLine(line);
      }
    }
  };
  const checkedLine = (whole: Buffer): string => {
    const line = whole.length > 0 && whole[whole.length - 1] === CR ? whole.subarray(0, -1) : whole;
    if (line.includes(CR)) throw refuseFastPath('a carriage return inside a header line');
    let quotes = 0;
    for (let i = line.indexOf(QUOTE); i >= 0; i = line.indexOf(QUOTE, i + 1)) quotes++;
    if (quotes % 2 !== 0) throw refuseFastPath('a quoted value spans lines in the header');
    return line.toString('utf8');
  };
  const fields = (line: string): string[] =>
    (parse(line, { relax_column_count: true }) as string[][])[0] ?? [''];

  let first = await nextLine();
  if (first === undefined || first.replace(/^\uFEFF/, '') === '') throw refuseFastPath('an empty first line');
  first = first.replace(/^\uFEFF/, '');
  let metadata = parseCsvMetadataLine(fields(first), options.fileName);
  let headerText = first;
  let headerLine = 1;
  if (metadata !== undefined) {
    const second = await nextLine();
    if (second === undefined || second === '')
      throw refuseFastPath('no header right after the metadata line');
    headerText = second;
    headerLine = 2;
  } else {
    metadata = emptyMetadata('csv', options.fileName);
  }
  const header = fields(headerText);
  if (header.length < 2 || header.every((h) => h.trim() === ''))
    throw refuseFastPath('a header of one column');
  const definition =
    options.report ?? guessReportDefinition(metadata.reportType, metadata.reportName)?.name ?? undefined;
  metadata.reportDefinition = definition;
  const resolveOptions = definition === undefined ? {} : { report: definition };
  const set = new ColumnSet();
  for (const name of header)
    set.add(resolveHeader(name, resolveOptions), name.replace(/^\uFEFF/, '').trim(), false);

  let records = 0;
  /** Line breaks inside quoted values shift the line numbers: run starts (ordinals) and the shift from there on. */
  const shiftStarts: number[] = [];
  const shifts: number[] = [];
  let shift = 0;
  const addBreaks = (count: number): void => {
    if (count === 0) return;
    shift += count;
    const from = records + 2; // the record after the current one (ordinal records + 1)
    if (shiftStarts.length > 0 && shiftStarts[shiftStarts.length - 1] === from)
      shifts[shifts.length - 1] = shift;
    else {
      shiftStarts.push(from);
      shifts.push(shift);
    }
  };
  const rest = buffer.subarray(offset);
  async function* chunks(): AsyncGenerator<Buffer> {
    let inQuote = false;
    /** The previous byte was a line end (or nothing was read yet): a LF now is a blank line. */
    let atLineStart = true;
    /** The previous chunk ended with a CR outside quotes: this one must start with its LF. */
    let pendingCr = false;
    /** The previous chunk ended with a CR inside a quoted value (a CRLF there is one break). */
    let quotedCr = false;
    /** Line breaks (CRLF, CR or LF, as csv-report counts them) in chunk[from, to). */
    const breaksIn = (chunk: Buffer, from: number, to: number): number => {
      let count = 0;
      for (let i = chunk.indexOf(LF, from); i >= 0 && i < to; i = chunk.indexOf(LF, i + 1)) {
        if (!(i === from && quotedCr) && !(i > 0 && chunk[i - 1] === CR)) count++;
      }
      for (let i = chunk.indexOf(CR, from); i >= 0 && i < to; i = chunk.indexOf(CR, i + 1)) count++;
      return count;
    };
    const scan = (chunk: Buffer): void => {
      const n = chunk.length;
      let pos = 0;
      if (pendingCr && chunk[0] !== LF) throw refuseFastPath('a carriage return that ends no line');
      pendingCr = false;
      while (pos < n) {
        if (inQuote) {
          const close = chunk.indexOf(QUOTE, pos);
          const to = close < 0 ? n : close;
          addBreaks(breaksIn(chunk, pos, to));
          quotedCr = close < 0 && n > 0 && chunk[n - 1] === CR;
          if (close < 0) return;
          inQuote = false;
          atLineStart = false;
          pos = close + 1;
          continue;
        }
        const quote = chunk.indexOf(QUOTE, pos);
        const stop = quote < 0 ? n : quote;
        // Outside quotes a CR may only end a line (CRLF).
        for (let cr = chunk.indexOf(CR, pos); cr >= 0 && cr < stop; cr = chunk.indexOf(CR, cr + 1)) {
          if (cr + 1 === n) pendingCr = true;
          else if (chunk[cr + 1] !== LF) throw refuseFastPath('a carriage return that ends no line');
        }
        while (pos < stop) {
          const lf = chunk.indexOf(LF, pos);
          if (lf < 0 || lf >= stop) {
            atLineStart = false;
            pos = stop;
            break;
          }
          if (atLineStart && (lf === pos || (lf === pos + 1 && chunk[pos] === CR))) {
            throw refuseFastPath('a blank line');
          }
          records++;
          atLineStart = true;
          pos = lf + 1;
        }
        if (quote >= 0) {
          inQuote = true;
          quotedCr = false;
          atLineStart = false;
          pos = quote + 1;
        }
      }
    };
    if (rest.length > 0) {
      scan(rest);
      yield rest;
    }
    for (;;) {
      const next = await iterator.next();
      if (next.done) break;
      const chunk = typeof next.value === 'string' ? Buffer.from(next.value, 'utf8') : next.value;
      scan(chunk);
      yield chunk;
    }
    if (inQuote) throw refuseFastPath('a quoted value that never closes');
    if (!atLineStart) {
      // A download that ends inside a line was cut off in transfer: its last value may be cut too
      // (an amount "12.3" of "12.34"), so it is a structural error, as on the per-row path.
      if (options.requireFinalLineBreak === true) {
        throw truncatedCsvError(
          options.fileName,
          headerLine + 1 + records,
          'no line break after the last line',
        );
      }
      records++;
    }
  }

  return {
    metadata,
    columns: set.columns,
    unknownColumns: set.unknownColumns,
    body: {
      fileName: options.fileName,
      firstLine: headerLine + 1,
      chunks: chunks(),
      records: () => records,
      lineShifts: () => ({ starts: shiftStarts, shifts }),
    },
  };
}

/**
 * SQL of one staged column from the raw text column `raw`: the condition under which the value is
 * read identically by the catalog's coercer and by PostgreSQL's input function, and the
 * expression giving the typed value. `raw` is NULL for an empty value (FORCE_NULL).
 */
export function rawColumnSql(raw: string, pgType: PgType): { valid: string; value: string } {
  switch (pgType) {
    case 'text':
      return { valid: 'true', value: raw };
    case 'numeric':
      return {
        valid: `(${raw} is null or (${raw} ~ '^-?(0|[1-9][0-9]*)(\\.[0-9]+)?$' and ${raw} !~ '^-0(\\.0+)?$'))`,
        value: `${raw}::numeric`,
      };
    case 'integer':
      return { valid: `(${raw} is null or ${raw} ~ '^-?[0-9]{1,9}$')`, value: `${raw}::integer` };
    case 'bigint':
      return { valid: `(${raw} is null or ${raw} ~ '^-?[0-9]{1,18}$')`, value: `${raw}::bigint` };
    case 'boolean':
      return {
        valid: `(${raw} is null or lower(${raw}) in ('y','yes','true','t','1','n','no','false','f','0'))`,
        value: `(lower(${raw}) in ('y','yes','true','t','1'))`,
      };
    case 'date':
      return { valid: `(${raw} is null or ${raw} ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$')`, value: `${raw}::date` };
    case 'timestamptz':
      return {
        valid:
          `(${raw} is null or ${raw} ~ ` +
          `'^[0-9]{4}-[0-9]{2}-[0-9]{2}T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,6})?Z$')`,
        value: `${raw}::timestamptz`,
      };
  }
}
