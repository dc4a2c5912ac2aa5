import { hostname } from 'node:os';
import { sql } from 'kysely';
import type { Db } from '../load/warehouse.js';

export const RUN_STATUSES = ['running', 'succeeded', 'failed', 'interrupted'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export interface StartRunOptions {
  command: string;
  trigger?: string;
  pipelines?: readonly string[];
}

/** Record the start of a run; returns its id (the `_run_id` of every row it writes). */
export async function startRun(db: Db, options: StartRunOptions): Promise<number> {
  const row = await db
    .insertInto('etl.runs')
    .values({
      command: options.command,
      trigger: options.trigger ?? 'cli',
      pipelines: options.pipelines ? sql`${sql.val([...options.pipelines])}::text[]` : null,
      host: hostname(),
      pid: process.pid,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

export interface FinishRunOptions {
  status: Exclude<RunStatus, 'running'>;
  counts?: Record<string, number>;
  error?: string | null;
}

export async function finishRun(db: Db, runId: number, options: FinishRunOptions): Promise<void> {
  await db
    .updateTable('etl.runs')
    .set({
      status: options.status,
      finished_at: sql`now()`,
      counts: JSON.stringify(options.counts ?? {}),
      error: options.error ?? null,
    })
    .where('id', '=', runId)
    .execute();
}
