import { createHash } from 'node:crypto';
import { COPY_NULL, encodeCopyValue } from '../copy-text/cell-encoders.js';
import type {
  CopyTextSegment,
  LoadBatch,
  RecordLinesQuery,
  LoadRecord,
  LoadReject,
  SourceColumn,
  SpooledSource,
  TableDecl,
} from '../load/table-spec.js';
import type { LoadValue } from '../copy-text/bodies.js';
import { KEY_LINEAGE_COLUMNS } from '../load/ddl.js';
import type { LiveFeed, LiveLines } from '../load/window/load-window.js';
import { LineMap } from '../load/line-map.js';
import { serialiseCsvRow } from '../parse/csv/csv-report.js';
import type { ColumnSpec, TypedRecord } from '../parse/records.js';
import { toSourceColumn } from '../load/report-sources.js';
import { RecordSpool } from './record-source.js';
import type { FileDigester } from '../spool/file-digest.js';
import { ByteSpool } from '../spool/byte-spool.js';
import type { SpoolDir } from '../spool/byte-spool.js';

/**
 * Characters buffered before a write to a segment file. Small enough that the joined string is
 * not a large object, which V8 allocates in the old generation at once, where it stays as garbage
 * until a full collection.
 */
const WRITE_CHARS = 1 << 16;

/**
 * The records of one on-demand section over all pages of a window, spooled (src/spool/byte-spool.ts:
 * in memory for a small window, in files for a large one) already encoded as COPY text lines (`_source_row` last), so that loading them is one COPY of the file's bytes
 * instead of JSON lines that are parsed and encoded again row by row.
 *
 * Records the loader would reject with the trusted encoders (an empty natural key, a NUL character
 * in a text value) and the parser's rejects are kept apart, as ordinary records, for the loader's
 * per-row path, which rejects them with its own codes and messages. When the loader cannot use the
 * pre-encoded lines (a column whose table type differs from the source's), `allBatches` decodes
 * them back into the very values they were encoded from.
 *
 * Columns are the declared fields and then unknown keys in first-seen order over all pages; a page
 * that brings new keys starts a new segment file whose lines have the longer column list.
 */
export class CopyTextSpool {
  private columns: ColumnSpec[] = [];
  private readonly segments: SegmentFile[] = [];
  private readonly slow: RecordSpool;
  private readonly keyColumns: readonly string[];
  private slowCount = 0;

  constructor(
    private readonly dir: SpoolDir,
    private readonly name: string,
    private readonly table: TableDecl,
    private readonly fallback: readonly SourceColumn[],
  ) {
    this.slow = new RecordSpool(dir, `${name}.slow.jsonl`, fallback);
    this.keyColumns = table.naturalKey.filter((k) => !KEY_LINEAGE_COLUMNS.has(k));
  }

  /** The indexes in the spool's column list of a page's columns (extending it with new ones). */
  private mapColumns(pageColumns: readonly ColumnSpec[]): number[] {
    const index = new Map(this.columns.map((c, i) => [c.column, i]));
    let grown = false;
    const map = pageColumns.map((c) => {
      let i = index.get(c.column);
      if (i === undefined) {
        i = this.columns.length;
        this.columns.push(c);
        index.set(c.column, i);
        grown = true;
      }
      return i;
    });
    if (grown || this.segments.length === 0) {
      this.segments.push(
        new SegmentFile(this.dir, `${this.name}.${this.segments.length}.copy`, this.columns.length),
      );
    }
    return map;
  }

  /**
   * The lines written since the previous take, read back from the segment's spool, for a load while
   * paging (LoadWindowOptions.live); undefined once lines are written in another column order
   * than the declared one (a page brought unknown keys: a second segment).
   */
  readonly feed: LiveFeed = {
    take: () => {
      if (this.segments.length === 0) return { lines: 0, chunks: emptyChunks };
      if (this.segments.length > 1 || !this.declaredOrder()) return undefined;
      return this.segments[0]!.takeWritten();
    },
  };

  private declaredOrder(): boolean {
    return (
      this.columns.length === this.fallback.length &&
      this.columns.every(
        (c, i) => c.column === this.fallback[i]!.name && c.pgType === this.fallback[i]!.pgType,
      )
    );
  }

