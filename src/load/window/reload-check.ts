/**
 * The unchanged re-load check: what a window's load left in its tables (LoadedState), and whether
 * they still hold exactly that, so a re-load of the same bytes need write nothing.
 */
import type { Db, Warehouse } from '../../warehouse/warehouse.js';
import { ensureTable, readTableColumns } from '../ddl.js';
import type { ExistingColumn } from '../ddl.js';
import type { TableDecl } from '../table-spec.js';
import type { WindowContext } from './context.js';
import { checkRejects, countWindowRejects, restampWindowRejects } from './rejects.js';
import { ofSource } from './source-keys.js';
import type {
  LoadWindowOptions,
  LoadWindowResult,
  LoadWindowTarget,
  LoadedState,
  TableLoadResult,
} from './types.js';
import { sql } from 'kysely';

export const XID_EPOCH = 1n << 32n;

/** A row's writer is known by 32 bits (`xmin`): ids are told apart only while less than 2^31 apart. */
export const XID_HORIZON = 1n << 31n;

/**
 * Whether the window's tables still hold exactly what its last load left (`previous`), and the
 * reject threshold passes as the load would check it (see tablesUnchangedSinceLoadIn). Otherwise
 * false, having written nothing.
 */
export async function unchangedSince(
  ctx: WindowContext,
  trx: Db,
  targets: readonly LoadWindowTarget[],
  previous: LoadedState,
  counts?: SourceRows[],
): Promise<boolean> {
  const tables = targets.map((t) => ({ table: t.table, source: t.source.source }));
  if (!(await tablesUnchangedSinceLoadIn(trx, ctx.options.window, tables, previous, counts))) return false;
  ctx.rowsLoaded = previous.tables.reduce((n, t) => n + t.owned, 0);
  ctx.rejects.count = previous.rejected;
  try {
    checkRejects(ctx, true);
  } catch {
    // The load itself fails the window, naming its first rejects.
    ctx.rowsLoaded = 0;
    ctx.rejects.count = 0;
    return false;
  }
  return true;
}

/**
 * Whether the tables hold what the window's last load left (tablesUnchangedSinceLoadIn), or, with
 * `touched`, hold it but for a few rows changed since (fewTouched: a re-load of the same file then
 * reads only those again, restoreTouched), read in a transaction of its own: a hint, while the
 * window's file downloads, that a re-load of the same file cannot be served without reading it
 * whole (then it need not wait for the download's end). The load decides in its own.
 */
export async function tablesUnchangedSinceLoad(
  warehouse: Warehouse,
  window: LoadWindowOptions['window'],
  tables: readonly { table: TableDecl; source: string }[],
  previous: LoadedState,
  touched = false,
): Promise<boolean> {
  return warehouse.session((session) =>
    session.db.transaction().execute(async (trx) => {
      const counts: SourceRows[] = [];
      if (await tablesUnchangedSinceLoadIn(trx, window, tables, previous, touched ? counts : undefined))
        return true;
      return touched && fewTouched(previous, counts);
    }),
  );
}

/**
 * The most rows of a source that may differ from what the last load left for a re-load of the
 * same file to read them again one by one (restoreTouched): a share of the source's rows, and at
 * least a few.
 */
export const MAX_TOUCHED_SHARE = 0.02;
export const MIN_TOUCHED_LIMIT = 64;

/**
 * Whether every table holds the rows of its source that the last load left but for a few
 * (MAX_TOUCHED_SHARE) written by others or gone since, and the file held no key twice (`counts`,
 * from tablesUnchangedSinceLoadIn).
 */
export function fewTouched(previous: LoadedState, counts: readonly SourceRows[]): boolean {
  if (counts.length === 0 || counts.length !== previous.tables.length) return false;
  return counts.every((count, index) => {
    const { owned, staged } = previous.tables[index]!;
    const limit = Math.max(MIN_TOUCHED_LIMIT, Math.floor(owned * MAX_TOUCHED_SHARE));
    const lost = owned - count.owned;
    return staged === owned && lost >= 0 && lost + count.other <= limit;
  });
}

/**
 * The same targets as `previous`'s, the same columns, the window's rejects still there, and for
 * each table as many rows of the source as that load left, every one of them written by one of
 * its writers. A row changed, added or removed by anything else since (another source taking it
 * over, a hand-made fix, a restore) carries another writer or changes the count. Then a load of
 * the very bytes that load read writes nothing either, and its result is `previous`'s.
 */
