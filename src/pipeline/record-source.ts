import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import type { WriteStream } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import type {
  CopyLinesSource,
  CsvBytesSource,
  LoadBatch,
  LoadRecord,
  RecordsSource,
  SourceColumn,
  TableDecl,
} from '../load/table-spec.js';
import type { LoadValue, SetAsideRecord } from '../copy-text/bodies.js';
import { refuseFastPath } from '../copy-text/fast-path-refusal.js';
import type { RawCsvReport } from '../parse/csv/raw-csv-report.js';
import type { FileDigester } from '../spool/file-digest.js';
import { CybsError } from '../errors.js';
import type { RawXmlReport } from '../parse/xml/raw-xml-report.js';
import { openCsvReport, serialiseCsvRow } from '../parse/csv/csv-report.js';
import type { ColumnSpec, RecordSource, TypedRecord } from '../parse/records.js';

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
function toLoadRecord(record: TypedRecord): LoadRecord {
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

/** Read a whole record source once, to learn every column it has (first pass of an XML file). */
export async function collectColumns(records: RecordSource): Promise<ColumnSpec[]> {
  for await (const batch of records.batches) void batch;
  return [...records.columns];
}

/**
 * A spool of typed records on disk, one JSON array per line: lets several loader targets be fed
 * from one pass over on-demand pages without holding them in memory.
 */
export class RecordSpool {
  private readonly out: WriteStream;
  private columns: ColumnSpec[] = [];
  /** Columns used when no page had records of this section (the table's declared ones). */
  private readonly fallback: SourceColumn[];
  private readonly rejects: LoadBatch['rejects'] = [];
  private count = 0;
  private readonly hash = createHash('sha256');
  /** The file's first error (open or write): thrown by the next write and by close(). */
  private error?: Error;

  constructor(
    private readonly path: string,
    fallbackColumns: readonly SourceColumn[],
  ) {
    this.out = createWriteStream(path, { encoding: 'utf8' });
    // Never an unhandled 'error' event (a full disk, a removed directory): the spool's error.
    this.out.on('error', (error) => (this.error ??= error));
    this.fallback = [...fallbackColumns];
  }

  setColumns(columns: readonly ColumnSpec[]): void {
    if (columns.length > this.columns.length) this.columns = [...columns];
  }

  async write(recordNumber: number, values: readonly LoadValue[]): Promise<void> {
    if (this.error) throw this.error;
    this.count++;
    const line = `${JSON.stringify([recordNumber, ...values])}\n`;
    this.hash.update(line, 'utf8');
    if (!this.out.write(line)) await once(this.out, 'drain');
  }

  addReject(reject: LoadBatch['rejects'][number]): void {
    this.rejects.push(reject);
  }

  get records(): number {
    return this.count;
  }

  private closing?: Promise<void>;

  /** Finish writing; safe to call more than once. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (!this.out.closed) {
        const closed = once(this.out, 'close');
        this.out.end();
        await closed;
      }
      if (this.error) throw this.error;
    })();
    return this.closing;
  }

  /** The spool's columns, records (SHA-256 taken as they were written) and rejects, for a digest. */
  digestInto(digester: FileDigester): void {
    const about = { columns: this.columns, sha256: this.hash.digest('hex'), rejects: this.rejects };
    digester.update(Buffer.from(`${JSON.stringify(about)}\n`));
  }

  /** The spooled records as a loader source (call after close()). */
  toLoadSource(source: string, batchSize = 2000): RecordsSource {
    const path = this.path;
    const rejects = this.rejects;
    return {
      kind: 'records',
      source,
      columns: this.columns.length > 0 ? this.columns.map(toSourceColumn) : this.fallback,
      batches: (async function* (): AsyncGenerator<LoadBatch> {
        let batch: LoadRecord[] = [];
        const lines = createInterface({
          input: createReadStream(path, { encoding: 'utf8' }),
          crlfDelay: Infinity,
        });
        let first = true;
        for await (const line of lines) {
          if (line === '') continue;
          const [recordNumber, ...values] = JSON.parse(line) as [number, ...LoadValue[]];
          batch.push(toLoadRecord({ recordNumber, values }));
          if (batch.length >= batchSize) {
            yield { records: batch, rejects: first ? rejects : [] };
            first = false;
            batch = [];
          }
        }
        if (batch.length > 0 || first) yield { records: batch, rejects: first ? rejects : [] };
      })(),
    };
  }
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
          recordsOn: async (lines: readonly number[]) => {
            const aside = await recordsOnLines(read(), report.body.firstLine, lines);
            return aside && perRowBatches(report, aside, source);
          },
        }
      : {}),
  };
}

const LF = 10;
const CR = 13;
const QUOTE = 34;

/**
 * The text of the records that start on these lines of a CSV file (`bytes`, from its start), read
 * up to the last of them; undefined when a line cannot be told to hold exactly one whole record:
 * before the first data line, past the end, or after a line whose quotes do not pair up (a value
 * that spans lines) or that holds a carriage return other than its line end's (line numbers may
 * then count differently from the scanner's).
 */
export async function recordsOnLines(
  bytes: AsyncIterable<Buffer>,
  firstLine: number,
  lines: readonly number[],
): Promise<SetAsideRecord[] | undefined> {
  const wanted = [...new Set(lines)].sort((a, b) => a - b);
  if (wanted.length === 0) return [];
  if (wanted[0]! < firstLine) return undefined;
  const last = wanted[wanted.length - 1]!;
  const found: SetAsideRecord[] = [];
  let next = 0;
  let line = 1;
  // The next carriage return and quote in the buffer being read (memchr, each byte looked at once).
  let scanned: Buffer | undefined;
  let nextCr = -1;
  let nextQuote = -1;
  /** Check the line in `buf` [start, end) (without its LF); false when it cannot be vouched for. */
  const take = (buf: Buffer, start: number, end: number): boolean => {
    if (buf !== scanned) {
      scanned = buf;
      nextCr = buf.indexOf(CR, start);
      nextQuote = buf.indexOf(QUOTE, start);
    }
    const stop = end > start && buf[end - 1] === CR ? end - 1 : end;
    for (; nextCr >= 0 && nextCr < end; nextCr = buf.indexOf(CR, nextCr + 1)) {
      if (nextCr !== stop) return false;
    }
    let quotes = 0;
    for (; nextQuote >= 0 && nextQuote < end; nextQuote = buf.indexOf(QUOTE, nextQuote + 1)) quotes++;
    if (quotes % 2 !== 0) return false;
    if (line === wanted[next]) {
      found.push({ line, text: buf.toString('utf8', start, stop) });
      next++;
    }
    line++;
    return true;
  };
  let rest: Buffer | undefined;
  for await (const chunk of bytes) {
    scanned = undefined;
    let start = 0;
    if (rest !== undefined) {
      const lf = chunk.indexOf(LF);
      if (lf < 0) {
        rest = Buffer.concat([rest, chunk]);
        continue;
      }
      const whole = Buffer.concat([rest, chunk.subarray(0, lf)]);
      rest = undefined;
      if (!take(whole, 0, whole.length)) return undefined;
      if (line > last) return found;
      start = lf + 1;
    }
    for (let lf = chunk.indexOf(LF, start); lf >= 0; lf = chunk.indexOf(LF, start)) {
      if (!take(chunk, start, lf)) return undefined;
      if (line > last) return found;
      start = lf + 1;
    }
    if (start < chunk.length) rest = Buffer.from(chunk.subarray(start));
  }
  if (rest !== undefined && rest.length > 0 && !take(rest, 0, rest.length)) return undefined;
  return next === wanted.length ? found : undefined;
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
