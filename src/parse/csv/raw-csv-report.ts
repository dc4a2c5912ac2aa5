/**
 * The fast load path of CSV report files on PostgreSQL: JavaScript reads the metadata and header
 * lines; a byte scanner (BodyScanner) passes the data bytes to one COPY in text format with a comma
 * delimiter (RAW_CSV_COPY_OPTIONS), checking each record on the way and appending its line number
 * (and, for a first load straight into the table, the lineage values). A record without quotes or
 * backslashes is already a line of that format and passes as it is; the others are rewritten
 * (quotes taken off, a comma, backslash, CR or LF inside a value escaped). PostgreSQL splits and
 * casts them into the typed staging table of loadWindow, or on a first load into the table itself
 * (then the usual merge, delete and window bookkeeping, in the same transaction). Text format
 * rather than `FORMAT csv`: PostgreSQL's CSV reader costs the backend more CPU for the same rows,
 * and the backend is what a first load waits for.
 *
 * It produces exactly what the per-row path (openCsvReport → toLoadSource → loadWindow) produces,
 * or refuses (`LOAD_FAST_PATH_REFUSED`) and the caller loads the file through the per-row path.
 * It refuses, rather than risk a difference, whenever a file is outside the common case:
 *  - a column's type drifted from the table's;
 *  - a carriage return outside quotes that is not part of a CRLF line end, a blank line, a
 *    blank line between metadata and header, a one-column header;
 *  - a quote that does not open a value, or a quoted value that goes on after its closing quote
 *    (the per-row parser fails the file there);
 *  - a row PostgreSQL's COPY refuses (a ragged row, padding values, NUL, invalid UTF-8) or a
 *    row count that differs from the line count JavaScript saw; a header line that is not UTF-8, a
 *    UTF-16 file (its byte order mark);
 *  - a record of more than MAX_RECORD_SIZE bytes: the per-row reader applies its limit to it (in
 *    characters, never more than the bytes), so both paths accept and refuse the same records, and
 *    the bytes held back for an unfinished record stay bounded;
 *  - more than MAX_SET_ASIDE_RECORDS records that need the per-row path: a non-text value not
 *    written in the canonical form that both the catalog's coercers and PostgreSQL read
 *    identically (numeric `-?digits[.digits]`, timestamps `YYYY-MM-DDTHH:MM:SS[.ffffff]Z`, dates
 *    `YYYY-MM-DD` or such a timestamp, integers, Y/N-style booleans), or an empty natural key.
 *    Fewer such records are set aside, and the per-row path types or rejects each with its exact
 *    messages.
 * So a clean daily report loads at COPY speed; a file with bad rows is loaded correctly, slower.
 */
import { isUtf8 } from 'node:buffer';
import type { Readable } from 'node:stream';
import { parse } from 'csv-parse/sync';
import type { CybsError } from '../../errors.js';
import { parseCsvMetadataLine, plainCsvFields, resolveCsvColumns, truncatedCsvError } from './csv-report.js';
import { MAX_RECORD_SIZE } from './csv-records.js';
import { sniffEncoding } from '../text-encoding.js';
import { emptyMetadata } from '../records.js';
import type { RawCsvBody, RawCsvChecks, SetAsideRecord } from '../../copy-text/bodies.js';
import { CANONICAL } from '../../copy-text/canonical.js';
import { CANONICAL_BYTES, writeDecimal } from '../../copy-text/canonical-bytes.js';
import { escapeCopyText } from '../../copy-text/cell-encoders.js';
import type { ByteCheck } from '../../copy-text/canonical-bytes.js';
import { refuseFastPath } from '../../copy-text/fast-path-refusal.js';
import { releaseBuffer } from '../../spool/release-buffer.js';
import type { ColumnSpec, ReportMetadata } from '../records.js';

