/**
 * The records of a CSV byte stream, each with the line it starts on: bytes checked for UTF-8 (or
 * UTF-16 decoded, text-encoding.ts), split by csv-parse, pulled in bursts. What the records mean
 * (metadata line, header, typed rows) is csv-report.ts's.
 */
import type { Readable } from 'node:stream';
import { CsvError, parse } from 'csv-parse';
import type { Parser } from 'csv-parse';
import { parseError, toReadable } from '../records.js';
import type { ReportInput } from '../records.js';
import { Utf8Guard } from '../text-encoding.js';

/** The largest record, in characters, either CSV path reads (raw-csv-report.ts refuses larger ones in bytes). */
export const MAX_RECORD_SIZE = 32 * 1024 * 1024;

/** Reads a stream of objects in bursts (all that is buffered), not one promise per object. */
class ObjectReader<T> {
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

const LINE_BREAK = /\r\n|\r|\n/g;

function countLineBreaks(row: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < row.length; i++) {
    const value = row[i]!;
    if (value.indexOf('\n') >= 0 || value.indexOf('\r') >= 0) n += value.match(LINE_BREAK)?.length ?? 0;
  }
  return n;
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

/** The records of one CSV report, in order, and the line each starts on. */
export class CsvRecords {
  private readonly source: Readable;
  private readonly guard: Utf8Guard;
  private readonly parser: Parser;
  private readonly reader: ObjectReader<string[]>;
  private pending: string[][] = [];
  private pendingIndex = 0;
  /** The line the next record starts on. */
  private nextLine = 1;
  private exhausted = false;
  /** The last character of the input, to tell a file that ends inside its last line. */
  private lastChar = '';

  constructor(
    input: ReportInput,
    private readonly fileName: string,
  ) {
    this.parser = parse({
      bom: true,
      relax_column_count: true,
      max_record_size: MAX_RECORD_SIZE,
      // Every line ends at its own line break, CRLF, LF or CR (csv-parse would otherwise take the
      // first one it meets for the whole file and glue an LF-ended row to the next in a CRLF file).
      record_delimiter: ['\r\n', '\n', '\r'],
    });
    this.source = toReadable(input);
    // UTF-16 decoded, bytes that are not UTF-8 escaped (text-encoding.ts).
    this.guard = new Utf8Guard(fileName);
    this.source.on('error', (error) => this.guard.destroy(error));
    this.guard.on('error', (error) => this.parser.destroy(error));
    this.guard.on('data', (chunk: Buffer | string) => {
      if (chunk.length === 0) return;
      this.lastChar =
        typeof chunk === 'string' ? chunk.slice(-1) : String.fromCharCode(chunk[chunk.length - 1]!);
    });
    this.source.pipe(this.guard).pipe(this.parser);
    this.reader = new ObjectReader<string[]>(this.parser);
  }

  /** Whether some bytes read so far were not UTF-8 (then values may hold them, escaped). */
  get sawInvalidUtf8(): boolean {
    return this.guard.invalid;
  }

  /** Whether the input ended without a line break after its last line. */
  endsInsideLine(): boolean {
    return this.lastChar !== '' && this.lastChar !== '\n' && this.lastChar !== '\r';
  }

  /** Count the lines of the records from now on from `line`. */
  countLinesFrom(line: number): void {
    this.nextLine = line;
  }

  /** The next record; undefined at the end. A quoting error → thrown `PARSE_CSV_INVALID`. */
  async next(): Promise<string[] | undefined> {
    if (this.pendingIndex >= this.pending.length) {
      if (this.exhausted) return undefined;
      try {
        this.pending = await this.reader.next();
      } catch (error) {
        this.close();
        throw wrapCsvError(error, this.fileName, this.nextLine);
      }
      this.pendingIndex = 0;
      if (this.pending.length === 0) {
        this.exhausted = true;
        return undefined;
      }
    }
    return this.pending[this.pendingIndex++];
  }

  /**
   * The line `row` (the record just read) starts on. Line numbers are counted here, not taken from
   * csv-parse's record info (which costs an object per record and counts the CR and LF of a quoted
   * CRLF as two lines): a record takes one line plus the line breaks inside its quoted values.
   */
  takeLine(row: readonly string[]): number {
    const start = this.nextLine;
    this.nextLine += 1 + countLineBreaks(row);
    return start;
  }

  /** Stop reading: the streams are unpiped and destroyed. */
  close(): void {
    if (!this.exhausted) {
      this.exhausted = true;
      this.source.unpipe(this.guard);
      this.guard.unpipe(this.parser);
      this.guard.destroy();
      this.parser.destroy();
      if (!this.source.destroyed) this.source.destroy();
    }
  }
}
