import { sql } from 'kysely';
import type { RawBuilder } from 'kysely';
import type { Db } from '../warehouse/warehouse.js';
import { readQueueCounts } from '../queue/queue-status.js';
import type { QueueStatus } from '../queue/queue-status.js';
import { pairKey } from './completeness.js';
import type { Completeness, GapSpan } from './completeness.js';
import { readLastRuns } from './status.js';
import type { RunRow, WindowErrorRow } from './status.js';

/**
 * What the status page shows, read set-wise from etl.*: a summary per pipeline, and one page of
 * pipeline × organization rows (problems first) with a calendar strip of their last days. Every
 * query is an aggregate or bounded by the page, so the page stays fast on thousands of
 * organizations. Counts follow `status --json` (src/state/status.ts): loaded, no data, failed, not
 * ready (pending with NOT_READY), rejects (rows of etl.rejects), lag (from the newest settled window
 * that has ended); gaps are status's too: the completeness of each pipeline and organization
 * (src/state/completeness.ts), given by the caller; the window queue's counts are status's query.
 */

/** A day's state in a strip; `gap`: a day of an expected window never loaded (completeness.ts). */
export const CELL_STATES = ['loaded', 'no_data', 'not_ready', 'failed', 'pending', 'running', 'gap'] as const;
export type CellState = (typeof CELL_STATES)[number];

export interface StripCell {
  day: string;
  state: CellState | 'none';
  /** The window covering the day, when there is one. */
  window?: {
    key: string;
    status: string;
    attempts: number;
    rowsLoaded: number;
    rowsRejected: number;
    errorCode: string | null;
    errorMessage: string | null;
    updatedAt: Date;
  };
}

/** Windows by state, of one pipeline and organization or summed over a pipeline. */
interface WindowCounts {
  loaded: number;
  noData: number;
  failed: number;
  notReady: number;
  /** Expected windows never loaded (completeness.ts's gaps, as `status` counts them). */
  gaps: number;
  rejects: number;
}

export interface StatusPageRow extends WindowCounts {
  pipeline: string;
  organizationId: string;
  lastLoadedWindow: string | null;
  lagSeconds: number | null;
  freshnessSeconds: number;
  stale: boolean;
  strip: StripCell[];
}

export interface PipelineSummary extends WindowCounts {
  pipeline: string;
  organizations: number;
  staleOrganizations: number;
  /** The largest lag of its organizations (never-loaded ones aside). */
  maxLagSeconds: number | null;
  freshnessSeconds: number;
}

export interface SchemaChangeRow {
  table: string;
  /** The columns added at once, each with its type. */
  columns: string;
  pipeline: string | null;
  source: string | null;
  changedAt: Date;
}

export const PROBLEM_FILTERS = ['all', 'problems', 'failed', 'stale', 'gaps', 'not_ready'] as const;
export type ProblemFilter = (typeof PROBLEM_FILTERS)[number];

export interface StatusPageQuery {
  pipeline?: string;
  /** Organizations whose id contains this text. */
  organization?: string;
  problems?: ProblemFilter;
  /** 1-based. */
  page?: number;
  pageSize?: number;
}

export interface StatusPageData {
  generatedAt: Date;
  days: string[];
  pipelines: PipelineSummary[];
  rows: StatusPageRow[];
  query: Required<StatusPageQuery>;
  /** Rows that match the query, over all pages. */
  matching: number;
  runs: RunRow[];
  schemaChanges: SchemaChangeRow[];
  /** The window queue, as `status` reads it; null where no planner or worker has installed it. */
  queue: QueueStatus | null;
}

export interface StatusPageOptions {
  now: Date;
  /** Freshness limit per pipeline, in seconds (config freshnessHours). */
  freshnessSeconds: (pipeline: string) => number;
  /** Days in a strip, ending with the newest day of any window (default 35). */
  days?: number;
  /**
   * The completeness of the enabled pipelines' organizations (assessPipelines, as `status` computes
   * it): the gaps of the page. Pipelines and organizations it leaves out have none.
   */
  completeness: readonly Completeness[];
}

/** A pipeline × organization's counts, as the aggregate query returns them. */
interface AggregateRow {
  pipeline: string;
  organization_id: string;
  loaded: number;
  no_data: number;
  failed: number;
  not_ready: number;
  gaps: number;
  rejects: number;
  last_key: string | null;
  last_end: Date | null;
  freshness: number;
}