export interface RawCsvReport {
  metadata: ReportMetadata;
  columns: ColumnSpec[];
  unknownColumns: ColumnSpec[];
  /** The bytes of the metadata and header lines (to parse a set-aside record on its own). */
  head: Buffer;
  body: RawCsvBody;
}

const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LETTER_N = 0x6e;
const LETTER_R = 0x72;
/** A run of ordinary bytes at least this long is copied natively rather than byte by byte. */
const NATIVE_COPY_BYTES = 48;
/** Quotes of one record whose places the scanner keeps (a record with more is searched again). */
const MAX_TRACKED_QUOTES = 64;

/**
 * Open a CSV report for the fast path: metadata and header as openCsvReport reads them, and the
 * rest of the bytes. Throws a refusal when the head is unusual (the caller falls back). It is done
 * with each chunk of `input` before it asks for the next (nothing points into an earlier chunk), so
 * the input may fill one buffer again for every chunk.
 */
export async function openRawCsvReport(
  input: Readable | AsyncIterable<Buffer | string>,
  options: { fileName: string; report?: string; requireFinalLineBreak?: boolean },
): Promise<RawCsvReport> {
  const iterator = (input as AsyncIterable<Buffer | string>)[Symbol.asyncIterator]();
  let buffer: Buffer = Buffer.alloc(0);
  /** Whether `buffer` is this reader's own (not the input's chunk, which the next may overwrite). */
  let copied = true;
  let ended = false;
  const more = async (): Promise<boolean> => {
    if (ended) return false;
    // The input may fill the buffer of its last chunk again with the next (a reader in turn).
    if (!copied) {
      buffer = Buffer.from(buffer);
      copied = true;
    }
    const next = await iterator.next();
    if (next.done) {
      ended = true;
      return false;
    }
    const chunk = typeof next.value === 'string' ? Buffer.from(next.value, 'utf8') : next.value;
    copied = buffer.length > 0;
    buffer = copied ? Buffer.concat([buffer, chunk]) : chunk;
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
    if (!isUtf8(line)) throw refuseFastPath('a header line that is not UTF-8');
    return line.toString('utf8');
  };
  const fields = (line: string): string[] =>
    plainCsvFields(line) ?? (parse(line, { relax_column_count: true }) as string[][])[0] ?? [''];

  // UTF-16 is decoded by the per-row path (UTF-32 refused there in one sentence).
  while (buffer.length < 4 && (await more()));
  if (sniffEncoding(buffer.subarray(0, 4), options.fileName) !== 'utf-8')
    throw refuseFastPath('the file is UTF-16, which the per-row path decodes');
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
  const set = resolveCsvColumns(header, metadata, options.report);

  const head = Buffer.from(buffer.subarray(0, offset));
  const rest = buffer.subarray(offset);
  let scanner: BodyScanner | undefined;
  async function* read(checks: RawCsvChecks, readOptions?: { inTurn?: boolean }): AsyncGenerator<Buffer> {
    if (scanner !== undefined) throw new Error('the body of a raw CSV report can be read once');
    const scan = (scanner = new BodyScanner(checks, headerLine + 1, readOptions?.inTurn === true));
    if (rest.length > 0) yield scan.push(rest);
    for (;;) {
      const next = await iterator.next();
      if (next.done) break;
      const chunk = typeof next.value === 'string' ? Buffer.from(next.value, 'utf8') : next.value;
      const out = scan.push(chunk);
      if (out.length > 0) yield out;
    }
    const last = scan.end(options.fileName, options.requireFinalLineBreak === true);
    if (last !== undefined) yield last;
    // Asked for more after the last output.
    scan.release();
  }

  return {
    metadata,
    columns: set.columns,
    unknownColumns: set.unknownColumns,
    head,
    body: {
      fileName: options.fileName,
      firstLine: headerLine + 1,
      read,
      records: () => scanner?.records ?? 0,
      setAside: () => scanner?.setAside ?? [],
    },
  };
}

/**
 * The COPY options of the scanner's output: text format, values separated by commas, an empty
 * value NULL, quoted or not (as the catalog's coercers read an empty value).
 */
