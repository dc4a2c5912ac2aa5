import { sql } from 'kysely';
import type { EtlDb } from '../warehouse/database.js';
import type { ReportSchedule } from '../time/report-periods.js';
import { WINDOW_STATE_COLUMNS, toWindowStateFields } from './windows.js';
import type { WindowRow } from './windows.js';

/**
 * Completeness, per pipeline and organization: the windows that should be loaded (the expected
 * ones, planned by src/pipeline/plan-windows.ts from the first window the warehouse knows or the
 * configured startDate, whichever is earlier, to the newest available one) against what
 * etl.windows holds. The assessment is pure; readWindowStates is its one query.
 *
 * A window's state: `loaded`, `no_data`, `failed`, `running`, `not_ready` (pending, the service
 * said its report is not ready yet), or `gap` (no row, or a row never settled).
 */
export const WINDOW_STATES = ['loaded', 'no_data', 'not_ready', 'failed', 'running', 'gap'] as const;
export type WindowState = (typeof WINDOW_STATES)[number];

/** What planning and completeness need of one etl.windows row. */
export interface WindowStateRow extends Pick<
  WindowRow,
  | 'pipeline'
  | 'organizationId'
  | 'windowKey'
  | 'start'
  | 'end'
  | 'status'
  | 'attempts'
  | 'failures'
  | 'lastErrorCode'
  | 'lastErrorMessage'
  | 'notReadySince'
  | 'retryAfter'
  | 'loadedAt'
> {
  /** A failed window's backoff has passed (by the database's clock, which also set retry_after). */
  retryDue: boolean;
}

export interface ExpectedWindow {
  windowKey: string;
  start: Date;
  end: Date;
}

export function windowState(row: WindowStateRow | undefined): WindowState {
  if (!row) return 'gap';
  if (row.status === 'pending') return row.lastErrorCode === 'NOT_READY' ? 'not_ready' : 'gap';
  return row.status;
}

/** Consecutive gap windows, from the first key to the last. */
export interface GapSpan {
  from: string;
  to: string;
  windows: number;
  start: Date;
  end: Date;
}

/** A failed window as status shows it. */
export interface FailedWindow {
  windowKey: string;
  code: string | null;
  message: string | null;
  attempts: number;
  /** Jobs that failed for good in a row, their queue retries spent (the backoff's step), and when a pass may enqueue it again. */
  failures: number;
  retryAfter: Date | null;
}

export interface Completeness {
  pipeline: string;
  organizationId: string;
  /** Windows that should be loaded by now. */
  expected: number;
  counts: Record<WindowState, number>;
  gaps: GapSpan[];
  failed: FailedWindow[];
  notReady: { windowKey: string; since: Date | null; message: string | null }[];
  /** The newest window that should be loaded by now. */
  newestExpected: string | null;
  /** Expected windows after the newest settled (loaded or no data) one: 0 when up to date. */
  behind: number;
  /** Rows whose key is not among the expected windows (the window shape changed since they were planned). */
  unplanned: number;
  /**
   * None of the rows is an expected window: they were cut another way (e.g. a report pipeline whose
   * subscription's schedule `status` cannot see without the API), so gaps and `behind` are not assessed.
   */
  shapeDiffers: boolean;
  /** Rows etl.windows holds of this pipeline and organization (0: never planned). */
  rows: number;
}

const SETTLED: readonly WindowState[] = ['loaded', 'no_data'];

/** The expected windows (in time order) of one pipeline and organization against its rows. */
export function assessCompleteness(
  ref: { pipeline: string; organizationId: string },
  expected: readonly ExpectedWindow[],
  rows: ReadonlyMap<string, WindowStateRow>,
): Completeness {
  const counts = Object.fromEntries(WINDOW_STATES.map((s) => [s, 0])) as Record<WindowState, number>;
  const out: Completeness = {
    ...ref,
    expected: expected.length,
    counts,
    gaps: [],
    failed: [],
    notReady: [],
    newestExpected: expected.at(-1)?.windowKey ?? null,
    behind: 0,
    unplanned: 0,
    shapeDiffers: false,
    rows: rows.size,
  };
  const keys = new Set<string>();
  let open: GapSpan | undefined;
  for (const w of expected) {
    keys.add(w.windowKey);
    const row = rows.get(w.windowKey);
    const state = windowState(row);
    counts[state]++;
    out.behind = SETTLED.includes(state) ? 0 : out.behind + 1;
    if (state === 'gap') {
      if (open) {
        open.to = w.windowKey;
        open.windows++;
        open.end = w.end;
      } else {
        open = { from: w.windowKey, to: w.windowKey, windows: 1, start: w.start, end: w.end };
        out.gaps.push(open);
      }
      continue;
    }
    open = undefined;
    if (state === 'failed' && row) {
      out.failed.push({
        windowKey: row.windowKey,
        code: row.lastErrorCode,
        message: row.lastErrorMessage,
        attempts: row.attempts,
        failures: row.failures,
        retryAfter: row.retryAfter,
      });
    } else if (state === 'not_ready' && row) {
      out.notReady.push({
        windowKey: row.windowKey,
        since: row.notReadySince,
        message: row.lastErrorMessage,
      });
    }
  }
  for (const key of rows.keys()) if (!keys.has(key)) out.unplanned++;
  if (rows.size > 0 && out.unplanned === rows.size) {
    out.shapeDiffers = true;
    out.gaps = [];
    out.behind = 0;
    counts.gap = 0;
  }
  return out;
}

export const ATTENTION_KINDS = ['gap', 'failed', 'behind', 'never_loaded'] as const;
export type AttentionKind = (typeof ATTENTION_KINDS)[number];