const DATE_KEY = String.raw`^\d{4}-\d\d-\d\d(\.\.\d{4}-\d\d-\d\d)?$`;
export const DEFAULT_PAGE_SIZE = 50;

export async function readStatusPageData(
  db: Db,
  query: StatusPageQuery,
  options: StatusPageOptions,
): Promise<StatusPageData> {
  const q = pageQuery(query);
  const now = options.now;
  const pipelineNames = (
    await sql<{ pipeline: string }>`select distinct pipeline from etl.windows order by 1`.execute(db)
  ).rows.map((r) => r.pipeline);
  const freshness = pipelineNames.map((p) => options.freshnessSeconds(p));
  const assessed = options.completeness.filter((c) => c.gaps.length > 0);
  const aggregate = aggregateQuery(now, assessed, pipelineNames, freshness);
  const pipelines = await readPipelineSummaries(db, aggregate, now);
  const { matching, page } = await readPage(db, aggregate, now, q);
  const days = await stripDays(db, now, options.days ?? 35);
  const windows = await readStripWindows(db, page, days[0]!);
  const gapsOf = new Map(assessed.map((c) => [pairKey(c.pipeline, c.organizationId), c.gaps]));
  const rows = page.map((r) =>
    pageRow(r, now, stripOf(r, days, windows, gapsOf.get(pairKey(r.pipeline, r.organization_id)) ?? [])),
  );
  const schemaChanges = await readSchemaChanges(db);
  const runs = await readLastRuns(db);
  const queue = (await readQueueCounts(db)) ?? null;
  return { generatedAt: now, days, pipelines, rows, query: q, matching, runs, schemaChanges, queue };
}

/** The query with its defaults, the page and its size clamped. */
function pageQuery(query: StatusPageQuery): Required<StatusPageQuery> {
  return {
    pipeline: query.pipeline ?? '',
    organization: query.organization ?? '',
    problems: query.problems ?? 'all',
    page: Math.max(1, Math.floor(query.page ?? 1)),
    pageSize: Math.min(500, Math.max(1, Math.floor(query.pageSize ?? DEFAULT_PAGE_SIZE))),
  };
}

/**
 * One row per pipeline × organization with its counts (AggregateRow), its gaps from completeness.ts
 * (`assessed`: the pairs that have some) and its pipeline's freshness limit.
 */
function aggregateQuery(
  now: Date,
  assessed: readonly Completeness[],
  pipelineNames: readonly string[],
  freshness: readonly number[],
): RawBuilder<AggregateRow> {
  const gapWindows = (c: Completeness) => c.gaps.reduce((n, g) => n + g.windows, 0);
  return sql<AggregateRow>`
    with g as (
      select pipeline, organization_id,
             count(*) filter (where status = 'loaded')::int as loaded,
             count(*) filter (where status = 'no_data')::int as no_data,
             count(*) filter (where status = 'failed')::int as failed,
             count(*) filter (where status = 'pending' and last_error_code = 'NOT_READY')::int as not_ready
        from etl.windows group by 1, 2),
    c as (
      select * from unnest(${assessed.map((c) => c.pipeline)}::text[],
                           ${assessed.map((c) => c.organizationId)}::text[],
                           ${assessed.map(gapWindows)}::int[]) as c(pipeline, organization_id, gaps)),
    l as (
      select distinct on (pipeline, organization_id) pipeline, organization_id, window_key, window_end
        from etl.windows where status in ('loaded', 'no_data') and window_end <= ${now}
       order by pipeline, organization_id, window_end desc),
    r as (select pipeline, organization_id, count(*)::int as n from etl.rejects group by 1, 2),
    f as (select * from unnest(${pipelineNames}::text[], ${freshness}::int[]) as f(pipeline, seconds))
    select g.pipeline, g.organization_id, g.loaded, g.no_data, g.failed, g.not_ready,
           coalesce(c.gaps, 0)::int as gaps,
           coalesce(r.n, 0) as rejects, l.window_key as last_key, l.window_end as last_end,
           f.seconds as freshness
      from g
      left join c using (pipeline, organization_id)
      left join l using (pipeline, organization_id)
      left join r using (pipeline, organization_id)
      join f using (pipeline)`;
}

/** Whether a pair's newest settled window ended longer ago than its freshness limit (or never). */
function isStale(now: Date, lastEnd: Date | null, seconds: number): boolean {
  return lastEnd === null || now.getTime() - new Date(lastEnd).getTime() > seconds * 1000;
}