export const RAW_CSV_COPY_OPTIONS = "(FORMAT text, DELIMITER ',', NULL '')";

/**
 * A value as a field of RAW_CSV_COPY_OPTIONS text (escapeCopyText, and a comma escaped); undefined
 * for the empty string, which that format can only read as NULL, and for text holding a NUL.
 */
export function copyTextField(value: string): string | undefined {
  if (value === '') return undefined;
  return escapeCopyText(value)?.replaceAll(',', '\\,');
}

const COMMA = 0x2c;

function recordTooLarge(line: number): CybsError {
  return refuseFastPath(`the record on line ${line} is larger than ${MAX_RECORD_SIZE} bytes`);
}

/** At most this many records per file are set aside for the per-row path; more refuse the file. */
export const MAX_SET_ASIDE_RECORDS = 1000;
const MAX_SET_ASIDE_CHARS = 16 * 1024 * 1024;

/**
 * One pass over the data bytes, byte by byte, splitting records as a CSV reader does (a quote
 * toggles quoting). It refuses structures the per-row path reads differently (a CR that ends no
 * line, blank lines, an unclosed quote, a quote inside a value) and appends to every record its
 * line number in the file (`,<line>` before its line end) for the `_source_row` column: line
 * breaks inside quoted values move later records down, exactly as the per-row parser counts them.
 * A record with quotes or backslashes is rewritten as COPY text (rewrite); the others are that
 * already. A record with a value not in its canonical form, or an empty key, is not copied but set
 * aside (its text and line) for the per-row path, which types or rejects it with its own messages.
 * Chunk boundaries may fall anywhere: the bytes of an unfinished record are held back until its end.
 */
class BodyScanner {
  /** Records handed to COPY. */
  records = 0;
  readonly setAside: SetAsideRecord[] = [];
  private setAsideChars = 0;
  private readonly patterns: (RegExp | undefined)[];
  /** The byte checks of the patterns (CANONICAL_BYTES), where a type has one. */
  private readonly checks: (ByteCheck | undefined)[];
  private readonly required: boolean[];
  /** Columns whose value must be looked at (checked type or required). */
  private readonly watched: boolean[];
  /** The line the current record starts on, and the line being read. */
  private recordLine: number;
  private line: number;
  private inQuote = false;
  /** Inside quotes, the previous byte was a CR (a LF right after it is the same line break). */
  private quotedCr = false;
  /** Nothing but a CR was read since the last line end (or since the start). */
  private atLineStart = true;
  /** The held-back bytes end with a CR outside quotes: the next chunk must start with its LF. */
  private endsInCr = false;
  private field = 0;
  /** The bytes of the current, unfinished record, and where its current field starts in them. */
  private pending: Buffer = Buffer.alloc(0);
  /** Where the first backslash of `pending` is, or -1. */
  private pendingBackslash = -1;
  /** Where `pending` and the next chunk are joined (see push); `pending` is kept at its start. */
  private joined: Buffer = Buffer.alloc(0);
  private fieldStart = 0;
  /** Why the current record is set aside, once one of its values failed a check. */
  private bad = false;
  /**
   * The current record's quotes (opening and closing, as offsets from its start; more than fit are
   * counted): a record with any is rewritten as COPY text.
   */
  private readonly quotes = new Int32Array(MAX_TRACKED_QUOTES);
  private quoteCount = 0;
  private out: Buffer = Buffer.allocUnsafe(0);
  private o = 0;
  private readonly append: Buffer;
  /** Room kept free after every copy for a record's line number, appended text and CR. */
  private readonly reserve: number;

