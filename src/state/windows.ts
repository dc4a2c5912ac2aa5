import { sql } from 'kysely';
import type { ExpressionBuilder, Selectable } from 'kysely';
import { CybsError } from '../errors.js';
import type { Database, EtlDb, WindowsTable } from '../warehouse/database.js';

export const WINDOW_STATUSES = ['pending', 'running', 'loaded', 'no_data', 'failed'] as const;
export type WindowStatus = (typeof WINDOW_STATUSES)[number];

export interface WindowRef {
  pipeline: string;
  organizationId: string;
  windowKey: string;
}

export interface PlannedWindow extends WindowRef {
  start: Date;
  end: Date;
}

export interface WindowRow extends WindowRef {
  id: number;
  start: Date;
  end: Date;
  status: WindowStatus;
  attempts: number;
  rowsLoaded: number;
  rowsRejected: number;
  sourceRef: string | null;
  lastErrorCode: string | null;
  lastErrorMessage: string | null;
  notReadySince: Date | null;
  /** The job attempt loading the window while it is `running` (see claimWindow). */
  claim: string | null;
  loadedAt: Date | null;
  updatedAt: Date;
  /** What the last load read and left (src/pipeline/fingerprint.ts), as stored; null when none. */
  fingerprint: unknown;
  /** Jobs of the window that failed for good (their queue retries spent) since it last loaded: the backoff's step. */
  failures: number;
  failedAt: Date | null;
  /** A failed window is planned again from this time on (null: at the next pass). */
  retryAfter: Date | null;
  counts: Record<string, number>;
  runId: number | null;
}

/** The condition that selects one window row. */
function isWindow(ref: WindowRef) {
  return (eb: ExpressionBuilder<Database, 'etl.windows'>) =>
    eb.and([
      eb('pipeline', '=', ref.pipeline),
      eb('organization_id', '=', ref.organizationId),
      eb('window_key', '=', ref.windowKey),
    ]);
}

/** The columns of etl.windows that planning and completeness read (readWindowStates). */
export const WINDOW_STATE_COLUMNS = [
  'pipeline',
  'organization_id',
  'window_key',
  'window_start',
  'window_end',
  'status',
  'attempts',
  'failures',
  'last_error_code',
  'last_error_message',
  'not_ready_since',
  'retry_after',
  'loaded_at',
] as const;

/** The fields of a row that WINDOW_STATE_COLUMNS hold. */
export function toWindowStateFields(
  r: Pick<Selectable<WindowsTable>, (typeof WINDOW_STATE_COLUMNS)[number]>,
) {
  return {
    pipeline: r.pipeline,
    organizationId: r.organization_id,
    windowKey: r.window_key,
    start: new Date(r.window_start),
    end: new Date(r.window_end),
    status: r.status,
    attempts: Number(r.attempts),
    failures: Number(r.failures ?? 0),
    lastErrorCode: r.last_error_code,
    lastErrorMessage: r.last_error_message,
    notReadySince: r.not_ready_since ? new Date(r.not_ready_since) : null,
    retryAfter: r.retry_after ? new Date(r.retry_after) : null,
    loadedAt: r.loaded_at ? new Date(r.loaded_at) : null,
  };
}

export function toWindowRow(r: Selectable<WindowsTable>): WindowRow {
  return {
    ...toWindowStateFields(r),
    id: Number(r.id),
    rowsLoaded: Number(r.rows_loaded),
    rowsRejected: Number(r.rows_rejected),
    sourceRef: r.source_ref,
    claim: r.claim ?? null,
    updatedAt: new Date(r.updated_at),
    fingerprint: r.fingerprint ?? null,
    failedAt: r.failed_at ? new Date(r.failed_at) : null,
    counts: (r.counts as Record<string, number> | null) ?? {},
    runId: r.run_id == null ? null : Number(r.run_id),
  };
}

