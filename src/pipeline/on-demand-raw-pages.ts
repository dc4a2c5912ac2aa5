import { hash } from 'node:crypto';
import { ByteSpool } from '../spool/byte-spool.js';
import type { SpoolDir } from '../spool/byte-spool.js';
import type { OnDemandPageDigests } from './fingerprint.js';
import type { KnownPages } from './on-demand-spools.js';

/**
 * The raw bodies of an on-demand window's pages as they are received: each digested
 * (OnDemandPageDigests.sha256) and, while every page so far is the very page of its number that
 * the window's last load read (`last`), kept as it came (a ByteSpool) instead of being scanned and
 * spooled: a re-load of the same pages then reads only the pages holding records it wants again
 * (OnDemandSpools.knownTargets). At the first page that differs, the pages kept are scanned from
 * their bytes (nothing is fetched twice: the service's data may have moved since).
 */
export class RawPages implements KnownPages {
  /** Each page's digest, in the order received. */
  readonly sha256: string[] = [];
  private readonly spool: ByteSpool;
  /** The end offset in `spool` of each page kept. */
  private readonly ends: number[] = [];
  private writing: Promise<void> = Promise.resolve();
  /**
   * The copy of the last page kept, reused for the next one once that page is written out (the
   * fetch reads every page into one buffer, so a page kept must be copied before the next arrives).
   */
  private copyBuffer = Buffer.alloc(0);
  /** The copy in copyBuffer that is still being written, if any. */
  private lent: Buffer | undefined;
  private matching: boolean;

  constructor(
    dir: SpoolDir,
    private readonly last: OnDemandPageDigests | undefined,
    /** The scanned section whose lines are a page's record count. */
    private readonly counted: number,
  ) {
    this.spool = new ByteSpool(dir, 'pages.raw');
    this.matching = last !== undefined;
  }

  /** The last load's counts (KnownPages: when same()). */
  get counts(): readonly (readonly number[])[] {
    return this.last?.counts ?? [];
  }

  /** Pages kept, in order (those handed on: with records, or a first page without). */
  get kept(): number {
    return this.ends.length;
  }

  /**
   * OnDemandFetchOptions.recognise: digest the page; while the pages are the last load's, keep it
   * and answer its record count.
   */
  readonly recognise = (bytes: Buffer, page: number): number | undefined => {
    const digest = hash('sha256', bytes, 'hex').slice(0, 32);
    this.sha256.push(digest);
    const last = this.last;
    if (
      !this.matching ||
      last === undefined ||
      page !== this.sha256.length - 1 ||
      last.sha256[page] !== digest
    ) {
      this.matching = false;
      return undefined;
    }
    // A page past the last one handed on (counts) is the empty page that ended the paging.
    const counts = last.counts[page];
    const records = counts?.[this.counted] ?? 0;
    if (counts !== undefined) {
      const copy = this.copyOf(bytes);
      this.ends.push((this.ends.at(-1) ?? 0) + copy.length);
      this.writing = this.writing.then(async () => {
        await this.spool.write(copy);
        await this.spool.written();
        if (this.lent === copy) this.lent = undefined;
      });
    }
    return records;
  };

  /** `bytes` copied into the reused buffer, or into a new one while the last copy is still being written. */
  private copyOf(bytes: Buffer): Buffer {
    if (this.lent !== undefined) return Buffer.from(bytes);
    if (this.copyBuffer.length < bytes.length) this.copyBuffer = Buffer.allocUnsafe(bytes.length);
    const copy = this.copyBuffer.subarray(0, bytes.length);
    bytes.copy(copy);
    this.lent = copy;
    return copy;
  }

  /**
   * Once the pages kept so far are written out: the fetch waits for it before the next page, so
   * that copies of pages do not pile up in memory when the spool's file is slower than the service.
   */
  async written(): Promise<void> {
    await this.writing;
  }

  /** Whether the pages received are the last load's, every one (as many, each the same bytes). */
  same(): boolean {
    return (
      this.matching &&
      this.last !== undefined &&
      this.sha256.length > 0 &&
      this.sha256.length === this.last.sha256.length &&
      this.kept === this.last.counts.length
    );
  }

  /** Per scanned section, the records of the pages kept (where the next page's numbers start). */
  keptBases(): number[] {
    const bases = this.last?.counts[0]?.map(() => 0) ?? [];
    for (let page = 0; page < this.kept; page++)
      this.last!.counts[page]!.forEach((n, i) => (bases[i] = bases[i]! + n));
    return bases;
  }

  /** The bytes of kept page `page`. */
  async read(page: number): Promise<Buffer> {
    await this.writing;
    const chunks: Buffer[] = [];
    for await (const chunk of this.spool.read(page === 0 ? 0 : this.ends[page - 1]!, this.ends[page]!))
      chunks.push(chunk);
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
  }

  /**
   * The pages for the window's fingerprint: the last load's when they came again, else these
   * pages' digests with what the spools took of each (none when a page could not be read alone).
   */
  digests(pageCounts: number[][] | undefined): OnDemandPageDigests | undefined {
    if (this.same()) return this.last;
    if (pageCounts === undefined || pageCounts.length > this.sha256.length) return undefined;
    return { sha256: [...this.sha256], counts: pageCounts };
  }

  async close(): Promise<void> {
    await this.writing.catch(() => {});
    await this.spool.close();
  }
}