  /**
   * `inTurn`: the consumer is done with each output before it asks for the next (a COPY written in
   * turn), so every push writes into the same output buffer, grown as needed.
   */
  constructor(
    checks: RawCsvChecks,
    firstLine: number,
    private readonly inTurn: boolean,
  ) {
    this.patterns = checks.types.map((t) => CANONICAL[t]);
    this.checks = checks.types.map((t) => CANONICAL_BYTES[t]);
    this.required = checks.types.map(() => false);
    for (const i of checks.required) this.required[i] = true;
    this.watched = checks.types.map((_, i) => this.patterns[i] !== undefined || this.required[i] === true);
    this.recordLine = firstLine;
    this.line = firstLine;
    this.append = Buffer.from(checks.append ?? '', 'utf8');
    this.reserve = 32 + this.append.length;
  }

  /** Scan a chunk; the bytes to hand to COPY (complete records, line numbers added). */
  push(chunk: Buffer): Buffer {
    if (chunk.length === 0) return chunk;
    const resume = this.pending.length;
    // The unfinished record and the chunk joined in a buffer kept from chunk to chunk: a fresh one
    // per chunk would allocate about the file's size in short-lived buffers, which V8 counts
    // towards its old generation's limit, and so set off full collections.
    let work = chunk;
    if (resume > 0) {
      const length = resume + chunk.length;
      if (this.joined.length < length) {
        const grown = Buffer.allocUnsafeSlow(Math.max(length, 2 * this.joined.length));
        this.pending.copy(grown, 0);
        releaseBuffer(this.joined);
        this.joined = grown;
      }
      chunk.copy(this.joined, resume);
      work = this.joined.subarray(0, length);
    }
    const n = work.length;
    if (this.endsInCr && work[resume] !== LF) throw refuseFastPath('a carriage return that ends no line');
    this.endsInCr = false;
    // Sized for the chunk, not for the held-back record joined to it (room() grows it when that
    // record goes out): a long record would otherwise cost a buffer of its size per chunk. A fresh
    // buffer each time unless the consumer is in turn: COPY may still be sending the previous one.
    const size = chunk.length + (chunk.length >> 3) + this.reserve * 2;
    this.fresh(size);
    this.o = 0;
    const watched = this.watched;
    let field = this.field;
    let start = this.fieldStart;
    let recordStart = 0;
    let emitted = 0;
    let inQuote = this.inQuote;
    let quotedCr = this.quotedCr;
    let atLineStart = this.atLineStart;
    const quotes = this.quotes;
    let quoteCount = this.quoteCount;
    // The next backslash (memchr): a record before it has none and needs no escaping for them.
    let backslash = this.pendingBackslash >= 0 ? this.pendingBackslash : work.indexOf(BACKSLASH, resume);
    // The line count lives in a local while scanning: a property written for every line break
    // inside quotes keeps V8 from tightening the loop.
    let line = this.line;
    let i = resume;
    while (i < n) {
      let b = work[i]!;
      if (inQuote) {
        // Inside quotes only a quote ends them; line breaks are counted.
        for (;;) {
          if (b === QUOTE) {
            inQuote = false;
            if (quoteCount < MAX_TRACKED_QUOTES) quotes[quoteCount] = i - recordStart;
            quoteCount++;
            break;
          }
          if (b === LF) {
            if (!quotedCr) line++;
            quotedCr = false;
          } else if (b === CR) {
            line++;
            quotedCr = true;
          } else {
            quotedCr = false;
          }
          if (++i >= n) break;
          b = work[i]!;
        }
        i++;
        continue;
      }
      if (b > COMMA) {
        // An ordinary byte, and the ordinary bytes after it.
        i++;
        while (i < n && work[i]! > COMMA) i++;
        atLineStart = false;
        continue;
      }
      if (b === COMMA) {
        if (watched[field] === true) this.checkValue(field, work, start, i);
        field++;
        start = i + 1;
        atLineStart = false;
      } else if (b === LF) {
        if (atLineStart) throw refuseFastPath('a blank line');
        if (i - recordStart > MAX_RECORD_SIZE) throw recordTooLarge(this.recordLine);
        const end = i > recordStart && work[i - 1] === CR ? i - 1 : i;
        if (watched[field] === true) this.checkValue(field, work, start, end);
        const escapes = backslash >= 0 && backslash < i;
        if (escapes) backslash = work.indexOf(BACKSLASH, i + 1);
        if (this.bad) {
          // Not copied: the line end before it goes out, the record and its own line end do not.
          this.emit(work, emitted, recordStart);
          this.setAsideRecord(work.toString('utf8', recordStart, end));
          emitted = i + 1;
        } else {
          this.copyRecord(work, emitted, recordStart, end, escapes, quoteCount);
          // Its line end goes out as a LF alone: COPY wants one kind of line end in a file, and a
          // CRLF file may have LF-ended rows (each row ends at its own line break, as per row).
          emitted = i;
        }
        quoteCount = 0;
        line++;
        this.recordLine = line;
        field = 0;
        start = i + 1;
        recordStart = i + 1;
        atLineStart = true;
      } else if (b === CR) {
        if (i + 1 < n && work[i + 1] !== LF) throw refuseFastPath('a carriage return that ends no line');
      } else if (b === QUOTE) {
        inQuote = true;
        if (quoteCount < MAX_TRACKED_QUOTES) quotes[quoteCount] = i - recordStart;
        quoteCount++;
        quotedCr = false;
        atLineStart = false;
      } else {
        atLineStart = false;
      }
      i++;
    }
    this.line = line;
    if (n - recordStart > MAX_RECORD_SIZE) throw recordTooLarge(this.recordLine);
    // The unfinished record is held back (copied: `chunk` belongs to the caller).
    this.emit(work, emitted, recordStart);
    // It stays at the start of `joined`, where the next chunk is joined to it: neither it nor the
    // search for backslashes is redone per chunk (a long record would cost its size per chunk).
    const rest = n - recordStart;
    if (resume === 0 || rest > this.joined.length) {
      // `work` is the caller's chunk (or a joined buffer outgrown): copied.
      const outgrown = rest > this.joined.length ? this.joined : undefined;
      if (outgrown) this.joined = Buffer.allocUnsafeSlow(Math.max(rest, 2 * outgrown.length));
      work.copy(this.joined, 0, recordStart, n);
      releaseBuffer(outgrown);
    } else if (recordStart > 0) {
      this.joined.copyWithin(0, recordStart, n);
    }
    this.pending = this.joined.subarray(0, rest);
    this.pendingBackslash = backslash < 0 ? -1 : backslash - recordStart;
    this.fieldStart = start - recordStart;
    this.endsInCr = !inQuote && work[n - 1] === CR;
    this.field = field;
    this.inQuote = inQuote;
    this.quotedCr = quotedCr;
    this.atLineStart = atLineStart;
    this.quoteCount = quoteCount;
    return this.out.subarray(0, this.o);
  }