/** One thing that is wrong, in a sentence: what `status` leads with. */
export interface AttentionItem {
  kind: AttentionKind;
  pipeline: string;
  organizationId: string;
  /** The window or range concerned (gaps, failures). */
  windows?: string;
  text: string;
}

/**
 * What is wrong, most pressing kind first: gaps (windows never loaded between loaded ones), failed
 * windows, pipelines behind the newest available window, and pipelines never loaded.
 */
export function attentionItems(all: readonly Completeness[]): AttentionItem[] {
  const items: AttentionItem[] = [];
  for (const c of all) {
    const ref = { pipeline: c.pipeline, organizationId: c.organizationId };
    if (c.rows === 0) {
      if (c.expected > 0)
        items.push({
          kind: 'never_loaded',
          ...ref,
          text: `never loaded: ${c.expected} window(s) due up to ${c.newestExpected ?? '?'}`,
        });
      continue;
    }
    for (const g of c.gaps) {
      const range = g.from === g.to ? g.from : `${g.from}..${g.to}`;
      items.push({
        kind: 'gap',
        ...ref,
        windows: range,
        text: `${range} (${g.windows} window${g.windows === 1 ? '' : 's'}) never loaded`,
      });
    }
    for (const f of c.failed) {
      const retry = f.retryAfter ? `, retried from ${f.retryAfter.toISOString()}` : '';
      items.push({
        kind: 'failed',
        ...ref,
        windows: f.windowKey,
        text: `${f.windowKey} failed (attempts ${f.attempts}, failed jobs in a row ${f.failures}${retry}): ${f.code ?? '?'}: ${f.message ?? ''}`,
      });
    }
    if (c.behind > 0)
      items.push({
        kind: 'behind',
        ...ref,
        text: `${c.behind} window(s) behind the newest available one (${c.newestExpected ?? '?'})`,
      });
  }
  const order = (k: AttentionKind) => ATTENTION_KINDS.indexOf(k);
  return items.sort((a, b) => order(a.kind) - order(b.kind));
}

/** The start of the earliest of these rows (the first window the warehouse knows of). */
export function earliestStart(rows: Iterable<WindowStateRow>): Date | undefined {
  let first: Date | undefined;
  for (const r of rows) if (!first || r.start < first) first = r.start;
  return first;
}

/**
 * The etl.windows rows of a selection, in time order per pipeline and organization: only the
 * columns planning and completeness read (status and the status page read every row).
 */
export async function readWindowStates(
  db: EtlDb,
  filter: {
    pipelines?: readonly string[];
    organizationId?: string;
    organizationIds?: readonly string[];
  } = {},
): Promise<WindowStateRow[]> {
  let q = db
    .selectFrom('etl.windows')
    .select([...WINDOW_STATE_COLUMNS])
    .select(sql<boolean>`(retry_after is null or retry_after <= now())`.as('retry_due'));
  if (filter.pipelines) q = q.where('pipeline', 'in', [...filter.pipelines]);
  if (filter.organizationId) q = q.where('organization_id', '=', filter.organizationId);
  if (filter.organizationIds) q = q.where('organization_id', 'in', [...filter.organizationIds]);
  const rows = await q.orderBy('pipeline').orderBy('organization_id').orderBy('window_start').execute();
  return rows.map((r) => ({
    ...toWindowStateFields(r),
    retryDue: r.retry_due === true,
  }));
}

/** Rows grouped by pipeline and organization (`pipeline \0 organization`), each by window key. */
export function groupWindowStates(rows: readonly WindowStateRow[]): Map<string, Map<string, WindowStateRow>> {
  const out = new Map<string, Map<string, WindowStateRow>>();
  for (const r of rows) {
    const key = pairKey(r.pipeline, r.organizationId);
    let m = out.get(key);
    if (!m) out.set(key, (m = new Map()));
    m.set(r.windowKey, r);
  }
  return out;
}

export function pairKey(pipeline: string, organizationId: string): string {
  return `${pipeline}\u0000${organizationId}`;
}

/** How a pipeline's windows were last cut by a pass (etl.pipeline_shapes). */
export interface PipelineShape {
  pipeline: string;
  timeZone: string;
  reportSchedule: ReportSchedule | null;
}

/** Remember how each pipeline's windows are cut, for the readers that do not ask the API (status). */
export async function recordPipelineShapes(db: EtlDb, shapes: readonly PipelineShape[]): Promise<void> {
  if (shapes.length === 0) return;
  await db
    .insertInto('etl.pipeline_shapes')
    .values(
      shapes.map((s) => ({
        pipeline: s.pipeline,
        time_zone: s.timeZone,
        report_schedule: s.reportSchedule === null ? null : JSON.stringify(s.reportSchedule),
      })),
    )
    .onConflict((oc) =>
      oc.column('pipeline').doUpdateSet((eb) => ({
        time_zone: eb.ref('excluded.time_zone'),
        report_schedule: eb.ref('excluded.report_schedule'),
        updated_at: sql`now()`,
      })),
    )
    .execute();
}

export async function readPipelineShapes(db: EtlDb): Promise<Map<string, PipelineShape>> {
  const rows = await db
    .selectFrom('etl.pipeline_shapes')
    .select(['pipeline', 'time_zone', 'report_schedule'])
    .execute();
  return new Map(
    rows.map((r) => [
      r.pipeline,
      {
        pipeline: r.pipeline,
        timeZone: r.time_zone,
        reportSchedule: (r.report_schedule as ReportSchedule | null) ?? null,
      },
    ]),
  );
}
