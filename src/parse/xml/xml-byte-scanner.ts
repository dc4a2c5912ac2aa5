/**
 * The byte scanner of the XML fast path (raw-xml-report.ts opens a file with it): one pass over the
 * file's UTF-8 bytes turns each record element straight into a COPY text line. A value's bytes are
 * copied into its line (text escaped as COPY needs); a non-text value is only checked to be in its
 * canonical form, on its bytes; only a value with a reference or in another form is decoded into a
 * string. No per-record parser call, no typed values, no per-value objects.
 *
 * It reads only the plain layout CyberSource writes, and refuses everything else rather than risk
 * a difference from the per-row path:
 *  - prolog: an optional BOM, whitespace, one `<?xml …?>` declaration and a DOCTYPE that only
 *    names its DTD (Transaction Detail files; skipped, never read: one with an internal subset
 *    refuses); no comment or processing instruction anywhere;
 *  - elements enclosing the records (`<Requests>`, `<Batches><Batch BatchID=…>`): attributes read
 *    exactly as the per-row scanner reads them (inherited as `Element.Attribute`), without
 *    namespace declarations or prefixed attributes (all elements are of the root's namespace);
 *  - a record (`<Request a="…">`, not self-closing) holds leaves (`<Name>text</Name>`, `<Name/>`),
 *    groups of leaves (`<Group><Field>…</Field></Group>`) and groups of such groups
 *    (`<PaymentMethod><Card><AccountSuffix>`), without attributes on them but the label of a
 *    merchant-defined field (`<field1 name="mdd1">`, left out as on the per-row path), without
 *    any name twice in one parent (repeated elements become a JSON column on the per-row path),
 *    without namespace prefixes, CDATA, comments, or text beside child elements;
 *  - the items of a repeated group with a child table (`childTables`: `<ApplicationReplies>
 *    <ApplicationReply Name="ics_auth"><RCode>…`, `<LineItems><LineItem Number="0">…`): each item
 *    a COPY text line of the child table's declared columns (the record's RequestID attribute,
 *    the item's number, its attributes and leaves, every one a column the table declares), spooled
 *    while the records are read; an empty container (`<LineItems/>`, only whitespace inside) has
 *    no items and is no column; a repeated group without a child table refuses;
 *  - values: no carriage return, tab or line break in attributes, no carriage return in text, no
 *    leading or trailing whitespace, only the five XML entities and character references (no NUL),
 *    valid UTF-8;
 *  - well-formed: end tags match, nothing after the root, the file ends after it;
 *  - every non-text value in the form that the catalog's coercer and PostgreSQL read identically
 *    (`canonicalCopyValue`): anything else may be a reject, which only the per-row path words.
 * Column names are resolved through the same catalog rules, in the same order, as on the per-row
 * path (record attributes, children in document order, then inherited attributes). The columns
 * must be known before COPY starts: they are taken from the records before the first one is
 * emitted, and a column first seen later refuses with {@link NEW_COLUMN_REASON}; the caller then
 * opens the file again with `discoverColumns` (one extra pass that only collects columns).
 */
import { PG_TYPES, findField, guessReportDefinition, resolveHeader } from '../../catalog/index.js';
import type { PgType } from '../../catalog/index.js';
import {
  XML_LABEL_ATTRIBUTES,
  XML_RECORD_ATTRIBUTE_FIELDS,
  XML_REPEATED_GROUPS,
  repeatedGroupOf,
} from '../../catalog/child-tables.js';
import type { XmlRepeatedGroup, XmlRepeatedGroupName } from '../../catalog/child-tables.js';
import { canonicalCopyValue } from '../../copy-text/canonical.js';
import { CANONICAL_BYTES, writeDecimal } from '../../copy-text/canonical-bytes.js';
import { ColumnSet } from '../records.js';
import type { ReportMetadata } from '../records.js';
import {
  duplicateAttribute,
  isXmlChar,
  localName,
  parseAttributes,
  referenceProblem,
} from './xml-scanner.js';
import { isUtf8 } from 'node:buffer';
import { releaseBuffer } from '../../spool/release-buffer.js';
import { xmlReportMetadata } from './xml-report.js';
import { resolveXmlColumn } from './xml-record-flattener.js';

export const NEW_COLUMN_REASON = 'a record has a column the records before it did not have';

/** The record key the items of a repeated group carry. */
const REQUEST_ID = 'Request.RequestID';

/** A child table's declared columns and where the fast path spools its lines. */
export interface FastXmlChildTable {
  group: XmlRepeatedGroupName;
  columns: readonly ChildColumn[];
  /** A new file for each read of the report (a read may be abandoned half-way). */
  spoolPath: () => string;
}

export interface ChildColumn {
  name: string;
  pgType: string;
  description?: string;
}

export type Chunks = AsyncIterable<Uint8Array | string>;

/** Raised inside the scanner; turned into a fast-path refusal. */
export class Refusal extends Error {}

const refuse = (reason: string): never => {
  throw new Refusal(reason);
};

/** One COPY text chunk is cut after this many bytes. */
export const CHUNK_BYTES = 64 * 1024;
/** The items' lines go to their spool in writes of this many bytes (a write each is a cost). */
export const SPOOL_CHUNK_BYTES = 256 * 1024;
/** A spool is read back in chunks of this many bytes (larger ones, in flight to COPY, cost memory). */
export const SPOOL_READ_BYTES = 64 * 1024;
/** A record (or a token outside records) longer than this refuses (the per-row path judges it). */
const MAX_PENDING_BYTES = 8 * 1024 * 1024;

/**
 * How a value of a row is held (in `start`, beside `end` and `text`): unset, a string (`text`: an
 * inherited attribute, a decoded reference, an item's number), or else the byte range
 * [start, end) of the record's text as written (entities not yet decoded, nothing escaped).
 */
const UNSET = -2;
const STRING = -1;
/** A value given as its COPY text field (`text`). */
const FIELD = -3;

/** The values of rows: one row of a record, or the items of a repeated group, `width` slots each. */
class Rows {
  start: Int32Array;
  end: Int32Array;
  text: (string | undefined)[] = [];

  constructor(
    readonly width: number,
    rows = 1,
  ) {
    this.start = new Int32Array(Math.max(width * rows, 1)).fill(UNSET);
    this.end = new Int32Array(this.start.length);
  }

  /** Room for `rows` rows (their slots unset). */
  ensure(rows: number): void {
    const need = rows * this.width;
    if (need <= this.start.length) return;
    const start = new Int32Array(Math.max(need, this.start.length * 2)).fill(UNSET);
    start.set(this.start);
    const end = new Int32Array(start.length);
    end.set(this.end);
    this.start = start;
    this.end = end;
  }

