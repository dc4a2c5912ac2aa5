/**
 * Issue 27, finding 5: output into a pipe whose reader has gone (`cybs-etl status | head -4`) ends
 * quietly. The CLI as shipped (the bundle's bin) writes into a pipe closed before its first write:
 * a FIFO whose only reader is closed, so every write fails with EPIPE, whatever the timing. Each
 * command that prints ends with its own exit code (0 when it did its work) and no stack trace.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_RUNTIME_ENV, NODE_RUNTIME_FLAGS } from '../../src/runtime-flags.js';
import { spawnCli } from '../helpers/cli-process.js';
import { compileCli } from '../helpers/compiled-cli.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { repoRoot } from '../helpers/simulator-process.js';

interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

describe('a closed pipe under stdout (the bundled CLI)', () => {
  let bundle: string;
  let dir: string;
  let database: TestDatabase;
  let fifos = 0;

  /** The write end of a pipe nobody reads any more: a FIFO opened, then its reader closed. */
  function closedPipe(): number {
    const fifo = join(dir, `pipe-${++fifos}`);
    const made = spawnSync('mkfifo', [fifo]);
    if (made.status !== 0) throw new Error(`mkfifo failed: ${made.stderr.toString()}`);
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(fifo, constants.O_WRONLY);
    closeSync(reader);
    return writer;
  }

  /** Run the bin with stdout (and optionally stderr) into closed pipes. */
  async function intoClosedPipe(args: string[], options: { closeStderr?: boolean } = {}): Promise<Ended> {
    const out = closedPipe();
    const err = options.closeStderr ? closedPipe() : 'pipe';
    const child = spawn(process.execPath, [...NODE_RUNTIME_FLAGS, bundle, ...args], {
      cwd: dir,
      env: {
        PATH: process.env['PATH'] ?? '',
        HOME: process.env['HOME'] ?? '',
        ...NODE_RUNTIME_ENV,
        DATABASE_URL: database.url,
      },
      stdio: ['ignore', out, err],
    });
    closeSync(out);
    if (typeof err === 'number') closeSync(err);
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
      (resolve) => child.on('close', (c, s) => resolve({ code: c, signal: s })),
    );
    return { code, signal, stderr };
  }

  beforeAll(async () => {
    bundle = compileCli('cybs-etl-bundle-test');
    dir = await mkdtemp(join(tmpdir(), 'cybs-pipe-'));
    await copyFile(join(repoRoot, 'config.yaml'), join(dir, 'config.yaml'));
    database = await createTestDatabase('pipe');
    const migrated = spawnCli(['migrate'], { DATABASE_URL: database.url }, { bundle, cwd: dir });
    const { code } = await migrated.exited;
    expect(code, migrated.stderr()).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const printing: [string, string[]][] = [
    ['--help', ['--help']],
    ['--version', ['--version']],
    ['a command’s --help', ['backfill', '--help']],
    ['pipelines', ['pipelines']],
    ['pipelines --json', ['pipelines', '--json']],
    ['pipelines --sql (170 kB of DDL)', ['pipelines', '--sql']],
    ['status', ['status']],
    ['status --json', ['status', '--json']],
    ['sql', ['sql', "select n, repeat('x', 50) as filler from generate_series(1, 2000) n"]],
    ['sql --json', ['sql', '--json', 'select n from generate_series(1, 2000) n']],
  ];
  for (const [name, args] of printing) {
    it(`${name}: exit code 0, nothing on stderr`, async () => {
      const r = await intoClosedPipe(args);
      expect(r.stderr).toBe('');
      expect(r.signal).toBeNull();
      expect(r.code).toBe(0);
    });
  }

  it('keeps the command’s own exit code when it fails, with stderr closed too', async () => {
    // A refused statement is a usage error (2); a crash on the closed stderr would be 1 or 7.
    const r = await intoClosedPipe(['sql', 'delete from etl.runs'], { closeStderr: true });
    expect(r.signal).toBeNull();
    expect(r.code).toBe(2);
  });

  it('in a shell pipeline: `cybs-etl pipelines --sql | head -1` under pipefail exits 0', () => {
    // More than a pipe's buffer (64 kB) of output: head has gone before the last write.
    const r = spawnSync(
      'bash',
      [
        '--norc',
        '--noprofile',
        '-c',
        'set -o pipefail; "$@" | head -1',
        'bash',
        process.execPath,
        ...NODE_RUNTIME_FLAGS,
        bundle,
        'pipelines',
        '--sql',
      ],
      {
        cwd: dir,
        env: { PATH: process.env['PATH'] ?? '', ...NODE_RUNTIME_ENV },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    expect(r.stderr.toString()).toBe('');
    expect(r.stdout.toString()).toBe('create schema if not exists "cybs";\n');
    expect(r.status).toBe(0);
  });
});
