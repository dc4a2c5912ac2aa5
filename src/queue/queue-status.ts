import { sql } from 'kysely';
import type { Db } from '../warehouse/warehouse.js';
import {
  ONE_TIME_QUEUE,
  QUEUE_SCHEMA,
  WINDOW_DEAD_LETTER_QUEUE,
  WINDOW_QUEUE,
  windowJobKey,
} from './window-jobs.js';

/** The window queue's jobs by state, as `status` and the status page show them. */
export interface QueueCounts {
  queued: number;
  /** Of `queued`: windows put back until the one-time report of their chunk is ready (chunk-jobs.ts). */
  waitingForReport: number;
  active: number;
  /** Failed and waiting for their next attempt (backoff). */
  retrying: number;
  /** In the dead-letter queue: their retries are spent, their windows stay failed. */
  deadLettered: number;
}

/** The counts in all, and per pipeline (pipelines with no job in these states left out). */
export type QueueStatus = QueueCounts & {
  pipelines: (QueueCounts & { pipeline: string })[];
  /** One-time reports being followed by their jobs (created, or waited for). */
  oneTimeReports: number;
};

/** The counts; undefined where no planner or worker has installed the queue in this warehouse. */
export async function readQueueCounts(db: Db): Promise<QueueStatus | undefined> {
  if (!(await queueInstalled(db))) return undefined;
  // Settled jobs (completed, failed: their dead-letter copies are counted) are left out of the scan.
  const rows = await sql<{ name: string; state: string; pipeline: string; n: number }>`
    select name,
           case when name = ${WINDOW_QUEUE} and state = 'created' and data ? 'waitingFor'
                 and start_after > ${sql.raw(QUEUE_SCHEMA)}.job_now() then 'waiting' else state::text end as state,
           coalesce(data->>'pipeline', data->'request'->>'pipeline', '?') as pipeline, count(*)::int as n
      from ${sql.table(`${QUEUE_SCHEMA}.job`)}
     where (name in (${WINDOW_QUEUE}, ${ONE_TIME_QUEUE}) and state in ('created', 'active', 'retry'))
        or (name = ${WINDOW_DEAD_LETTER_QUEUE} and state = 'created')
     group by 1, 2, 3`.execute(db);
  const countsOf = (of: readonly { name: string; state: string; n: number }[]): QueueCounts => {
    const count = (name: string, state: string) =>
      of.filter((r) => r.name === name && r.state === state).reduce((n, r) => n + r.n, 0);
    const waiting = count(WINDOW_QUEUE, 'waiting');
    return {
      queued: count(WINDOW_QUEUE, 'created') + waiting,
      waitingForReport: waiting,
      active: count(WINDOW_QUEUE, 'active'),
      retrying: count(WINDOW_QUEUE, 'retry'),
      deadLettered: count(WINDOW_DEAD_LETTER_QUEUE, 'created'),
    };
  };
  const windowRows = rows.rows.filter((r) => r.name !== ONE_TIME_QUEUE);
  const pipelines = [...new Set(windowRows.map((r) => r.pipeline))].sort();
  return {
    ...countsOf(windowRows),
    oneTimeReports: rows.rows.filter((r) => r.name === ONE_TIME_QUEUE).reduce((n, r) => n + r.n, 0),
    pipelines: pipelines.map((pipeline) => ({
      pipeline,
      ...countsOf(windowRows.filter((r) => r.pipeline === pipeline)),
    })),
  };
}

/** `status`'s line about the queue; empty when nothing is in it. */
export function queueLine(counts: (QueueCounts & { oneTimeReports?: number }) | undefined): string {
  if (!counts || counts.queued + counts.active + counts.retrying + counts.deadLettered === 0) return '';
  const waiting =
    counts.waitingForReport > 0
      ? ` (${counts.waitingForReport} of them waiting for the one-time reports of their chunks, ${counts.oneTimeReports ?? 0} being generated)`
      : '';
  return (
    `\nWindow queue (cybs-etl worker): ${counts.queued} queued${waiting}, ${counts.active} being loaded, ` +
    `${counts.retrying} waiting to retry, ${counts.deadLettered} dead-lettered` +
    (counts.deadLettered > 0 ? ` (their windows stay failed; see ${WINDOW_DEAD_LETTER_QUEUE})` : '') +
    '.\n'
  );
}

