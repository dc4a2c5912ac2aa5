import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ByteSpool, SpoolBudget, SpoolDir } from '../../../src/spool/byte-spool.js';

async function collect(chunks: AsyncIterable<Buffer>): Promise<string> {
  const parts: Buffer[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return Buffer.concat(parts).toString('utf8');
}

describe('byte spools', () => {
  let parent: string;
  beforeEach(async () => {
    parent = await mkdtemp(join(tmpdir(), 'cybs-byte-spool-test-'));
  });
  afterEach(async () => {
    await rm(parent, { recursive: true, force: true });
  });

  it('holds small spools in memory: no directory is made', async () => {
    const dir = new SpoolDir({ parent, memoryBytes: 100 });
    const spool = new ByteSpool(dir, 'a.copy');
    const text = Buffer.from('one\ntwo\n');
    await spool.write(text);
    // The caller may reuse its buffer once the write resolves (OnDemandPageScanner does).
    text.fill(0);
    await spool.write('three\n');
    await spool.close();
    expect(spool.spilled).toBe(false);
    expect(await collect(spool.read())).toBe('one\ntwo\nthree\n');
    expect(await collect(spool.read(4, 11))).toBe('two\nthr');
    expect(await readdir(parent)).toEqual([]);
    await dir.remove();
  });

  it('moves the bytes to a file at the first write beyond the budget, and reads the same', async () => {
    const dir = new SpoolDir({ parent, memoryBytes: 10 });
    const spool = new ByteSpool(dir, 'b.copy');
    const written: number[] = [];
    await spool.write('12345678', () => written.push(spool.bytes));
    await spool.write('abcdefgh', () => written.push(spool.bytes));
    await spool.write('ABCD', () => written.push(spool.bytes));
    await spool.written();
    expect(written).toEqual([8, 16, 20]);
    expect(spool.spilled).toBe(true);
    expect(await collect(spool.read(6, 18))).toBe('78abcdefghAB');
    await spool.close();
    const [made] = await readdir(parent);
    expect(made).toMatch(/^cybs-etl-\d+-/);
    expect(await readFile(join(parent, made!, 'b.copy'), 'utf8')).toBe('12345678abcdefghABCD');
    await dir.remove();
    expect(await readdir(parent)).toEqual([]);
  });

  it('goes to its file before the first write when told the bytes to come will not fit', async () => {
    const dir = new SpoolDir({ parent, memoryBytes: 10 });
    const small = new ByteSpool(dir, 'small');
    small.expect(6);
    await small.write('123456');
    expect(small.spilled).toBe(false);
    const large = new ByteSpool(dir, 'large');
    // 6 of the window's 10 bytes are held: 5 more do not fit.
    large.expect(5);
    expect(large.spilled).toBe(true);
    const written: number[] = [];
    await large.write('abc', () => written.push(large.bytes));
    await large.write('de', () => written.push(large.bytes));
    await large.close();
    expect(written).toEqual([3, 5]);
    expect(await collect(large.read())).toBe('abcde');
    // Nothing of it was held: the rest of the window's budget is still free.
    expect(dir.budget.available()).toBe(4);
    await small.close();
    await dir.remove();
  });

  it('restarts from an empty memory after a spill, and reads only what the new run wrote', async () => {
    const dir = new SpoolDir({ parent, memoryBytes: 4 });
    const spool = new ByteSpool(dir, 'r');
    await spool.write('12');
    await spool.write('345678');
    await spool.written();
    expect(spool.spilled).toBe(true);
    await spool.restart();
    expect(spool.spilled).toBe(false);
    await spool.write('ab');
    await spool.close();
    expect(await collect(spool.read())).toBe('ab');
    await dir.remove();
  });

  it('reads a file into the buffer it is given, a chunk at a time', async () => {
    const dir = new SpoolDir({ parent, memoryBytes: 4 });
    const spool = new ByteSpool(dir, 'c.copy');
    await spool.write('0123456789abcdefghij');
    await spool.close();
    expect(spool.spilled).toBe(true);
    const into = Buffer.alloc(6);
    const seen: string[] = [];
    for await (const chunk of spool.read(3, 17, undefined, into)) {
      expect(chunk.buffer).toBe(into.buffer);
      seen.push(chunk.toString('utf8'));
    }
    expect(seen).toEqual(['345678', '9abcde', 'fg']);
    await dir.remove();
  });

  it("shares a window's budget between its spools, and gives it back when the window ends", async () => {
    const dir = new SpoolDir({ parent, memoryBytes: 10 });
    const a = new ByteSpool(dir, 'a');
    const b = new ByteSpool(dir, 'b');
    await a.write('123456');
    await b.write('123456');
    expect([a.spilled, b.spilled]).toEqual([false, true]);
    await Promise.all([a.close(), b.close()]);
    await dir.remove();
    expect(dir.budget.take(10)).toBe(true);
  });

  it('counts what a budget holds in its parent', () => {
    const parentBudget = new SpoolBudget(10);
    const one = new SpoolBudget(8, parentBudget);
    const two = new SpoolBudget(8, parentBudget);
    expect(one.take(6)).toBe(true);
    expect(two.take(6)).toBe(false);
    one.release(6);
    expect(two.take(6)).toBe(true);
  });

  it("reports a file it cannot write as the write's error", async () => {
    const gone = join(parent, 'gone');
    const spool = new ByteSpool(new SpoolDir({ path: gone, memoryBytes: 0 }), 'c');
    const failed = await (async () => {
      await spool.write('x');
      await spool.close();
    })().catch((error: unknown) => error as NodeJS.ErrnoException);
    expect(failed).toMatchObject({ code: 'ENOENT' });
  });
});
