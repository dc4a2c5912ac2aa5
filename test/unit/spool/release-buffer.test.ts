import { describe, expect, it } from 'vitest';
import { releaseBuffer } from '../../../src/spool/release-buffer.js';

const MB = 1024 * 1024;
const arrayBuffers = () => process.memoryUsage().arrayBuffers;

describe('releaseBuffer', () => {
  it('frees a buffer of its own at once, without waiting for a collection', () => {
    const buffers = Array.from({ length: 16 }, () => Buffer.allocUnsafeSlow(MB).fill(1));
    const before = arrayBuffers();
    for (const buffer of buffers) releaseBuffer(buffer);
    // The buffers are still referenced: only detaching can have given their memory back.
    expect(before - arrayBuffers()).toBeGreaterThanOrEqual(16 * MB);
    expect(buffers.every((b) => b.length === 0 && b.buffer.detached)).toBe(true);
  });

  it('frees typed arrays too, and a large allocUnsafe buffer (not from the pool)', () => {
    const table = new Int32Array(MB / 4);
    const large = Buffer.allocUnsafe(64 * 1024);
    releaseBuffer(table);
    releaseBuffer(large);
    expect(table.buffer.detached).toBe(true);
    expect(large.buffer.detached).toBe(true);
  });

  it('leaves alone what shares its memory: a pooled buffer, a view of part of a buffer', () => {
    const pooled = Buffer.allocUnsafe(64).fill(7);
    const whole = Buffer.allocUnsafeSlow(1024).fill(9);
    const part = whole.subarray(10, 20);
    releaseBuffer(pooled);
    releaseBuffer(part);
    expect(pooled.buffer.detached).toBe(false);
    expect(pooled[0]).toBe(7);
    expect(whole.buffer.detached).toBe(false);
    expect(part[0]).toBe(9);
  });

  it('takes undefined, an empty buffer and a buffer already released', () => {
    const buffer = Buffer.allocUnsafeSlow(1024);
    releaseBuffer(buffer);
    expect(() => {
      releaseBuffer(buffer);
      releaseBuffer(undefined);
      releaseBuffer(Buffer.alloc(0));
    }).not.toThrow();
  });
});
