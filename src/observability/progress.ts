import type { Logger } from './logger.js';

/** Where the CLI writes (process.stdout, process.stderr, or a test's capture). */
export interface OutputStream {
  write(text: string): unknown;
  isTTY?: boolean;
  /** A terminal's width in characters. */
  columns?: number;
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

/** Erase the line the cursor is on and go to its start. */
const ERASE_LINE = '\r\x1b[2K';

/**
 * The bottom line of a terminal, kept for a status line (the progress bar) that everything else
 * is written above: a record or message erases the status line, is written whole (ending in a
 * newline), and the status line is drawn again under it. Nothing is ever written into the bar.
 */
export interface TerminalLine {
  /** Write whole lines above the status line (to `to`, by default the terminal's own stream). */
  writeAbove(text: string, to?: OutputStream): void;
  /** Show (or redraw) the status line; cut to the terminal's width so that it never wraps. */
  show(line: string): void;
  /** Remove the status line; later writes go where it was. */
  clear(): void;
}

export function createTerminalLine(stream: OutputStream): TerminalLine {
  let current: string | undefined;
  return {
    writeAbove(text, to = stream) {
      if (current === undefined) {
        to.write(text);
        return;
      }
      stream.write(ERASE_LINE);
      to.write(text.endsWith('\n') ? text : `${text}\n`);
      stream.write(current);
    },
    show(line) {
      const width = Math.max(20, (stream.columns ?? 80) - 1);
      current = line.length > width ? line.slice(0, width) : line;
      stream.write(ERASE_LINE + current);
    },
    clear() {
      if (current === undefined) return;
      current = undefined;
      stream.write(ERASE_LINE);
    },
  };
}

/** Redraws of the bar at most this often (a window finishing more often than that is not drawn). */
const BAR_REDRAW_MS = 100;
const BAR_WIDTH = 30;

/** `windows ██████░░░░ 77/80 | 13808 rows | 2621 rows/s | ETA 1s` */
export function formatBar(e: ProgressUpdate, seconds: number): string {
  const fraction = e.total > 0 ? Math.min(1, e.done / e.total) : 0;
  const filled = Math.round(fraction * BAR_WIDTH);
  const rate = Math.round(e.rowsLoaded / Math.max(0.001, seconds));
  const windowsPerSecond = e.done / Math.max(0.001, seconds);
  const eta = windowsPerSecond > 0 ? formatEta((e.total - e.done) / windowsPerSecond) : '?';
  return (
    `windows ${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)} ${e.done}/${e.total}` +
    ` | ${e.rowsLoaded} rows | ${rate} rows/s | ETA ${eta}`
  );
}

function formatEta(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/**
 * Backfill progress: a bar (windows done/total, rows, rate, ETA) on the terminal's bottom line,
 * with log records written above it, and otherwise a structured log line at most every
 * `intervalMs`. stop() leaves the bar's last state as an ordinary line, so what follows (the
 * summary) starts on a line of its own.
 */
export function createProgressReporter(
  stream: OutputStream,
  logger: Logger,
  intervalMs = 10_000,
  terminal?: TerminalLine,
): ProgressReporter {
  const started = Date.now();
  let last = 0;
  let latest: ProgressUpdate | undefined;
  if (stream.isTTY && terminal) {
    let stopped = false;
    return {
      update(e) {
        latest = e;
        if (stopped) return;
        if (Date.now() - last >= BAR_REDRAW_MS || e.done === e.total) {
          last = Date.now();
          terminal.show(formatBar(e, (Date.now() - started) / 1000));
        }
      },
      stop() {
        if (stopped) return;
        stopped = true;
        terminal.clear();
        if (latest) terminal.writeAbove(`${formatBar(latest, (Date.now() - started) / 1000)}\n`);
      },
    };
  }
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
