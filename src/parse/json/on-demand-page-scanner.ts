/**
 * A byte scanner for big on-demand pages (purchase-refund-details: 2,000 records in six sections,
 * ≈ 2.9 MB a page): it writes each section's records as the COPY text lines that
 * `JSON.parse` → the page check → `parseOnDemandResponse` → `CopyTextSpool.writePage` would write,
 * byte for byte, without building a JavaScript object per record or a string per value. On a
 * Purchase and Refund Detail load those objects were most of the main thread's time (the parse,
 * the typed values, the cells and the garbage collector promoting each page's objects).
 *
 * It answers only for pages in the common shape and returns `undefined` for anything else, so
 * that the caller takes the page through the ordinary path, which types, keeps apart or rejects
 * each record with its own messages, or fails with its own error:
 *  - the bytes are not valid UTF-8, start with a byte order mark, or are not one JSON object;
 *  - a section is not an array of objects, or appears twice;
 *  - an item has a key its section does not declare (a new column), a key twice, or a value that
 *    is not a string or null;
 *  - a value its column cannot take (the coercer says INVALID), a NUL character, or an empty
 *    natural key (such records are rejected or kept apart by the ordinary path);
 *  - a declared top-level number that is not a JSON number or null.
 * Top-level keys it does not know are checked as JSON and skipped, as the ordinary path ignores them.
 *
 * Values are written as the ordinary path writes them: a string without escapes is valid UTF-8
 * without control characters or backslashes (JSON forbids them raw), so its bytes are its COPY text
 * cell (`\N` when empty); a numeric already in canonical form and a UTC timestamp in the coercer's
 * fast form are copied (the latter with `.000` added as the coercer adds it); any other value is
 * decoded and goes through the very coercer and cell encoder of the ordinary path.
 */
import { isUtf8 } from 'node:buffer';
import { INVALID, coercerFor } from '../../catalog/index.js';
import type { Coercer, PgType } from '../../catalog/index.js';
import { canonicalDecimal, writeDecimal } from '../../copy-text/canonical-bytes.js';
import { COPY_NULL, encodeCopyValue } from '../../copy-text/cell-encoders.js';
import { releaseBuffer } from '../../spool/release-buffer.js';

export interface ScanField {
  /** JSON key in the item. */
  readonly key: string;
  readonly pgType: PgType;
}

export interface ScanSection {
  /** JSON key of the section's array in the page. */
  readonly key: string;
  readonly fields: readonly ScanField[];
  /** Indexes of fields that must not be null (the table's natural key). */
  readonly required: readonly number[];
}

export interface ScanPlan {
  readonly sections: readonly ScanSection[];
  /** Top-level keys whose value must be a JSON number or null (else the page is not answered). */
  readonly numbers: readonly string[];
  /** The section whose item count is the page's record count, and its field of the record id. */
  readonly counted: { readonly section: number; readonly field: number };
}

export interface ScannedSection {
  /** Byte range of the section's lines in ScannedPage.lines. */
  readonly start: number;
  readonly end: number;
  /** Items (= lines); 0 when the section is absent or empty. */
  readonly count: number;
}

export interface ScannedPage {
  /** Every section's COPY text lines, one section after the other. */
  readonly lines: Buffer;
  /** By plan section. */
  readonly sections: readonly ScannedSection[];
  /** Items in the counted section. */
  readonly records: number;
  /** The id of the counted section's first and last item (undefined when not a string). */
  readonly firstId: string | undefined;
  readonly lastId: string | undefined;
}

const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const QUOTE = 0x22;
const COMMA = 0x2c;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const COLON = 0x3a;
const BRACKET_OPEN = 0x5b;
const BACKSLASH = 0x5c;
const BRACKET_CLOSE = 0x5d;
const BRACE_OPEN = 0x7b;
const BRACE_CLOSE = 0x7d;

