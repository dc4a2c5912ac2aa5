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
import { CybsError } from '../../errors.js';
import { INVALID, coerceTimestamptz, guessReportDefinition, resolveHeader } from '../../catalog/index.js';
import type { Coercer, TypedValue } from '../../catalog/index.js';
import {
  BatchBuilder,
  ColumnSet,
  DEFAULT_BATCH_SIZE,
  DEFAULT_MAX_BATCH_CHARS,
  emptyMetadata,
  invalidValueReject,
  parseError,
  summaryOf,
} from '../records.js';
import { holdsInvalidUtf8, showInvalidUtf8 } from '../text-encoding.js';
import type {
  ColumnSpec,
  OpenReportOptions,
  RecordBatch,
  RecordSource,
  ReportInput,
  ReportMetadata,
} from '../records.js';
import { CsvRecords } from './csv-records.js';

const RANGE = /^\s*(\d{4}-\d{2}-\d{2}\S*)\s+to\s+(\d{4}-\d{2}-\d{2}\S*)\s*$/;

/**
 * The fields of one non-empty CSV line that holds no quote, carriage return or line feed: its
 * comma-separated parts, as any CSV reader reads them. Undefined for any other line, which the
 * caller gives to csv-parse (a head line is read per window; csv-parse allocates per character).
 */
