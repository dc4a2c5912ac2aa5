/**
 * CSV report files (facts §5.1), streamed through csv-parse in array mode.
 *
 * Layout: an optional metadata line, then the header line, then data rows.
 *  - Metadata line: recognised by its `<start> to <end>` field. REST-era:
 *    `organization,reportName,reportType,version,<start> to <end>,,,…`; legacy:
 *    `Report Title,version,<start> to <end>,,,…`. Trailing padding fields are ignored. A first line
 *    without such a field is taken as the header (no metadata).
 *  - Header: each name resolved with `resolveHeader` (either convention, ids, aliases); unknown
 *    headers become text columns listed in `unknownColumns`.
 *  - UTF-8, or UTF-16 with its byte order mark; a value with bytes that are not UTF-8 is a reject
 *    `PARSE_INVALID_UTF8` with its line, the bytes written as `\xNN` (text-encoding.ts).
 *  - RFC 4180 quoting (commas, quotes, CR/LF inside quoted values), a UTF-8 BOM; each line ends at
 *    its own line break, CRLF, LF or CR, whatever the others are (a CRLF file with LF-ended rows).
 *  - A blank line is skipped (counted as `blankLines`), so a trailing empty line is harmless.
 *  - A row with fewer values than the header, or more values that are not all empty, is a reject
 *    `PARSE_CSV_COLUMN_COUNT` with its line; extra empty trailing values (padding) are accepted.
 *  - An unterminated quote or another quoting error → thrown `PARSE_CSV_INVALID` with file and line;
 *    a record larger than 32 Mi characters (in practice: a runaway quote) too.
 *  - Truncation (a body that ends early but "normally", e.g. a proxy or a server cutting a chunked
 *    response): a last line without a line break whose row has fewer values than the header is
 *    thrown `PARSE_CSV_TRUNCATED` — never a reject, which would let the rest of a cut file load
 *    under the reject threshold. With `requireFinalLineBreak` (downloads), ANY unterminated last
 *    line is `PARSE_CSV_TRUNCATED`, because its last value may be cut (an amount "12.3" of
 *    "12.34"). Not detectable from the bytes: a cut exactly after a line break (a valid, shorter
 *    file); the Reporting API sends no row count or checksum to tell it, and the transport catches
 *    cuts that break Content-Length or the socket.
 *  - An empty file, or a metadata line without a header → thrown `PARSE_EMPTY`. Metadata + header
 *    and no rows is a valid, empty report.
 */
import type { Readable } from 'node:stream';
import { CsvError, parse } from 'csv-parse';
import type { Parser } from 'csv-parse';
import { CybsError } from '../../errors.js';
import { INVALID, coerceTimestamptz, guessReportDefinition, resolveHeader } from '../../catalog/index.js';
import type { TypedValue } from '../../catalog/index.js';
import {
  BatchBuilder,
  ColumnSet,
  DEFAULT_BATCH_SIZE,
  DEFAULT_MAX_BATCH_CHARS,
  emptyMetadata,
  invalidValueReject,
  parseError,
  summaryOf,
  toReadable,
} from '../records.js';
import { Utf8Guard, holdsInvalidUtf8, showInvalidUtf8 } from '../text-encoding.js';
import type {
  OpenReportOptions,
  RecordBatch,
  RecordSource,
  ReportInput,
  ReportMetadata,
} from '../records.js';

/** The largest record, in characters, either CSV path reads (raw-csv-report.ts refuses larger ones in bytes). */
export const MAX_RECORD_SIZE = 32 * 1024 * 1024;
const RANGE = /^\s*(\d{4}-\d{2}-\d{2}\S*)\s+to\s+(\d{4}-\d{2}-\d{2}\S*)\s*$/;

/** Reads a stream of objects in bursts (all that is buffered), not one promise per object. */
export class ObjectReader<T> {
  private ended = false;
  private error: unknown = undefined;
  private wake: (() => void) | undefined;

  constructor(private readonly stream: Readable) {
    const notify = (): void => {
      const w = this.wake;
      this.wake = undefined;
      w?.();
    };
    stream.on('readable', notify);
    stream.on('end', () => {
      this.ended = true;
      notify();
    });
    stream.on('error', (error) => {
      this.error ??= error;
      notify();
    });
  }