export async function tablesUnchangedSinceLoadIn(
  trx: Db,
  window: LoadWindowOptions['window'],
  tables: readonly { table: TableDecl; source: string }[],
  previous: LoadedState,
  counts?: SourceRows[],
): Promise<boolean> {
  if (previous.tables.length !== tables.length) return false;
  // Every committed id is below the snapshot's xmax; the writers must be less than 2^31 below it.
  const taken = await sql<{ x: string }>`select pg_snapshot_xmax(pg_current_snapshot())::text as x`.execute(
    trx,
  );
  const now = BigInt(taken.rows[0]!.x);
  for (const writer of previous.writers) {
    const age = now - BigInt(writer);
    if (age <= 0n || age >= XID_HORIZON) return false;
  }
  const writers = writersArray(previous);
  const { organizationId } = window;
  let same = true;
  if ((await countWindowRejects(trx, window)) !== previous.rejected) return false;
  for (const [index, { table: decl, source }] of tables.entries()) {
    const before = previous.tables[index]!;
    if (before.table !== `${decl.schema}.${decl.name}` || before.source !== source) return false;
    const columns = (await readTableColumns(trx, decl.schema, decl.name)) ?? [];
    if (columnList(columns).join('\n') !== before.columns.join('\n')) return false;
    const names = new Set(columns.map((c) => c.name));
    if (decl.columns.some((c) => !names.has(c.name))) return false;
    const notTheirs = sql`not (xmin = any(${writers}::xid[]))`;
    // With `counts`, the rows none of the writers wrote are listed in the same pass (restoreTable).
    const rows = await sql<{
      owned: string;
      other: string;
      at: string[] | null;
      lines: (string | null)[] | null;
    }>`
      select count(*) as owned, count(*) filter (where ${notTheirs}) as other
             ${counts ? sql`, array_agg(ctid::text) filter (where ${notTheirs}) as at, array_agg("_source_row"::text) filter (where ${notTheirs}) as lines` : sql``}
        from ${sql.id(decl.schema, decl.name)}
       where ${ofSource(organizationId, source)}`.execute(trx);
    const found = rows.rows[0]!;
    const owned = Number(found.owned);
    const other = Number(found.other);
    if (owned !== before.owned || other !== 0) {
      // With `counts`, every table is counted (for restoreTouched), else the first difference ends it.
      if (!counts) return false;
      same = false;
    }
    const at = found.at ?? [];
    counts?.push({ owned, other, touched: at.map((a, i) => ({ at: a, line: found.lines?.[i] ?? null })) });
  }
  return same;
}

/** What a table holds of the source, as tablesUnchangedSinceLoadIn counted it. */
export interface SourceRows {
  /** Rows of the source. */
  owned: number;
  /** Those of them that none of the last load's writers wrote (changed or added since). */
  other: number;
  /** Those rows: where each is (ctid) and its `_source_row`. */
  touched: { at: string; line: string | null }[];
}

/** The last load's writers as the 32-bit ids rows carry (`xmin`), an `xid[]` literal. */
function writersArray(previous: LoadedState): string {
  return `{${previous.writers.map((w) => String(BigInt(w) % XID_EPOCH)).join(',')}}`;
}

/**
 * The result of a load that found its tables holding what it would leave (unchangedSince): nothing
 * inserted, updated or deleted; the tables' DDL made sure of as any load does (an index dropped by
 * hand comes back); the window's rejects are this run's, as if written again.
 */
export async function confirmUnchanged(
  ctx: WindowContext,
  trx: Db,
  targets: readonly LoadWindowTarget[],
  previous: LoadedState,
): Promise<LoadWindowResult> {
  for (const { table } of targets) await ensureTable(trx, table);
  const { pipeline, organizationId, windowKey } = ctx.options.window;
  if (previous.rejected > 0) await restampWindowRejects(trx, ctx.options.window, ctx.options.runId);
  ctx.options.logger?.info(
    { pipeline, organizationId, windowKey, rows: previous.tables.reduce((n, t) => n + t.owned, 0) },
    "the same sources as the window's last load, and its rows untouched since: nothing to write",
  );
  return {
    tables: previous.tables.map((t) => ({
      table: t.table,
      inserted: 0,
      updated: 0,
      unchanged: t.owned,
      deleted: 0,
      rejected: t.rejected,
      staged: t.owned,
      duplicates: t.staged - t.owned,
      columnsAdded: [],
    })),
    rowsLoaded: ctx.rowsLoaded,
    rowsRejected: previous.rejected,
    state: previous,
    unchanged: true,
  };
}

