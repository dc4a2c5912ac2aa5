/**
 * Issue 30, finding 4: a backfill in a real terminal (a tmux pane, 120×40) keeps its screen
 * readable. Log records are written above the progress bar, one line each, never into it; the
 * summary is printed after the bar, also when the backfill is stopped with Ctrl-C.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../packages/simulator/src/server/start-simulator.js';
import type { SimulatorHandle } from '../../packages/simulator/src/server/start-simulator.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { E2E_NOW, onlyPipelines, simulatorEnv } from '../helpers/e2e.js';
import { repoRoot } from '../helpers/simulator-process.js';

const socket = `cybs-etl-test-${randomBytes(4).toString('hex')}`;

function tmux(...args: string[]): string {
  const r = spawnSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tmux ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** The pane's whole history and screen, wrapped lines joined, escape sequences left out. */
function screen(session: string): string[] {
  return tmux('capture-pane', '-p', '-J', '-S', '-', '-t', session).split('\n');
}

async function waitForScreen(session: string, test: (lines: string[]) => boolean): Promise<string[]> {
  const deadline = Date.now() + 100_000;
  for (;;) {
    const lines = screen(session);
    if (test(lines)) return lines;
    if (Date.now() > deadline)
      throw new Error(`the pane never showed what was awaited:\n${lines.join('\n')}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const RECORD = /^\[\d\d:\d\d:\d\d\] (INFO|WARN|ERROR)( \(.*\))?: \S/;
const BAR = /^windows [█░]{30} \d+\/\d+ \| \d+ rows \| \d+ rows\/s \| ETA \S+$/;
const SUMMARY = [
  /^Run \d+ (finished|interrupted) in \d+\.\d s$/,
  /^$/,
  /^ {2}windows loaded +\d+$/,
  /^ {4}of which unchanged +\d+ {3}\(the data last loaded, its rows untouched: nothing written\)$/,
  /^ {2}windows no data +\d+$/,
  /^ {2}windows not ready +\d+$/,
  /^ {2}windows failed +\d+$/,
  /^ {2}windows skipped +\d+ {3}\(loaded by another process meanwhile\)$/,
];

/** Every line before the summary is a whole record, a whole bar or the stop message; the summary is intact. */
function expectReadable(lines: string[], extra: RegExp[] = []): void {
  const start = lines.findIndex((l) => SUMMARY[0]!.test(l));
  expect(start, lines.join('\n')).toBeGreaterThan(0);
  const before = lines.slice(0, start).filter((l) => l !== '');
  const strange = before.filter((l) => !RECORD.test(l) && !BAR.test(l) && !extra.some((e) => e.test(l)));
  expect(strange, lines.join('\n')).toEqual([]);
  // The bar was left once, whole, just above the summary.
  expect(lines[start - 1], lines.join('\n')).toMatch(BAR);
  SUMMARY.forEach((pattern, i) => expect(lines[start + i], lines.join('\n')).toMatch(pattern));
  const rest = lines.slice(start + SUMMARY.length);
  expect(rest.find((l) => /^ {2}rows loaded +\d+$/.test(l))).toBeDefined();
  expect(rest.find((l) => /^ {2}rows rejected +\d+ {3}\(see etl\.rejects\)$/.test(l))).toBeDefined();
}

describe('backfill in a terminal', () => {
  let sim: SimulatorHandle;
  let database: TestDatabase;
  let dir: string;
  const sessions: string[] = [];

  beforeAll(async () => {
    const now = Date.parse(E2E_NOW);
    sim = await startSimulator({
      seed: 5,
      organizations: 2,
      transactionsPerDay: 20,
      startDate: '2023-12-01',
      clock: () => now,
    });
    database = await createTestDatabase('tty');
    dir = await mkdtemp(join(tmpdir(), 'cybs-tty-'));
    await writeFile(
      join(dir, 'config.yaml'),
      [
        'log:',
        '  level: info',
        'defaults:',
        `  organizations: [${sim.organizations.join(', ')}]`,
        stringify({ pipelines: onlyPipelines({ transaction_request: {}, payment_batch_detail: {} }) }),
      ].join('\n'),
    );
  });
  afterAll(async () => {
    if (!process.env.KEEP_TMUX) spawnSync('tmux', ['-L', socket, 'kill-server']);
    await database?.drop();
    await sim?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A tmux session running one backfill (then printing its exit code and waiting to be read). */
  async function startBackfill(from: string, to: string): Promise<string> {
    const session = `s${sessions.length}`;
    sessions.push(session);
    const env = {
      ...simulatorEnv(sim.portfolioCredentials, sim.baseUrl, database.url),
      TERM: 'xterm-256color',
    };
    const script = join(dir, `${session}.sh`);
    const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    await writeFile(
      script,
      [
        '#!/bin/bash',
        // Ctrl-C is for the backfill: the shell goes on to print its exit code.
        'trap : INT',
        ...Object.entries(env).map(([k, v]) => `export ${k}=${quote(v)}`),
        `cd ${quote(repoRoot)}`,
        [
          quote(process.execPath),
          '--import tsx pipelines/cli.ts',
          `--config ${quote(join(dir, 'config.yaml'))}`,
          `--now ${E2E_NOW}`,
          `backfill --from ${from} --to ${to} --force`,
        ].join(' '),
        'echo "EXIT=$?"',
        'sleep 600',
      ].join('\n'),
    );
    await chmod(script, 0o755);
    tmux('new-session', '-d', '-s', session, '-x', '120', '-y', '40', script);
    return session;
  }

  it(
    'writes every record above the bar, one line each, and the summary after it',
    { timeout: 150_000 },
    async () => {
      const session = await startBackfill('2024-03-01', '2024-03-22');
      const lines = await waitForScreen(session, (l) => l.some((x) => x.startsWith('EXIT=')));
      expect(lines.find((l) => l.startsWith('EXIT='))).toBe('EXIT=0');
      expectReadable(lines);
      // One line per window the summary counts, and no field on a line of its own.
      const count = (name: string) =>
        Number(/(\d+)$/.exec(lines.find((l) => l.startsWith(`  windows ${name} `))!)![1]);
      const windowLines = lines.filter((l) => /INFO: window done \{.*"pipeline":.*"window":/.test(l));
      expect(windowLines.length).toBe(
        count('loaded') + count('no data') + count('not ready') + count('failed'),
      );
      expect(windowLines.length).toBeGreaterThan(80);
      expect(lines.filter((l) => /^\s+"?\w+"?: /.test(l))).toEqual([]);
    },
  );

  it(
    'prints the stop message above the bar and the summary after it on Ctrl-C',
    { timeout: 150_000 },
    async () => {
      const session = await startBackfill('2024-01-01', '2024-03-22');
      await waitForScreen(session, (l) => l.some((x) => /^windows [█░]{30} ([5-9]|\d\d+)\//.test(x)));
      tmux('send-keys', '-t', session, 'C-c');
      // The terminal itself echoes Ctrl-C as `^C` where its cursor is: at the start of whichever
      // line the program writes next (a record, the stop message). That is not the program's
      // output, which is what is checked.
      const lines = (await waitForScreen(session, (l) => l.some((x) => x.startsWith('EXIT=')))).map((l) =>
        l.replace(/^\^C/, ''),
      );
      expect(lines.find((l) => l.startsWith('EXIT='))).toBe('EXIT=1');
      const stopMessage =
        /^SIGINT: stopping cleanly; run the same command again to continue where it stopped\.$/;
      expect(lines.filter((l) => stopMessage.test(l))).toHaveLength(1);
      expect(lines.find((l) => /^Run \d+ interrupted in /.test(l))).toBeDefined();
      expectReadable(lines, [stopMessage]);
    },
  );
});