/** Make sure a row exists for every planned window (new ones are `pending`); existing rows are kept. */
export async function ensureWindows(db: EtlDb, windows: readonly PlannedWindow[]): Promise<void> {
  for (let i = 0; i < windows.length; i += 500) {
    const slice = windows.slice(i, i + 500);
    await db
      .insertInto('etl.windows')
      .values(
        slice.map((w) => ({
          pipeline: w.pipeline,
          organization_id: w.organizationId,
          window_key: w.windowKey,
          window_start: w.start,
          window_end: w.end,
        })),
      )
      .onConflict((oc) => oc.columns(['pipeline', 'organization_id', 'window_key']).doNothing())
      .execute();
  }
}

export async function listWindows(
  db: EtlDb,
  filter: { pipeline?: string; organizationId?: string; statuses?: readonly WindowStatus[] } = {},
): Promise<WindowRow[]> {
  let q = db.selectFrom('etl.windows').selectAll();
  if (filter.pipeline) q = q.where('pipeline', '=', filter.pipeline);
  if (filter.organizationId) q = q.where('organization_id', '=', filter.organizationId);
  if (filter.statuses) q = q.where('status', 'in', [...filter.statuses]);
  const rows = await q.orderBy('pipeline').orderBy('organization_id').orderBy('window_start').execute();
  return rows.map(toWindowRow);
}

export async function getWindow(db: EtlDb, ref: WindowRef): Promise<WindowRow | undefined> {
  const row = await db.selectFrom('etl.windows').selectAll().where(isWindow(ref)).executeTakeFirst();
  return row ? toWindowRow(row) : undefined;
}

export interface ClaimOptions {
  /** The job attempt that claims it (its token: jobClaim in src/queue/window-jobs.ts). */
  claim: string;
  runId: number | null;
  /** Statuses that may be claimed; a `running` window is always taken over (see claimWindow). */
  claimable: readonly WindowStatus[];
}

/**
 * Claim a window for one job attempt, atomically. The window queue lets one job per window exist
 * at a time (its singleton key) and one attempt of it run (pg-boss hands a job on only once the
 * attempt before has failed or stopped sending heartbeats), so a window still `running` belongs to an
 * attempt that has lost its job: it is taken over, and that attempt can no longer commit
 * (completeWindow). Returns undefined when the window's status is not claimable (it was settled).
 */
export async function claimWindow(
  db: EtlDb,
  ref: WindowRef,
  options: ClaimOptions,
): Promise<WindowRow | undefined> {
  const row = await db
    .updateTable('etl.windows')
    .set({
      status: 'running',
      status_before_claim: sql`case when status = 'running' then status_before_claim else status end`,
      claim: options.claim,
      attempts: sql`attempts + 1`,
      run_id: options.runId,
      updated_at: sql`now()`,
    })
    .where(isWindow(ref))
    .where('status', 'in', [...new Set([...options.claimable, 'running' as const])])
    .returningAll()
    .executeTakeFirst();
  return row ? toWindowRow(row) : undefined;
}

/** A window given back unfinished returns to what it was before the claim (loaded, no_data) or pending. */
const FALL_BACK_STATUS = sql<WindowStatus>`case when status_before_claim in ('loaded', 'no_data', 'failed') then status_before_claim else 'pending' end`;

export interface WindowOutcome {
  status: 'loaded' | 'no_data';
  rowsLoaded: number;
  rowsRejected: number;
  counts: Record<string, number>;
  sourceRef: string | null;
  /** What the load read and left, for recognising an identical re-load (stored as JSON); none: NULL. */
  fingerprint?: unknown;
}

/**
 * Mark a window loaded or no_data. Called inside the load transaction (exactly-once), so the window
 * state commits with its rows. Only the attempt that holds the claim may complete it, and exactly
 * one row must change: an attempt whose window was taken over gets an error, and its transaction
 * rolls back with its rows.
 */
