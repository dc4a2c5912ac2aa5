/**
 * The fast load path of XML report files on PostgreSQL: one hand-written pass over the text turns
 * each record element straight into a COPY text line (src/load/raw-text-copy.ts) that goes into the
 * typed staging table, PostgreSQL casting while it copies. Non-text values are only checked to be
 * in their canonical form (one regex each); no per-record parser call, no typed values, no
 * per-value objects.
 *
 * It yields exactly what the per-row path (openXmlReport → toLoadSource → loadWindow) yields, or
 * refuses (`LOAD_FAST_PATH_REFUSED`) and the caller loads the file through the per-row path. It
 * reads only the plain layout CyberSource writes, and refuses everything else rather than risk a
 * difference:
 *  - prolog: an optional BOM, whitespace and one `<?xml …?>` declaration (no comment, DOCTYPE or
 *    processing instruction anywhere);
 *  - elements enclosing the records (`<Requests>`, `<Batches><Batch BatchID=…>`): attributes read
 *    exactly as the per-row scanner reads them (inherited as `Element.Attribute`);
 *  - a record (`<Request a="…">`, not self-closing) holds leaves (`<Name>text</Name>`, `<Name/>`)
 *    and groups of leaves (`<Group><Field>…</Field></Group>`), without attributes on them, without
 *    any name twice in one parent (repeated elements become a JSON column on the per-row path),
 *    without namespace prefixes, CDATA, comments, or text beside child elements;
 *  - values: no carriage return, tab or line break in attributes, no carriage return in text, no
 *    leading or trailing whitespace, only the five XML entities and character references (no NUL);
 *  - well-formed: end tags match, nothing after the root, the file ends after it;
 *  - every non-text value in the form that the catalog's coercer and PostgreSQL read identically
 *    (`canonicalCopyValue`): anything else may be a reject, which only the per-row path words.
 * Column names are resolved through the same catalog rules, in the same order, as on the per-row
 * path (record attributes, children in document order, then inherited attributes). The columns
 * must be known before COPY starts: they are taken from the records before the first one is
 * emitted, and a column first seen later refuses with {@link NEW_COLUMN_REASON}; the caller then
 * opens the file again with `discoverColumns` (one extra pass that only collects columns).
 */
import { findReportDefinition, guessReportDefinition, resolveHeader } from '../catalog/index.js';
import type { ResolvedField } from '../catalog/index.js';
import { XML_RECORD_ATTRIBUTE_FIELDS, repeatedGroupOf } from '../catalog/child-tables.js';
import { refuseFastPath } from '../load/fast-csv.js';
import { canonicalCopyValue } from '../load/raw-text-copy.js';
import type { RawCopyTextBody } from '../load/raw-text-copy.js';
import { ColumnSet } from './records.js';
import type { ColumnSpec, ReportMetadata } from './records.js';
import { localName, parseAttributes } from './xml-scanner.js';
import { xmlReportMetadata } from './xml-report.js';

export const NEW_COLUMN_REASON = 'a record has a column the records before it did not have';

export interface RawXmlReport {
  metadata: ReportMetadata;
  columns: ColumnSpec[];
  unknownColumns: ColumnSpec[];
  body: RawCopyTextBody;
}

export interface OpenRawXmlOptions {
  fileName: string;
  report?: string;
  recordElement?: string;
  /** Read the whole file once first to collect every column (when a column appears late). */
  discoverColumns?: boolean;
}

type Chunks = AsyncIterable<Uint8Array | string>;

/** Raised inside the scanner; turned into a fast-path refusal. */
class Refusal extends Error {}

const refuse = (reason: string): never => {
  throw new Refusal(reason);
};

/** One COPY text chunk is cut after this many characters. */
const CHUNK_CHARS = 64 * 1024;
/** A record (or a token outside records) longer than this refuses (the per-row path judges it). */
const MAX_PENDING_CHARS = 8 * 1024 * 1024;

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
  /** Record number that last saw this child element. */
  stamp: number;
  /** Record number that last saw this attribute. */
  attrStamp: number;
}

