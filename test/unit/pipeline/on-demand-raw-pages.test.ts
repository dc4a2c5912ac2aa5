import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RawPages } from '../../../src/pipeline/on-demand-raw-pages.js';
import { SpoolDir } from '../../../src/spool/byte-spool.js';

const digest = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex').slice(0, 32);

/** Page `i` of `size` bytes, different from every other page. */
const pageOf = (i: number, size: number) => Buffer.alloc(size, `page ${i};`);

describe('the raw pages of an on-demand re-load', () => {
  let parent: string;
  beforeEach(async () => {
    parent = await mkdtemp(join(tmpdir(), 'cybs-raw-pages-test-'));
  });
  afterEach(async () => {
    await rm(parent, { recursive: true, force: true });
  });

  // The fetch reads every page into one buffer: a page kept must read back as it came, also when
  // that buffer is overwritten by the next page before, or while, the page kept is written out.
  it.each([
    ['each page written before the next comes', true],
    ['the next page coming while the last is written', false],
  ])('keeps each page as it came: %s', async (_name, awaitEach) => {
    const sizes = [5000, 7000, 3000, 7000, 100];
    const pages = sizes.map((size, i) => pageOf(i, size));
    const last = { sha256: [...pages.map(digest), digest(Buffer.from('{}'))], counts: sizes.map(() => [1]) };
    const dir = new SpoolDir({ parent, memoryBytes: 1000 });
    const raw = new RawPages(dir, last, 0);
    const into = Buffer.alloc(8000);
    try {
      for (const [i, page] of pages.entries()) {
        page.copy(into);
        expect(raw.recognise(into.subarray(0, page.length), i)).toBe(1);
        into.fill(0xff);
        if (awaitEach) await raw.written();
      }
      expect(raw.recognise(Buffer.from('{}'), pages.length)).toBe(0);
      expect(raw.same()).toBe(true);
      for (const [i, page] of pages.entries()) expect((await raw.read(i)).equals(page)).toBe(true);
    } finally {
      await raw.close();
      await dir.remove();
    }
  });
});
