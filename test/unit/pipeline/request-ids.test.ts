/**
 * RequestIds (src/pipeline/on-demand-spools.ts): the ids of a window's requests, numbered in the
 * order they were added, found again exactly (byte for byte), through every growth of its buffers.
 */
import { describe, expect, it } from 'vitest';
import { RequestIds } from '../../../src/pipeline/on-demand-spools.js';

describe('RequestIds', () => {
  it('numbers ids in the order they were added and finds each again, and only those', () => {
    const ids = new RequestIds();
    // Many ids (the table and the buffers grow), ids that are prefixes of others, an empty one,
    // ids beyond ASCII and one longer than the scratch buffer.
    const added = [
      ...Array.from({ length: 5000 }, (_, i) => `70000000000${String(i * 7919).padStart(12, '0')}`),
      '1',
      '12',
      '123',
      '',
      'é',
      'e\u0301',
      '\u{1F600}',
      'x'.repeat(5000),
      'x'.repeat(4999),
    ];
    for (const [n, id] of added.entries()) {
      expect(ids.get(id)).toBeUndefined();
      expect(ids.add(id)).toBe(n);
    }
    expect(ids.size).toBe(added.length);
    for (const [n, id] of added.entries()) expect(ids.get(id)).toBe(n);
    for (const absent of ['7000000000000000000001', '1234', 'e', 'x'.repeat(5001), 'x'.repeat(10)])
      expect(ids.get(absent)).toBeUndefined();
  });

  it('finds and adds ids given as bytes within a buffer, the same ids as given as strings', () => {
    const ids = new RequestIds();
    const line = Buffer.from('7000000000000000000001\tA\n7000000000000000000002\tB\n', 'utf8');
    expect(ids.find(line, 0, 22)).toBeUndefined();
    expect(ids.addBytes(line, 0, 22)).toBe(0);
    expect(ids.add('7000000000000000000002')).toBe(1);
    expect(ids.find(line, 25, 47)).toBe(1);
    expect(ids.get('7000000000000000000001')).toBe(0);
    expect(ids.find(line, 0, 21)).toBeUndefined();
    expect(ids.idOf(0)).toBe('7000000000000000000001');
    expect(ids.idOf(1)).toBe('7000000000000000000002');
  });

  it('tells apart ids whose hashes are equal, through the growth of its table', () => {
    // Every id given the same hash: each probe meets ids of that hash, and only the bytes differ.
    const ids = new RequestIds();
    const line = Buffer.from(
      Array.from({ length: 3000 }, (_, i) => `7${String(i).padStart(21, '0')}`).join(''),
    );
    const at = (n: number) => [n * 22, n * 22 + 22] as const;
    for (let n = 0; n < 3000; n++) {
      expect(ids.find(line, ...at(n), 42)).toBeUndefined();
      expect(ids.addBytes(line, ...at(n), 42)).toBe(n);
    }
    for (let n = 0; n < 3000; n += 7) expect(ids.find(line, ...at(n), 42)).toBe(n);
    expect(ids.find(Buffer.from('7000000000000000003000'), 0, 22, 42)).toBeUndefined();
    expect(ids.idOf(2999)).toBe('7000000000000000002999');
  });
});
