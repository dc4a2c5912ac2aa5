import { sql } from 'kysely';
import type { Db } from '../warehouse/warehouse.js';
import { QUEUE_SCHEMA, WINDOW_DEAD_LETTER_QUEUE, WINDOW_QUEUE } from './window-jobs.js';

/** The window queue's jobs by state, as `status` shows them. */
export interface QueueCounts {
  queued: number;
  active: number;
  /** Failed and waiting for their next attempt (backoff). */
  retrying: number;
  /** In the dead-letter queue: their retries are spent, their windows stay failed. */
  deadLettered: number;
}

/** The counts; undefined where no planner or worker has installed the queue in this warehouse. */
export async function readQueueCounts(db: Db): Promise<QueueCounts | undefined> {
  const installed = await sql<{
    job: string | null;
  }>`select to_regclass(${`${QUEUE_SCHEMA}.job`})::text as job`.execute(db);
  if (!installed.rows[0]?.job) return undefined;
  const rows = await sql<{ name: string; state: string; n: number }>`
    select name, state::text as state, count(*)::int as n
      from ${sql.table(`${QUEUE_SCHEMA}.job`)}
     where name in (${WINDOW_QUEUE}, ${WINDOW_DEAD_LETTER_QUEUE})
     group by 1, 2`.execute(db);
  const count = (name: string, state: string) =>
    rows.rows.find((r) => r.name === name && r.state === state)?.n ?? 0;
  return {
    queued: count(WINDOW_QUEUE, 'created'),
    active: count(WINDOW_QUEUE, 'active'),
    retrying: count(WINDOW_QUEUE, 'retry'),
    deadLettered: count(WINDOW_DEAD_LETTER_QUEUE, 'created'),
  };
}

/** `status`'s line about the queue; empty when nothing is in it. */
export function queueLine(counts: QueueCounts | undefined): string {
  if (!counts || counts.queued + counts.active + counts.retrying + counts.deadLettered === 0) return '';
  return (
    `\nWindow queue (cybs-etl worker): ${counts.queued} queued, ${counts.active} being loaded, ` +
    `${counts.retrying} waiting to retry, ${counts.deadLettered} dead-lettered` +
    (counts.deadLettered > 0 ? ` (their windows stay failed; see ${WINDOW_DEAD_LETTER_QUEUE})` : '') +
    '.\n'
  );
}