/** Value kinds of an item's fields while it is scanned. */
const ABSENT = 0;
const NULL = 1;
const STRING = 2;
/** A string with escapes: decoded by JSON.parse. */
const ESCAPED = 3;

/** Column kinds with a byte-level fast form. */
const TEXT = 0;
const NUMERIC = 1;
const TIMESTAMPTZ = 2;
const OTHER = 3;

/** Thrown inside the scanner when the page is not in the common shape (caught by scan()). */
class NotAnswered {}
const NOT_ANSWERED = new NotAnswered();

interface CompiledSection {
  key: string;
  fieldKeys: Buffer[];
  /** Each field key followed by its closing quote, as little-endian 32-bit words (see matches). */
  fieldWords: Uint32Array[];
  kinds: Uint8Array;
  coercers: Coercer[];
  required: readonly number[];
}

const MILLIS_Z = Buffer.from('.000Z', 'latin1');
const MILLIS_DV = new DataView(MILLIS_Z.buffer, MILLIS_Z.byteOffset, MILLIS_Z.length);
const EMPTY = Buffer.alloc(0);
const EMPTY_VIEW: DataView<ArrayBufferLike> = new DataView(EMPTY.buffer, EMPTY.byteOffset, 0);

export class OnDemandPageScanner {
  private readonly sections: CompiledSection[];
  private readonly sectionIndex = new Map<string, number>();
  private readonly numbers: ReadonlySet<string>;
  private readonly counted: ScanPlan['counted'];
  private readonly maxFields: number;

  // Scan state (one page at a time).
  private b: Buffer = EMPTY;
  /** The same bytes, read four at a time (matches, the string scan in item). */
  private dv = EMPTY_VIEW;
  private i = 0;
  private out: Buffer = EMPTY;
  /** `out`, written four bytes at a time (copy). */
  private odv = EMPTY_VIEW;
  private readonly buffers: Buffer[] = [EMPTY, EMPTY];
  private input: Buffer = EMPTY;
  private turn = 0;
  private o = 0;
  private readonly kind: Uint8Array;
  private readonly vs: Int32Array;
  private readonly ve: Int32Array;
  /** Fields written as NULL in the current line (for the required check). */
  private readonly nulls: Uint8Array;
  private firstId: string | undefined;
  private lastIdKind = ABSENT;
  private lastIdStart = 0;
  private lastIdEnd = 0;

  constructor(plan: ScanPlan) {
    this.sections = plan.sections.map((s, index) => {
      this.sectionIndex.set(s.key, index);
      return {
        key: s.key,
        fieldKeys: s.fields.map((f) => Buffer.from(f.key, 'utf8')),
        fieldWords: s.fields.map((f) => keyWords(Buffer.from(`${f.key}"`, 'utf8'))),
        kinds: Uint8Array.from(s.fields.map((f) => columnKind(f.pgType))),
        coercers: s.fields.map((f) => coercerFor(f.pgType)),
        required: s.required,
      };
    });
    this.numbers = new Set(plan.numbers);
    this.counted = plan.counted;
    this.maxFields = Math.max(1, ...plan.sections.map((s) => s.fields.length));
    this.kind = new Uint8Array(this.maxFields);
    this.vs = new Int32Array(this.maxFields);
    this.ve = new Int32Array(this.maxFields);
    this.nulls = new Uint8Array(this.maxFields);
  }

