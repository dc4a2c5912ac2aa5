import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load-config.js';
import { migrateToLatest } from '../../src/warehouse/migrate.js';
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import type { Warehouse } from '../../src/warehouse/warehouse.js';
import { silentLogger } from '../../src/observability/logger.js';
import { resolvePipelines } from '../../src/pipeline/resolve-pipelines.js';
import { runPipelines } from '../../src/pipeline/run-pipelines.js';
import type { WindowExecutor } from '../../src/pipeline/run-pipelines.js';
import {
  claimWindow,
  completeWindow,
  ensureWindows,
  getWindow,
  LEASE_LOCK_SPACE,
  listWindows,
} from '../../src/state/windows.js';
import { CybsError } from '../../src/errors.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { standInPipelines } from '../helpers/stand-in-pipelines.js';

const defs = standInPipelines();

describe('runPipelines', () => {
  let database: TestDatabase;
  let warehouse: Warehouse;
  const now = () => new Date('2026-11-21T12:00:00Z');
  const config = parseConfig('defaults:\n  startDate: "2026-11-10"\n  lookbackDays: 2\n');
  const pipelines = resolvePipelines(defs, config, { defaultOrganizations: ['org1', 'org2'], now: now() });

  beforeAll(async () => {
    database = await createTestDatabase('orch');
    warehouse = await openWarehouse({ url: database.url, path: '' });
    await migrateToLatest(warehouse.db);
  });
  afterAll(async () => {
    await warehouse.close();
    await database.drop();
  });

  const base = { pipelines, globalConcurrency: 3, leaseSeconds: 60, runId: null, now };
  const holdOwnerLock = (owner: string) => warehouse.holdAdvisoryLock(LEASE_LOCK_SPACE, owner);
  /** Window `day` of alpha/org1, claimed by `owner`, a live process; resolves to its end. */
  const heldByLiveProcess = async (day: string, owner: string) => {
    const ref = { pipeline: 'alpha', organizationId: 'org1', windowKey: day };
    const end = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000);
    await ensureWindows(warehouse.db, [{ ...ref, start: new Date(`${day}T00:00:00Z`), end }]);
    const release = await holdOwnerLock(owner);
    await claimWindow(warehouse.db, ref, { owner, leaseSeconds: 900, runId: null, claimable: ['pending'] });
    return release;
  };

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
      await completeWindow(
        warehouse.db,
        {
          pipeline: task.pipeline.name,
          organizationId: task.window.organizationId,
          windowKey: task.window.windowKey,
        },
        task.owner,
        {
          status: 'loaded',
          rowsLoaded: 5,
          rowsRejected: 0,
          counts: {},
          sourceRef: null,
        },
      );
      inFlight--;
      return { kind: 'loaded', rowsLoaded: 5, rowsRejected: 0 };
    };
    const first = await runPipelines(
      { db: warehouse.db, logger: silentLogger(), execute, holdOwnerLock },
      base,
    );
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
      held: 0,
    });
    expect(first.failures[0]).toMatchObject({
      pipeline: 'alpha',
      organizationId: 'org1',
      windowKey: '2026-11-12',
      message: 'simulated failure',
    });

    seen.length = 0;
    const second = await runPipelines(
      { db: warehouse.db, logger: silentLogger(), execute, holdOwnerLock },
      base,
    );
    // the failed and not-ready windows again, plus the 2 lookback days of each pipeline x organization
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

  it('stops claiming on interrupt and leaves nothing running', async () => {
    const controller = new AbortController();
    let calls = 0;
    const execute: WindowExecutor = async () => {
      calls++;
      controller.abort();
      throw new Error('aborted mid-window');
    };
    const summary = await runPipelines(
      { db: warehouse.db, logger: silentLogger(), execute, holdOwnerLock },
      {
        ...base,
        range: { from: '2026-10-01', to: '2026-10-31' },
        signal: controller.signal,
        globalConcurrency: 1,
      },
    );
    expect(summary.interrupted).toBe(true);
    expect(calls).toBe(1);
    const running = await listWindows(warehouse.db, { statuses: ['running'] });
    expect(running).toEqual([]);
    const failed = await listWindows(warehouse.db, { statuses: ['failed'] });
    expect(failed.some((w) => w.windowKey.startsWith('2026-10'))).toBe(false);
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
      await completeWindow(
        warehouse.db,
        {
          pipeline: task.pipeline.name,
          organizationId: task.window.organizationId,
          windowKey: task.window.windowKey,
        },
        task.owner,
        { status: 'loaded', rowsLoaded: 1, rowsRejected: 0, counts: {}, sourceRef: 'x' },
      );
      return { kind: 'loaded', rowsLoaded: 1, rowsRejected: 0 };
    };
    const summary = await runPipelines(
      { db: warehouse.db, logger: silentLogger(), execute, holdOwnerLock },
      {
        ...base,
        range: { from: '2026-09-01', to: '2026-09-01' },
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

  it('takes at once a window whose holder is gone, and waits for one a live process is loading', async () => {
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
    const claim = (organizationId: string, owner: string) =>
      claimWindow(warehouse.db, refOf(organizationId), {
        owner,
        leaseSeconds: 900,
        runId: null,
        claimable: ['pending'],
      });
    // org1: claimed by a process that was killed (its lock is gone with it), lease 15 minutes ahead.
    const killed = await holdOwnerLock('killed');
    expect(await claim('org1', 'killed')).toBeDefined();
    await killed();
    // org2: claimed by a process that is alive and finishes it while this run waits.
    const other = await holdOwnerLock('other');
    expect(await claim('org2', 'other')).toBeDefined();
    const loadedBy: string[] = [];
    const execute: WindowExecutor = async (task) => {
      loadedBy.push(task.window.organizationId);
      await completeWindow(warehouse.db, refOf(task.window.organizationId), task.owner, {
        status: 'loaded',
        rowsLoaded: 1,
        rowsRejected: 0,
        counts: {},
        sourceRef: 'x',
      });
      return { kind: 'loaded', rowsLoaded: 1, rowsRejected: 0 };
    };
    let waits = 0;
    const summary = await runPipelines(
      { db: warehouse.db, logger: silentLogger(), execute, holdOwnerLock },
      {
        ...base,
        pipelines: [alpha],
        range: { from: day, to: day },
        sleep: async () => {
          waits++;
          await completeWindow(warehouse.db, refOf('org2'), 'other', {
            status: 'loaded',
            rowsLoaded: 2,
            rowsRejected: 0,
            counts: {},
            sourceRef: 'y',
          });
        },
      },
    );
    await other();
    expect(loadedBy).toEqual(['org1']);
    expect(waits).toBe(1);
    expect(summary.windows).toMatchObject({ loaded: 1, skipped: 1, held: 0, failed: 0 });
    expect(summary.interrupted).toBe(false);
    expect(await getWindow(warehouse.db, refOf('org2'))).toMatchObject({ status: 'loaded', rowsLoaded: 2 });
  });

  it('says so, and does not report success, when it stops waiting for a window a live process holds', async () => {
    const alpha = pipelines.find((p) => p.name === 'alpha')!;
    const day = '2026-08-05';
    const other = await heldByLiveProcess(day, 'busy');
    const drain = new AbortController();
    const summary = await runPipelines(
      {
        db: warehouse.db,
        logger: silentLogger(),
        execute: () => Promise.reject(new Error('not reached')),
        holdOwnerLock,
      },
      {
        ...base,
        pipelines: [alpha],
        organizationId: 'org1',
        range: { from: day, to: day },
        drain: drain.signal,
        sleep: async () => void drain.abort(),
      },
    );
    await other();
    expect(summary.windows, JSON.stringify(summary)).toMatchObject({ held: 1, loaded: 0, failed: 0 });
    expect(summary.interrupted).toBe(true);
  });

  it('stops waiting for a window a live process holds after one lease, and says so', async () => {
    const alpha = pipelines.find((p) => p.name === 'alpha')!;
    const day = '2026-08-07';
    const stuck = await heldByLiveProcess(day, 'stuck');
    const waits: number[] = [];
    const summary = await runPipelines(
      {
        db: warehouse.db,
        logger: silentLogger(),
        execute: () => Promise.reject(new Error('not reached')),
        holdOwnerLock,
        heldPollMs: 1000,
      },
      {
        ...base,
        leaseSeconds: 5,
        pipelines: [alpha],
        organizationId: 'org1',
        range: { from: day, to: day },
        sleep: async (ms) => void waits.push(ms),
      },
    );
    await stuck();
    expect(waits).toEqual([1000, 1000, 1000, 1000, 1000]);
    expect(summary.windows).toMatchObject({ held: 1, loaded: 0, failed: 0 });
    expect(summary.interrupted).toBe(true);
  });
});
