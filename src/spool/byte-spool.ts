/**
 * Bytes a window writes once and reads back (a downloaded report, an on-demand section's COPY
 * text): held in memory while the window's budget allows, written to a file of the window's spool
 * directory beyond it. A small window then never touches the disk (no directory, no open, no
 * unlink); a large one streams through its files with bounded memory, as before.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import type { WriteStream } from 'node:fs';
import { once } from 'node:events';
import { open, rm } from 'node:fs/promises';
import { makeSpoolDir, spoolFilePath } from './spool-dirs.js';

/**
 * Bytes held in memory by a window's spools, and by all spools of the process. A window's share is
 * small: what a spool held is garbage once it goes to its file (or its window ends), freed only at
 * V8's next full collection, and with several windows at once a larger share was the largest part
 * of a backfill's peak (docs/performance.md). The small windows of a partner's many organizations
 * still never touch the disk.
 */
export const WINDOW_SPOOL_MEMORY_BYTES = 256 * 1024;
export const PROCESS_SPOOL_MEMORY_BYTES = 32 * 1024 * 1024;

/** A share of memory for spools: what one holds counts against its parent's share too. */
export class SpoolBudget {
  private used = 0;

  constructor(
    readonly limit: number,
    private readonly parent?: SpoolBudget,
  ) {}

  /** Takes `bytes` if they fit (here and in the parent), else takes nothing. */
  take(bytes: number): boolean {
    if (this.used + bytes > this.limit) return false;
    if (this.parent && !this.parent.take(bytes)) return false;
    this.used += bytes;
    return true;
  }

  /** Bytes that take() would accept now. */
  available(): number {
    const here = this.limit - this.used;
    return this.parent ? Math.min(here, this.parent.available()) : here;
  }

  release(bytes: number): void {
    const given = Math.min(bytes, this.used);
    this.used -= given;
    this.parent?.release(given);
  }
}

const processBudget = new SpoolBudget(PROCESS_SPOOL_MEMORY_BYTES);

/**
 * A window's spool directory, made at the first file it needs (never for a window whose spools
 * all fit in memory) in `parent` (the system's temporary directory), and the window's memory
 * budget. `path`: an existing directory to use instead (left in place by remove()).
 */
export class SpoolDir {
  private made: Promise<string> | undefined;
  readonly budget: SpoolBudget;

  constructor(options: { kind?: string; parent?: string; path?: string; memoryBytes?: number } = {}) {
    this.kind = options.kind;
    this.parent = options.parent;
    if (options.path !== undefined) this.made = Promise.resolve(options.path);
    this.owned = options.path === undefined;
    this.budget = new SpoolBudget(options.memoryBytes ?? WINDOW_SPOOL_MEMORY_BYTES, processBudget);
  }

  private readonly kind: string | undefined;
  private readonly parent: string | undefined;
  private readonly owned: boolean;

  /** The path of a spool file named after `name` (spoolFilePath), the directory made if need be. */
  async file(name: string): Promise<string> {
    return spoolFilePath(await (this.made ??= makeSpoolDir(this.kind, this.parent)), name);
  }

  /** Give back the memory the spools held, and remove the directory if this made it. */
  async remove(): Promise<void> {
    this.budget.release(this.budget.limit);
    if (!this.owned || this.made === undefined) return;
    const dir = await this.made.catch(() => undefined);
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  }
}

/**
 * An append-only run of bytes in a SpoolDir: in memory within the directory's budget, moved to a
 * file (and the memory given back) at the first write that does not fit. Writes are issued one
 * after the other (each awaited); reads see the bytes of the writes completed before them.
 */
export class ByteSpool {
  private parts: Buffer[] = [];
  private held = 0;
  private out: WriteStream | undefined;
  private opening: Promise<void> | undefined;
  private path: string | undefined;
  /** Writes to the file issued so far (writes complete in order). */
  private lastWrite: Promise<void> = Promise.resolve();
  /** The file's first error (open or write): thrown by the next write, written() and close(). */
  private error?: Error;
  private closing?: Promise<void>;
  /** Bytes written and complete (readable). */
  bytes = 0;
  /** Counts restart(): a write of an earlier run of bytes completing late is not counted. */
  private run = 0;

  constructor(
    private readonly dir: SpoolDir,
    private readonly name: string,
  ) {}

  /** Whether the bytes went to a file. */
  get spilled(): boolean {
    return this.opening !== undefined;
  }

  /**
   * Append `data`; resolves once the spool can take more (a file's backpressure). A buffer is
   * copied when held in memory; when written to the file, the caller leaves it as it is until
   * written() resolves. `onWritten` is called once the bytes are complete (readable).
   */
  async write(data: Buffer | string, onWritten?: () => void): Promise<void> {
    if (this.error) throw this.error;
    const chunk = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    if (chunk.length === 0) return;
    if (this.opening === undefined) {
      if (this.dir.budget.take(chunk.length)) {
        this.parts.push(typeof data === 'string' ? chunk : Buffer.from(chunk));
        this.held += chunk.length;
        this.bytes += chunk.length;
        onWritten?.();
        return;
      }
      this.opening = this.spill();
    }
    await this.opening;
    await this.send(chunk, onWritten);
  }

