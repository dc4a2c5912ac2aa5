import { describe, expect, it } from 'vitest';
import { appendToLines } from '../../../src/load/window/first-load.js';

/** What appendToLines yields, each chunk copied as it comes (the buffer is filled again after). */
async function appended(chunks: string[], suffix: string, outBytes: number): Promise<string[]> {
  async function* input(): AsyncGenerator<Uint8Array> {
    for (const c of chunks) yield Buffer.from(c, 'utf8');
  }
  const out = Buffer.alloc(outBytes);
  const seen: string[] = [];
  for await (const chunk of appendToLines(input(), Buffer.from(suffix, 'utf8'), out)) {
    expect(chunk.buffer).toBe(out.buffer);
    seen.push(chunk.toString('utf8'));
  }
  return seen;
}

describe('appendToLines', () => {
  it('puts the suffix in place of every line feed, lines split across chunks included', async () => {
    const seen = await appended(['a\tb\nc', 'd\te\n', '\nf\n'], '\tX\n', 1024);
    expect(seen.join('')).toBe('a\tb\tX\ncd\te\tX\n\tX\nf\tX\n');
    expect(seen).toHaveLength(1);
  });

  it('yields its buffer each time it is full, a line or a suffix cut anywhere', async () => {
    const lines = Array.from({ length: 50 }, (_, i) => `${i}\tvalue ${i}\n`).join('');
    const expected = lines.replaceAll('\n', '\tORG\tSRC\t7\n');
    for (const size of [1, 3, 7, 64]) {
      const seen = await appended([lines.slice(0, 100), lines.slice(100)], '\tORG\tSRC\t7\n', size);
      expect(seen.join('')).toBe(expected);
      expect(seen.slice(0, -1).every((c) => c.length === size)).toBe(true);
    }
  });

  it('yields nothing for nothing', async () => {
    expect(await appended([], '\tX\n', 16)).toEqual([]);
    expect(await appended([''], '\tX\n', 16)).toEqual([]);
  });
});
