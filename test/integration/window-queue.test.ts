/**
 * Windows as pg-boss jobs on a real PostgreSQL: planners collapse onto one job per window, workers
 * load each window once within the per-credential limit, failures are retried and then dead-lettered,
 * and a stopping worker gives its unfinished windows back to the queue.
 */
import { hostname } from 'node:os';
import type { EtlDb } from '../../src/warehouse/database.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load-config.js';
import { migrateToLatest } from '../../src/warehouse/migrate.js';
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import type { Warehouse } from '../../src/warehouse/warehouse.js';
import { silentLogger } from '../../src/observability/logger.js';
import { resolvePipelines } from '../../src/pipeline/resolve-pipelines.js';
import { planJobs } from '../../src/pipeline/run-pipelines.js';
import type { WindowExecutor } from '../../src/pipeline/run-pipelines.js';
import { jobClaim, toJobData } from '../../src/queue/window-jobs.js';
import { queueLine, readQueueCounts, readWindowJob, workerOfJob } from '../../src/queue/queue-status.js';
import { openWindowQueue, WINDOW_DEAD_LETTER_QUEUE, WINDOW_QUEUE } from '../../src/queue/window-queue.js';
import type { WindowQueue } from '../../src/queue/window-queue.js';
import { startWindowWorker } from '../../src/queue/window-worker.js';
import type { WindowWorker } from '../../src/queue/window-worker.js';
import { completeWindow, listWindows } from '../../src/state/windows.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { standInPipelines } from '../helpers/stand-in-pipelines.js';

// alpha only: its windows are the queue's jobs.
const defs = standInPipelines().filter((d) => d.name === 'alpha');
const settings = { heartbeatSeconds: 10, retryLimit: 2, retryDelaySeconds: 1 };
const until = async (check: () => Promise<boolean>, ms = 60_000) => {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 100));
  }
};

