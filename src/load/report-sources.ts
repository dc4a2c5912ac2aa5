/**
 * Parsed reports as load sources: the adapters from parse/'s readers (typed records, the CSV
 * scanner's bytes, the XML scanner's lines) to the loader's LoadSource kinds. The loader reads the
 * records a CSV scanner set aside through the per-row reader here, its own code, never the caller's.
 */
import { Readable } from 'node:stream';
import type { SetAsideRecord } from '../copy-text/bodies.js';
import { refuseFastPath } from '../copy-text/fast-path-refusal.js';
import { CybsError } from '../errors.js';
import { openCsvReport, serialiseCsvRow } from '../parse/csv/csv-report.js';
import type { RawCsvReport } from '../parse/csv/raw-csv-report.js';
import type { ColumnSpec, RecordSource, TypedRecord } from '../parse/records.js';
import type { RawXmlReport } from '../parse/xml/raw-xml-report.js';
import type {
  CopyLinesSource,
  CsvBytesSource,
  LoadBatch,
  LoadRecord,
  RecordLinesQuery,
  RecordsSource,
  SourceColumn,
  TableDecl,
} from './table-spec.js';

/** A parser column as the loader sees it. */
export function toSourceColumn(spec: ColumnSpec): SourceColumn {
  const out: SourceColumn = { name: spec.column, pgType: spec.pgType };
  if (spec.description) out.description = spec.description;
  if (spec.field.kind === 'unknown') out.unknown = true;
  return out;
}

/**
 * A record as the loader sees it. Parsers do not keep each row's original text (it would double the
 * work on the hot path); the few records the loader itself rejects get their values re-serialised as
 * a CSV row instead.
 */
export function toLoadRecord(record: TypedRecord): LoadRecord {
  const { recordNumber, values } = record;
  return {
    recordNumber,
    values,
    get raw() {
      return serialiseCsvRow(values.map((v) => (v === null ? '' : String(v))));
    },
  };
}

/**
 * Feed a parser's record source to the loader. `columns` overrides the parser's column list when
 * it is known in advance (an XML file read twice: its columns are discovered while reading, so the
 * first pass collects them and the second pass loads with the full list; records are padded).
 */
export function toLoadSource(
  records: RecordSource,
  source: string,
  columns?: readonly ColumnSpec[],
): RecordsSource {
  return {
    kind: 'records',
    source,
    columns: (columns ?? records.columns).map(toSourceColumn),
    batches: (async function* (): AsyncGenerator<LoadBatch> {
      for await (const batch of records.batches) {
        yield { records: batch.records.map(toLoadRecord), rejects: batch.rejects.map((r) => ({ ...r })) };
      }
    })(),
  };
}

/** The declared data columns of a table, as a source's columns (for a source with no rows). */
export function declaredColumns(table: TableDecl): SourceColumn[] {
  return table.columns.map((c) => ({
    name: c.name,
    pgType: c.pgType,
    ...(c.description ? { description: c.description } : {}),
  }));
}

/**
 * A CSV file opened for the fast path as a loader source (its bytes go straight to COPY); `reopen`
 * opens the file again from its start.
 */
export function toRawLoadSource(
  report: RawCsvReport,
  source: string,
  reopen: () => Promise<RawCsvReport>,
  read?: () => AsyncIterable<Buffer>,
): CsvBytesSource {
  return {
    kind: 'csv-bytes',
    source,
    columns: report.columns.map(toSourceColumn),
    body: report.body,
    reopen: async () => (await reopen()).body,
    perRowRecords: (aside) => perRowBatches(report, aside, source),
    ...(read
      ? {
          recordsOn: async (query: RecordLinesQuery) => {
            const aside = await recordsOnLines(read(), report.body.firstLine, query);
            return (
              aside && { lines: aside.map((r) => r.line), batches: perRowBatches(report, aside, source) }
            );
          },
        }
      : {}),
  };
}

const LF = 10;
const CR = 13;
const QUOTE = 34;
const COMMA = 44;

/**
 * The text (without its line end) and line of each wanted record of a CSV file (`bytes`, from its
 * start) from `firstLine` on, numbered as the fast path's scanner numbers them (the line a record
 * starts on; a line break inside quotes is a line); undefined when the file, up to where it is
 * read, is not plain RFC 4180 that every reader splits alike: a quote that neither opens a value
 * nor closes one, a carriage return that is not part of a CRLF, an empty line, an unclosed quote.
 */