  /** The end of the data: the last record when it has no line break; the bytes still to copy. */
  end(fileName: string, requireFinalLineBreak: boolean): Buffer | undefined {
    if (this.inQuote)
      throw refuseFastPath(`a quoted value opened on line ${this.recordLine} that never closes`);
    if (this.atLineStart) return undefined;
    if (this.endsInCr) throw refuseFastPath('a carriage return that ends no line');
    // A download that ends inside a line was cut off in transfer: its last value may be cut too
    // (an amount "12.3" of "12.34"), so it is a structural error, as on the per-row path.
    if (requireFinalLineBreak) {
      throw truncatedCsvError(fileName, this.recordLine, 'no line break after the last line');
    }
    const work = this.pending;
    if (this.watched[this.field] === true) {
      this.checkValue(this.field, work, this.fieldStart, work.length);
    }
    const size = work.length + this.reserve;
    this.fresh(size);
    this.o = 0;
    const escapes = work.includes(BACKSLASH);
    if (this.bad) {
      this.setAsideRecord(work.toString('utf8'));
    } else {
      this.copyRecord(work, 0, 0, work.length, escapes, this.quoteCount);
    }
    this.quoteCount = 0;
    this.pending = Buffer.alloc(0);
    this.pendingBackslash = -1;
    return this.out.subarray(0, this.o);
  }

