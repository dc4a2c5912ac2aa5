/**
 * Buffers for the bytes on their way to a COPY (a spool's lines read back, the same lines with their
 * lineage appended), lent for one COPY and given back after it, instead of a new buffer per chunk.
 * A new buffer is garbage as soon as its chunk is sent, and its memory is freed only when V8
 * collects the object that holds it, which can be long when little JavaScript runs between chunks
 * (Node 24 above all: docs/performance.md, "Buffers on the way to COPY"); reused, the bytes of a
 * whole window pass through the same few buffers.
 */

/** Bytes of each buffer: a chunk written to COPY at a time (or read back from a spool). */
export const COPY_BUFFER_BYTES = 256 * 1024;

/** Free buffers kept for the next COPY; one more is made when a COPY finds none (concurrent windows). */
const KEPT = 8;

const free: Buffer[] = [];

/**
 * Run `use` with `count` buffers of COPY_BUFFER_BYTES of their own (nothing else writes them until
 * `use` settles); they are kept for the next call after.
 */
export async function withCopyBuffers<T>(count: number, use: (buffers: Buffer[]) => Promise<T>): Promise<T> {
  const lent: Buffer[] = [];
  for (let i = 0; i < count; i++) lent.push(free.pop() ?? Buffer.allocUnsafeSlow(COPY_BUFFER_BYTES));
  try {
    return await use(lent);
  } finally {
    for (const buffer of lent) if (free.length < KEPT) free.push(buffer);
  }
}
