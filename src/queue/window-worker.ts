import { CompiledQuery, sql } from 'kysely';
import type { Job } from 'pg-boss';
import { CybsError } from '../errors.js';
import type { Db } from '../warehouse/warehouse.js';
import type { Logger } from '../observability/logger.js';
import type { ResolvedPipeline } from '../pipeline/resolve-pipelines.js';
import { createLimiter } from '../pipeline/limiter.js';
import { runWindow } from '../pipeline/run-pipelines.js';
import type { CommittedOutcome, WindowExecutor, WindowRunOutcome } from '../pipeline/run-pipelines.js';
import type { OneTimeReports } from '../extract/one-time-reports.js';
import {
  WAIT_FOR_REPORT_SECONDS,
  giveUpReport,
  runReportJob,
  wakeIfReportFinal,
  wakeWaitingWindows,
} from './chunk-jobs.js';
import type { ReportJobDeps } from './chunk-jobs.js';
import { claimableOf, jobClaim, windowOfJob } from './window-jobs.js';
import type { ReportJobData, WindowJobData } from './window-jobs.js';
import { ONE_TIME_QUEUE, QUEUE_SCHEMA, WINDOW_QUEUE } from './window-queue.js';
import type { WindowQueue } from './window-queue.js';

/**
 * How often the heartbeats of the jobs in flight are refreshed: three times within the shortest
 * heartbeat a planner may set (queue.heartbeatSeconds ≥ 10), whatever this worker's own config says.
 */
const HEARTBEAT_REFRESH_MS = 3_000;

export interface WindowWorkerDeps {
  queue: WindowQueue;
  db: Db;
  logger: Logger;
  execute: WindowExecutor;
  /** The pipelines this process can run, by name (resolved from its config and their subscriptions). */
  pipelines: ReadonlyMap<string, ResolvedPipeline>;
  /** Pipelines that cannot run here, with the reason (their subscription does not exist, ...). */
  unavailable: ReadonlyMap<string, string>;
  now: () => Date;
  /** One-time reports of backfills: this worker also runs their jobs (chunk-jobs.ts). */
  oneTimeReports?: OneTimeReports;
}

export interface WindowWorkerOptions {
  /** Windows in flight in this process. */
  concurrency: number;
  /** Windows in flight per API credential across every worker on the warehouse (pg-boss group concurrency). */
  perCredential: number;
  /** How often an idle worker looks for jobs, in seconds (pg-boss polling; at least 0.5). */
  pollingSeconds?: number;
  /** Attempts of a window's load on a retryable load error, and the waits between them (runWindow's). */
  loadAttempts?: number;
  sleep?: (ms: number) => Promise<void>;
  /** Called after each job this worker settles. */
  onWindow?: (data: WindowJobData, outcome: WindowRunOutcome) => void;
  /**
   * Called when a slot finds the queue empty (at most one call at a time): the moment to do what
   * waits for a batch of windows, such as refreshing the models.
   */
  onIdle?: () => Promise<void>;
}

export interface WindowWorker {
  /** Jobs running in this process now. */
  readonly inFlight: number;
  /**
   * Stop taking jobs; the windows in flight finish, or at `timeoutMs` are aborted (their
   * transactions roll back) and their jobs fail back to the queue to be retried.
   */
  stop(timeoutMs: number): Promise<void>;
}

/** A failure of a window's job: pg-boss retries it with backoff, then moves it to the dead-letter queue. */
function jobFailure(data: WindowJobData, code: string, message: string): CybsError {
  return new CybsError(code, message, {
    stage: 'queue',
    context: {
      pipeline: data.pipeline,
      organizationId: data.organizationId,
      windowKey: data.window.windowKey,
    },
  });
}

/**
 * Whether this attempt of a job is its last: pg-boss retries a failed attempt while the job's retry
 * count is below its retry limit (set by the planner that enqueued it, queue.retryLimit). Read only
 * when an attempt fails.
 */
async function isLastAttempt(
  db: Db,
  queue: string,
  job: { id: string; retryCount: number },
): Promise<boolean> {
  const r = await sql<{ retry_limit: number }>`
    select retry_limit from ${sql.table(`${QUEUE_SCHEMA}.job`)}
     where name = ${queue} and id = ${job.id}::uuid`.execute(db);
  const limit = r.rows[0]?.retry_limit;
  return limit === undefined || job.retryCount >= limit;
}

/**
 * Run window jobs from the queue until stopped: each job's window goes through runWindow (claimed
 * by the job's attempt, loaded, recorded). A job whose window is loaded or has no data is completed
 * inside the window's load transaction, so the job's completion, the rows and the window's state
 * commit together or not at all; a job whose window is not ready yet (the next plan enqueues it
 * again) or was settled by another job completes after; one whose window failed fails, and is retried.
 */
