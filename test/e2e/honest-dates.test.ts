/**
 * Issue 27, finding 3: a backfill into the future corrupted state. `backfill --from 2030-01-01
 * --to 2030-01-02` exited 0, marked the on-demand pipelines' 2030 days `no_data`, and `status`
 * then showed lag 0 for them. Now a window whose data cannot be available yet (readyAfterHours
 * after it ends) is never planned: a range with nothing available is refused (exit 2, nothing
 * written), one that reaches past the newest available window stops there and says so, the lag
 * counts from windows that have ended, and migration 0005 puts the no_data windows earlier
 * versions wrote too early back to pending.
 */
import { Migrator, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, SqlFileMigrationProvider } from '../../src/warehouse/migrate.js';
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import { createTestDatabase } from '../helpers/db.js';
import { createE2eWorld, E2E_NOW } from '../helpers/e2e.js';
import type { E2eWorld } from '../helpers/e2e.js';

const ON_DEMAND = [
  'purchase_refund_details',
  'net_fundings',
  'conversion_details',
  'notification_of_changes',
  'payment_batch_summaries',
];

describe('honest dates: backfill, status', () => {
  let world: E2eWorld;

  beforeAll(async () => {
    world = await createE2eWorld({ prefix: 'honest_dates' });
  });
  afterAll(async () => {
    await world?.close();
  });

  const windows = async () =>
    (
      await world.db.query(
        `select pipeline, window_key, status, window_end from etl.windows order by pipeline, window_start`,
      )
    ).rows as { pipeline: string; window_key: string; status: string; window_end: Date }[];
  const lags = async () => {
    const r = await world.run(['status', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const status = JSON.parse(r.stdout) as {
      pipelines: { pipeline: string; lastLoadedWindow: string | null; lagSeconds: number | null }[];
    };
    return new Map(status.pipelines.map((p) => [p.pipeline, p]));
  };

  it('backfill --from 2030-01-01 --to 2030-01-02 is refused, exit 2, and writes nothing', async () => {
    const r = await world.run(['backfill', '--from', '2030-01-01', '--to', '2030-01-02']);
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toMatch(
      /^cybs-etl: nothing of 2030-01-01\.\.2030-01-02 is available yet: a window can be loaded 6 hours \(defaults\.readyAfterHours\) after it ends, so the first of its windows \([a-z_]+ 2030-01-01[^)]*\) can be loaded from 2030-01-0[12]T\d\d:\d\d:00\.000Z\.\n$/,
    );
    expect(await windows()).toEqual([]);
    expect((await world.db.query(`select count(*)::int as n from etl.runs`)).rows[0].n).toBe(0);
  });

  it('a range past the newest available window stops there and says so; no window of it is marked no_data', async () => {
    // Now is 2024-03-25T12:00Z: the UTC day 2024-03-24 ended 12 hours ago (available), 2024-03-25 has not.
    const r = await world.run(['backfill', '--from', '2024-03-23', '--to', '2024-03-27']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /^The backfill stops at the newest available windows \(a window can be loaded 6 hours \(defaults\.readyAfterHours\) after it ends\): .*net_fundings 2024-03-24.*; the later windows of the range are left for a later run\.\n/,
    );
    expect(r.stdout).toMatch(/windows failed\s+0\b/);
    const now = Date.parse(E2E_NOW);
    const all = await windows();
    expect(all.length).toBeGreaterThan(0);
    for (const w of all) expect(new Date(w.window_end).getTime()).toBeLessThanOrEqual(now - 6 * 3_600_000);
    for (const name of ON_DEMAND) {
      expect(all.filter((w) => w.pipeline === name).map((w) => w.window_key)).toEqual([
        '2024-03-23',
        '2024-03-24',
      ]);
    }
  });

  it('status: the lag counts from the newest window that has ended, whatever an earlier version wrote', async () => {
    const before = await lags();
    // net_fundings' newest window, 2024-03-24, ended at 2024-03-25T00:00Z, 12 hours before now.
    expect(before.get('net_fundings')).toMatchObject({ lastLoadedWindow: '2024-03-24', lagSeconds: 43_200 });
    // What an earlier version's backfill into the future left: a 2030 day marked no_data.
    await world.db.query(
      `insert into etl.windows (pipeline, organization_id, window_key, window_start, window_end, status, loaded_at)
       values ('net_fundings', $1, '2030-01-01', '2030-01-01T00:00Z', '2030-01-02T00:00Z', 'no_data', now())`,
      [world.sim.organizations[0]],
    );
    expect((await lags()).get('net_fundings')).toMatchObject({
      lastLoadedWindow: '2024-03-24',
      lagSeconds: 43_200,
    });
  });
});

describe('migration 0005: no_data windows marked before their data could be available go back to pending', () => {
  it('resets those, keeps the others', async () => {
    const database = await createTestDatabase('honest_dates_0005');
    const warehouse = await openWarehouse({ url: database.url, path: '' });
    try {
      const migrator = new Migrator({
        db: warehouse.db,
        provider: new SqlFileMigrationProvider(),
        migrationTableSchema: 'etl',
        migrationTableName: 'migrations',
        migrationLockTableName: 'migrations_lock',
      });
      const to4 = await migrator.migrateTo('0004_source_keys');
      expect(to4.error).toBeUndefined();
      await sql`
        insert into etl.windows
          (pipeline, organization_id, window_key, window_start, window_end, status, rows_loaded, source_ref, loaded_at)
        values
          -- a backfill into the future: no data "found" for a day to come
          ('net_fundings', 'm1', '2030-01-01', '2030-01-01T00:00Z', '2030-01-02T00:00Z', 'no_data', 0, 'net-fundings/…', '2026-11-20T10:00Z'),
          -- a day marked no_data two hours after it ended
          ('net_fundings', 'm1', '2026-11-19', '2026-11-19T00:00Z', '2026-11-20T00:00Z', 'no_data', 0, 'net-fundings/…', '2026-11-20T02:00Z'),
          -- a day marked no_data a day after it ended: kept
          ('net_fundings', 'm1', '2026-11-18', '2026-11-18T00:00Z', '2026-11-19T00:00Z', 'no_data', 0, 'net-fundings/…', '2026-11-20T00:00Z'),
          -- a loaded window: kept
          ('net_fundings', 'm1', '2026-11-17', '2026-11-17T00:00Z', '2026-11-18T00:00Z', 'loaded', 5, 'net-fundings/…', '2026-11-18T01:00Z')
      `.execute(warehouse.db);
      const latest = await migrateToLatest(warehouse.db);
      expect(latest.applied).toContain('0005_unavailable_no_data_to_pending');
      const rows = await sql<{ window_key: string; status: string; source_ref: string | null }>`
        select window_key, status, source_ref from etl.windows order by window_key`.execute(warehouse.db);
      expect(rows.rows).toEqual([
        { window_key: '2026-11-17', status: 'loaded', source_ref: 'net-fundings/…' },
        { window_key: '2026-11-18', status: 'no_data', source_ref: 'net-fundings/…' },
        { window_key: '2026-11-19', status: 'pending', source_ref: null },
        { window_key: '2030-01-01', status: 'pending', source_ref: null },
      ]);
    } finally {
      await warehouse.close();
      await database.drop();
    }
  });
});
