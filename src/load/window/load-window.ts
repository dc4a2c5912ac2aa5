import { CybsError } from '../../errors.js';
import { toLoadError } from '../../warehouse/database-errors.js';
import type { Db, Warehouse, WarehouseSession } from '../../warehouse/warehouse.js';
import { deferIndexesOfEmptyTables, tableColumnsJson, tableColumnsOf, validateTableDecl } from '../ddl.js';
import type { TableDecl } from '../table-spec.js';
import type { WindowContext } from './context.js';
import { loadLive } from './live-copy.js';
import { loadTarget } from './load-target.js';
import { deleteItemsLeftBehind } from './merge.js';
import { buildDeferredIndexes } from './prepare-target.js';
import { RejectWriter, checkRejects, deleteWindowRejects } from './rejects.js';
import { confirmUnchanged, loadedState, unchangedSince } from './reload-check.js';
import type { SourceRows } from './reload-check.js';
import { takeSourceKeys } from './source-keys.js';
import { restoreTouched } from './touched-reload.js';
import { DEFAULT_REJECT_THRESHOLD } from './types.js';
import type { LoadWindowOptions, LoadWindowResult, TableLoadResult } from './types.js';
import { sql } from 'kysely';

/**
 * Exactly-once load of one window into one or more cybs.* tables, in ONE transaction on one
 * session:
 *
 *   advisory lock (pipeline, organization, window) → [a re-load of the very sources the window's
 *   last load read, into tables that still hold what it left (`state`, unchangedSince): the
 *   window's state only → COMMIT; or that hold it but for a few rows touched since: those rows
 *   read again from the file and merged (restoreTouched) → COMMIT] → delete the window's
 *   previous rejects →
 *   for each target: create the table / add columns (recorded in etl.schema_changes) →
 *   a first load (the table has no rows of the source yet) on PostgreSQL: one COPY straight into
 *   the table, lineage values appended, in a savepoint (a key already there or twice: rolled
 *   back, and on as a re-load) — otherwise:
 *   COPY into a TEMP staging table typed like the target →
 *   one INSERT … SELECT … ON CONFLICT … DO UPDATE … WHERE … IS DISTINCT FROM … (DISTINCT ON the
 *   key only when the source holds a key twice) → DELETE the source's rows that vanished (when it
 *   owns more rows than it staged) → reject threshold → [what the load left, `state`] →
 *   what the caller writes in the same transaction (the window's state) → COMMIT.
 *
 * Ownership: a row belongs to the source that last wrote it (`_source`). A source that shares a
 * natural key with an earlier one takes the row over; deleting vanished rows only touches rows
 * whose `_source` is the source being loaded, so re-loading day 1 never deletes a row that day 2
 * now owns. Columns of the table that a source does not carry are left as they are on update
 * (NULL on insert).
 *
 * Type drift: when a source column's declared type belongs to another family than the existing
 * table column's (a `numeric` column now fed from a `text` header), each value is checked in
 * JavaScript against the column's type before COPY; a value that does not fit rejects its record
 * (`LOAD_TYPE_MISMATCH`). Columns are never retyped. Values of matching types are trusted (the
 * parser typed them); if PostgreSQL still refuses one, the window fails with `LOAD_COPY_REJECTED`
 * naming the table, column and record.
 */

/** One window's load transaction: the session it runs on and the transaction itself. */
export interface WindowTransaction {
  session: WarehouseSession;
  trx: Db;
}

/**
 * Run `work` in one transaction on one session, committed when it resolves: a window's load
 * (loadWindowIn) and what its caller records with it (the window's state, the queue's job) commit
 * together or not at all. A failure is thrown as a CybsError (toLoadError), nothing of it committed.
 */
export async function inWindowTransaction<T>(
  warehouse: Warehouse,
  options: Pick<LoadWindowOptions, 'window' | 'logger'>,
  work: (tx: WindowTransaction) => Promise<T>,
): Promise<T> {
  try {
    return await warehouse.session((session) =>
      session.db.transaction().execute((trx: Db) => work({ session, trx })),
    );
  } catch (error) {
    const loadError = toLoadError(error, { ...options.window });
    const log = options.logger?.child({ ...options.window });
    // A fetch that failed inside the load (an on-demand window, LoadWindowOptions.live) is the
    // caller's to report; the rollback itself is then only a detail.
    if (loadError.stage === 'load')
      log?.warn({ err: loadError, code: loadError.code }, 'window load rolled back');
    else log?.debug({ code: loadError.code, stage: loadError.stage }, 'window load rolled back');
    throw loadError;
  }
}

/** Load one window into its target tables in a transaction of its own (inWindowTransaction). */
export function loadWindow(warehouse: Warehouse, options: LoadWindowOptions): Promise<LoadWindowResult> {
  return inWindowTransaction(warehouse, options, (tx) => loadWindowIn(tx, options));
}

/**
 * Load one window into its target tables inside `tx`, which the caller commits (inWindowTransaction).
 * Throws when the window fails; the caller's transaction must then roll back.
 */