  /**
   * A record handed to COPY: the bytes before it still to go out ([from, s): the previous line
   * end), the record [s, e) as it is or rewritten (with quotes, or backslashes when `escapes`), and
   * its line number and appended text.
   */
  private copyRecord(
    b: Buffer,
    from: number,
    s: number,
    e: number,
    escapes: boolean,
    quoteCount: number,
  ): void {
    if (quoteCount > 0 || escapes) {
      this.emit(b, from, s);
      this.rewrite(b, s, e, escapes, quoteCount);
    } else {
      this.emit(b, from, e);
    }
    this.tag();
    this.records++;
  }

  private emit(chunk: Buffer, from: number, to: number): void {
    if (to <= from) return;
    this.room(to - from);
    this.copyRun(chunk, from, to);
  }

  /**
   * Bytes [s, e) into `out` as they are (room made): natively when long, else byte by byte (a line
   * end before a rewritten record, a short run between quotes: cheaper than a call into the runtime).
   */
  private copyRun(b: Buffer, s: number, e: number): void {
    if (e - s >= NATIVE_COPY_BYTES) {
      this.o += b.copy(this.out, this.o, s, e);
      return;
    }
    const out = this.out;
    let o = this.o;
    for (let i = s; i < e; i++) out[o++] = b[i]!;
    this.o = o;
  }

  /**
   * An output buffer of `size` bytes for a push: a new one unless the consumer is in turn, when
   * the last one is kept if large enough, else freed (the consumer is done with what it held).
   */
  private fresh(size: number): void {
    if (this.inTurn && this.out.length >= size) return;
    if (this.inTurn) releaseBuffer(this.out);
    this.out = Buffer.allocUnsafe(size);
  }