export async function recordsOnLines(
  bytes: AsyncIterable<Buffer>,
  firstLine: number,
  query: RecordLinesQuery,
): Promise<SetAsideRecord[] | undefined> {
  const found: SetAsideRecord[] = [];
  let line = 1;
  let inQuote = false;
  /** The line the current record starts on, and its bytes so far when it is wanted. */
  let recordLine = 1;
  let capture: Buffer[] | undefined;
  // The two bytes before the chunk being read (a LF before the file: a record starts there).
  let last1 = LF;
  let last2 = LF;
  /** The previous chunk ended in a quote inside quotes (closing, or the first of two), or a CR. */
  let pendingQuote = false;
  let pendingCr = false;
  const wanted = (at: number) => at >= firstLine && query.wants(at);
  const finish = (tail: Buffer) => {
    const text = Buffer.concat([...capture!, tail]);
    const end = text.length > 0 && text[text.length - 1] === CR ? text.length - 1 : text.length;
    found.push({ line: recordLine, text: text.toString('utf8', 0, end) });
    capture = undefined;
  };
  for await (const chunk of bytes) {
    const n = chunk.length;
    if (n === 0) continue;
    let i = 0;
    let captureFrom = 0;
    if (pendingCr && chunk[0] !== LF) return undefined;
    pendingCr = false;
    if (pendingQuote) {
      pendingQuote = false;
      if (chunk[0] === QUOTE) i = 1;
      else if (chunk[0] === COMMA || chunk[0] === CR || chunk[0] === LF) inQuote = false;
      else return undefined;
    }
    const before = (at: number, back: number): number | undefined =>
      at - back >= 0 ? chunk[at - back] : at - back === -1 ? last1 : last2;
    // The next quote, CR and LF (memchr; -2: not looked for yet): every other byte is passed over.
    let q = chunk.indexOf(QUOTE, i);
    let cr = -2;
    let lf = -2;
    while (i < n) {
      if (inQuote) {
        // Inside quotes only a quote ends them; the line breaks passed are lines.
        const end = q < 0 ? n : q;
        line += countLf(chunk, i, end);
        for (let at = chunk.indexOf(CR, i); at >= 0 && at < end; at = chunk.indexOf(CR, at + 1)) {
          if (at + 1 === n) pendingCr = true;
          else if (chunk[at + 1] !== LF) return undefined;
        }
        if (q < 0) break;
        if (q + 1 >= n) {
          pendingQuote = true;
          break;
        }
        const next = chunk[q + 1]!;
        if (next === QUOTE) {
          i = q + 2;
        } else {
          if (next !== COMMA && next !== CR && next !== LF) return undefined;
          inQuote = false;
          i = q + 1;
        }
        q = chunk.indexOf(QUOTE, i);
        continue;
      }
      if (cr === -2 || (cr >= 0 && cr < i)) cr = chunk.indexOf(CR, i);
      if (lf === -2 || (lf >= 0 && lf < i)) lf = chunk.indexOf(LF, i);
      const at = Math.min(q < 0 ? n : q, cr < 0 ? n : cr, lf < 0 ? n : lf);
      if (at >= n) break;
      i = at + 1;
      const b = chunk[at];
      if (b === QUOTE) {
        // Opens a value: at a field's start only.
        const prior = before(at, 1);
        if (prior !== COMMA && prior !== LF) return undefined;
        inQuote = true;
        q = chunk.indexOf(QUOTE, i);
      } else if (b === CR) {
        if (i >= n) pendingCr = true;
        else if (chunk[i] !== LF) return undefined;
      } else {
        // A LF outside quotes ends the record (an empty one is a blank line).
        const prior = before(at, 1);
        if (prior === LF || (prior === CR && before(at, 2) === LF)) return undefined;
        if (capture) finish(chunk.subarray(captureFrom, at));
        if (recordLine >= query.through) return found;
        line++;
        recordLine = line;
        if (wanted(recordLine)) {
          capture = [];
          captureFrom = i;
        }
      }
    }
    // A copy: the reader may reuse its buffer for the next chunk.
    if (capture) capture.push(Buffer.from(chunk.subarray(captureFrom)));
    last2 = n >= 2 ? chunk[n - 2]! : last1;
    last1 = chunk[n - 1]!;
  }
  if (pendingCr || (inQuote && !pendingQuote)) return undefined;
  if (capture && capture.some((part) => part.length > 0)) finish(Buffer.alloc(0));
  return found;
}

/** The LF bytes in `chunk` [from, to). */
function countLf(chunk: Buffer, from: number, to: number): number {
  let lines = 0;
  for (let at = chunk.indexOf(LF, from); at >= 0 && at < to; at = chunk.indexOf(LF, at + 1)) lines++;
  return lines;
}

/**
 * Set-aside records of a raw CSV report, each parsed on its own (with its line number) by the
 * per-row path. A record the per-row parser cannot read at all fails the whole file there, with
 * messages about the file: that refuses the fast path, so the per-row path reads the whole file.
 */
async function* perRowBatches(
  report: RawCsvReport,
  aside: readonly SetAsideRecord[],
  source: string,
): AsyncGenerator<LoadBatch> {
  const definition = report.metadata.reportDefinition;
  for (const record of aside) {
    try {
      const input = Readable.from([report.head, Buffer.from(`${record.text}\r\n`, 'utf8')]);
      const records = await openCsvReport(input, {
        fileName: report.body.fileName,
        ...(definition !== undefined ? { report: definition } : {}),
        firstDataLine: record.line,
      });
      yield* toLoadSource(records, source).batches;
    } catch (error) {
      if (error instanceof CybsError && error.stage === 'parse') {
        throw refuseFastPath(`line ${record.line} cannot be read on its own (${error.code})`);
      }
      throw error;
    }
  }
}

/**
 * An XML file opened for the fast path as a loader source (its records as COPY text lines);
 * `reopen` reads the file again from its start.
 */
export function toRawXmlLoadSource(
  report: RawXmlReport,
  source: string,
  reopen: () => Promise<RawXmlReport>,
): CopyLinesSource {
  const columns = report.columns.map(toSourceColumn);
  const names = columns.map((c) => c.name).join('\n');
  return {
    kind: 'copy-lines',
    source,
    columns,
    body: report.body,
    reopen: async () => {
      const again = await reopen();
      if (again.columns.map((c) => toSourceColumn(c).name).join('\n') !== names) {
        throw refuseFastPath('the XML file gave other columns when read again');
      }
      return again.body;
    },
  };
}
