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
 * Paces the slots' loops: a slot that finds its queue empty pauses one polling interval; `stop`
 * ends every loop at its next turn and wakes the paused slots at once.
 */
export class SlotPacer {
  private stopped = false;
  private readonly sleepers = new Set<() => void>();

  constructor(private readonly pollMs: number) {}

  get stopping(): boolean {
    return this.stopped;
  }

  /** One polling interval, or none once stopping (a slot that was fetching when `stop` came). */
  pause(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, this.pollMs);
      this.sleepers.add(wake);
    });
  }

  stop(): void {
    this.stopped = true;
    for (const wake of [...this.sleepers]) wake();
  }
}
