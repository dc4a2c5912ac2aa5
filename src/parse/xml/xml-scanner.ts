/**
 * A small incremental XML scanner that finds record elements (e.g. `<Request …>…</Request>`) in a
 * stream of text chunks without holding the document: only the record being read (plus the chunk
 * it arrived in) is buffered. It tokenises just enough XML to do that safely — start tags with
 * quoted attribute values (which may contain `>`), self-closing tags, end tags, comments, CDATA
 * sections, processing instructions and the DOCTYPE (internal subset included), across chunk
 * boundaries — and checks that tags nest properly. Each record's text is then parsed on its own.
 *
 * The DOCTYPE is skipped, never interpreted: entity declarations are not expanded (billion-laughs
 * safe); a DOCTYPE or an `<!ENTITY` inside a record is malformed. A record that refers to any
 * entity but the five XML ones, or to a character XML does not allow, carries that as its
 * `problem` (a reject); in an attribute of an element enclosing records it is malformed.
 *
 * Namespaces: the root element's namespace is the report's. Records are elements of it, inside
 * elements of it; elements of another namespace (and what they enclose) are not records, and a
 * record holding one (or a prefixed attribute of one) carries that as its `problem`. A prefix
 * nobody declared is malformed.
 *
 * Bounds (hostile or broken files): a record, or a tag/comment/declaration outside records, larger
 * than {@link MAX_XML_RECORD_CHARS} characters, and elements nested deeper than
 * {@link MAX_XML_DEPTH}, are malformed — so memory stays bounded whatever the file holds.
 */

/** The largest record (or single token outside records) the scanner buffers: 8 Mi characters (a real record is a few KiB). */
export const MAX_XML_RECORD_CHARS = 8 * 1024 * 1024;
/** The deepest element nesting accepted (reports nest about five levels). */
export const MAX_XML_DEPTH = 256;

export interface ScannedRecord {
  /** 1-based position of the record element in the document. */
  recordNumber: number;
  /** The record element's text, from `<Request` to its end tag. */
  text: string;
  /** Attributes of the enclosing elements below the root, as [`Element.Attribute`, value]. */
  inherited: readonly (readonly [string, string])[];
  /**
   * Why the record cannot be read as it is written (a reference to an undefined entity or to a
   * character XML does not allow, an element or attribute of another namespace): a reject.
   */
  problem?: string;
}

export class XmlScanError extends Error {
  constructor(
    message: string,
    readonly recordNumber: number,
    readonly offset: number,
  ) {
    super(message);
  }
}

/** Namespace bindings in scope: prefix → namespace name (`''`: the default namespace). */
type Scope = ReadonlyMap<string, string>;

interface OpenElement {
  name: string;
  inherited: readonly (readonly [string, string])[];
  scope: Scope;
  /** The element, or one enclosing it, is of another namespace than the report's root. */
  foreign: boolean;
}