export function plainCsvFields(line: string): string[] | undefined {
  if (line === '' || /["\r\n]/.test(line)) return undefined;
  return line.split(',');
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

function csvQuote(value: string): string {
  return /[",\r\n]/.test(value) || value !== value.trim() ? `"${value.replace(/"/g, '""')}"` : value;
}

/** A row as CSV text again (for reject logs). */
export function serialiseCsvRow(fields: readonly string[]): string {
  return fields.map(csvQuote).join(',');
}

/** The structural error of a CSV report that was cut off in transfer (shared by every CSV load path). */
export function truncatedCsvError(fileName: string, line: number, detail: string): CybsError {
  return new CybsError(
    'PARSE_CSV_TRUNCATED',
    `${fileName}: the file ends inside line ${line} (${detail}); it was cut off in transfer. Nothing of it is loaded; download it again.`,
    { stage: 'parse', context: { file: fileName, line } },
  );
}

/** What precedes the data rows: the metadata (empty without a metadata line) and the header. */
interface CsvHead {
  metadata: ReportMetadata;
  header: string[];
  headerLine: number;
}

/**
 * Read the metadata line, if there is one, and the header (blank lines between them skipped).
 * Neither may hold bytes that are not UTF-8, and the header may not be empty.
 */
async function readCsvHead(records: CsvRecords, fileName: string): Promise<CsvHead> {
  let first = await records.next();
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
  records.takeLine(first);
  const firstRecord = first;
  let metadata = parseCsvMetadataLine(first, fileName);
  let headerLine = 1;
  if (metadata !== undefined) {
    first = await records.next();
    while (first !== undefined && first.length === 1 && first[0] === '') {
      records.takeLine(first);
      first = await records.next();
    }
    if (first === undefined) {
      throw parseError(
        'PARSE_EMPTY',
        `${fileName}: the file has only its metadata line; expected a header line after it.`,
        { file: fileName, line: 2 },
      );
    }
    headerLine = records.takeLine(first);
  } else {
    metadata = emptyMetadata('csv', fileName);
  }
  const header = first;
  // The metadata (organization, period) and the header are never read from bytes that are not UTF-8.
  for (const [line, record] of [
    [1, firstRecord],
    [headerLine, header],
  ] as const) {
    const bad = records.sawInvalidUtf8 ? record.find(holdsInvalidUtf8) : undefined;
    if (bad === undefined) continue;
    records.close();
    throw parseError(
      'PARSE_CSV_INVALID',
      `${fileName}: line ${line} (${line === headerLine ? 'the header' : 'the metadata line'}) holds bytes that are not UTF-8 (${showInvalidUtf8(bad)}).`,
      { file: fileName, line },
    );
  }
  if (header.every((h) => h.trim() === '')) {
    records.close();
    throw parseError('PARSE_CSV_INVALID', `${fileName}: the header line ${headerLine} is empty.`, {
      file: fileName,
      line: headerLine,
    });
  }
  return { metadata, header, headerLine };
}

/** A data row (not blank) into a batch: a typed record, or a reject saying why it is not one. */
class CsvRowTyper {
  private readonly columns: readonly ColumnSpec[];
  private readonly coercers: readonly Coercer[];
  /** The texts of the row being typed (its array is typed in place). */
  private readonly originals: string[];

  constructor(
    private readonly fileName: string,
    set: ColumnSet,
    private readonly width: number,
    private readonly builder: BatchBuilder,
  ) {
    this.columns = set.columns;
    this.coercers = set.coercers;
    this.originals = new Array<string>(width).fill('');
  }

  /** `row`, read at `line`; `mayHoldInvalidUtf8`: bytes that are not UTF-8 were met so far. */
  add(row: string[], line: number, mayHoldInvalidUtf8: boolean): void {
    const { fileName, width, columns, builder } = this;
    const n = row.length;
    const notUtf8 = mayHoldInvalidUtf8 ? row.findIndex(holdsInvalidUtf8) : -1;
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
      this.type(row, line);
    }
  }

  /** The row's values typed in place; at the first invalid one, the row (restored) is a reject. */
  private type(row: string[], line: number): void {
    const { width, coercers, originals, builder } = this;
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
        invalidValueReject(this.fileName, 'line', line, serialiseCsvRow(row), this.columns[bad]!, row[bad]!),
      );
    } else {
      builder.records.push({ recordNumber: line, values });
      builder.chars += chars;
    }
  }
}

/**
 * The data rows as batches; blank lines counted and skipped. A file that ends inside its last line
 * is truncated when that row is short, or, with `requireFinalLineBreak`, always.
 */
async function* csvBatches(
  records: CsvRecords,
  typer: CsvRowTyper,
  builder: BatchBuilder,
  head: CsvHead,
  options: OpenReportOptions,
): AsyncGenerator<RecordBatch> {
  const width = head.header.length;
  let lastLine = head.headerLine;
  let lastShort = false;
  try {
    for (;;) {
      const row = await records.next();
      if (row === undefined) break;
      const line = records.takeLine(row);
      const n = row.length;
      lastLine = line;
      lastShort = n < width;
      if (n === 1 && row[0] === '' && width !== 1) {
        builder.totals.blankLines++;
        continue;
      }
      typer.add(row, line, records.sawInvalidUtf8);
      if (builder.full) yield builder.take();
    }
    if (records.endsInsideLine() && (lastShort || options.requireFinalLineBreak === true)) {
      throw truncatedCsvError(
        options.fileName,
        lastLine,
        lastShort ? 'its last row has fewer values than the header' : 'no line break after the last line',
      );
    }
    if (builder.size > 0) yield builder.take();
  } finally {
    records.close();
  }
}

/**
 * A CSV report's columns, from its header: the report definition is the one asked for or the one
 * its metadata names (recorded in `metadata`), and each name is resolved against it (either
 * naming convention, ids, aliases; unknown names become text columns).
 */
export function resolveCsvColumns(
  header: readonly string[],
  metadata: ReportMetadata,
  report: string | undefined,
): ColumnSet {
  const definition =
    report ?? guessReportDefinition(metadata.reportType, metadata.reportName)?.name ?? undefined;
  metadata.reportDefinition = definition;
  const resolveOptions = definition === undefined ? {} : { report: definition };
  const set = new ColumnSet();
  for (const name of header)
    set.add(resolveHeader(name, resolveOptions), name.replace(/^\uFEFF/, '').trim(), false);
  return set;
}

/** Open a CSV report: reads the metadata and header lines, then streams typed batches. */
export async function openCsvReport(input: ReportInput, options: OpenReportOptions): Promise<RecordSource> {
  const fileName = options.fileName;
  const records = new CsvRecords(input, fileName);
  const head = await readCsvHead(records, fileName);
  const { metadata, header } = head;
  const set = resolveCsvColumns(header, metadata, options.report);
  if (options.firstDataLine !== undefined) records.countLinesFrom(options.firstDataLine);
  const builder = new BatchBuilder(
    set,
    options.batchSize ?? DEFAULT_BATCH_SIZE,
    options.maxBatchChars ?? DEFAULT_MAX_BATCH_CHARS,
  );
  const typer = new CsvRowTyper(fileName, set, header.length, builder);
  return {
    metadata,
    columns: set.columns,
    unknownColumns: set.unknownColumns,
    batches: csvBatches(records, typer, builder, head, options),
    summary: () => summaryOf(builder),
  };
}