  /**
   * The page's lines, each section's records numbered from `bases[section] + 1`; undefined when
   * the page is not in the common shape (see the module comment).
   *
   * The lines are written into one of two buffers kept from call to call (V8 counts buffers
   * towards its old generation's limit: fresh ones per page meant more mark-compacts): they stay
   * as they are until the call after next, by which time the caller must be done with them
   * (OnDemandSpools waits for the writes of a page before the next but one is scanned).
   */
  scan(page: Buffer | readonly Buffer[], bases: readonly number[]): ScannedPage | undefined {
    const bytes = Buffer.isBuffer(page) ? page : this.joined(page);
    if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return undefined;
    if (!isUtf8(bytes)) return undefined;
    this.b = bytes;
    this.dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
    this.i = 0;
    this.turn ^= 1;
    this.out = this.buffers[this.turn]!;
    this.odv = new DataView(this.out.buffer, this.out.byteOffset, this.out.length);
    this.o = 0;
    this.firstId = undefined;
    this.lastIdKind = ABSENT;
    try {
      const sections = this.page(bases);
      const counted = sections[this.counted.section]!;
      const lastId =
        counted.count > 0 ? this.decodedString(this.lastIdKind, this.lastIdStart, this.lastIdEnd) : undefined;
      return {
        lines: this.out.subarray(0, this.o),
        sections,
        records: counted.count,
        firstId: this.firstId,
        lastId,
      };
    } catch (error) {
      if (error === NOT_ANSWERED) return undefined;
      throw error;
    } finally {
      // ensure() may have grown it.
      this.buffers[this.turn] = this.out;
      this.b = EMPTY;
      this.dv = EMPTY_VIEW;
      this.out = EMPTY;
    }
  }

  /**
   * Give back the buffers kept from page to page (releaseBuffer), once the lines of the last page
   * scanned are written out; a later scan makes new ones.
   */
  release(): void {
    for (const buffer of [...this.buffers, this.input]) releaseBuffer(buffer);
    this.buffers[0] = EMPTY;
    this.buffers[1] = EMPTY;
    this.input = EMPTY;
  }

  /** Chunks copied into one buffer kept from call to call (the bytes are read within the call). */
  private joined(chunks: readonly Buffer[]): Buffer {
    let length = 0;
    for (const chunk of chunks) length += chunk.length;
    if (this.input.length < length) {
      releaseBuffer(this.input);
      this.input = Buffer.allocUnsafeSlow(Math.max(length, this.input.length * 2));
    }
    let at = 0;
    for (const chunk of chunks) at += chunk.copy(this.input, at);
    return this.input.subarray(0, length);
  }

  private page(bases: readonly number[]): ScannedSection[] {
    const b = this.b;
    const sections: ScannedSection[] = this.sections.map(() => ({ start: 0, end: 0, count: 0 }));
    const seen = new Set<string>();
    this.ws();
    this.expect(BRACE_OPEN);
    this.ws();
    if (b[this.i] === BRACE_CLOSE) {
      this.i++;
    } else {
      for (;;) {
        if (b[this.i] !== QUOTE) throw NOT_ANSWERED;
        const key = this.key();
        this.ws();
        this.expect(COLON);
        this.ws();
        const index = this.sectionIndex.get(key);
        if (index !== undefined) {
          if (seen.has(key)) throw NOT_ANSWERED;
          seen.add(key);
          const start = this.o;
          const count = this.items(index, bases[index] ?? 0);
          sections[index] = { start, end: this.o, count };
        } else if (this.numbers.has(key)) {
          if (seen.has(key)) throw NOT_ANSWERED;
          seen.add(key);
          if (b[this.i] === 0x6e /* n */) this.literal('null');
          else this.number();
        } else {
          this.skipValue(0);
        }
        if (!this.more(BRACE_CLOSE)) break;
      }
    }
    this.ws();
    if (this.i !== b.length) throw NOT_ANSWERED;
    return sections;
  }

  /** The items of one section's array, written as lines; their count. */
  private items(index: number, base: number): number {
    const b = this.b;
    const section = this.sections[index]!;
    this.expect(BRACKET_OPEN);
    this.ws();
    if (b[this.i] === BRACKET_CLOSE) {
      this.i++;
      return 0;
    }
    const counted = index === this.counted.section;
    const idField = this.counted.field;
    let count = 0;
    for (;;) {
      if (b[this.i] !== BRACE_OPEN) throw NOT_ANSWERED;
      this.item(section);
      count++;
      if (counted) {
        if (count === 1)
          this.firstId = this.decodedString(this.kind[idField]!, this.vs[idField]!, this.ve[idField]!);
        this.lastIdKind = this.kind[idField]!;
        this.lastIdStart = this.vs[idField]!;
        this.lastIdEnd = this.ve[idField]!;
      }
      this.line(section, base + count);
      if (!this.more(BRACKET_CLOSE)) return count;
    }
  }