const NAME_END = /[\s/>]/;
const ATTRIBUTE = /([^\s=/>]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;

export function localName(name: string): string {
  const colon = name.indexOf(':');
  return colon < 0 ? name : name.slice(colon + 1);
}

const ENTITY = /&(?:#(\d+)|#x([0-9a-fA-F]+)|(amp|lt|gt|quot|apos));/g;
const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** Decode the five XML entities and character references (nothing else is ever expanded). */
export function decodeXmlText(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(
    ENTITY,
    (whole, dec: string | undefined, hex: string | undefined, named: string | undefined) => {
      if (named !== undefined) return NAMED[named]!;
      const code = dec !== undefined ? Number(dec) : parseInt(hex!, 16);
      return code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    },
  );
}

/** Whether `code` is a character XML 1.0 allows in a document. */
export function isXmlChar(code: number): boolean {
  return (
    code === 9 ||
    code === 10 ||
    code === 13 ||
    (code >= 0x20 && code <= 0xd7ff) ||
    (code >= 0xe000 && code <= 0xfffd) ||
    (code >= 0x10000 && code <= 0x10ffff)
  );
}

const REFERENCE = /&(?:#([0-9]{1,8});|#x([0-9a-fA-F]{1,8});|(amp|lt|gt|quot|apos);)?/y;
const SHOWN_REFERENCE = /&[^\s&<;]{0,20};?/y;

/**
 * The first `&` in `text` (markup of a record, a tag) that is not one of the five XML entities or a
 * reference to a character XML allows, as a sentence; undefined when there is none. CDATA sections
 * and comments are skipped (their `&` is text).
 */
export function referenceProblem(text: string): string | undefined {
  let at = text.indexOf('&');
  if (at < 0) return undefined;
  let markup = text.indexOf('<!');
  while (at >= 0) {
    // A CDATA section or comment before the `&`: skip it (and any `&` inside it).
    while (markup >= 0 && markup < at) {
      const cdata = text.startsWith('<![CDATA[', markup);
      const close = cdata ? text.indexOf(']]>', markup) : text.indexOf('-->', markup);
      if (close < 0) return undefined;
      if (close > at) at = text.indexOf('&', close);
      markup = text.indexOf('<!', close);
      if (at < 0) return undefined;
    }
    REFERENCE.lastIndex = at;
    const m = REFERENCE.exec(text)!;
    SHOWN_REFERENCE.lastIndex = at;
    const shown = SHOWN_REFERENCE.exec(text)?.[0] ?? '&';
    if (m[0] === '&')
      return /^&[A-Za-z_][\w.-]*;$/.test(shown)
        ? `the entity ${shown} is not defined (only &amp; &lt; &gt; &quot; &apos; are)`
        : `the & of ${JSON.stringify(shown)} does not start a reference (&amp; would)`;
    if (m[3] === undefined) {
      const code = m[1] !== undefined ? Number(m[1]) : parseInt(m[2]!, 16);
      if (!isXmlChar(code)) return `the character reference ${m[0]} is not a character XML allows`;
    }
    at = text.indexOf('&', at + m[0].length);
  }
  return undefined;
}

/** A sentence when an attribute appears twice in the start tag `tag` (from the name on) of `name`. */
export function duplicateAttribute(name: string, tag: string): string | undefined {
  const first = tag.indexOf('=');
  if (first < 0 || tag.indexOf('=', first + 1) < 0) return undefined;
  const seen = new Set<string>();
  for (const [k] of parseAttributes(tag.slice(name.length))) {
    if (seen.has(k)) return `the attribute ${k} appears twice in <${name}>`;
    seen.add(k);
  }
  return undefined;
}

export function parseAttributes(tag: string): [string, string][] {
  const out: [string, string][] = [];
  ATTRIBUTE.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = ATTRIBUTE.exec(tag)) !== null) out.push([m[1]!, decodeXmlText(m[2] ?? m[3] ?? '')]);
  return out;
}

export class XmlRecordScanner {
  private buf = '';
  private pos = 0;
  /** Characters dropped from the front of `buf` so far (for offsets in errors). */
  private dropped = 0;
  private readonly stack: OpenElement[] = [];
  private recordStart = -1;
  private recordDepth = 0;
  private recordInherited: readonly (readonly [string, string])[] = [];
  /** Why the record being read is a reject (first problem found), if it is one. */
  private recordProblem: string | undefined;
  /** The namespace of the root element: the report's own (records are elements of it). */
  private reportNamespace = '';
  private ended = false;
  private rootClosed = false;
  recordCount = 0;
  rootName: string | undefined;
  rootAttributes: [string, string][] = [];

  constructor(
    private readonly recordElement: string,
    private readonly maxRecordChars = MAX_XML_RECORD_CHARS,
  ) {}

  push(chunk: string): void {
    this.buf += chunk;
  }

  end(): void {
    this.ended = true;
  }

  get sawRoot(): boolean {
    return this.rootName !== undefined;
  }

  private fail(message: string, at: number): never {
    const inRecord = this.recordStart >= 0;
    const n = inRecord ? this.recordCount : this.recordCount + 1;
    throw new XmlScanError(
      `${message} (${inRecord ? 'in' : 'after'} record ${inRecord ? n : this.recordCount}, character ${this.dropped + at})`,
      n,
      this.dropped + at,
    );
  }

  /** Compact the buffer, keeping what an incomplete token or the current record still needs. */
  private needMore(at: number): undefined {
    if (this.ended) {
      if (this.recordStart >= 0)
        this.fail(`Unexpected end of document inside <${this.recordElement}>`, this.buf.length);
      if (at < this.buf.length && this.buf.slice(at).trim() !== '')
        this.fail('Unexpected end of document inside a tag', at);
      if (this.stack.length > 0)
        this.fail(
          `Unexpected end of document: <${this.stack[this.stack.length - 1]!.name}> is not closed`,
          at,
        );
      return undefined;
    }
    const keep = this.recordStart >= 0 ? this.recordStart : at;
    if (this.buf.length - keep > this.maxRecordChars) {
      this.fail(
        this.recordStart >= 0
          ? `A <${this.recordElement}> record larger than ${this.maxRecordChars} characters`
          : `A tag, comment or declaration larger than ${this.maxRecordChars} characters`,
        keep,
      );
    }
    if (keep > 0) {
      this.buf = this.buf.slice(keep);
      this.dropped += keep;
      if (this.recordStart >= 0) this.recordStart = 0;
      this.pos = at - keep;
    } else {
      this.pos = at;
    }
    return undefined;
  }

  private checkText(from: number, to: number): void {
    // Text outside the root element must be whitespace.
    if (this.stack.length === 0 && this.recordStart < 0) {
      for (let i = from; i < to; i++) {
        const c = this.buf.charCodeAt(i);
        if (c !== 32 && c !== 10 && c !== 13 && c !== 9 && c !== 0xfeff)
          this.fail('Text outside the root element', i);
      }
    }
  }

  /**
   * The namespace bindings in scope inside a start tag (`tag`: from the name to before `>`) and the
   * namespace of its element and of its prefixed attributes that are not declarations.
   */
  private namespacesOf(
    name: string,
    tag: string,
    parent: Scope,
    at: number,
  ): { scope: Scope; namespace: string; attributeNamespaces: string[] } {
    let scope = parent;
    const prefixed: string[] = [];
    if (tag.includes(':') || tag.includes('xmlns')) {
      let declared: Map<string, string> | undefined;
      for (const [k, v] of parseAttributes(tag.slice(name.length))) {
        if (k === 'xmlns' || k.startsWith('xmlns:')) {
          declared ??= new Map(parent);
          declared.set(k === 'xmlns' ? '' : k.slice(6), v);
        } else if (k.includes(':') && !k.startsWith('xml:')) prefixed.push(k.slice(0, k.indexOf(':')));
      }
      if (declared !== undefined) scope = declared;
    }
    const resolve = (prefix: string): string => {
      const namespace = scope.get(prefix);
      if (namespace === undefined && prefix !== '')
        this.fail(`The namespace prefix ${prefix} of <${name}> is not declared`, at);
      return namespace ?? '';
    };
    const colon = name.indexOf(':');
    return {
      scope,
      namespace: resolve(colon < 0 ? '' : name.slice(0, colon)),
      attributeNamespaces: prefixed.map(resolve),
    };
  }

  /** Outside records, a reference XML does not allow in an attribute makes the document unreadable. */
  private checkReferences(name: string, tag: string, at: number): void {
    const problem = referenceProblem(tag) ?? duplicateAttribute(name, tag);
    if (problem !== undefined) this.fail(`In <${name}>, ${problem}`, at);
  }

  /** Why an element inside a record is not the report's, if it is not. */
  private namespaceProblem(
    name: string,
    namespace: string,
    attributeNamespaces: readonly string[],
  ): string | undefined {
    const other =
      namespace !== this.reportNamespace
        ? namespace
        : attributeNamespaces.find((n) => n !== this.reportNamespace);
    if (other === undefined) return undefined;
    return `<${name}> ${namespace === other ? 'is an element' : 'has an attribute'} of the namespace ${JSON.stringify(other)}, not the report's (${JSON.stringify(this.reportNamespace)})`;
  }

  /** End of a start tag beginning at `lt` (quotes respected), or -1. */
  private tagEnd(lt: number): number {
    const buf = this.buf;
    let quote = 0;
    for (let i = lt + 1; i < buf.length; i++) {
      const c = buf.charCodeAt(i);
      if (quote !== 0) {
        if (c === quote) quote = 0;
      } else if (c === 34 || c === 39) quote = c;
      else if (c === 62) return i;
      else if (c === 60) this.fail('Unexpected < inside a tag', i);
    }
    return -1;
  }

  /** End (index after `>`) of a `<!…>` declaration with an optional `[…]` internal subset, or -1. */
  private declEnd(lt: number): number {
    const buf = this.buf;
    let quote = 0;
    let bracket = 0;
    for (let i = lt + 2; i < buf.length; i++) {
      const c = buf.charCodeAt(i);
      if (quote !== 0) {
        if (c === quote) quote = 0;
      } else if (c === 34 || c === 39) quote = c;
      else if (c === 91) bracket++;
      else if (c === 93) bracket--;
      else if (c === 62 && bracket <= 0) return i + 1;
    }
    return -1;
  }

  /** The next complete record, or undefined when more input is needed (or the document ended). */
  next(): ScannedRecord | undefined {
    for (;;) {
      const b = this.buf;
      const lt = b.indexOf('<', this.pos);
      if (lt < 0) {
        this.checkText(this.pos, b.length);
        return this.needMore(b.length);
      }
      this.checkText(this.pos, lt);
      if (lt + 1 >= b.length) {
        return this.needMore(lt);
      }
      const c1 = b.charCodeAt(lt + 1);
      if (c1 === 33 /* ! */) {
        if (b.length - lt < 9 && !this.ended) return this.needMore(lt);
        if (b.startsWith('<!--', lt)) {
          const end = b.indexOf('-->', lt + 4);
          if (end < 0) return this.needMore(lt);
          this.pos = end + 3;
          continue;
        }
        if (b.startsWith('<![CDATA[', lt)) {
          const end = b.indexOf(']]>', lt + 9);
          if (end < 0) return this.needMore(lt);
          if (this.stack.length === 0) this.fail('CDATA outside the root element', lt);
          this.pos = end + 3;
          continue;
        }
        if (this.recordStart >= 0 || this.stack.length > 0)
          this.fail('A DOCTYPE or entity declaration inside the document body', lt);
        const end = this.declEnd(lt);
        if (end < 0) return this.needMore(lt);
        this.pos = end;
        continue;
      }
      if (c1 === 63 /* ? */) {
        const end = b.indexOf('?>', lt + 2);
        if (end < 0) return this.needMore(lt);
        this.pos = end + 2;
        continue;
      }
      if (c1 === 47 /* / */) {
        const end = b.indexOf('>', lt + 2);
        if (end < 0) return this.needMore(lt);
        const name = b.slice(lt + 2, end).trim();
        const open = this.stack.pop();
        if (open === undefined) this.fail(`Unexpected end tag </${name}>`, lt);
        if (open.name !== name) this.fail(`End tag </${name}> does not match <${open.name}>`, lt);
        this.pos = end + 1;
        if (this.stack.length === 0) this.rootClosed = true;
        if (this.recordStart >= 0 && this.stack.length === this.recordDepth) {
          return this.finishRecord(end + 1);
        }
        continue;
      }
      // Start tag.
      const end = this.tagEnd(lt);
      if (end < 0) return this.needMore(lt);
      const selfClosing = b.charCodeAt(end - 1) === 47;
      const tag = b.slice(lt + 1, selfClosing ? end - 1 : end);
      const nameEnd = tag.search(NAME_END);
      const name = nameEnd < 0 ? tag : tag.slice(0, nameEnd);
      if (name === '') this.fail('A tag without a name', lt);
      this.pos = end + 1;
      if (!selfClosing && this.stack.length >= MAX_XML_DEPTH) {
        this.fail(`Elements nested deeper than ${MAX_XML_DEPTH} levels`, lt);
      }
      const parent = this.stack[this.stack.length - 1];
      const { scope, namespace, attributeNamespaces } = this.namespacesOf(
        name,
        tag,
        parent?.scope ?? new Map(),
        lt,
      );
      if (this.recordStart >= 0) {
        // An element or attribute of another namespace inside a record is not the report's.
        // An attribute twice is not XML either (which of its values would be the record's?).
        this.recordProblem ??=
          duplicateAttribute(name, tag) ?? this.namespaceProblem(name, namespace, attributeNamespaces);
        if (!selfClosing) this.stack.push({ name, inherited: this.recordInherited, scope, foreign: false });
        continue;
      }
      if (this.rootClosed) this.fail(`A second root element <${name}>`, lt);
      if (parent === undefined) {
        this.checkReferences(name, tag, lt);
        this.rootName = name;
        this.rootAttributes = parseAttributes(tag.slice(name.length));
        this.reportNamespace = namespace;
        if (selfClosing) this.rootClosed = true;
        else this.stack.push({ name, inherited: [], scope, foreign: false });
        continue;
      }
      // Elements of another namespace (and what they enclose) are not the report's: no records.
      const foreign = parent.foreign || namespace !== this.reportNamespace;
      if (!foreign && localName(name) === this.recordElement) {
        this.recordCount++;
        this.recordStart = lt;
        this.recordInherited = parent.inherited;
        this.recordDepth = this.stack.length;
        this.recordProblem =
          duplicateAttribute(name, tag) ?? this.namespaceProblem(name, namespace, attributeNamespaces);
        if (selfClosing) return this.finishRecord(end + 1);
        this.stack.push({ name, inherited: parent.inherited, scope, foreign });
        continue;
      }
      if (!selfClosing) {
        this.checkReferences(name, tag, lt);
        const attributes = parseAttributes(tag.slice(name.length));
        const ln = localName(name);
        const own = attributes.filter(([k]) => k !== 'xmlns' && !k.startsWith('xmlns:') && !k.includes(':'));
        const inherited =
          foreign || own.length === 0
            ? parent.inherited
            : [...parent.inherited, ...own.map(([k, v]) => [`${ln}.${k}`, v] as const)];
        this.stack.push({ name, inherited, scope, foreign });
      }
    }
  }

  private finishRecord(endIndex: number): ScannedRecord {
    const text = this.buf.slice(this.recordStart, endIndex);
    const record: ScannedRecord = {
      recordNumber: this.recordCount,
      text,
      inherited: this.recordInherited,
    };
    // References in the record's text, its tags' included.
    const problem = this.recordProblem ?? referenceProblem(text);
    if (problem !== undefined) record.problem = problem;
    this.recordStart = -1;
    this.recordProblem = undefined;
    this.pos = endIndex;
    return record;
  }
}
