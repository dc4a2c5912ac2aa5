/**
 * `cybs-etl windows` (issue 30, finding 2): list, show, retry and reset the windows of a selection
 * instead of editing etl.windows by hand; what changes state says what it will do and asks, and
 * without a terminal needs --yes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createE2eWorld } from '../helpers/e2e.js';
import type { E2eWorld } from '../helpers/e2e.js';

const TR = ['--pipelines', 'transaction_request'];

interface Listed {
  window: string;
  state: string;
  windows: number;
  attempts: number | null;
}

// Several CLI passes each over the simulator: generous on a busy machine.
describe('cybs-etl windows', { timeout: 240_000 }, () => {
  let world: E2eWorld;
  const list = async (...args: string[]) => {
    const r = await world.run(['windows', 'list', ...TR, '--json', ...args]);
    expect(r.code, r.stderr).toBe(0);
    return (JSON.parse(r.stdout) as Listed[]).map((w) => `${w.window} ${w.state}`);
  };
  const rowsOfWindow = async (key: string) => {
    const r = await world.db.query<{ n: number }>(
      `select count(*)::int as n from cybs.transaction_request
        where _source = (select split_part(source_ref, ' (report ', 1) from etl.windows
                          where pipeline = 'transaction_request' and window_key = $1)`,
      [key],
    );
    return r.rows[0]!.n;
  };

  beforeAll(async () => {
    world = await createE2eWorld({ prefix: 'wincmd' });
    expect((await world.run(['backfill', '--from', '2024-03-01', '--to', '2024-03-05', ...TR])).code).toBe(0);
    world.sim.setFaults('download:500');
    expect((await world.run(['backfill', '--from', '2024-03-07', '--to', '2024-03-07', ...TR])).code).toBe(1);
    world.sim.setFaults([]);
  }, 240_000);
  afterAll(async () => {
    await world?.close();
  });

  it('list shows windows and gaps, filtered by state and days', async () => {
    expect(await list()).toEqual([
      '2024-03-01 loaded',
      '2024-03-02 loaded',
      '2024-03-03 loaded',
      '2024-03-04 loaded',
      '2024-03-05 loaded',
      '2024-03-06 gap',
      '2024-03-07 failed',
      '2024-03-08..2024-03-23 gap',
    ]);
    expect(await list('--status', 'failed')).toEqual(['2024-03-07 failed']);
    expect(await list('--status', 'gap', '--to', '2024-03-06')).toEqual(['2024-03-06 gap']);
    expect(await list('--from', '2024-03-02', '--to', '2024-03-03')).toEqual([
      '2024-03-02 loaded',
      '2024-03-03 loaded',
    ]);
    const text = await world.run(['windows', 'list', ...TR, '--status', 'failed']);
    expect(text.stdout).toContain('2024-03-07');
    expect(text.stdout).toContain('API_HTTP_STATUS');
    const bad = await world.run(['windows', 'list', '--status', 'broken']);
    expect(bad.code).toBe(2);
  });

  it('show tells one window: attempts, error, counts, rejects, source and fingerprint', async () => {
    const failed = await world.run(['windows', 'show', 'transaction_request', '2024-03-07']);
    expect(failed.code, failed.stderr).toBe(0);
    expect(failed.stdout).toMatch(/state\s+failed/);
    expect(failed.stdout).toMatch(/attempts\s+1/);
    // The job's retries come first: no failed job counts toward the window's backoff yet.
    expect(failed.stdout).toMatch(/failed jobs in a row\s+0/);
    expect(failed.stdout).toMatch(/last error\s+API_HTTP_STATUS: CyberSource answered HTTP 500/);
    // Its job on the window queue waits for its next attempt.
    expect(failed.stdout).toMatch(/job\s+[0-9a-f-]{36} on the window queue/);
    expect(failed.stdout).toMatch(/job state\s+retry \(waiting for its next attempt\)/);
    expect(failed.stdout).toMatch(/job retries\s+\d of 3/);
    expect(failed.stdout).toMatch(/job worker\s+-/);
    const loaded = JSON.parse(
      (await world.run(['windows', 'show', 'transaction_request', '2024-03-02', '--json'])).stdout,
    ) as {
      state: string;
      rowsLoaded: number;
      sourceRef: string;
      fingerprint: unknown;
      counts: Record<string, number>;
      rejects: { count: number };
      job: { state: string; deadLettered: boolean; worker: string | null } | null;
    };
    expect(loaded.state).toBe('loaded');
    expect(loaded.rowsLoaded).toBeGreaterThan(0);
    expect(loaded.sourceRef).toContain('TransactionRequestReport_Daily');
    expect(loaded.fingerprint).not.toBeNull();
    expect(loaded.counts.inserted).toBe(loaded.rowsLoaded);
    expect(loaded.rejects.count).toBe(0);
    expect(loaded.job).toMatchObject({ state: 'completed', deadLettered: false, worker: null });
    const missing = await world.run(['windows', 'show', 'transaction_request', '2023-01-01']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no window transaction_request 2023-01-01');
  });

  it("retry puts the failed window's job on the queue now, and a queue pass loads it", async () => {
    const jobsOf = async (key: string) =>
      (
        await world.db.query<{ id: string; state: string; due: boolean }>(
          `select id::text as id, state::text as state, start_after <= now() as due from pgboss.job
            where name = 'cybs_etl_windows' and singleton_key = $1 order by created_on desc`,
          [`transaction_request|${world.sim.organizations[0]}|${key}`],
        )
      ).rows;
    const [before] = await jobsOf('2024-03-07');
    expect(before?.state).toBe('retry');
    const retry = await world.run(['windows', 'retry', ...TR, '--yes']);
    expect(retry.code, retry.stdout + retry.stderr).toBe(0);
    expect(retry.stdout).toContain('1 failed window(s) will be retried now');
    // Its job was waiting for a retry: not enqueued twice, due now.
    expect(retry.stdout).toContain(
      'Enqueued 0 window job(s) on the window queue; 1 already queued (a retry that was waiting is due now).',
    );
    expect(await jobsOf('2024-03-07')).toEqual([{ id: before!.id, state: 'retry', due: true }]);
    // A pass working the queue (run's own worker, as any cybs-etl worker) loads it through that job.
    const run = await world.run(['run', ...TR]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(await jobsOf('2024-03-07')).toEqual([{ id: before!.id, state: 'completed', due: true }]);
    const shown = JSON.parse(
      (await world.run(['windows', 'show', 'transaction_request', '2024-03-07', '--json'])).stdout,
    ) as { state: string; attempts: number; job: { id: string; state: string } };
    expect(shown).toMatchObject({
      state: 'loaded',
      attempts: 2,
      job: { id: before!.id, state: 'completed' },
    });
  });

  it('reset says what it will do and needs --yes off a terminal; the rows stay until the next run loads the window again', async () => {
    const rows = await rowsOfWindow('2024-03-02');
    expect(rows).toBeGreaterThan(0);
    const args = ['windows', 'reset', ...TR, '--from', '2024-03-02', '--to', '2024-03-02'];
    const refused = await world.run(args);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toContain('1 window(s) will be forgotten');
    expect(refused.stdout).toContain('transaction_request sim_merchant_1 2024-03-02 (loaded)');
    expect(refused.stderr).toBe(
      'cybs-etl: windows reset needs a confirmation and standard input is not a terminal: run it again with --yes to go on without asking.\n',
    );
    expect(await list('--status', 'loaded', '--from', '2024-03-02', '--to', '2024-03-02')).toEqual([
      '2024-03-02 loaded',
    ]);

    const reset = await world.run([...args, '--yes']);
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stdout).toContain('Reset 1 window(s)');
    expect(await list('--from', '2024-03-02', '--to', '2024-03-02')).toEqual(['2024-03-02 gap']);
    expect(await rowsOfWindow('2024-03-02')).toBe(rows);

    const run = await world.run(['run', ...TR]);
    expect(run.code, run.stdout).toBe(0);
    const again = JSON.parse(
      (await world.run(['windows', 'show', 'transaction_request', '2024-03-02', '--json'])).stdout,
    ) as { state: string; attempts: number; fingerprint: unknown };
    expect(again).toMatchObject({ state: 'loaded', attempts: 1 });
    expect(again.fingerprint).not.toBeNull();
    expect(await rowsOfWindow('2024-03-02')).toBe(rows);
  });

  it('retry --run loads the failed windows of a selection through a run', async () => {
    // The run of the test before loaded every window: forget one, and fail its next load.
    const day = ['--from', '2024-03-09', '--to', '2024-03-09'];
    expect((await world.run(['windows', 'reset', ...TR, ...day, '--yes'])).code).toBe(0);
    world.sim.setFaults('download:500');
    expect((await world.run(['backfill', ...day, ...TR])).code).toBe(1);
    world.sim.setFaults([]);
    expect(await list('--status', 'failed')).toEqual(['2024-03-09 failed']);
    const retry = await world.run(['windows', 'retry', ...TR, '--run', '--yes']);
    expect(retry.code, retry.stdout + retry.stderr).toBe(0);
    expect(retry.stdout).toContain('1 failed window(s) will be retried now');
    expect(retry.stdout).toMatch(/windows failed\s+0/);
    expect(await list('--status', 'failed')).toEqual([]);
    const none = await world.run(['windows', 'retry', ...TR]);
    expect(none.code).toBe(0);
    expect(none.stdout).toContain('No failed window matches');
  });
});
