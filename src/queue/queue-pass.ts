import type { Db } from '../warehouse/warehouse.js';
import type { Logger } from '../observability/logger.js';
import { countOutcome, planJobs } from '../pipeline/run-pipelines.js';
import type {
  PlannedJob,
  PlanOptions,
  ProgressEvent,
  RunSummary,
  WindowRunOutcome,
} from '../pipeline/run-pipelines.js';
import { toJobData } from './window-jobs.js';
import type { SettledJob, WindowQueue } from './window-queue.js';

/** How often a pass looks at the state of its jobs while it waits for them. */
const DEFAULT_POLL_MS = 250;

export interface QueuedPassDeps {
  db: Db;
  logger: Logger;
  queue: WindowQueue;
  /** The API credential's group (credentialGroup): its windows' jobs share its concurrency limit. */
  credential: string;
}

export interface QueuedPassOptions extends PlanOptions {
  runId: number;
  /**
   * Only plan and enqueue: the pass ends once its windows are in the queue (workers elsewhere load
   * them). Otherwise it waits until each of its windows' jobs is settled, by whichever worker.
   */
  detach?: boolean;
  /** Stop waiting (interrupt): the summary says interrupted; the jobs stay queued. */
  signal?: AbortSignal;
  /** Stop waiting as well (graceful shutdown of a schedule daemon). */
  drain?: AbortSignal;
  onProgress?: (event: ProgressEvent) => void;
  pollMs?: number;
  /**
   * Wakes the pass between its polls: this process's worker settled a job (it may be the pass's),
   * so the pass looks at once instead of at its next poll.
   */
  nudge?: PassNudge;
  /** Called once the pass's windows are enqueued and followed (run and backfill start their worker). */
  onEnqueued?: () => Promise<void>;
  /** A backfill's range: its windows may load from one-time reports (WindowJobData.oneTime). */
  oneTime?: { from: string; to: string };
}

export type QueuedPassSummary = RunSummary & { enqueued: number; alreadyQueued: number };

/** Failures a job is retried after without them being the window's: it stopped, or lost its worker. */
const NOT_A_WINDOW_FAILURE = new Set(['WINDOW_INTERRUPTED']);

/**
 * One pass over the queue: plan the windows of the pipelines (due now, or a backfill's range),
 * enqueue them as jobs (a window already queued by another planner is not enqueued again: the pass
 * follows that job instead), and, unless detached, wait until every job of the pass is settled,
 * whichever worker (this process's or another machine's) ran it. The summary counts what the jobs
 * recorded. A job whose window failed counts as failed, also while it waits for its retry; a job
 * that waits for a retry because its worker stopped or died is made due at once and waited for.
 */
export async function runQueuedPass(
  deps: QueuedPassDeps,
  options: QueuedPassOptions,
): Promise<QueuedPassSummary> {
  const summary: QueuedPassSummary = {
    windows: { loaded: 0, unchanged: 0, no_data: 0, not_ready: 0, failed: 0, skipped: 0 },
    rowsLoaded: 0,
    rowsRejected: 0,
    failures: [],
    interrupted: false,
    enqueued: 0,
    alreadyQueued: 0,
  };
  const jobs = await planJobs(deps.db, options);
  const { added, alreadyQueued, ids } = await deps.queue.enqueue(
    jobs.map((job) => toJobData(job, options.runId, deps.credential, options.oneTime)),
  );
  summary.enqueued = added;
  summary.alreadyQueued = alreadyQueued;
  const planned = new Map<string, PlannedJob>();
  ids.forEach((id, i) => planned.set(id, jobs[i]!));
  // Jobs another planner had enqueued may be waiting for a retry: this pass wants them now, and
  // what their last attempt left is not this pass's outcome.
  const waitingRetry = new Map<string, number>();
  if (alreadyQueued > 0) {
    await deps.queue.retryNow(ids);
    for (const job of await deps.queue.settled(ids)) {
      if (job.state === 'retry') waitingRetry.set(job.id, job.retryCount);
    }
  }
  options.onProgress?.({ type: 'planned', total: jobs.length, done: 0, rowsLoaded: 0 });
  if (options.detach) return summary;
  await options.onEnqueued?.();

  const pending = new Set(planned.keys());
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  const stopped = () => options.signal?.aborted === true || options.drain?.aborted === true;
  let done = 0;
  while (pending.size > 0 && !stopped()) {
    const waitingIds = [...pending];
    const settled = await deps.queue.settled(waitingIds);
    const restart: string[] = [];
    for (const job of settled) {
      if (job.state === 'retry' && waitingRetry.get(job.id) === job.retryCount) continue;
      const outcome = outcomeOf(job);
      if (!outcome) {
        restart.push(job.id);
        continue;
      }
      pending.delete(job.id);
      const plannedJob = planned.get(job.id)!;
      countOutcome(summary, plannedJob, outcome);
      done++;
      options.onProgress?.({
        type: 'window',
        total: jobs.length,
        done,
        rowsLoaded: summary.rowsLoaded,
        pipeline: plannedJob.pipeline.name,
        windowKey: plannedJob.window.windowKey,
        outcome: outcome.kind,
      });
    }
    if (restart.length > 0) await deps.queue.retryNow(restart);
    if (pending.size > 0) await sleep(pollMs, options.nudge, options.signal, options.drain);
  }
  if (pending.size > 0) summary.interrupted = true;
  return summary;
}

/**
 * What a settled job says about its window: its outcome; undefined for a job waiting for a retry
 * that is not the window's failure (its worker stopped, or died and lost it by its heartbeat).
 */
function outcomeOf(job: SettledJob): WindowRunOutcome | undefined {
  const output = job.output ?? {};
  const code = typeof output['code'] === 'string' ? output['code'] : undefined;
  const message =
    typeof output['message'] === 'string'
      ? output['message']
      : typeof (output['value'] as { message?: unknown } | undefined)?.message === 'string'
        ? (output['value'] as { message: string }).message
        : `the window's job ended ${job.state}`;
  if (job.state === 'completed') return output as unknown as WindowRunOutcome;
  if (job.state === 'retry' && (code === undefined || NOT_A_WINDOW_FAILURE.has(code))) return undefined;
  return { kind: 'failed', code: code ?? 'JOB_FAILED', message };
}

/**
 * A wake-up for a pass waiting between its polls: `nudge()` ends the wait at once, or the next one
 * if the pass is not waiting now (it is reading its jobs' state, which may predate the nudge).
 */
export class PassNudge {
  private pending = false;
  private waiter: (() => void) | undefined;

  nudge(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    if (waiter) waiter();
    else this.pending = true;
  }

  /** Whether a nudge came since the last wait (and forget it). */
  take(): boolean {
    const pending = this.pending;
    this.pending = false;
    return pending;
  }

  /** Call `wake` at the next nudge, unless `forget` is called first. */
  onNext(wake: () => void): void {
    this.waiter = wake;
  }

  forget(wake: () => void): void {
    if (this.waiter === wake) this.waiter = undefined;
  }
}

function sleep(
  ms: number,
  nudge: PassNudge | undefined,
  ...signals: (AbortSignal | undefined)[]
): Promise<void> {
  return new Promise((resolve) => {
    if (nudge?.take()) return resolve();
    const done = () => {
      clearTimeout(timer);
      for (const s of signals) s?.removeEventListener('abort', done);
      nudge?.forget(done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    for (const s of signals) s?.addEventListener('abort', done, { once: true });
    nudge?.onNext(done);
  });
}
