import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/load/migrate.js';
import { openWarehouse } from '../../src/load/warehouse.js';
import type { Warehouse } from '../../src/load/warehouse.js';
import { finishRun, startRun } from '../../src/state/runs.js';
import {
  claimWindow,
  completeWindow,
  ensureWindows,
  failWindow,
  getWindow,
  releaseLeases,
  releaseNotReady,
} from '../../src/state/windows.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';

describe('run and window state on PostgreSQL', () => {
  let database: TestDatabase;
  let warehouse: Warehouse;
  const ref = { pipeline: 'p', organizationId: 'org1', windowKey: '2026-11-20' };
  const window = { ...ref, start: new Date('2026-11-20T00:00:00Z'), end: new Date('2026-11-21T00:00:00Z') };
  const claim = (owner: string, claimable = ['pending', 'failed'] as const) =>
    claimWindow(warehouse.db, ref, { owner, leaseSeconds: 60, runId: null, claimable });

  beforeAll(async () => {
    database = await createTestDatabase('state');
    warehouse = await openWarehouse({ url: database.url, path: '' });
    await migrateToLatest(warehouse.db);
  });
  afterAll(async () => {
    await warehouse.close();
    await database.drop();
  });

  it('records runs', async () => {
    const id = await startRun(warehouse.db, { command: 'run', pipelines: ['a', 'b'] });
    await finishRun(warehouse.db, id, { status: 'succeeded', counts: { loaded: 2 } });
    const row = await warehouse.db
      .selectFrom('etl.runs')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      command: 'run',
      status: 'succeeded',
      pipelines: ['a', 'b'],
      counts: { loaded: 2 },
    });
  });

  it('lets exactly one of many concurrent claimers hold a window', async () => {
    await ensureWindows(warehouse.db, [window]);
    await ensureWindows(warehouse.db, [window]);
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => claim(`owner-${i}`)));
    expect(results.filter(Boolean)).toHaveLength(1);
    const holder = results.find(Boolean)!;
    expect(holder.status).toBe('running');
    expect(holder.attempts).toBe(1);
    await releaseNotReady(warehouse.db, ref, holder.leaseOwner!, 'report RUNNING');
    const w = await getWindow(warehouse.db, ref);
    expect(w).toMatchObject({ status: 'pending', lastErrorCode: 'NOT_READY', leaseOwner: null });
    expect(w!.notReadySince).toBeInstanceOf(Date);
  });

  it('reclaims a running window whose lease expired (its loader died)', async () => {
    expect(await claim('dead')).toBeDefined();
    expect(await claim('alive')).toBeUndefined();
    await sql`update etl.windows set lease_expires_at = now() - interval '1 second'`.execute(warehouse.db);
    const taken = await claim('alive');
    expect(taken?.leaseOwner).toBe('alive');
    await completeWindow(warehouse.db, ref, 'dead', {
      status: 'loaded',
      rowsLoaded: 1,
      rowsRejected: 0,
      counts: {},
      sourceRef: null,
    });
    expect((await getWindow(warehouse.db, ref))!.status).toBe('running'); // the dead owner cannot complete it
    await completeWindow(warehouse.db, ref, 'alive', {
      status: 'loaded',
      rowsLoaded: 10,
      rowsRejected: 1,
      counts: { inserted: 10 },
      sourceRef: 'r',
    });
    expect(await getWindow(warehouse.db, ref)).toMatchObject({
      status: 'loaded',
      rowsLoaded: 10,
      notReadySince: null,
    });
  });

  it('keeps a loaded window loaded when a re-load fails or is interrupted', async () => {
    expect(await claim('x')).toBeUndefined(); // loaded is not claimable by default
    expect(await claim('x', ['loaded', 'no_data', 'pending', 'failed'] as never)).toBeDefined();
    await failWindow(warehouse.db, ref, 'x', { code: 'API_HTTP_STATUS', message: 'HTTP 500' });
    expect(await getWindow(warehouse.db, ref)).toMatchObject({
      status: 'loaded',
      lastErrorCode: 'API_HTTP_STATUS',
    });
    expect(await claim('y', ['loaded'] as never)).toBeDefined();
    expect(await releaseLeases(warehouse.db, 'y')).toBe(1);
    expect((await getWindow(warehouse.db, ref))!.status).toBe('loaded');
  });

  it('marks a never-loaded window failed', async () => {
    const other = { ...ref, windowKey: '2026-11-21' };
    await ensureWindows(warehouse.db, [
      { ...other, start: window.end, end: new Date('2026-11-22T00:00:00Z') },
    ]);
    await claimWindow(warehouse.db, other, {
      owner: 'z',
      leaseSeconds: 60,
      runId: null,
      claimable: ['pending'],
    });
    await failWindow(warehouse.db, other, 'z', { code: 'E', message: 'boom' });
    expect(await getWindow(warehouse.db, other)).toMatchObject({
      status: 'failed',
      lastErrorMessage: 'boom',
    });
  });
});