export async function startWindowWorker(
  deps: WindowWorkerDeps,
  options: WindowWorkerOptions,
): Promise<WindowWorker> {
  const abort = new AbortController();
  let inFlight = 0;
  let idle: (() => void) | undefined;
  const boss = deps.queue.boss;
  // A pipeline's own `concurrency` holds within this process, as it did for a pass.
  const perPipeline = new Map(
    [...deps.pipelines.values()].map((p) => [p.name, createLimiter(p.concurrency)]),
  );
  /** Completed in the window's transaction (the job ends with it, or rolls back with it). */
  const completeInTransaction = async (
    job: Job<WindowJobData>,
    trx: Db,
    outcome: CommittedOutcome,
  ): Promise<void> => {
    const executeSql = async (text: string, values?: unknown[]) => ({
      rows: (await trx.executeQuery(CompiledQuery.raw(text, values ?? []))).rows,
    });
    const result = await boss.complete(WINDOW_QUEUE, { id: job.id, retryCount: job.retryCount }, outcome, {
      db: { executeSql },
    });
    // pg-boss's declared CommandResponse names no fields; `affected` is the count of jobs it settled.
    if ((result as { affected?: number }).affected !== 1) {
      throw jobFailure(
        job.data,
        'JOB_LOST',
        `window job ${job.id} (attempt ${job.retryCount}) is no longer this worker's (it was handed to another after its heartbeat lapsed); its load was rolled back`,
      );
    }
  };
  /** What the worker does with the job once the handler returns: completed already, or complete it now. */
  const handle = async (
    job: Job<WindowJobData>,
  ): Promise<{ outcome: WindowRunOutcome; completed: boolean }> => {
    const data = job.data;
    const pipeline = deps.pipelines.get(data.pipeline);
    if (!pipeline) {
      throw jobFailure(
        data,
        'QUEUE_UNKNOWN_PIPELINE',
        `pipeline ${data.pipeline} is not known to this worker's config; run workers with the same config.yaml as the planners.`,
      );
    }
    const unavailable = deps.unavailable.get(data.pipeline);
    if (unavailable) throw jobFailure(data, 'PIPELINE_UNAVAILABLE', unavailable);
    let completed = false;
    const outcome = await perPipeline.get(pipeline.name)!(() =>
      runWindow(
        { db: deps.db, logger: deps.logger.child({ job: job.id }), execute: deps.execute },
        { pipeline, window: windowOfJob(data), claimable: claimableOf(data) },
        {
          claim: jobClaim(job),
          runId: data.runId,
          now: deps.now,
          signal: abort.signal,
          ...(options.loadAttempts !== undefined ? { loadAttempts: options.loadAttempts } : {}),
          ...(options.sleep ? { sleep: options.sleep } : {}),
          jobSpent: () => isLastAttempt(deps.db, WINDOW_QUEUE, job),
          ...(data.oneTime
            ? {
                oneTime: {
                  range: data.oneTime,
                  queuedAt: new Date(data.queuedAt ?? 0),
                  ...(data.waitingFor ? { waitingFor: data.waitingFor } : {}),
                },
              }
            : {}),
          beforeCommit: async (trx, committed) => {
            completed = false;
            await completeInTransaction(job, trx, committed);
            completed = true;
          },
        },
      ),
    );
    options.onWindow?.(data, outcome);
    if (outcome.kind === 'failed') throw jobFailure(data, outcome.code, outcome.message);
    if (outcome.kind === 'interrupted') {
      throw jobFailure(
        data,
        'WINDOW_INTERRUPTED',
        'the worker stopped while the window was loading; it rolled back',
      );
    }
    return { outcome, completed: completed && (outcome.kind === 'loaded' || outcome.kind === 'no_data') };
  };
  // Each slot fetches its next job as soon as it is done with one (pg-boss's own work() loop waits
  // a polling interval after every job, which would cap a slot at two windows a second); an idle
  // slot polls. Heartbeats of the jobs in flight are refreshed from here.
  const running = new Map<string, { id: string; retryCount: number }>();
  const heartbeat = setInterval(() => {
    if (running.size > 0) void boss.touch(WINDOW_QUEUE, [...running.values()]).catch(() => {});
  }, HEARTBEAT_REFRESH_MS);
  heartbeat.unref();
  const pollMs = Math.max(500, (options.pollingSeconds ?? 2) * 1000);
  let stopping = false;
  let idleRunning = false;
  const sleepers = new Set<() => void>();
  const pause = () =>
    new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, pollMs);
      sleepers.add(wake);
    });
  const slot = async (): Promise<void> => {
    while (!stopping) {
      let job: Job<WindowJobData> | undefined;
      try {
        job = await deps.queue.fetch(options.perCredential);
      } catch (error) {
        deps.logger.warn({ err: (error as Error).message }, 'could not fetch a window job; trying again');
      }
      if (!job) {
        if (options.onIdle && !idleRunning) {
          idleRunning = true;
          await options.onIdle().finally(() => (idleRunning = false));
        }
        await pause();
        continue;
      }
      const attempt = { id: job.id, retryCount: job.retryCount };
      running.set(job.id, attempt);
      inFlight++;
      try {
        const { outcome, completed } = await handle(job);
        if (outcome.kind === 'waiting') await waitForReport(job, outcome.report);
        else if (!completed) await boss.complete(WINDOW_QUEUE, attempt, outcome);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        const code = error instanceof CybsError ? error.code : 'UNEXPECTED';
        await boss
          .fail(WINDOW_QUEUE, attempt, { code, message })
          .catch((e: Error) =>
            deps.logger.error(
              { err: e.message, job: job.id },
              'could not record the failure of a window job',
            ),
          );
      } finally {
        running.delete(job.id);
        if (--inFlight === 0) idle?.();
      }
    }
  };
  const reportDeps: ReportJobDeps | undefined = deps.oneTimeReports
    ? { db: deps.db, queue: deps.queue, reports: deps.oneTimeReports, logger: deps.logger }
    : undefined;
  /**
   * A window whose one-time report is not ready: a job follows the report, and the window's job goes
   * back to the queue, giving its worker (and credential) slot back, until that job wakes it.
   */
  const waitForReport = async (job: Job<WindowJobData>, report: ReportJobData['request']): Promise<void> => {
    const data: ReportJobData = { request: report, credential: job.data.credential };
    await deps.queue.ensureReportJob(data);
    const attempt = { id: job.id, retryCount: job.retryCount };
    const waiting = { ...job.data, waitingFor: report.reportName };
    if (await deps.queue.park(WINDOW_QUEUE, attempt, WAIT_FOR_REPORT_SECONDS, waiting)) {
      await wakeIfReportFinal(deps, data, job.data.window.windowKey);
    }
  };
  /** Runs one-time report jobs, one step at a time (they wait in the queue, not here). */
  const reportSlot = async (report: ReportJobDeps): Promise<void> => {
    while (!stopping) {
      let job: Job<ReportJobData> | undefined;
      try {
        job = await deps.queue.fetchReportJob();
      } catch (error) {
        deps.logger.warn({ err: (error as Error).message }, 'could not fetch a one-time report job');
      }
      if (!job) {
        await pause();
        continue;
      }
      const attempt = { id: job.id, retryCount: job.retryCount };
      const beat = setInterval(() => {
        void boss.touch(ONE_TIME_QUEUE, [attempt]).catch(() => {});
      }, HEARTBEAT_REFRESH_MS);
      try {
        const step = await runReportJob(report, job.data);
        if (step.kind === 'wait') {
          await deps.queue.park(ONE_TIME_QUEUE, attempt, step.delayMs / 1000, step.data);
        } else {
          await wakeWaitingWindows(report, job.data);
          await boss.complete(ONE_TIME_QUEUE, attempt);
        }
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        const code = error instanceof CybsError ? error.code : 'UNEXPECTED';
        deps.logger.warn(
          { code, err: message, report: job.data.request.reportName },
          'one-time report job failed',
        );
        try {
          // A verdict another attempt would meet again (the subscription lacks the period field,
          // ...), or its retries spent: the report is given up on, its windows fail with the reason.
          const verdict = error instanceof CybsError && error.stage === 'extract' && !error.retryable;
          if (verdict || (await isLastAttempt(deps.db, ONE_TIME_QUEUE, job))) {
            await giveUpReport(report, job.data, `${code}: ${message}`);
            await wakeWaitingWindows(report, job.data);
          }
          if (verdict) await boss.complete(ONE_TIME_QUEUE, attempt, { code, message });
          else await boss.fail(ONE_TIME_QUEUE, attempt, { code, message });
        } catch (e) {
          deps.logger.error(
            { err: (e as Error).message, job: job.id },
            'could not record the failure of a one-time report job',
          );
        }
      } finally {
        clearInterval(beat);
      }
    }
  };
  const slots = [
    ...Array.from({ length: options.concurrency }, () => slot()),
    ...(reportDeps ? [reportSlot(reportDeps)] : []),
  ];
  return {
    get inFlight() {
      return inFlight;
    },
    async stop(timeoutMs) {
      stopping = true;
      for (const wake of [...sleepers]) wake();
      if (inFlight > 0) {
        const drained = new Promise<void>((resolve) => (idle = resolve));
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
        await Promise.race([drained, timedOut]);
        clearTimeout(timer);
        if (inFlight > 0) {
          abort.abort();
          await drained;
        }
      }
      await Promise.all(slots);
      clearInterval(heartbeat);
    },
  };
}