interface Container {
  name: string;
  inherited: readonly (readonly [string, string])[];
  /** Columns of `inherited`, resolved at the first record inside (so in the per-row path's order). */
  resolved: { index: number; value: string }[] | undefined;
}

const isSpace = (c: number): boolean => c === 32 || c === 10 || c === 13 || c === 9;
/** A name character the fast path accepts (letters, digits, `_`, `-`, `.`; no `:`). */
const isNameChar = (c: number): boolean =>
  (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 45 || c === 46;
const isNameStart = (c: number): boolean => (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95;

/**
 * Whether `name` is at `at` in `b`: `b.startsWith(name, at)`, compared code by code (a builtin
 * call per element name cost about 9% of scanning a Transaction Request report).
 */
function matchesAt(b: string, name: string, at: number): boolean {
  const n = name.length;
  if (at + n > b.length) return false;
  for (let k = 0; k < n; k++) if (b.charCodeAt(at + k) !== name.charCodeAt(k)) return false;
  return true;
}

/** The index after the end tag `</name>` whose `<` is at `at` (known to be followed by `/`); refuses any other end tag. */
function afterEndTag(b: string, name: string, at: number): number {
  if (!matchesAt(b, name, at + 2) || b.charCodeAt(at + 2 + name.length) !== 62)
    refuse('an end tag that does not match');
  return at + 3 + name.length;
}

/** Whether the whole name `name` starts at `at` (followed by `>` or `/`, the only ends accepted). */
function isNameAt(b: string, name: string, at: number): boolean {
  if (!matchesAt(b, name, at)) return false;
  const c = b.charCodeAt(at + name.length);
  return c === 62 || c === 47;
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
      if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff) || code === 13 || code === 9)
        return refuse('an unusual character reference');
      out += String.fromCodePoint(code);
    }
    from = ENTITY.lastIndex;
  }
  return out + text.slice(from);
}

/** The names a record's own attribute or leaf `name` may have in the catalog, in order (as on the per-row path). */
function recordCandidates(recordName: string, name: string): string[] {
  const alias = XML_RECORD_ATTRIBUTE_FIELDS[name];
  return alias === undefined ? [`${recordName}.${name}`] : [alias, `${recordName}.${name}`];
}

/** What makes a value need a closer look (one test instead of several scans). */
const LEAF_SPECIAL = /[\r&]/;
const ATTRIBUTE_SPECIAL = /[\n\r\t<&]/;
const COPY_SPECIAL = /[\\\n\r\t]/;
const COPY_ESCAPES = /[\\\n\r\t]/g;
const COPY_ESCAPE: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** A text value as a COPY text field. */
function copyField(value: string): string {
  return COPY_SPECIAL.test(value) ? value.replace(COPY_ESCAPES, (c) => COPY_ESCAPE[c]!) : value;
}

/** A leaf's text as the per-row path reads it, or a refusal when it might read it otherwise. */
function leafValue(raw: string): string {
  const n = raw.length;
  if (n === 0) return raw;
  if (isSpace(raw.charCodeAt(0)) || isSpace(raw.charCodeAt(n - 1)))
    refuse('a value with surrounding whitespace');
  if (!LEAF_SPECIAL.test(raw)) return raw;
  if (raw.includes('\r')) refuse('a carriage return in a value');
  return decodeEntities(raw);
}

function attributeValue(raw: string): string {
  if (!ATTRIBUTE_SPECIAL.test(raw)) return raw;
  if (raw.includes('\n') || raw.includes('\r') || raw.includes('\t') || raw.includes('<'))
    refuse('a line break, tab or < in an attribute value');
  return decodeEntities(raw);
}

/**
 * The scanner over the decoded text. `run(chunks, emit)` reads the whole document; with `emit`
 * false it only collects columns. Column state (set, paths) survives between runs.
 */
