import { hostname } from 'node:os';
import { sql } from 'kysely';
import type { EtlDb } from '../warehouse/database.js';

export const RUN_STATUSES = ['running', 'succeeded', 'failed', 'interrupted'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export interface StartRunOptions {
  command: string;
  trigger?: string;
  pipelines?: readonly string[];
}

/** Record the start of a run; returns its id (the `_run_id` of every row it writes). */
export async function startRun(db: EtlDb, options: StartRunOptions): Promise<number> {
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

/**
 * The advisory-lock space of processes recording runs: a process holds (RUN_LOCK_SPACE,
 * hashtext(runHolderKey())) while it has runs in progress (Warehouse.holdAdvisoryLock), so a run
 * still `running` whose process holds no such lock was left by a process that is gone.
 */
export const RUN_LOCK_SPACE = 0x63796272;

/** The lock key of this process's runs: the host and pid its etl.runs rows name. */
export function runHolderKey(): string {
  return `${hostname()}:${process.pid}`;
}

/** Commands whose runs are recorded under that lock (run, backfill, schedule passes). */
const LOCKED_COMMANDS = ['run', 'backfill', 'schedule'] as const;

/**
 * Mark `interrupted` every run of LOCKED_COMMANDS still `running` whose process is gone (killed,
 * crashed): nobody holds its lock. Returns how many.
 */
export async function closeAbandonedRuns(db: EtlDb): Promise<number> {
  const r = await db
    .updateTable('etl.runs')
    .set({
      status: 'interrupted',
      finished_at: sql`now()`,
      error: 'its process ended without finishing it (killed, or its database connection lost)',
    })
    .where('status', '=', 'running')
    .where('command', 'in', [...LOCKED_COMMANDS])
    .where(
      sql<boolean>`not exists (
        select 1 from pg_catalog.pg_locks l
         where l.locktype = 'advisory' and l.granted and l.objsubid = 2
           and l.classid = ${RUN_LOCK_SPACE}::int4::oid
           and l.objid = hashtext(runs.host || ':' || runs.pid::text)::oid)`,
    )
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

export interface FinishRunOptions {
  status: Exclude<RunStatus, 'running'>;
  counts?: Record<string, number>;
  error?: string | null;
}

export async function finishRun(db: EtlDb, runId: number, options: FinishRunOptions): Promise<void> {
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

/** A pipeline's newest pass of `cybs-etl schedule`, as etl.runs recorded it. */
export interface SchedulePass {
  runId: number;
  status: RunStatus;
  startedAt: Date;
  finishedAt: Date | null;
  error: string | null;
}

/**
 * The newest `schedule` run of each of these pipelines, whichever instance ran it (several daemons
 * share the fires of one warehouse); pipelines without one are absent.
 */
export async function lastSchedulePasses(
  db: EtlDb,
  pipelines: readonly string[],
): Promise<Map<string, SchedulePass>> {
  const passes = new Map<string, SchedulePass>();
  if (pipelines.length === 0) return passes;
  const { rows } = await sql<{
    pipeline: string;
    id: string | number;
    status: RunStatus;
    started_at: Date;
    finished_at: Date | null;
    error: string | null;
  }>`select distinct on (p.name) p.name as pipeline, r.id, r.status, r.started_at, r.finished_at, r.error
       from etl.runs r cross join lateral unnest(r.pipelines) as p(name)
      where r.command = 'schedule' and p.name = any(${sql.val([...pipelines])}::text[])
      order by p.name, r.id desc`.execute(db);
  for (const r of rows) {
    passes.set(r.pipeline, {
      runId: Number(r.id),
      status: r.status,
      startedAt: new Date(r.started_at),
      finishedAt: r.finished_at ? new Date(r.finished_at) : null,
      error: r.error,
    });
  }
  return passes;
}
