import { sql } from 'kysely';
import type { Db } from '../warehouse/warehouse.js';
import type { FailedWindow } from './completeness.js';

/** A window's row as `status` and the status page read it: its state and its last error. */
export interface WindowErrorRow {
  pipeline: string;
  organization_id: string;
  window_key: string;
  status: string;
  last_error_code: string | null;
  last_error_message: string | null;
  attempts: number;
}

export interface PipelineOrgStatus {
  pipeline: string;
  organizationId: string;
  /** Key of the newest loaded window (a report pipeline's: its report period). */
  lastLoadedWindow: string | null;
  lastLoadedStart: Date | null;
  lastLoadedEnd: Date | null;
  lagSeconds: number | null;
  windows: Record<string, number>;
  notReady: { windowKey: string; since: Date | null; message: string | null }[];
  failed: FailedWindow[];
  rejects: number;
}

/** The status of a pipeline and organization of which nothing is held yet. */
export function emptyStatus(pipeline: string, organizationId: string): PipelineOrgStatus {
  return {
    pipeline,
    organizationId,
    lastLoadedWindow: null,
    lastLoadedStart: null,
    lastLoadedEnd: null,
    lagSeconds: null,
    windows: {},
    notReady: [],
    failed: [],
    rejects: 0,
  };
}

export interface RunRow {
  id: number;
  command: string;
  trigger: string;
  status: string;
  startedAt: Date;
  finishedAt: Date | null;
  counts: Record<string, unknown>;
  error: string | null;
}

/** What `cybs-etl status` shows, read from etl.* in a few set-wise queries. */
export async function readStatus(
  db: Db,
  now: Date,
): Promise<{ pipelines: PipelineOrgStatus[]; runs: RunRow[] }> {
  const groups = await sql<{
    pipeline: string;
    organization_id: string;
    status: string;
    n: number;
  }>`select pipeline, organization_id, status, count(*)::int as n from etl.windows group by 1, 2, 3`.execute(
    db,
  );
  // The lag counts from the newest settled window that has ended: one that has not cannot be
  // complete, whatever its status says.
  const latest = await sql<{
    pipeline: string;
    organization_id: string;
    window_key: string;
    window_start: Date;
    window_end: Date;
  }>`
    select distinct on (pipeline, organization_id) pipeline, organization_id, window_key, window_start, window_end
    from etl.windows where status in ('loaded', 'no_data') and window_end <= ${now}
    order by pipeline, organization_id, window_end desc`.execute(db);
  const problems = await sql<
    WindowErrorRow & { not_ready_since: Date | null; failures: number; retry_after: Date | null }
  >`
    select pipeline, organization_id, window_key, status, last_error_code, last_error_message, not_ready_since,
           attempts, failures, retry_after
    from etl.windows
    where status = 'failed' or (status = 'pending' and last_error_code = 'NOT_READY')
    order by pipeline, organization_id, window_start`.execute(db);
  const rejects = await sql<{ pipeline: string; organization_id: string; n: number }>`
    select pipeline, organization_id, count(*)::int as n from etl.rejects group by 1, 2`.execute(db);
  const runs = await readLastRuns(db);

  const byKey = new Map<string, PipelineOrgStatus>();
  const entry = (pipeline: string, organizationId: string) => {
    const key = `${pipeline}\u0000${organizationId}`;
    let e = byKey.get(key);
    if (!e) {
      e = emptyStatus(pipeline, organizationId);
      byKey.set(key, e);
    }
    return e;
  };
  for (const g of groups.rows) entry(g.pipeline, g.organization_id).windows[g.status] = g.n;
  for (const l of latest.rows) {
    const e = entry(l.pipeline, l.organization_id);
    e.lastLoadedWindow = l.window_key;
    e.lastLoadedStart = new Date(l.window_start);
    e.lastLoadedEnd = new Date(l.window_end);
    e.lagSeconds = Math.max(0, Math.round((now.getTime() - e.lastLoadedEnd.getTime()) / 1000));
  }
  for (const p of problems.rows) {
    const e = entry(p.pipeline, p.organization_id);
    if (p.status === 'failed') {
      e.failed.push({
        windowKey: p.window_key,
        code: p.last_error_code,
        message: p.last_error_message,
        attempts: p.attempts,
        failures: p.failures,
        retryAfter: p.retry_after ? new Date(p.retry_after) : null,
      });
    } else {
      e.notReady.push({
        windowKey: p.window_key,
        since: p.not_ready_since ? new Date(p.not_ready_since) : null,
        message: p.last_error_message,
      });
    }
  }
  for (const r of rejects.rows) entry(r.pipeline, r.organization_id).rejects = r.n;
  return {
    pipelines: [...byKey.values()].sort((a, b) =>
      a.pipeline === b.pipeline
        ? a.organizationId.localeCompare(b.organizationId)
        : a.pipeline.localeCompare(b.pipeline),
    ),
    runs,
  };
}

/** The newest runs of etl.runs, newest first. */
export async function readLastRuns(db: Db, limit = 10): Promise<RunRow[]> {
  const runs = await sql<{
    id: string;
    command: string;
    trigger: string;
    status: string;
    started_at: Date;
    finished_at: Date | null;
    counts: Record<string, unknown>;
    error: string | null;
  }>`select id, command, trigger, status, started_at, finished_at, counts, error
     from etl.runs order by id desc limit ${limit}`.execute(db);
  return runs.rows.map((r) => ({
    id: Number(r.id),
    command: r.command,
    trigger: r.trigger,
    status: r.status,
    startedAt: new Date(r.started_at),
    finishedAt: r.finished_at ? new Date(r.finished_at) : null,
    counts: r.counts,
    error: r.error,
  }));
}

/**
 * Up to `limit` organizations the warehouse holds state or rows of (etl.windows, etl.sources, which
 * numbers every source a cybs table holds rows of) whose id does not start with `prefix`.
 */
export async function organizationsWithoutPrefix(db: Db, prefix: string, limit: number): Promise<string[]> {
  const found = await sql<{ organization_id: string }>`
    select organization_id from (
      select organization_id from etl.windows where not starts_with(organization_id, ${prefix})
      union
      select organization_id from etl.sources where not starts_with(organization_id, ${prefix})
    ) o order by organization_id limit ${limit}`.execute(db);
  return found.rows.map((r) => r.organization_id);
}
