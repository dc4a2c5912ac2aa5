/**
 * The text encoding of a report file, told by its first bytes, and bytes that are not valid UTF-8.
 *
 *  - A byte order mark says the encoding: UTF-8 (the usual one), UTF-16LE or UTF-16BE (read, as
 *    a spreadsheet's "Unicode text" export writes them). An XML file without a mark that starts
 *    with `<?` in UTF-16 (XML 1.0 appendix F) is UTF-16 too. UTF-32 is refused in one sentence
 *    naming the file (`PARSE_UNSUPPORTED_ENCODING`).
 *  - In a UTF-8 file, a byte that is not part of a valid UTF-8 sequence is never turned into
 *    U+FFFD (two different values would then read alike and merge on a natural key): the CSV
 *    reader gets it as the character U+10FF00 + byte (U+10FF80..U+10FFFF, private-use code points
 *    no report writes) and rejects the record holding it, with the bytes written as `\xNN`.
 */
import { isUtf8 } from 'node:buffer';
import { Transform } from 'node:stream';
import type { TransformCallback } from 'node:stream';
import { parseError } from './records.js';

export type ReportEncoding = 'utf-8' | 'utf-16le' | 'utf-16be';

/**
 * The encoding the first bytes of a file say (at least 4 of them, unless the file is shorter);
 * throws PARSE_UNSUPPORTED_ENCODING for UTF-32.
 */
export function sniffEncoding(head: Uint8Array, fileName: string): ReportEncoding {
  const at = (i: number): number => head[i] ?? -1;
  const utf32 =
    (at(0) === 0xff && at(1) === 0xfe && at(2) === 0 && at(3) === 0) ||
    (at(0) === 0 && at(1) === 0 && at(2) === 0xfe && at(3) === 0xff);
  if (utf32) {
    throw parseError(
      'PARSE_UNSUPPORTED_ENCODING',
      `${fileName}: the file is UTF-32 (its byte order mark says so), which is not supported; save it as UTF-8 or UTF-16.`,
      { file: fileName },
    );
  }
  if ((at(0) === 0xff && at(1) === 0xfe) || (at(0) === 0x3c && at(1) === 0 && at(2) === 0x3f && at(3) === 0))
    return 'utf-16le';
  if ((at(0) === 0xfe && at(1) === 0xff) || (at(0) === 0 && at(1) === 0x3c && at(2) === 0 && at(3) === 0x3f))
    return 'utf-16be';
  return 'utf-8';
}

function invalidUtf16(fileName: string, encoding: ReportEncoding, cause: unknown) {
  return parseError(
    'PARSE_INVALID_ENCODING',
    `${fileName}: the file is not valid ${encoding.toUpperCase()} (its first bytes say ${encoding.toUpperCase()}); it cannot be read.`,
    { file: fileName, encoding },
    cause,
  );
}

/**
 * A TextDecoder for a report file whose encoding its first bytes tell (sniffEncoding): UTF-8 as
 * TextDecoder('utf-8') reads it, UTF-16 strictly (an unpaired surrogate fails the file).
 */
export class ReportDecoder {
  private decoder: InstanceType<typeof TextDecoder> | undefined;
  private head: Buffer = Buffer.alloc(0);
  private encoding: ReportEncoding = 'utf-8';

  constructor(private readonly fileName: string) {}

  decode(input?: Uint8Array, options?: { stream?: boolean }): string {
    const stream = options?.stream === true;
    if (this.decoder === undefined) {
      this.head = input === undefined ? this.head : Buffer.concat([this.head, input]);
      if (this.head.length < 4 && stream) return '';
      this.encoding = sniffEncoding(this.head, this.fileName);
      this.decoder = new TextDecoder(this.encoding, { fatal: this.encoding !== 'utf-8' });
      input = this.head;
      this.head = Buffer.alloc(0);
    }
    try {
      return this.decoder.decode(input, { stream });
    } catch (error) {
      throw invalidUtf16(this.fileName, this.encoding, error);
    }
  }
}

/** First byte of an escaped invalid byte's UTF-8 form: U+10FF00 + b is F4 8F BE|BF xx. */
const ESCAPED = /\uDBFF[\uDF80-\uDFFF]/;
const ESCAPED_ALL = /\uDBFF[\uDF80-\uDFFF]/g;

/** Whether a decoded value holds a byte that was not valid UTF-8 (see Utf8Guard). */
export function holdsInvalidUtf8(value: string): boolean {
  return ESCAPED.test(value);
}

