import cliProgress from 'cli-progress';
import type { Logger } from './logger.js';

/** Where the CLI writes (process.stdout, process.stderr, or a test's capture). */
export interface OutputStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

export interface ProgressUpdate {
  total: number;
  done: number;
  rowsLoaded: number;
}

export interface ProgressReporter {
  update(event: ProgressUpdate): void;
  stop(): void;
}

/**
 * Backfill progress: a bar (windows done/total, rows, rate, ETA) on a terminal, and otherwise a
 * structured log line at most every `intervalMs`.
 */
export function createProgressReporter(
  stream: OutputStream,
  logger: Logger,
  intervalMs = 10_000,
): ProgressReporter {
  const started = Date.now();
  if (stream.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        format: 'windows {bar} {value}/{total} | {rows} rows | {rate} rows/s | ETA {eta_formatted}',
        stream: stream as unknown as NodeJS.WritableStream,
        hideCursor: true,
        etaBuffer: 20,
      },
      cliProgress.Presets.shades_classic,
    );
    let startedBar = false;
    return {
      update(e) {
        const rate = Math.round(e.rowsLoaded / Math.max(0.001, (Date.now() - started) / 1000));
        if (!startedBar) {
          bar.start(e.total, e.done, { rows: e.rowsLoaded, rate });
          startedBar = true;
        } else {
          bar.setTotal(e.total);
          bar.update(e.done, { rows: e.rowsLoaded, rate });
        }
      },
      stop() {
        if (startedBar) bar.stop();
      },
    };
  }
  let last = 0;
  let latest: ProgressUpdate | undefined;
  const emit = (e: ProgressUpdate) => {
    const seconds = (Date.now() - started) / 1000;
    const rate = e.done / Math.max(0.001, seconds);
    logger.info(
      {
        progress: {
          windowsDone: e.done,
          windowsTotal: e.total,
          rowsLoaded: e.rowsLoaded,
          rowsPerSecond: Math.round(e.rowsLoaded / Math.max(0.001, seconds)),
          etaSeconds: rate > 0 ? Math.round((e.total - e.done) / rate) : null,
        },
      },
      'backfill progress',
    );
  };
  return {
    update(e) {
      latest = e;
      if (Date.now() - last >= intervalMs || e.done === e.total) {
        last = Date.now();
        emit(e);
      }
    },
    stop() {
      if (latest && latest.done !== latest.total) emit(latest);
    },
  };
}