  /**
   * Write one page's records (values aligned with `pageColumns`), record numbers already global.
   * The page's lines are written out at its end, for a load while paging to take them.
   */
  async writePage(
    pageColumns: readonly ColumnSpec[],
    records: readonly TypedRecord[],
    rejects: readonly LoadReject[],
  ): Promise<void> {
    const map = this.mapColumns(pageColumns);
    const width = this.columns.length;
    const identity = map.every((m, i) => m === i) && map.length === width;
    const keyIndexes = this.keyColumns.map((k) => this.columns.findIndex((c) => c.column === k));
    const segment = this.segments[this.segments.length - 1]!;
    const cells = new Array<string>(width + 1);
    for (const r of rejects) this.slow.addReject(r);
    for (const record of records) {
      let values: LoadValue[] = record.values;
      if (!identity) {
        const aligned = new Array<LoadValue>(width).fill(null);
        for (let i = 0; i < map.length; i++) aligned[map[i]!] = values[i] ?? null;
        values = aligned;
      }
      let clean = true;
      for (const k of keyIndexes) {
        if (k < 0 || values[k] === null || values[k] === undefined) {
          clean = false;
          break;
        }
      }
      if (clean) {
        for (let i = 0; i < width; i++) {
          const cell = encodeCopyValue(values[i]);
          if (cell === undefined) {
            clean = false;
            break;
          }
          cells[i] = cell;
        }
      }
      if (!clean) {
        this.slowCount++;
        await this.slow.write(record.recordNumber, values);
        continue;
      }
      cells[width] = String(record.recordNumber);
      // A promise only when the buffered text is written out (every 64 K characters).
      const flushed = segment.write(cells.join('\t') + '\n', record.recordNumber);
      if (flushed) await flushed;
    }
    await segment.flush();
  }

  /**
   * Whether lines of `pageColumns` (a page without unknown keys, read by OnDemandPageScanner) can
   * be written as they are: the spool's columns are still those, or it has none yet.
   */
  acceptsLinesOf(pageColumns: readonly ColumnSpec[]): boolean {
    return (
      this.columns.length === 0 ||
      (this.columns.length === pageColumns.length &&
        this.columns.every((c, i) => c.column === pageColumns[i]!.column))
    );
  }

  /**
   * One page's records as the COPY text lines writePage would write for them (OnDemandPageScanner),
   * numbered `firstRecord`, `firstRecord + 1`, …; only when acceptsLinesOf(pageColumns).
   */
  async writeLines(
    pageColumns: readonly ColumnSpec[],
    text: Buffer,
    lines: number,
    firstRecord: number,
  ): Promise<void> {
    if (!this.acceptsLinesOf(pageColumns)) {
      throw new Error(`${this.name}: lines of other columns than the spool's cannot be written as they are`);
    }
    this.mapColumns(pageColumns);
    await this.segments[this.segments.length - 1]!.writeBytes(text, lines, firstRecord);
  }

  /** Resolves once the lines written so far by writeLines are in the files. */
  async written(): Promise<void> {
    for (const segment of this.segments) await segment.written();
  }

