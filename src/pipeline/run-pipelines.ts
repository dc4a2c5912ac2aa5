import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Db } from '../load/warehouse.js';
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

interface Job {
  pipeline: ResolvedPipeline;
  window: CalendarWindow;
  claimable: WindowStatus[];
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

  /** Jobs whose window a live process was loading when this run tried to claim it. */
  let held: Job[] = [];

  const runJob = async (job: Job): Promise<void> => {
    if (signal.aborted || options.drain?.aborted) {
      summary.interrupted = true;
      return;
    }
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
    const state = await claimWindow(deps.db, ref, {
      owner,
      leaseSeconds: options.leaseSeconds,
      runId: options.runId,
      claimable: job.claimable,
    });
    if (!state) {
      if ((await getWindow(deps.db, ref))?.status === 'running') {
        // A live process is loading it: look again once the others are done (not counted yet).
        held.push(job);
        log.debug('window is being loaded by another process; waiting for it');
        return;
      }
      summary.windows.skipped++;
      log.debug('window was settled by another process; skipped');
    } else {
      await runClaimed(job, ref, log, state);
    }
    done++;
    options.onProgress?.({
      type: 'window',
      total: jobs.length,
      done,
      rowsLoaded: summary.rowsLoaded,
      pipeline: ref.pipeline,
      windowKey: ref.windowKey,
      outcome: state ? lastOutcome.get(job) : 'skipped',
    });
  };

  const lastOutcome = new Map<Job, string>();
  const runClaimed = async (
    job: Job,
    ref: { pipeline: string; organizationId: string; windowKey: string },
    log: Logger,
    state: WindowRow,
  ): Promise<void> => {
    const renew = setInterval(
      () => void renewLease(deps.db, ref, owner, options.leaseSeconds).catch(() => {}),
      Math.max(1000, (options.leaseSeconds * 1000) / 3),
    );
    renew.unref();
    let outcome: string;
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
      if (result.kind === 'not_ready') {
        const since = state.notReadySince ?? options.now();
        const horizonMs = job.pipeline.notReadyHorizonHours * 3_600_000;
        if (options.now().getTime() - since.getTime() > horizonMs) {
          const message = `${result.message}; still not ready ${job.pipeline.notReadyHorizonHours} hours after it was first expected`;
          await failWindow(deps.db, ref, owner, { code: 'NOT_READY_TIMEOUT', message });
          summary.windows.failed++;
          summary.failures.push({ ...ref, code: 'NOT_READY_TIMEOUT', message });
          outcome = 'failed';
        } else {
          await releaseNotReady(deps.db, ref, owner, result.message);
          summary.windows.not_ready++;
          outcome = 'not_ready';
        }
      } else if (result.kind === 'no_data') {
        summary.windows.no_data++;
        outcome = 'no_data';
      } else {
        summary.windows.loaded++;
        if (result.unchanged) summary.windows.unchanged++;
        summary.rowsLoaded += result.rowsLoaded;
        summary.rowsRejected += result.rowsRejected;
        outcome = 'loaded';
      }
      log.info(
        {
          outcome,
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
    } catch (error) {
      const code = isCybsError(error) ? error.code : 'UNEXPECTED';
      const message = error instanceof Error ? error.message : String(error);
      if (signal.aborted) {
        summary.interrupted = true;
        outcome = 'interrupted';
      } else {
        summary.windows.failed++;
        summary.failures.push({ ...ref, code, message });
        outcome = 'failed';
        log.warn({ code, err: message }, 'window failed');
      }
      // Interrupted windows are given back by releaseLeases below (to their pre-claim status).
      if (!signal.aborted) {
        await failWindow(deps.db, ref, owner, { code, message }).catch((e) =>
          log.error({ err: e }, 'could not record the window failure'),
        );
      }
    } finally {
      clearInterval(renew);
    }
    lastOutcome.set(job, outcome);
  };

  const releaseOwnerLock = await deps.holdOwnerLock(owner);
  try {
    const runAll = (list: readonly Job[]) =>
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

/** The windows to attempt, oldest first, with the statuses that make each one claimable. */
async function planJobs(db: Db, options: RunPipelinesOptions): Promise<Job[]> {
  const jobs: Job[] = [];
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