/** A window's newest job on the window queue, as `windows show` tells it. */
export interface WindowJob {
  id: string;
  state: 'created' | 'retry' | 'active' | 'completed' | 'cancelled' | 'failed';
  /** Attempts that failed so far (pg-boss's retry count), of at most `retryLimit` retries. */
  retryCount: number;
  retryLimit: number;
  /** When it may run (its next attempt, for a job waiting to retry). */
  startAfter: Date;
  createdOn: Date;
  completedOn: Date | null;
  /** Its retries are spent and it was moved to the dead-letter queue (WINDOW_DEAD_LETTER_QUEUE). */
  deadLettered: boolean;
  /** The credential group its planner gave it (window-jobs.ts credentialGroup). */
  credential: string | null;
  /** The one-time report it was put back to wait for (queued until that report's job wakes it). */
  waitingFor: string | null;
}

/** Whether any planner or worker has installed the queue in this warehouse. */
async function queueInstalled(db: Db): Promise<boolean> {
  const installed = await sql<{
    job: string | null;
  }>`select to_regclass(${`${QUEUE_SCHEMA}.job`})::text as job`.execute(db);
  return Boolean(installed.rows[0]?.job);
}

/**
 * The newest job of a window on the window queue (queued, waiting to retry, being loaded, or the
 * last one settled while pg-boss keeps it); undefined when there is none.
 */
export async function readWindowJob(
  db: Db,
  ref: { pipeline: string; organizationId: string; windowKey: string },
): Promise<WindowJob | undefined> {
  if (!(await queueInstalled(db))) return undefined;
  const job = sql.table(`${QUEUE_SCHEMA}.job`);
  const r = await sql<{
    id: string;
    state: WindowJob['state'];
    retry_count: number;
    retry_limit: number;
    start_after: Date;
    created_on: Date;
    completed_on: Date | null;
    dead_lettered: boolean;
    credential: string | null;
    waiting_for: string | null;
  }>`
    select j.id::text as id, j.state::text as state, j.retry_count, j.retry_limit, j.start_after,
           j.created_on, j.completed_on, j.data->>'credential' as credential,
           case when j.state = 'created' then j.data->>'waitingFor' end as waiting_for,
           exists (select 1 from ${job} d where d.name = ${WINDOW_DEAD_LETTER_QUEUE} and d.source_id = j.id) as dead_lettered
      from ${job} j
     where j.name = ${WINDOW_QUEUE} and j.singleton_key = ${windowJobKey(ref)}
     order by j.created_on desc
     limit 1`.execute(db);
  const row = r.rows[0];
  if (!row) return undefined;
  return {
    id: row.id,
    state: row.state,
    retryCount: row.retry_count,
    retryLimit: row.retry_limit,
    startAfter: new Date(row.start_after),
    createdOn: new Date(row.created_on),
    completedOn: row.completed_on ? new Date(row.completed_on) : null,
    deadLettered: row.dead_lettered,
    credential: row.credential,
    waitingFor: row.waiting_for,
  };
}

/**
 * The worker loading a window now (host:pid), from the window's claim (jobClaim: `id/attempt@host:pid`)
 * when its job is active and the claim is that job's; null otherwise.
 */
export function workerOfJob(job: WindowJob | undefined, claim: string | null): string | null {
  if (job?.state !== 'active' || !claim?.startsWith(`${job.id}/`)) return null;
  const at = claim.indexOf('@');
  return at < 0 ? null : claim.slice(at + 1);
}
