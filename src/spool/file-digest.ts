import { createHash } from 'node:crypto';
import type { Hash } from 'node:crypto';

/** Bytes per block of a FileDigest. */
export const DIGEST_BLOCK_BYTES = 8 * 1024 * 1024;

/**
 * The identity of a file's bytes: what a re-load compares to tell that a report file is the one
 * its window was last loaded from (src/pipeline/window/report.ts).
 */
export interface FileDigest {
  /** SHA-256 (hex) over the SHA-256 digests of the file's blocks, then its length (8 bytes, big-endian). */
  sha256: string;
  bytes: number;
  /**
   * The first 16 hex digits of each block's SHA-256, in order (the last block may be shorter): a
   * download of a file that differs shows it at the first block that does, long before its end.
   */
  blocks: string[];
}

/**
 * Builds a FileDigest from the file's bytes as they pass, each byte hashed once (SHA-256, which
 * Node runs with the CPU's own instructions where it has them). `onBlock` hears of each block as
 * it completes.
 */
export class FileDigester {
  private readonly whole = createHash('sha256');
  private block: Hash = createHash('sha256');
  private inBlock = 0;
  private bytes = 0;
  private readonly blocks: string[] = [];

  constructor(private readonly onBlock?: (index: number, block: string) => void) {}

  update(chunk: Uint8Array): void {
    let at = 0;
    while (at < chunk.length) {
      const take = Math.min(chunk.length - at, DIGEST_BLOCK_BYTES - this.inBlock);
      this.block.update(at === 0 && take === chunk.length ? chunk : chunk.subarray(at, at + take));
      at += take;
      this.inBlock += take;
      this.bytes += take;
      if (this.inBlock === DIGEST_BLOCK_BYTES) this.endBlock();
    }
  }

  /** The digest of everything passed to update(); the digester is spent. */
  digest(): FileDigest {
    if (this.inBlock > 0) this.endBlock();
    const length = Buffer.alloc(8);
    length.writeBigUInt64BE(BigInt(this.bytes));
    this.whole.update(length);
    return { sha256: this.whole.digest('hex'), bytes: this.bytes, blocks: [...this.blocks] };
  }

  private endBlock(): void {
    const digest = this.block.digest();
    this.whole.update(digest);
    const block = digest.toString('hex', 0, 8);
    this.blocks.push(block);
    this.block = createHash('sha256');
    this.inBlock = 0;
    this.onBlock?.(this.blocks.length - 1, block);
  }
}

/** Whether two digests are of the same bytes. */
export function sameDigest(a: FileDigest, b: FileDigest): boolean {
  return a.sha256 === b.sha256 && a.bytes === b.bytes;
}