export async function loadWindowIn(
  tx: WindowTransaction,
  options: LoadWindowOptions,
): Promise<LoadWindowResult> {
  validateOptions(options);
  const { session, trx } = tx;
  const log = options.logger?.child({
    pipeline: options.window.pipeline,
    organizationId: options.window.organizationId,
    windowKey: options.window.windowKey,
  });
  const { pipeline, organizationId, windowKey } = options.window;
  const lockKey = JSON.stringify(['cybs-etl:window', pipeline, organizationId, windowKey]);
  // The window's lock, and in the same statement its tables' columns (evolveSchema).
  const decls = (options.live ? options.live.tables : options.targets).map((t) => t.table);
  const locked = await sql<{ columns: unknown }>`
    select pg_advisory_xact_lock(hashtextextended(${lockKey}, 0))::text as locked,
           ${tableColumnsJson(decls)} as columns`.execute(trx);
  const atStart = tableColumnsOf(decls, locked.rows[0]!.columns);
  const previous = options.state?.previous;
  // An unchanged re-load keeps the window's rejects; any other load replaces them, so they go in
  // the first statement after the lock, with the snapshot the window's state needs.
  const mayBeUnchanged = options.state?.skipIfUnchanged === true && previous !== undefined && !options.live;
  const taken = await takeSourceKeys(
    trx,
    organizationId,
    options.live ? [options.live.source] : options.targets.map((t) => t.source.source),
    {
      ...(mayBeUnchanged ? {} : { deleteRejectsOf: options.window }),
      snapshot: options.state !== undefined,
    },
  );
  const ctx: WindowContext = {
    options,
    session,
    rejects: new RejectWriter(session, options),
    rowsLoaded: 0,
    abort: undefined,
    writers: new Set(),
    snapshot: '',
    sourceKeys: taken.keys,
    newSources: taken.added,
    loadedAtNow: atStart.loadedAtNow,
    deferredIndexes: new Map(),
    tableColumns: atStart.columns,
    stagingMade: new Set(),
  };
  if (taken.snapshot) {
    ctx.snapshot = taken.snapshot.s;
    ctx.xid = BigInt(taken.snapshot.x);
  }
  if (mayBeUnchanged) {
    const counts: SourceRows[] = [];
    if (await unchangedSince(ctx, trx, options.targets, previous, counts)) {
      return confirmUnchanged(ctx, trx, options.targets, previous);
    }
    const restored = await restoreTouched(ctx, trx, options.targets, previous, counts);
    if (restored) return restored;
    await deleteWindowRejects(trx, options.window);
  }
  // Tables that existed with no page counted, all of them: their indexes are built after their first
  // rows, when they hold none and no one else uses them. Not for a load fetching its pages inside
  // this transaction: holding the tables, it would wait for the service, and for connections or
  // pages that loads waiting for those tables may hold.
  if (!options.live && decls.every((d) => atStart.noPages.has(`${d.schema}.${d.name}`))) {
    const deferred = await deferIndexesOfEmptyTables(trx, decls);
    for (const [table, statements] of deferred ?? []) ctx.deferredIndexes.set(table, statements);
  }
  const tables: TableLoadResult[] = [];
  /** The table and source of each of `tables`. */
  const loaded: { decl: TableDecl; source: string }[] = [];
  let targets = options.fullTargets ? await options.fullTargets() : options.targets;
  if (options.live) {
    const live = options.live;
    const loadedLive = await loadLive(ctx, trx, live);
    if (Array.isArray(loadedLive)) {
      for (const tableResult of loadedLive) log?.debug({ ...tableResult }, 'table merged');
      tables.push(...loadedLive);
      loaded.push(...live.tables.map((t) => ({ decl: t.table, source: live.source })));
      targets = [];
    } else {
      targets = loadedLive();
    }
  }
  for (const [index, target] of targets.entries()) {
    const tableResult = await loadTarget(ctx, trx, target, index);
    tableResult.deleted += await deleteItemsLeftBehind(trx, target, targets, options);
    tables.push(tableResult);
    loaded.push({ decl: target.table, source: target.source.source });
    log?.debug({ ...tableResult }, 'table merged');
  }
  await ctx.rejects.flush();
  checkRejects(ctx, true);
  await buildDeferredIndexes(ctx, trx);
  const result: LoadWindowResult = {
    tables,
    rowsLoaded: ctx.rowsLoaded,
    rowsRejected: ctx.rejects.count,
  };
  if (options.state) {
    const state = await loadedState(ctx, trx, tables, loaded);
    if (state) result.state = state;
  }
  log?.debug(
    { rowsLoaded: result.rowsLoaded, rowsRejected: result.rowsRejected, tables: result.tables },
    'window loaded',
  );
  return result;
}

export function validateOptions(options: LoadWindowOptions): void {
  const threshold = options.rejectThreshold ?? DEFAULT_REJECT_THRESHOLD;
  if (!(threshold >= 0 && threshold <= 1)) {
    throw new CybsError(
      'LOAD_INVALID_OPTIONS',
      `rejectThreshold must be between 0 and 1, not ${threshold}.`,
      {
        stage: 'load',
      },
    );
  }
  if (options.maxRejects !== undefined && !(options.maxRejects >= 0)) {
    throw new CybsError('LOAD_INVALID_OPTIONS', `maxRejects must be 0 or more, not ${options.maxRejects}.`, {
      stage: 'load',
    });
  }
  const tables = options.live ? options.live.tables : options.targets;
  if (tables.length === 0) {
    throw new CybsError('LOAD_INVALID_OPTIONS', 'A window load needs at least one target table.', {
      stage: 'load',
    });
  }
  const names = tables.map((t) => `${t.table.schema}.${t.table.name}`);
  if (new Set(names).size !== names.length) {
    throw new CybsError(
      'LOAD_INVALID_OPTIONS',
      `A table appears twice in one window load: ${names.join(', ')}.`,
      {
        stage: 'load',
      },
    );
  }
  for (const target of tables) validateTableDecl(target.table);
}

export type {
  LiveFeed,
  LiveLines,
  LiveLoad,
  LoadedState,
  LoadWindowOptions,
  LoadWindowResult,
  LoadWindowTarget,
  TableLoadResult,
} from './types.js';
export { DEFAULT_REJECT_THRESHOLD } from './types.js';
export { tablesUnchangedSinceLoad } from './reload-check.js';