  /** One item's fields into kind/vs/ve (positions of string contents). */
  private item(section: CompiledSection): void {
    const b = this.b;
    const dv = this.dv;
    const length = b.length;
    const keys = section.fieldKeys;
    const words = section.fieldWords;
    const n = keys.length;
    const kind = this.kind;
    const vs = this.vs;
    const ve = this.ve;
    kind.fill(ABSENT, 0, n);
    let i = skipWs(b, this.i + 1); // after {
    if (b[i] === BRACE_CLOSE) {
      this.i = i + 1;
      return;
    }
    let next = 0;
    for (;;) {
      if (b[i] !== QUOTE) throw NOT_ANSWERED;
      const keyStart = i + 1;
      // The field expected next (items list their keys in the declared order), else any.
      let f = next < n && isKeyAt(dv, b, keyStart, keys[next]!, words[next]!) ? next : -1;
      if (f < 0) {
        for (let k = 0; k < n; k++) {
          if (isKeyAt(dv, b, keyStart, keys[k]!, words[k]!)) {
            f = k;
            break;
          }
        }
        if (f < 0) throw NOT_ANSWERED;
      }
      if (kind[f] !== ABSENT) throw NOT_ANSWERED;
      i = keyStart + keys[f]!.length + 1;
      next = f + 1;
      if (b[i] !== COLON) {
        i = skipWs(b, i);
        if (b[i] !== COLON) throw NOT_ANSWERED;
      }
      i++;
      let c = b[i];
      if (c !== QUOTE && c !== 0x6e /* n */) {
        i = skipWs(b, i);
        c = b[i];
      }
      if (c === QUOTE) {
        const start = i + 1;
        let j = start;
        let escaped = false;
        for (;;) {
          // Four bytes at a time while none of them is a quote, a backslash or a control character.
          if (j + 4 <= length) {
            const x = dv.getUint32(j, true);
            const q = x ^ 0x22222222;
            const r = x ^ 0x5c5c5c5c;
            if (
              ((((x - 0x20202020) & ~x) | ((q - 0x01010101) & ~q) | ((r - 0x01010101) & ~r)) & 0x80808080) ===
              0
            ) {
              j += 4;
              continue;
            }
          }
          const d = b[j];
          if (d === QUOTE) break;
          if (d === undefined || d < SPACE) throw NOT_ANSWERED;
          if (d === BACKSLASH) {
            escaped = true;
            j++;
          }
          j++;
        }
        kind[f] = escaped ? ESCAPED : STRING;
        vs[f] = start;
        ve[f] = j;
        i = j + 1;
      } else if (c === 0x6e && b[i + 1] === 0x75 && b[i + 2] === 0x6c && b[i + 3] === 0x6c) {
        kind[f] = NULL;
        i += 4;
      } else {
        throw NOT_ANSWERED;
      }
      let e = b[i];
      if (e !== COMMA && e !== BRACE_CLOSE) {
        i = skipWs(b, i);
        e = b[i];
      }
      if (e === COMMA) {
        i++;
        if (b[i] !== QUOTE) i = skipWs(b, i);
        continue;
      }
      if (e === BRACE_CLOSE) {
        this.i = i + 1;
        return;
      }
      throw NOT_ANSWERED;
    }
  }

