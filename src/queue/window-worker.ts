import { CompiledQuery } from 'kysely';
import type { Job, PgBoss } from 'pg-boss';
import { CybsError } from '../errors.js';
import type { Db } from '../warehouse/warehouse.js';
import type { Logger } from '../observability/logger.js';
import type { ResolvedPipeline } from '../pipeline/resolve-pipelines.js';
import { createLimiter } from '../pipeline/limiter.js';
import { runWindow } from '../pipeline/run-pipelines.js';
import type {
  BeforeWindowCommit,
  CommittedOutcome,
  RunWindowOptions,
  WindowExecutor,
  WindowRunOutcome,
} from '../pipeline/run-pipelines.js';
import type { OneTimeReports } from '../extract/one-time-reports.js';
import { WAIT_FOR_REPORT_SECONDS, wakeIfReportFinal } from './chunk-jobs.js';
import type { ReportJobDeps } from './chunk-jobs.js';
import { claimableOf, jobClaim, windowOfJob } from './window-jobs.js';
import type { ReportJobData, WindowJobData } from './window-jobs.js';
import { WINDOW_QUEUE } from './window-queue.js';
import type { WindowQueue } from './window-queue.js';
import { runReportJobSlot } from './report-job-slot.js';
import { HEARTBEAT_REFRESH_MS, SlotPacer, attemptOf, failureOf, isLastAttempt } from './worker-slots.js';
import type { IdleLine, JobAttempt } from './worker-slots.js';

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
  /** Called with each window's outcome once its window has run (its job may not be settled yet). */
  onWindow?: (data: WindowJobData, outcome: WindowRunOutcome) => void;
  /** Called once each job this worker took is settled in the queue (completed, failed, or parked). */
  onSettled?: () => void;
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
  return new WindowWorkerProcess(deps, options);
}

/** What the worker does with a job once its window has run: completed already, or complete it now. */
interface RanWindowJob {
  outcome: WindowRunOutcome;
  completed: boolean;
}

/**
 * The worker's slots and what they share. Each slot fetches its next job as soon as it is done with
 * one (pg-boss's own work() loop waits a polling interval after every job, which would cap a slot at
 * two windows a second); the idle slots poll in turn, one at a time (IdleLine). The heartbeats of
 * the jobs in flight are refreshed from here.
 */
class WindowWorkerProcess implements WindowWorker {
  private readonly abort = new AbortController();
  /** A pipeline's own `concurrency` holds within this process, as it did for a pass. */
  private readonly perPipeline: ReadonlyMap<string, ReturnType<typeof createLimiter>>;
  /** The attempts of the window jobs in flight, by job id: their heartbeats are refreshed. */
  private readonly running = new Map<string, JobAttempt>();
  private inFlightCount = 0;
  /** Resolves `stop`'s wait once the last job in flight settles. */
  private drained: (() => void) | undefined;
  private idleHookRunning = false;
  private readonly pacer: SlotPacer;
  /** The window slots' line (the report slot has its own: it fetches from another queue). */
  private readonly windowLine: IdleLine;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly slots: Promise<void>[];

  constructor(
    private readonly deps: WindowWorkerDeps,
    private readonly options: WindowWorkerOptions,
  ) {
    this.perPipeline = new Map(
      [...deps.pipelines.values()].map((p) => [p.name, createLimiter(p.concurrency)]),
    );
    this.heartbeat = setInterval(() => {
      if (this.running.size > 0)
        void this.boss.touch(WINDOW_QUEUE, [...this.running.values()]).catch(() => {});
    }, HEARTBEAT_REFRESH_MS);
    this.heartbeat.unref();
    this.pacer = new SlotPacer(Math.max(500, (options.pollingSeconds ?? 2) * 1000));
    this.windowLine = this.pacer.line();
    const report: ReportJobDeps | undefined = deps.oneTimeReports
      ? { db: deps.db, queue: deps.queue, reports: deps.oneTimeReports, logger: deps.logger }
      : undefined;
    this.slots = [
      ...Array.from({ length: options.concurrency }, () => this.windowSlot()),
      ...(report
        ? [
            runReportJobSlot(
              {
                queue: deps.queue,
                db: deps.db,
                logger: deps.logger,
                report,
                perCredential: options.perCredential,
              },
              this.pacer.line(),
            ),
          ]
        : []),
    ];
  }

  get inFlight(): number {
    return this.inFlightCount;
  }

  private get boss() {
    return this.deps.queue.boss;
  }

  async stop(timeoutMs: number): Promise<void> {
    this.pacer.stop();
    if (this.inFlightCount > 0) {
      const drained = new Promise<void>((resolve) => (this.drained = resolve));
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
      await Promise.race([drained, timedOut]);
      clearTimeout(timer);
      if (this.inFlightCount > 0) {
        this.abort.abort();
        await drained;
      }
    }
    await Promise.all(this.slots);
    clearInterval(this.heartbeat);
  }

  /** Fetch and settle window jobs until stopped; an empty queue runs the idle hook, then pauses. */
  private async windowSlot(): Promise<void> {
    while (!this.windowLine.stopping) {
      let job: Job<WindowJobData> | undefined;
      try {
        job = await this.deps.queue.fetch(this.options.perCredential);
      } catch (error) {
        this.deps.logger.warn(
          { err: (error as Error).message },
          'could not fetch a window job; trying again',
        );
      }
      if (!job) {
        await this.runIdleHook();
        await this.windowLine.pause();
        continue;
      }
      this.windowLine.found();
      await this.settleWindowJob(job);
    }
  }

