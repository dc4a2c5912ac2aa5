/**
 * One-time reports of backfill chunks as jobs of the queue: two workers (two "machines", each with
 * its own API client and download cache) load the windows of one chunk, and the chunk's report is
 * created once and followed by one job, each worker downloading it at most once; and a worker of
 * concurrency 1 is free while the report is being generated: another organization's window loads
 * meanwhile. The simulator's clock stands still, so the report is ready only when the test says.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PIPELINES } from '../../pipelines/index.js';
import { createReportingClient } from '../../src/api/reporting-client.js';
import type { ReportingClient } from '../../src/api/reporting-client.js';
import { parseConfig } from '../../src/config/load-config.js';
import { OneTimeReports } from '../../src/extract/one-time-reports.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createWindowExecutor } from '../../src/pipeline/execute-window.js';
import { resolvePipelines } from '../../src/pipeline/resolve-pipelines.js';
import { runQueuedPass } from '../../src/queue/queue-pass.js';
import type { QueuedPassSummary } from '../../src/queue/queue-pass.js';
import { readQueueCounts, readWindowJob } from '../../src/queue/queue-status.js';
import { openWindowQueue } from '../../src/queue/window-queue.js';
import type { WindowQueue } from '../../src/queue/window-queue.js';
import { startWindowWorker } from '../../src/queue/window-worker.js';
import type { WindowWorker } from '../../src/queue/window-worker.js';
import { startRun } from '../../src/state/runs.js';
import { scheduleOfSubscription } from '../../src/time/report-periods.js';
import { migrateToLatest } from '../../src/warehouse/migrate.js';
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import type { Warehouse } from '../../src/warehouse/warehouse.js';
import { reportDefinition } from '../../packages/simulator/src/render/report-layouts.js';
import { startSimulator } from '../../packages/simulator/src/server/start-simulator.js';
import type { SimulatorHandle } from '../../packages/simulator/src/server/start-simulator.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { duplicateRows } from '../helpers/ground-truth.js';
import { cli } from '../helpers/cli.js';

const DAY = 86_400_000;
const BASE = Date.parse('2024-06-10T19:00:00Z');
/** Has its subscription only from BASE on: its earlier days come from one-time reports. */
const LATE = 'sim_merchant_1';
/** Has its subscription from the first day. */
const EARLY = 'sim_merchant_2';
const NAME = 'TransactionRequestReport_Daily';
const ZONE = 'America/Los_Angeles';
const settings = { heartbeatSeconds: 10, retryLimit: 2, retryDelaySeconds: 1 };

const subscription = {
  reportDefinitionName: 'TransactionRequestClass',
  reportFields: [...reportDefinition('TransactionRequestClass')!.fields],
  reportMimeType: 'text/csv' as const,
  reportFrequency: 'DAILY' as const,
  reportName: NAME,
  timezone: ZONE,
  startTime: '0000',
  startDay: 1,
  reportPreferences: { signedAmounts: false, fieldNameConvention: 'SOAPI' as const },
};

/** A worker as one machine runs it: its own client (counting what it asks), queue and cache. */
interface Machine {
  counts: { creates: number; downloads: number };
  queue: WindowQueue;
  worker: WindowWorker;
  reports: OneTimeReports;
}