export async function completeWindow(
  db: EtlDb,
  ref: WindowRef,
  claim: string,
  outcome: WindowOutcome,
): Promise<void> {
  const r = await db
    .updateTable('etl.windows')
    .set({
      status: outcome.status,
      rows_loaded: outcome.rowsLoaded,
      rows_rejected: outcome.rowsRejected,
      counts: JSON.stringify(outcome.counts),
      source_ref: outcome.sourceRef,
      fingerprint: outcome.fingerprint == null ? null : JSON.stringify(outcome.fingerprint),
      last_error_code: null,
      last_error_message: null,
      not_ready_since: null,
      failures: 0,
      failed_at: null,
      retry_after: null,
      claim: null,
      loaded_at: sql`now()`,
      updated_at: sql`now()`,
    })
    .where(isWindow(ref))
    .where('status', '=', 'running')
    .where('claim', '=', claim)
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) !== 1) {
    throw new CybsError(
      'CLAIM_LOST',
      `Window ${ref.pipeline} ${ref.organizationId} ${ref.windowKey} is no longer claimed by this job attempt (${claim}): another attempt took it over, so this load was rolled back.`,
      { stage: 'state', context: { ...ref } },
    );
  }
}

/**
 * Release a window that is not ready yet (report still QUEUED/RUNNING): back to `pending` (or to the
 * status it had, for a re-load), remembering since when it has not been ready.
 */
export async function releaseNotReady(
  db: EtlDb,
  ref: WindowRef,
  claim: string,
  message: string,
): Promise<void> {
  await db
    .updateTable('etl.windows')
    .set({
      status: sql`case when status_before_claim in ('loaded', 'no_data') then status_before_claim else 'pending' end`,
      last_error_code: 'NOT_READY',
      last_error_message: message,
      not_ready_since: sql`coalesce(not_ready_since, now())`,
      claim: null,
      updated_at: sql`now()`,
    })
    .where(isWindow(ref))
    .where('status', '=', 'running')
    .where('claim', '=', claim)
    .execute();
}

/**
 * How long a window whose jobs failed `failures` times in a row (each after the queue's retries)
 * waits before a pass plans it again: after the first failed job none (the next pass enqueues it
 * again), then 1, 2, 4, 8 and 16 hours, then a day, so a window that keeps failing is still tried
 * every day without hammering the service every pass.
 */
export const RETRY_BACKOFF_SECONDS = [0, 3_600, 7_200, 14_400, 28_800, 57_600, 86_400] as const;

export function retryDelaySeconds(failures: number): number {
  const step = Math.min(Math.max(failures, 1), RETRY_BACKOFF_SECONDS.length) - 1;
  return RETRY_BACKOFF_SECONDS[step]!;
}

/** retryDelaySeconds(failures + 1) of the row being updated, in SQL (the same steps). */
const NEXT_RETRY_DELAY = sql`make_interval(secs => (array[${sql.raw(
  RETRY_BACKOFF_SECONDS.join(', '),
)}])[least(failures + 1, ${RETRY_BACKOFF_SECONDS.length})])`;

/**
 * Record a failed attempt. A window that was loaded before keeps its rows and its `loaded` status
 * when a re-load fails (nothing of the failed attempt committed); the error is kept for `status`.
 * `jobSpent`: the attempt was its job's last (the queue retries it no more): the window's count of
 * failed jobs in a row (`failures`) grows and sets when a pass may plan it again
 * (retryDelaySeconds). An attempt whose job the queue retries leaves both as they are: the job's
 * own retries come first, the planner's backoff after them.
 */
export async function failWindow(
  db: EtlDb,
  ref: WindowRef,
  claim: string,
  error: { code: string; message: string },
  options: { jobSpent?: boolean } = {},
): Promise<void> {
  const spent = options.jobSpent ?? true;
  await db
    .updateTable('etl.windows')
    .set({
      status: sql`case when status_before_claim in ('loaded', 'no_data') then status_before_claim else 'failed' end`,
      last_error_code: error.code,
      last_error_message: error.message.slice(0, 2000),
      failures: spent ? sql`failures + 1` : sql`failures`,
      failed_at: sql`now()`,
      retry_after: spent ? sql`now() + ${NEXT_RETRY_DELAY}` : sql`retry_after`,
      claim: null,
      updated_at: sql`now()`,
    })
    .where(isWindow(ref))
    .where('status', '=', 'running')
    .where('claim', '=', claim)
    .execute();
}

