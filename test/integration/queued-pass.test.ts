/**
 * A pass over the window queue (runQueuedPass), as run, backfill and schedule make it: plan the
 * windows, enqueue them, and wait until their jobs are settled by this process's worker or another's.
 */
import { sql } from 'kysely';
import type { EtlDb } from '../../src/warehouse/database.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load-config.js';
import { migrateToLatest } from '../../src/warehouse/migrate.js';
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import type { Warehouse } from '../../src/warehouse/warehouse.js';
import { silentLogger } from '../../src/observability/logger.js';
import { resolvePipelines } from '../../src/pipeline/resolve-pipelines.js';
import { planJobs } from '../../src/pipeline/run-pipelines.js';
import type { WindowExecutor, WindowTask } from '../../src/pipeline/run-pipelines.js';
import { PassNudge, runQueuedPass } from '../../src/queue/queue-pass.js';
import type { QueuedPassOptions } from '../../src/queue/queue-pass.js';
import { toJobData, windowJobKey } from '../../src/queue/window-jobs.js';
import { openWindowQueue } from '../../src/queue/window-queue.js';
import type { WindowQueue } from '../../src/queue/window-queue.js';
import { startWindowWorker } from '../../src/queue/window-worker.js';
import type { WindowWorkerOptions } from '../../src/queue/window-worker.js';
import { startRun } from '../../src/state/runs.js';
import {
  claimWindow,
  completeWindow,
  ensureWindows,
  getWindow,
  listWindows,
} from '../../src/state/windows.js';
import { CybsError } from '../../src/errors.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { standInPipelines } from '../helpers/stand-in-pipelines.js';

const defs = standInPipelines();
// Retries far enough apart that none happens on its own during a test: passes ask for them.
const settings = { heartbeatSeconds: 10, retryLimit: 2, retryDelaySeconds: 600 };