describe('one-time reports as jobs of the window queue', () => {
  let sim: SimulatorHandle;
  let database: TestDatabase;
  let warehouse: Warehouse;
  let db: pg.Client;
  let client: ReportingClient;
  let dir: string;
  const now = () => new Date(sim.now());
  const config = parseConfig(`defaults:\n  organizations: [${LATE}, ${EARLY}]\n`);
  const pipelines = resolvePipelines(
    PIPELINES.filter((p) => p.name === 'transaction_request'),
    config,
    { defaultOrganizations: [LATE, EARLY], now: new Date(BASE + 10 * DAY) },
  );
  const machines: Machine[] = [];

  beforeAll(async () => {
    sim = await startSimulator({
      seed: 21,
      organizations: 2,
      transactionsPerDay: 15,
      startDate: '2024-04-01',
      // Simulated time moves only when the test advances it.
      clock: () => BASE,
      subscriptions: [{ ...subscription, organizationId: EARLY }],
    });
    client = createReportingClient({
      credentials: { auth: 'http-signature', ...sim.portfolioCredentials },
      target: { baseUrl: sim.baseUrl },
      api: config.api,
    });
    await client.putSubscription(subscription, { organizationId: LATE });
    sim.advance(10 * DAY);
    const pipeline = pipelines[0]!;
    const sub = await client.getSubscription(NAME, { organizationId: EARLY });
    pipeline.timeZone = ZONE;
    const schedule = scheduleOfSubscription(sub, ZONE);
    if (typeof schedule === 'string') throw new Error(schedule);
    pipeline.reportSchedule = schedule;
    dir = await mkdtemp(join(tmpdir(), 'cybs-onetime-jobs-'));
    database = await createTestDatabase('onetimejobs');
    warehouse = await openWarehouse({ url: database.url, path: '' });
    await migrateToLatest(warehouse.db);
    db = new pg.Client({ connectionString: database.url });
    await db.connect();
  }, 60_000);

  afterAll(async () => {
    for (const m of machines) {
      await m.worker.stop(1000);
      await m.queue.stop({ graceful: false, timeoutMs: 1000 });
      await m.reports.close();
    }
    await db?.end();
    await warehouse?.close();
    await sim?.close();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function startMachine(concurrency: number, timeoutMs?: number): Promise<Machine> {
    const counts = { creates: 0, downloads: 0 };
    const counted: ReportingClient = {
      ...client,
      createReport: (...args) => {
        counts.creates++;
        return client.createReport(...args);
      },
      downloadReportToFile: (...args) => {
        counts.downloads++;
        return client.downloadReportToFile(...args);
      },
    };
    const logger = silentLogger();
    const reports = new OneTimeReports(
      { client: counted, logger },
      { now, pollInitialMs: 100, pollMaxMs: 400, ...(timeoutMs ? { timeoutMs } : {}) },
    );
    const queue = await openWindowQueue(warehouse.connection, { logger, supervise: true, settings });
    const worker = await startWindowWorker(
      {
        queue,
        db: warehouse.db,
        logger,
        execute: createWindowExecutor({
          warehouse,
          client: counted,
          logger,
          organizationParam: (org) => org,
          oneTimeReports: reports,
        }),
        pipelines: new Map(pipelines.map((p) => [p.name, p])),
        unavailable: new Map(),
        now,
        oneTimeReports: reports,
      },
      { concurrency, perCredential: 8, pollingSeconds: 0.5 },
    );
    const machine = { counts, queue, worker, reports };
    machines.push(machine);
    return machine;
  }

  async function stopMachines(): Promise<void> {
    for (const m of machines.splice(0)) {
      await m.worker.stop(1000);
      await m.queue.stop({ graceful: false, timeoutMs: 1000 });
      await m.reports.close();
    }
  }

  /** A backfill pass of the range (one organization), whose windows the machines load. */
  async function backfill(
    queue: WindowQueue,
    range: { from: string; to: string },
    organizationId: string,
    force = false,
  ): Promise<QueuedPassSummary> {
    return runQueuedPass(
      { db: warehouse.db, logger: silentLogger(), queue, credential: 'cred' },
      {
        pipelines,
        organizationId,
        range,
        force,
        oneTime: range,
        runId: await startRun(warehouse.db, { command: 'backfill', trigger: 'test', pipelines: [] }),
        now,
        pollMs: 50,
      },
    );
  }

  async function until<T>(what: string, read: () => Promise<T | undefined>): Promise<T> {
    for (let i = 0; i < 600; i++) {
      const value = await read();
      if (value !== undefined) return value;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`gave up waiting for ${what}`);
  }

  const reportRow = async (organizationId: string) =>
    (
      await db.query<{ report_name: string; status: string }>(
        'select report_name, status from etl.one_time_reports where organization_id = $1',
        [organizationId],
      )
    ).rows;

  it('two workers load the windows of one chunk: its report is created once, downloaded at most once per worker', async () => {
    const a = await startMachine(2);
    const b = await startMachine(2);
    const range = { from: '2024-05-01', to: '2024-05-06' };
    const pass = backfill(a.queue, range, LATE);
    // Both workers took windows of the chunk, which wait for the report in the queue.
    // The report is created (its job then waits in the queue until the service is done with it).
    const { waiting, row } = await until('the windows to wait for the created report', async () => {
      const counts = await readQueueCounts(warehouse.db);
      const [report] = await reportRow(LATE);
      return counts?.waitingForReport === 6 && counts.active === 0 && report && report.status !== 'REQUESTED'
        ? { waiting: counts, row: report }
        : undefined;
    });
    expect(waiting).toMatchObject({ queued: 6, waitingForReport: 6, oneTimeReports: 1 });
    expect(row.report_name).toBe(`cybs-etl_transaction_request_${LATE}_2024-05-01_2024-05-06`);
    expect(['CREATED', 'QUEUED']).toContain(row.status);
    const job = await readWindowJob(warehouse.db, {
      pipeline: 'transaction_request',
      organizationId: LATE,
      windowKey: '2024-05-03',
    });
    expect(job).toMatchObject({ state: 'created', waitingFor: row.report_name });
    const { rows: states } = await db.query<{ status: string; last_error_message: string }>(
      `select status, last_error_message from etl.windows where organization_id = $1`,
      [LATE],
    );
    for (const w of states) {
      expect(w.status).toBe('pending');
      expect(w.last_error_message).toContain(`waiting for one-time report ${row.report_name}`);
    }

    // The service finishes the report: its job finds it, and the windows load.
    sim.advance(10_000);
    const summary = await pass;
    expect(summary.failures).toEqual([]);
    expect(summary.windows.loaded + summary.windows.no_data).toBe(6);
    expect(a.counts.creates + b.counts.creates).toBe(1);
    expect(sim.store.adhocReports(LATE)).toHaveLength(1);
    expect(a.counts.downloads).toBeLessThanOrEqual(1);
    expect(b.counts.downloads).toBeLessThanOrEqual(1);
    expect(a.counts.downloads + b.counts.downloads).toBeGreaterThanOrEqual(1);
    expect(await reportRow(LATE)).toEqual([{ report_name: row.report_name, status: 'COMPLETED' }]);
    // Each window committed once, from the one-time report; no row twice.
    const { rows } = await db.query<{ status: string; source_ref: string; rows_loaded: number }>(
      `select status, source_ref, rows_loaded from etl.windows where organization_id = $1`,
      [LATE],
    );
    expect(rows).toHaveLength(6);
    for (const w of rows) {
      expect(['loaded', 'no_data']).toContain(w.status);
      expect(w.source_ref).toContain(`one-time report ${row.report_name}`);
    }
    const loaded = rows.reduce((n, w) => n + Number(w.rows_loaded), 0);
    const { rows: count } = await db.query<{ n: number }>(
      `select count(*)::int as n from cybs.transaction_request where _organization_id = $1`,
      [LATE],
    );
    expect(count[0]!.n).toBe(loaded);
    expect(loaded).toBeGreaterThan(0);
    expect(await duplicateRows(db)).toBe(0);
    await stopMachines();
  }, 120_000);

  it('finds the reports of an earlier backfill at the service when the warehouse forgot them, and creates none', async () => {
    await db.query('delete from etl.one_time_reports');
    const m = await startMachine(2);
    // Its own chunk would be 2024-05-02..2024-05-04: the report of 2024-05-01..2024-05-06 covers it.
    const summary = await backfill(m.queue, { from: '2024-05-02', to: '2024-05-04' }, LATE, true);
    expect(summary.failures).toEqual([]);
    expect(summary.windows.loaded + summary.windows.no_data).toBe(3);
    expect(m.counts.creates).toBe(0);
    expect(sim.store.adhocReports(LATE)).toHaveLength(1);
    expect(await reportRow(LATE)).toEqual([
      { report_name: `cybs-etl_transaction_request_${LATE}_2024-05-01_2024-05-06`, status: 'COMPLETED' },
    ]);
    expect(await duplicateRows(db)).toBe(0);
    await stopMachines();
  }, 120_000);

  it('a worker of concurrency 1 loads another window while a one-time report is being generated', async () => {
    const m = await startMachine(1);
    const range = { from: '2024-05-10', to: '2024-05-11' };
    const late = backfill(m.queue, range, LATE);
    const [pending] = await until('the report to be asked for', async () => {
      const rows = await reportRow(LATE);
      const row = rows.find((r) => r.report_name.endsWith('_2024-05-10_2024-05-11'));
      return row && row.status !== 'REQUESTED' ? [row] : undefined;
    });
    // The only slot is free: a window of the other organization loads from its subscription report.
    const early = await backfill(m.queue, { from: '2024-05-10', to: '2024-05-10' }, EARLY);
    expect(early.windows.loaded).toBe(1);
    const [still] = (await reportRow(LATE)).filter((r) => r.report_name === pending!.report_name);
    expect(['CREATED', 'QUEUED']).toContain(still!.status);
    const { rows: waiting } = await db.query<{ status: string }>(
      `select status from etl.windows where organization_id = $1 and window_key in ('2024-05-10', '2024-05-11')`,
      [LATE],
    );
    expect(waiting.map((w) => w.status)).toEqual(['pending', 'pending']);
    // What `windows show` and `status` tell of a window waiting for its report.
    const config = join(dir, 'config.yaml');
    await writeFile(config, `log: { level: silent }\ndefaults:\n  organizations: [${LATE}, ${EARLY}]\n`);
    const env = { DATABASE_URL: database.url };
    const show = await cli(
      ['--config', config, 'windows', 'show', 'transaction_request', '2024-05-10', '--organization-id', LATE],
      { env },
    );
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain(`waiting for one-time report ${pending!.report_name}`);
    expect(show.stdout).toMatch(
      new RegExp(`one-time report\\s+${pending!.report_name}: (CREATED|QUEUED), looked at again at `),
    );
    const status = await cli(['--config', config, 'status'], { env });
    expect(status.stdout).toContain(
      '2 queued (2 of them waiting for the one-time reports of their chunks, 1 being generated)',
    );

    sim.advance(10_000);
    const summary = await late;
    expect(summary.failures).toEqual([]);
    expect(summary.windows.loaded + summary.windows.no_data).toBe(2);
    const { rows: order } = await db.query<{ organization_id: string; loaded_at: Date }>(
      `select organization_id, loaded_at from etl.windows where window_key in ('2024-05-10', '2024-05-11') order by loaded_at`,
    );
    expect(order[0]!.organization_id).toBe(EARLY);
    await stopMachines();
  }, 120_000);

  it('a one-time report that ends in ERROR fails the windows of its chunk, visibly', async () => {
    const m = await startMachine(2);
    sim.setFaults(`report:error=cybs-etl_transaction_request_${LATE}_2024-05-20_*`);
    try {
      const range = { from: '2024-05-20', to: '2024-05-21' };
      const pass = backfill(m.queue, range, LATE);
      await until('the report to be asked for', async () => {
        const rows = await reportRow(LATE);
        return rows.some((r) => r.report_name.includes('_2024-05-20_') && r.status !== 'REQUESTED')
          ? true
          : undefined;
      });
      sim.advance(10_000);
      const summary = await pass;
      expect(summary.windows.failed).toBe(2);
      expect(summary.failures.map((f) => f.code)).toEqual([
        'EXTRACT_ONE_TIME_ERROR',
        'EXTRACT_ONE_TIME_ERROR',
      ]);
      const { rows } = await db.query<{ status: string; last_error_message: string }>(
        `select status, last_error_message from etl.windows where organization_id = $1 and window_key in ('2024-05-20', '2024-05-21')`,
        [LATE],
      );
      for (const w of rows) {
        expect(w.status).toBe('failed');
        expect(w.last_error_message).toContain('ended in ERROR at the service');
      }
    } finally {
      sim.setFaults('');
      await stopMachines();
    }
  }, 120_000);

  it('a one-time report still not ready at the timeout fails its windows; the next backfill asks for it again', async () => {
    const m = await startMachine(2, 500);
    const range = { from: '2024-05-25', to: '2024-05-26' };
    const name = `cybs-etl_transaction_request_${LATE}_2024-05-25_2024-05-26`;
    const first = await backfill(m.queue, range, LATE);
    expect(first.windows.failed).toBe(2);
    expect(first.failures.map((f) => f.code)).toEqual(['EXTRACT_ONE_TIME_FAILED', 'EXTRACT_ONE_TIME_FAILED']);
    expect(first.failures[0]!.message).toContain(`one-time report "${name}" was given up on`);
    expect((await reportRow(LATE)).find((r) => r.report_name === name)?.status).toBe('FAILED');
    // The jobs of the first pass spend their retries (each fails the same way), then a new pass
    // asks for the report again, and it is ready by now.
    await until("the first pass's jobs to be spent", async () => {
      const counts = await readQueueCounts(warehouse.db);
      return counts && counts.queued + counts.active + counts.retrying === 0 ? true : undefined;
    });
    sim.advance(10_000);
    await stopMachines();
    const again = await startMachine(2);
    const second = await backfill(again.queue, range, LATE);
    expect(second.failures).toEqual([]);
    expect(second.windows.loaded + second.windows.no_data).toBe(2);
    expect((await reportRow(LATE)).find((r) => r.report_name === name)?.status).toBe('COMPLETED');
    await stopMachines();
  }, 120_000);
});
