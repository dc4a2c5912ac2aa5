import type { Db } from '../warehouse/warehouse.js';
import { isCybsError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { OneTimeReportRequest } from '../extract/one-time-reports.js';
import { groupWindowStates, pairKey, readWindowStates, recordPipelineShapes } from '../state/completeness.js';
import { claimWindow, ensureWindows, failWindow, releaseClaim, releaseNotReady } from '../state/windows.js';
import type { WindowRow, WindowStatus } from '../state/windows.js';
import { orderPassWindows, planPassWindows, shapeOf } from './plan-windows.js';
import type { CalendarWindow } from './plan-windows.js';
import type { ResolvedPipeline } from './resolve-pipelines.js';

/** What one window needs to run: which pipeline, which window, claimed by which job attempt. */
export interface WindowTask {
  pipeline: ResolvedPipeline;
  window: CalendarWindow;
  /** The claimed state row (attempts, not_ready_since, previous status). */
  state: WindowRow;
  /** The job attempt's claim on the window (completeWindow commits only while it holds). */
  claim: string;
  runId: number | null;
  signal: AbortSignal;
  /**
   * Called inside the window's load transaction once its state is written, so that what it writes
   * (the job's completion) commits or rolls back with the rows; a throw rolls the window back.
   */
  beforeCommit?: BeforeWindowCommit;
  /** A backfill's window: one no subscription report covers comes from a one-time report. */
  oneTime?: OneTimeWindow;
}

/** How a backfill's window may use one-time reports (from its job: WindowJobData.oneTime). */
export interface OneTimeWindow {
  /** The backfill's range, which anchors the chunks. */
  range: { from: string; to: string };
  /** When its job was enqueued: a one-time report that failed before is asked for again. */
  queuedAt: Date;
  /** The one-time report it waited for: the subscription report need not be searched again. */
  waitingFor?: string;
}

/** What a window's load transaction commits, as WindowTask.beforeCommit is told. */
export type CommittedOutcome = Extract<WindowRunOutcome, { kind: 'loaded' | 'no_data' }>;
export type BeforeWindowCommit = (trx: Db, outcome: CommittedOutcome) => Promise<void>;

/**
 * The outcome of one window. `loaded` and `no_data` have been committed by the executor inside its
 * load transaction (rows and window state together); `not_ready` and `failed` are recorded here.
 */
export type WindowResult =
  | {
      kind: 'loaded';
      rowsLoaded: number;
      rowsRejected: number;
      /** The data (report file or pages) was the one last loaded, its rows untouched since: nothing was written. */
      unchanged?: boolean;
    }
  | { kind: 'no_data' }
  | { kind: 'not_ready'; message: string }
  /**
   * The one-time report of its chunk is not ready: the window's job waits for it without a worker
   * (put back in the queue; the report's job, which `report` describes, wakes it).
   */
  | { kind: 'waiting'; message: string; report: OneTimeReportRequest };

export type WindowExecutor = (task: WindowTask) => Promise<WindowResult>;

export interface RunSummary {
  windows: {
    loaded: number;
    /** Of `loaded`: windows whose load wrote nothing (WindowResult `unchanged`). */
    unchanged: number;
    no_data: number;
    not_ready: number;
    failed: number;
    /** Windows another process loaded (or settled) while this run was planning or waiting: none to do. */
    skipped: number;
  };
  rowsLoaded: number;
  rowsRejected: number;
  failures: { pipeline: string; organizationId: string; windowKey: string; code: string; message: string }[];
  interrupted: boolean;
}

export interface ProgressEvent {
  type: 'planned' | 'window';
  total: number;
  done: number;
  rowsLoaded: number;
  pipeline?: string;
  windowKey?: string;
  outcome?: string;
}

/** What a pass plans: the windows of these pipelines, due now or in a backfill's range. */
export interface PlanOptions {
  pipelines: readonly ResolvedPipeline[];
  /** Restrict to one organization (`--organization-id`). */
  organizationId?: string;
  /** Backfill range of local days (report pipelines: the periods that start in it); absent: the due windows of a nightly run. */
  range?: { from: string; to: string };
  /** Re-load windows that are already loaded (backfill --force). */
  force?: boolean;
  /**
   * The scheduled time of the cron fire this pass plans for: a lookback window loaded since then
   * (by another schedule instance's pass of the same fire) is not loaded again for it.
   */
  firedAt?: Date;
  now: () => Date;
  /** Windows before startDate (gaps, failed) a run catches up on per pass (config defaults.maxCatchUpWindows). */
  maxCatchUpWindows?: number;
}

/** A load error that another attempt of the whole window transaction may not hit. */
export function isRetryableLoadError(error: unknown): boolean {
  return isCybsError(error) && error.stage === 'load' && error.retryable === true;
}

const DEFAULT_LOAD_ATTEMPTS = 3;

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A window to attempt, with the statuses that make it claimable (a re-load also takes loaded ones). */
export interface PlannedJob {
  pipeline: ResolvedPipeline;
  window: CalendarWindow;
  claimable: WindowStatus[];
}

/** What became of one window a process set out to load (runWindow). */
export type WindowRunOutcome =
  | { kind: 'loaded'; rowsLoaded: number; rowsRejected: number; unchanged: boolean }
  | { kind: 'no_data' }
  | { kind: 'not_ready'; message: string }
  /** Released until the one-time report it needs is ready (WindowResult `waiting`). */
  | { kind: 'waiting'; message: string; report: OneTimeReportRequest }
  | { kind: 'failed'; code: string; message: string }
  /** Aborted (signal): its transaction rolled back, its window returned to what it was. */
  | { kind: 'interrupted' }
  /** Another process settled it meanwhile (its status is no longer claimable): nothing done. */
  | { kind: 'skipped' };

export interface RunWindowDeps {
  db: Db;
  logger: Logger;
  execute: WindowExecutor;
}

export interface RunWindowOptions {
  /** The job attempt's claim on the window (jobClaim in src/queue/window-jobs.ts). */
  claim: string;
  runId: number | null;
  now: () => Date;
  signal: AbortSignal;
  loadAttempts?: number;
  sleep?: (ms: number) => Promise<void>;
  /** Given to the executor (WindowTask.beforeCommit). */
  beforeCommit?: BeforeWindowCommit;
  /**
   * Asked when the attempt fails: whether it is its job's last (the queue retries it no more), so
   * that the failure counts toward the window's backoff (failWindow's jobSpent). Default: yes.
   */
  jobSpent?: () => Promise<boolean>;
  /** Given to the executor (WindowTask.oneTime). */
  oneTime?: OneTimeWindow;
}

/**
 * Load one window: claim it for this job attempt (see claimWindow), run it through the executor
 * (retrying the whole window transaction on a load conflict), and record its outcome in
 * etl.windows. `loaded` and `no_data` were committed with the rows by the executor; a not-ready
 * window is released (or failed once past the pipeline's horizon); a failure is recorded, and the
 * rows of a window loaded before stay.
 */
export async function runWindow(
  deps: RunWindowDeps,
  job: PlannedJob,
  options: RunWindowOptions,
): Promise<WindowRunOutcome> {
  const ref = {
    pipeline: job.pipeline.name,
    organizationId: job.window.organizationId,
    windowKey: job.window.windowKey,
  };
  const log = deps.logger.child({
    pipeline: ref.pipeline,
    organizationId: ref.organizationId,
    window: ref.windowKey,
  });
  const { claim, signal } = options;
  const state = await claimWindow(deps.db, ref, { claim, runId: options.runId, claimable: job.claimable });
  if (!state) {
    log.debug('window was settled by another process; skipped');
    return { kind: 'skipped' };
  }
  try {
    const maxAttempts = Math.max(1, options.loadAttempts ?? DEFAULT_LOAD_ATTEMPTS);
    let result: WindowResult;
    for (let attempt = 1; ; attempt++) {
      try {
        result = await deps.execute({
          pipeline: job.pipeline,
          window: job.window,
          state,
          claim,
          runId: options.runId,
          signal,
          ...(options.beforeCommit ? { beforeCommit: options.beforeCommit } : {}),
          ...(options.oneTime ? { oneTime: options.oneTime } : {}),
        });
        break;
      } catch (error) {
        // The window's transaction rolled back as a whole: running it again is safe. Only
        // conflicts with other writers (and lost connections) are retried, a few times.
        if (attempt >= maxAttempts || signal.aborted || !isRetryableLoadError(error)) throw error;
        const code = isCybsError(error) ? error.code : 'UNEXPECTED';
        log.warn(
          { code, attempt, err: (error as Error).message },
          'window load conflict; retrying the window',
        );
        await (options.sleep ?? defaultSleep)(Math.round((100 + Math.random() * 300) * attempt));
      }
    }
    let outcome: WindowRunOutcome;
    if (result.kind === 'waiting') {
      // Not ready, as the window's state says, until its one-time report is.
      await releaseNotReady(deps.db, ref, claim, result.message);
      outcome = result;
    } else if (result.kind === 'not_ready') {
      const since = state.notReadySince ?? options.now();
      const horizonMs = job.pipeline.notReadyHorizonHours * 3_600_000;
      if (options.now().getTime() - since.getTime() > horizonMs) {
        const message = `${result.message}; still not ready ${job.pipeline.notReadyHorizonHours} hours after it was first expected`;
        await failWindow(
          deps.db,
          ref,
          claim,
          { code: 'NOT_READY_TIMEOUT', message },
          { jobSpent: await jobSpent(options) },
        );
        outcome = { kind: 'failed', code: 'NOT_READY_TIMEOUT', message };
      } else {
        await releaseNotReady(deps.db, ref, claim, result.message);
        outcome = { kind: 'not_ready', message: result.message };
      }
    } else if (result.kind === 'no_data') {
      outcome = { kind: 'no_data' };
    } else {
      outcome = {
        kind: 'loaded',
        rowsLoaded: result.rowsLoaded,
        rowsRejected: result.rowsRejected,
        unchanged: result.unchanged === true,
      };
    }
    log.info(
      {
        outcome: outcome.kind,
        ...(result.kind === 'loaded'
          ? {
              rows: result.rowsLoaded,
              rejected: result.rowsRejected,
              ...(result.unchanged ? { unchanged: true } : {}),
            }
          : {}),
      },
      'window done',
    );
    return outcome;
  } catch (error) {
    if (signal.aborted) {
      await releaseClaim(deps.db, ref, claim).catch((e) =>
        log.error({ err: e }, 'could not give back the interrupted window'),
      );
      return { kind: 'interrupted' };
    }
    const code = isCybsError(error) ? error.code : 'UNEXPECTED';
    const message = error instanceof Error ? error.message : String(error);
    log.warn({ code, err: message }, 'window failed');
    await jobSpent(options)
      .then((spent) => failWindow(deps.db, ref, claim, { code, message }, { jobSpent: spent }))
      .catch((e) => log.error({ err: e }, 'could not record the window failure'));
    return { kind: 'failed', code, message };
  }
}

/** Whether a failed attempt was its job's last (RunWindowOptions.jobSpent); yes when it cannot be told. */
async function jobSpent(options: RunWindowOptions): Promise<boolean> {
  return options.jobSpent ? options.jobSpent().catch(() => true) : true;
}

/** Add one window's outcome to a pass's summary. */
export function countOutcome(summary: RunSummary, job: PlannedJob, outcome: WindowRunOutcome): void {
  switch (outcome.kind) {
    case 'loaded':
      summary.windows.loaded++;
      if (outcome.unchanged) summary.windows.unchanged++;
      summary.rowsLoaded += outcome.rowsLoaded;
      summary.rowsRejected += outcome.rowsRejected;
      break;
    case 'no_data':
    case 'not_ready':
    case 'skipped':
      summary.windows[outcome.kind]++;
      break;
    case 'failed':
      summary.windows.failed++;
      summary.failures.push({
        pipeline: job.pipeline.name,
        organizationId: job.window.organizationId,
        windowKey: job.window.windowKey,
        code: outcome.code,
        message: outcome.message,
      });
      break;
    case 'interrupted':
      summary.interrupted = true;
      break;
    case 'waiting':
      // Its job is not settled: it is counted once it is.
      break;
  }
}

const PLAN_ORGANIZATIONS_PER_READ = 200;

/**
 * The windows to attempt, with the statuses that make each one claimable (planPassWindows): the
 * newest oldest first, then the catch-up windows (orderPassWindows); their etl.windows rows exist
 * once this returns.
 */
export async function planJobs(db: Db, options: PlanOptions): Promise<PlannedJob[]> {
  const planned: (PlannedJob & { catchUp: boolean })[] = [];
  const now = options.now();
  await recordPipelineShapes(db, options.pipelines.map(shapeOf));
  for (const pipeline of options.pipelines) {
    const organizations = options.organizationId ? [options.organizationId] : pipeline.organizations;
    // The window states of a few hundred organizations per query: a partner's thousands would
    // otherwise cost a query each, and all of them at once a long pass's memory.
    for (let i = 0; i < organizations.length; i += PLAN_ORGANIZATIONS_PER_READ) {
      const some = organizations.slice(i, i + PLAN_ORGANIZATIONS_PER_READ);
      const states = groupWindowStates(
        await readWindowStates(db, { pipelines: [pipeline.name], organizationIds: some }),
      );
      for (const organizationId of some) {
        const rows = states.get(pairKey(pipeline.name, organizationId));
        const windows = planPassWindows(pipeline, organizationId, { ...options, now }, rows ?? new Map());
        for (const w of windows) planned.push({ pipeline, ...w });
      }
    }
  }
  const jobs = orderPassWindows(planned, options.maxCatchUpWindows);
  await ensureWindows(
    db,
    jobs.map((j) => j.window),
  );
  return jobs.map(({ pipeline, window, claimable }) => ({ pipeline, window, claimable }));
}

export { planPipelineWindows } from './plan-windows.js';
export type { PipelineWindowPlan } from './plan-windows.js';
