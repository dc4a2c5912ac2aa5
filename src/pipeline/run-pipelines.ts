import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Db } from '../warehouse/warehouse.js';
import { isCybsError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import {
  claimWindow,
  ensureWindows,
  failWindow,
  getWindow,
  listWindows,
  releaseLeases,
  releaseNotReady,
  renewLease,
} from '../state/windows.js';
import type { WindowRow, WindowStatus } from '../state/windows.js';
import { createLimiter } from './limiter.js';
import { isAvailable, midnightDaily } from '../time/report-periods.js';
import {
  planDuePeriodWindows,
  planDueWindows,
  periodWindowsStartingOn,
  windowsBetween,
} from './plan-windows.js';
import type { CalendarWindow } from './plan-windows.js';
import type { ResolvedPipeline } from './resolve-pipelines.js';

/** What one window needs to run: which pipeline, which window, claimed under which lease. */
export interface WindowTask {
  pipeline: ResolvedPipeline;
  window: CalendarWindow;
  /** The claimed state row (attempts, not_ready_since, previous status). */
  state: WindowRow;
  owner: string;
  runId: number | null;
  signal: AbortSignal;
}

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
  | { kind: 'not_ready'; message: string };

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
    /**
     * Windows a live process was still loading when this run stopped waiting for them: it was
     * interrupted or drained, or one lease's time (leaseSeconds) went by.
     */
    held: number;
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

export interface RunPipelinesOptions {
  pipelines: readonly ResolvedPipeline[];
  /** Restrict to one organization (`--organization-id`). */
  organizationId?: string;
  /** Backfill range of local days (report pipelines: the periods that start in it); absent: the due windows of a nightly run. */
  range?: { from: string; to: string };
  /** Re-load windows that are already loaded (backfill --force). */
  force?: boolean;
  globalConcurrency: number;
  leaseSeconds: number;
  runId: number | null;
  now: () => Date;
  /** Aborts windows in flight (their transactions roll back) and stops claiming. */
  signal?: AbortSignal;
  /** Stops claiming new windows; windows in flight finish (graceful shutdown). */
  drain?: AbortSignal;
  onProgress?: (event: ProgressEvent) => void;
  /**
   * Attempts of a window whose load fails with a retryable load error (LOAD_CONFLICT: deadlock or
   * serialization failure; a lost database connection), including the first. Default 3.
   */
  loadAttempts?: number;
  /** Waits between those attempts (tests); default a jittered 100–400 ms × attempt. */
  sleep?: (ms: number) => Promise<void>;
}

/** A load error that another attempt of the whole window transaction may not hit. */
export function isRetryableLoadError(error: unknown): boolean {
  return isCybsError(error) && error.stage === 'load' && error.retryable === true;
}

export interface RunPipelinesDeps {
  db: Db;
  logger: Logger;
  execute: WindowExecutor;
  /**
   * Hold the lock that tells other processes this lease owner is alive (Warehouse.holdAdvisoryLock
   * with LEASE_LOCK_SPACE) for the whole run; resolves to its release. Without it, the windows this
   * run holds look abandoned to every other claimer.
   */
  holdOwnerLock: (owner: string) => Promise<() => Promise<void>>;
  /** How long to wait between looks at windows another live process is loading; default 1000 ms. */
  heldPollMs?: number;
}

const DEFAULT_LOAD_ATTEMPTS = 3;

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** An identifier for this process's leases. */
export function leaseOwner(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

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
  | { kind: 'failed'; code: string; message: string }
  /** Aborted (signal): its transaction rolled back; the lease is given back by releaseLeases. */
  | { kind: 'interrupted' }
  /** A live process is loading it: nothing done. */
  | { kind: 'held' }
  /** Another process settled it meanwhile (its status is no longer claimable): nothing done. */
  | { kind: 'skipped' };

export interface RunWindowDeps {
  db: Db;
  logger: Logger;
  execute: WindowExecutor;
}

export interface RunWindowOptions {
  owner: string;
  leaseSeconds: number;
  runId: number | null;
  now: () => Date;
  signal: AbortSignal;
  loadAttempts?: number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Load one window: claim it with a lease (only one process gets it), run it through the executor
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
  const { owner, signal } = options;
  const state = await claimWindow(deps.db, ref, {
    owner,
    leaseSeconds: options.leaseSeconds,
    runId: options.runId,
    claimable: job.claimable,
  });
  if (!state) {
    if ((await getWindow(deps.db, ref))?.status === 'running') {
      log.debug('window is being loaded by another process');
      return { kind: 'held' };
    }
    log.debug('window was settled by another process; skipped');
    return { kind: 'skipped' };
  }
  const renew = setInterval(
    () => void renewLease(deps.db, ref, owner, options.leaseSeconds).catch(() => {}),
    Math.max(1000, (options.leaseSeconds * 1000) / 3),
  );
  renew.unref();
  try {
    const maxAttempts = Math.max(1, options.loadAttempts ?? DEFAULT_LOAD_ATTEMPTS);
    let result: WindowResult;
    for (let attempt = 1; ; attempt++) {
      try {
        result = await deps.execute({
          pipeline: job.pipeline,
          window: job.window,
          state,
          owner,
          runId: options.runId,
          signal,
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
    if (result.kind === 'not_ready') {
      const since = state.notReadySince ?? options.now();
      const horizonMs = job.pipeline.notReadyHorizonHours * 3_600_000;
      if (options.now().getTime() - since.getTime() > horizonMs) {
        const message = `${result.message}; still not ready ${job.pipeline.notReadyHorizonHours} hours after it was first expected`;
        await failWindow(deps.db, ref, owner, { code: 'NOT_READY_TIMEOUT', message });
        outcome = { kind: 'failed', code: 'NOT_READY_TIMEOUT', message };
      } else {
        await releaseNotReady(deps.db, ref, owner, result.message);
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
    // Interrupted windows are given back by releaseLeases (to their pre-claim status).
    if (signal.aborted) return { kind: 'interrupted' };
    const code = isCybsError(error) ? error.code : 'UNEXPECTED';
    const message = error instanceof Error ? error.message : String(error);
    log.warn({ code, err: message }, 'window failed');
    await failWindow(deps.db, ref, owner, { code, message }).catch((e) =>
      log.error({ err: e }, 'could not record the window failure'),
    );
    return { kind: 'failed', code, message };
  } finally {
    clearInterval(renew);
  }
}

/**
 * One pass over the windows of the given pipelines: plan, claim each window with a lease, run it
 * through the executor with bounded concurrency (global and per pipeline), and record outcomes.
 * Interrupting (signal) stops claiming new windows; windows in flight finish or roll back, and
 * leases are released, so the next invocation continues where this one stopped.
 */
export async function runPipelines(
  deps: RunPipelinesDeps,
  options: RunPipelinesOptions,
): Promise<RunSummary> {
  const owner = leaseOwner();
  const summary: RunSummary = {
    windows: { loaded: 0, unchanged: 0, no_data: 0, not_ready: 0, failed: 0, skipped: 0, held: 0 },
    rowsLoaded: 0,
    rowsRejected: 0,
    failures: [],
    interrupted: false,
  };
  const jobs = await planJobs(deps.db, options);
  let done = 0;
  options.onProgress?.({ type: 'planned', total: jobs.length, done: 0, rowsLoaded: 0 });

  const global = createLimiter(options.globalConcurrency);
  const perPipeline = new Map(options.pipelines.map((p) => [p.name, createLimiter(p.concurrency)]));
  const signal = options.signal ?? new AbortController().signal;
  const windowOptions: RunWindowOptions = {
    owner,
    leaseSeconds: options.leaseSeconds,
    runId: options.runId,
    now: options.now,
    signal,
    ...(options.loadAttempts !== undefined ? { loadAttempts: options.loadAttempts } : {}),
    ...(options.sleep ? { sleep: options.sleep } : {}),
  };

  /** Jobs whose window a live process was loading when this run tried to claim it. */
  let held: PlannedJob[] = [];

  const runJob = async (job: PlannedJob): Promise<void> => {
    if (signal.aborted || options.drain?.aborted) {
      summary.interrupted = true;
      return;
    }
    const outcome = await runWindow(deps, job, windowOptions);
    // A window a live process is loading is looked at again once the others are done (not counted yet).
    if (outcome.kind === 'held') {
      held.push(job);
      return;
    }
    countOutcome(summary, job, outcome);
    done++;
    options.onProgress?.({
      type: 'window',
      total: jobs.length,
      done,
      rowsLoaded: summary.rowsLoaded,
      pipeline: job.pipeline.name,
      windowKey: job.window.windowKey,
      outcome: outcome.kind,
    });
  };

  const releaseOwnerLock = await deps.holdOwnerLock(owner);
  try {
    const runAll = (list: readonly PlannedJob[]) =>
      Promise.all(list.map((job) => global(() => perPipeline.get(job.pipeline.name)!(() => runJob(job)))));
    await runAll(jobs);
    // Windows a live process was loading: wait until it is done with them (or gone), then take
    // each one that still needs loading. A waiting run holds no lease, so two runs never wait on
    // each other.
    // At most one lease's time: a holder that takes longer is reported, not waited for for ever.
    const pollMs = deps.heldPollMs ?? 1000;
    let polls = Math.ceil((options.leaseSeconds * 1000) / pollMs);
    const stopped = () => signal.aborted || options.drain?.aborted === true || polls-- <= 0;
    while (held.length > 0 && !stopped()) {
      deps.logger.info({ windows: held.length }, 'waiting for windows another process is loading');
      await (options.sleep ?? defaultSleep)(pollMs);
      if (signal.aborted || options.drain?.aborted) break;
      const again = held;
      held = [];
      await runAll(again);
    }
    summary.windows.held = held.length;
  } finally {
    await releaseLeases(deps.db, owner).catch(() => 0);
    await releaseOwnerLock();
  }
  if (signal.aborted || (options.drain?.aborted && done < jobs.length) || summary.windows.held > 0)
    summary.interrupted = true;
  return summary;
}

/** Add one window's outcome to a pass's summary (held windows are not counted: see runPipelines). */
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
    case 'held':
      summary.windows.held++;
      break;
  }
}

/** The windows to attempt, oldest first, with the statuses that make each one claimable. */
export async function planJobs(
  db: Db,
  options: Pick<RunPipelinesOptions, 'pipelines' | 'organizationId' | 'range' | 'force' | 'now'>,
): Promise<PlannedJob[]> {
  const jobs: PlannedJob[] = [];
  const now = options.now();
  for (const pipeline of options.pipelines) {
    const organizations = options.organizationId ? [options.organizationId] : pipeline.organizations;
    for (const organizationId of organizations) {
      const { windows, reload } = planPipelineWindows(pipeline, organizationId, { ...options, now });
      if (windows.length === 0) continue;
      await ensureWindows(db, windows);
      const states = new Map(
        (await listWindows(db, { pipeline: pipeline.name, organizationId })).map((w) => [
          w.windowKey,
          w.status,
        ]),
      );
      for (const window of windows) {
        const again = options.force === true || reload.has(window.windowKey);
        const claimable: WindowStatus[] = again
          ? ['pending', 'failed', 'loaded', 'no_data']
          : ['pending', 'failed'];
        const status = states.get(window.windowKey);
        if (status && status !== 'running' && !claimable.includes(status)) continue;
        jobs.push({ pipeline, window, claimable });
      }
    }
  }
  jobs.sort((a, b) => a.window.start.getTime() - b.window.start.getTime());
  return jobs;
}

export interface PipelineWindowPlan {
  /** The windows to load: available ones only (isAvailable), in order. */
  windows: CalendarWindow[];
  /** The keys among `windows` re-loaded even when already loaded (a run's lookback). */
  reload: Set<string>;
  /** A backfill's windows of the range that are not available yet (left out of `windows`). */
  notAvailable: CalendarWindow[];
}

/**
 * The windows of one pipeline and organization a pass plans. Report files: the subscription's
 * report periods (a backfill takes those that start in its range); on-demand endpoints: windows of
 * windowDays local days. A run takes the due windows; a backfill its range up to the newest
 * window available now, so a range that reaches into the future stops there.
 */
export function planPipelineWindows(
  pipeline: ResolvedPipeline,
  organizationId: string,
  options: { range?: { from: string; to: string }; now: Date },
): PipelineWindowPlan {
  const shape = {
    pipeline: pipeline.name,
    organizationId,
    timeZone: pipeline.timeZone,
    windowDays: pipeline.windowDays,
  };
  const schedule =
    pipeline.def.kind === 'report'
      ? (pipeline.reportSchedule ?? midnightDaily(pipeline.timeZone))
      : undefined;
  if (options.range) {
    const all = schedule
      ? periodWindowsStartingOn(shape, schedule, options.range.from, options.range.to)
      : windowsBetween(shape, options.range.from, options.range.to);
    const available = (w: CalendarWindow) => isAvailable(w.end, options.now, pipeline.readyAfterHours);
    return {
      windows: all.filter(available),
      reload: new Set(),
      notAvailable: all.filter((w) => !available(w)),
    };
  }
  const due = {
    startDate: pipeline.startDate,
    now: options.now,
    readyAfterHours: pipeline.readyAfterHours,
    lookbackDays: pipeline.lookbackDays,
  };
  const plan = schedule ? planDuePeriodWindows(shape, schedule, due) : planDueWindows(shape, due);
  return { windows: plan.due, reload: plan.lookbackKeys, notAvailable: [] };
}
