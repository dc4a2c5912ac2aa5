/**
 * Workers on many machines, played by processes: a planner (`backfill --detach`) enqueues a range,
 * three `cybs-etl worker` processes load it from the queue in the warehouse, and one of them is
 * SIGKILLed with a window in flight. Its job's heartbeat lapses, pg-boss hands the job to another
 * worker, whose attempt takes the window over, and the warehouse ends equal to the
 * simulator's ground truth: every window loaded once, no row twice, no job dead-lettered. The
 * credential's limit (api.maxConcurrentWindows) holds across the workers, as the simulator counts
 * the concurrent requests of the key.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { E2E_NOW, createE2eWorld, e2eConfigYaml, onlyPipelines } from '../helpers/e2e.js';
import type { E2eWorld } from '../helpers/e2e.js';
import { spawnCli } from '../helpers/cli-process.js';
import type { CliProcess } from '../helpers/cli-process.js';
import { compareWithGroundTruth, duplicateRows } from '../helpers/ground-truth.js';

const FROM = '2024-03-02';
const TO = '2024-03-09';
/** A second week, loaded by the survivors alone, where the credential's limit is measured. */
const FROM2 = '2024-03-10';
const TO2 = '2024-03-17';
const PIPELINES = ['transaction_request', 'payment_batch_detail', 'funding_detail'];
const PER_CREDENTIAL = 2;