  /** Room for `bytes` more in `out`, and the reserve after them. */
  private room(bytes: number): void {
    if (this.o + bytes + this.reserve <= this.out.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.out.length * 2, this.o + bytes + this.reserve + 4096));
    this.out.copy(grown, 0, 0, this.o);
    // This push's output so far (in turn, also the last one's, which the consumer is done with).
    releaseBuffer(this.out);
    this.out = grown;
  }

  /**
   * Give back the joining buffer, and the output buffer when the consumer is in turn
   * (releaseBuffer): once the consumer asked for more after the last output.
   */
  release(): void {
    if (this.inTurn) releaseBuffer(this.out);
    releaseBuffer(this.joined);
    this.out = Buffer.allocUnsafe(0);
    this.joined = Buffer.alloc(0);
    this.pending = this.joined;
  }

  /**
   * Record bytes [s, e) (a complete record without its line end, with `quoteCount` quotes whose
   * places are in `quotes`, and, when `escapes`, backslashes) as COPY text (RAW_CSV_COPY_OPTIONS):
   * quotes taken off, `""` inside quotes one quote, a backslash doubled, a comma, LF or CR inside
   * quotes escaped (`\,`, `\n`, `\r`); an empty quoted value stays empty (NULL, as the per-row
   * path reads it). A quote must open a value and a closing quote end it, as the per-row parser
   * requires: anything else refuses the file.
   */
  private rewrite(b: Buffer, s: number, e: number, escapes: boolean, quoteCount: number): void {
    // Every quote opens a value and closes it (the scanner ends no record inside quotes).
    if (quoteCount % 2 !== 0)
      throw refuseFastPath(`a quoted value opened on line ${this.recordLine} that never closes`);
    // Every byte of a quoted value may take two.
    this.room(2 * (e - s));
    let quotes: ArrayLike<number> = this.quotes;
    if (quoteCount > MAX_TRACKED_QUOTES) {
      const all: number[] = [];
      for (let q = b.indexOf(QUOTE, s); q >= 0 && q < e; q = b.indexOf(QUOTE, q + 1)) all.push(q - s);
      quotes = all;
    }
    let i = s;
    let k = 0;
    while (k < quoteCount) {
      const open = s + quotes[k]!;
      this.plain(b, i, open, escapes);
      if (open !== s && b[open - 1] !== COMMA) throw refuseFastPath('a quote inside an unquoted value');
      let close = s + quotes[k + 1]!;
      k += 2;
      this.quotedValue(b, open + 1, close);
      // A quote right after the closing one: `""`, one quote inside the value.
      while (k < quoteCount && s + quotes[k]! === close + 1) {
        this.out[this.o++] = QUOTE;
        const next = s + quotes[k + 1]!;
        k += 2;
        this.quotedValue(b, close + 2, next);
        close = next;
      }
      i = close + 1;
      if (i < e && b[i] !== COMMA) throw refuseFastPath('a value that goes on after its closing quote');
    }
    this.plain(b, i, e, escapes);
  }

  /** Bytes [s, e) outside quotes (commas are the delimiter here too), backslashes doubled. */
  private plain(b: Buffer, s: number, e: number, escapes: boolean): void {
    if (!escapes) {
      this.copyRun(b, s, e);
      return;
    }
    const out = this.out;
    let o = this.o;
    for (let i = s; i < e; i++) {
      const c = b[i]!;
      if (c === BACKSLASH) out[o++] = BACKSLASH;
      out[o++] = c;
    }
    this.o = o;
  }

  /** The bytes [s, e) between two quotes, a comma, backslash, LF or CR escaped. */
  private quotedValue(b: Buffer, s: number, e: number): void {
    const out = this.out;
    let o = this.o;
    for (let i = s; i < e; i++) {
      const c = b[i]!;
      if (c === COMMA || c === BACKSLASH) {
        out[o++] = BACKSLASH;
        out[o++] = c;
      } else if (c === LF) {
        out[o++] = BACKSLASH;
        out[o++] = LETTER_N;
      } else if (c === CR) {
        out[o++] = BACKSLASH;
        out[o++] = LETTER_R;
      } else {
        out[o++] = c;
      }
    }
    this.o = o;
  }

  /** `,<line of the current record>` and the appended text (emit keeps the room free). */
  private tag(): void {
    this.out[this.o++] = COMMA;
    this.o = writeDecimal(this.out, this.o, this.recordLine);
    if (this.append.length > 0) this.o += this.append.copy(this.out, this.o);
  }

  private setAsideRecord(text: string): void {
    this.bad = false;
    this.setAside.push({ line: this.recordLine, text });
    this.setAsideChars += text.length;
    if (this.setAside.length > MAX_SET_ASIDE_RECORDS || this.setAsideChars > MAX_SET_ASIDE_CHARS) {
      throw refuseFastPath(`more than ${MAX_SET_ASIDE_RECORDS} records need the per-row path`);
    }
  }

  /**
   * Check the value written in bytes [s, e) (quotes included): a value not canonical for its
   * column, or an empty key, sets the record aside.
   */
  private checkValue(field: number, b: Buffer, s: number, e: number): void {
    if (this.bad) return;
    if (e > s && b[s] === QUOTE) {
      // A quoted value: canonical only without quotes inside.
      if (e - s < 2 || b[e - 1] !== QUOTE || b.indexOf(QUOTE, s + 1) !== e - 1) {
        this.bad = true;
        return;
      }
      s++;
      e--;
    }
    if (e === s) {
      if (this.required[field] === true) this.bad = true;
      return;
    }
    const check = this.checks[field];
    if (check !== undefined) {
      if (!check(b, s, e)) this.bad = true;
      return;
    }
    const pattern = this.patterns[field];
    if (pattern !== undefined && !pattern.test(b.toString('latin1', s, e))) this.bad = true;
  }
}