/** Give back a window this attempt claimed and did not finish (interrupted): it returns to what it was. */
export async function releaseClaim(db: EtlDb, ref: WindowRef, claim: string): Promise<void> {
  await db
    .updateTable('etl.windows')
    .set({ status: FALL_BACK_STATUS, claim: null, updated_at: sql`now()` })
    .where(isWindow(ref))
    .where('status', '=', 'running')
    .where('claim', '=', claim)
    .execute();
}

/** A selection of windows (`cybs-etl windows`): every given filter applies. */
export interface WindowSelection {
  pipelines?: readonly string[];
  organizationId?: string;
  /** Completeness states (src/state/completeness.ts): a pending row is `not_ready` or `gap`. */
  states?: readonly string[];
  /** Windows whose first local day (the key's date) is on or after `from`, on or before `to`. */
  from?: string;
  to?: string;
  windowKey?: string;
}

/** The condition of a selection over etl.windows. */
function inSelection(selection: WindowSelection) {
  return (eb: ExpressionBuilder<Database, 'etl.windows'>) => {
    const all = [];
    if (selection.pipelines?.length) all.push(eb('pipeline', 'in', [...selection.pipelines]));
    if (selection.organizationId) all.push(eb('organization_id', '=', selection.organizationId));
    if (selection.windowKey) all.push(eb('window_key', '=', selection.windowKey));
    const day = sql<string>`left(window_key, 10)`;
    if (selection.from) all.push(eb(day, '>=', selection.from));
    if (selection.to) all.push(eb(day, '<=', selection.to));
    if (selection.states?.length) {
      const states = selection.states;
      const notReady = eb.and([eb('status', '=', 'pending'), eb('last_error_code', '=', 'NOT_READY')]);
      const gap = eb.and([
        eb('status', '=', 'pending'),
        eb(sql<string>`coalesce(last_error_code, '')`, '<>', 'NOT_READY'),
      ]);
      const plain = states.filter(
        (s): s is WindowStatus => s !== 'not_ready' && s !== 'gap' && s !== 'pending',
      );
      all.push(
        eb.or([
          ...(plain.length > 0 ? [eb('status', 'in', plain)] : []),
          ...(states.includes('not_ready') ? [notReady] : []),
          ...(states.includes('gap') ? [gap] : []),
          ...(states.includes('pending') ? [eb('status', '=', 'pending')] : []),
        ]),
      );
    }
    return eb.and(all);
  };
}

/** The windows of a selection, in time order per pipeline and organization. */
export async function selectWindows(db: EtlDb, selection: WindowSelection): Promise<WindowRow[]> {
  const rows = await db
    .selectFrom('etl.windows')
    .selectAll()
    .where(inSelection(selection))
    .orderBy('pipeline')
    .orderBy('organization_id')
    .orderBy('window_start')
    .execute();
  return rows.map(toWindowRow);
}

/**
 * Make the failed windows of a selection due for the next pass at once (`windows retry`): their
 * backoff is cleared; their attempts and last error stay until they load.
 */
export async function markForRetry(db: EtlDb, selection: WindowSelection): Promise<number> {
  const r = await db
    .updateTable('etl.windows')
    .set({ failures: 0, retry_after: null, updated_at: sql`now()` })
    .where(inSelection({ ...selection, states: ['failed'] }))
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/**
 * Forget what is known of the windows of a selection (`windows reset`): they become pending, never
 * attempted, with no fingerprint, so the next run (or a backfill of their range) loads them again
 * from the source. Their rows in cybs.* stay until that load replaces them. A window being loaded
 * (running) is left alone.
 */
export async function resetWindows(db: EtlDb, selection: WindowSelection): Promise<number> {
  const r = await db
    .updateTable('etl.windows')
    .set({
      status: 'pending',
      status_before_claim: null,
      attempts: 0,
      failures: 0,
      failed_at: null,
      retry_after: null,
      last_error_code: null,
      last_error_message: null,
      not_ready_since: null,
      fingerprint: null,
      updated_at: sql`now()`,
    })
    .where(inSelection(selection))
    .where('status', '<>', 'running')
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}