describe('the window queue (pg-boss)', () => {
  let database: TestDatabase;
  let warehouse: Warehouse;
  const queues: WindowQueue[] = [];
  const now = () => new Date('2026-11-21T12:00:00Z');
  const config = parseConfig('defaults:\n  startDate: "2026-11-10"\n');
  const pipelines = resolvePipelines(defs, config, { defaultOrganizations: ['org1', 'org2'], now: now() });
  const byName = new Map(pipelines.map((p) => [p.name, p]));
  const range = { from: '2026-11-11', to: '2026-11-15' };

  const open = async (supervise = false) => {
    const queue = await openWindowQueue(warehouse.connection, {
      logger: silentLogger(),
      supervise,
      settings,
    });
    queues.push(queue);
    return queue;
  };
  const jobStates = async () =>
    (
      await warehouse.db
        .selectFrom('pgboss.job')
        .select(['name', 'state', 'retry_count'])
        .where('name', 'in', [WINDOW_QUEUE, WINDOW_DEAD_LETTER_QUEUE])
        .execute()
    ).map((r) => `${r.name}:${r.state}`);
  const planned = async () =>
    (await planJobs(warehouse.db, { pipelines, range, force: false, now })).map((j) =>
      toJobData(j, null, 'cred'),
    );

  /** A worker whose windows complete through `load` (or throw what it throws). */
  const worker = async (
    queue: WindowQueue,
    load: (key: string) => Promise<void>,
    options: { concurrency?: number; perCredential?: number } = {},
  ): Promise<WindowWorker> => {
    const execute: WindowExecutor = async (task) => {
      const ref = {
        pipeline: task.pipeline.name,
        organizationId: task.window.organizationId,
        windowKey: task.window.windowKey,
      };
      await load(`${ref.organizationId}/${ref.windowKey}`);
      if (task.signal.aborted) throw new Error('aborted');
      // As the loader does: the window's state and the job's completion in one transaction.
      const attempt = task.claim;
      await (warehouse.db as EtlDb).transaction().execute(async (trx) => {
        await completeWindow(trx, ref, task.claim, {
          status: 'loaded',
          rowsLoaded: 1,
          rowsRejected: 0,
          counts: {},
          sourceRef: null,
        });
        await task.beforeCommit?.(trx, { kind: 'loaded', rowsLoaded: 1, rowsRejected: 0, unchanged: false });
      });
      committed.push(attempt);
      return { kind: 'loaded', rowsLoaded: 1, rowsRejected: 0 };
    };
    const w = await startWindowWorker(
      {
        queue,
        db: warehouse.db,
        logger: silentLogger(),
        execute,
        pipelines: byName,
        unavailable: new Map(),
        now,
      },
      {
        concurrency: options.concurrency ?? 3,
        perCredential: options.perCredential ?? 8,
        pollingSeconds: 0.5,
      },
    );
    return w;
  };

  beforeAll(async () => {
    database = await createTestDatabase('queue');
    warehouse = await openWarehouse({ url: database.url, path: '' });
    await migrateToLatest(warehouse.db);
    await open(true);
  });
  /** The claims (job attempts) whose window transaction committed. */
  let committed: string[] = [];
  beforeEach(async () => {
    committed = [];
    await queues[0]!.boss.deleteAllJobs();
    await warehouse.db.deleteFrom('etl.windows').execute();
  });
  afterAll(async () => {
    for (const q of queues) await q.stop({ graceful: false, timeoutMs: 1000 });
    await warehouse.close();
    await database.drop();
  });

  it('two planners enqueueing the same windows at once make one job per window', async () => {
    const [a, b] = [queues[0]!, await open()];
    const jobs = await planned();
    expect(jobs).toHaveLength(10);
    const [fromA, fromB] = await Promise.all([a.enqueue(jobs), b.enqueue(jobs)]);
    expect(fromA.added + fromB.added).toBe(10);
    expect(fromA.alreadyQueued + fromB.alreadyQueued).toBe(10);
    expect(await jobStates()).toEqual(Array(10).fill(`${WINDOW_QUEUE}:created`));
    expect(await readQueueCounts(warehouse.db)).toEqual({
      queued: 10,
      waitingForReport: 0,
      active: 0,
      retrying: 0,
      deadLettered: 0,
      oneTimeReports: 0,
      pipelines: [
        { pipeline: 'alpha', queued: 10, waitingForReport: 0, active: 0, retrying: 0, deadLettered: 0 },
      ],
    });
    // Again later: still queued, nothing added.
    const again = await a.enqueue(jobs);
    expect([again.added, again.alreadyQueued]).toEqual([0, 10]);
    // Each planner follows the one job of each window.
    expect(again.ids).toEqual(fromA.ids);
    expect(fromB.ids).toEqual(fromA.ids);
  });

  it('three workers load every window once, never more than the credential allows at once', async () => {
    const queue = queues[0]!;
    await queue.enqueue(await planned());
    const seen: string[] = [];
    let inFlight = 0;
    let most = 0;
    const load = async (key: string) => {
      seen.push(key);
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, 150));
      inFlight--;
    };
    // Twelve slots in three workers (each with its own connections) race for two places.
    const workers = [
      await worker(queue, load, { concurrency: 4, perCredential: 2 }),
      await worker(await open(), load, { concurrency: 4, perCredential: 2 }),
      await worker(await open(), load, { concurrency: 4, perCredential: 2 }),
    ];
    await until(async () => (await jobStates()).every((s) => s.endsWith(':completed')));
    for (const w of workers) await w.stop(1000);
    expect(seen.sort()).toEqual([...new Set(seen)].sort());
    expect(seen).toHaveLength(10);
    expect(most).toBeLessThanOrEqual(2);
    expect(most).toBe(2);
    const windows = await listWindows(warehouse.db);
    expect(windows.map((w) => w.status)).toEqual(Array(10).fill('loaded'));
  });

  it('an idle worker looks at the queue once an interval whatever its concurrency, and every slot takes the windows that come', async () => {
    const queue = await open();
    let fetches = 0;
    const fetch = queue.fetch.bind(queue);
    queue.fetch = (perCredential) => {
      fetches++;
      return fetch(perCredential);
    };
    let inFlight = 0;
    let most = 0;
    let release: () => void = () => {};
    const released = new Promise<void>((r) => (release = r));
    const load = async () => {
      most = Math.max(most, ++inFlight);
      await released;
      inFlight--;
    };
    const started = Date.now();
    const w = await worker(queue, load, { concurrency: 4 });
    await new Promise((r) => setTimeout(r, 1600));
    // Each slot fetches once as it starts; then one of the idle slots polls, every 500 ms.
    expect(fetches).toBeLessThanOrEqual(4 + Math.floor((Date.now() - started) / 500) + 1);
    // Windows come: the slot that finds one wakes the next, until all four hold one (alpha's own
    // concurrency lets two of them load at once).
    await queues[0]!.enqueue(await planned());
    const active = async () => (await jobStates()).filter((s) => s.endsWith(':active')).length;
    await until(async () => (await active()) === 4);
    release();
    await until(async () => (await jobStates()).every((s) => s.endsWith(':completed')));
    await w.stop(1000);
    expect(most).toBe(2);
  });

  it("holds a credential's limit over its window jobs and its one-time report jobs together, across processes", async () => {
    const [mine, theirs] = [queues[0]!, await open()];
    const all = await planned();
    const jobs = all.filter((j) => j.window.windowKey === '2026-11-11');
    const elsewhere = all.find((j) => j.window.windowKey !== '2026-11-11')!;
    await mine.enqueue([...jobs, { ...elsewhere, credential: 'other' }]);
    const report = (organizationId: string, credential: string) => ({
      credential,
      request: {
        pipeline: 'alpha',
        organizationId,
        reportDefinitionName: 'TransactionRequestClass',
        subscriptionName: 'sub',
        timeZone: 'UTC',
        reportName: `chunk-${organizationId}`,
        start: '2026-11-01T00:00:00Z',
        end: '2026-11-11T00:00:00Z',
      },
    });
    await mine.ensureReportJob(report('org1', 'cred'));
    await mine.ensureReportJob(report('org2', 'cred'));
    // Limit 2 for 'cred': a report job and a window job take it, wherever they are fetched.
    const reportJob = await theirs.fetchReportJob(2);
    expect(reportJob?.data.credential).toBe('cred');
    const first = await mine.fetch(2);
    expect(first?.data.credential).toBe('cred');
    // 'cred' is full: the next window job fetched is the other credential's, then none.
    expect((await theirs.fetch(2))?.data.credential).toBe('other');
    expect(await mine.fetch(2)).toBeUndefined();
    expect(await theirs.fetchReportJob(2)).toBeUndefined();
    // A window job done leaves room for one more job of 'cred', of either kind.
    await mine.boss.complete(WINDOW_QUEUE, first!.id);
    const second = await theirs.fetchReportJob(2);
    expect(second?.data.request.organizationId).not.toBe(reportJob!.data.request.organizationId);
    expect(await mine.fetch(2)).toBeUndefined();
  });

  it('retries a failed window with backoff, then moves a window that keeps failing to the dead-letter queue', async () => {
    const queue = queues[0]!;
    await queue.enqueue((await planned()).filter((j) => j.window.windowKey === '2026-11-11'));
    const attempts = new Map<string, number>();
    const w = await worker(queue, async (key) => {
      const n = (attempts.get(key) ?? 0) + 1;
      attempts.set(key, n);
      if (key.startsWith('org1/')) throw new Error('the service keeps refusing org1');
      if (n === 1) throw new Error('a first failure');
    });
    await until(async () => {
      const states = await jobStates();
      return (
        states.includes(`${WINDOW_DEAD_LETTER_QUEUE}:created`) && states.includes(`${WINDOW_QUEUE}:completed`)
      );
    });
    await w.stop(1000);
    expect(await readQueueCounts(warehouse.db)).toEqual({
      queued: 0,
      waitingForReport: 0,
      active: 0,
      retrying: 0,
      deadLettered: 1,
      oneTimeReports: 0,
      pipelines: [
        { pipeline: 'alpha', queued: 0, waitingForReport: 0, active: 0, retrying: 0, deadLettered: 1 },
      ],
    });
    expect(queueLine(await readQueueCounts(warehouse.db))).toBe(
      `\nWindow queue (cybs-etl worker): 0 queued, 0 being loaded, 0 waiting to retry, 1 dead-lettered (their windows stay failed; see ${WINDOW_DEAD_LETTER_QUEUE}).\n`,
    );
    expect(attempts.get('org2/2026-11-11')).toBe(2);
    expect(attempts.get('org1/2026-11-11')).toBe(1 + settings.retryLimit);
    expect((await jobStates()).sort()).toEqual(
      [`${WINDOW_DEAD_LETTER_QUEUE}:created`, `${WINDOW_QUEUE}:completed`, `${WINDOW_QUEUE}:failed`].sort(),
    );
    const windows = await listWindows(warehouse.db);
    const org1 = windows.find((x) => x.organizationId === 'org1')!;
    // Every attempt counts; the window's backoff counts the one job that failed for good.
    expect([org1.status, org1.attempts, org1.failures, org1.lastErrorMessage]).toEqual([
      'failed',
      3,
      1,
      'the service keeps refusing org1',
    ]);
    expect(org1.retryAfter).not.toBeNull();
    const org2 = windows.find((x) => x.organizationId === 'org2')!;
    expect([org2.status, org2.attempts, org2.failures]).toEqual(['loaded', 2, 0]);
    const job = await readWindowJob(warehouse.db, org1);
    expect(job).toMatchObject({ state: 'failed', retryLimit: settings.retryLimit, deadLettered: true });
  });

  it('a stopping worker lets a window finish within the grace time, and rolls back and requeues one past it', async () => {
    const queue = queues[0]!;
    await queue.enqueue((await planned()).filter((j) => j.window.windowKey === '2026-11-11'));
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    const w = await worker(queue, async (key) => {
      if (key.startsWith('org1/')) await new Promise((r) => setTimeout(r, 300));
      else await slow;
    });
    await until(async () => w.inFlight === 2);
    // windows show's job: active, on this process.
    const [loading] = await listWindows(warehouse.db, { organizationId: 'org2' });
    const job = await readWindowJob(warehouse.db, loading!);
    expect(job).toMatchObject({ state: 'active', retryCount: 0, deadLettered: false, credential: 'cred' });
    expect(workerOfJob(job, loading!.claim)).toBe(`${hostname()}:${process.pid}`);
    expect(workerOfJob({ ...job!, state: 'retry' }, loading!.claim)).toBeNull();
    const stopping = w.stop(1000);
    setTimeout(release, 1500);
    await stopping;
    const windows = (await listWindows(warehouse.db)).filter((x) => x.windowKey === '2026-11-11');
    expect(windows.map((x) => `${x.organizationId}:${x.status}`).sort()).toEqual([
      'org1:loaded',
      'org2:pending',
    ]);
    expect((await jobStates()).sort()).toEqual([`${WINDOW_QUEUE}:completed`, `${WINDOW_QUEUE}:retry`]);
  });

  /** Start one window's job on worker A, whose load waits until `resume`; then take its job from it. */
  const jobTakenFromA = async () => {
    const queue = queues[0]!;
    const [job] = (await planned()).filter(
      (j) => j.window.windowKey === '2026-11-11' && j.organizationId === 'org1',
    );
    const { ids } = await queue.enqueue([job!]);
    let resume!: () => void;
    const held = new Promise<void>((r) => (resume = r));
    let calls = 0;
    const a = await worker(queue, async () => {
      if (++calls === 1) await held;
    });
    await until(async () => a.inFlight === 1);
    // What pg-boss's supervisor does to a job whose worker stopped sending heartbeats.
    await queue.boss.fail(WINDOW_QUEUE, { id: ids[0]!, retryCount: 0 }, { message: 'heartbeat lost' });
    return { a, resume, id: ids[0]! };
  };

  it('an attempt whose job was handed to another worker cannot commit: the window is loaded once, by the new attempt', async () => {
    const { a, resume, id } = await jobTakenFromA();
    const b = await worker(await open(), async () => {});
    await until(async () => (await jobStates()).includes(`${WINDOW_QUEUE}:completed`));
    resume();
    await until(async () => a.inFlight === 0);
    await a.stop(1000);
    await b.stop(1000);
    expect(committed).toEqual([jobClaim({ id, retryCount: 1 })]);
    const [window] = await listWindows(warehouse.db, { organizationId: 'org1' });
    expect([window!.status, window!.attempts, window!.claim]).toEqual(['loaded', 2, null]);
    expect(await jobStates()).toEqual([`${WINDOW_QUEUE}:completed`]);
  });

  it("rolls a window's load back when its job is no longer the attempt's, though the window still is", async () => {
    const { a, resume, id } = await jobTakenFromA();
    resume();
    await until(async () => a.inFlight === 0);
    // A's window transaction wrote the window's state, then found its job gone: all rolled back.
    expect(committed).toEqual([]);
    const [failed] = await listWindows(warehouse.db, { organizationId: 'org1' });
    expect([failed!.status, failed!.lastErrorCode]).toEqual(['failed', 'JOB_LOST']);
    // The job's next attempt loads it.
    await until(async () => (await jobStates()).includes(`${WINDOW_QUEUE}:completed`));
    await a.stop(1000);
    expect(committed).toEqual([jobClaim({ id, retryCount: 1 })]);
    const [window] = await listWindows(warehouse.db, { organizationId: 'org1' });
    expect(window!.status).toBe('loaded');
  });
});
