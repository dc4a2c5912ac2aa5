/**
 * Crash campaign: a backfill in a child process (`node --import tsx pipelines/cli.ts backfill …`) is
 * killed with SIGKILL at seeded random moments — during start-up, migrations, report search,
 * downloads, COPY, merge or commit — and restarted each time. At the end the warehouse equals the
 * simulator's ground truth, no window is left `running`, nothing is duplicated and etl.rejects holds
 * only bad rows (the feed has none, so none).
 *
 * Kills: CYBS_CRASH_KILLS (default 10; 40 with CYBS_LONG_TESTS=1); seed: CYBS_CRASH_SEED (default 7).
 * Each restart uses --force, so every attempt re-loads windows that earlier attempts committed: a
 * kill in the middle of a re-load must leave the committed version intact. A restart takes the
 * killed process's windows once pg-boss has handed their jobs on (their heartbeats lapsed): the
 * killed attempt's claim can no longer commit.
 */
import { mkdir, readdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { E2E_NOW, createE2eWorld, e2eConfigYaml } from '../helpers/e2e.js';
import type { E2eWorld } from '../helpers/e2e.js';
import { seededRandom, spawnCli } from '../helpers/cli-process.js';
import { compareWithGroundTruth, duplicateRows } from '../helpers/ground-truth.js';
import { findSecrets, secretsOf } from '../helpers/secrets.js';
import { DEAD_PROCESS_GRACE_MS } from '../../src/spool/spool-dirs.js';

const LONG = process.env['CYBS_LONG_TESTS'] === '1';
const KILLS = Number(process.env['CYBS_CRASH_KILLS'] ?? (LONG ? 40 : 10));
const SEED = Number(process.env['CYBS_CRASH_SEED'] ?? 7);
const FROM = '2024-03-02';
const TO = LONG ? '2024-03-15' : '2024-03-04';

describe('crash campaign (SIGKILL at random moments, restart)', () => {
  let world: E2eWorld;
  let config: string;
  /** The runs' temporary directory (TMPDIR), where a killed run leaves its spools. */
  let tmp: string;
  const outputs: string[] = [];
  const spoolDirs = async () => (await readdir(tmp)).filter((n) => n.startsWith('cybs-etl-'));

  beforeAll(async () => {
    world = await createE2eWorld({
      prefix: 'crash',
      simulator: { organizations: 2, transactionsPerDay: LONG ? 80 : 30 },
    });
    config = join(world.dir, 'crash.yaml');
    tmp = join(world.dir, 'tmp');
    await mkdir(tmp);
    await writeFile(
      config,
      e2eConfigYaml(world.sim.organizations, `  globalConcurrency: 4\n`).replace(
        'level: warn',
        'level: info',
      ),
    );
  });
  afterAll(async () => {
    await world?.close();
  });

  const backfill = (force: boolean) =>
    spawnCli(
      [
        '--config',
        config,
        '--now',
        E2E_NOW,
        'backfill',
        '--from',
        FROM,
        '--to',
        TO,
        ...(force ? ['--force'] : []),
      ],
      { ...world.env, TMPDIR: tmp },
    );

  it(`survives ${KILLS} kills and ends equal to the ground truth`, { timeout: 600_000 }, async () => {
    const random = seededRandom(SEED);
    const first = backfill(false);
    const done = await first.exited;
    outputs.push(first.stdout(), first.stderr());
    expect(done.code, first.stdout() + first.stderr()).toBe(0);
    // How long one uninterrupted forced run takes here (start-up included), as the killed runs are:
    // the kills fall inside it. (The first run also creates the schemas and views, so it is longer.)
    const t0 = performance.now();
    const timed = backfill(true);
    const timedExit = await timed.exited;
    const fullMs = performance.now() - t0;
    outputs.push(timed.stdout(), timed.stderr());
    expect(timedExit.code, timed.stdout() + timed.stderr()).toBe(0);

    let killedMidWindow = 0;
    let killedDuringCommit = 0;
    for (let i = 0; i < KILLS; i++) {
      const p = backfill(true);
      const delay = Math.round(random() * fullMs);
      const timer = setTimeout(() => p.child.kill('SIGKILL'), delay);
      const exit = await p.exited;
      clearTimeout(timer);
      outputs.push(p.stdout(), p.stderr());
      if (exit.signal === 'SIGKILL') {
        const running = await world.db.query(
          `select count(*)::int as n from etl.windows where status = 'running'`,
        );
        if (running.rows[0].n > 0) killedMidWindow++;
        if (/window done/.test(p.stderr())) killedDuringCommit++;
      } else {
        expect(exit.code, p.stdout() + p.stderr()).toBe(0);
      }
      // Invariants after every kill: nothing duplicated, every loaded window whole.
      expect(await duplicateRows(world.db)).toBe(0);
    }

    // The spools of runs killed in a window stay behind; the next run removes those of processes
    // gone for DEAD_PROCESS_GRACE_MS (their time moved back by that much here).
    const leftBehind = await spoolDirs();
    const past = new Date(Date.now() - DEAD_PROCESS_GRACE_MS - 1000);
    for (const name of leftBehind) await utimes(join(tmp, name), past, past);

    // One more run: the killed processes' jobs are handed to it once their heartbeats lapse, so it loads
    // whatever the kills left and skips nothing.
    const final = backfill(false);
    const finalExit = await final.exited;
    outputs.push(final.stdout(), final.stderr());
    expect(finalExit.code, final.stdout() + final.stderr()).toBe(0);
    expect(final.stdout()).toMatch(/windows skipped\s+0\b/);
    expect(final.stdout()).not.toMatch(/still held/);
    expect(final.stderr()).not.toMatch(/waiting for windows another process is loading/);
    expect(await spoolDirs()).toEqual([]);

    const result = await compareWithGroundTruth(world.db, {
      truth: (o, s, e) => world.sim.groundTruth(o, s, e),
      organizations: world.sim.organizations,
      startDate: FROM,
      endDate: TO,
    });
    expect(result.mismatches).toEqual([]);
    expect(result.rowsExpected).toBeGreaterThan(500);
    expect(await duplicateRows(world.db)).toBe(0);
    const states = await world.db.query(`select status, count(*)::int as n from etl.windows group by status`);
    for (const row of states.rows) {
      expect(['loaded', 'no_data']).toContain(row.status);
    }
    // The runs of killed processes are closed by the next run, not left `running` for ever.
    const runs = await world.db.query(
      `select count(*) filter (where status = 'running')::int as running,
              count(*) filter (where status = 'interrupted')::int as interrupted from etl.runs`,
    );
    expect(runs.rows[0].running).toBe(0);
    expect(runs.rows[0].interrupted).toBeGreaterThan(0);
    const rejects = await world.db.query(`select count(*)::int as n from etl.rejects`);
    expect(rejects.rows[0].n).toBe(0);
    expect(findSecrets(outputs.join('\n'), secretsOf(world))).toEqual([]);
    console.log(
      `crash campaign: ${KILLS} SIGKILLs (seed ${SEED}), ${killedMidWindow} with a window in flight, ` +
        `${killedDuringCommit} after at least one window committed in that attempt; ` +
        `${leftBehind.length} spool directories left behind, removed by the next run; ` +
        `${result.rowsExpected} rows equal to the truth, 0 lost, 0 duplicated; one full run ${Math.round(fullMs)} ms`,
    );
  });
});