/** Seconds since a pair's newest settled window ended; null when none has. */
function lagSeconds(now: Date, lastEnd: Date | null): number | null {
  return lastEnd === null
    ? null
    : Math.max(0, Math.round((now.getTime() - new Date(lastEnd).getTime()) / 1000));
}

/** The aggregate summed per pipeline. */
async function readPipelineSummaries(
  db: Db,
  aggregate: RawBuilder<AggregateRow>,
  now: Date,
): Promise<PipelineSummary[]> {
  const summaries = await sql<{
    pipeline: string;
    organizations: number;
    loaded: number;
    no_data: number;
    failed: number;
    not_ready: number;
    gaps: number;
    rejects: number;
    stale: number;
    oldest_end: Date | null;
    freshness: number;
  }>`
    with a as (${aggregate})
    select pipeline, count(*)::int as organizations, sum(loaded)::int as loaded,
           sum(no_data)::int as no_data, sum(failed)::int as failed, sum(not_ready)::int as not_ready,
           sum(gaps)::int as gaps, sum(rejects)::int as rejects,
           count(*) filter (where last_end is null
                            or extract(epoch from (${now}::timestamptz - last_end)) > freshness)::int as stale,
           min(last_end) as oldest_end, min(freshness)::int as freshness
      from a group by 1 order by 1`.execute(db);
  return summaries.rows.map((s) => ({
    pipeline: s.pipeline,
    organizations: s.organizations,
    loaded: s.loaded,
    noData: s.no_data,
    failed: s.failed,
    notReady: s.not_ready,
    gaps: s.gaps,
    rejects: s.rejects,
    staleOrganizations: s.stale,
    maxLagSeconds: lagSeconds(now, s.oldest_end),
    freshnessSeconds: s.freshness,
  }));
}

/** The aggregate rows the query's filters match: how many, and those of its page, problems first. */
async function readPage(
  db: Db,
  aggregate: RawBuilder<AggregateRow>,
  now: Date,
  q: Required<StatusPageQuery>,
): Promise<{ matching: number; page: AggregateRow[] }> {
  const problem = {
    all: sql<boolean>`true`,
    problems: sql<boolean>`(failed > 0 or not_ready > 0 or gaps > 0 or is_stale)`,
    failed: sql<boolean>`failed > 0`,
    stale: sql<boolean>`is_stale`,
    gaps: sql<boolean>`gaps > 0`,
    not_ready: sql<boolean>`not_ready > 0`,
  }[q.problems];
  const filtered = sql`
    select *, (last_end is null or extract(epoch from (${now}::timestamptz - last_end)) > freshness) as is_stale
      from (${aggregate}) a`;
  const where = sql`where ${problem}
      and (${q.pipeline} = '' or pipeline = ${q.pipeline})
      and (${q.organization} = '' or strpos(organization_id, ${q.organization}) > 0)`;
  const matching = await sql<{ n: number }>`
    select count(*)::int as n from (${filtered}) x ${where}`.execute(db);
  const page = await sql<AggregateRow>`
    select * from (${filtered}) x ${where}
     order by (failed > 0) desc, is_stale desc, (gaps > 0) desc, (not_ready > 0) desc, pipeline, organization_id
     limit ${q.pageSize} offset ${(q.page - 1) * q.pageSize}`.execute(db);
  return { matching: matching.rows[0]?.n ?? 0, page: page.rows };
}

/** The strip's days: the last `dayCount` days up to the newest day of any window. */
async function stripDays(db: Db, now: Date, dayCount: number): Promise<string[]> {
  const newest = await sql<{ day: string | null }>`
    select to_char(max(coalesce(nullif(substr(window_key, 13, 10), ''), left(window_key, 10))::date), 'YYYY-MM-DD') as day
      from etl.windows where window_key ~ ${DATE_KEY}`.execute(db);
  // Up to yesterday at least, so that days a stale pipeline has not loaded show as such.
  const yesterday = shiftDay(now.toISOString().slice(0, 10), -1);
  const newestDay = newest.rows[0]?.day;
  const lastDay = newestDay && newestDay > yesterday ? newestDay : yesterday;
  return Array.from({ length: dayCount }, (_, i) => shiftDay(lastDay, i - dayCount + 1));
}

/** A window of the page's pairs that covers a day of the strip, with its first and last day. */
type StripWindow = WindowErrorRow & {
  rows_loaded: string;
  rows_rejected: string;
  updated_at: Date;
  first_day: string;
  last_day: string;
};

