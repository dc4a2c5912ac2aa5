import { mkdir, mkdtemp, readdir, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DEAD_PROCESS_GRACE_MS,
  STALE_AFTER_MS,
  makeSpoolDir,
  spoolFilePath,
  sweepStaleSpoolDirs,
} from '../../../src/spool/spool-dirs.js';

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);
const LIVE_PID = 4242;
const DEAD_PID = 4343;

describe('spool directories', () => {
  let parent: string;
  beforeEach(async () => {
    parent = await mkdtemp(join(tmpdir(), 'cybs-spool-test-'));
  });
  afterEach(async () => {
    await rm(parent, { recursive: true, force: true });
  });

  /** A directory named `name` in `parent`, with a file of `bytes`, last changed `ageMs` before NOW. */
  async function dir(name: string, ageMs: number, bytes = 10): Promise<string> {
    const path = join(parent, name);
    await mkdir(join(path, 'pages'), { recursive: true });
    await writeFile(join(path, 'pages', 'spool.txt'), Buffer.alloc(bytes));
    const when = new Date(NOW - ageMs);
    await utimes(path, when, when);
    return name;
  }

  const sweep = () =>
    sweepStaleSpoolDirs({
      parent,
      now: () => NOW,
      isAlive: (pid) => pid === LIVE_PID || pid === process.pid,
    });

  it('makes directories named with the process id, of a kind or not', async () => {
    const plain = await makeSpoolDir(undefined, parent);
    const oneTime = await makeSpoolDir('one-time', parent);
    expect(basename(plain)).toMatch(new RegExp(`^cybs-etl-${process.pid}-[A-Za-z0-9]{6}$`));
    expect(basename(oneTime)).toMatch(new RegExp(`^cybs-etl-one-time-${process.pid}-[A-Za-z0-9]{6}$`));
  });

  it('removes the directories of processes that are gone, and any older than a day; keeps the rest', async () => {
    const hour = 3_600_000;
    const removed = [
      await dir(`cybs-etl-${DEAD_PID}-aB3dE6`, DEAD_PROCESS_GRACE_MS, 1_000_000),
      await dir(`cybs-etl-one-time-${DEAD_PID}-Zz9Yy8`, 2 * hour),
      // Names from before the process id was in them: by age only.
      await dir('cybs-etl-Q1w2E3', STALE_AFTER_MS + hour),
      await dir('cybs-etl-one-time-R4t5Y6', STALE_AFTER_MS),
      // A live process's, but older than a day.
      await dir(`cybs-etl-${LIVE_PID}-OldOne`, STALE_AFTER_MS + hour),
    ];
    const kept = [
      // Gone, but too recent: /tmp may be shared with another process-id namespace.
      await dir(`cybs-etl-${DEAD_PID}-Recent`, DEAD_PROCESS_GRACE_MS - 1000),
      await dir(`cybs-etl-${LIVE_PID}-Living`, 5 * hour),
      await dir('cybs-etl-Young1', 5 * hour),
      // This process's own, however old.
      await dir(`cybs-etl-${process.pid}-MyOwn1`, STALE_AFTER_MS * 2),
      // Not ours by name.
      await dir('cybs-bench-Abc123', STALE_AFTER_MS * 2),
      await dir('cybs-etl-bench-cache', STALE_AFTER_MS * 2),
    ];
    // Not a directory, or a link to one: never followed or removed.
    await writeFile(join(parent, 'cybs-etl-9999-File01'), 'x');
    await utimes(join(parent, 'cybs-etl-9999-File01'), new Date(0), new Date(0));
    const target = await dir('elsewhere', STALE_AFTER_MS * 2);
    await symlink(join(parent, target), join(parent, 'cybs-etl-9998-Link01'));
    kept.push('cybs-etl-9999-File01', 'cybs-etl-9998-Link01', target);

    const result = await sweep();
    expect(result.removed.map((d) => basename(d)).sort()).toEqual([...removed].sort());
    expect(result.bytes).toBe(1_000_000 + 4 * 10);
    expect((await readdir(parent)).sort()).toEqual([...kept].sort());
    expect(await readdir(join(parent, target, 'pages'))).toEqual(['spool.txt']);
    expect(await sweep()).toEqual({ removed: [], bytes: 0 });
  });

  it('never fails: a parent that cannot be listed is left alone', async () => {
    const result = await sweepStaleSpoolDirs({ parent: join(parent, 'missing') });
    expect(result).toEqual({ removed: [], bytes: 0 });
  });

  it('names a spool file after untrusted text only as a plain entry of its directory (issue 26 #9)', () => {
    const dir = join(parent, 'spool');
    for (const [name, expected] of [
      ['../../../pwn_rn_2026-11-20T000000.000Z.csv', '_.._.._.._pwn_rn_2026-11-20T000000.000Z.csv'],
      ['..', '_..'],
      ['', '_'],
      ['/etc/passwd', '_etc_passwd'],
      ['a\\b\u0000c d.xml', 'a_b_c_d.xml'],
      ['TransactionRequest+Daily_2026-11-20.csv', 'TransactionRequest+Daily_2026-11-20.csv'],
    ] as const) {
      const path = spoolFilePath(dir, name);
      expect(path).toBe(join(dir, expected));
    }
    expect(basename(spoolFilePath(dir, 'x'.repeat(300)))).toHaveLength(120);
  });
});