  /**
   * The bytes to come number `total`: if they cannot all be held in memory, the spool goes to its
   * file now, before the first write, so that none of them is copied into memory, joined and
   * written out later (garbage that only a full collection frees).
   */
  expect(total: number): void {
    if (this.opening === undefined && total - this.held > this.dir.budget.available()) {
      this.opening = this.spill();
      // Its failure surfaces at the next write or written(), not as an unhandled rejection now.
      this.opening.catch(() => undefined);
    }
  }

  /** Move the bytes held so far to the spool's file, which takes every write after. */
  private async spill(): Promise<void> {
    const run = this.run;
    this.path = await this.dir.file(this.name);
    const out = createWriteStream(this.path);
    // Never an unhandled 'error' event (a full disk, a removed directory): the spool's error,
    // unless the spool was restarted since (a late error of a file it dropped).
    out.on('error', (error) => {
      if (run === this.run) this.error ??= error;
    });
    this.out = out;
    const held = this.parts;
    const bytes = this.held;
    this.parts = [];
    if (held.length > 0) {
      // Written as held (one writev), not joined: a joined copy would be garbage the size of the
      // window's budget at every spill, freed only by a full collection.
      this.lastWrite = new Promise((resolve) => {
        out.cork();
        for (const part of held.slice(0, -1)) out.write(part);
        out.write(held.at(-1)!, () => {
          if (run === this.run) {
            this.dir.budget.release(bytes);
            this.held = 0;
          }
          resolve();
        });
        out.uncork();
      });
      await this.lastWrite;
    }
  }

  private async send(chunk: Buffer, onWritten: (() => void) | undefined): Promise<void> {
    if (this.error) throw this.error;
    const out = this.out!;
    const run = this.run;
    let more = true;
    this.lastWrite = new Promise((resolve) => {
      more = out.write(chunk, (error) => {
        if (!error && run === this.run) {
          this.bytes += chunk.length;
          onWritten?.();
        }
        resolve();
      });
    });
    if (!more) await once(out, 'drain');
  }

  /** Resolves once every write issued so far is complete; rejects if one failed. */
  async written(): Promise<void> {
    await this.opening;
    await this.lastWrite;
    if (this.error) throw this.error;
  }

  /**
   * Drop every byte written (a download starting over): the memory is given back, the file (if
   * any) is written again from its start by the writes after.
   */
  async restart(): Promise<void> {
    this.run++;
    // Its writes still in flight must not land in the file written again.
    await this.closeFile('destroy');
    this.out = undefined;
    this.opening = undefined;
    this.closing = undefined;
    this.lastWrite = Promise.resolve();
    delete this.error;
    this.parts = [];
    this.dir.budget.release(this.held);
    this.held = 0;
    this.bytes = 0;
  }

  /** Close the spool's file, if any, once open: its writes finished (`end`) or dropped (`destroy`). */
  private async closeFile(how: 'end' | 'destroy'): Promise<void> {
    await this.opening?.catch(() => {});
    const out = this.out;
    if (out === undefined || out.closed) return;
    const closed = once(out, 'close');
    out[how]();
    await closed;
  }

  /** Finish writing; safe to call more than once. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.closeFile('end');
      if (this.error) throw this.error;
    })();
    return this.closing;
  }

  /**
   * Bytes `start` to `end` (exclusive; the bytes written so far by default), `size` per chunk from a
   * file. With `into`, a file is read into that buffer, a chunk at a time (up to its length): each
   * chunk is valid until the next is asked for.
   */
  async *read(start = 0, end = this.bytes, size = 1 << 20, into?: Buffer): AsyncGenerator<Buffer> {
    if (end <= start) return;
    if (this.opening === undefined) {
      let at = 0;
      for (const part of this.parts) {
        const next = at + part.length;
        if (next > start && at < end)
          yield part.subarray(Math.max(0, start - at), Math.min(part.length, end - at));
        at = next;
        if (at >= end) return;
      }
      return;
    }
    await this.written();
    if (into !== undefined) {
      const file = await open(this.path!, 'r');
      try {
        for (let at = start; at < end;) {
          const { bytesRead } = await file.read(into, 0, Math.min(into.length, end - at), at);
          if (bytesRead === 0) throw new Error(`${this.name}: the spool file ends before byte ${end}`);
          at += bytesRead;
          yield into.subarray(0, bytesRead);
        }
      } finally {
        await file.close();
      }
      return;
    }
    yield* createReadStream(this.path!, {
      start,
      end: end - 1,
      highWaterMark: size,
    }) as AsyncIterable<Buffer>;
  }
}
