/**
 * The fast load path of XML report files on PostgreSQL: one hand-written pass over the file's
 * UTF-8 bytes turns each record element straight into a COPY text line
 * (src/load/window/raw-text-copy.ts) that goes into the typed staging table, PostgreSQL casting
 * while it copies. A value's bytes are copied into its line (text escaped as COPY needs); a
 * non-text value is only checked to be in its canonical form, on its bytes; only a value with a
 * reference or in another form is decoded into a string. No per-record parser call, no typed
 * values, no per-value objects. A UTF-16 file is encoded to UTF-8 on the way in.
 *
 * It yields exactly what the per-row path (openXmlReport → toLoadSource → loadWindow) yields, or
 * refuses (`LOAD_FAST_PATH_REFUSED`) and the caller loads the file through the per-row path. It
 * reads only the plain layout CyberSource writes (xml-byte-scanner.ts lists it), and refuses
 * everything else rather than risk a difference.
 * A column first seen after the first records refuses (NEW_COLUMN_REASON); the caller then opens
 * the file again with `discoverColumns`.
 */
import { findReportDefinition } from '../../catalog/index.js';
import type { XmlRepeatedGroupName } from '../../catalog/child-tables.js';
import { refuseFastPath } from '../../copy-text/fast-path-refusal.js';
import type { RawCopyTextBody } from '../../copy-text/bodies.js';
import type { ColumnSpec, ReportMetadata } from '../records.js';
import { createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { ReportDecoder, sniffEncoding } from '../text-encoding.js';
import {
  CHUNK_BYTES,
  FastXmlScanner,
  LineSink,
  Refusal,
  SPOOL_CHUNK_BYTES,
  SPOOL_READ_BYTES,
} from './xml-byte-scanner.js';
import type { ChildColumn, Chunks, FastXmlChildTable } from './xml-byte-scanner.js';

export { NEW_COLUMN_REASON } from './xml-byte-scanner.js';
export type { ChildColumn, FastXmlChildTable } from './xml-byte-scanner.js';

export interface RawXmlReport {
  metadata: ReportMetadata;
  columns: ColumnSpec[];
  unknownColumns: ColumnSpec[];
  body: RawCopyTextBody;
  /**
   * The items of each repeated group with a child table (`childTables`), as COPY text lines of
   * that table's columns, then the record number: written to their spool while `body` is read,
   * complete once it is exhausted (and only then are `columns` and `body` of a child final).
   */
  children: RawXmlChild[];
}

export interface RawXmlChild {
  group: XmlRepeatedGroupName;
  /** The child table's columns the items had (as the per-row path finds them), in declared order. */
  columns(): ChildColumn[];
  /** The items' lines (of `columns()`, then the record number), read from the spool. */
  body(): RawCopyTextBody;
}

export interface OpenRawXmlOptions {
  fileName: string;
  report?: string;
  recordElement?: string;
  /** Read the whole file once first to collect every column (when a column appears late). */
  discoverColumns?: boolean;
  /** The repeated groups whose items go to child tables (others refuse, as the per-row path keeps them). */
  childTables?: readonly FastXmlChildTable[];
}

/**
 * Open an XML report for the fast path. `open` gives the file's chunks (called once, or twice with
 * `discoverColumns`). Reads up to the first record to learn the metadata and columns; throws a
 * refusal when the head is unusual (the caller falls back).
 */
export async function openRawXmlReport(
  open: () => Chunks,
  options: OpenRawXmlOptions,
): Promise<RawXmlReport> {
  const given = options.report === undefined ? undefined : findReportDefinition(options.report);
  const recordElement = options.recordElement ?? given?.xmlRecordElement ?? 'Request';
  const scanner = new FastXmlScanner(options.fileName, recordElement, given?.name, options.childTables);
  const guard = <T>(fn: () => T): T => {
    try {
      return fn();
    } catch (error) {
      if (error instanceof Refusal)
        throw refuseFastPath(`the XML file is outside the plain layout (${error.message})`);
      throw error;
    }
  };

  if (options.discoverColumns === true) {
    for await (const t of utf8Chunks(open(), options.fileName)) {
      guard(() => {
        scanner.push(t);
        scanner.scan(undefined);
      });
    }
    guard(() => {
      scanner.end();
      scanner.scan(undefined);
    });
    scanner.reset();
  }

  // The child tables' lines go to their spools as the records are read.
  const spools = (options.childTables ?? []).map((child) => {
    const path = child.spoolPath();
    const out = createWriteStream(path, { encoding: 'utf8' });
    const spool = { child, path, out, complete: false, error: undefined as Error | undefined };
    // A failed write, or one still in flight when a read that broke off destroys the spool, is
    // the spool's error (thrown where its lines are written or completed), never an unhandled event.
    out.on('error', (error) => (spool.error ??= error));
    return spool;
  });
  /** Writes the lines of the items to their spools: all of them, or the groups' that have a chunk. */
  const writeItems = async (all: boolean): Promise<void> => {
    const lines = scanner.takeItemLines(all ? 0 : SPOOL_CHUNK_BYTES);
    for (const spool of spools) {
      const some = lines.get(spool.child.group);
      if (some === undefined || some.length === 0) continue;
      if (spool.error !== undefined) throw spool.error;
      if (!spool.out.write(some)) await once(spool.out, 'drain');
    }
  };
  const closeSpools = async (complete: boolean): Promise<void> => {
    for (const spool of spools) {
      if (complete && spool.error !== undefined) throw spool.error;
      if (spool.out.closed) continue;
      const closed = new Promise<void>((resolve) => spool.out.once('close', () => resolve()));
      if (complete) spool.out.end();
      else spool.out.destroy();
      await closed;
      if (complete && spool.error !== undefined) throw spool.error;
      spool.complete = complete;
    }
  };

  // Read until the first record is complete (metadata, and the columns of that record). When that
  // refuses or fails, the spools are closed here: `chunks()`, which would close them, never runs.
  const iterator = utf8Chunks(open(), options.fileName)[Symbol.asyncIterator]();
  const out = new LineSink();
  let done = false;
  /** Read the file's next chunk into the scanner and scan it (the file's end once there is none). */
  const scanNext = async (): Promise<void> => {
    const next = await iterator.next();
    if (next.done === true) {
      done = true;
      guard(() => {
        scanner.end();
        scanner.scan(out);
      });
    } else {
      guard(() => {
        scanner.push(next.value);
        scanner.scan(out);
      });
    }
  };
  try {
    while (scanner.recordCount === 0 && !done) await scanNext();
    if (scanner.metadata === undefined) throw refuseFastPath('the XML file has no root element');
  } catch (error) {
    if (!done) await iterator.return?.(undefined);
    await closeSpools(false);
    throw error;
  }
  scanner.freeze();
  // The lines of the records read so far were cut to the columns known at each record: redo them.
  // (Only the first chunk's records; all of them have every column now, so re-scan the chunk.)
  const firstText = out.takeText();

  let records = 0;
  async function* chunks(): AsyncGenerator<Buffer> {
    try {
      // Records of the first chunk may have fewer fields than the final column count: pad them.
      const width = scanner.set.columns.length;
      const head: string[] = [];
      // Each line ends with a line feed (one inside a value is written `\n`).
      for (const line of firstText === '' ? [] : firstText.slice(0, -1).split('\n')) {
        let fields = 1;
        for (let i = line.indexOf('\t'); i >= 0; i = line.indexOf('\t', i + 1)) fields++;
        const missing = width + 1 - fields;
        if (missing <= 0) head.push(`${line}\n`);
        else {
          const cut = line.lastIndexOf('\t');
          head.push(`${line.slice(0, cut)}${'\t\\N'.repeat(missing)}${line.slice(cut)}\n`);
        }
      }
      records += head.length;
      await writeItems(false);
      if (head.length > 0) yield Buffer.from(head.join(''), 'utf8');
      while (!done) {
        await scanNext();
        await writeItems(false);
        if (out.length >= CHUNK_BYTES || (done && out.lines > 0)) {
          records += out.lines;
          yield out.take();
        }
      }
      if (out.lines > 0) {
        records += out.lines;
        yield out.take();
      }
      await writeItems(true);
      await closeSpools(true);
      // Every line is written out (the last chunk's reader asked for more, the spools are closed).
      out.release();
      scanner.release();
    } finally {
      if (!done) await iterator.return?.(undefined);
      await closeSpools(false);
    }
  }

  const children = spools.map((spool): RawXmlChild => {
    const group = [...scanner.itemGroups.values()].find((g) => g.spec.name === spool.child.group)!;
    const complete = (): void => {
      if (!spool.complete) throw refuseFastPath('the child table lines were read before the records were');
    };
    /** Declared columns the items had: the request id and the item's number always. */
    const kept = (): number[] =>
      group.columns.flatMap((_, i) =>
        group.seen[i] === true || i === group.keyIndex || i === group.numberIndex ? [i] : [],
      );
    return {
      group: spool.child.group,
      columns: () => {
        complete();
        return kept().map((i) => spool.child.columns[i]!);
      },
      body: () => {
        complete();
        const keep = kept();
        return {
          chunks: readSpool(spool.path, keep.length === group.columns.length ? undefined : keep),
          records: () => group.count,
        };
      },
    };
  });

  return {
    metadata: scanner.metadata,
    columns: scanner.set.columns,
    unknownColumns: scanner.set.unknownColumns,
    body: { chunks: chunks(), records: () => records },
    children,
  };
}

/** A spool's COPY text lines, whole lines per chunk; with `keep`, only those fields (and the last). */
async function* readSpool(path: string, keep: readonly number[] | undefined): AsyncGenerator<Buffer> {
  const kept: boolean[] = [];
  for (const i of keep ?? []) kept[i] = true;
  let rest: Buffer = Buffer.alloc(0);
  const out = new LineSink();
  for await (const chunk of createReadStream(path, { highWaterMark: SPOOL_READ_BYTES })) {
    const bytes = rest.length === 0 ? (chunk as Buffer) : Buffer.concat([rest, chunk as Buffer]);
    const end = bytes.lastIndexOf(10) + 1;
    rest = bytes.subarray(end);
    if (end === 0) continue;
    if (keep === undefined) {
      yield bytes.subarray(0, end);
      continue;
    }
    // The kept fields of each line, then its last (the record number); a field never holds a tab
    // or line feed (COPY text escapes them).
    out.reserve(2 * end);
    const to = out.buf;
    let o = 0;
    let field = 0;
    let keeping = kept[0] === true;
    let wrote = false;
    let fieldStart = 0;
    for (let k = 0; k < end; k++) {
      const c = bytes[k]!;
      if (c === 9) {
        if (keeping) {
          to[o++] = 9;
          wrote = true;
        }
        keeping = kept[++field] === true;
        fieldStart = k + 1;
      } else if (c === 10) {
        if (!wrote) to[o++] = 9;
        for (let j = fieldStart; j < k; j++) to[o++] = bytes[j]!;
        to[o++] = 10;
        field = 0;
        keeping = kept[0] === true;
        wrote = false;
        fieldStart = k + 1;
      } else if (keeping) to[o++] = c;
    }
    out.length = o;
    yield out.take();
  }
  if (rest.length > 0) throw refuseFastPath('a child table spool ends inside a line');
  out.release();
}

/**
 * The file's chunks as UTF-8 bytes: a UTF-8 file's bytes as they are (a byte order mark is
 * skipped by the scanner); a UTF-16 file, told by its first bytes (text-encoding.ts), and chunks
 * given as text are encoded, a surrogate pair split across chunks kept whole.
 */
async function* utf8Chunks(chunks: Chunks, fileName: string): AsyncGenerator<Buffer> {
  let head: Buffer | undefined = Buffer.alloc(0);
  let decoder: ReportDecoder | undefined;
  let carry = '';
  const encode = (text: string, last: boolean): Buffer | undefined => {
    let t = carry + text;
    carry = '';
    const c = t.charCodeAt(t.length - 1);
    if (!last && c >= 0xd800 && c <= 0xdbff) {
      carry = t.slice(-1);
      t = t.slice(0, -1);
    }
    return t === '' ? undefined : Buffer.from(t, 'utf8');
  };
  for await (const chunk of chunks) {
    if (typeof chunk === 'string') {
      const bytes = encode(chunk, false);
      if (bytes !== undefined) yield bytes;
      continue;
    }
    let bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (head !== undefined) {
      // The encoding is told by the first 4 bytes.
      head = Buffer.concat([head, bytes]);
      if (head.length < 4) continue;
      if (sniffEncoding(head, fileName) !== 'utf-8') decoder = new ReportDecoder(fileName);
      bytes = head;
      head = undefined;
    }
    if (decoder === undefined) yield bytes;
    else {
      const encoded = encode(decoder.decode(bytes, { stream: true }), false);
      if (encoded !== undefined) yield encoded;
    }
  }
  if (head !== undefined && head.length > 0) {
    if (sniffEncoding(head, fileName) === 'utf-8') yield head;
    else decoder = new ReportDecoder(fileName);
    if (decoder !== undefined) {
      const encoded = encode(decoder.decode(head, { stream: true }), false);
      if (encoded !== undefined) yield encoded;
    }
  }
  if (decoder !== undefined || carry !== '') {
    const encoded = encode(decoder?.decode() ?? '', true);
    if (encoded !== undefined) yield encoded;
  }
}
