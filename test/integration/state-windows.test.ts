import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/warehouse/migrate.js';
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import type { Warehouse } from '../../src/warehouse/warehouse.js';
import {
  closeAbandonedRuns,
  finishRun,
  RUN_LOCK_SPACE,
  runHolderKey,
  startRun,
} from '../../src/state/runs.js';
import {
  claimWindow,
  completeWindow,
  ensureWindows,
  failWindow,
  getWindow,
  LEASE_LOCK_SPACE,
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
  /** An owner as a running process is one: holding its lease lock until `release` (its end). */
  const live = (owner: string) => warehouse.holdAdvisoryLock(LEASE_LOCK_SPACE, owner);

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

  it('closes the runs a process that is gone left running, and only those', async () => {
    const release = await warehouse.holdAdvisoryLock(RUN_LOCK_SPACE, runHolderKey());
    const alive = await startRun(warehouse.db, { command: 'backfill' });
    const killed = await startRun(warehouse.db, { command: 'run' });
    const imported = await startRun(warehouse.db, { command: 'import' });
    // The killed run's process: another pid, which holds no lock.
    await sql`update etl.runs set pid = 2147483000 where id = ${killed}`.execute(warehouse.db);
    expect(await closeAbandonedRuns(warehouse.db)).toBe(1);
    const status = async (id: number) =>
      (await warehouse.db.selectFrom('etl.runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow())
        .status as string;
    expect(await status(killed)).toBe('interrupted');
    expect(await status(alive)).toBe('running');
    expect(await status(imported)).toBe('running');
    await release();
    // This process gone (its lock released): its run is closed too.
    expect(await closeAbandonedRuns(warehouse.db)).toBe(1);
    expect(await status(alive)).toBe('interrupted');
    await finishRun(warehouse.db, imported, { status: 'succeeded' });
  });

  it('takes its lease lock again when the server ends the connection holding it', async () => {
    const release = await live('resilient');
    const holders = async () =>
      (
        await sql<{ pid: number }>`select pid from pg_locks where locktype = 'advisory' and granted
            and classid = ${LEASE_LOCK_SPACE}::int4::oid and objid = hashtext('resilient')::oid`.execute(
          warehouse.db,
        )
      ).rows;
    const [first] = await holders();
    expect(first).toBeDefined();
    await sql`select pg_terminate_backend(${first!.pid})`.execute(warehouse.db);
    let again = await holders();
    while (again.length === 0 || again[0]!.pid === first!.pid) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      again = await holders();
    }
    expect(again).toHaveLength(1);
    await release();
    expect(await holders()).toEqual([]);
  });

  it('lets exactly one of many concurrent claimers hold a window', async () => {
    await ensureWindows(warehouse.db, [window]);
    await ensureWindows(warehouse.db, [window]);
    const owners = await Promise.all(Array.from({ length: 8 }, (_, i) => live(`owner-${i}`)));
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => claim(`owner-${i}`)));
    for (const release of owners) await release();
    expect(results.filter(Boolean)).toHaveLength(1);
    const holder = results.find(Boolean)!;
    expect(holder.status).toBe('running');
    expect(holder.attempts).toBe(1);
    await releaseNotReady(warehouse.db, ref, holder.leaseOwner!, 'report RUNNING');
    const w = await getWindow(warehouse.db, ref);
    expect(w).toMatchObject({ status: 'pending', lastErrorCode: 'NOT_READY', leaseOwner: null });
    expect(w!.notReadySince).toBeInstanceOf(Date);
  });

  it('reclaims a running window whose lease expired (its loader hung)', async () => {
    const hung = await live('hung');
    const alive = await live('alive');
    expect(await claim('hung')).toBeDefined();
    expect(await claim('alive')).toBeUndefined();
    await sql`update etl.windows set lease_expires_at = now() - interval '1 second'`.execute(warehouse.db);
    const taken = await claim('alive');
    expect(taken?.leaseOwner).toBe('alive');
    // The owner it was taken from cannot complete it: its load transaction rolls back.
    await expect(
      completeWindow(warehouse.db, ref, 'hung', {
        status: 'loaded',
        rowsLoaded: 1,
        rowsRejected: 0,
        counts: {},
        sourceRef: null,
      }),
    ).rejects.toThrow(/no longer leased to this process/);
    expect((await getWindow(warehouse.db, ref))!.status).toBe('running');
    await hung();
    await alive();
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

  it('takes over at once, whatever its lease, a window whose holder is gone (killed: its lock released)', async () => {
    const other = { ...ref, windowKey: '2026-11-25' };
    await ensureWindows(warehouse.db, [
      { ...other, start: new Date('2026-11-25T00:00:00Z'), end: new Date('2026-11-26T00:00:00Z') },
    ]);
    const claimOther = (owner: string) =>
      claimWindow(warehouse.db, other, { owner, leaseSeconds: 900, runId: null, claimable: ['pending'] });
    const killed = await live('killed');
    const next = await live('next');
    expect(await claimOther('killed')).toBeDefined();
    expect(await claimOther('next')).toBeUndefined(); // a live holder keeps its window
    await killed();
    const taken = await claimOther('next');
    expect(taken).toMatchObject({ leaseOwner: 'next', status: 'running', attempts: 2 });
    expect(taken!.leaseExpiresAt!.getTime()).toBeGreaterThan(Date.now() + 800_000);
    await next();
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
