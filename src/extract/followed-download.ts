/**
 * A report download that can be read while it is written: the file is downloaded at the network's
 * pace into a ByteSpool (in memory while small, a file of the window's spool directory beyond),
 * and `chunks()` reads it behind the writer, so that a load can start on the first bytes instead
 * of waiting for the last. The complete file stays in the spool for whatever must read the bytes
 * again (the per-row path, a second pass), once `done` resolves.
 *
 * A reader never sees a byte that a later attempt could change: when the transfer breaks and the
 * client starts it over (emptying the spool), `chunks()` fails with EXTRACT_DOWNLOAD_RESTARTED
 * (isDownloadRestarted), and the caller waits for `done` and reads the complete file instead.
 * When the download fails for good, `chunks()` fails with the download's own error.
 */
import type { DownloadReportParams } from '../api/types.js';
import type { DownloadToFileResult, ReportingClient } from '../api/index.js';
import type { ByteSpool } from '../spool/byte-spool.js';
import { sameDigest } from '../spool/file-digest.js';
import type { FileDigest } from '../spool/file-digest.js';
import { CybsError } from '../errors.js';
import { releaseBuffer } from '../spool/release-buffer.js';

export interface FollowedDownload {
  /**
   * The file's bytes in order, as they are written; one reader, once. `inTurn`: the reader is done
   * with each chunk before it asks for the next, so the reads of a spool's file go into one buffer
   * (ByteSpool.read's `into`) instead of a new one per read.
   */
  chunks(options?: { inTurn?: boolean }): AsyncGenerator<Buffer>;
  /** The complete download (the file in its spool). */
  readonly done: Promise<DownloadToFileResult>;
  /**
   * With `expected`: whether the file is of those very bytes, false as soon as a block of its
   * digest differs (so that a reader can start following it at once), else decided once the
   * download is complete. False without `expected`, or when the download fails.
   */
  readonly same: Promise<boolean>;
  /** Abort the download if it is still running, and wait until it has stopped. */
  stop(): Promise<void>;
}

/** Thrown by `chunks()` when the transfer broke and is being started over. */
export function isDownloadRestarted(error: unknown): boolean {
  return error instanceof CybsError && error.code === 'EXTRACT_DOWNLOAD_RESTARTED';
}

export function followDownload(
  client: Pick<ReportingClient, 'downloadReportToFile'>,
  params: DownloadReportParams,
  spool: ByteSpool,
  options: {
    signal?: AbortSignal | undefined;
    readSize?: number;
    startAfter?: number;
    expected?: FileDigest | undefined;
  } = {},
): FollowedDownload {
  /** Bytes per read (as createReadStream's highWaterMark): a scanner behind it may prefer a size. */
  const READ_SIZE = options.readSize ?? 64 * 1024;
  /**
   * The reader starts once this many bytes are in the spool (or the download is complete): a
   * small file is then read whole, as if downloaded first, and only a large one is followed.
   */
  const START_AFTER = Math.max(options.startAfter ?? 0, READ_SIZE);
  /**
   * Bytes per read of a spool's file (a multiple of READ_SIZE, about 1 MiB), handed on READ_SIZE
   * at a time. Each read waits for the thread pool, and the scanner behind it waits too: small
   * reads leave the scanner's thread idle between them.
   */
  const IO_SIZE = READ_SIZE * Math.max(1, Math.floor((1024 * 1024) / READ_SIZE));
  const expected = options.expected;
  let decide: (same: boolean) => void = () => {};
  const same = new Promise<boolean>((resolve) => (decide = resolve));
  const controller = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, controller.signal]) : controller.signal;
  let firstAttempt: number | undefined;
  let restarted = false;
  /** Bytes of the first attempt known to be in the spool, and how far the reader has read. */
  let written = 0;
  let position = 0;
  let settled: { ok: true } | { ok: false; error: unknown } | undefined;
  let wake: (() => void) | undefined;
  /** Whether a whole read is waiting in the spool (the first one once START_AFTER bytes are). */
  const readable = (): boolean => written - position >= (position === 0 ? START_AFTER : READ_SIZE);
  const notify = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const done = client.downloadReportToFile(params, spool, {
    signal,
    onAttempt: (attempt) => {
      if (firstAttempt === undefined) firstAttempt = attempt;
      else restarted = true;
      notify();
    },
    onChunk: (bytes) => {
      written = bytes;
      // One wake-up per full read, not per network chunk: small reads cost the scanner more.
      if (readable()) notify();
    },
    ...(expected
      ? {
          onDigestBlock: (index: number, block: string) => {
            if (block !== expected.blocks[index]) decide(false);
          },
        }
      : {}),
  });
  done.then(
    (result) => {
      settled = { ok: true };
      decide(expected !== undefined && sameDigest(result.digest, expected));
      notify();
    },
    (error: unknown) => {
      settled = { ok: false, error };
      decide(false);
      notify();
    },
  );
  const changed = () => new Promise<void>((resolve) => (wake = resolve));
  const restartedError = () =>
    new CybsError('EXTRACT_DOWNLOAD_RESTARTED', 'the report download broke and is being started over', {
      stage: 'extract',
      retryable: true,
    });

  async function* chunks(options?: { inTurn?: boolean }): AsyncGenerator<Buffer> {
    /** The buffer of the reads in turn, made at the first read of a spool's file. */
    let into: Buffer | undefined;
    for (;;) {
      if (restarted) throw restartedError();
      if (settled && !settled.ok) throw settled.error;
      // Whole reads while the download runs: each small one costs the scanner behind it.
      if (!settled && (firstAttempt === undefined || !readable())) {
        await changed();
        continue;
      }
      // Whole pieces of READ_SIZE, as many as are there (one at least: readable()), up to IO_SIZE;
      // to the end once the download is complete.
      const end = settled
        ? spool.bytes
        : position +
          Math.min(IO_SIZE, Math.max(READ_SIZE, Math.floor((written - position) / READ_SIZE) * READ_SIZE));
      if (end <= position) {
        // Asked for more after the last chunk: the reader is done with the buffer.
        releaseBuffer(into);
        return;
      }
      if (options?.inTurn === true && spool.spilled) into ??= Buffer.allocUnsafeSlow(IO_SIZE);
      for await (const piece of spool.read(position, end, IO_SIZE, into)) {
        // Checked after each read: bytes of a restarted attempt must never be handed on.
        if (restarted) throw restartedError();
        for (let at = 0; at < piece.length; at += READ_SIZE) {
          yield piece.subarray(at, Math.min(piece.length, at + READ_SIZE));
        }
        position += piece.length;
      }
    }
  }

  return {
    chunks,
    done,
    same,
    async stop() {
      if (!settled) controller.abort();
      await done.catch(() => {});
    },
  };
}
