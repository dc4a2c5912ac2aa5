import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DIGEST_BLOCK_BYTES, FileDigester, sameDigest } from '../../../src/spool/file-digest.js';

function digestIn(data: Buffer, chunk: number, onBlock?: (index: number, block: string) => void) {
  const digester = new FileDigester(onBlock);
  for (let at = 0; at < data.length; at += chunk) digester.update(data.subarray(at, at + chunk));
  return digester.digest();
}

describe('FileDigester', () => {
  const data = randomBytes(2 * DIGEST_BLOCK_BYTES + 12_345);

  it('gives the same digest however the bytes are cut, announcing each block as it completes', () => {
    const announced: [number, string][] = [];
    const a = digestIn(data, 65_536, (index, block) => announced.push([index, block]));
    const b = digestIn(data, 1_000_003);
    const c = digestIn(data, data.length);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
    expect(a.bytes).toBe(data.length);
    expect(a.blocks).toHaveLength(3);
    expect(announced).toEqual(a.blocks.map((block, index) => [index, block]));
  });

  it('is the SHA-256 of the blocks’ SHA-256 digests and the length; a block prefix is its digest’s first 16 hex digits', () => {
    const blocks = [0, 1, 2].map((i) =>
      createHash('sha256')
        .update(data.subarray(i * DIGEST_BLOCK_BYTES, (i + 1) * DIGEST_BLOCK_BYTES))
        .digest(),
    );
    const length = Buffer.alloc(8);
    length.writeBigUInt64BE(BigInt(data.length));
    const digest = digestIn(data, 100_000);
    expect(digest.sha256).toBe(
      createHash('sha256')
        .update(Buffer.concat([...blocks, length]))
        .digest('hex'),
    );
    expect(digest.blocks).toEqual(blocks.map((b) => b.toString('hex', 0, 8)));
  });

  it('one changed byte changes its block and the whole digest, not the other blocks', () => {
    const changed = Buffer.from(data);
    changed[DIGEST_BLOCK_BYTES + 17] = changed[DIGEST_BLOCK_BYTES + 17]! ^ 1;
    const a = digestIn(data, 65_536);
    const b = digestIn(changed, 65_536);
    expect(sameDigest(a, b)).toBe(false);
    expect(b.blocks[0]).toBe(a.blocks[0]);
    expect(b.blocks[1]).not.toBe(a.blocks[1]);
    expect(b.blocks[2]).toBe(a.blocks[2]);
  });

  it('an empty file has no blocks; a file one zero byte longer is another file', () => {
    const empty = digestIn(Buffer.alloc(0), 10);
    expect(empty.blocks).toEqual([]);
    expect(empty.bytes).toBe(0);
    expect(sameDigest(empty, digestIn(Buffer.alloc(1), 10))).toBe(false);
    expect(sameDigest(digestIn(Buffer.alloc(5), 2), digestIn(Buffer.alloc(5), 5))).toBe(true);
  });
});