class FastXmlScanner {
  readonly set = new ColumnSet();
  private readonly pathColumns = new Map<string, number>();
  private readonly names = new Map<string, RecordName>();
  private resolveOptions: { report?: string } = {};
  metadata: ReportMetadata | undefined;
  /** Columns may still be added (discovery, or before the first record is emitted). */
  private growing = true;

  // Per-document state.
  private buf = '';
  private pos = 0;
  private ended = false;
  private stack: Container[] = [];
  private rootSeen = false;
  private rootClosed = false;
  private declAllowed = true;
  recordCount = 0;
  /** Records seen over all passes (the stamps of repeated-element checks). */
  private serial = 0;
  private values: (string | undefined)[] = [];
  /** The record's first child last time (a guess, checked). */
  private firstChild: RecordName | undefined;

  constructor(
    private readonly fileName: string,
    private readonly recordElement: string,
    private readonly givenDefinition: string | undefined,
  ) {}

  reset(): void {
    this.buf = '';
    this.pos = 0;
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

  push(text: string): void {
    this.buf = this.pos >= this.buf.length ? text : this.buf.slice(this.pos) + text;
    this.pos = 0;
  }

  end(): void {
    this.ended = true;
  }

  private columnOf(pathKey: string, candidates: readonly string[], fallback: string): number {
    let index = this.pathColumns.get(pathKey);
    if (index !== undefined) return index;
    if (!this.growing) refuse(NEW_COLUMN_REASON);
    let field: ResolvedField | undefined;
    let name = fallback;
    for (const candidate of candidates) {
      const resolved = resolveHeader(candidate, this.resolveOptions);
      if (resolved.kind === 'catalog') {
        field = resolved;
        name = candidate;
        break;
      }
    }
    field ??= resolveHeader(fallback, this.resolveOptions);
    index = this.set.add(field, name, true);
    this.pathColumns.set(pathKey, index);
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
    while (p < b.length && isSpace(b.charCodeAt(p))) p++;
    return p;
  }

  /** The end of a name starting at `p` (refuses a name the fast path does not read). */
  private nameEnd(p: number): number {
    const b = this.buf;
    if (!isNameStart(b.charCodeAt(p))) refuse('an unusual element name');
    let q = p + 1;
    while (q < b.length && isNameChar(b.charCodeAt(q))) q++;
    return q;
  }

  /**
   * Scan what the buffer holds; `out` gets COPY lines (when emitting). Returns when more text is
   * needed (or at the end of the document).
   */
  scan(out: string[] | undefined): void {
    const b = this.buf;
    for (;;) {
      const p = this.skipSpace(this.pos);
      if (p >= b.length) {
        this.pos = p;
        if (this.ended) this.finish();
        return;
      }
      if (b.charCodeAt(p) !== 60 /* < */) {
        if (p === 0 && b.charCodeAt(0) === 0xfeff && !this.rootSeen && this.declAllowed) {
          this.pos = 1;
          continue;
        }
        refuse('text outside a record');
      }
      if (this.rootClosed) refuse('content after the root element');
      const c1 = p + 1 < b.length ? b.charCodeAt(p + 1) : -1;
      if (c1 === -1) return this.more(p);
      if (c1 === 63 /* ? */) {
        if (!this.declAllowed || !b.startsWith('<?xml', p)) refuse('a processing instruction');
        const end = b.indexOf('?>', p);
        if (end < 0) return this.more(p);
        if (!isSpace(b.charCodeAt(p + 5))) refuse('a processing instruction');
        this.declAllowed = false;
        this.pos = end + 2;
        continue;
      }
      this.declAllowed = false;
      if (c1 === 33 /* ! */) refuse('a comment, CDATA section or DOCTYPE');
      if (c1 === 47 /* / */) {
        const gt = b.indexOf('>', p);
        if (gt < 0) return this.more(p);
        const name = b.slice(p + 2, gt);
        const open = this.stack.pop();
        if (open === undefined || open.name !== name) refuse('an end tag that does not match');
        if (this.stack.length === 0) this.rootClosed = true;
        this.pos = gt + 1;
        continue;
      }
      // A start tag of the root, an enclosing element, or a record.
      const nameEnd = this.nameEnd(p + 1);
      if (nameEnd >= b.length) return this.more(p);
      const name = b.slice(p + 1, nameEnd);
      if (name === this.recordElement && this.stack.length > 0) {
        const endTag = `</${name}>`;
        const close = b.indexOf(endTag, nameEnd);
        if (close < 0) return this.more(p);
        this.record(nameEnd, close, out);
        this.pos = close + endTag.length;
        continue;
      }
      const after = b.charCodeAt(nameEnd);
      if (!isSpace(after) && after !== 62 && after !== 47) refuse('an unusual element name');
      const gt = this.tagEnd(nameEnd);
      if (gt < 0) return this.more(p);
      if (b.charCodeAt(gt - 1) === 47) refuse('a self-closing element outside records');
      const attributes = parseAttributes(b.slice(nameEnd, gt));
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
      const c = b.charCodeAt(i);
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
    if (this.buf.length - at > MAX_PENDING_CHARS) refuse('a record or tag larger than 8 Mi characters');
    this.pos = at;
  }

  private finish(): void {
    if (!this.rootSeen || !this.rootClosed) refuse('the document ends before its root element is closed');
    if (this.recordCount === 0) refuse('no records');
  }

  /** One record, from `<` at `start` to its end tag at `close`. */
  private record(nameEnd: number, close: number, out: string[] | undefined): void {
    const b = this.buf;
    const n = ++this.recordCount;
    const stamp = ++this.serial;
    const values = this.values;
    for (let i = 0; i < values.length; i++) values[i] = undefined;
    const recordName = this.recordElement;
    // Attributes of the record.
    let p = nameEnd;
    for (;;) {
      const q = this.skipSpace(p);
      const c = b.charCodeAt(q);
      if (c === 62 /* > */) {
        p = q + 1;
        break;
      }
      if (q === p || q >= close) refuse('an unusual record start tag');
      const e = this.nameEnd(q);
      const attr = b.slice(q, e);
      if (attr === 'xmlns') refuse('a namespace declaration on a record');
      if (b.charCodeAt(e) !== 61 /* = */) refuse('an unusual attribute');
      const quote = b.charCodeAt(e + 1);
      if (quote !== 34 && quote !== 39) refuse('an unusual attribute');
      const vEnd = b.indexOf(quote === 34 ? '"' : "'", e + 2);
      if (vEnd < 0 || vEnd > close) refuse('an unusual attribute');
      const value = attributeValue(b.slice(e + 2, vEnd));
      const slot = this.recordNameOf(attr);
      if (slot.attrStamp === stamp) refuse('an attribute twice');
      slot.attrStamp = stamp;
      slot.leaf ??= {
        index: this.columnOf(`/${attr}`, recordCandidates(recordName, attr), `${recordName}.${attr}`),
        name: attr,
        next: undefined,
        stamp: 0,
      };
      const index = slot.leaf.index;
      if (values[index] === undefined) values[index] = value;
      p = vEnd + 1;
    }
    // Children: leaves and groups of leaves.
    let guess = this.firstChild;
    let previous: RecordName | undefined;
    for (;;) {
      p = this.skipSpace(p);
      if (p === close) break;
      if (b.charCodeAt(p) !== 60 || p > close) refuse('text beside the elements of a record');
      // The child that came here in the previous record, if it is the same name; else look it up.
      let slot: RecordName;
      let e: number;
      if (guess !== undefined && isNameAt(b, guess.name, p + 1)) {
        slot = guess;
        e = p + 1 + guess.name.length;
      } else {
        e = this.nameEnd(p + 1);
        slot = this.recordNameOf(b.slice(p + 1, e));
      }
      if (previous === undefined) this.firstChild = slot;
      else previous.next = slot;
      previous = slot;
      guess = slot.next;
      const name = slot.name;
      if (slot.stamp === stamp) refuse('a repeated element');
      slot.stamp = stamp;
      const c = b.charCodeAt(e);
      if (c === 47 /* / */) {
        if (b.charCodeAt(e + 1) !== 62) refuse('an unusual empty element');
        this.putRecordLeaf(slot, name, '');
        p = e + 2;
        continue;
      }
      if (c !== 62) refuse('attributes on an element inside a record');
      const lt = b.indexOf('<', e + 1);
      if (lt < 0 || lt > close) refuse('an unclosed element inside a record');
      if (b.charCodeAt(lt + 1) === 47) {
        // A leaf: `<name>text</name>`.
        const after = afterEndTag(b, name, lt);
        this.putRecordLeaf(slot, name, leafValue(b.slice(e + 1, lt)));
        p = after;
        continue;
      }
      // A group: only whitespace before its first child.
      for (let i = e + 1; i < lt; i++) if (!isSpace(b.charCodeAt(i))) refuse('text beside child elements');
      p = this.group(slot, name, lt, close, stamp);
    }
    // Attributes of the enclosing elements, after the record's own (as on the per-row path).
    const container = this.stack[this.stack.length - 1]!;
    if (container.resolved === undefined) {
      container.resolved = container.inherited.map(([k, v]) => ({
        index: this.columnOf(`^${k}`, [k], k),
        value: v,
      }));
    }
    for (const { index, value } of container.resolved) if (values[index] === undefined) values[index] = value;
    if (out === undefined) return;
    const columns = this.set.columns;
    const width = columns.length;
    let line = '';
    for (let i = 0; i < width; i++) {
      const value = values[i];
      if (value === undefined || value === '') line += '\\N\t';
      else {
        const type = columns[i]!.pgType;
        if (type === 'text') line += `${copyField(value)}\t`;
        else {
          const canonical = canonicalCopyValue(type, value);
          if (canonical === undefined) refuse('a value the per-row path must type or reject');
          line += `${canonical}\t`;
        }
      }
    }
    out.push(`${line}${n}\n`);
  }

  /** The children of group `<name>` (its first child's `<` at `p`); the index after `</name>`. */
  private group(slot: RecordName, name: string, p: number, close: number, stamp: number): number {
    const b = this.buf;
    const leaves = (slot.group ??= new Map());
    let guess = slot.firstLeaf;
    let previous: LeafSlot | undefined;
    for (;;) {
      p = this.skipSpace(p);
      if (p >= close || b.charCodeAt(p) !== 60) refuse('text beside child elements');
      if (b.charCodeAt(p + 1) === 47) {
        return afterEndTag(b, name, p);
      }
      let entry: LeafSlot | undefined;
      let e: number;
      if (guess !== undefined && isNameAt(b, guess.name, p + 1)) {
        entry = guess;
        e = p + 1 + guess.name.length;
      } else {
        e = this.nameEnd(p + 1);
        const leafName = b.slice(p + 1, e);
        if (repeatedGroupOf(name)?.item === leafName)
          refuse('a repeated group (its items go to a child table)');
        entry = leaves.get(leafName);
        if (entry === undefined) {
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
      const c = b.charCodeAt(e);
      let value: string;
      if (c === 47) {
        if (b.charCodeAt(e + 1) !== 62) refuse('an unusual empty element');
        value = '';
        p = e + 2;
      } else {
        if (c !== 62) refuse('attributes on an element inside a record');
        const lt = b.indexOf('<', e + 1);
        if (lt < 0 || lt > close || b.charCodeAt(lt + 1) !== 47)
          refuse('elements nested deeper than a group');
        const after = afterEndTag(b, leaf, lt);
        value = leafValue(b.slice(e + 1, lt));
        p = after;
      }
      if (this.values[entry.index] === undefined) this.values[entry.index] = value;
    }
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
        stamp: 0,
        attrStamp: 0,
      };
      this.names.set(name, slot);
    }
    return slot;
  }

  private putRecordLeaf(slot: RecordName, name: string, value: string): void {
    const recordName = this.recordElement;
    slot.leaf ??= {
      index: this.columnOf(`/${name}`, recordCandidates(recordName, name), `${recordName}.${name}`),
      name,
      next: undefined,
      stamp: 0,
    };
    if (this.values[slot.leaf.index] === undefined) this.values[slot.leaf.index] = value;
  }
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
  const scanner = new FastXmlScanner(options.fileName, recordElement, given?.name);
  const guard = <T>(fn: () => T): T => {
    try {
      return fn();
    } catch (error) {
      if (error instanceof Refusal)
        throw refuseFastPath(`the XML file is outside the plain layout (${error.message})`);
      throw error;
    }
  };

  async function* text(chunks: Chunks): AsyncGenerator<string> {
    const decoder = new TextDecoder('utf-8');
    for await (const chunk of chunks)
      yield typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    const last = decoder.decode();
    if (last !== '') yield last;
  }

  if (options.discoverColumns === true) {
    for await (const t of text(open())) {
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

  // Read until the first record is complete (metadata, and the columns of that record).
  const iterator = text(open())[Symbol.asyncIterator]();
  let pending: string[] = [];
  let done = false;
  while (scanner.recordCount === 0 && !done) {
    const next = await iterator.next();
    if (next.done === true) {
      done = true;
      guard(() => {
        scanner.end();
        scanner.scan(pending);
      });
    } else {
      guard(() => {
        scanner.push(next.value);
        scanner.scan(pending);
      });
    }
  }
  if (scanner.metadata === undefined) throw refuseFastPath('the XML file has no root element');
  scanner.freeze();
  // The lines of the records read so far were cut to the columns known at each record: redo them.
  // (Only the first chunk's records; all of them have every column now, so re-scan the chunk.)
  const firstLines = pending;
  pending = [];

  let records = 0;
  async function* chunks(): AsyncGenerator<string> {
    try {
      // Records of the first chunk may have fewer fields than the final column count: pad them.
      const width = scanner.set.columns.length;
      const head: string[] = [];
      for (const line of firstLines) {
        let fields = 1;
        for (let i = line.indexOf('\t'); i >= 0; i = line.indexOf('\t', i + 1)) fields++;
        const missing = width + 1 - fields;
        if (missing <= 0) head.push(line);
        else {
          const cut = line.lastIndexOf('\t');
          head.push(`${line.slice(0, cut)}${'\t\\N'.repeat(missing)}${line.slice(cut)}`);
        }
      }
      records += head.length;
      if (head.length > 0) yield head.join('');
      let out: string[] = [];
      let chars = 0;
      const flush = (): string => {
        const s = out.join('');
        out = [];
        chars = 0;
        return s;
      };
      while (!done) {
        const next = await iterator.next();
        if (next.done === true) {
          done = true;
          guard(() => {
            scanner.end();
            scanner.scan(out);
          });
        } else {
          const before = out.length;
          guard(() => {
            scanner.push(next.value);
            scanner.scan(out);
          });
          for (let i = before; i < out.length; i++) chars += out[i]!.length;
        }
        if (chars >= CHUNK_CHARS || (done && out.length > 0)) {
          records += out.length;
          yield flush();
        }
      }
      if (out.length > 0) {
        records += out.length;
        yield flush();
      }
    } finally {
      if (!done) await iterator.return?.(undefined);
    }
  }

  return {
    metadata: scanner.metadata,
    columns: scanner.set.columns,
    unknownColumns: scanner.set.unknownColumns,
    body: { chunks: chunks(), records: () => records },
  };
}