/** The windows of the page's pairs (whose keys are days or spans of days) that end on or after the strip's first day. */
async function readStripWindows(
  db: Db,
  page: readonly AggregateRow[],
  firstDay: string,
): Promise<StripWindow[]> {
  if (page.length === 0) return [];
  const onPage = sql`(pipeline, organization_id) in (select * from unnest(${page.map((r) => r.pipeline)}::text[], ${page.map((r) => r.organization_id)}::text[]))`;
  const windows = await sql<StripWindow>`
    select pipeline, organization_id, window_key, status, last_error_code, last_error_message,
           attempts, rows_loaded, rows_rejected, updated_at,
           left(window_key, 10) as first_day,
           coalesce(nullif(substr(window_key, 13, 10), ''), left(window_key, 10)) as last_day
      from etl.windows
     where ${onPage}
       and window_key ~ ${DATE_KEY}
       and coalesce(nullif(substr(window_key, 13, 10), ''), left(window_key, 10)) >= ${firstDay}`.execute(db);
  return windows.rows;
}

/** A pair's strip: each day's window and state; a day of one of its gaps is a gap. */
function stripOf(
  r: AggregateRow,
  days: readonly string[],
  windows: readonly StripWindow[],
  gaps: readonly GapSpan[],
): StripCell[] {
  const gapDays = daysOfGaps(gaps);
  const byDay = new Map<string, StripCell['window']>();
  for (const w of windows) {
    if (w.pipeline !== r.pipeline || w.organization_id !== r.organization_id) continue;
    const cell = {
      key: w.window_key,
      status:
        w.status === 'pending' && w.last_error_code === 'NOT_READY' ? 'not_ready' : (w.status as string),
      attempts: w.attempts,
      rowsLoaded: Number(w.rows_loaded),
      rowsRejected: Number(w.rows_rejected),
      errorCode: w.last_error_code,
      errorMessage: w.last_error_message,
      updatedAt: new Date(w.updated_at),
    };
    for (let d = w.first_day; d <= w.last_day; d = shiftDay(d, 1)) byDay.set(d, cell);
  }
  return days.map((day): StripCell => {
    const window = byDay.get(day);
    // A window planned and never settled (pending) is a gap, as completeness counts it.
    if (window) return { day, state: gapDays.has(day) ? 'gap' : (window.status as CellState), window };
    return { day, state: gapDays.has(day) ? 'gap' : 'none' };
  });
}

function pageRow(r: AggregateRow, now: Date, strip: StripCell[]): StatusPageRow {
  return {
    pipeline: r.pipeline,
    organizationId: r.organization_id,
    loaded: r.loaded,
    noData: r.no_data,
    failed: r.failed,
    notReady: r.not_ready,
    gaps: r.gaps,
    rejects: r.rejects,
    lastLoadedWindow: r.last_key,
    lagSeconds: lagSeconds(now, r.last_end),
    freshnessSeconds: r.freshness,
    stale: isStale(now, r.last_end, r.freshness),
    strip,
  };
}

/** The last 20 schema changes, one per change event: the columns a source added to a table at once. */
async function readSchemaChanges(db: Db): Promise<SchemaChangeRow[]> {
  const schemaChanges = await sql<{
    table_schema: string;
    table_name: string;
    columns: string;
    pipeline: string | null;
    source: string | null;
    changed_at: Date;
  }>`select table_schema, table_name, string_agg(column_name || ' ' || column_type, ', ' order by id) as columns,
            pipeline, source, changed_at
       from etl.schema_changes group by table_schema, table_name, pipeline, source, changed_at
      order by max(id) desc limit 20`.execute(db);
  return schemaChanges.rows.map((c) => ({
    table: `${c.table_schema}.${c.table_name}`,
    columns: c.columns,
    pipeline: c.pipeline,
    source: c.source,
    changedAt: new Date(c.changed_at),
  }));
}

/** The local days of gap spans, by their window keys (a day, or first..last day). */
function daysOfGaps(gaps: readonly GapSpan[]): Set<string> {
  const out = new Set<string>();
  const dateKey = new RegExp(DATE_KEY);
  for (const g of gaps) {
    if (!dateKey.test(g.from) || !dateKey.test(g.to)) continue;
    const last = g.to.length > 10 ? g.to.slice(12, 22) : g.to;
    for (let d = g.from.slice(0, 10); d <= last; d = shiftDay(d, 1)) out.add(d);
  }
  return out;
}

function shiftDay(day: string, days: number): string {
  const t = Date.parse(`${day}T00:00:00Z`) + days * 86_400_000;
  return new Date(t).toISOString().slice(0, 10);
}