  /** The current item as one COPY text line, `recordNumber` last. */
  private line(section: CompiledSection, recordNumber: number): void {
    const b = this.b;
    const n = section.fieldKeys.length;
    const kind = this.kind;
    const vs = this.vs;
    const ve = this.ve;
    const nulls = this.nulls;
    let need = 32;
    for (let f = 0; f < n; f++) need += (kind[f] === STRING ? ve[f]! - vs[f]! : 0) + 8;
    this.ensure(need);
    const dv = this.dv;
    let out = this.out;
    let odv = this.odv;
    let o = this.o;
    for (let f = 0; f < n; f++) {
      if (f > 0) out[o++] = TAB;
      const k = kind[f]!;
      nulls[f] = 0;
      if (k === ABSENT || k === NULL) {
        out[o++] = BACKSLASH;
        out[o++] = 0x4e; // N
        nulls[f] = 1;
        continue;
      }
      const s = vs[f]!;
      const e = ve[f]!;
      if (k === STRING) {
        if (s === e) {
          out[o++] = BACKSLASH;
          out[o++] = 0x4e;
          nulls[f] = 1;
          continue;
        }
        const type = section.kinds[f];
        if (type === TEXT || (type === NUMERIC && canonicalDecimal(b, s, e))) {
          o = copyBytes(dv, b, s, e, odv, out, o);
          continue;
        }
        if (type === TIMESTAMPTZ) {
          const form = utcTimestampForm(b, s, e);
          if (form === 24) {
            o = copyBytes(dv, b, s, e, odv, out, o);
            continue;
          }
          if (form === 20) {
            o = copyBytes(dv, b, s, s + 19, odv, out, o);
            o = copyBytes(MILLIS_DV, MILLIS_Z, 0, 5, odv, out, o);
            continue;
          }
        }
      }
      // Anything else: decoded, then the ordinary path's coercer and encoder.
      const value = this.decodedString(k, s, e)!;
      const typed = section.coercers[f]!(value);
      if (typed === INVALID) throw NOT_ANSWERED;
      const cell = encodeCopyValue(typed);
      if (cell === undefined) throw NOT_ANSWERED;
      if (cell === COPY_NULL) nulls[f] = 1;
      this.o = o;
      // The rest of the line fits too (`need` counted only the strings' bytes).
      this.ensure(Buffer.byteLength(cell, 'utf8') + need);
      out = this.out;
      odv = this.odv;
      o = this.o + out.write(cell, this.o, 'utf8');
    }
    for (const r of section.required) if (nulls[r] === 1) throw NOT_ANSWERED;
    out[o++] = TAB;
    o = writeDecimal(out, o, recordNumber);
    out[o++] = LF;
    this.o = o;
  }

  /** A field's string value (STRING or ESCAPED), undefined for null or absent. */
  private decodedString(kind: number, start: number, end: number): string | undefined {
    if (kind === STRING) return this.b.toString('utf8', start, end);
    if (kind !== ESCAPED) return undefined;
    try {
      return JSON.parse(this.b.toString('utf8', start - 1, end + 1)) as string;
    } catch {
      throw NOT_ANSWERED;
    }
  }

  private ensure(bytes: number): void {
    if (this.o + bytes <= this.out.length) return;
    // Lines are shorter than the items they come from: the first page's size is a good start.
    const grown = Buffer.allocUnsafeSlow(
      Math.max(this.out.length * 2, this.o + bytes, this.b.length >> 1, 1024),
    );
    this.out.copy(grown, 0, 0, this.o);
    // This page's lines so far, not handed out yet: nothing else points into the buffer.
    releaseBuffer(this.out);
    this.out = grown;
    this.odv = new DataView(grown.buffer, grown.byteOffset, grown.length);
  }

  private ws(): void {
    this.i = skipWs(this.b, this.i);
  }

  /**
   * After a member of an object or array: true past a comma (another member follows), false past
   * `close`; anything else is not JSON.
   */
  private more(close: number): boolean {
    this.ws();
    const c = this.b[this.i];
    if (c === COMMA) {
      this.i++;
      this.ws();
      return true;
    }
    if (c !== close) throw NOT_ANSWERED;
    this.i++;
    return false;
  }