  /** The next burst of objects; an empty array at the end. */
  async next(): Promise<T[]> {
    for (;;) {
      // Objects read before an error come first: the error's place is after them.
      const items: T[] = [];
      let item: T | null;
      while ((item = this.stream.read() as T | null) !== null) items.push(item);
      if (items.length > 0) return items;
      if (this.error !== undefined) throw this.error;
      if (this.ended) return [];
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }
}

/** Metadata from the first CSV record, or undefined if it is not a metadata line. */
export function parseCsvMetadataLine(
  fields: readonly string[],
  fileName: string,
): ReportMetadata | undefined {
  const rangeIndex = fields.findIndex((f, i) => i < 6 && RANGE.test(f));
  if (rangeIndex < 0) return undefined;
  const metadata = emptyMetadata('csv', fileName);
  const range = RANGE.exec(fields[rangeIndex]!)!;
  metadata.rawStart = range[1];
  metadata.rawEnd = range[2];
  const start = coerceTimestamptz(range[1]!);
  const end = coerceTimestamptz(range[2]!);
  metadata.startTime = typeof start === 'string' ? start : undefined;
  metadata.endTime = typeof end === 'string' ? end : undefined;
  if (rangeIndex >= 4) {
    metadata.organizationId = fields[rangeIndex - 4] || undefined;
    metadata.reportName = fields[rangeIndex - 3] || undefined;
    metadata.reportType = fields[rangeIndex - 2] || undefined;
    metadata.version = fields[rangeIndex - 1] || undefined;
  } else if (rangeIndex === 2) {
    metadata.reportName = fields[0] || undefined;
    metadata.version = fields[1] || undefined;
  } else if (rangeIndex === 1) {
    metadata.reportName = fields[0] || undefined;
  }
  fields.forEach((value, i) => {
    if (value !== '') metadata.attributes[`field${i}`] = value;
  });
  return metadata;
}

const LINE_BREAK = /\r\n|\r|\n/g;

function countLineBreaks(row: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < row.length; i++) {
    const value = row[i]!;
    if (value.indexOf('\n') >= 0 || value.indexOf('\r') >= 0) n += value.match(LINE_BREAK)?.length ?? 0;
  }
  return n;
}