describe('workers on a shared queue (three processes, one killed mid-window)', () => {
  let world: E2eWorld;
  let config: string;
  const workers: CliProcess[] = [];

  beforeAll(async () => {
    world = await createE2eWorld({
      prefix: 'workers',
      simulator: { organizations: 3, transactionsPerDay: 30 },
    });
    config = join(world.dir, 'workers.yaml');
    const yaml =
      e2eConfigYaml(world.sim.organizations, '', true)
        .replace('level: warn', 'level: info')
        .replace('api:\n', `api:\n  maxConcurrentWindows: ${PER_CREDENTIAL}\n`) +
      '\n' +
      stringify({
        queue: { heartbeatSeconds: 10, retryLimit: 3, retryDelaySeconds: 1 },
        pipelines: onlyPipelines(Object.fromEntries(PIPELINES.map((p) => [p, {}]))),
      });
    await writeFile(config, yaml);
  });
  afterAll(async () => {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
    await world?.close();
  });

  const cli = (args: string[]) => spawnCli(['--config', config, '--now', E2E_NOW, ...args], world.env);
  const query = async <T = Record<string, unknown>>(text: string) => (await world.db.query(text)).rows as T[];

  it(
    'loads every window once, equal to the ground truth, within the credential limit',
    { timeout: 300_000 },
    async () => {
      // Each report download waits before its headers, so that windows overlap and one is in flight at the kill.
      world.sim.setFaults('download:slow-headers=200');
      const planner = cli(['backfill', '--from', FROM, '--to', TO, '--detach']);
      const planned = await planner.exited;
      expect(planned.code, planner.stdout() + planner.stderr()).toBe(0);
      const enqueued = Number(/Enqueued (\d+) window/.exec(planner.stdout())?.[1]);
      expect(enqueued).toBe(PIPELINES.length * 3 * 8);

      // A second planner over the same range adds nothing: every window is already queued.
      const again = cli(['backfill', '--from', FROM, '--to', TO, '--detach']);
      expect((await again.exited).code).toBe(0);
      expect(again.stdout()).toMatch(
        /^Enqueued 0 window\(s\) .*\(72 more were already queued or being loaded\)/m,
      );

      // status tells what waits for workers.
      const waiting = cli(['status']);
      expect((await waiting.exited).code).toBe(0);
      expect(waiting.stdout()).toContain(
        'Window queue (cybs-etl worker): 72 queued, 0 being loaded, 0 waiting to retry, 0 dead-lettered.',
      );

      for (let i = 0; i < 3; i++) workers.push(cli(['worker', '--concurrency', '3']));
      const deadline = Date.now() + 120_000;
      // Each worker looks up the subscriptions when it starts (not a window, so not limited); the
      // limit is counted from the moment every worker is taking windows.
      while (!workers.every((w) => w.stderr().includes('"msg":"worker started'))) {
        if (Date.now() > deadline)
          throw new Error(`a worker never started:\n${workers.map((w) => w.stderr()).join('\n')}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      world.sim.requestConcurrency({ reset: true });
      // Kill a worker while it holds a window (its job attempt's claim names its pid).
      let victim: CliProcess | undefined;
      while (!victim) {
        const owners = await query<{ owner: string }>(
          `select claim as owner from etl.windows where status = 'running' and claim is not null`,
        );
        victim = workers.find((w) => owners.some((o) => o.owner.endsWith(`:${w.child.pid}`)));
        if (Date.now() > deadline) throw new Error('no worker ever held a window');
        if (!victim) await new Promise((r) => setTimeout(r, 20));
      }
      victim.child.kill('SIGKILL');
      expect((await victim.exited).signal).toBe('SIGKILL');

      // The others finish the queue, the killed worker's window included.
      const queueEmptied = async (by: number) => {
        for (;;) {
          const open = await query<{ n: number }>(
            `select count(*)::int as n from pgboss.job where name = 'cybs_etl_windows' and state in ('created', 'retry', 'active')`,
          );
          if (open[0]!.n === 0) return;
          if (Date.now() > by) throw new Error('the queue was never emptied');
          await new Promise((r) => setTimeout(r, 250));
        }
      };
      await queueEmptied(deadline + 60_000);
      // While the killed worker's job held one of the credential's slots until its heartbeat lapsed,
      // the fleet never went over the limit.
      const duringKill = world.sim.requestConcurrency()[world.sim.portfolioCredentials.keyId]!;
      expect(duringKill.max).toBeLessThanOrEqual(PER_CREDENTIAL);

      // A second week for the two survivors alone (started, no lapsed job holding a slot): the fleet
      // uses the credential's whole allowance and never more. Counting starts once the planner is done.
      const planner2 = cli(['backfill', '--from', FROM2, '--to', TO2, '--detach']);
      const planned2 = await planner2.exited;
      expect(planned2.code, planner2.stdout() + planner2.stderr()).toBe(0);
      world.sim.requestConcurrency({ reset: true });
      expect(planner2.stdout()).toMatch(/^Enqueued 72 window\(s\)/m);
      await queueEmptied(Date.now() + 120_000);
      const steady = world.sim.requestConcurrency()[world.sim.portfolioCredentials.keyId]!;
      expect(steady.max).toBeLessThanOrEqual(PER_CREDENTIAL);
      expect(steady.max).toBe(PER_CREDENTIAL);

      const survivors = workers.filter((w) => w !== victim);
      // The workers refresh the models once they find the queue empty (nothing else runs a pass
      // here): the worker that loaded the last window does, a moment after its job completed.
      const modelled = async () =>
        (await query<{ n: number }>(`select count(*)::int as n from cybs_analytics.transactions`))[0]!.n;
      const loaded = async () =>
        (await query<{ n: number }>(`select count(*)::int as n from cybs.transaction_request`))[0]!.n;
      const refreshedBy = Date.now() + 60_000;
      while ((await modelled()) !== (await loaded())) {
        if (Date.now() > refreshedBy)
          throw new Error(`the models were not refreshed: ${await modelled()} of ${await loaded()} requests`);
        await new Promise((r) => setTimeout(r, 250));
      }
      expect(survivors.some((w) => w.stderr().includes('cybs_analytics materialized views refreshed'))).toBe(
        true,
      );
      for (const w of survivors) w.child.kill('SIGTERM');
      for (const w of survivors) {
        const exit = await w.exited;
        expect(exit.code, w.stderr()).toBe(0);
        expect(w.stderr()).toMatch(/"msg":"worker stopped"/);
      }

      const after = cli(['status']);
      expect((await after.exited).code).toBe(0);
      expect(after.stdout()).not.toContain('Window queue');

      const states = await query<{ status: string; n: number }>(
        `select status, count(*)::int as n from etl.windows group by status order by status`,
      );
      expect(states.filter((s) => !['loaded', 'no_data'].includes(s.status))).toEqual([]);
      expect(states.reduce((sum, s) => sum + s.n, 0)).toBe(2 * enqueued);
      const jobs = await query<{ name: string; state: string; n: number }>(
        `select name, state, count(*)::int as n from pgboss.job group by 1, 2 order by 1, 2`,
      );
      expect(jobs).toEqual([{ name: 'cybs_etl_windows', state: 'completed', n: 2 * enqueued }]);
      // The killed worker's window was retried: one job has a retry on record.
      const retried = await query<{ n: number }>(
        `select count(*)::int as n from pgboss.job where name = 'cybs_etl_windows' and retry_count > 0`,
      );
      expect(retried[0]!.n).toBeGreaterThanOrEqual(1);

      const result = await compareWithGroundTruth(world.db, {
        truth: (o, s, e) => world.sim.groundTruth(o, s, e),
        organizations: world.sim.organizations,
        startDate: FROM,
        endDate: TO2,
        pipelines: PIPELINES,
      });
      expect(result.mismatches).toEqual([]);
      expect(result.rowsExpected).toBeGreaterThan(500);
      expect(await duplicateRows(world.db)).toBe(0);
    },
  );
});