  private expect(c: number): void {
    if (this.b[this.i] !== c) throw NOT_ANSWERED;
    this.i++;
  }

  private literal(word: string): void {
    for (let k = 0; k < word.length; k++) {
      if (this.b[this.i + k] !== word.charCodeAt(k)) throw NOT_ANSWERED;
    }
    this.i += word.length;
  }

  /** A top-level key (decoded exactly as JSON.parse would). */
  private key(): string {
    const start = this.i;
    this.skipString();
    const raw = this.b.toString('utf8', start, this.i);
    return raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
  }

  /** A JSON string at i (validated, escapes included). */
  private skipString(): void {
    const b = this.b;
    let j = this.i + 1;
    for (;;) {
      const d = b[j];
      if (d === QUOTE) break;
      if (d === undefined || d < SPACE) throw NOT_ANSWERED;
      if (d === BACKSLASH) {
        const e = b[j + 1];
        if (e === 0x75 /* u */) {
          for (let k = 2; k < 6; k++) if (!isHex(b[j + k])) throw NOT_ANSWERED;
          j += 6;
          continue;
        }
        // " \ / b f n r t
        if (
          e !== QUOTE &&
          e !== BACKSLASH &&
          e !== 0x2f &&
          e !== 0x62 &&
          e !== 0x66 &&
          e !== 0x6e &&
          e !== 0x72 &&
          e !== 0x74
        )
          throw NOT_ANSWERED;
        j += 2;
        continue;
      }
      j++;
    }
    this.i = j + 1;
  }

  /** A JSON number at i (RFC 8259 grammar). */
  private number(): void {
    const b = this.b;
    let j = this.i;
    if (b[j] === MINUS) j++;
    if (b[j] === ZERO) j++;
    else if (isDigit19(b[j])) while (isDigit(b[j])) j++;
    else throw NOT_ANSWERED;
    if (b[j] === DOT) {
      j++;
      if (!isDigit(b[j])) throw NOT_ANSWERED;
      while (isDigit(b[j])) j++;
    }
    if (b[j] === 0x65 || b[j] === 0x45) {
      j++;
      if (b[j] === 0x2b || b[j] === MINUS) j++;
      if (!isDigit(b[j])) throw NOT_ANSWERED;
      while (isDigit(b[j])) j++;
    }
    this.i = j;
  }

  /** Any JSON value at i, checked and skipped. */
  private skipValue(depth: number): void {
    if (depth > 64) throw NOT_ANSWERED;
    const b = this.b;
    const c = b[this.i];
    if (c === QUOTE) return this.skipString();
    if (c === 0x6e) return this.literal('null');
    if (c === 0x74) return this.literal('true');
    if (c === 0x66) return this.literal('false');
    if (c === BRACE_OPEN || c === BRACKET_OPEN) {
      const close = c === BRACE_OPEN ? BRACE_CLOSE : BRACKET_CLOSE;
      this.i++;
      this.ws();
      if (b[this.i] === close) {
        this.i++;
        return;
      }
      for (;;) {
        if (c === BRACE_OPEN) {
          if (b[this.i] !== QUOTE) throw NOT_ANSWERED;
          this.skipString();
          this.ws();
          this.expect(COLON);
          this.ws();
        }
        this.skipValue(depth + 1);
        if (!this.more(close)) return;
      }
    }
    return this.number();
  }
}

/** The offset of the first byte at or after `i` that is not JSON whitespace. */
function skipWs(b: Buffer, i: number): number {
  for (;;) {
    const c = b[i];
    if (c === SPACE || c === LF || c === CR || c === TAB) i++;
    else return i;
  }
}

function columnKind(pgType: PgType): number {
  if (pgType === 'text') return TEXT;
  if (pgType === 'numeric') return NUMERIC;
  if (pgType === 'timestamptz') return TIMESTAMPTZ;
  return OTHER;
}

