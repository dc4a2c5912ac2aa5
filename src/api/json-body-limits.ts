/**
 * Bounds on a JSON response body, checked on its bytes as they arrive, before anything is parsed:
 * the body is held whole to be parsed (or scanned, src/parse/json/on-demand-page-scanner.ts), and parsing takes
 * a few times its size, so an unbounded body or value would take unbounded memory.
 *  - the body: at most {@link MAX_JSON_BODY_BYTES} (a purchase-refund-details page of 2,000
 *    records, the largest the API pages, is about 3 MB), so that a body parsed whole stays within
 *    the process's 300 MB;
 *  - a string (a value or a key): at most {@link MAX_JSON_STRING_BYTES}, as the CSV reader bounds a
 *    record (src/parse/csv/csv-report.ts): a value that large is not data of a report.
 */

/** The largest JSON body read: 20 MiB (parsed, its records take about seven times that). */
export const MAX_JSON_BODY_BYTES = 20 * 1024 * 1024;
/** The longest JSON string read, in bytes as sent (escapes included): 16 MiB. */
export const MAX_JSON_STRING_BYTES = 16 * 1024 * 1024;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Follows the strings of a JSON text chunk by chunk (only the quotes and the backslashes before
 * them are looked at, with Buffer.indexOf) and says when the body or a string grows past its limit.
 * It does not validate JSON: the parser or scanner does that afterwards.
 */
export class JsonBodyLimits {
  private bytes = 0;
  private inString = false;
  /** Body offset of the open string's first byte. */
  private stringStart = 0;
  /** Backslashes ending the previous chunk inside a string (odd: the next byte is escaped). */
  private trailingBackslashes = 0;
  /**
   * The Content-Length given to overLimit when it is within the string limit: a body of that size
   * cannot hold a longer string, so its strings are not followed (following them costs a
   * Buffer.indexOf call per quote of every page).
   */
  private shortBody: number | undefined;

  constructor(
    private readonly maxBody = MAX_JSON_BODY_BYTES,
    private readonly maxString = MAX_JSON_STRING_BYTES,
  ) {}

  /** Whether a body of `length` bytes (its Content-Length) is over the limit, before it is read. */
  overLimit(length: number | undefined): string | undefined {
    this.shortBody = length !== undefined && length <= this.maxString ? length : undefined;
    return length !== undefined && length > this.maxBody ? this.bodyProblem(length) : undefined;
  }

  /** Take the next chunk; a sentence saying which limit it passes, or undefined. */
  update(chunk: Buffer): string | undefined {
    const base = this.bytes;
    this.bytes += chunk.length;
    if (this.shortBody !== undefined) {
      // Its strings were not followed: a body longer than it said is refused, whatever it holds.
      return this.bytes > this.shortBody ? this.longerThanSaid(this.shortBody) : undefined;
    }
    let at = 0;
    while (at < chunk.length) {
      const quote = chunk.indexOf(QUOTE, at);
      if (!this.inString) {
        if (quote < 0) break;
        this.inString = true;
        this.stringStart = base + quote + 1;
        this.trailingBackslashes = 0;
        at = quote + 1;
        continue;
      }
      if (quote < 0) {
        // The string goes on in the next chunk: count the backslashes that end this one.
        let n = 0;
        for (let i = chunk.length - 1; i >= at && chunk[i] === BACKSLASH; i--) n++;
        this.trailingBackslashes = n === chunk.length - at ? this.trailingBackslashes + n : n;
        break;
      }
      let n = 0;
      for (let i = quote - 1; i >= at && chunk[i] === BACKSLASH; i--) n++;
      if (n === quote - at) n += this.trailingBackslashes;
      this.trailingBackslashes = 0;
      at = quote + 1;
      if (n % 2 === 1) continue;
      this.inString = false;
      if (base + quote - this.stringStart > this.maxString) return this.stringProblem(base + quote);
    }
    if (this.inString && this.bytes - this.stringStart > this.maxString)
      return this.stringProblem(this.bytes);
    if (this.bytes > this.maxBody) return this.bodyProblem(this.bytes);
    return undefined;
  }

  private stringProblem(seen: number): string {
    return `a JSON string value longer than ${mib(this.maxString)} (from byte ${this.stringStart - 1} of the body, ${seen - this.stringStart} bytes so far), which is not read`;
  }

  private longerThanSaid(length: number): string {
    return `a JSON body longer than its Content-Length of ${length} bytes (${this.bytes} bytes so far), which is not read`;
  }

  private bodyProblem(length: number): string {
    return `a JSON body larger than ${mib(this.maxBody)} (${length} bytes so far), which is not read`;
  }
}

const mib = (bytes: number): string => `${bytes / (1024 * 1024)} MiB`;
