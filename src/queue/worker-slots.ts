import { sql } from 'kysely';
import { CybsError } from '../errors.js';
import type { Db } from '../warehouse/warehouse.js';
import { QUEUE_SCHEMA } from './window-queue.js';

/**
 * What the worker's slots share: how long an idle slot waits, when they all stop, how a job's
 * attempt is named to pg-boss and how its failure is recorded.
 */

/**
 * How often the heartbeats of the jobs in flight are refreshed: three times within the shortest
 * heartbeat a planner may set (queue.heartbeatSeconds ≥ 10), whatever this worker's own config says.
 */
export const HEARTBEAT_REFRESH_MS = 3_000;

/** A job's attempt, as pg-boss's complete, fail, touch and park name it. */
export interface JobAttempt {
  id: string;
  retryCount: number;
}

export function attemptOf(job: JobAttempt): JobAttempt {
  return { id: job.id, retryCount: job.retryCount };
}

/** The code and message a failed attempt records on its job. */
export function failureOf(error: unknown): { code: string; message: string } {
  const message = error instanceof Error ? error.message : String(error);
  const code = error instanceof CybsError ? error.code : 'UNEXPECTED';
  return { code, message };
}

/**
 * Whether this attempt of a job is its last: pg-boss retries a failed attempt while the job's retry
 * count is below its retry limit (set by the planner that enqueued it, queue.retryLimit). Read only
 * when an attempt fails.
 */
export async function isLastAttempt(db: Db, queue: string, job: JobAttempt): Promise<boolean> {
  const r = await sql<{ retry_limit: number }>`
    select retry_limit from ${sql.table(`${QUEUE_SCHEMA}.job`)}
     where name = ${queue} and id = ${job.id}::uuid`.execute(db);
  const limit = r.rows[0]?.retry_limit;
  return limit === undefined || job.retryCount >= limit;
}

/**
 * Paces the slots' loops. The slots that fetch from one queue form an IdleLine (`line()`); `stop`
 * ends every loop at its next turn and wakes the paused slots at once.
 */
export class SlotPacer {
  private stopped = false;
  private readonly lines: IdleLine[] = [];

  constructor(private readonly pollMs: number) {}

  /** A line for the slots of one queue (a worker's window slots; its report slot). */
  line(): IdleLine {
    const line = new IdleLine(this.pollMs, () => this.stopped);
    this.lines.push(line);
    return line;
  }

  stop(): void {
    this.stopped = true;
    for (const line of this.lines) line.wakeAll();
  }
}

/**
 * The slots of one queue that found it empty. One of them, the poller, waits a polling interval
 * and fetches again; the others wait without polling until a fetch finds a job (`found`: there may
 * be more, so the slot that waited longest fetches at once) or until one of them comes to poll. An
 * idle worker looks at each queue once an interval, not once per slot, whatever its concurrency.
 */
export class IdleLine {
  /** Wakes the slot polling, if one is. */
  private poller: (() => void) | undefined;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly pollMs: number,
    private readonly stopped: () => boolean,
  ) {}

  get stopping(): boolean {
    return this.stopped();
  }

  /**
   * A slot found the queue empty: resolves when it should fetch again (the poller after one
   * interval, a waiting slot when `found` wakes it), or at once when stopping.
   */
  pause(): Promise<void> {
    if (this.stopped()) return Promise.resolve();
    if (this.poller !== undefined) return new Promise<void>((resolve) => this.waiting.push(resolve));
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        if (this.poller === wake) this.poller = undefined;
        resolve();
      };
      const timer = setTimeout(wake, this.pollMs);
      this.poller = wake;
    });
  }

  /** A slot of this line fetched a job: the slot that waited longest fetches at once. */
  found(): void {
    this.waiting.shift()?.();
  }

  /** Every paused slot fetches (or, stopping, ends) at once. */
  wakeAll(): void {
    this.poller?.();
    for (const wake of this.waiting.splice(0)) wake();
  }
}