const isDigit = (c: number | undefined): boolean => c !== undefined && c >= ZERO && c <= NINE;
const isDigit19 = (c: number | undefined): boolean => c !== undefined && c > ZERO && c <= NINE;
const isHex = (c: number | undefined): boolean =>
  c !== undefined && ((c >= ZERO && c <= NINE) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66));

/**
 * Whether the bytes at `at` are `key` followed by the closing quote: compared four bytes at a time
 * with `words` (keyWords of the key and its quote), then byte by byte.
 */
function isKeyAt(dv: DataView, b: Buffer, at: number, key: Buffer, words: Uint32Array): boolean {
  const n = key.length;
  if (at + n >= b.length || b[at + n] !== QUOTE) return false;
  const w = words.length;
  for (let k = 0; k < w; k++) if (dv.getUint32(at + 4 * k, true) !== words[k]) return false;
  for (let k = 4 * w; k < n; k++) if (b[at + k] !== key[k]) return false;
  return true;
}

/** The whole 32-bit little-endian words of `bytes` (the bytes after the last whole word are left out). */
function keyWords(bytes: Buffer): Uint32Array {
  const words = new Uint32Array(bytes.length >> 2);
  for (let k = 0; k < words.length; k++) words[k] = bytes.readUInt32LE(4 * k);
  return words;
}

/** Bytes s..e of `from` into `to` at o (`fdv`, `tdv`: the same buffers as DataViews); the end in `to`. */
function copyBytes(
  fdv: DataView,
  from: Buffer,
  s: number,
  e: number,
  tdv: DataView,
  to: Buffer,
  o: number,
): number {
  const n = e - s;
  if (n > 64) return o + from.copy(to, o, s, e);
  let k = 0;
  for (; k + 4 <= n; k += 4) tdv.setUint32(o + k, fdv.getUint32(s + k, true), true);
  for (; k < n; k++) to[o + k] = from[s + k]!;
  return o + n;
}

/** Two digits at `at` as a number, -1 when not digits. */
function twoDigitValue(b: Buffer, at: number): number {
  const x = b[at]! - ZERO;
  const y = b[at + 1]! - ZERO;
  return x >= 0 && x <= 9 && y >= 0 && y <= 9 ? x * 10 + y : -1;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * 20 for a valid `YYYY-MM-DDTHH:MM:SSZ`, 24 for a valid `YYYY-MM-DDTHH:MM:SS.sssZ`, 0 otherwise:
 * the values coerceTimestamptz's fast form accepts (and returns, with `.000` added to the first).
 */
function utcTimestampForm(b: Buffer, s: number, e: number): number {
  const len = e - s;
  if ((len !== 20 && len !== 24) || b[e - 1] !== 0x5a /* Z */) return 0;
  if (
    b[s + 4] !== MINUS ||
    b[s + 7] !== MINUS ||
    b[s + 10] !== 0x54 ||
    b[s + 13] !== COLON ||
    b[s + 16] !== COLON
  )
    return 0;
  if (len === 24 && (b[s + 19] !== DOT || !isDigit(b[s + 20]) || !isDigit(b[s + 21]) || !isDigit(b[s + 22])))
    return 0;
  const hi = twoDigitValue(b, s);
  const lo = twoDigitValue(b, s + 2);
  const mo = twoDigitValue(b, s + 5);
  const d = twoDigitValue(b, s + 8);
  const h = twoDigitValue(b, s + 11);
  const mi = twoDigitValue(b, s + 14);
  const sec = twoDigitValue(b, s + 17);
  if (
    hi < 0 ||
    lo < 0 ||
    mo < 1 ||
    mo > 12 ||
    d < 1 ||
    h < 0 ||
    h > 23 ||
    mi < 0 ||
    mi > 59 ||
    sec < 0 ||
    sec > 59
  )
    return 0;
  const y = hi * 100 + lo;
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const max = mo === 2 && leap ? 29 : DAYS_IN_MONTH[mo - 1]!;
  return d <= max ? len : 0;
}