  /** Finish writing; safe to call more than once. */
  async close(): Promise<void> {
    const closed = await Promise.allSettled([...this.segments.map((s) => s.close()), this.slow.close()]);
    const failed = closed.find((c) => c.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /**
   * What the spool holds, for a digest (after close()): its columns, each segment's width
   * and SHA-256 (taken as it was written), then the records kept apart and the rejects. Equal
   * pages give equal spools.
   */
  digestInto(digester: FileDigester): void {
    const segments = this.segments.map((s) => ({ width: s.width, sha256: s.hash.digest('hex') }));
    digester.update(Buffer.from(`${JSON.stringify({ columns: this.columns, segments })}\n`));
    this.slow.digestInto(digester);
  }

  /** The spooled section as a loader source (call after close()). */
  toLoadSource(source: string): SpooledSource {
    const columns = this.columns.length > 0 ? this.columns.map(toSourceColumn) : [...this.fallback];
    const types = columns.map((c) => c.pgType);
    const slow = this.slow;
    const segments = this.segments;
    const perRow = () => slow.toLoadSource(source).batches;
    return {
      kind: 'spooled',
      source,
      columns,
      segments: segments.map((s) => s.toSegment()),
      perRowBatches: perRow(),
      allBatches: mergeBatches(perRow(), segments, types),
      recordsOn: (query) => recordsWanted(mergeBatches(perRow(), segments, types, query.wants), query),
    };
  }
}

/**
 * The records of `batches` a query wants (RecordLinesQuery: by record number), without the parser's
 * rejects (they stay the window's). Read at once: a restore wants a few records, and their numbers
 * before it stages them.
 */
async function recordsWanted(
  batches: AsyncIterable<LoadBatch>,
  query: RecordLinesQuery,
): Promise<{ lines: number[]; batches: AsyncIterable<LoadBatch> }> {
  const records: LoadRecord[] = [];
  for await (const batch of batches) {
    for (const r of batch.records) if (query.wants(r.recordNumber)) records.push(r);
  }
  async function* one(): AsyncGenerator<LoadBatch> {
    yield { records, rejects: [] };
  }
  return { lines: records.map((r) => r.recordNumber), batches: one() };
}

/** One spool of COPY text lines with the same number of data columns, and its line → record map. */
class SegmentFile {
  private readonly spool: ByteSpool;
  private parts: string[] = [];
  private chars = 0;
  private readonly map = new LineMap();
  private closing?: Promise<void>;
  /** Lines buffered in `parts`. */
  private partLines = 0;
  /** Lines in the spool (writes completed), and the bytes and lines a feed has taken. */
  private writtenLines = 0;
  private takenBytes = 0;
  private takenLines = 0;
  /** SHA-256 of the text written, as it is written (CopyTextSpool.digestInto). */
  readonly hash = createHash('sha256');

  constructor(
    dir: SpoolDir,
    name: string,
    readonly width: number,
  ) {
    this.spool = new ByteSpool(dir, name);
  }

  get lines(): number {
    return this.map.lines;
  }

  /** Buffer one line; a promise (to await) when the buffer was written out, else undefined. */
  write(line: string, recordNumber: number): Promise<void> | undefined {
    this.map.add(recordNumber);
    this.partLines++;
    this.parts.push(line);
    this.chars += line.length;
    return this.chars >= WRITE_CHARS ? this.flush() : undefined;
  }

  /**
   * Lines already encoded (record numbers firstRecord, firstRecord + 1, …), written at once; the
   * caller must leave `text` as it is until `written()` says so.
   */
  async writeBytes(text: Buffer, lines: number, firstRecord: number): Promise<void> {
    await this.flush();
    for (let k = 0; k < lines; k++) this.map.add(firstRecord + k);
    await this.send(text, lines);
  }

  /** Resolves once every write issued so far has completed; rejects if one failed. */
  written(): Promise<void> {
    return this.spool.written();
  }

  /** Hash and write `lines` lines; counted as written once the write completes. */
  private async send(data: string | Buffer, lines: number): Promise<void> {
    this.hash.update(data);
    await this.spool.write(data, () => (this.writtenLines += lines));
  }

  async flush(): Promise<void> {
    if (this.parts.length === 0) return;
    const text = this.parts.join('');
    const lines = this.partLines;
    this.parts = [];
    this.chars = 0;
    this.partLines = 0;
    await this.send(text, lines);
  }

  /** The lines in the spool that no feed took yet (see CopyTextSpool.feed). */
  takeWritten(): LiveLines {
    const start = this.takenBytes;
    const end = this.spool.bytes;
    const lines = this.writtenLines - this.takenLines;
    this.takenBytes = end;
    this.takenLines = this.writtenLines;
    if (lines === 0) return { lines: 0, chunks: emptyChunks };
    return { lines, chunks: (into) => this.spool.read(start, end, undefined, into) };
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.flush();
      await this.spool.close();
    })();
    return this.closing;
  }

  /** The lines from the start (after close()); `into`: see CopyTextSegment.chunks. */
  chunks(into?: Buffer): AsyncGenerator<Buffer> {
    return this.spool.read(undefined, undefined, undefined, into);
  }

  toSegment(): CopyTextSegment {
    return {
      columns: this.width,
      lines: this.lines,
      chunks: (into) => this.chunks(into),
      recordAt: (line) => this.map.recordAt(line),
    };
  }
}

async function* emptyChunks(): AsyncGenerator<Uint8Array> {}

/** Bytes read from a segment at a time when its lines are decoded (mergeBatches). */
const READ_BYTES = 256 * 1024;

const LF = Buffer.from('\n');

/** `chunks`, and a line feed after them when the last does not end with one (the last line's end). */
async function* endingWithLf(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  let last = 10;
  for await (const chunk of chunks) {
    if (chunk.length > 0) last = chunk[chunk.length - 1]!;
    yield chunk;
  }
  if (last !== 10) yield LF;
}