describe('a pass over the window queue', () => {
  let database: TestDatabase;
  let warehouse: Warehouse;
  let queue: WindowQueue;
  let other: WindowQueue;
  const now = () => new Date('2026-11-21T12:00:00Z');
  const config = parseConfig('defaults:\n  startDate: "2026-11-10"\n  lookbackDays: 2\n');
  const pipelines = resolvePipelines(defs, config, { defaultOrganizations: ['org1', 'org2'], now: now() });

  beforeAll(async () => {
    database = await createTestDatabase('orch');
    warehouse = await openWarehouse({ url: database.url, path: '' });
    await migrateToLatest(warehouse.db);
    queue = await openWindowQueue(warehouse.connection, {
      logger: silentLogger(),
      supervise: true,
      settings,
    });
    other = await openWindowQueue(warehouse.connection, {
      logger: silentLogger(),
      supervise: false,
      settings,
    });
  });
  beforeEach(async () => {
    await queue.boss.deleteAllJobs();
  });
  afterAll(async () => {
    await other.stop({ graceful: false, timeoutMs: 1000 });
    await queue.stop({ graceful: false, timeoutMs: 1000 });
    await warehouse.close();
    await database.drop();
  });

  /** As the loader commits a window: its state and its job's completion in one transaction. */
  const commitLoaded = async (task: WindowTask, rows: number, sourceRef: string | null = null) => {
    const ref = {
      pipeline: task.pipeline.name,
      organizationId: task.window.organizationId,
      windowKey: task.window.windowKey,
    };
    await (warehouse.db as EtlDb).transaction().execute(async (trx) => {
      await completeWindow(trx, ref, task.claim, {
        status: 'loaded',
        rowsLoaded: rows,
        rowsRejected: 0,
        counts: {},
        sourceRef,
      });
      await task.beforeCommit?.(trx, { kind: 'loaded', rowsLoaded: rows, rowsRejected: 0, unchanged: false });
    });
    return { kind: 'loaded' as const, rowsLoaded: rows, rowsRejected: 0 };
  };
  const startWorker = (
    on: WindowQueue,
    execute: WindowExecutor,
    options: Partial<WindowWorkerOptions> = {},
  ) =>
    startWindowWorker(
      {
        queue: on,
        db: warehouse.db,
        logger: silentLogger(),
        execute,
        pipelines: new Map(pipelines.map((p) => [p.name, p])),
        unavailable: new Map(),
        now,
      },
      { concurrency: 3, perCredential: 8, pollingSeconds: 0.5, ...options },
    );
  /** A pass with this process's worker working the queue meanwhile (run and backfill). */
  const pass = async (
    execute: WindowExecutor,
    options: Partial<QueuedPassOptions> = {},
    worker: Partial<WindowWorkerOptions> = {},
  ) => {
    const w = await startWorker(queue, execute, worker);
    try {
      return await passOnly(options);
    } finally {
      await w.stop(options.signal?.aborted ? 0 : 1000);
    }
  };
  /** A pass whose windows other workers load (none started here). */
  const passOnly = async (options: Partial<QueuedPassOptions> = {}) =>
    runQueuedPass(
      { db: warehouse.db, logger: silentLogger(), queue, credential: 'cred' },
      {
        pipelines,
        runId: await startRun(warehouse.db, { command: 'run', trigger: 'test', pipelines: [] }),
        now,
        pollMs: 50,
        ...options,
      },
    );

  it('loads every due window once, with bounded concurrency, then only lookback windows', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const seen: string[] = [];
    const execute: WindowExecutor = async (task) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      seen.push(`${task.pipeline.name}/${task.window.organizationId}/${task.window.windowKey}`);
      await new Promise((r) => setTimeout(r, 2));
      if (
        task.window.windowKey === '2026-11-12' &&
        task.pipeline.name === 'alpha' &&
        task.window.organizationId === 'org1'
      ) {
        inFlight--;
        throw new Error('simulated failure');
      }
      if (task.window.windowKey === '2026-11-13' && task.pipeline.name === 'beta') {
        inFlight--;
        return { kind: 'not_ready', message: 'report RUNNING' };
      }
      const loaded = await commitLoaded(task, 5);
      inFlight--;
      return loaded;
    };
    const first = await pass(execute);
    // alpha (UTC): 11-10..11-20 = 11 days; beta (Chicago): 11-10..11-20 (ends 11-21T06:00Z, ready 12:00Z) = 11 days.
    expect(seen).toHaveLength(2 * 2 * 11);
    expect(new Set(seen).size).toBe(seen.length);
    expect(maxInFlight).toBeLessThanOrEqual(3);
    expect(first.windows).toEqual({
      loaded: 44 - 3,
      unchanged: 0,
      no_data: 0,
      not_ready: 2,
      failed: 1,
      skipped: 0,
    });
    expect(first.enqueued).toBe(44);
    expect(first.failures[0]).toMatchObject({
      pipeline: 'alpha',
      organizationId: 'org1',
      windowKey: '2026-11-12',
      message: 'simulated failure',
    });

    seen.length = 0;
    const second = await pass(execute);
    // the failed (its job, waiting for a retry, is retried at once) and not-ready windows again, plus the 2 lookback days of each pipeline x organization
    expect(seen.sort()).toEqual(
      [
        'alpha/org1/2026-11-12',
        'beta/org1/2026-11-13',
        'beta/org2/2026-11-13',
        ...['alpha', 'beta'].flatMap((p) =>
          ['org1', 'org2'].flatMap((o) => [`${p}/${o}/2026-11-19`, `${p}/${o}/2026-11-20`]),
        ),
      ].sort(),
    );
    expect(second.windows.failed).toBe(1);
    const states = await listWindows(warehouse.db, { pipeline: 'beta', organizationId: 'org1' });
    expect(states.find((w) => w.windowKey === '2026-11-13')).toMatchObject({
      status: 'pending',
      lastErrorCode: 'NOT_READY',
    });
  });

  it('stops on interrupt: the window in flight rolls back, nothing is left running or failed, the rest stays queued', async () => {
    const controller = new AbortController();
    let calls = 0;
    const execute: WindowExecutor = async (task) => {
      calls++;
      controller.abort();
      // Until this process's worker is stopped (as run stops it when interrupted).
      await new Promise((resolve) => task.signal.addEventListener('abort', resolve));
      throw new Error('aborted mid-window');
    };
    const summary = await pass(
      execute,
      { range: { from: '2026-10-01', to: '2026-10-31' }, signal: controller.signal },
      { concurrency: 1 },
    );
    expect(summary.interrupted).toBe(true);
    expect(calls).toBe(1);
    const running = await listWindows(warehouse.db, { statuses: ['running'] });
    expect(running).toEqual([]);
    const failed = await listWindows(warehouse.db, { statuses: ['failed'] });
    expect(failed.some((w) => w.windowKey.startsWith('2026-10'))).toBe(false);
    // 31 days × 2 pipelines × 2 organizations: all still to do, in the queue.
    const jobs = await warehouse.db
      .selectFrom('pgboss.job')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('state', 'in', ['created', 'retry'])
      .executeTakeFirstOrThrow();
    expect(Number(jobs.n)).toBe(124);
  });

  it('retries a window whose load hit a conflict (deadlock, serialization failure), a bounded number of times', async () => {
    const conflict = () =>
      new CybsError('LOAD_CONFLICT', 'Serialization failure on cybs.t', { stage: 'load', retryable: true });
    const calls = new Map<string, number>();
    const sleeps: number[] = [];
    const execute: WindowExecutor = async (task) => {
      const key = `${task.pipeline.name}/${task.window.organizationId}`;
      const n = (calls.get(key) ?? 0) + 1;
      calls.set(key, n);
      if (key === 'alpha/org1' && n === 1) throw conflict(); // once: retried to success
      if (key === 'alpha/org2') throw conflict(); // always: fails after the attempts
      if (key === 'beta/org1')
        throw new CybsError('LOAD_CONSTRAINT', 'bad data', { stage: 'load', retryable: false }); // never retried
      return commitLoaded(task, 1, 'x');
    };
    const summary = await pass(
      execute,
      { range: { from: '2026-09-01', to: '2026-09-01' } },
      {
        sleep: (ms) => {
          sleeps.push(ms);
          return Promise.resolve();
        },
      },
    );
    expect(calls.get('alpha/org1')).toBe(2);
    expect(calls.get('alpha/org2')).toBe(3);
    expect(calls.get('beta/org1')).toBe(1);
    expect(calls.get('beta/org2')).toBe(1);
    expect(summary.windows.loaded).toBe(2);
    expect(summary.failures.map((f) => `${f.pipeline}/${f.organizationId}:${f.code}`).sort()).toEqual([
      'alpha/org2:LOAD_CONFLICT',
      'beta/org1:LOAD_CONSTRAINT',
    ]);
    expect(sleeps).toHaveLength(3);
    expect(await listWindows(warehouse.db, { statuses: ['running'] })).toEqual([]);
  });

  it('follows a window another planner enqueued and another worker loads, and takes over one an attempt that lost its job left running', async () => {
    const day = '2026-08-01';
    const alpha = pipelines.find((p) => p.name === 'alpha')!;
    const refOf = (organizationId: string) => ({ pipeline: 'alpha', organizationId, windowKey: day });
    await ensureWindows(
      warehouse.db,
      ['org1', 'org2'].map((o) => ({
        ...refOf(o),
        start: new Date(`${day}T00:00:00Z`),
        end: new Date('2026-08-02T00:00:00Z'),
      })),
    );
    // org1: left running by an attempt whose worker died.
    expect(
      await claimWindow(warehouse.db, refOf('org1'), {
        claim: 'dead/0',
        runId: null,
        claimable: ['pending'],
      }),
    ).toBeDefined();
    // org2: already enqueued by another planner.
    const range = { from: day, to: day };
    const [org2] = (await planJobs(warehouse.db, { pipelines: [alpha], range, now })).filter(
      (j) => j.window.organizationId === 'org2',
    );
    const theirs = await other.enqueue([toJobData(org2!, null, 'cred')]);
    const loadedBy: string[] = [];
    // Another machine's worker loads them; this pass has none.
    const elsewhere = await startWorker(other, async (task) => {
      // org2's job is held until this pass has enqueued (org1's job exists; other jobs of the table
      // do not count), so that the pass meets it active however fast this worker would otherwise be.
      const org1Key = windowJobKey(refOf('org1'));
      if (task.window.organizationId === 'org2')
        while (
          Number(
            (
              await sql<{
                n: string;
              }>`select count(*) as n from pgboss.job where singleton_key = ${org1Key}`.execute(warehouse.db)
            ).rows[0]!.n,
          ) < 1
        )
          await new Promise((resolve) => setTimeout(resolve, 20));
      loadedBy.push(task.window.organizationId);
      return commitLoaded(task, 1, 'x');
    });
    const summary = await passOnly({ pipelines: [alpha], range });
    await elsewhere.stop(1000);
    expect(summary).toMatchObject({ enqueued: 1, alreadyQueued: 1, interrupted: false });
    expect(summary.windows).toMatchObject({ loaded: 2, skipped: 0, failed: 0 });
    expect(loadedBy.sort()).toEqual(['org1', 'org2']);
    expect(await getWindow(warehouse.db, refOf('org1'))).toMatchObject({ status: 'loaded', attempts: 2 });
    const jobs = await warehouse.db.selectFrom('pgboss.job').select(['id', 'state']).execute();
    expect(jobs.map((j) => j.state)).toEqual(['completed', 'completed']);
    expect(jobs.map((j) => j.id)).toContain(theirs.ids[0]);
  });

  it('says so, and does not report success, when it stops waiting (drained) before its windows are loaded', async () => {
    const alpha = pipelines.find((p) => p.name === 'alpha')!;
    const day = '2026-08-05';
    const drain = new AbortController();
    const summary = await passOnly({
      pipelines: [alpha],
      organizationId: 'org1',
      range: { from: day, to: day },
      drain: drain.signal,
      onProgress: (e) => {
        if (e.type === 'planned') drain.abort();
      },
    });
    expect(summary.windows, JSON.stringify(summary)).toMatchObject({ loaded: 0, failed: 0 });
    expect(summary.interrupted).toBe(true);
    expect(summary.enqueued).toBe(1);
  });

  it('looks at its jobs as soon as its own worker settles one, not at its next poll', async () => {
    const alpha = pipelines.find((p) => p.name === 'alpha')!;
    const nudge = new PassNudge();
    // A poll this long would outlast the test: the pass ends only if the worker's nudges wake it.
    const looks: number[] = [];
    const settled = queue.settled.bind(queue);
    queue.settled = async (ids) => {
      looks.push(ids.length);
      return settled(ids);
    };
    try {
      const summary = await pass(
        (task) => commitLoaded(task, 1),
        {
          pipelines: [alpha],
          organizationId: 'org1',
          range: { from: '2026-08-20', to: '2026-08-22' },
          pollMs: 600_000,
          nudge,
        },
        { concurrency: 1, onSettled: () => nudge.nudge() },
      );
      expect(summary.windows.loaded).toBe(3);
      expect(summary.interrupted).toBe(false);
      // Once before the first job settled, then at most once per job.
      expect(looks.length).toBeLessThanOrEqual(4);
    } finally {
      queue.settled = settled;
    }
  });

  it('only plans and enqueues when detached', async () => {
    const alpha = pipelines.find((p) => p.name === 'alpha')!;
    const summary = await passOnly({
      pipelines: [alpha],
      range: { from: '2026-08-10', to: '2026-08-11' },
      detach: true,
    });
    expect(summary).toMatchObject({ enqueued: 4, alreadyQueued: 0, interrupted: false });
    expect(summary.windows.loaded).toBe(0);
  });
});