function csvQuote(value: string): string {
  return /[",\r\n]/.test(value) || value !== value.trim() ? `"${value.replace(/"/g, '""')}"` : value;
}

/** A row as CSV text again (for reject logs). */
export function serialiseCsvRow(fields: readonly string[]): string {
  return fields.map(csvQuote).join(',');
}

/**
 * A csv-parse error as PARSE_CSV_INVALID. `recordLine`: the line the failing record starts on. A
 * quote that never closes (or a record that grows past the size limit, the same thing in a large
 * file) is reported where its record starts, the line of the opening quote, not where the reader
 * gave up (the end of the file); other errors where csv-parse found them.
 */
function wrapCsvError(error: unknown, fileName: string, recordLine: number): unknown {
  if (error instanceof CsvError) {
    const e = error as CsvError & { lines?: unknown };
    const atRecord = e.code === 'CSV_QUOTE_NOT_CLOSED' || e.code === 'CSV_MAX_RECORD_SIZE';
    const line = atRecord || typeof e.lines !== 'number' ? recordLine : e.lines;
    const hint =
      e.code === 'CSV_QUOTE_NOT_CLOSED'
        ? 'a quote opened in this line is never closed (truncated file or a stray quote)'
        : e.code === 'CSV_MAX_RECORD_SIZE'
          ? 'a record starting in this line exceeds 32 Mi characters (a value that large, or a quote that is never closed), the largest record the reader takes'
          : line > recordLine
            ? // A quoted value ran over line breaks to here: where it opened tells the cause.
              `${String(e.message).replace(/\.$/, '')} (in the record that starts at line ${recordLine}, where a quote may open that should not)`
            : String(e.message);
    return parseError(
      'PARSE_CSV_INVALID',
      `${fileName}: invalid CSV at line ${line}: ${hint}. The file cannot be read; download it again or check its quoting.`,
      { file: fileName, line, recordLine, csvCode: e.code },
      error,
    );
  }
  return error;
}

/** The structural error of a CSV report that was cut off in transfer (shared by every CSV load path). */
export function truncatedCsvError(fileName: string, line: number, detail: string): CybsError {
  return new CybsError(
    'PARSE_CSV_TRUNCATED',
    `${fileName}: the file ends inside line ${line} (${detail}); it was cut off in transfer. Nothing of it is loaded; download it again.`,
    { stage: 'parse', context: { file: fileName, line } },
  );
}

/** Open a CSV report: reads the metadata and header lines, then streams typed batches. */
export async function openCsvReport(input: ReportInput, options: OpenReportOptions): Promise<RecordSource> {
  const fileName = options.fileName;
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const maxChars = options.maxBatchChars ?? DEFAULT_MAX_BATCH_CHARS;
  const parser: Parser = parse({
    bom: true,
    relax_column_count: true,
    max_record_size: MAX_RECORD_SIZE,
    // Every line ends at its own line break, CRLF, LF or CR (csv-parse would otherwise take the
    // first one it meets for the whole file and glue an LF-ended row to the next in a CRLF file).
    record_delimiter: ['\r\n', '\n', '\r'],
  });
  const source = toReadable(input);
  // UTF-16 decoded, bytes that are not UTF-8 escaped (text-encoding.ts).
  const guard = new Utf8Guard(fileName);
  source.on('error', (error) => guard.destroy(error));
  guard.on('error', (error) => parser.destroy(error));
  // The last character of the input, to tell a file that ends inside its last line.
  let lastChar = '';
  guard.on('data', (chunk: Buffer | string) => {
    if (chunk.length === 0) return;
    lastChar = typeof chunk === 'string' ? chunk.slice(-1) : String.fromCharCode(chunk[chunk.length - 1]!);
  });
  const endsInsideLine = (): boolean => lastChar !== '' && lastChar !== '\n' && lastChar !== '\r';
  const truncated = (line: number, detail: string) => truncatedCsvError(fileName, line, detail);
  source.pipe(guard).pipe(parser);
  const reader = new ObjectReader<string[]>(parser);

  let pending: string[][] = [];
  let pendingIndex = 0;
  /** The line the next record starts on. */
  let nextLine = 1;
  let exhausted = false;
  const close = (): void => {
    if (!exhausted) {
      exhausted = true;
      source.unpipe(guard);
      guard.unpipe(parser);
      guard.destroy();
      parser.destroy();
      if (!source.destroyed) source.destroy();
    }
  };

  /** The next record and the line it starts on; undefined at the end. */
  const nextRecord = async (): Promise<string[] | undefined> => {
    if (pendingIndex >= pending.length) {
      if (exhausted) return undefined;
      try {
        pending = await reader.next();
      } catch (error) {
        close();
        throw wrapCsvError(error, fileName, nextLine);
      }
      pendingIndex = 0;
      if (pending.length === 0) {
        exhausted = true;
        return undefined;
      }
    }
    return pending[pendingIndex++];
  };
  // Line numbers are counted here, not taken from csv-parse's record info (which costs an object per
  // record and counts the CR and LF of a quoted CRLF as two lines): a record takes one line plus the
  // line breaks inside its quoted values.
  const takeLine = (row: readonly string[]): number => {
    const start = nextLine;
    nextLine += 1 + countLineBreaks(row);
    return start;
  };

  // Metadata line and header.
  let first = await nextRecord();
  if (first === undefined) {
    throw parseError(
      'PARSE_EMPTY',
      `${fileName}: the file is empty; expected a metadata line and a header.`,
      {
        file: fileName,
        line: 1,
      },
    );
  }
  takeLine(first);
  const firstRecord = first;
  let metadata = parseCsvMetadataLine(first, fileName);
  let headerLine = 1;
  if (metadata !== undefined) {
    first = await nextRecord();
    while (first !== undefined && first.length === 1 && first[0] === '') {
      takeLine(first);
      first = await nextRecord();
    }
    if (first === undefined) {
      throw parseError(
        'PARSE_EMPTY',
        `${fileName}: the file has only its metadata line; expected a header line after it.`,
        { file: fileName, line: 2 },
      );
    }
    headerLine = takeLine(first);
  } else {
    metadata = emptyMetadata('csv', fileName);
  }
  const header = first;
  // The metadata (organization, period) and the header are never read from bytes that are not UTF-8.
  for (const [line, record] of [
    [1, firstRecord],
    [headerLine, header],
  ] as const) {
    const bad = guard.invalid ? record.find(holdsInvalidUtf8) : undefined;
    if (bad === undefined) continue;
    close();
    throw parseError(
      'PARSE_CSV_INVALID',
      `${fileName}: line ${line} (${line === headerLine ? 'the header' : 'the metadata line'}) holds bytes that are not UTF-8 (${showInvalidUtf8(bad)}).`,
      { file: fileName, line },
    );
  }
  if (header.every((h) => h.trim() === '')) {
    close();
    throw parseError('PARSE_CSV_INVALID', `${fileName}: the header line ${headerLine} is empty.`, {
      file: fileName,
      line: headerLine,
    });
  }
  const definition =
    options.report ?? guessReportDefinition(metadata.reportType, metadata.reportName)?.name ?? undefined;
  metadata.reportDefinition = definition;
  const resolveOptions = definition === undefined ? {} : { report: definition };
  const set = new ColumnSet();
  for (const name of header)
    set.add(resolveHeader(name, resolveOptions), name.replace(/^\uFEFF/, '').trim(), false);
  const width = header.length;
  if (options.firstDataLine !== undefined) nextLine = options.firstDataLine;
  const coercers = set.coercers;
  const columns = set.columns;
  const builder = new BatchBuilder(set, batchSize, maxChars);
  const originals: string[] = new Array<string>(width).fill('');

  async function* batches(): AsyncGenerator<RecordBatch> {
    let lastLine = headerLine;
    let lastShort = false;
    try {
      for (;;) {
        const row = await nextRecord();
        if (row === undefined) break;
        const line = takeLine(row);
        const n = row.length;
        lastLine = line;
        lastShort = n < width;
        if (n === 1 && row[0] === '' && width !== 1) {
          builder.totals.blankLines++;
          continue;
        }
        const notUtf8 = guard.invalid ? row.findIndex(holdsInvalidUtf8) : -1;
        if (notUtf8 >= 0) {
          builder.rejects.push({
            recordNumber: line,
            raw: showInvalidUtf8(serialiseCsvRow(row)),
            code: 'PARSE_INVALID_UTF8',
            message:
              `${fileName} line ${line}: ${columns[notUtf8]?.sourceName ?? `value ${notUtf8 + 1}`} holds bytes that are not UTF-8 ` +
              `(${showInvalidUtf8(row[notUtf8]!)}); row kept as a reject, those bytes written as \\xNN.`,
          });
        } else if (n !== width && !(n > width && row.slice(width).every((v) => v === ''))) {
          builder.rejects.push({
            recordNumber: line,
            raw: serialiseCsvRow(row),
            code: 'PARSE_CSV_COLUMN_COUNT',
            message: `${fileName} line ${line}: ${n} values where the header has ${width}; row kept as a reject.`,
          });
        } else {
          if (n > width) row.length = width;
          const values = row as TypedValue[];
          let bad = -1;
          let chars = 0;
          for (let i = 0; i < width; i++) {
            const text = row[i] as string;
            chars += text.length;
            originals[i] = text;
            const typed = coercers[i]!(text);
            if (typed === INVALID) {
              bad = i;
              break;
            }
            values[i] = typed;
          }
          if (bad >= 0) {
            for (let i = 0; i <= bad; i++) row[i] = originals[i]!;
            builder.rejects.push(
              invalidValueReject(fileName, 'line', line, serialiseCsvRow(row), columns[bad]!, row[bad]!),
            );
          } else {
            builder.records.push({ recordNumber: line, values });
            builder.chars += chars;
          }
        }
        if (builder.full) yield builder.take();
      }
      if (endsInsideLine() && (lastShort || options.requireFinalLineBreak === true)) {
        throw truncated(
          lastLine,
          lastShort ? 'its last row has fewer values than the header' : 'no line break after the last line',
        );
      }
      if (builder.size > 0) yield builder.take();
    } finally {
      close();
    }
  }

  return {
    metadata,
    columns,
    unknownColumns: set.unknownColumns,
    batches: batches(),
    summary: () => summaryOf(builder),
  };
}