/**
 * What this load leaves in its tables (LoadedState), or undefined when that cannot be told. The
 * writers of the sources' rows: this load's, and for a table where the load left rows as they
 * were, the writers those rows carry, taken only when they had committed before the load began
 * (`ctx.snapshot`): the load compared those rows with the source, while a row written since by a
 * transaction running beside the load may not have been compared (then no state is kept). After
 * a restore (`restored`), the last load's writers and those of the rows it read again and left.
 */
export async function loadedState(
  ctx: WindowContext,
  trx: Db,
  tables: readonly TableLoadResult[],
  loaded: readonly { decl: TableDecl; source: string }[],
  restored?: RestoredRows,
): Promise<LoadedState | undefined> {
  // This transaction's id; its subtransactions' ids come after it, every other writer's before.
  const top = ctx.xid ?? (await currentXid(trx));
  const base = top - (top % XID_EPOCH);
  const ours = (low: string): bigint => base + BigInt(low) + (base + BigInt(low) < top ? XID_EPOCH : 0n);
  const earlier = (low: string): bigint => base + BigInt(low) - (base + BigInt(low) > top ? XID_EPOCH : 0n);
  const writers = new Set([
    ...(restored?.previous.writers ?? []),
    ...[...ctx.writers].map((w) => String(ours(w))),
  ]);
  const state: LoadedState = { tables: [], rejected: ctx.rejects.count, writers: [] };
  for (const [index, t] of tables.entries()) {
    const { decl, source } = loaded[index]!;
    const owned = t.staged;
    if (t.inserted + t.updated < owned) {
      const at = restored?.touchedAt[index];
      const found =
        at === undefined
          ? await sql<{ x: string }>`
              select xmin::text as x from ${sql.id(decl.schema, decl.name)}
               where ${ofSource(ctx.options.window.organizationId, source)}
               group by xmin`.execute(trx)
          : at.length === 0
            ? { rows: [] }
            : await sql<{ x: string }>`
                select xmin::text as x from ${sql.id(decl.schema, decl.name)}
                 where ctid = any(${`{${at.map((c) => `"${c}"`).join(',')}}`}::tid[])
                 group by xmin`.execute(trx);
      const others = found.rows.map((r) => r.x).filter((x) => !ctx.writers.has(x));
      if (others.length > 0) {
        const candidates = `{${others.map((x) => String(earlier(x))).join(',')}}`;
        const visible = await sql<{ w: string; before: boolean }>`
          select w::text as w, pg_visible_in_snapshot(w, ${ctx.snapshot}::pg_snapshot) as before
            from unnest(${candidates}::xid8[]) as w`.execute(trx);
        if (visible.rows.some((r) => !r.before)) return undefined;
        for (const r of visible.rows) writers.add(r.w);
      }
    }
    const columns =
      ctx.tableColumns.get(t.table) ?? (await readTableColumns(trx, decl.schema, decl.name)) ?? [];
    state.tables.push({
      table: t.table,
      source,
      columns: columnList(columns),
      owned,
      staged: t.staged + t.duplicates,
      rejected: t.rejected,
    });
  }
  state.writers = [...writers];
  return state;
}

/**
 * What a restore of touched rows (restoreTouched) knows of the rows it leaves: each row of a
 * source that it did not read again is as the last load left it, written by one of
 * `previous.writers` (the restore counted them so), and the rows it read again and left as they
 * were are still where it found them (`touchedAt`, per table: their ctids; a row it rewrote has
 * moved, and is its own). So only those rows' writers are read, not every row's.
 */
export interface RestoredRows {
  previous: LoadedState;
  touchedAt: readonly (readonly string[])[];
}

/** A table's columns as LoadedState keeps them (`name type`), for the load and the check alike. */
export function columnList(columns: readonly ExistingColumn[]): string[] {
  return columns.map((c) => `${c.name} ${c.type}`);
}

/** This transaction's id (xid8), assigned if it had none. */
export async function currentXid(trx: Db): Promise<bigint> {
  const result = await sql<{ x: string }>`select pg_current_xact_id()::text as x`.execute(trx);
  return BigInt(result.rows[0]!.x);
}
