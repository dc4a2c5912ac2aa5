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
    expect(failed.stdout).toMatch(/failures in a row\s+1/);
    expect(failed.stdout).toMatch(/last error\s+API_HTTP_STATUS: CyberSource answered HTTP 500/);
    const loaded = JSON.parse(
      (await world.run(['windows', 'show', 'transaction_request', '2024-03-02', '--json'])).stdout,
    ) as {
      state: string;
      rowsLoaded: number;
      sourceRef: string;
      fingerprint: unknown;
      counts: Record<string, number>;
      rejects: { count: number };
    };
    expect(loaded.state).toBe('loaded');
    expect(loaded.rowsLoaded).toBeGreaterThan(0);
    expect(loaded.sourceRef).toContain('TransactionRequestReport_Daily');
    expect(loaded.fingerprint).not.toBeNull();
    expect(loaded.counts.inserted).toBe(loaded.rowsLoaded);
    expect(loaded.rejects.count).toBe(0);
    const missing = await world.run(['windows', 'show', 'transaction_request', '2023-01-01']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no window transaction_request 2023-01-01');
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