/** The number after a line's last tab (its record number; ASCII digits). */
function lastNumber(line: Buffer): number {
  let n = 0;
  for (let i = line.lastIndexOf(9) + 1; i < line.length; i++) n = n * 10 + line[i]! - 48;
  return n;
}

const UNESCAPE = /\\(.)/g;
const UNESCAPES: Record<string, string> = { '\\': '\\', t: '\t', n: '\n', r: '\r' };

/** A COPY text cell back into the value it was encoded from (the column's parser type). */
function decodeCell(cell: string, pgType: string): LoadValue {
  if (cell === COPY_NULL) return null;
  if (pgType === 'integer') return Number(cell);
  if (pgType === 'boolean') return cell === 't';
  return cell.includes('\\') ? cell.replace(UNESCAPE, (_, c: string) => UNESCAPES[c] ?? c) : cell;
}

function loadRecord(recordNumber: number, values: LoadValue[]): LoadRecord {
  return {
    recordNumber,
    values,
    get raw() {
      return serialiseCsvRow(values.map((v) => (v === null ? '' : String(v))));
    },
  };
}

/**
 * Every record of the section for the loader's per-row path: the kept-apart records and the
 * decoded lines, in record-number order, with the parser's rejects in the first batch. With
 * `wants`, only the lines of the record numbers it wants are decoded (the others are skipped).
 */
async function* mergeBatches(
  perRow: AsyncIterable<LoadBatch>,
  segments: readonly SegmentFile[],
  types: readonly string[],
  wants?: (recordNumber: number) => boolean,
  batchSize = 2000,
): AsyncGenerator<LoadBatch> {
  const slowIterator = perRow[Symbol.asyncIterator]();
  let rejects: LoadReject[] = [];
  let slowBuffer: LoadRecord[] = [];
  let slowPos = 0;
  let slowDone = false;
  let first = true;
  const nextSlow = async (): Promise<LoadRecord | undefined> => {
    while (slowPos >= slowBuffer.length) {
      if (slowDone) return undefined;
      const next = await slowIterator.next();
      if (next.done) {
        slowDone = true;
        return undefined;
      }
      if (first) {
        rejects = next.value.rejects;
        first = false;
      }
      slowBuffer = next.value.records;
      slowPos = 0;
    }
    return slowBuffer[slowPos];
  };
  await nextSlow();
  let batch: LoadRecord[] = [];
  let yielded = false;
  const take = (): LoadBatch => {
    const out = { records: batch, rejects: yielded ? [] : rejects };
    yielded = true;
    batch = [];
    return out;
  };
  // The lines are read as bytes into one buffer, and only the lines wanted are decoded.
  const into = Buffer.allocUnsafe(READ_BYTES);
  for (const segment of segments) {
    let carry: Buffer | undefined;
    for await (const chunk of endingWithLf(segment.chunks(into))) {
      const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      let start = 0;
      for (let lf = bytes.indexOf(10); lf >= 0; lf = bytes.indexOf(10, start)) {
        const line = carry ? Buffer.concat([carry, bytes.subarray(start, lf)]) : bytes.subarray(start, lf);
        carry = undefined;
        start = lf + 1;
        if (line.length === 0) continue;
        const recordNumber = lastNumber(line);
        for (
          let s = await nextSlow();
          s !== undefined && s.recordNumber < recordNumber;
          s = await nextSlow()
        ) {
          batch.push(s);
          slowPos++;
          if (batch.length >= batchSize) yield take();
        }
        if (wants && !wants(recordNumber)) continue;
        const cells = line.toString('utf8').split('\t');
        const values = new Array<LoadValue>(cells.length - 1);
        for (let i = 0; i < values.length; i++) values[i] = decodeCell(cells[i]!, types[i] ?? 'text');
        batch.push(loadRecord(recordNumber, values));
        if (batch.length >= batchSize) yield take();
      }
      // The rest of the chunk starts a line the next chunk ends (the buffer is read into again).
      if (start < bytes.length) {
        const rest = bytes.subarray(start);
        carry = carry ? Buffer.concat([carry, rest]) : Buffer.from(rest);
      }
    }
  }
  for (let s = await nextSlow(); s !== undefined; s = await nextSlow()) {
    batch.push(s);
    slowPos++;
    if (batch.length >= batchSize) yield take();
  }
  if (batch.length > 0 || !yielded) yield take();
}