  /** Unset the first `rows` rows. */
  clear(rows: number): void {
    this.start.fill(UNSET, 0, rows * this.width);
  }

  /** A grown row (a column was added): `width` slots, the values kept. */
  widened(width: number): Rows {
    const rows = new Rows(width);
    rows.start.set(this.start.subarray(0, Math.min(this.width, width)));
    rows.end.set(this.end.subarray(0, Math.min(this.width, width)));
    rows.text = this.text;
    return rows;
  }

  setString(i: number, value: string): void {
    this.start[i] = STRING;
    this.text[i] = value;
  }

  /** A value already written as its COPY text field. */
  setField(i: number, field: string): void {
    this.start[i] = FIELD;
    this.text[i] = field;
  }

  setRange(i: number, s: number, e: number): void {
    this.start[i] = s;
    this.end[i] = e;
  }
}

/** COPY text lines as UTF-8 bytes, appended to a growing buffer. */
export class LineSink {
  /** Made at the first write (a sink may never be written). */
  buf = Buffer.alloc(0);
  length = 0;
  /** Lines written since the last take. */
  lines = 0;

  /** Room for `n` more bytes. */
  reserve(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + n, 256 * 1024));
    this.buf.copy(next, 0, 0, this.length);
    // Its lines are copied, and a view taken of it before (take) is done with: writing again
    // into the sink means that its reader asked for more.
    releaseBuffer(this.buf);
    this.buf = next;
  }

  string(s: string): void {
    this.reserve(s.length * 3);
    this.length += this.buf.write(s, this.length, 'utf8');
  }

  /** The lines so far as text; the sink is emptied. */
  takeText(): string {
    const text = this.buf.toString('utf8', 0, this.length);
    this.length = 0;
    this.lines = 0;
    return text;
  }

  /**
   * The lines so far, a view of the sink's buffer: valid until the sink is written again (its
   * reader must be done with it before it asks for more); the sink is emptied.
   */
  take(): Buffer {
    const bytes = this.buf.subarray(0, this.length);
    this.length = 0;
    this.lines = 0;
    return bytes;
  }

  /** Give the buffer back (releaseBuffer) once the last view taken is done with. */
  release(): void {
    releaseBuffer(this.buf);
    this.buf = Buffer.alloc(0);
    this.length = 0;
    this.lines = 0;
  }

  /** The lines so far as a buffer of their own; the sink is emptied. */
  takeBytes(): Buffer {
    const bytes = Buffer.from(this.buf.subarray(0, this.length));
    this.length = 0;
    this.lines = 0;
    return bytes;
  }
}

interface LeafSlot {
  name: string;
  index: number;
  /** The leaf that followed this one last time (records repeat one layout: a guess, checked). */
  next: LeafSlot | undefined;
  /** Record number that last filled this path (a path twice in one record = repeated element). */
  stamp: number;
}

interface RecordName {
  name: string;
  /** The child that followed this one last time, and the group's first leaf (guesses, checked). */
  next: RecordName | undefined;
  firstLeaf: LeafSlot | undefined;
  /** Column of `/<name>` (a leaf or attribute of the record). */
  leaf: LeafSlot | undefined;
  /** Leaves of the group `<name>`. */
  group: Map<string, LeafSlot> | undefined;
  /** Leaves of the groups one level down (`<sub>/<leaf>`). */
  subgroups: Map<string, LeafSlot> | undefined;
  /** Record number that last saw this child element. */
  stamp: number;
  /** Record number that last saw this attribute. */
  attrStamp: number;
  /** The attribute that followed this one last time (a guess, checked). */
  nextAttribute: RecordName | undefined;
  /** As a container: its repeated group with a child table, the label its leaves may have, the item of its repeated group. */
  items: ItemGroup | undefined;
  label: string | undefined;
  repeatedItem: string | undefined;
  /** The first leaf of each group one level down last time (`<sub>` → its leaf; a guess, checked). */
  subgroupFirst: Map<string, LeafSlot> | undefined;
}

/** The state of one repeated group's child table while a report is read. */
interface ItemGroup {
  spec: XmlRepeatedGroup;
  columns: readonly { name: string; pgType: PgType }[];
  /** Column of an item's leaf or attribute name (-1: not a column of the table: refuse). */
  byName: Map<string, number>;
  keyIndex: number;
  numberIndex: number;
  /** Columns some item had (the per-row path's columns are the ones it meets). */
  seen: boolean[];
  /** Values of the items of the record being read (`pending` of them). */
  items: Rows;
  pending: number;
  /** Lines not yet written to the spool. */
  lines: LineSink;
  count: number;
  /** An item's leaves and attributes in the order the last item had them (guesses, checked). */
  order: { name: string; index: number; attribute: boolean }[];
}

interface Container {
  name: string;
  inherited: readonly (readonly [string, string])[];
  /** Columns of `inherited`, resolved at the first record inside (so in the per-row path's order). */
  resolved: { index: number; value: string; field: string | undefined }[] | undefined;
}