/** A decoded value with each byte that was not valid UTF-8 written as `\xNN`. */
export function showInvalidUtf8(value: string): string {
  return value.replace(
    ESCAPED_ALL,
    (c) => `\\x${((c.codePointAt(0)! - 0x10ff00) & 0xff).toString(16).toUpperCase().padStart(2, '0')}`,
  );
}

/** Length of a valid UTF-8 sequence starting at `i` (1..4), or 0 when the byte there starts none. */
function sequenceAt(b: Uint8Array, i: number): number {
  const c = b[i]!;
  if (c < 0x80) return 1;
  const cont = (k: number, lo = 0x80, hi = 0xbf): boolean => {
    const x = b[i + k];
    return x !== undefined && x >= lo && x <= hi;
  };
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    const lo = c === 0xe0 ? 0xa0 : 0x80;
    const hi = c === 0xed ? 0x9f : 0xbf;
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const lo = c === 0xf0 ? 0x90 : 0x80;
    const hi = c === 0xf4 ? 0x8f : 0xbf;
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

/** Where an incomplete UTF-8 sequence at the end of `b` starts (b.length when there is none). */
function incompleteTail(b: Uint8Array): number {
  for (let k = 1; k <= 3 && k <= b.length; k++) {
    const c = b[b.length - k]!;
    if (c >= 0x80 && c < 0xc0) continue;
    const need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    return need > k ? b.length - k : b.length;
  }
  return b.length;
}

/** `b` with each byte outside a valid UTF-8 sequence replaced by the UTF-8 form of U+10FF00 + byte. */
function escapeInvalid(b: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(b.length * 4);
  let o = 0;
  for (let i = 0; i < b.length;) {
    const n = sequenceAt(b, i);
    if (n > 0) {
      for (let k = 0; k < n; k++) out[o++] = b[i + k]!;
      i += n;
      continue;
    }
    const cp = 0x10ff00 + b[i]!;
    out[o++] = 0xf0 | (cp >> 18);
    out[o++] = 0x80 | ((cp >> 12) & 0x3f);
    out[o++] = 0x80 | ((cp >> 6) & 0x3f);
    out[o++] = 0x80 | (cp & 0x3f);
    i++;
  }
  return out.subarray(0, o);
}

/**
 * The bytes of a CSV file as UTF-8 for the CSV reader: UTF-16 (told by its byte order mark)
 * decoded, UTF-8 passed on as it is when valid, its invalid bytes escaped (see the module comment;
 * `invalid` tells that some were). A chunk boundary inside a sequence is bridged.
 */
export class Utf8Guard extends Transform {
  /** Whether a byte that is not valid UTF-8 was escaped. */
  invalid = false;
  private carry: Buffer | undefined;
  private decoder: ReportDecoder | undefined;
  private sniffed = false;
  private head: Buffer = Buffer.alloc(0);

  constructor(private readonly fileName: string) {
    super();
  }

  override _transform(chunk: Buffer | string, _encoding: BufferEncoding, done: TransformCallback): void {
    try {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
      if (!this.sniffed) {
        this.head = this.head.length === 0 ? bytes : Buffer.concat([this.head, bytes]);
        if (this.head.length < 4) return done();
        this.start();
        return done(null, this.convert(this.head, false));
      }
      done(null, this.convert(bytes, false));
    } catch (error) {
      done(error as Error);
    }
  }

  override _flush(done: TransformCallback): void {
    try {
      if (!this.sniffed) {
        this.start();
        this.push(this.convert(this.head, false));
      }
      done(null, this.convert(Buffer.alloc(0), true));
    } catch (error) {
      done(error as Error);
    }
  }

  private start(): void {
    this.sniffed = true;
    if (sniffEncoding(this.head, this.fileName) !== 'utf-8') this.decoder = new ReportDecoder(this.fileName);
  }

  private convert(bytes: Buffer, end: boolean): Buffer {
    if (this.decoder !== undefined) {
      const text = end ? this.decoder.decode() : this.decoder.decode(bytes, { stream: true });
      return Buffer.from(text, 'utf8');
    }
    const data = this.carry === undefined ? bytes : Buffer.concat([this.carry, bytes]);
    const cut = end ? data.length : incompleteTail(data);
    this.carry = cut < data.length ? Buffer.from(data.subarray(cut)) : undefined;
    const body = data.subarray(0, cut);
    if (isUtf8(body)) return body;
    this.invalid = true;
    return escapeInvalid(body);
  }
}
