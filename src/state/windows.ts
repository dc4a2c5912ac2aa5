import { sql } from 'kysely';
import type { ExpressionBuilder, Selectable } from 'kysely';
import { CybsError } from '../errors.js';
import type { Database, EtlDb, WindowsTable } from '../warehouse/database.js';

/**
 * The advisory-lock space of lease owners: a process holds (LEASE_LOCK_SPACE, hashtext(owner)) on
 * its own connection while it runs (Warehouse.holdAdvisoryLock), so a lease whose owner no longer
 * holds that lock belongs to a process that is gone (killed, crashed, its server connection lost).
 */
export const LEASE_LOCK_SPACE = 0x63796273;

/** True for the `etl.windows` row under consideration when its lease owner's lock is held by nobody. */
const HOLDER_GONE = sql<boolean>`not exists (
  select 1 from pg_catalog.pg_locks l
   where l.locktype = 'advisory' and l.granted and l.objsubid = 2
     and l.classid = ${LEASE_LOCK_SPACE}::int4::oid and l.objid = hashtext(windows.lease_owner)::oid)`;

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
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  loadedAt: Date | null;
  updatedAt: Date;
  /** What the last load read and left (src/pipeline/fingerprint.ts), as stored; null when none. */
  fingerprint: unknown;
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

function toWindowRow(r: Selectable<WindowsTable>): WindowRow {
  return {
    id: Number(r.id),
    pipeline: r.pipeline,
    organizationId: r.organization_id,
    windowKey: r.window_key,
    start: new Date(r.window_start),
    end: new Date(r.window_end),
    status: r.status,
    attempts: Number(r.attempts),
    rowsLoaded: Number(r.rows_loaded),
    rowsRejected: Number(r.rows_rejected),
    sourceRef: r.source_ref,
    lastErrorCode: r.last_error_code,
    lastErrorMessage: r.last_error_message,
    notReadySince: r.not_ready_since ? new Date(r.not_ready_since) : null,
    leaseOwner: r.lease_owner,
    leaseExpiresAt: r.lease_expires_at ? new Date(r.lease_expires_at) : null,
    loadedAt: r.loaded_at ? new Date(r.loaded_at) : null,
    updatedAt: new Date(r.updated_at),
    fingerprint: r.fingerprint ?? null,
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
  owner: string;
  leaseSeconds: number;
  runId: number | null;
  /** Statuses that may be (re)claimed; a `running` window is claimable only once its lease expired. */
  claimable: readonly WindowStatus[];
}

/**
 * Claim a window with a lease, atomically: only one process gets it. A window in `running` is
 * claimable again once its loader is gone (its lease lock is released: the process was killed or
 * crashed) or its lease expired. Returns undefined when a live process holds it or its status is
 * not claimable.
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
      lease_owner: options.owner,
      lease_expires_at: sql`now() + make_interval(secs => ${options.leaseSeconds})`,
      attempts: sql`attempts + 1`,
      run_id: options.runId,
      updated_at: sql`now()`,
    })
    .where(isWindow(ref))
    .where((eb) =>
      eb.or([
        eb('status', 'in', [...options.claimable.filter((s) => s !== 'running')]),
        eb.and([
          eb('status', '=', 'running'),
          eb.or([eb('lease_expires_at', '<', sql<Date>`now()`), eb(HOLDER_GONE, '=', sql<boolean>`true`)]),
        ]),
      ]),
    )
    .returningAll()
    .executeTakeFirst();
  return row ? toWindowRow(row) : undefined;
}

/** Extend the lease of a window this owner holds; false when the lease was lost. */
export async function renewLease(
  db: EtlDb,
  ref: WindowRef,
  owner: string,
  leaseSeconds: number,
): Promise<boolean> {
  const r = await db
    .updateTable('etl.windows')
    .set({ lease_expires_at: sql`now() + make_interval(secs => ${leaseSeconds})` })
    .where(isWindow(ref))
    .where('status', '=', 'running')
    .where('lease_owner', '=', owner)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
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
 * state commits with its rows. Only the lease owner may complete it: a loader whose window was
 * taken over (its lease lost) gets an error, and its transaction rolls back with its rows.
 */
export async function completeWindow(
  db: EtlDb,
  ref: WindowRef,
  owner: string,
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
      lease_owner: null,
      lease_expires_at: null,
      loaded_at: sql`now()`,
      updated_at: sql`now()`,
    })
    .where(isWindow(ref))
    .where('lease_owner', '=', owner)
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) === 0) {
    throw new CybsError(
      'LEASE_LOST',
      `Window ${ref.pipeline} ${ref.organizationId} ${ref.windowKey} is no longer leased to this process (another process took it over); its load was rolled back.`,
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
  owner: string,
  message: string,
): Promise<void> {
  await db
    .updateTable('etl.windows')
    .set({
      status: sql`case when status_before_claim in ('loaded', 'no_data') then status_before_claim else 'pending' end`,
      last_error_code: 'NOT_READY',
      last_error_message: message,
      not_ready_since: sql`coalesce(not_ready_since, now())`,
      lease_owner: null,
      lease_expires_at: null,
      updated_at: sql`now()`,
    })
    .where(isWindow(ref))
    .where('lease_owner', '=', owner)
    .execute();
}

/**
 * Record a failure. A window that was loaded before keeps its rows and its `loaded` status when a
 * re-load fails (nothing of the failed attempt committed); the error is kept for `status`.
 */
export async function failWindow(
  db: EtlDb,
  ref: WindowRef,
  owner: string,
  error: { code: string; message: string },
): Promise<void> {
  await db
    .updateTable('etl.windows')
    .set({
      status: sql`case when status_before_claim in ('loaded', 'no_data') then status_before_claim else 'failed' end`,
      last_error_code: error.code,
      last_error_message: error.message.slice(0, 2000),
      lease_owner: null,
      lease_expires_at: null,
      updated_at: sql`now()`,
    })
    .where(isWindow(ref))
    .where('lease_owner', '=', owner)
    .execute();
}

/** Give back every lease this owner holds (shutdown): windows return to pending. */
export async function releaseLeases(db: EtlDb, owner: string): Promise<number> {
  const r = await db
    .updateTable('etl.windows')
    .set({
      status: FALL_BACK_STATUS,
      lease_owner: null,
      lease_expires_at: null,
      updated_at: sql`now()`,
    })
    .where('status', '=', 'running')
    .where('lease_owner', '=', owner)
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}