  /** The idle hook, at most one call at a time across the slots. */
  private async runIdleHook(): Promise<void> {
    const onIdle = this.options.onIdle;
    if (!onIdle || this.idleHookRunning) return;
    this.idleHookRunning = true;
    await onIdle().finally(() => (this.idleHookRunning = false));
  }

  /**
   * Run a job's window and settle the job: park it while its one-time report is not ready,
   * complete it unless its window's transaction did, fail it when its window failed.
   */
  private async settleWindowJob(job: Job<WindowJobData>): Promise<void> {
    const attempt = attemptOf(job);
    this.running.set(job.id, attempt);
    this.inFlightCount++;
    try {
      const { outcome, completed } = await this.runWindowJob(job);
      if (outcome.kind === 'waiting') await this.waitForReport(job, outcome.report);
      else if (!completed) await this.boss.complete(WINDOW_QUEUE, attempt, outcome);
    } catch (error) {
      await this.boss
        .fail(WINDOW_QUEUE, attempt, failureOf(error))
        .catch((e: Error) =>
          this.deps.logger.error(
            { err: e.message, job: job.id },
            'could not record the failure of a window job',
          ),
        );
    } finally {
      this.running.delete(job.id);
      if (--this.inFlightCount === 0) this.drained?.();
      this.options.onSettled?.();
    }
  }

  /** The job's window through runWindow, within its pipeline's concurrency; throws what fails the job. */
  private async runWindowJob(job: Job<WindowJobData>): Promise<RanWindowJob> {
    const data = job.data;
    const pipeline = this.pipelineOf(data);
    let completed = false;
    const beforeCommit: BeforeWindowCommit = async (trx, committed) => {
      completed = false;
      await completeInTransaction(this.boss, job, trx, committed);
      completed = true;
    };
    const outcome = await this.perPipeline.get(pipeline.name)!(() =>
      runWindow(
        { db: this.deps.db, logger: this.deps.logger.child({ job: job.id }), execute: this.deps.execute },
        { pipeline, window: windowOfJob(data), claimable: claimableOf(data) },
        this.runWindowOptions(job, beforeCommit),
      ),
    );
    this.options.onWindow?.(data, outcome);
    if (outcome.kind === 'failed') throw jobFailure(data, outcome.code, outcome.message);
    if (outcome.kind === 'interrupted') {
      throw jobFailure(
        data,
        'WINDOW_INTERRUPTED',
        'the worker stopped while the window was loading; it rolled back',
      );
    }
    return { outcome, completed: completed && (outcome.kind === 'loaded' || outcome.kind === 'no_data') };
  }

  /** The job's pipeline, if this worker can run it. */
  private pipelineOf(data: WindowJobData): ResolvedPipeline {
    const pipeline = this.deps.pipelines.get(data.pipeline);
    if (!pipeline) {
      throw jobFailure(
        data,
        'QUEUE_UNKNOWN_PIPELINE',
        `pipeline ${data.pipeline} is not known to this worker's config; run workers with the same config.yaml as the planners.`,
      );
    }
    const unavailable = this.deps.unavailable.get(data.pipeline);
    if (unavailable) throw jobFailure(data, 'PIPELINE_UNAVAILABLE', unavailable);
    return pipeline;
  }

  /** runWindow's options for a job's attempt: its claim, and for a backfill's window its one-time range. */
  private runWindowOptions(job: Job<WindowJobData>, beforeCommit: BeforeWindowCommit): RunWindowOptions {
    const data = job.data;
    const options = this.options;
    return {
      claim: jobClaim(job),
      runId: data.runId,
      now: this.deps.now,
      signal: this.abort.signal,
      ...(options.loadAttempts !== undefined ? { loadAttempts: options.loadAttempts } : {}),
      ...(options.sleep ? { sleep: options.sleep } : {}),
      jobSpent: () => isLastAttempt(this.deps.db, WINDOW_QUEUE, job),
      ...(data.oneTime
        ? {
            oneTime: {
              range: data.oneTime,
              queuedAt: new Date(data.queuedAt ?? 0),
              ...(data.waitingFor ? { waitingFor: data.waitingFor } : {}),
            },
          }
        : {}),
      beforeCommit,
    };
  }

  /**
   * A window whose one-time report is not ready: a job follows the report, and the window's job goes
   * back to the queue, giving its worker (and credential) slot back, until that job wakes it.
   */
  private async waitForReport(job: Job<WindowJobData>, report: ReportJobData['request']): Promise<void> {
    const data: ReportJobData = { request: report, credential: job.data.credential };
    await this.deps.queue.ensureReportJob(data);
    const waiting = { ...job.data, waitingFor: report.reportName };
    if (await this.deps.queue.park(WINDOW_QUEUE, attemptOf(job), WAIT_FOR_REPORT_SECONDS, waiting)) {
      await wakeIfReportFinal(this.deps, data, job.data.window.windowKey);
    }
  }
}

/** Completes a job in its window's transaction: the job ends with it, or rolls back with it. */
async function completeInTransaction(
  boss: PgBoss,
  job: Job<WindowJobData>,
  trx: Db,
  outcome: CommittedOutcome,
): Promise<void> {
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
}