const isSpace = (c: number | undefined): boolean => c === 32 || c === 10 || c === 13 || c === 9;
/** A name character the fast path accepts (letters, digits, `_`, `-`, `.`; no `:`). */
const isNameChar = (c: number | undefined): boolean =>
  c !== undefined &&
  ((c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 45 || c === 46);
const isNameStart = (c: number | undefined): boolean =>
  c !== undefined && ((c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95);

/**
 * Whether the ASCII text `name` is at `at` in `b`, compared byte by byte (a builtin call per
 * element name is a noticeable share of a scan).
 */
function matchesAt(b: Buffer, name: string, at: number): boolean {
  const n = name.length;
  if (at + n > b.length) return false;
  for (let k = 0; k < n; k++) if (b[at + k] !== name.charCodeAt(k)) return false;
  return true;
}

/** The index after the end tag `</name>` whose `<` is at `at` (known to be followed by `/`); refuses any other end tag. */
function afterEndTag(b: Buffer, name: string, at: number): number {
  if (!matchesAt(b, name, at + 2) || b[at + 2 + name.length] !== 62) refuse('an end tag that does not match');
  return at + 3 + name.length;
}

/** Whether the whole name `name` starts at `at` (followed by `>` or `/`, the only ends accepted). */
function isNameAt(b: Buffer, name: string, at: number): boolean {
  if (!matchesAt(b, name, at)) return false;
  const c = b[at + name.length];
  return c === 62 || c === 47;
}

/** The ASCII text of bytes [s, e) (names, which nameEnd() keeps to ASCII). */
const ascii = (b: Buffer, s: number, e: number): string => b.toString('latin1', s, e);

/** The text of bytes [s, e); a refusal when they are not UTF-8 (the per-row path judges them). */
function utf8Text(b: Buffer, s: number, e: number): string {
  const bytes = b.subarray(s, e);
  if (!isUtf8(bytes)) refuse('bytes that are not UTF-8');
  return bytes.toString('utf8');
}

const ENTITY = /&(?:#([0-9]{1,7})|#x([0-9a-fA-F]{1,6})|(amp|lt|gt|quot|apos));/y;
const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** Decode a value holding `&`: only the five XML entities and character references (no NUL). */
function decodeEntities(text: string): string {
  let out = '';
  let from = 0;
  for (let amp = text.indexOf('&'); amp >= 0; amp = text.indexOf('&', from)) {
    out += text.slice(from, amp);
    ENTITY.lastIndex = amp;
    const m = ENTITY.exec(text);
    if (m === null) return refuse('an entity other than the five XML ones');
    if (m[3] !== undefined) out += NAMED[m[3]]!;
    else {
      const code = m[1] !== undefined ? Number(m[1]) : parseInt(m[2]!, 16);
      // One XML does not allow is the per-row path's reject.
      if (!isXmlChar(code) || code === 13 || code === 9) return refuse('an unusual character reference');
      out += String.fromCodePoint(code);
    }
    from = ENTITY.lastIndex;
  }
  return out + text.slice(from);
}

/**
 * The value of the bytes [s, e) of a leaf or attribute as the per-row path reads it (references
 * decoded), or a refusal when it might read it otherwise (a carriage return, not UTF-8).
 */
function rawValue(b: Buffer, s: number, e: number): string {
  const raw = utf8Text(b, s, e);
  if (raw.includes('\r')) refuse('a carriage return in a value');
  return raw.includes('&') ? decodeEntities(raw) : raw;
}

/** The names a record's own attribute or leaf `name` may have in the catalog, in order (as on the per-row path). */
function recordCandidates(recordName: string, name: string): string[] {
  const alias = XML_RECORD_ATTRIBUTE_FIELDS[name];
  return alias === undefined ? [`${recordName}.${name}`] : [alias, `${recordName}.${name}`];
}

const COPY_ESCAPES = /[\\\n\r\t]/g;
const COPY_ESCAPE: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** A text value as a COPY text field. */
function copyField(value: string): string {
  // A loop over the codes, not a regex test: values are short, and a call per value costs more.
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 92 || c === 10 || c === 13 || c === 9)
      return value.replace(COPY_ESCAPES, (x) => COPY_ESCAPE[x]!);
  }
  return value;
}

/** A value of a column of type `type` as its COPY text field (empty is NULL), or a refusal `reason`. */
function copyText(type: PgType, value: string, reason: string): string {
  if (value === '') return '\\N';
  return type === 'text' ? copyField(value) : (canonicalCopyValue(type, value) ?? refuse(reason));
}

/** A non-empty value of a column of type `type` as its COPY text field, or a refusal `reason`. */
function writeString(out: LineSink, type: PgType, value: string, reason: string): void {
  out.string(copyText(type, value, reason));
}

/**
 * The COPY text field of the value the bytes [s, e) of `b` hold as written: text copied with the
 * backslash, tab and line feed escaped, a non-text value copied when its bytes are in canonical
 * form; anything else (a reference, a carriage return, another form) is decoded and written as
 * the string path writes it.
 */
function writeRange(out: LineSink, type: PgType, b: Buffer, s: number, e: number, reason: string): void {
  if (type === 'text') {
    out.reserve(2 * (e - s));
    const o0 = out.length;
    const to = out.buf;
    let o = o0;
    let high = false;
    for (let k = s; k < e; k++) {
      const c = b[k]!;
      if (c >= 0x80) high = true;
      else if (c === 92) {
        to[o++] = 92;
        to[o++] = 92;
        continue;
      } else if (c === 10) {
        to[o++] = 92;
        to[o++] = 110;
        continue;
      } else if (c === 9) {
        to[o++] = 92;
        to[o++] = 116;
        continue;
      } else if (c === 38 || c === 13) {
        out.length = o0;
        writeString(out, type, rawValue(b, s, e), reason);
        return;
      }
      to[o++] = c;
    }
    if (high && !isUtf8(b.subarray(s, e))) refuse('bytes that are not UTF-8');
    out.length = o;
    return;
  }
  const check = CANONICAL_BYTES[type];
  if (check !== undefined && check(b, s, e)) {
    out.reserve(e - s);
    const to = out.buf;
    let o = out.length;
    for (let k = s; k < e; k++) to[o++] = b[k]!;
    out.length = o;
    return;
  }
  writeString(out, type, rawValue(b, s, e), reason);
}

/**
 * A COPY text line: the fields of row `row` of `rows` (of columns `columns`; empty is NULL), then
 * `n`; a refusal `reason` for a value the per-row path must type or reject.
 */
function writeLine(
  out: LineSink,
  columns: readonly { pgType: PgType }[],
  b: Buffer,
  rows: Rows,
  row: number,
  n: number,
  reason: string,
): void {
  const width = columns.length;
  const base = row * rows.width;
  const starts = rows.start;
  const ends = rows.end;
  for (let i = 0; i < width; i++) {
    out.reserve(4);
    if (i > 0) out.buf[out.length++] = 9;
    const s = i < rows.width ? starts[base + i]! : UNSET;
    if (s >= 0) {
      const e = ends[base + i]!;
      if (e > s) {
        writeRange(out, columns[i]!.pgType, b, s, e, reason);
        continue;
      }
    } else if (s === STRING) {
      const value = rows.text[base + i]!;
      if (value !== '') {
        writeString(out, columns[i]!.pgType, value, reason);
        continue;
      }
    } else if (s === FIELD) {
      out.string(rows.text[base + i]!);
      continue;
    }
    out.buf[out.length++] = 92;
    out.buf[out.length++] = 78;
  }
  out.reserve(24);
  if (width > 0) out.buf[out.length++] = 9;
  out.length = writeDecimal(out.buf, out.length, n);
  out.buf[out.length++] = 10;
  out.lines++;
}

/** Refuses what the per-row path might read otherwise in the bytes [s, e) of a leaf: whitespace around it. */
function checkLeafEnds(b: Buffer, s: number, e: number): void {
  if (e > s && (isSpace(b[s]) || isSpace(b[e - 1]))) refuse('a value with surrounding whitespace');
}

/** Refuses an attribute value [s, e) with a line break, tab or `<`. */
function checkAttribute(b: Buffer, s: number, e: number): void {
  for (let k = s; k < e; k++) {
    const c = b[k];
    if (c === 10 || c === 13 || c === 9 || c === 60) refuse('a line break, tab or < in an attribute value');
  }
}

/**
 * The scanner over the file's UTF-8 bytes: values are kept as byte ranges of the record and
 * copied into the COPY text lines (a string only for one that needs decoding). `scan(out)` reads
 * what the buffer holds; without `out` it only collects columns. Column state (set, paths)
 * survives between runs.
 */
export class FastXmlScanner {
  readonly set = new ColumnSet();
  private readonly pathColumns = new Map<string, number>();
  private readonly names = new Map<string, RecordName>();
  private resolveOptions: { report?: string } = {};
  metadata: ReportMetadata | undefined;
  /** Columns may still be added (discovery, or before the first record is emitted). */
  private growing = true;

  // Per-document state.
  private buf: Buffer = Buffer.alloc(0);
  /** Where the buffer's last record end tag is (-1: not looked for since the last push). */
  private lastClose = -1;
  /** The memory `buf` is a view of (reused while it is large enough). */
  private work: Buffer = Buffer.alloc(0);
  private pos = 0;
  private ended = false;
  private stack: Container[] = [];
  private rootSeen = false;
  private rootClosed = false;
  private declAllowed = true;
  recordCount = 0;
  /** Records seen over all passes (the stamps of repeated-element checks). */
  private serial = 0;
  /** The values of the record being read. */
  private row = new Rows(16);
  /** `</Request>`: where a record ends. */
  private readonly recordEndTag: Buffer;
  /** The record's first child last time (a guess, checked). */
  private firstChild: RecordName | undefined;
  /** The record's first attribute last time (a guess, checked). */
  private firstAttribute: RecordName | undefined;
  /** Where the leaf leafAt() read last ends, and its value's bytes. */
  private leafEnd = 0;
  private valueStart = 0;
  private valueEnd = 0;
  /** Repeated groups with a child table, by container element. */
  readonly itemGroups = new Map<string, ItemGroup>();

  constructor(
    private readonly fileName: string,
    private readonly recordElement: string,
    private readonly givenDefinition: string | undefined,
    childTables: readonly FastXmlChildTable[] = [],
  ) {
    this.recordEndTag = Buffer.from(`</${recordElement}>`, 'latin1');
    for (const child of childTables) {
      const spec = XML_REPEATED_GROUPS.find((g) => g.name === child.group)!;
      const columns = child.columns.map((c) => {
        if (!(PG_TYPES as readonly string[]).includes(c.pgType))
          refuse(`child column ${c.name} has type ${c.pgType}`);
        return { name: c.name, pgType: c.pgType as PgType };
      });
      const indexOf = (name: string) => columns.findIndex((c) => c.name === name);
      const numberColumn =
        spec.numberField === undefined ? spec.numberColumn : findField(spec.numberField)!.column;
      this.itemGroups.set(spec.container, {
        spec,
        columns,
        byName: new Map(),
        keyIndex: indexOf(findField(REQUEST_ID)!.column),
        numberIndex: indexOf(numberColumn),
        seen: columns.map(() => false),
        items: new Rows(columns.length, 4),
        pending: 0,
        lines: new LineSink(),
        count: 0,
        order: [],
      });
    }
  }

  /** Lines of the child tables' items since the last call, by group, where there are `min` bytes of them. */
  takeItemLines(min: number): Map<XmlRepeatedGroupName, Buffer> {
    const out = new Map<XmlRepeatedGroupName, Buffer>();
    for (const group of this.itemGroups.values())
      if (group.lines.length >= min) out.set(group.spec.name, group.lines.takeBytes());
    return out;
  }

  /**
   * Give back the buffers of the document read (releaseBuffer): its bytes and its items' lines,
   * once those are written out. A document read after makes new ones.
   */
  release(): void {
    releaseBuffer(this.work);
    this.work = Buffer.alloc(0);
    this.buf = this.work;
    this.pos = 0;
    for (const group of this.itemGroups.values()) group.lines.release();
  }

  reset(): void {
    for (const group of this.itemGroups.values()) {
      group.seen.fill(false);
      group.pending = 0;
      group.lines = new LineSink();
      group.count = 0;
    }
    this.buf = Buffer.alloc(0);
    this.pos = 0;
    this.lastClose = -1;
    this.ended = false;
    this.stack = [];
    this.rootSeen = false;
    this.rootClosed = false;
    this.declAllowed = true;
    this.recordCount = 0;
  }

  /** Stop adding columns: a column first seen from now on refuses. */
  freeze(): void {
    this.growing = false;
  }

  push(bytes: Buffer): void {
    // What is left of the buffer, then the new bytes, in one buffer kept from chunk to chunk.
    const rest = this.buf.length - this.pos;
    let work = this.work;
    if (rest + bytes.length > work.length) {
      work = Buffer.allocUnsafe(Math.max(2 * work.length, rest + bytes.length));
      this.buf.copy(work, 0, this.pos);
      // Nothing outside the scanner points into its buffer (values are read as byte ranges).
      releaseBuffer(this.work);
      this.work = work;
    } else if (rest > 0) work.copyWithin(0, this.pos, this.pos + rest); // `buf` starts at work[0]
    bytes.copy(work, rest);
    this.buf = work.subarray(0, rest + bytes.length);
    this.pos = 0;
    this.lastClose = -1;
  }

  end(): void {
    this.ended = true;
  }

  private columnOf(pathKey: string, candidates: readonly string[], fallback: string): number {
    let index = this.pathColumns.get(pathKey);
    if (index !== undefined) return index;
    if (!this.growing) refuse(NEW_COLUMN_REASON);
    const { field, name } = resolveXmlColumn(candidates, fallback, this.resolveOptions);
    index = this.set.add(field, name, true);
    this.pathColumns.set(pathKey, index);
    if (index >= this.row.width) this.row = this.row.widened(2 * (index + 1));
    return index;
  }

  private startMetadata(rootAttributes: [string, string][]): void {
    const metadata = xmlReportMetadata(rootAttributes, this.fileName);
    const definition = this.givenDefinition ?? guessReportDefinition(metadata.reportName)?.name;
    metadata.reportDefinition = definition;
    this.resolveOptions = definition === undefined ? {} : { report: definition };
    this.metadata = metadata;
  }

  private skipSpace(p: number): number {
    const b = this.buf;
    while (p < b.length && isSpace(b[p])) p++;
    return p;
  }

  /** The end of a name starting at `p` (refuses a name the fast path does not read). */
  private nameEnd(p: number): number {
    const b = this.buf;
    if (!isNameStart(b[p])) refuse('an unusual element name');
    let q = p + 1;
    while (q < b.length && isNameChar(b[q])) q++;
    return q;
  }

  /**
   * Scan what the buffer holds; `out` gets COPY lines (when emitting). Returns when more text is
   * needed (or at the end of the document).
   */
  scan(out: LineSink | undefined): void {
    const b = this.buf;
    for (;;) {
      const p = this.skipSpace(this.pos);
      if (p >= b.length) {
        this.pos = p;
        if (this.ended) this.finish();
        return;
      }
      if (b[p] !== 60 /* < */) {
        // A byte order mark (EF BB BF) before anything else.
        if (p === 0 && b[0] === 0xef && !this.rootSeen && this.declAllowed) {
          if (b.length < 3 && !this.ended) return this.more(0);
          if (b[1] === 0xbb && b[2] === 0xbf) {
            this.pos = 3;
            continue;
          }
        }
        refuse('text outside a record');
      }
      if (this.rootClosed) refuse('content after the root element');
      const c1 = p + 1 < b.length ? b[p + 1]! : -1;
      if (c1 === -1) return this.more(p);
      // `<?xml ` and `<!DOCTYPE` are told whole.
      if ((c1 === 63 || c1 === 33) && b.length - p < 10 && !this.ended) return this.more(p);
      if (c1 === 63 /* ? */) {
        if (!this.declAllowed || !matchesAt(b, '<?xml', p)) refuse('a processing instruction');
        const end = b.indexOf('?>', p, 'latin1');
        if (end < 0) return this.more(p);
        if (!isSpace(b[p + 5])) refuse('a processing instruction');
        this.declAllowed = false;
        this.pos = end + 2;
        continue;
      }
      this.declAllowed = false;
      if (c1 === 33 /* ! */) {
        // A DOCTYPE before the root naming its DTD (Transaction Detail files): skipped, never read.
        // One with an internal subset (entity declarations) is left to the per-row path.
        if (this.rootSeen || !matchesAt(b, '<!DOCTYPE', p)) refuse('a comment, CDATA section or DOCTYPE');
        const gt = b.indexOf(62, p);
        if (gt < 0) return this.more(p);
        const bracket = b.indexOf(91, p);
        const lt = b.indexOf(60, p + 1);
        if ((bracket >= 0 && bracket < gt) || (lt >= 0 && lt < gt))
          refuse('a DOCTYPE with an internal subset');
        this.pos = gt + 1;
        continue;
      }
      if (c1 === 47 /* / */) {
        const gt = b.indexOf(62, p);
        if (gt < 0) return this.more(p);
        const name = ascii(b, p + 2, gt);
        const open = this.stack.pop();
        if (open === undefined || open.name !== name) refuse('an end tag that does not match');
        if (this.stack.length === 0) this.rootClosed = true;
        this.pos = gt + 1;
        continue;
      }
      // A start tag of the root, an enclosing element, or a record.
      const nameEnd = this.nameEnd(p + 1);
      if (nameEnd >= b.length) return this.more(p);
      const recordElement = this.recordElement;
      if (
        this.stack.length > 0 &&
        nameEnd - p - 1 === recordElement.length &&
        matchesAt(b, recordElement, p + 1)
      ) {
        // The buffer's last record end tag bounds every record before it (each record's own end
        // is where its elements end: one search per chunk, not one per record).
        if (this.lastClose < nameEnd) {
          this.lastClose = b.lastIndexOf(this.recordEndTag);
          if (this.lastClose < nameEnd) return this.more(p);
        }
        this.pos = this.record(nameEnd, this.lastClose, out);
        continue;
      }
      const name = ascii(b, p + 1, nameEnd);
      const after = b[nameEnd];
      if (!isSpace(after) && after !== 62 && after !== 47) refuse('an unusual element name');
      const gt = this.tagEnd(nameEnd);
      if (gt < 0) return this.more(p);
      if (b[gt - 1] === 47) refuse('a self-closing element outside records');
      const tag = utf8Text(b, nameEnd, gt);
      // What the per-row path judges: a reference XML does not allow (it fails the file), and
      // namespaces below the root (whose elements may not be the report's).
      if (referenceProblem(tag) !== undefined || duplicateAttribute(name, `${name}${tag}`) !== undefined)
        refuse('an unusual reference or an attribute twice');
      const attributes = parseAttributes(tag);
      if (this.rootSeen && attributes.some(([k]) => k === 'xmlns' || k.includes(':')))
        refuse('a namespace declaration or prefixed attribute below the root');
      if (!this.rootSeen) {
        this.rootSeen = true;
        this.startMetadata(attributes);
        this.stack.push({ name, inherited: [], resolved: [] });
      } else {
        const parent = this.stack[this.stack.length - 1]!;
        const own = attributes.filter(([k]) => k !== 'xmlns' && !k.startsWith('xmlns:'));
        const inherited =
          own.length === 0
            ? parent.inherited
            : [...parent.inherited, ...own.map(([k, v]) => [`${name}.${localName(k)}`, v] as const)];
        this.stack.push({ name, inherited, resolved: undefined });
      }
      this.pos = gt + 1;
    }
  }

  /** Index of the `>` ending a start tag whose name ends at `p` (quotes respected), or -1. */
  private tagEnd(p: number): number {
    const b = this.buf;
    let quote = 0;
    for (let i = p; i < b.length; i++) {
      const c = b[i]!;
      if (quote !== 0) {
        if (c === quote) quote = 0;
      } else if (c === 34 || c === 39) quote = c;
      else if (c === 62) return i;
      else if (c === 60) refuse('a < inside a tag');
    }
    return -1;
  }

  private more(at: number): void {
    if (this.ended) refuse('the document ends inside a tag or record');
    if (this.buf.length - at > MAX_PENDING_BYTES) refuse('a record or tag larger than 8 MiB');
    this.pos = at;
  }

  private finish(): void {
    if (!this.rootSeen || !this.rootClosed) refuse('the document ends before its root element is closed');
    if (this.recordCount === 0) refuse('no records');
  }

  /**
   * Column `index` of the record gets the bytes [s, e) (a leaf's text or an attribute's value as
   * written) unless a value came before it, whose bytes are then only checked as they would be read.
   */
  private put(index: number, s: number, e: number): void {
    const row = this.row;
    if (row.start[index] === UNSET) row.setRange(index, s, e);
    else if (e > s) rawValue(this.buf, s, e);
  }

  /**
   * One record, whose name ends at `nameEnd`, ending at its end tag `</Request>`, which is at
   * `close` or before it; the index after that end tag.
   */
  private record(nameEnd: number, close: number, out: LineSink | undefined): number {
    const b = this.buf;
    const n = ++this.recordCount;
    const stamp = ++this.serial;
    this.row.clear(1);
    const recordName = this.recordElement;
    /** The bytes of the RequestID attribute (-1: none). */
    let requestStart = -1;
    let requestEnd = -1;
    // Attributes of the record.
    let p = nameEnd;
    let guessAttribute = this.firstAttribute;
    let previousAttribute: RecordName | undefined;
    for (;;) {
      const q = this.skipSpace(p);
      const c = b[q];
      if (c === 62 /* > */) {
        p = q + 1;
        break;
      }
      if (q === p || q >= close) refuse('an unusual record start tag');
      // The attribute that came here in the previous record, if it is the same name; else look it up.
      let slot: RecordName;
      let e: number;
      if (
        guessAttribute !== undefined &&
        matchesAt(b, guessAttribute.name, q) &&
        b[q + guessAttribute.name.length] === 61
      ) {
        slot = guessAttribute;
        e = q + slot.name.length;
      } else {
        e = this.nameEnd(q);
        slot = this.recordNameOf(ascii(b, q, e));
      }
      if (previousAttribute === undefined) this.firstAttribute = slot;
      else previousAttribute.nextAttribute = slot;
      previousAttribute = slot;
      guessAttribute = slot.nextAttribute;
      const attr = slot.name;
      if (attr === 'xmlns') refuse('a namespace declaration on a record');
      if (b[e] !== 61 /* = */) refuse('an unusual attribute');
      const quote = b[e + 1]!;
      if (quote !== 34 && quote !== 39) refuse('an unusual attribute');
      const vEnd = b.indexOf(quote, e + 2);
      if (vEnd < 0 || vEnd > close) refuse('an unusual attribute');
      checkAttribute(b, e + 2, vEnd);
      if (attr === 'RequestID') {
        requestStart = e + 2;
        requestEnd = vEnd;
      }
      if (slot.attrStamp === stamp) refuse('an attribute twice');
      slot.attrStamp = stamp;
      slot.leaf ??= {
        index: this.columnOf(`/${attr}`, recordCandidates(recordName, attr), `${recordName}.${attr}`),
        name: attr,
        next: undefined,
        stamp: 0,
      };
      this.put(slot.leaf.index, e + 2, vEnd);
      p = vEnd + 1;
    }
    // Children: leaves and groups of leaves.
    let guess = this.firstChild;
    let previous: RecordName | undefined;
    for (;;) {
      p = this.skipSpace(p);
      if (b[p] !== 60 || p > close) refuse('text beside the elements of a record');
      if (b[p + 1] === 47) {
        p = afterEndTag(b, recordName, p);
        break;
      }
      // The child that came here in the previous record, if it is the same name; else look it up.
      let slot: RecordName;
      let e: number;
      if (guess !== undefined && isNameAt(b, guess.name, p + 1)) {
        slot = guess;
        e = p + 1 + guess.name.length;
      } else {
        e = this.nameEnd(p + 1);
        slot = this.recordNameOf(this.childName(p + 1, e));
      }
      if (previous === undefined) this.firstChild = slot;
      else previous.next = slot;
      previous = slot;
      guess = slot.next;
      const name = slot.name;
      if (slot.stamp === stamp) refuse('a repeated element');
      slot.stamp = stamp;
      const c = b[e];
      // The container of a repeated group with a child table: its items, none when it is empty.
      const items = slot.items;
      if (c === 47 /* / */) {
        if (b[e + 1] !== 62) refuse('an unusual empty element');
        if (items === undefined) this.putRecordLeaf(slot, name, e, e);
        p = e + 2;
        continue;
      }
      if (c !== 62) refuse('attributes on an element inside a record');
      const lt = b.indexOf(60, e + 1);
      if (lt < 0 || lt > close) refuse('an unclosed element inside a record');
      if (b[lt + 1] === 47 && items === undefined) {
        // A leaf: `<name>text</name>`.
        const after = afterEndTag(b, name, lt);
        checkLeafEnds(b, e + 1, lt);
        this.putRecordLeaf(slot, name, e + 1, lt);
        p = after;
        continue;
      }
      // A group: only whitespace before its first child.
      for (let i = e + 1; i < lt; i++) if (!isSpace(b[i])) refuse('text beside child elements');
      p = items === undefined ? this.group(slot, name, lt, close, stamp) : this.items(items, lt, close);
    }
    for (const group of this.itemGroups.values()) {
      if (group.pending === 0) continue;
      if (requestStart < 0 || requestStart === requestEnd)
        refuse('items of a record without a RequestID attribute');
      if (out !== undefined)
        for (let item = 0; item < group.pending; item++)
          this.itemLine(group, item, requestStart, requestEnd, n);
      group.pending = 0;
    }
    // Attributes of the enclosing elements, after the record's own (as on the per-row path).
    const container = this.stack[this.stack.length - 1]!;
    if (container.resolved === undefined) {
      container.resolved = container.inherited.map(([k, v]) => ({
        index: this.columnOf(`^${k}`, [k], k),
        value: v,
        field: undefined,
      }));
    }
    const row = this.row;
    for (const inherited of container.resolved) {
      const index = inherited.index;
      if (row.start[index] !== UNSET) continue;
      if (out === undefined) row.setString(index, inherited.value);
      else {
        // The same value in every record inside: its COPY text field is made once.
        inherited.field ??= copyText(
          this.set.columns[index]!.pgType,
          inherited.value,
          'a value the per-row path must type or reject',
        );
        row.setField(index, inherited.field);
      }
    }
    if (out !== undefined)
      writeLine(out, this.set.columns, b, row, 0, n, 'a value the per-row path must type or reject');
    return p;
  }

  /**
   * The children of group `<name>` (its first child's `<` at `p`): leaves, the label attribute
   * the layout allows on them (`<field1 name="mdd1">`, left out), and groups of leaves one level
   * down (`<PaymentMethod><Card><AccountSuffix>`); the index after `</name>`.
   */
  private group(slot: RecordName, name: string, p: number, close: number, stamp: number): number {
    const b = this.buf;
    const leaves = (slot.group ??= new Map());
    const label = slot.label;
    const repeatedItem = slot.repeatedItem;
    let guess = slot.firstLeaf;
    let previous: LeafSlot | undefined;
    for (;;) {
      p = this.skipSpace(p);
      if (p >= close || b[p] !== 60) refuse('text beside child elements');
      if (b[p + 1] === 47) {
        return afterEndTag(b, name, p);
      }
      let entry: LeafSlot | undefined;
      let e: number;
      // (A leaf with a label attribute, `<field1 name="mdd1">`, is guessed too.)
      if (
        guess !== undefined &&
        matchesAt(b, guess.name, p + 1) &&
        !isNameChar(b[p + 1 + guess.name.length])
      ) {
        entry = guess;
        e = p + 1 + guess.name.length;
      } else {
        e = this.nameEnd(p + 1);
        const leafName = this.childName(p + 1, e);
        if (repeatedItem === leafName) refuse('a repeated group (its items go to a child table)');
        entry = leaves.get(leafName);
        if (entry === undefined) {
          // A group one level down, not a leaf: its leaves are columns, it is not one.
          const start = b[e] === 62 ? b.indexOf(60, e + 1) : -1;
          if (start >= 0 && start < close && b[start + 1] !== 47) {
            for (let i = e + 1; i < start; i++) if (!isSpace(b[i])) refuse('text beside child elements');
            p = this.subgroup(slot, name, leafName, start, close, stamp);
            previous = undefined;
            guess = undefined;
            continue;
          }
          entry = {
            name: leafName,
            index: this.columnOf(
              `/${name}/${leafName}`,
              [`${name}.${leafName}`, `${name}.${leafName}`],
              `${name}.${leafName}`,
            ),
            next: undefined,
            stamp: 0,
          };
          leaves.set(leafName, entry);
        }
      }
      if (previous === undefined) slot.firstLeaf = entry;
      else previous.next = entry;
      previous = entry;
      guess = entry.next;
      const leaf = entry.name;
      if (entry.stamp === stamp) refuse('a repeated element');
      entry.stamp = stamp;
      const c = b[e];
      if (c !== 62 && c !== 47)
        e = this.labelEnd(e, label ?? refuse('attributes on an element inside a record'), close);
      this.leafAt(leaf, e, close, 'elements nested deeper than a group');
      p = this.leafEnd;
      this.put(entry.index, this.valueStart, this.valueEnd);
    }
  }

  /**
   * The value of leaf `<name>` whose start tag ends at `e` (`/>` or `>`, then text and `</name>`):
   * its bytes in [valueStart, valueEnd), and the index after it in leafEnd; `deeper` is the
   * refusal when an element comes instead of the text.
   */
  private leafAt(name: string, e: number, close: number, deeper: string): void {
    const b = this.buf;
    const c = b[e];
    if (c === 47) {
      if (b[e + 1] !== 62) refuse('an unusual empty element');
      this.leafEnd = e + 2;
      this.valueStart = this.valueEnd = e;
      return;
    }
    if (c !== 62) refuse('attributes on an element inside a record');
    const lt = b.indexOf(60, e + 1);
    if (lt < 0 || lt > close || b[lt + 1] !== 47) refuse(deeper);
    checkLeafEnds(b, e + 1, lt);
    this.valueStart = e + 1;
    this.valueEnd = lt;
    this.leafEnd = afterEndTag(b, name, lt);
  }

  /** After the label attribute `label` of a leaf whose name ends at `e`: the index of its `>` or `/>`. */
  private labelEnd(e: number, label: string, close: number): number {
    const b = this.buf;
    const q = this.skipSpace(e);
    if (q === e) refuse('attributes on an element inside a record');
    const ae = this.nameEnd(q);
    if (ae - q !== label.length || !matchesAt(b, label, q) || b[ae] !== 61)
      refuse('attributes on an element inside a record');
    const quote = b[ae + 1]!;
    if (quote !== 34 && quote !== 39) refuse('an unusual attribute');
    const vEnd = b.indexOf(quote, ae + 2);
    if (vEnd < 0 || vEnd > close) refuse('an unusual attribute');
    const r = this.skipSpace(vEnd + 1);
    const c = b[r];
    if (c !== 62 && c !== 47) refuse('attributes on an element inside a record');
    return r;
  }

  /** The leaves of `<sub>` inside `<name>` (its first child's `<` at `p`); the index after `</sub>`. */
  private subgroup(
    slot: RecordName,
    name: string,
    sub: string,
    p: number,
    close: number,
    stamp: number,
  ): number {
    const b = this.buf;
    const leaves = (slot.subgroups ??= new Map());
    const firsts = (slot.subgroupFirst ??= new Map());
    let guess = firsts.get(sub);
    let previous: LeafSlot | undefined;
    for (;;) {
      p = this.skipSpace(p);
      if (p >= close || b[p] !== 60) refuse('text beside child elements');
      if (b[p + 1] === 47) return afterEndTag(b, sub, p);
      // The leaf that came here last time, if it is the same name; else look it up.
      let e: number;
      let leafName: string;
      let entry: LeafSlot | undefined;
      if (guess !== undefined && isNameAt(b, guess.name, p + 1)) {
        entry = guess;
        leafName = guess.name;
        e = p + 1 + leafName.length;
      } else {
        e = this.nameEnd(p + 1);
        leafName = this.childName(p + 1, e);
        entry = leaves.get(`${sub}/${leafName}`);
      }
      if (entry === undefined) {
        entry = {
          name: leafName,
          index: this.columnOf(
            `/${name}/${sub}/${leafName}`,
            [`${name}/${sub}/${leafName}`, `${sub}.${leafName}`],
            `${name}.${sub}.${leafName}`,
          ),
          next: undefined,
          stamp: 0,
        };
        leaves.set(`${sub}/${leafName}`, entry);
      }
      if (previous === undefined) firsts.set(sub, entry);
      else previous.next = entry;
      previous = entry;
      guess = entry.next;
      if (entry.stamp === stamp) refuse('a repeated element');
      entry.stamp = stamp;
      this.leafAt(leafName, e, close, 'elements nested deeper than two groups');
      p = this.leafEnd;
      this.put(entry.index, this.valueStart, this.valueEnd);
    }
  }

  /**
   * The items of a repeated group with a child table (`<ApplicationReplies>`, its first child's
   * `<` at `p`): each `<ApplicationReply Name="…">` with leaves becomes pending values of a row of
   * the child table (the record's request id is added when the record ends); the index after the
   * container's end tag.
   */
  private items(group: ItemGroup, p: number, close: number): number {
    const b = this.buf;
    const { container, item, numberAttribute } = group.spec;
    if (group.pending > 0) refuse('a repeated element');
    for (;;) {
      p = this.skipSpace(p);
      if (p >= close || b[p] !== 60) refuse('text beside child elements');
      if (b[p + 1] === 47) return afterEndTag(b, container, p);
      const e = p + 1 + item.length;
      if (!matchesAt(b, item, p + 1) || isNameChar(b[e])) {
        this.nameEnd(p + 1);
        refuse(`an element other than ${item} in ${container}`);
      }
      // The item's attributes and leaves in the order the last item had them (guesses, checked).
      const order = group.order;
      let k = 0;
      const position = group.pending;
      group.items.ensure(position + 1);
      const values = group.items;
      const base = position * values.width;
      values.start.fill(UNSET, base, base + values.width);
      if (group.numberIndex >= 0)
        values.setString(
          base + group.numberIndex,
          numberAttribute === undefined ? String(position + 1) : String(position),
        );
      // Attributes.
      let q = e;
      let selfClosing = false;
      for (;;) {
        const r = this.skipSpace(q);
        const c = b[r];
        if (c === 62) {
          q = r + 1;
          break;
        }
        if (c === 47 && b[r + 1] === 62) {
          q = r + 2;
          selfClosing = true;
          break;
        }
        if (r === q || r >= close) refuse('an unusual item start tag');
        const guess = order[k];
        let ae: number;
        let attr: string;
        let index: number;
        if (
          guess !== undefined &&
          guess.attribute &&
          matchesAt(b, guess.name, r) &&
          b[r + guess.name.length] === 61
        ) {
          attr = guess.name;
          ae = r + attr.length;
          index = guess.index;
        } else {
          ae = this.nameEnd(r);
          attr = ascii(b, r, ae);
          index = -1;
        }
        if (b[ae] !== 61) refuse('an unusual attribute');
        const quote = b[ae + 1]!;
        if (quote !== 34 && quote !== 39) refuse('an unusual attribute');
        const vEnd = b.indexOf(quote, ae + 2);
        if (vEnd < 0 || vEnd > close) refuse('an unusual attribute');
        checkAttribute(b, ae + 2, vEnd);
        if (index < 0) {
          index = attr === numberAttribute ? group.numberIndex : this.itemColumn(group, attr);
          order[k] = { name: attr, index, attribute: true };
        }
        k++;
        if (attr !== numberAttribute && values.start[base + index] !== UNSET) refuse('an attribute twice');
        if (index >= 0) values.setRange(base + index, ae + 2, vEnd);
        q = vEnd + 1;
      }
      group.pending = position + 1;
      if (selfClosing) {
        p = q;
        continue;
      }
      // Leaves.
      for (;;) {
        q = this.skipSpace(q);
        if (q >= close || b[q] !== 60) refuse('text beside child elements');
        if (b[q + 1] === 47) {
          q = afterEndTag(b, item, q);
          break;
        }
        const guess = order[k];
        let le: number;
        let leaf: string;
        let index: number;
        if (guess !== undefined && !guess.attribute && isNameAt(b, guess.name, q + 1)) {
          leaf = guess.name;
          le = q + 1 + leaf.length;
          index = guess.index;
        } else {
          le = this.nameEnd(q + 1);
          leaf = this.childName(q + 1, le);
          index = this.itemColumn(group, leaf);
          order[k] = { name: leaf, index, attribute: false };
        }
        k++;
        if (values.start[base + index] !== UNSET && index !== group.numberIndex) refuse('a repeated element');
        this.leafAt(leaf, le, close, 'elements nested deeper than an item');
        if (values.start[base + index] === UNSET)
          values.setRange(base + index, this.valueStart, this.valueEnd);
        else if (this.valueEnd > this.valueStart) rawValue(b, this.valueStart, this.valueEnd);
        q = this.leafEnd;
      }
      p = q;
    }
  }

  /** The child table column of an item's leaf or attribute `name`, resolved as the per-row path does. */
  private itemColumn(group: ItemGroup, name: string): number {
    let index = group.byName.get(name);
    if (index === undefined) {
      const resolved = resolveHeader(`${group.spec.group}.${name}`, this.resolveOptions);
      index = resolved.kind === 'catalog' ? group.columns.findIndex((c) => c.name === resolved.column) : -1;
      if (index === group.keyIndex || index === group.numberIndex) index = -1;
      group.byName.set(name, index);
    }
    if (index < 0) refuse(`an item field its child table does not declare (${group.spec.item}/${name})`);
    return index;
  }

  /** One item's COPY text line: the child table's columns, then the record number. */
  private itemLine(
    group: ItemGroup,
    item: number,
    requestStart: number,
    requestEnd: number,
    recordNumber: number,
  ): void {
    const values = group.items;
    const base = item * values.width;
    if (group.keyIndex >= 0) values.setRange(base + group.keyIndex, requestStart, requestEnd);
    for (let i = 0; i < values.width; i++) if (values.start[base + i] !== UNSET) group.seen[i] = true;
    writeLine(
      group.lines,
      group.columns,
      this.buf,
      values,
      item,
      recordNumber,
      'an item value the per-row path must type or reject',
    );
    group.count++;
  }

  /**
   * The name of an element inside a record, at bytes [s, e); one named as the record refuses (a
   * record's end is where its elements end, before the first end tag of its name).
   */
  private childName(s: number, e: number): string {
    const name = ascii(this.buf, s, e);
    if (name === this.recordElement) refuse(`an element <${name}> inside a record`);
    return name;
  }

  private recordNameOf(name: string): RecordName {
    let slot = this.names.get(name);
    if (slot === undefined) {
      slot = {
        name,
        next: undefined,
        firstLeaf: undefined,
        leaf: undefined,
        group: undefined,
        subgroups: undefined,
        stamp: 0,
        attrStamp: 0,
        nextAttribute: undefined,
        items: this.itemGroups.get(name),
        label: XML_LABEL_ATTRIBUTES[name],
        repeatedItem: repeatedGroupOf(name)?.item,
        subgroupFirst: undefined,
      };
      this.names.set(name, slot);
    }
    return slot;
  }

  private putRecordLeaf(slot: RecordName, name: string, s: number, e: number): void {
    const recordName = this.recordElement;
    slot.leaf ??= {
      index: this.columnOf(`/${name}`, recordCandidates(recordName, name), `${recordName}.${name}`),
      name,
      next: undefined,
      stamp: 0,
    };
    this.put(slot.leaf.index, s, e);
  }
}
