import type { EtlDb } from '../../src/warehouse/database.js';
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
  releaseClaim,
  releaseNotReady,
} from '../../src/state/windows.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';

describe('run and window state on PostgreSQL', () => {
  let database: TestDatabase;
  let warehouse: Warehouse;
  const ref = { pipeline: 'p', organizationId: 'org1', windowKey: '2026-11-20' };
  const window = { ...ref, start: new Date('2026-11-20T00:00:00Z'), end: new Date('2026-11-21T00:00:00Z') };
  const claim = (attempt: string, claimable = ['pending', 'failed'] as const) =>
    claimWindow(warehouse.db, ref, { claim: attempt, runId: null, claimable });
  /** A process as a running one is: holding its run lock until `release` (its end). */
  const live = (key: string) => warehouse.holdAdvisoryLock(RUN_LOCK_SPACE, key);
  const loaded = { status: 'loaded', rowsLoaded: 1, rowsRejected: 0, counts: {}, sourceRef: null } as const;

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

  it('takes its advisory lock again when the server ends the connection holding it', async () => {
    const release = await live('resilient');
    const holders = async () =>
      (
        await sql<{ pid: number }>`select pid from pg_locks where locktype = 'advisory' and granted
            and classid = ${RUN_LOCK_SPACE}::int4::oid and objid = hashtext('resilient')::oid`.execute(
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

  it('lets exactly one of many concurrent claims on a window commit it: the last one', async () => {
    await ensureWindows(warehouse.db, [window]);
    await ensureWindows(warehouse.db, [window]);
    const attempts = Array.from({ length: 8 }, (_, i) => `job-${i}/0`);
    const claims = await Promise.all(attempts.map((a) => claim(a)));
    expect(claims.every(Boolean)).toBe(true);
    const holder = (await getWindow(warehouse.db, ref))!;
    expect(holder.status).toBe('running');
    expect(holder.attempts).toBe(8);
    // Each attempt tries to commit the window in a transaction of its own: one commits.
    const commits = await Promise.allSettled(
      attempts.map((a) =>
        (warehouse.db as EtlDb).transaction().execute((trx) => completeWindow(trx, ref, a, loaded)),
      ),
    );
    const committed = attempts.filter((_, i) => commits[i]!.status === 'fulfilled');
    expect(committed).toEqual([holder.claim]);
    for (const c of commits.filter((x) => x.status === 'rejected'))
      expect(String((c as PromiseRejectedResult).reason)).toMatch(/no longer claimed by this job attempt/);
    expect(await getWindow(warehouse.db, ref)).toMatchObject({ status: 'loaded', claim: null });
  });

  it('releases a not-ready window, and hands a running window to the next attempt of its job, which alone can complete it', async () => {
    await warehouse.db.updateTable('etl.windows').set({ status: 'pending' }).execute();
    const first = await claim('job/0');
    expect(first).toMatchObject({ status: 'running', claim: 'job/0' });
    await releaseNotReady(warehouse.db, ref, 'job/0', 'report RUNNING');
    const w = await getWindow(warehouse.db, ref);
    expect(w).toMatchObject({ status: 'pending', lastErrorCode: 'NOT_READY', claim: null });
    expect(w!.notReadySince).toBeInstanceOf(Date);

    expect(await claim('job/1')).toBeDefined();
    // The attempt's worker died; pg-boss handed the job on: its next attempt takes the window over.
    const taken = await claim('job/2');
    expect(taken).toMatchObject({ claim: 'job/2', status: 'running' });
    // The attempt it was taken from cannot complete it: its load transaction rolls back.
    await expect(completeWindow(warehouse.db, ref, 'job/1', loaded)).rejects.toThrow(
      /no longer claimed by this job attempt/,
    );
    // Nor record a failure or give it back.
    await failWindow(warehouse.db, ref, 'job/1', { code: 'E', message: 'late' });
    await releaseClaim(warehouse.db, ref, 'job/1');
    expect((await getWindow(warehouse.db, ref))!.status).toBe('running');
    await completeWindow(warehouse.db, ref, 'job/2', {
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
      claim: null,
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
    await releaseClaim(warehouse.db, ref, 'y');
    expect(await getWindow(warehouse.db, ref)).toMatchObject({ status: 'loaded', claim: null });
  });

  it('marks a never-loaded window failed', async () => {
    const other = { ...ref, windowKey: '2026-11-21' };
    await ensureWindows(warehouse.db, [
      { ...other, start: window.end, end: new Date('2026-11-22T00:00:00Z') },
    ]);
    await claimWindow(warehouse.db, other, { claim: 'z', runId: null, claimable: ['pending'] });
    await failWindow(warehouse.db, other, 'z', { code: 'E', message: 'boom' });
    expect(await getWindow(warehouse.db, other)).toMatchObject({
      status: 'failed',
      lastErrorMessage: 'boom',
    });
  });
});
