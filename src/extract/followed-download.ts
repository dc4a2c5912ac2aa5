/**
 * A report download that can be read while it is written: the file is downloaded at the network's
 * pace into `<path>.part` (renamed to `<path>` when complete, as downloadReportToFile does), and
 * `chunks()` reads that part file behind the writer, so that a load can start on the first bytes
 * instead of waiting for the last. The complete file stays on disk for whatever must read the
 * bytes again (the per-row path, a second pass), once `done` resolves.
 *
 * A reader never sees a byte that a later attempt could change: when the transfer breaks and the
 * client starts it over (truncating the part file), `chunks()` fails with
 * EXTRACT_DOWNLOAD_RESTARTED (isDownloadRestarted), and the caller waits for `done` and reads the
 * complete file instead. When the download fails for good, `chunks()` fails with the download's
 * own error.
 */
import { open, type FileHandle } from 'node:fs/promises';
import type { DownloadReportParams } from '../api/types.js';
import type { DownloadToFileResult, ReportingClient } from '../api/index.js';
import { sameDigest } from '../spool/file-digest.js';
import type { FileDigest } from '../spool/file-digest.js';
import { CybsError } from '../errors.js';

export interface FollowedDownload {
  /** The file's bytes in order, as they are written; one reader, once. */
  chunks(): AsyncGenerator<Buffer>;
  /** The complete download (the file at its path). */
  readonly done: Promise<DownloadToFileResult>;
  /**
   * With `expected`: whether the file is of those very bytes, false as soon as a block of its
   * digest differs (so that a reader can start following it at once), else decided once the
   * download is complete. False without `expected`, or when the download fails.
   */
  readonly same: Promise<boolean>;
  /** Abort the download if it is still running, wait until it has stopped, close the reader's file. */
  stop(): Promise<void>;
}

/** Thrown by `chunks()` when the transfer broke and is being started over. */
export function isDownloadRestarted(error: unknown): boolean {
  return error instanceof CybsError && error.code === 'EXTRACT_DOWNLOAD_RESTARTED';
}

export function followDownload(
  client: Pick<ReportingClient, 'downloadReportToFile'>,
  params: DownloadReportParams,
  filePath: string,
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
   * The reader starts once this many bytes are in the part file (or the download is complete): a
   * small file is then read whole, as if downloaded first, and only a large one is followed.
   */
  const START_AFTER = Math.max(options.startAfter ?? 0, READ_SIZE);
  /**
   * Bytes per read of the file (a multiple of READ_SIZE, about 1 MiB), handed on READ_SIZE at a
   * time. Each read waits for the thread pool, and the scanner behind it waits too: small reads
   * leave the scanner's thread idle between them.
   */
  const IO_SIZE = READ_SIZE * Math.max(1, Math.floor((1024 * 1024) / READ_SIZE));
  const expected = options.expected;
  let decide: (same: boolean) => void = () => {};
  const same = new Promise<boolean>((resolve) => (decide = resolve));
  const controller = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, controller.signal]) : controller.signal;
  let firstAttempt: number | undefined;
  let restarted = false;
  /** Bytes of the first attempt known to be in the part file, and how far the reader has read. */
  let written = 0;
  let position = 0;
  let settled: { ok: true } | { ok: false; error: unknown } | undefined;
  let wake: (() => void) | undefined;
  /** Whether a whole read is waiting in the part file (the first one once START_AFTER bytes are). */
  const readable = (): boolean => written - position >= (position === 0 ? START_AFTER : READ_SIZE);
  const notify = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const done = client.downloadReportToFile(params, filePath, {
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
  /** The reader's file, closed by the reader when it ends, or by stop() when it was abandoned. */
  let reading: FileHandle | undefined;
  const closeReader = async (file: FileHandle | undefined): Promise<void> => {
    if (file === undefined || reading !== file) return;
    reading = undefined;
    await file.close();
  };
  const restartedError = () =>
    new CybsError('EXTRACT_DOWNLOAD_RESTARTED', 'the report download broke and is being started over', {
      stage: 'extract',
      retryable: true,
      context: { file: filePath },
    });

  async function* chunks(): AsyncGenerator<Buffer> {
    let file: FileHandle | undefined;
    try {
      // The part file exists once the first attempt has started writing; after a successful
      // download it has been renamed.
      while (file === undefined) {
        if (restarted) throw restartedError();
        if (settled && !settled.ok) throw settled.error;
        if (settled?.ok) {
          file = await open(filePath, 'r');
        } else if (firstAttempt !== undefined) {
          file = await open(`${filePath}.part`, 'r').catch(() => undefined);
          // Not created yet, or renamed meanwhile: what happened during the open decides (a
          // download that finished then will not wake this reader again).
          if (file === undefined && (settled || restarted)) continue;
        }
        if (file === undefined) await changed();
      }
      reading = file;
      for (;;) {
        if (restarted) throw restartedError();
        if (settled && !settled.ok) throw settled.error;
        // Whole reads while the download runs: each small one costs the scanner behind it.
        if (!settled && !readable()) {
          await changed();
          continue;
        }
        // Whether the download had finished before this read: then a short read is the end.
        const complete = settled?.ok === true;
        // Whole pieces of READ_SIZE, as many as are there (one at least: readable()), up to IO_SIZE.
        const size = complete
          ? IO_SIZE
          : Math.min(IO_SIZE, Math.max(READ_SIZE, Math.floor((written - position) / READ_SIZE) * READ_SIZE));
        const buffer = Buffer.allocUnsafe(size);
        const { bytesRead } = await file.read(buffer, 0, size, position);
        // Checked after the read: bytes of a restarted attempt must never be handed on.
        if (restarted) throw restartedError();
        if (bytesRead > 0) {
          position += bytesRead;
          for (let at = 0; at < bytesRead; at += READ_SIZE) {
            yield buffer.subarray(at, Math.min(bytesRead, at + READ_SIZE));
          }
        } else if (complete) {
          return;
        } else if (!settled) {
          await changed();
        }
      }
    } finally {
      await closeReader(file);
    }
  }

  return {
    chunks,
    done,
    same,
    async stop() {
      if (!settled) controller.abort();
      await done.catch(() => {});
      // A reader that stopped early (a refusal at the header) leaves its generator unfinished.
      await closeReader(reading);
    },
  };
}
