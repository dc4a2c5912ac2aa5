/**
 * The temporary directories a run spools into (a window's downloaded file and pages, a backfill's
 * one-time reports), and the sweep that removes the ones a process could not: a process killed
 * with SIGKILL (the OOM killer, `kill -9`, a container stopped hard) leaves its spools behind, up to
 * hundreds of MB for a large window, and nothing else would ever remove them.
 *
 * A directory is named `cybs-etl-[<kind>-]<pid>-XXXXXX`: the id of the process that made it tells
 * a later run whether that process still runs.
 */
import { lstat, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { Logger } from 'pino';

const PREFIX = 'cybs-etl-';
/** `cybs-etl-` then an optional kind, the pid, and mkdtemp's six characters. Older names have no pid. */
const NAME = /^cybs-etl-(?:([a-z][a-z-]*?)-)??(?:(\d+)-)?[A-Za-z0-9]{6}$/;

/**
 * A directory whose process is gone is left alone this long (its mtime is when its last spool was
 * made): where /tmp is shared by containers with their own process ids, another container's live
 * process can look gone from here. No window spends that long before it writes its first spool.
 */
export const DEAD_PROCESS_GRACE_MS = 10 * 60_000;
/** Any of our spool directories this old is stale, whatever its name says (older names have no pid). */
export const STALE_AFTER_MS = 24 * 3_600_000;

/** A fresh spool directory of this process, in the system's temporary directory unless `parent`. */
export function makeSpoolDir(kind?: string, parent = tmpdir()): Promise<string> {
  return mkdtemp(join(parent, `${PREFIX}${kind ? `${kind}-` : ''}${process.pid}-`));
}

/** Characters a spool file's name keeps; any other becomes `_`. */
const UNSAFE_NAME_CHARS = /[^A-Za-z0-9._+-]/g;
/** A file name's limit on common file systems is 255 bytes; a spool's name stays well within it. */
const MAX_SPOOL_NAME = 120;

/**
 * The path of a spool file in `dir`, named after `name` (a report name, a report time), which may
 * come from configuration or from the service: its separators, dots at its start and any other
 * character outside `[A-Za-z0-9._+-]` are replaced, so that the file is always a plain entry of
 * `dir`, never a path that leaves it.
 */
export function spoolFilePath(dir: string, name: string): string {
  let safe = name.replace(UNSAFE_NAME_CHARS, '_').slice(0, MAX_SPOOL_NAME);
  if (safe === '' || safe.startsWith('.')) safe = `_${safe}`;
  const path = join(dir, safe);
  if (basename(path) !== safe)
    throw new Error(`spool file name ${JSON.stringify(safe)} is not a plain file name`);
  return path;
}

export interface SweepOptions {
  /** Where to look (the system's temporary directory). */
  parent?: string;
  now?: () => number;
  /** Whether a process runs (signal 0; EPERM: it runs under another user). */
  isAlive?: (pid: number) => boolean;
  logger?: Logger;
}

export interface SweepResult {
  removed: string[];
  bytes: number;
}

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Remove the spool directories left by runs that ended without removing them: ours (owned by this
 * user, real directories, not links), not this process's, and either older than STALE_AFTER_MS or
 * made by a process that no longer runs, DEAD_PROCESS_GRACE_MS ago or more. Never fails: what
 * cannot be read or removed is left (and logged at debug).
 */
export async function sweepStaleSpoolDirs(options: SweepOptions = {}): Promise<SweepResult> {
  const parent = options.parent ?? tmpdir();
  const now = options.now?.() ?? Date.now();
  const isAlive = options.isAlive ?? processIsAlive;
  const uid = process.getuid?.();
  const result: SweepResult = { removed: [], bytes: 0 };
  let names: string[];
  try {
    names = (await readdir(parent)).filter((n) => n.startsWith(PREFIX));
  } catch (error) {
    options.logger?.debug({ err: error, parent }, 'could not list the temporary directory for stale spools');
    return result;
  }
  for (const name of names) {
    const match = NAME.exec(name);
    if (!match) continue;
    const pid = match[2] === undefined ? undefined : Number(match[2]);
    if (pid === process.pid) continue;
    const dir = join(parent, name);
    try {
      const info = await lstat(dir);
      if (!info.isDirectory() || (uid !== undefined && info.uid !== uid)) continue;
      const age = now - info.mtimeMs;
      const stale =
        age >= STALE_AFTER_MS || (pid !== undefined && age >= DEAD_PROCESS_GRACE_MS && !isAlive(pid));
      if (!stale) continue;
      const bytes = await sizeOf(dir);
      await rm(dir, { recursive: true, force: true });
      result.removed.push(dir);
      result.bytes += bytes;
    } catch (error) {
      options.logger?.debug({ err: error, dir }, 'could not remove a stale spool directory');
    }
  }
  if (result.removed.length > 0) {
    options.logger?.info(
      { directories: result.removed, megabytes: Math.round(result.bytes / 1e5) / 10 },
      'removed the spool directories of runs that ended without removing them',
    );
  }
  return result;
}

/** The bytes of the files under `dir`. */
async function sizeOf(dir: string): Promise<number> {
  let bytes = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) bytes += await sizeOf(path);
    else if (entry.isFile()) bytes += (await lstat(path)).size;
  }
  return bytes;
}
