/**
 * Holes are seen and filled (issue 30, finding 1): a warehouse loaded for the first days of the
 * month, with a failed window after them, then left alone. A run plans only from startDate (seven
 * days ago by default), so before, it loaded the last week and left the gap days and the failure
 * in place for good, and `status` said nothing of either. Now status leads with them, the run
 * loads the gaps and retries the failure (oldest first after the newest, at most
 * maxCatchUpWindows a pass), and a window that keeps failing waits longer each time.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createE2eWorld } from '../helpers/e2e.js';
import type { E2eWorld } from '../helpers/e2e.js';

const PIPELINE = ['--pipelines', 'transaction_request'];

/*
 * The simulator's subscription cuts days in America/Los_Angeles: at the e2e now (2024-03-25T12:00Z)
 * the newest available day is 03-23 (a day is available six hours after it ends), and startDate
 * (seven days before the local today) is 03-18.
 */

async function windowsOf(
  world: E2eWorld,
): Promise<Map<string, { status: string; attempts: number; failures: number }>> {
  const r = await world.db.query<{ window_key: string; status: string; attempts: number; failures: number }>(
    `select window_key, status, attempts, failures from etl.windows where pipeline = 'transaction_request' order by window_start`,
  );
  return new Map(
    r.rows.map((w) => [w.window_key, { status: w.status, attempts: w.attempts, failures: w.failures }]),
  );
}

const days = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => `2024-03-${String(from + i).padStart(2, '0')}`);

interface StatusJson {
  pipelines: {
    pipeline: string;
    gaps: { from: string; to: string; windows: number }[];
    failed: { windowKey: string; attempts: number; failures: number; code: string }[];
    behind: number;
  }[];
  attention: { kind: string; pipeline: string; text: string }[];
}

/** Loaded 03-01..03-10; 03-12 failed (every download refused); nothing else. */
async function holeyWarehouse(world: E2eWorld): Promise<void> {
  const first = await world.run(['backfill', '--from', '2024-03-01', '--to', '2024-03-10', ...PIPELINE]);
  expect(first.code, first.stderr).toBe(0);
  world.sim.setFaults('download:500');
  const failed = await world.run(['backfill', '--from', '2024-03-12', '--to', '2024-03-12', ...PIPELINE]);
  expect(failed.code).toBe(1);
  world.sim.setFaults([]);
}

