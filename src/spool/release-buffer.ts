/**
 * Give a buffer's memory back now rather than at V8's next mark-compact. A buffer made for one
 * window (a read buffer, a scanner's output, a page body) is garbage once the window is done with
 * it, and V8 frees an ArrayBuffer's memory only when it collects the object: with several windows
 * at once, such dead buffers were most of a backfill's peak RSS (docs/performance.md). Detaching
 * the ArrayBuffer (`transfer(0)`) frees its memory at once; every view of it reads as empty after.
 *
 * Only for a buffer (or typed array) that is the whole of its ArrayBuffer (allocUnsafeSlow, or
 * allocUnsafe of more than half the pool: a pooled buffer shares its memory with others and is
 * left alone), that
 * nothing will read or write again, and that no I/O still in flight points into (a write handed
 * to a socket or file whose callback has not come, a read not yet complete): the system would use
 * memory already freed. Callers release on the path where that is known, not on error paths.
 */
export function releaseBuffer(buffer: ArrayBufferView | undefined): void {
  if (buffer === undefined) return;
  const store = buffer.buffer;
  if (!(store instanceof ArrayBuffer) || store.detached) return;
  if (buffer.byteOffset !== 0 || buffer.byteLength !== store.byteLength || store.byteLength === 0) return;
  store.transfer(0);
}