// Several CLI passes each over the simulator: generous on a busy machine.
describe('catching up on gaps and failed windows', { timeout: 240_000 }, () => {
  let world: E2eWorld | undefined;
  afterEach(async () => {
    await world?.close();
    world = undefined;
  });

  it('status shows the gaps and the failure, and one run fills the gaps and retries the failure', async () => {
    world = await createE2eWorld({ prefix: 'catchup' });
    await holeyWarehouse(world);

    const before = await world.run(['status', '--json']);
    expect(before.code, before.stderr).toBe(0);
    const status = JSON.parse(before.stdout) as StatusJson;
    const tr = status.pipelines.find((p) => p.pipeline === 'transaction_request')!;
    expect(tr.gaps.map((g) => [g.from, g.to, g.windows])).toEqual([
      ['2024-03-11', '2024-03-11', 1],
      ['2024-03-13', '2024-03-23', 11],
    ]);
    // One attempt; its job waits for its retry, so no failed job counts toward the window's backoff yet.
    expect(tr.failed.map((f) => [f.windowKey, f.attempts, f.failures])).toEqual([['2024-03-12', 1, 0]]);
    expect(tr.behind).toBe(13);
    const own = (s: StatusJson) => s.attention.filter((a) => a.pipeline === 'transaction_request');
    expect(own(status).map((a) => a.kind)).toEqual(['gap', 'gap', 'failed', 'behind']);
    const text = await world.run(['status']);
    // What is wrong comes first.
    expect(text.stdout.split('\n')[0]).toMatch(/needs attention/i);
    expect(text.stdout).toContain('2024-03-13..2024-03-23 (11 windows)');
    expect(text.stdout).toContain('transaction_request');

    const run = await world.run(['run', ...PIPELINE]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/windows loaded\s+13/);
    expect(run.stdout).toMatch(/windows failed\s+0/);
    const windows = await windowsOf(world);
    for (const day of days(1, 23)) expect(windows.get(day)?.status, day).toMatch(/^(loaded|no_data)$/);
    // The failure was retried; its attempts stay visible, its failure count is cleared.
    expect(windows.get('2024-03-12')).toEqual({ status: 'loaded', attempts: 2, failures: 0 });

    const after = JSON.parse((await world.run(['status', '--json'])).stdout) as StatusJson;
    const trAfter = after.pipelines.find((p) => p.pipeline === 'transaction_request')!;
    expect(trAfter.gaps).toEqual([]);
    expect(trAfter.failed).toEqual([]);
    expect(trAfter.behind).toBe(0);
    expect(own(after)).toEqual([]);
  });

  it('a pass takes at most maxCatchUpWindows older windows, oldest first, after the newest', async () => {
    world = await createE2eWorld({ prefix: 'catchupmax', configExtra: '  maxCatchUpWindows: 2' });
    await holeyWarehouse(world);
    const first = await world.run(['run', ...PIPELINE]);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    let windows = await windowsOf(world);
    // The newest week (from startDate, seven days ago) and the two oldest holes.
    for (const day of [...days(11, 12), ...days(18, 23)])
      expect(windows.get(day)?.status, day).toMatch(/^(loaded|no_data)$/);
    for (const day of days(13, 17))
      expect(windows.get(day)?.status ?? 'gap', day).not.toMatch(/loaded|no_data/);
    const second = await world.run(['run', ...PIPELINE]);
    expect(second.code).toBe(0);
    windows = await windowsOf(world);
    for (const day of days(13, 14)) expect(windows.get(day)?.status, day).toMatch(/^(loaded|no_data)$/);
    for (const day of days(15, 17))
      expect(windows.get(day)?.status ?? 'gap', day).not.toMatch(/loaded|no_data/);
  });

  it('a window whose jobs failed twice waits for its backoff; windows retry lets the next run take it at once', async () => {
    // No queue retries: each failed attempt spends its job, which counts toward the window's backoff.
    world = await createE2eWorld({ prefix: 'catchupbo', configExtra: 'queue:\n  retryLimit: 0' });
    await holeyWarehouse(world);
    world.sim.setFaults('download:500');
    expect(
      (await world.run(['backfill', '--from', '2024-03-12', '--to', '2024-03-12', ...PIPELINE])).code,
    ).toBe(1);
    world.sim.setFaults([]);
    const backoff = await world.db.query<{ failures: number; wait: number }>(
      `select failures, extract(epoch from retry_after - failed_at)::int as wait
         from etl.windows where pipeline = 'transaction_request' and window_key = '2024-03-12'`,
    );
    expect(backoff.rows[0]).toEqual({ failures: 2, wait: 3600 });

    const run = await world.run(['run', ...PIPELINE]);
    expect(run.code).toBe(0);
    let windows = await windowsOf(world);
    expect(windows.get('2024-03-12')).toEqual({ status: 'failed', attempts: 2, failures: 2 });
    expect(windows.get('2024-03-11')?.status).toMatch(/^(loaded|no_data)$/);

    const retry = await world.run(['windows', 'retry', ...PIPELINE, '--yes']);
    expect(retry.code, retry.stderr).toBe(0);
    expect(retry.stdout).toContain('1 failed window');
    // Its last job was dead-lettered: a new one is on the queue, for any worker to load now.
    expect(retry.stdout).toContain('Enqueued 1 window job(s) on the window queue; 0 already queued.');
    const queued = await world.db.query<{ state: string }>(
      `select state::text as state from pgboss.job
        where name = 'cybs_etl_windows' and singleton_key like 'transaction_request|%|2024-03-12'
        order by created_on desc limit 1`,
    );
    expect(queued.rows).toEqual([{ state: 'created' }]);
    expect((await world.run(['run', ...PIPELINE])).code).toBe(0);
    windows = await windowsOf(world);
    expect(windows.get('2024-03-12')).toEqual({ status: 'loaded', attempts: 3, failures: 0 });
  });
});
