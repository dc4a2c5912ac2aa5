import { sql } from 'kysely';
import type { RawBuilder } from 'kysely';
import { CybsError, errorMessage } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import { encoderFor, escapeCopyText, escapeCopyTextLossy, typeFamily } from '../copy-text/cell-encoders.js';
import type { CellEncoder } from '../copy-text/cell-encoders.js';
import {
  KEY_LINEAGE_COLUMNS,
  addColumnDdl,
  assertIdentifier,
  assertSafePgType,
  commentOnColumnDdl,
  ensureTable,
  lockTableDdl,
  naturalKeyIndexColumns,
  quoteIdent,
  readTableColumns,
  validateTableDecl,
} from './ddl.js';
import type { ExistingColumn } from './ddl.js';
import { PG_TYPES } from '../catalog/index.js';
import type { PgType } from '../catalog/index.js';
import type { LoadValue, RawCopyTextBody, RawCsvBody, RawCsvChecks } from '../copy-text/bodies.js';
import { isFastPathRefusal, isSourceFailure, refuseFastPath } from '../copy-text/fast-path-refusal.js';
import { RAW_CSV_COPY_OPTIONS, copyTextField } from '../parse/csv/raw-csv-report.js';
import { LineMap } from './line-map.js';
import { LOAD_ERROR_CODES, toLoadError } from '../warehouse/database-errors.js';
import { assertRawTextCopyable, copyRawText, copyRawTextLines } from './raw-text-copy.js';
import { LINEAGE_COLUMNS } from './table-spec.js';
import type { ColumnDecl, LoadBatch, LoadSource, SourceColumn, TableDecl } from './table-spec.js';
import type { Db, Warehouse, WarehouseSession } from '../warehouse/warehouse.js';

/**
 * Exactly-once load of one window into one or more cybs.* tables, in ONE transaction on one
 * session:
 *
 *   advisory lock (pipeline, organization, window) → [a re-load of the very sources the window's
 *   last load read, into tables that still hold what it left (`state`, unchangedSince): the
 *   window's state only → COMMIT] → delete the window's previous rejects →
 *   for each target: create the table / add columns (recorded in etl.schema_changes) →
 *   a first load (the table has no rows of the source yet) on PostgreSQL: one COPY straight into
 *   the table, lineage values appended, in a savepoint (a key already there or twice: rolled
 *   back, and on as a re-load) — otherwise:
 *   COPY into a TEMP staging table typed like the target →
 *   one INSERT … SELECT … ON CONFLICT … DO UPDATE … WHERE … IS DISTINCT FROM … (DISTINCT ON the
 *   key only when the source holds a key twice) → DELETE the source's rows that vanished (when it
 *   owns more rows than it staged) → reject threshold → [what the load left, `state`] →
 *   beforeCommit → COMMIT.
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

export interface LoadWindowTarget {
  table: TableDecl;
  source: LoadSource;
}

export interface LoadWindowOptions {
  window: { pipeline: string; organizationId: string; windowKey: string };
  /** One or more tables, all committed together. Each table appears at most once. */
  targets: LoadWindowTarget[];
  runId: number | null;
  /** Fraction of the window's records (loaded + rejected) that may be rejected; default 0.01. */
  rejectThreshold?: number;
  /** Absolute cap on rejected records; the load stops as soon as it is exceeded. */
  maxRejects?: number;
  /**
   * Data that arrives page by page (an on-demand window): fetched inside the load transaction and,
   * on a first load, copied into the tables while the next page is fetched (see LiveLoad). The
   * window's targets are then the ones `live.produce` returns, and `targets` is ignored.
   */
  live?: LiveLoad;
  /**
   * Keep what this load leaves in its tables (LoadWindowResult.state), for recognising a re-load
   * that would change nothing. `previous` is what the window's last load left; with
   * `skipIfUnchanged` (the caller knows the sources are the very bytes that load read) and tables
   * that still hold exactly what it left (unchangedSince), nothing is read or written but the
   * window's state: the result is the one the load would have had.
   */
  state?: { previous?: LoadedState | undefined; skipIfUnchanged: boolean };
  /**
   * A source column the table lacks: `evolve` (default) adds it; `freeze` fails the window with
   * LOAD_SCHEMA_FROZEN naming the columns (the pipeline's `schemaChanges`).
   */
  schemaChanges?: 'evolve' | 'freeze';
  /** Runs in the load transaction after the data is merged (the caller writes etl.windows here). */
  beforeCommit?: (trx: Db, result: LoadWindowResult) => Promise<void>;
  logger?: Logger;
}

/**
 * A window whose records arrive in pages, each encoded as COPY text per table by the caller
 * (src/pipeline/copy-text-spool.ts), which also keeps every page (the complete sources).
 */
export interface LiveLoad {
  /** The tables, each with the columns of its lines (then `_source_row`) and their feed. */
  tables: { table: TableDecl; columns: SourceColumn[]; feed: LiveFeed }[];
  /** The lineage source of the window (the same for every table). */
  source: string;
  /**
   * Fetch the window, calling `pageDone` after each page's lines are written (their feeds may then
   * be taken; it throws when the load has failed, which must end the fetch). Resolves with the
   * window's complete targets, in `tables` order (a function: the loader may need them twice,
   * when it falls back to loading them from the start).
   */
  produce(pageDone: () => void): Promise<() => LoadWindowTarget[]>;
}

/** The lines a table's pages gave since the previous take. */
export interface LiveFeed {
  /**
   * Undefined once the lines are no longer in the declared columns' order (then the load stops
   * copying).
   */
  take(): LiveLines | undefined;
}

export interface LiveLines {
  lines: number;
  /** The lines' bytes (whole lines). */
  chunks: () => AsyncIterable<Uint8Array>;
}

export interface TableLoadResult {
  /** `schema.name` */
  table: string;
  inserted: number;
  updated: number;
  unchanged: number;
  deleted: number;
  rejected: number;
  /** Records loaded into this table: one per natural key of the source (duplicates are rejects). */
  staged: number;
  /**
   * Records of the source whose natural key a later record of it repeats: each is a reject
   * (LOAD_DUPLICATE_KEY, counted in `rejected`), the later record is the one loaded.
   */
  duplicates: number;
  columnsAdded: string[];
}

export interface LoadWindowResult {
  tables: TableLoadResult[];
  /** Records accepted into the tables (staged), over all targets. */
  rowsLoaded: number;
  /** Records written to etl.rejects (parser rejects and loader rejects). */
  rowsRejected: number;
  /**
   * With LoadWindowOptions.state: what the load left in its tables (none when rows written beside
   * the load make that uncertain).
   */
  state?: LoadedState;
  /** True when the tables held exactly what this load would leave, so it wrote nothing (see `state`). */
  unchanged?: boolean;
}

/**
 * What a window's load left in its tables, to tell later that they still hold exactly that: a
 * re-load of the same bytes would then write nothing (unchangedSince).
 */
export interface LoadedState {
  tables: {
    /** `schema.name` */
    table: string;
    source: string;
    /** The table's columns after the load, `name type` in order. */
    columns: string[];
    /** Rows of the table whose `_source` is the source (after the load). */
    owned: number;
    /** Records staged for the table, duplicates of a key included. */
    staged: number;
    rejected: number;
  }[];
  /** The window's rows in etl.rejects. */
  rejected: number;
  /**
   * The transactions and subtransactions (xid8, in decimal) whose writes the sources' rows are,
   * as the load left them: every row version carries its writer's id (`xmin`), so a row written
   * or changed by anything since carries another. A re-load that leaves a row as it was keeps
   * that row's earlier writer.
   */
  writers: string[];
}

export const DEFAULT_REJECT_THRESHOLD = 0.01;

/** Size of one COPY chunk, in UTF-16 code units (about a megabyte). */
const CHUNK_CHARS = 1 << 20;
/**
 * A COPY segment also ends when its line → record map holds this many runs (record numbers that
 * jump, e.g. line numbers of multi-line CSV records), which keeps that map bounded.
 */
const MAX_LINE_MAP_RUNS = 50_000;
/** Rejects are buffered up to this many (or REJECT_FLUSH_CHARS) before being copied to etl.rejects. */
const REJECT_FLUSH_COUNT = 2000;
const REJECT_FLUSH_CHARS = 1 << 20;
const REJECT_SAMPLES = 5;
const VALUE_PREVIEW = 80;

const REJECT_COPY =
  'COPY etl.rejects (pipeline, organization_id, window_key, source, record_number, raw_text, error_code, message, run_id) FROM STDIN';

interface RejectSample {
  table: string;
  recordNumber: number;
  code: string;
  message: string;
}

/** Rejects of the window, buffered in bounded slices and copied into etl.rejects between COPY segments. */
class RejectWriter {
  count = 0;
  readonly samples: RejectSample[] = [];
  private lines: string[] = [];
  private chars = 0;
  private readonly prefix: string;
  private readonly suffix: string;

  constructor(
    private readonly session: WarehouseSession,
    options: LoadWindowOptions,
  ) {
    const w = options.window;
    this.prefix = [w.pipeline, w.organizationId, w.windowKey].map(escapeCopyTextLossy).join('\t') + '\t';
    this.suffix = `\t${options.runId === null ? '\\N' : String(options.runId)}\n`;
  }

  add(table: string, source: string, recordNumber: number, raw: string, code: string, message: string): void {
    const line =
      this.prefix +
      `${escapeCopyTextLossy(source)}\t${Number.isFinite(recordNumber) ? Math.trunc(recordNumber) : '\\N'}\t` +
      `${escapeCopyTextLossy(raw)}\t${escapeCopyTextLossy(code)}\t${escapeCopyTextLossy(message)}` +
      this.suffix;
    this.lines.push(line);
    this.chars += line.length;
    this.count++;
    if (this.samples.length < REJECT_SAMPLES) this.samples.push({ table, recordNumber, code, message });
  }

  get full(): boolean {
    return this.lines.length >= REJECT_FLUSH_COUNT || this.chars >= REJECT_FLUSH_CHARS;
  }

  /** The state to go back to when what follows is rolled back (call right after flush()). */
  mark(): { count: number; samples: number } {
    return { count: this.count, samples: this.samples.length };
  }

  /** Forget the rejects added since `mark` (their rows were rolled back). */
  reset(mark: { count: number; samples: number }): void {
    this.count = mark.count;
    this.samples.length = mark.samples;
    this.lines = [];
    this.chars = 0;
  }

  async flush(): Promise<void> {
    if (this.lines.length === 0) return;
    const text = this.lines.join('');
    const expected = this.lines.length;
    this.lines = [];
    this.chars = 0;
    const copied = await this.session.copyFrom(REJECT_COPY, [text]);
    if (copied !== expected) {
      throw new CybsError(
        LOAD_ERROR_CODES.failed,
        `COPY into etl.rejects stored ${copied} rows instead of ${expected}; the window was rolled back.`,
        { stage: 'load' },
      );
    }
  }
}

interface WindowContext {
  options: LoadWindowOptions;
  session: WarehouseSession;
  kind: Warehouse['kind'];
  rejects: RejectWriter;
  rowsLoaded: number;
  /** An error raised while producing COPY data (source failure, reject cap): it wins over the database's. */
  abort: unknown;
  /** The 32-bit ids (decimal) of the (sub)transactions this load wrote rows with (see LoadedState.writers). */
  writers: Set<string>;
  /** With LoadWindowOptions.state: the snapshot taken as the load began (pg_snapshot text). */
  snapshot: string;
  /** Each source's number in etl.sources (decimal), taken as the load began (takeSourceKeys). */
  sourceKeys: Map<string, string>;
  /**
   * The index statements of the tables this transaction created, deferred until their first rows
   * are in (buildDeferredIndexes), by `schema.name`.
   */
  deferredIndexes: Map<string, string[]>;
}

/**
 * Load one window into its target tables, all in one transaction. Throws a CybsError when the
 * window fails; then nothing of it is committed (no rows, no rejects, no schema change, nothing
 * `beforeCommit` wrote).
 */
export async function loadWindow(
  warehouse: Warehouse,
  options: LoadWindowOptions,
): Promise<LoadWindowResult> {
  validateOptions(options);
  const log = options.logger?.child({
    pipeline: options.window.pipeline,
    organizationId: options.window.organizationId,
    windowKey: options.window.windowKey,
  });
  try {
    const result = await warehouse.session((session) =>
      session.db.transaction().execute(async (trx) => {
        const { pipeline, organizationId, windowKey } = options.window;
        const lockKey = JSON.stringify(['cybs-etl:window', pipeline, organizationId, windowKey]);
        await sql`select pg_advisory_xact_lock(hashtextextended(${lockKey}, 0))`.execute(trx);
        const ctx: WindowContext = {
          options,
          session,
          kind: warehouse.kind,
          rejects: new RejectWriter(session, options),
          rowsLoaded: 0,
          abort: undefined,
          writers: new Set(),
          snapshot: '',
          sourceKeys: await takeSourceKeys(
            trx,
            organizationId,
            options.live ? [options.live.source] : options.targets.map((t) => t.source.source),
          ),
          deferredIndexes: new Map(),
        };
        const previous = options.state?.previous;
        if (options.state) {
          const taken = await sql<{ s: string }>`select pg_current_snapshot()::text as s`.execute(trx);
          ctx.snapshot = taken.rows[0]!.s;
        }
        if (options.state?.skipIfUnchanged && previous && !options.live) {
          if (await unchangedSince(ctx, trx, options.targets, previous)) {
            const unchanged = await confirmUnchanged(ctx, trx, options.targets, previous);
            if (options.beforeCommit) await options.beforeCommit(trx, unchanged);
            return unchanged;
          }
        }
        // The window's rejects are replaced by this load's (a re-run must not double them).
        await sql`delete from etl.rejects
                   where pipeline = ${pipeline} and organization_id = ${organizationId}
                     and window_key = ${windowKey}`.execute(trx);
        const tables: TableLoadResult[] = [];
        /** The table and source of each of `tables`. */
        const loaded: { decl: TableDecl; source: string }[] = [];
        let targets = options.targets;
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
        const windowResult: LoadWindowResult = {
          tables,
          rowsLoaded: ctx.rowsLoaded,
          rowsRejected: ctx.rejects.count,
        };
        if (options.state) {
          const state = await loadedState(ctx, trx, tables, loaded);
          if (state) windowResult.state = state;
        }
        if (options.beforeCommit) await options.beforeCommit(trx, windowResult);
        return windowResult;
      }),
    );
    log?.debug(
      { rowsLoaded: result.rowsLoaded, rowsRejected: result.rowsRejected, tables: result.tables },
      'window loaded',
    );
    return result;
  } catch (error) {
    const loadError = toLoadError(error, { ...options.window });
    // A fetch that failed inside the load (an on-demand window, LoadWindowOptions.live) is the
    // caller's to report; the rollback itself is then only a detail.
    if (loadError.stage === 'load')
      log?.warn({ err: loadError, code: loadError.code }, 'window load rolled back');
    else log?.debug({ code: loadError.code, stage: loadError.stage }, 'window load rolled back');
    throw loadError;
  }
}

const XID_EPOCH = 1n << 32n;
/** A row's writer is known by 32 bits (`xmin`): ids are told apart only while less than 2^31 apart. */
const XID_HORIZON = 1n << 31n;

/**
 * Whether the window's tables still hold exactly what its last load left (`previous`), and the
 * reject threshold passes as the load would check it (see tablesUnchangedSinceLoadIn). Otherwise
 * false, having written nothing.
 */
async function unchangedSince(
  ctx: WindowContext,
  trx: Db,
  targets: readonly LoadWindowTarget[],
  previous: LoadedState,
): Promise<boolean> {
  const tables = targets.map((t) => ({ table: t.table, source: t.source.source }));
  if (!(await tablesUnchangedSinceLoadIn(trx, ctx.options.window, tables, previous))) return false;
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
 * Whether the tables hold what the window's last load left (tablesUnchangedSinceLoadIn), read in a
 * transaction of its own: a hint, while the window's file downloads, that a re-load cannot be
 * recognised (then it need not wait for the download's end). The load decides in its own.
 */
export async function tablesUnchangedSinceLoad(
  warehouse: Warehouse,
  window: LoadWindowOptions['window'],
  tables: readonly { table: TableDecl; source: string }[],
  previous: LoadedState,
): Promise<boolean> {
  return warehouse.session((session) =>
    session.db.transaction().execute((trx) => tablesUnchangedSinceLoadIn(trx, window, tables, previous)),
  );
}

/**
 * The same targets as `previous`'s, the same columns, the window's rejects still there, and for
 * each table as many rows of the source as that load left, every one of them written by one of
 * its writers. A row changed, added or removed by anything else since (another source taking it
 * over, a hand-made fix, a restore) carries another writer or changes the count. Then a load of
 * the very bytes that load read writes nothing either, and its result is `previous`'s.
 */
async function tablesUnchangedSinceLoadIn(
  trx: Db,
  window: LoadWindowOptions['window'],
  tables: readonly { table: TableDecl; source: string }[],
  previous: LoadedState,
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
  const writers = `{${previous.writers.map((w) => String(BigInt(w) % XID_EPOCH)).join(',')}}`;
  const { pipeline, organizationId, windowKey } = window;
  const rejects = await sql<{ n: string }>`
    select count(*) as n from etl.rejects
     where pipeline = ${pipeline} and organization_id = ${organizationId} and window_key = ${windowKey}`.execute(
    trx,
  );
  if (Number(rejects.rows[0]!.n) !== previous.rejected) return false;
  for (const [index, { table: decl, source }] of tables.entries()) {
    const before = previous.tables[index]!;
    if (before.table !== `${decl.schema}.${decl.name}` || before.source !== source) return false;
    const columns = (await readTableColumns(trx, decl.schema, decl.name)) ?? [];
    if (columnList(columns).join('\n') !== before.columns.join('\n')) return false;
    const names = new Set(columns.map((c) => c.name));
    if (decl.columns.some((c) => !names.has(c.name))) return false;
    const rows = await sql<{ owned: string; other: string }>`
      select count(*) as owned, count(*) filter (where not (xmin = any(${writers}::xid[]))) as other
        from ${sql.id(decl.schema, decl.name)}
       where ${ofSource(organizationId, source)}`.execute(trx);
    if (Number(rows.rows[0]!.owned) !== before.owned || Number(rows.rows[0]!.other) !== 0) return false;
  }
  return true;
}

/**
 * The result of a load that found its tables holding what it would leave (unchangedSince): nothing
 * inserted, updated or deleted; the tables' DDL made sure of as any load does (an index dropped by
 * hand comes back); the window's rejects are this run's, as if written again.
 */
async function confirmUnchanged(
  ctx: WindowContext,
  trx: Db,
  targets: readonly LoadWindowTarget[],
  previous: LoadedState,
): Promise<LoadWindowResult> {
  for (const { table } of targets) await ensureTable(trx, table);
  const { pipeline, organizationId, windowKey } = ctx.options.window;
  if (previous.rejected > 0) {
    await sql`update etl.rejects set run_id = ${ctx.options.runId}::bigint, created_at = now()
               where pipeline = ${pipeline} and organization_id = ${organizationId}
                 and window_key = ${windowKey}`.execute(trx);
  }
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
 * transaction running beside the load may not have been compared (then no state is kept).
 */
async function loadedState(
  ctx: WindowContext,
  trx: Db,
  tables: readonly TableLoadResult[],
  loaded: readonly { decl: TableDecl; source: string }[],
): Promise<LoadedState | undefined> {
  // This transaction's id; its subtransactions' ids come after it, every other writer's before.
  const top = await currentXid(trx);
  const base = top - (top % XID_EPOCH);
  const ours = (low: string): bigint => base + BigInt(low) + (base + BigInt(low) < top ? XID_EPOCH : 0n);
  const earlier = (low: string): bigint => base + BigInt(low) - (base + BigInt(low) > top ? XID_EPOCH : 0n);
  const writers = new Set([...ctx.writers].map((w) => String(ours(w))));
  const state: LoadedState = { tables: [], rejected: ctx.rejects.count, writers: [] };
  for (const [index, t] of tables.entries()) {
    const { decl, source } = loaded[index]!;
    const owned = t.staged;
    if (t.inserted + t.updated < owned) {
      const found = await sql<{ x: string }>`
        select xmin::text as x from ${sql.id(decl.schema, decl.name)}
         where ${ofSource(ctx.options.window.organizationId, source)}
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
    const columns = (await readTableColumns(trx, decl.schema, decl.name)) ?? [];
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

/** A table's columns as LoadedState keeps them (`name type`), for the load and the check alike. */
function columnList(columns: readonly ExistingColumn[]): string[] {
  return columns.map((c) => `${c.name} ${c.type}`);
}

/** This transaction's id (xid8), assigned if it had none. */
async function currentXid(trx: Db): Promise<bigint> {
  const result = await sql<{ x: string }>`select pg_current_xact_id()::text as x`.execute(trx);
  return BigInt(result.rows[0]!.x);
}

/**
 * Note the (sub)transaction that has just written every row of the source in the table (a first
 * load straight into it), read from one of them.
 */
async function noteWriter(ctx: WindowContext, trx: Db, decl: TableDecl, source: string): Promise<void> {
  const result = await sql<{ x: string }>`
    select xmin::text as x from ${sql.id(decl.schema, decl.name)}
     where ${ofSource(ctx.options.window.organizationId, source)}
     limit 1`.execute(trx);
  if (result.rows[0]) ctx.writers.add(result.rows[0].x);
}

/**
 * Run the index statements deferred for the tables this transaction created (ensureTable's
 * `deferIndexes`), or for `decl`'s only: PostgreSQL builds an index over the rows in one sort,
 * where a COPY into an indexed table inserts every row into every index. A first load straight
 * into the table runs them before it releases its savepoint, so that a key twice in the rows fails
 * the unique index's build (23505) as it would have failed the COPY, and the staging path takes
 * over; the staging path runs them before it merges; the window runs them all before it commits.
 * Each is `if not exists`, so running one again (after a rollback to a savepoint took it back, or
 * at the end) is harmless.
 */
async function buildDeferredIndexes(ctx: WindowContext, trx: Db, decl?: TableDecl): Promise<void> {
  const tables = decl ? [`${decl.schema}.${decl.name}`] : [...ctx.deferredIndexes.keys()];
  for (const table of tables) {
    for (const statement of ctx.deferredIndexes.get(table) ?? []) await sql.raw(statement).execute(trx);
  }
}

function validateOptions(options: LoadWindowOptions): void {
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

/**
 * Fail the window when rejects exceed the cap (checked while streaming) or the threshold (checked
 * once every record is counted, `final`).
 */
function checkRejects(ctx: WindowContext, final: boolean): void {
  const { maxRejects } = ctx.options;
  const threshold = ctx.options.rejectThreshold ?? DEFAULT_REJECT_THRESHOLD;
  const rejected = ctx.rejects.count;
  const total = ctx.rowsLoaded + rejected;
  const overCap = maxRejects !== undefined && rejected > maxRejects;
  const overThreshold = final && rejected > 0 && rejected / total > threshold;
  if (!overCap && !overThreshold) return;
  const samples = ctx.rejects.samples
    .map((s) => `${s.table} record ${s.recordNumber}: ${s.code} ${s.message}`)
    .join('; ');
  const limit = overCap
    ? `more than the cap of ${maxRejects}`
    : `${((rejected / total) * 100).toFixed(2)}% of ${total} records, over the threshold of ${threshold * 100}%`;
  throw new CybsError(
    LOAD_ERROR_CODES.rejectThreshold,
    `Window ${ctx.options.window.pipeline}/${ctx.options.window.organizationId}/${ctx.options.window.windowKey}: ` +
      `${rejected} records rejected (${limit}${final ? '' : ', so far'}); nothing of the window was committed. ` +
      `First rejects: ${samples}`,
    {
      stage: 'load',
      context: { rejected, loaded: ctx.rowsLoaded, threshold, maxRejects, samples: ctx.rejects.samples },
    },
  );
}

interface StagedColumn {
  /** Source (and table) column name. */
  name: string;
  sourceType: string;
  tableType: string;
  encoder: CellEncoder;
}

async function loadTarget(
  ctx: WindowContext,
  trx: Db,
  target: LoadWindowTarget,
  index: number,
): Promise<TableLoadResult> {
  const { table: decl, source } = target;
  const tableName = `${decl.schema}.${decl.name}`;
  try {
    const { staged, drift, added, stagingName } = await prepareTarget(ctx, trx, target, index);
    const staging = sql.id('pg_temp', stagingName);

    /** The result of a first load that went straight into the table (nothing merged or deleted). */
    const straightIntoTable = (rows: number, started: number, rejectedBefore: number): TableLoadResult =>
      firstLoadResult(ctx, tableName, source.source, added, rows, started, rejectedBefore);

    let rawCsv = source.rawCsv;
    if (rawCsv !== undefined && drift.length === 0) {
      const started = performance.now();
      const rejectedBeforeDirect = ctx.rejects.count;
      const direct = await copyRawCsvIntoTable(ctx, trx, decl, source, rawCsv, staged, stagingName);
      if (typeof direct === 'number') return straightIntoTable(direct, started, rejectedBeforeDirect);
      if (direct === 'conflict') rawCsv = await source.reopenRawCsv!();
    }

    let rawText = source.rawCopyText;
    if (rawText !== undefined && drift.length === 0) {
      const started = performance.now();
      const rejectedBeforeDirect = ctx.rejects.count;
      const direct = await copyRawTextIntoTable(ctx, trx, decl, source, rawText, staged);
      if (typeof direct === 'number') return straightIntoTable(direct, started, rejectedBeforeDirect);
      if (direct === 'conflict') rawText = await source.reopenRawCopyText!();
    }

    const rejectedBefore = ctx.rejects.count;
    const started = performance.now();
    let stagedCount: number;
    if (rawCsv) {
      stagedCount = await copyRawCsv(ctx, trx, decl, source, rawCsv, staged, stagingName, drift.length > 0);
    } else if (source.copyText && drift.length === 0) {
      // The records that need the per-row path are staged first (with their rejects), then a first
      // load puts them and the pre-encoded lines straight into the table.
      const perRow = await copySource(
        ctx,
        decl,
        { ...source, batches: source.copyText.batches },
        staged,
        stagingName,
      );
      const direct = await copyTextIntoTable(ctx, trx, decl, source, staged, stagingName, perRow);
      if (direct !== undefined) return straightIntoTable(direct, started, rejectedBefore);
      stagedCount = perRow + (await copyPreEncoded(ctx, decl, source, staged, stagingName));
    } else if (rawText) {
      stagedCount = await copyRawText(
        ctx.kind,
        ctx.session,
        trx,
        decl,
        rawText,
        staged,
        stagingName,
        drift.length > 0,
      );
    } else {
      stagedCount = await copySource(ctx, decl, source, staged, stagingName);
    }
    ctx.rowsLoaded += stagedCount;
    await buildDeferredIndexes(ctx, trx, decl);
    const copied = performance.now();
    const merge = await mergeStaging(ctx, trx, decl, source, staged, stagingName, stagedCount);
    const duplicates = stagedCount - merge.distinct;
    ctx.rowsLoaded -= duplicates;
    if (merge.writer !== undefined) ctx.writers.add(merge.writer);
    const merged = performance.now();
    const deleted = await deleteVanished(trx, decl, source, staging, ctx.options, merge.distinct);
    ctx.options.logger?.debug(
      {
        table: tableName,
        source: source.source,
        staged: stagedCount,
        copyMs: Math.round(copied - started),
        mergeMs: Math.round(merged - copied),
        deleteMs: Math.round(performance.now() - merged),
      },
      'table load phases',
    );
    return {
      table: tableName,
      inserted: merge.inserted,
      updated: merge.updated,
      unchanged: merge.distinct - merge.inserted - merge.updated,
      deleted,
      rejected: ctx.rejects.count - rejectedBefore,
      staged: merge.distinct,
      duplicates,
      columnsAdded: added,
    };
  } catch (error) {
    if (ctx.abort !== undefined) throw sourceError(ctx.abort, tableName, source.source);
    throw toLoadError(error, { table: tableName, source: source.source });
  }
}

interface PreparedTarget {
  staged: StagedColumn[];
  /** Columns whose source type is of another family than the table's. */
  drift: StagedColumn[];
  /** Columns added to the table by this load. */
  added: string[];
  /**
   * The target's TEMP staging table (in pg_temp, dropped on commit), made like the table (unless
   * prepareTarget was told not to make it).
   */
  stagingName: string;
}

/**
 * Validate the source, create the table or add what it lacks, and (unless `staging` is false) make
 * its staging table.
 */
async function prepareTarget(
  ctx: WindowContext,
  trx: Db,
  target: LoadWindowTarget,
  index: number,
  staging = true,
): Promise<PreparedTarget> {
  const { table: decl, source } = target;
  validateSource(decl, source);
  const { columns, added } = await evolveSchema(ctx, trx, decl, source);
  const types = new Map(columns.map((c) => [c.name, c.type]));
  const staged: StagedColumn[] = source.columns.map((c) => {
    const tableType = types.get(c.name)!;
    return { name: c.name, sourceType: c.pgType, tableType, encoder: encoderFor(c.pgType, tableType) };
  });
  const drift = staged.filter((c) => typeFamily(c.sourceType) !== typeFamily(c.tableType));
  if (drift.length > 0) {
    ctx.options.logger?.warn(
      {
        table: `${decl.schema}.${decl.name}`,
        columns: drift.map((c) => ({ column: c.name, source: c.sourceType, table: c.tableType })),
      },
      'source column types differ from the table; values are checked against the table types',
    );
  }
  const stagingName = `_cybs_stg_${index}`;
  if (!staging) return { staged, drift, added, stagingName };
  const stagingColumns = [...staged.map((c) => c.name), '_source_row'];
  await sql`create temp table ${sql.id(stagingName)} on commit drop as
    select ${sql.join(stagingColumns.map((c) => sql.id(c)))} from ${sql.id(decl.schema, decl.name)}
    with no data`.execute(trx);
  return { staged, drift, added, stagingName };
}

/** The result of a first load that went straight into the table (nothing merged or deleted). */
function firstLoadResult(
  ctx: WindowContext,
  tableName: string,
  source: string,
  added: string[],
  rows: number,
  started: number,
  rejectedBefore: number,
  phase = 'table load phases (first load, straight into the table)',
  logLater?: (() => void)[],
): TableLoadResult {
  ctx.rowsLoaded += rows;
  const fields = { table: tableName, source, copied: rows, copyMs: Math.round(performance.now() - started) };
  const log = () => ctx.options.logger?.debug(fields, phase);
  if (logLater) logLater.push(log);
  else log();
  return {
    table: tableName,
    inserted: rows,
    updated: 0,
    unchanged: 0,
    deleted: 0,
    rejected: ctx.rejects.count - rejectedBefore,
    staged: rows,
    duplicates: 0,
    columnsAdded: added,
  };
}

function sourceError(error: unknown, table: string, source: string): CybsError {
  if (error instanceof CybsError) return error;
  return new CybsError(
    LOAD_ERROR_CODES.sourceFailed,
    `Reading source ${source} for ${table} failed: ${errorMessage(error)}. Nothing of the window was committed.`,
    { stage: 'load', cause: error, context: { table, source } },
  );
}

const LINEAGE_NAMES = new Set(LINEAGE_COLUMNS.map((c) => c.name));

function validateSource(decl: TableDecl, source: LoadSource): void {
  const where = `source ${source.source} for ${decl.schema}.${decl.name}`;
  const invalid = (message: string) =>
    new CybsError(LOAD_ERROR_CODES.invalidSource, `${where}: ${message}`, {
      stage: 'load',
      context: { table: `${decl.schema}.${decl.name}`, source: source.source },
    });
  const seen = new Set<string>();
  for (const column of source.columns) {
    assertIdentifier(column.name, where);
    assertSafePgType(column.pgType, `${where}, column ${column.name}`);
    if (LINEAGE_NAMES.has(column.name))
      throw invalid(`column "${column.name}" collides with a lineage column.`);
    if (seen.has(column.name)) throw invalid(`column "${column.name}" appears twice.`);
    seen.add(column.name);
  }
  for (const key of decl.naturalKey) {
    if (!KEY_LINEAGE_COLUMNS.has(key) && !seen.has(key)) {
      throw invalid(`natural key column "${key}" is not among the source's columns.`);
    }
  }
}

/**
 * Create the table or add what it lacks: declared columns first, then source columns that map to
 * no table column (typed as the source declares them; `text` for unknown headers), unless the
 * schema is frozen (LoadWindowOptions.schemaChanges). Every added column is recorded in
 * etl.schema_changes in the load transaction.
 */
async function evolveSchema(
  ctx: WindowContext,
  trx: Db,
  decl: TableDecl,
  source: LoadSource,
): Promise<{ columns: ExistingColumn[]; added: string[] }> {
  const ensured = await ensureTable(trx, decl, { deferIndexes: true });
  if (ensured.deferredIndexes)
    ctx.deferredIndexes.set(`${decl.schema}.${decl.name}`, ensured.deferredIndexes);
  let columns = ensured.columns;
  const added: ColumnDecl[] = [...ensured.columnsAdded];
  const have = () => new Set(columns.map((c) => c.name));
  if (source.columns.some((c) => !have().has(c.name))) {
    await lockTableDdl(trx, decl.schema, decl.name);
    columns = (await readTableColumns(trx, decl.schema, decl.name)) ?? [];
    const present = have();
    const missing = source.columns.filter((c) => !present.has(c.name)).map((c) => c.name);
    if (ctx.options.schemaChanges === 'freeze' && missing.length > 0) {
      const pipeline = ctx.options.window.pipeline;
      const shown = missing.slice(0, 8).map((c) => `"${c}"`);
      const named = `${shown.join(', ')}${missing.length > shown.length ? ` (and ${missing.length - shown.length} more)` : ''}`;
      throw new CybsError(
        LOAD_ERROR_CODES.schemaFrozen,
        `${decl.schema}.${decl.name} has no column ${named}, which ${source.source} brings, ` +
          `and pipelines.${pipeline}.schemaChanges is freeze: add ${missing.length === 1 ? 'it' : 'them'} to the table, or set schemaChanges: evolve; nothing was loaded.`,
        {
          stage: 'load',
          exitCode: 2,
          context: { table: `${decl.schema}.${decl.name}`, source: source.source, columns: missing },
        },
      );
    }
    for (const column of source.columns) {
      if (present.has(column.name)) continue;
      const columnDecl: ColumnDecl = {
        name: column.name,
        pgType: column.pgType.trim(),
        description:
          column.description ??
          `${column.unknown ? 'Unknown header' : 'Column'} first seen in ${source.source}; added by schema evolution.`,
      };
      await sql.raw(addColumnDdl(decl, columnDecl)).execute(trx);
      await sql.raw(commentOnColumnDdl(decl, columnDecl)).execute(trx);
      added.push(columnDecl);
    }
    columns = (await readTableColumns(trx, decl.schema, decl.name)) ?? [];
  }
  if (added.length > 0) {
    const types = new Map(columns.map((c) => [c.name, c.type]));
    await trx
      .insertInto('etl.schema_changes')
      .values(
        added.map((c) => ({
          table_schema: decl.schema,
          table_name: decl.name,
          column_name: c.name,
          column_type: types.get(c.name) ?? c.pgType,
          change: 'add_column',
          source: source.source,
          pipeline: ctx.options.window.pipeline,
          run_id: ctx.options.runId,
        })),
      )
      .execute();
    ctx.options.logger?.info(
      { table: `${decl.schema}.${decl.name}`, columns: added.map((c) => c.name), source: source.source },
      'columns added',
    );
  }
  return { columns, added: added.map((c) => c.name) };
}

/**
 * Stream the source's batches into the staging table. The COPY is split into segments only when
 * rejects must be written (between segments).
 */
async function copySource(
  ctx: WindowContext,
  decl: TableDecl,
  source: LoadSource,
  staged: StagedColumn[],
  stagingName: string,
): Promise<number> {
  const tableName = `${decl.schema}.${decl.name}`;
  const iterator = source.batches[Symbol.asyncIterator]();
  const n = staged.length;
  const encoders = staged.map((c) => c.encoder);
  const keyIndexes = decl.naturalKey
    .filter((k) => !KEY_LINEAGE_COLUMNS.has(k))
    .map((k) => staged.findIndex((c) => c.name === k));
  const statement = `COPY pg_temp.${quoteIdent(stagingName)} (${[...staged.map((c) => c.name), '_source_row']
    .map(quoteIdent)
    .join(', ')}) FROM STDIN`;
  const rejects = ctx.rejects;
  const cells: string[] = new Array<string>(n + 1);

  let done = false;
  let pending: LoadBatch | null = null;
  let position = 0;
  let total = 0;

  const reject = (recordNumber: number, raw: string, code: string, message: string) =>
    rejects.add(tableName, source.source, recordNumber, raw, code, message);

  try {
    while (!done) {
      total += await copySegment();
    }
  } finally {
    // Let the parser close its file or HTTP stream when the load stops early.
    if (!done) await iterator.return?.().catch(() => undefined);
  }
  return total;

  async function copySegment(): Promise<number> {
    const lineMap = new LineMap();
    async function* segment(): AsyncGenerator<string> {
      let parts: string[] = [];
      let chars = 0;
      fill: for (;;) {
        if (pending === null) {
          if (rejects.full) break;
          let next: IteratorResult<LoadBatch>;
          try {
            next = await iterator.next();
          } catch (error) {
            ctx.abort = error;
            throw error;
          }
          if (next.done) {
            done = true;
            break;
          }
          pending = next.value;
          position = 0;
          for (const r of pending.rejects) reject(r.recordNumber, r.raw, r.code, r.message);
        }
        const records = pending.records;
        while (position < records.length) {
          const record = records[position++]!;
          const values = record.values;
          let missingKey = -1;
          for (const k of keyIndexes) {
            if (values[k] === null || values[k] === undefined) {
              missingKey = k;
              break;
            }
          }
          if (missingKey >= 0) {
            reject(
              record.recordNumber,
              record.raw,
              LOAD_ERROR_CODES.missingKey,
              `Natural key column "${staged[missingKey]!.name}" of ${tableName} is empty.`,
            );
            continue;
          }
          let bad = -1;
          for (let i = 0; i < n; i++) {
            const cell = encoders[i]!(values[i]);
            if (cell === undefined) {
              bad = i;
              break;
            }
            cells[i] = cell;
          }
          if (bad >= 0) {
            const [code, message] = describeBadValue(staged[bad]!, values[bad], tableName);
            reject(record.recordNumber, record.raw, code, message);
            continue;
          }
          cells[n] = String(record.recordNumber);
          const line = cells.join('\t') + '\n';
          parts.push(line);
          chars += line.length;
          lineMap.add(record.recordNumber);
          if (chars >= CHUNK_CHARS) {
            yield parts.join('');
            parts = [];
            chars = 0;
            if (lineMap.runs >= MAX_LINE_MAP_RUNS) break fill;
          }
        }
        pending = null;
        try {
          checkRejects(ctx, false);
        } catch (error) {
          ctx.abort = error;
          throw error;
        }
      }
      if (chars > 0) yield parts.join('');
    }

    let copied: number;
    try {
      copied = await ctx.session.copyFrom(statement, segment());
    } catch (error) {
      if (ctx.abort !== undefined) throw ctx.abort;
      throw copyError(error, tableName, source.source, lineMap);
    }
    if (copied !== lineMap.lines) {
      throw new CybsError(
        LOAD_ERROR_CODES.failed,
        `COPY into the staging table of ${tableName} stored ${copied} rows instead of ${lineMap.lines}.`,
        { stage: 'load', context: { table: tableName, source: source.source } },
      );
    }
    await rejects.flush();
    return copied;
  }
}

/**
 * Records already encoded as COPY text for these very column types (`source.copyText`): the lines
 * are copied into the staging table as they are (the records that need the per-row path went
 * through `copySource` before).
 */
async function copyPreEncoded(
  ctx: WindowContext,
  decl: TableDecl,
  source: LoadSource,
  staged: StagedColumn[],
  stagingName: string,
): Promise<number> {
  const tableName = `${decl.schema}.${decl.name}`;
  let total = 0;
  for (const segment of source.copyText!.segments) {
    if (segment.lines === 0) continue;
    const statement = `COPY pg_temp.${quoteIdent(stagingName)} (${[
      ...staged.slice(0, segment.columns).map((c) => c.name),
      '_source_row',
    ]
      .map(quoteIdent)
      .join(', ')}) FROM STDIN`;
    let copied: number;
    try {
      copied = await ctx.session.copyFrom(statement, segment.chunks());
    } catch (error) {
      throw copyError(error, tableName, source.source, segment);
    }
    if (copied !== segment.lines) {
      throw new CybsError(
        LOAD_ERROR_CODES.failed,
        `COPY into the staging table of ${tableName} stored ${copied} rows instead of ${segment.lines}.`,
        { stage: 'load', context: { table: tableName, source: source.source } },
      );
    }
    total += copied;
  }
  return total;
}

/**
 * A first load of pre-encoded COPY text (no row of the table has this source yet): nothing to
 * merge and nothing that can have vanished, so the records staged by the per-row path are inserted
 * as they are and every segment's lines go straight into the table with one COPY each, the lineage
 * values (NULL for the source columns a segment lacks, organization, source, run, the
 * transaction's now()) appended to every line. PostgreSQL's unique index is the check: a key in the
 * table already (another source's row) or twice in the source fails with 23505; then (and on any
 * other refusal of the data, which the staging path reports in its own words) everything is rolled
 * back to a savepoint and undefined is returned: the caller loads through the staging table.
 * Undefined as well, without writing anything, when the table has rows of this source (a re-load).
 */
async function copyTextIntoTable(
  ctx: WindowContext,
  trx: Db,
  decl: TableDecl,
  source: LoadSource,
  staged: StagedColumn[],
  stagingName: string,
  perRow: number,
): Promise<number | undefined> {
  const tableName = `${decl.schema}.${decl.name}`;
  const lineage = await copyTextLineage(ctx, trx, decl, source);
  if (lineage === undefined) return undefined;
  await sql`savepoint cybs_direct`.execute(trx);
  try {
    let total = 0;
    if (perRow > 0) total += await insertStaged(ctx, trx, decl, source.source, staged, stagingName);
    for (const segment of source.copyText!.segments) {
      if (segment.lines === 0) continue;
      const missing = staged.slice(segment.columns).map((c) => c.name);
      const columns = [
        ...staged.slice(0, segment.columns).map((c) => c.name),
        '_source_row',
        ...missing,
        ...DIRECT_LINEAGE,
      ];
      const statement = copyIntoTable(decl, columns);
      const suffix = Buffer.from(`${'\t\\N'.repeat(missing.length)}${lineage}\n`, 'utf8');
      const copied = await ctx.session.copyFrom(statement, appendToLines(segment.chunks(), suffix));
      if (copied !== segment.lines) {
        throw new CybsError(
          LOAD_ERROR_CODES.failed,
          `COPY into ${tableName} stored ${copied} rows instead of ${segment.lines}.`,
          { stage: 'load', context: { table: tableName, source: source.source } },
        );
      }
      total += copied;
    }
    await buildDeferredIndexes(ctx, trx, decl);
    await noteWriter(ctx, trx, decl, source.source);
    await sql`release savepoint cybs_direct`.execute(trx);
    return total;
  } catch (error) {
    if (!refusedByTable(error)) throw error;
    const code = (error as { code?: unknown } | null)?.code;
    await sql`rollback to savepoint cybs_direct`.execute(trx);
    ctx.options.logger?.debug(
      { table: tableName, source: source.source, sqlState: code, reason: errorMessage(error) },
      'first load refused by the table; loading through the staging table',
    );
    return undefined;
  }
}

/** The lineage columns a direct first load sets (`_loaded_at` is left to its default, now()). */
const DIRECT_LINEAGE = ['_organization_id', '_source', '_run_id', '_source_key'];

/** `COPY <table> (<columns>) FROM STDIN` (text format) straight into the target table. */
function copyIntoTable(decl: TableDecl, columns: readonly string[]): string {
  return `COPY ${quoteIdent(decl.schema)}.${quoteIdent(decl.name)} (${columns.map(quoteIdent).join(', ')}) FROM STDIN`;
}

/** The records staged by the per-row path, inserted as they are with their lineage (a first load). */
async function insertStaged(
  ctx: WindowContext,
  trx: Db,
  decl: TableDecl,
  source: string,
  staged: StagedColumn[],
  stagingName: string,
): Promise<number> {
  const data = [...staged.map((c) => c.name), '_source_row'];
  const inserted = await sql`
    insert into ${sql.id(decl.schema, decl.name)} (${sql.join([...data, ...DIRECT_LINEAGE].map((c) => sql.id(c)))})
    select ${sql.join(data.map((c) => sql.id('s', c)))}, ${ctx.options.window.organizationId}::text,
           ${source}::text, ${ctx.options.runId}::bigint, ${sourceKeyOf(ctx, source)}::bigint
      from ${sql.id('pg_temp', stagingName)} as s`.execute(trx);
  return Number(inserted.numAffectedRows ?? 0n);
}

/**
 * A window that arrives page by page (LoadWindowOptions.live). On PostgreSQL, when every table is
 * loaded for the first time (as copyTextIntoTable decides) the pages' lines go straight into the
 * tables, lineage appended, while the caller fetches the next pages (startLiveCopy): the
 * database's work overlaps the fetching and parsing instead of following it. Then the records the
 * per-row path must type or reject (kept apart by the caller) are staged and inserted per table.
 * All of it is in one savepoint: whatever PostgreSQL refuses in the data (a key twice, or one of
 * another source), a page whose lines are not in the declared column order, or anything else that
 * would take the staging path, rolls it back, and the complete targets are returned for the usual
 * load. Returns the tables' results when loaded here.
 */
async function loadLive(
  ctx: WindowContext,
  trx: Db,
  live: LiveLoad,
): Promise<TableLoadResult[] | (() => LoadWindowTarget[])> {
  const copier = await startLiveCopy(ctx, trx, live);
  let targets: () => LoadWindowTarget[];
  try {
    targets = await live.produce(copier ? copier.pageDone : () => undefined);
  } catch (error) {
    // The caller's failure wins; the COPY in flight must end before the transaction rolls back.
    await copier?.stop();
    throw error;
  }
  if (copier === undefined) return targets;
  const copied = await copier.finish();
  if (copied === undefined) return targets;
  const rejectMark = ctx.rejects.mark();
  const rowsBefore = ctx.rowsLoaded;
  let current = '';
  try {
    const results: TableLoadResult[] = [];
    // Logged once the savepoint is released: until then, all of it may still be rolled back.
    const logLater: (() => void)[] = [];
    for (const [index, target] of targets().entries()) {
      current = `${target.table.schema}.${target.table.name}`;
      const started = performance.now();
      const rejectedBefore = ctx.rejects.count;
      const { staged, drift, added, stagingName } = await prepareTarget(ctx, trx, target, index);
      const { source } = target;
      if (drift.length > 0 || source.copyText === undefined) {
        throw refuseFastPath('the source needs the staging path');
      }
      let rows = copied[index]!.rows;
      const perRow = await copySource(
        ctx,
        target.table,
        { ...source, batches: source.copyText.batches },
        staged,
        stagingName,
      );
      if (perRow > 0) rows += await insertStaged(ctx, trx, target.table, source.source, staged, stagingName);
      const result = firstLoadResult(
        ctx,
        current,
        source.source,
        [...copied[index]!.added, ...added],
        rows,
        started,
        rejectedBefore,
        'table load phases (first load, while paging)',
        logLater,
      );
      const { copies, ms } = copied[index]!;
      logLater.push(() =>
        ctx.options.logger?.debug(
          { table: result.table, copies, copyWhilePagingMs: Math.round(ms) },
          'table copied while paging',
        ),
      );
      results.push(result);
    }
    await ctx.rejects.flush();
    for (const { table } of live.tables) await buildDeferredIndexes(ctx, trx, table);
    for (const { table } of live.tables) await noteWriter(ctx, trx, table, live.source);
    await sql`release savepoint cybs_live`.execute(trx);
    for (const log of logLater) log();
    return results;
  } catch (error) {
    if (ctx.abort !== undefined) throw sourceError(ctx.abort, current, live.source);
    if (!refusedByTable(error)) throw toLoadError(error, { table: current, source: live.source });
    await sql`rollback to savepoint cybs_live`.execute(trx);
    ctx.rejects.reset(rejectMark);
    ctx.rowsLoaded = rowsBefore;
    ctx.options.logger?.debug(
      { source: live.source, reason: errorMessage(error) },
      'first load while paging refused; loading the window through the staging tables',
    );
    return targets;
  }
}

async function* noBatches(): AsyncGenerator<LoadBatch> {}

/**
 * Whether a direct first load failed on the data (PostgreSQL's classes 22, data exception, and 23,
 * integrity constraint violation: a key twice or of another source) or was refused before it
 * wrote (a fast-path refusal): then the staging path loads the same records.
 */
function refusedByTable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (
    isFastPathRefusal(error) || (typeof code === 'string' && (code.startsWith('22') || code.startsWith('23')))
  );
}

interface LiveCopy {
  /**
   * Tell the copier that a page was written (see LiveLoad.produce); throws the copier's failure
   * when no fallback can follow it (the load fails).
   */
  pageDone: () => void;
  /** Stop after the COPY in flight, whatever its outcome. */
  stop: () => Promise<void>;
  /**
   * Copy what the last pages gave: the rows copied into each table, the COPYs and the time they
   * took, the columns added to the table, or undefined when the copying stopped on a refusal (and
   * was rolled back to the savepoint).
   */
  finish: () => Promise<{ rows: number; copies: number; ms: number; added: string[] }[] | undefined>;
}

/**
 * Check that every table takes a first load straight into it and open the savepoint; undefined
 * (nothing written) when one does not. Then copy, table by table, whatever lines the pages written
 * so far gave (one COPY per table for all the pages written since its last one), while the caller
 * fetches and parses the next pages; wait for a page when there is nothing to copy.
 */
async function startLiveCopy(ctx: WindowContext, trx: Db, live: LiveLoad): Promise<LiveCopy | undefined> {
  const copies: { statement: string; suffix: Buffer; tableName: string; feed: LiveFeed; added: string[] }[] =
    [];
  for (const [index, { table: decl, columns, feed }] of live.tables.entries()) {
    const source: LoadSource = { source: live.source, columns, batches: noBatches() };
    const { staged, drift, added } = await prepareTarget(ctx, trx, { table: decl, source }, index, false);
    if (drift.length > 0) return undefined;
    const lineage = await copyTextLineage(ctx, trx, decl, source);
    if (lineage === undefined) return undefined;
    const names = [...staged.map((c) => c.name), '_source_row', ...DIRECT_LINEAGE];
    copies.push({
      statement: copyIntoTable(decl, names),
      suffix: Buffer.from(`${lineage}\n`, 'utf8'),
      tableName: `${decl.schema}.${decl.name}`,
      feed,
      added,
    });
  }
  await sql`savepoint cybs_live`.execute(trx);
  const copied = copies.map((c) => ({ rows: 0, copies: 0, ms: 0, added: c.added }));
  let failure: unknown;
  let produced = false;
  let stopped = false;
  let signalled = false;
  let wake: (() => void) | undefined;
  const signal = () => {
    signalled = true;
    const w = wake;
    wake = undefined;
    w?.();
  };
  const copyAll = async (): Promise<boolean> => {
    let took = false;
    for (const [index, copy] of copies.entries()) {
      const lines = copy.feed.take();
      if (lines === undefined) throw refuseFastPath('a page brought columns the tables do not have yet');
      if (lines.lines === 0) continue;
      took = true;
      const started = performance.now();
      const n = await ctx.session.copyFrom(copy.statement, appendToLines(lines.chunks(), copy.suffix));
      if (n !== lines.lines) {
        throw new CybsError(
          LOAD_ERROR_CODES.failed,
          `COPY into ${copy.tableName} stored ${n} rows instead of ${lines.lines}.`,
          { stage: 'load', context: { table: copy.tableName } },
        );
      }
      copied[index]!.rows += n;
      copied[index]!.copies++;
      copied[index]!.ms += performance.now() - started;
    }
    return took;
  };
  const loop = (async () => {
    try {
      for (;;) {
        if (stopped) return;
        // Read before taking: the lines of a page written after this still get a round.
        const last = produced;
        signalled = false;
        const took = await copyAll();
        if (last) return;
        if (!took && !signalled) await new Promise<void>((resolve) => (wake = resolve));
      }
    } catch (error) {
      failure = error;
    }
  })();
  return {
    pageDone: () => {
      // A failure that no fallback cures (a lost connection) ends the paging at once.
      if (failure !== undefined && !refusedByTable(failure)) throw failure;
      signal();
    },
    stop: async () => {
      stopped = true;
      signal();
      await loop;
    },
    finish: async () => {
      produced = true;
      signal();
      await loop;
      if (failure === undefined) return copied;
      if (!refusedByTable(failure)) throw failure;
      await sql`rollback to savepoint cybs_live`.execute(trx);
      ctx.options.logger?.debug(
        { reason: errorMessage(failure) },
        'first load while paging refused; loading the window through the staging tables',
      );
      return undefined;
    },
  };
}

/**
 * Whether a load can go straight into the table: no row of the table has this source yet (else it
 * is a re-load, which goes through the staging table), and `_loaded_at` defaults to now() (the
 * transaction's start, the value the merge gives). The direct COPYs leave `_loaded_at` to that
 * default rather than send it: PostgreSQL would parse the same timestamp text on every row.
 */
async function isFirstLoad(
  ctx: WindowContext,
  trx: Db,
  decl: TableDecl,
  source: LoadSource,
): Promise<boolean> {
  const table = `${quoteIdent(decl.schema)}.${quoteIdent(decl.name)}`;
  const result = await sql<{ loaded: boolean; defaulted: boolean }>`
    select ${sourceHasRows(decl, ctx.options.window.organizationId, source)} as loaded,
           coalesce((select pg_get_expr(d.adbin, d.adrelid)
                       from pg_catalog.pg_attrdef d
                       join pg_catalog.pg_attribute a on a.attrelid = d.adrelid and a.attnum = d.adnum
                      where d.adrelid = to_regclass(${table}) and a.attname = '_loaded_at'), '') = 'now()'
             as defaulted`.execute(trx);
  const row = result.rows[0]!;
  return !row.loaded && row.defaulted;
}

/** Whether the table has a row of this source (one probe of an index on `_source_key`). */
/**
 * A child table (TableDecl.parent) loaded with its records: the items that other sources left for
 * the records this load wrote (a record now owned by this source, whose items another source had
 * loaded) are deleted, so a record's items are the ones of the source that last wrote it. The
 * records' target must come first. Records keyed by source and row own their items already.
 * Returns the rows deleted.
 */
async function deleteItemsLeftBehind(
  trx: Db,
  target: LoadWindowTarget,
  targets: readonly LoadWindowTarget[],
  options: LoadWindowOptions,
): Promise<number> {
  const { table: decl, source } = target;
  const parent = decl.parent;
  if (parent === undefined || parent.key.length === 0) return 0;
  const records = targets.find(
    (t) =>
      t.table.schema === decl.schema && t.table.name === parent.table && t.source.source === source.source,
  );
  if (records === undefined) return 0;
  const { organizationId } = options.window;
  const child = sql.id(decl.schema, decl.name);
  const owner = sql.id(records.table.schema, records.table.name);
  const sameRecord = sql.join(
    parent.key.map((k) => sql`${sql.id('p', k)} = ${sql.id('c', k)}`),
    sql` and `,
  );
  // From the source's records (found by `_source_key`) to their items (the child's key index
  // starts with the records' key), never over the whole child table.
  const result = await sql`
    delete from ${child} as c using ${owner} as p
     where ${ofSource(organizationId, source.source, 'p')}
       and ${sameRecord} and c."_organization_id" = p."_organization_id"
       and c."_source_key" is distinct from p."_source_key"`.execute(trx);
  return Number(result.numAffectedRows ?? 0n);
}

function sourceHasRows(decl: TableDecl, organizationId: string, source: LoadSource): RawBuilder<boolean> {
  return sql<boolean>`exists (select 1 from ${sql.id(decl.schema, decl.name)}
                               where ${ofSource(organizationId, source.source)})`;
}

/**
 * `<alias>."_source_key" = <the source's number>`: the rows of one organization and source, found
 * by an index on `_source_key` (the number is read from etl.sources once per statement; none, and
 * no row matches).
 */
function ofSource(organizationId: string, source: string, alias?: string): RawBuilder<unknown> {
  const column = alias === undefined ? sql.id('_source_key') : sql.id(alias, '_source_key');
  return sql`${column} = ${sourceKeyQuery(organizationId, source)}`;
}

/** `(select <the source's number> from etl.sources)`: null when it has none. */
function sourceKeyQuery(organizationId: string, source: string): RawBuilder<unknown> {
  return sql`(select k.source_key from etl.sources as k
               where k.organization_id = ${organizationId} and k.source = ${source})`;
}

/**
 * Each source's number in etl.sources, added there when it has none yet. Taken as the window's
 * load begins, in its transaction and before any savepoint, so that no rollback to a savepoint
 * can take back a number the load goes on using. Another load adding the same source at once
 * makes this one wait for it (the unique index), then read its number.
 */
async function takeSourceKeys(
  trx: Db,
  organizationId: string,
  sources: readonly string[],
): Promise<Map<string, string>> {
  const keys = new Map<string, string>();
  for (const source of new Set(sources)) {
    for (let attempt = 0; !keys.has(source); attempt++) {
      const taken = await sql<{ k: string }>`
        with found as (
          select source_key from etl.sources where organization_id = ${organizationId} and source = ${source}
        ), added as (
          insert into etl.sources (organization_id, source)
          select ${organizationId}, ${source} where not exists (select 1 from found)
          on conflict (organization_id, source) do nothing
          returning source_key
        )
        select source_key::text as k from found union all select source_key::text from added`.execute(trx);
      const key = taken.rows[0]?.k;
      if (key !== undefined) keys.set(source, key);
      else if (attempt > 0) {
        throw new CybsError(LOAD_ERROR_CODES.failed, `etl.sources gave no number for the source ${source}.`, {
          stage: 'load',
          context: { source },
        });
      }
    }
  }
  return keys;
}

/** The source's number taken as the load began (takeSourceKeys). */
function sourceKeyOf(ctx: WindowContext, source: string): string {
  const key = ctx.sourceKeys.get(source);
  if (key === undefined) {
    throw new CybsError(
      LOAD_ERROR_CODES.failed,
      `No etl.sources number was taken for the source ${source}.`,
      {
        stage: 'load',
        context: { source },
      },
    );
  }
  return key;
}

/**
 * The COPY text fields (each after a tab) of `_organization_id`, `_source` and `_run_id` for a
 * first load straight into the table (`_loaded_at` is left to its default); undefined when the
 * load goes through the staging table (see isFirstLoad) or for lineage text COPY cannot carry.
 */
async function copyTextLineage(
  ctx: WindowContext,
  trx: Db,
  decl: TableDecl,
  source: LoadSource,
): Promise<string | undefined> {
  const org = escapeCopyText(ctx.options.window.organizationId);
  const src = escapeCopyText(source.source);
  if (org === undefined || src === undefined) return undefined;
  if (!(await isFirstLoad(ctx, trx, decl, source))) return undefined;
  const runId = ctx.options.runId;
  return `\t${org}\t${src}\t${runId === null ? '\\N' : String(runId)}\t${sourceKeyOf(ctx, source.source)}`;
}

/**
 * A first load of ready COPY text lines (the fast XML path) straight into the table, the lineage
 * values appended to every line, in a savepoint: what the staging table and merge would give for a
 * window whose source has no rows yet, without writing every row twice. A key already in the
 * table or twice in the file (23505) rolls back to the savepoint (`conflict`: the caller stages the
 * lines read again); `staging` for a re-load. Anything else PostgreSQL refuses, an empty key
 * included (the key columns are NOT NULL), refuses the fast path as in the staging table.
 */
async function copyRawTextIntoTable(
  ctx: WindowContext,
  trx: Db,
  decl: TableDecl,
  source: LoadSource,
  body: RawCopyTextBody,
  staged: StagedColumn[],
): Promise<number | 'conflict' | 'staging'> {
  assertRawTextCopyable(staged, false);
  const lineage = await copyTextLineage(ctx, trx, decl, source);
  if (lineage === undefined) return 'staging';
  const columns = [...staged.map((c) => c.name), '_source_row', ...DIRECT_LINEAGE];
  await sql`savepoint cybs_direct`.execute(trx);
  try {
    await copyRawTextLines(
      ctx.session,
      copyIntoTable(decl, columns),
      body,
      appendToLines(body.chunks, Buffer.from(`${lineage}\n`, 'utf8')),
    );
    await buildDeferredIndexes(ctx, trx, decl);
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code !== '23505') throw error;
    await sql`rollback to savepoint cybs_direct`.execute(trx);
    if (source.reopenRawCopyText === undefined) {
      throw refuseFastPath('the first load needs the staging table, and the file cannot be read again');
    }
    return 'conflict';
  }
  await noteWriter(ctx, trx, decl, source.source);
  await sql`release savepoint cybs_direct`.execute(trx);
  return body.records();
}

/**
 * COPY text lines with `suffix` (which ends with the line feed) in place of each line feed: in COPY
 * text format a LF byte always ends a line (a LF in a value is written `\n`).
 */
async function* appendToLines(
  chunks: AsyncIterable<Uint8Array | string>,
  suffix: Buffer,
): AsyncGenerator<Buffer> {
  const suffixText = suffix.toString('utf8');
  for await (const chunk of chunks) {
    if (typeof chunk === 'string') {
      yield Buffer.from(chunk.replaceAll('\n', suffixText), 'utf8');
      continue;
    }
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    // Copied into one buffer (no object per line: a chunk holds thousands of lines).
    let lines = 0;
    for (let lf = bytes.indexOf(10); lf >= 0; lf = bytes.indexOf(10, lf + 1)) lines++;
    const out = Buffer.allocUnsafe(bytes.length + lines * (suffix.length - 1));
    let start = 0;
    let at = 0;
    for (let lf = bytes.indexOf(10); lf >= 0; lf = bytes.indexOf(10, start)) {
      at += bytes.copy(out, at, start, lf);
      at += suffix.copy(out, at);
      start = lf + 1;
    }
    at += bytes.copy(out, at, start);
    yield out;
  }
}

/**
 * The fast path (src/parse/csv/raw-csv-report.ts): the file's data records go to one COPY (as COPY text with
 * a comma delimiter, most of them unchanged) into the typed staging table, so PostgreSQL splits
 * and casts them in C,
 * while the scanner checks every record on its way (a value of a non-text column must be in the
 * canonical form that PostgreSQL and the catalog's coercers read identically, a key must not be
 * empty) and gets its line number appended for `_source_row`. A record that fails a check is set
 * aside and typed or rejected by the per-row path beside the COPY (more than the scanner's limit,
 * or bytes PostgreSQL refuses, refuse the window: the caller then loads the whole file through
 * the per-row path).
 */
async function copyRawCsv(
  ctx: WindowContext,
  trx: Db,
  decl: TableDecl,
  source: LoadSource,
  body: RawCsvBody,
  staged: StagedColumn[],
  stagingName: string,
  drift: boolean,
): Promise<number> {
  if (drift) throw refuseFastPath('column types differ from the table (values need checking one by one)');
  const columns = staged.map((c) => quoteIdent(c.name)).join(', ');
  // The scanner appends each record's line number: the last column, `_source_row`.
  const copied = await copyRawBytes(
    ctx,
    `COPY pg_temp.${quoteIdent(stagingName)} (${columns}, "_source_row") FROM STDIN ${RAW_CSV_COPY_OPTIONS}`,
    body,
    rawCsvChecks(decl, staged),
  );
  // The records the scanner set aside are typed or rejected by the per-row path and staged beside.
  const aside = body.setAside();
  if (aside.length === 0) return copied;
  if (source.perRowRecords === undefined) {
    throw refuseFastPath(`${aside.length} records need the per-row path`);
  }
  const batches = source.perRowRecords(aside);
  return copied + (await copySource(ctx, decl, { ...source, batches }, staged, stagingName));
}

/**
 * A first load on the fast path (no row of the table has this source yet): the bytes go straight
 * into the table with one COPY, as `psql \copy` would, the scanner appending the line number and
 * the lineage values to every record; nothing can have vanished and nothing needs merging. When a
 * key is in the table already (another source's row) or twice in the file, PostgreSQL refuses the
 * COPY (23505); when the scanner set records aside for the per-row path, the rows cannot stay
 * either: the COPY is rolled back to a savepoint and the caller loads through the staging table
 * (`conflict`; a refusal when the bytes cannot be read again). `staging` when the table has rows
 * of this source already (a re-load), or for lineage values COPY text cannot carry (empty), without
 * reading anything.
 */
async function copyRawCsvIntoTable(
  ctx: WindowContext,
  trx: Db,
  decl: TableDecl,
  source: LoadSource,
  body: RawCsvBody,
  staged: StagedColumn[],
  stagingName: string,
): Promise<number | 'conflict' | 'staging'> {
  const { organizationId } = ctx.options.window;
  if (!(await isFirstLoad(ctx, trx, decl, source))) return 'staging';
  const org = copyTextField(organizationId);
  const src = copyTextField(source.source);
  if (org === undefined || src === undefined) return 'staging';
  const runId = ctx.options.runId;
  // After each record the scanner writes its line number (`_source_row`), then `append`: the
  // DIRECT_LINEAGE values in their order. `_loaded_at` is left to its default, now() (see
  // isFirstLoad); an empty field is NULL.
  const key = sourceKeyOf(ctx, source.source);
  const append = `,${org},${src},${runId === null ? '' : String(runId)},${key}`;
  const columns = staged.map((c) => quoteIdent(c.name)).join(', ');
  const lineage = ['_source_row', ...DIRECT_LINEAGE];
  const table = `${quoteIdent(decl.schema)}.${quoteIdent(decl.name)}`;
  // Rejects written inside the savepoint are rolled back with it, and forgotten.
  await ctx.rejects.flush();
  const rejects = ctx.rejects.mark();
  await sql`savepoint cybs_direct`.execute(trx);
  try {
    let copied = await copyRawBytes(
      ctx,
      `COPY ${table} (${columns}, ${lineage.map(quoteIdent).join(', ')}) FROM STDIN ${RAW_CSV_COPY_OPTIONS}`,
      body,
      { ...rawCsvChecks(decl, staged), append },
    );
    const aside = body.setAside();
    if (aside.length > 0 && source.perRowRecords !== undefined) {
      // The records set aside: typed or rejected by the per-row path, staged, then inserted.
      const batches = source.perRowRecords(aside);
      await copySource(ctx, decl, { ...source, batches }, staged, stagingName);
      const names = staged.map((c) => sql.id(c.name));
      const inserted = await sql`
        insert into ${sql.id(decl.schema, decl.name)} (${sql.join([...names, ...lineage.map((c) => sql.id(c))])})
        select ${sql.join(names)}, "_source_row", ${organizationId}::text, ${source.source}::text,
               ${runId}::bigint, ${key}::bigint
          from ${sql.id('pg_temp', stagingName)}`.execute(trx);
      copied += Number(inserted.numAffectedRows ?? 0n);
    }
    if (aside.length === 0 || source.perRowRecords !== undefined) {
      await buildDeferredIndexes(ctx, trx, decl);
      await noteWriter(ctx, trx, decl, source.source);
      await sql`release savepoint cybs_direct`.execute(trx);
      return copied;
    }
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    const cause = error instanceof CybsError ? error.cause : undefined;
    if (code !== '23505' && (cause as { code?: unknown } | undefined)?.code !== '23505') throw error;
  }
  // A key met in the table or twice in the file: the staging table does what this cannot (merge,
  // de-duplicate); what was staged and rejected here is rolled back and forgotten.
  await sql`rollback to savepoint cybs_direct`.execute(trx);
  ctx.rejects.reset(rejects);
  if (source.reopenRawCsv === undefined) {
    throw refuseFastPath('the first load needs the staging table, and the file cannot be read again');
  }
  return 'conflict';
}

/** What the scanner checks in every record: canonical non-text values, non-empty keys. */
function rawCsvChecks(decl: TableDecl, staged: StagedColumn[]): RawCsvChecks {
  const types = staged.map((c) => {
    if (!(PG_TYPES as readonly string[]).includes(c.sourceType)) {
      throw refuseFastPath(`column ${c.name} has type ${c.sourceType}`);
    }
    return c.sourceType as PgType;
  });
  const required = decl.naturalKey
    .filter((k) => !KEY_LINEAGE_COLUMNS.has(k))
    .map((k) => staged.findIndex((c) => c.name === k));
  return { types, required };
}

/** One COPY of a CSV body (checked by its scanner); what PostgreSQL refuses is a refusal. */
async function copyRawBytes(
  ctx: WindowContext,
  statement: string,
  body: RawCsvBody,
  checks: RawCsvChecks,
): Promise<number> {
  let copied: number;
  try {
    copied = await ctx.session.copyFrom(statement, body.read(checks));
  } catch (error) {
    if (isFastPathRefusal(error)) throw error;
    if (isSourceFailure(error)) throw error;
    throw refuseFastPath(`PostgreSQL refused the data (${errorMessage(error)})`, error);
  }
  if (copied !== body.records()) {
    throw refuseFastPath(`COPY read ${copied} rows where the file has ${body.records()} lines`);
  }
  return copied;
}

function describeBadValue(
  column: StagedColumn,
  value: LoadValue | undefined,
  table: string,
): [string, string] {
  if (typeof value === 'string' && escapeCopyText(value) === undefined) {
    return [
      LOAD_ERROR_CODES.invalidText,
      `Column "${column.name}" of ${table}: the value holds a NUL character, which PostgreSQL text cannot store.`,
    ];
  }
  const shown = typeof value === 'string' ? JSON.stringify(valuePreview(value)) : String(value);
  return [
    LOAD_ERROR_CODES.typeMismatch,
    `Column "${column.name}" of ${table} is ${column.tableType}; the value ${shown} (declared ${column.sourceType} by the source) does not fit it.`,
  ];
}

/** `text`, cut to VALUE_PREVIEW characters (and `…`) for an error message. */
function valuePreview(text: string): string {
  return text.length > VALUE_PREVIEW ? `${text.slice(0, VALUE_PREVIEW)}…` : text;
}

/** A COPY refused by PostgreSQL: name the table, column and record when its error says so. */
function copyError(
  error: unknown,
  table: string,
  source: string,
  lineMap: { recordAt(line: number): number | undefined },
): CybsError {
  const e = error as { code?: unknown; where?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  if (!code || !code.startsWith('22')) return toLoadError(error, { table, source });
  const where = typeof e?.where === 'string' ? e.where : '';
  const match = /line (\d+)(?:, column ([^:]+))?/.exec(where);
  const line = match ? Number(match[1]) : undefined;
  const column = match?.[2];
  const recordNumber = line === undefined ? undefined : lineMap.recordAt(line);
  const at = [
    column ? `column "${column}"` : undefined,
    recordNumber !== undefined ? `record ${recordNumber}` : undefined,
  ]
    .filter(Boolean)
    .join(', ');
  return new CybsError(
    LOAD_ERROR_CODES.copyRejected,
    `PostgreSQL refused a value for ${table}${at ? ` (${at})` : ''} from ${source}: ${errorMessage(error)}. ` +
      'The parser typed it for the column, so the catalog type or the parser is wrong; nothing of the window was committed.',
    { stage: 'load', cause: error, context: { table, source, column, recordNumber, sqlState: code, where } },
  );
}

interface MergeCounts {
  distinct: number;
  inserted: number;
  updated: number;
  /** The (sub)transaction id the rows were written with, when any were (see LoadedState.writers). */
  writer?: string;
}

/**
 * The staged rows are upserted set-wise; a conflicting row is rewritten only when its data,
 * `_source` or `_source_row` differ, so an identical re-load writes nothing (`_run_id` and
 * `_loaded_at` of unchanged rows stay).
 *
 * A re-load of a source that already owns rows first keeps only the staged rows that differ
 * (`changedRows`): the upsert locks every row whose key it meets, even one it does not rewrite,
 * and a locked row is a written page.
 *
 * A report rarely holds a key twice, so the rows go in as they are first (no sort): one statement
 * cannot touch a row twice, so it fails (21000) when the source does hold a key twice, and then
 * (rolled back to a savepoint) the rows are de-duplicated on the natural key, the last record of
 * the source winning, and upserted again; each earlier record of a repeated key is a reject
 * (rejectRepeatedKeys), so no record vanishes unseen.
 */
async function mergeStaging(
  ctx: WindowContext,
  trx: Db,
  decl: TableDecl,
  source: LoadSource,
  staged: StagedColumn[],
  stagingName: string,
  stagedCount: number,
): Promise<MergeCounts> {
  const options = ctx.options;
  const staging = sql.id('pg_temp', stagingName);
  const deduplicated = async (): Promise<MergeCounts> => {
    await rejectRepeatedKeys(ctx, trx, decl, source, staging);
    return upsertStaging(trx, decl, source, staged, staging, options, true);
  };
  const changed = await changedRows(trx, decl, source, staged, stagingName, stagedCount, options);
  if (changed === 'repeated key') return deduplicated();
  if (changed === 'none') return { distinct: stagedCount, inserted: 0, updated: 0 };
  await sql`savepoint cybs_merge`.execute(trx);
  try {
    const counts = await upsertStaging(trx, decl, source, staged, changed ?? staging, options, false);
    await sql`release savepoint cybs_merge`.execute(trx);
    return { ...counts, distinct: stagedCount };
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code !== '21000') throw error;
    await sql`rollback to savepoint cybs_merge`.execute(trx);
  }
  return deduplicated();
}

/**
 * Every staged record whose natural key a later record of the source (a higher `_source_row`)
 * repeats goes to etl.rejects (LOAD_DUPLICATE_KEY): its values as staged, as a JSON object (keys
 * in jsonb's order, the same on every load path whatever the order of the source's columns), and
 * the record that is loaded in its place. Written by one statement, however
 * many there are; counted with the window's rejects (and its threshold).
 */
async function rejectRepeatedKeys(
  ctx: WindowContext,
  trx: Db,
  decl: TableDecl,
  source: LoadSource,
  staging: RawBuilder<unknown>,
): Promise<void> {
  const { pipeline, organizationId, windowKey } = ctx.options.window;
  const key = dataKey(decl);
  const partition = key.length > 0 ? sql`partition by ${sql.join(key.map((k) => sql.id('s', k)))}` : sql``;
  const keyText =
    key.length > 0
      ? sql.join(
          key.map((k) => sql`${`${k}=`}::text || coalesce(${sql.id('s', k)}::text, '')`),
          sql` || ', ' || `,
        )
      : sql`''`;
  const table = `${decl.schema}.${decl.name}`;
  const result = await sql<{ n: string; samples: { line: number; message: string }[] | null }>`
    with repeated as (
      select s."_source_row" as line,
             max(s."_source_row") over (${partition}) as kept,
             ${keyText} as key_text,
             (to_jsonb(s) - '_source_row')::text as raw
        from ${staging} as s
    ), written as (
      insert into etl.rejects (pipeline, organization_id, window_key, source, record_number, raw_text,
                               error_code, message, run_id)
      select ${pipeline}, ${organizationId}, ${windowKey}, ${source.source}, r.line, r.raw,
             ${LOAD_ERROR_CODES.duplicateKey},
             ${`${source.source} record `} || r.line || ${`: its natural key in ${table} (`} || r.key_text ||
               ${') is repeated by record '} || r.kept || ${', which is loaded; this record is kept as a reject.'},
             ${ctx.options.runId}::bigint
        from repeated as r
       where r.line < r.kept
      returning record_number, message
    )
    select count(*)::bigint as n,
           (select json_agg(json_build_object('line', w.record_number, 'message', w.message))
              from (select * from written order by record_number limit ${REJECT_SAMPLES}) as w) as samples
      from written`.execute(trx);
  const row = result.rows[0]!;
  ctx.rejects.count += Number(row.n);
  for (const sample of row.samples ?? []) {
    if (ctx.rejects.samples.length >= REJECT_SAMPLES) break;
    ctx.rejects.samples.push({
      table,
      recordNumber: Number(sample.line),
      code: LOAD_ERROR_CODES.duplicateKey,
      message: sample.message,
    });
  }
  checkRejects(ctx, false);
}

/**
 * For a re-load of a source that owns rows already (a re-run of its window): the staged rows that
 * differ from the row this source wrote for their key, in a temp table, or `none` when every
 * staged row equals one. This hash anti join writes nothing, where an upsert of every staged row
 * would lock, and so write, every page of the table.
 *
 * Undefined when the source owns no rows (nothing can be left out), or when more than half of the
 * staged rows changed: then the upsert takes the staging table as it is, which is cheaper than
 * going on with most of it copied into the temp table.
 * `repeated key` when a changed row's key is staged more than once: leaving out the copy equal to
 * the table's row would hide the repeat from the upsert, so the de-duplicating upsert of the whole
 * staging table decides which record wins. When no row changed, no key repeats: each staged row
 * equals a row of its own key whose `_source_row` is its own, and two staged records of one key
 * have different `_source_row`s.
 */
async function changedRows(
  trx: Db,
  decl: TableDecl,
  source: LoadSource,
  staged: StagedColumn[],
  stagingName: string,
  stagedCount: number,
  options: LoadWindowOptions,
): Promise<RawBuilder<unknown> | 'none' | 'repeated key' | undefined> {
  const target = sql.id(decl.schema, decl.name);
  const { organizationId } = options.window;
  const owns = await sql<{ owns: boolean }>`
    select ${sourceHasRows(decl, organizationId, source)} as owns`.execute(trx);
  if (!owns.rows[0]!.owns) return undefined;
  const staging = sql.id('pg_temp', stagingName);
  const changedName = `${stagingName}_changed`;
  const changed = sql.id('pg_temp', changedName);
  const compared = [...staged.map((c) => c.name), '_source_row'];
  const row = (alias: string) => sql.join(compared.map((c) => sql.id(alias, c)));
  // Linear whatever the statistics say (see deleteVanished): a nested loop over a target the
  // planner believes empty would scan it once per staged row.
  await sql`select set_config('enable_nestloop', 'off', true)`.execute(trx);
  await sql`
    create temp table ${sql.id(changedName)} on commit drop as
    select * from ${staging} as s
     where not exists (select 1 from ${target} as t
                        where ${ofSource(organizationId, source.source, 't')}
                          and ${sameKey(decl, 't', 's')}
                          and (${row('t')}) is not distinct from (${row('s')}))`.execute(trx);
  const counted = await sql<{ n: string }>`select count(*) as n from ${changed}`.execute(trx);
  const count = Number(counted.rows[0]!.n);
  if (count === 0 || count > stagedCount / 2) {
    await sql`drop table ${changed}`.execute(trx);
    await sql`reset enable_nestloop`.execute(trx);
    return count === 0 ? 'none' : undefined;
  }
  const result = await sql<{ repeated: boolean }>`
    select exists (select 1 from ${changed} as c join ${staging} as s on ${sameKey(decl, 'c', 's')}
                    where (${row('c')}) is distinct from (${row('s')})) as repeated`.execute(trx);
  await sql`reset enable_nestloop`.execute(trx);
  return result.rows[0]!.repeated ? 'repeated key' : changed;
}

/** The natural key's columns other than `_organization_id` and `_source` (which a source's rows share). */
function dataKey(decl: TableDecl): string[] {
  return decl.naturalKey.filter((k) => k !== '_organization_id' && k !== '_source');
}

/** `a.k = b.k` for each of those columns (`true` when there are none): two rows of one source, same key. */
function sameKey(decl: TableDecl, a: string, b: string): RawBuilder<unknown> {
  const matches = dataKey(decl).map((k) => sql`${sql.id(a, k)} = ${sql.id(b, k)}`);
  return matches.length > 0 ? sql.join(matches, sql` and `) : sql`true`;
}

async function upsertStaging(
  trx: Db,
  decl: TableDecl,
  source: LoadSource,
  staged: StagedColumn[],
  staging: RawBuilder<unknown>,
  options: LoadWindowOptions,
  dedupe: boolean,
): Promise<MergeCounts> {
  const data = staged.map((c) => c.name);
  const keyExprs = dataKey(decl).map((k) => sql.id('s', k));
  const distinctOn = keyExprs.length > 0 ? sql.join(keyExprs) : sql`true`;
  const insertColumns = [...data, ...LINEAGE_COLUMNS.map((c) => c.name)];
  const compared = [...data, '_source', '_source_row', '_source_key'];
  const updated = [...data, '_source', '_source_row', '_run_id', '_loaded_at', '_source_key'];
  const target = sql.id(decl.schema, decl.name);
  const src = sql`
      select ${dedupe ? sql`distinct on (${distinctOn})` : sql``}
             ${sql.join([...data, '_source_row'].map((c) => sql.id('s', c)))},
             ${options.window.organizationId}::text as "_organization_id",
             ${source.source}::text as "_source",
             ${options.runId}::bigint as "_run_id",
             now() as "_loaded_at",
             ${sourceKeyQuery(options.window.organizationId, source.source)} as "_source_key"
        from ${staging} as s
        ${dedupe ? sql`order by ${distinctOn}, s."_source_row" desc` : sql``}`;
  const result = await sql<{
    distinct_rows: string | null;
    inserted: string;
    updated: string;
    writer: string | null;
  }>`
    with ${dedupe ? sql`src as materialized (${src}),` : sql``} merged as (
      insert into ${target} as t (${sql.join(insertColumns.map((c) => sql.id(c)))})
      select ${sql.join(insertColumns.map((c) => sql.id('src', c)))} from ${dedupe ? sql`src` : sql`(${src}) as src`}
      on conflict (${sql.join(naturalKeyIndexColumns(decl).map((c) => sql.id(c)))}) do update
         set ${sql.join(updated.map((c) => sql`${sql.id(c)} = excluded.${sql.id(c)}`))}
       where (${sql.join(compared.map((c) => sql.id('t', c)))})
             is distinct from (${sql.join(compared.map((c) => sql.id('excluded', c)))})
      returning (t.xmax = 0) as inserted, t.xmin::text as writer
    )
    select ${dedupe ? sql`(select count(*) from src)` : sql`null`}::bigint as distinct_rows,
           count(*) filter (where inserted)::bigint as inserted,
           count(*) filter (where not inserted)::bigint as updated,
           min(writer) as writer
      from merged`.execute(trx);
  const row = result.rows[0]!;
  return {
    distinct: Number(row.distinct_rows ?? 0),
    inserted: Number(row.inserted),
    updated: Number(row.updated),
    ...(row.writer !== null ? { writer: row.writer } : {}),
  };
}

/**
 * Delete the rows this source owned that it no longer has. Only rows whose `_source` is this
 * source (and organization) are candidates: rows another source wrote last are never touched.
 */
async function deleteVanished(
  trx: Db,
  decl: TableDecl,
  source: LoadSource,
  staging: RawBuilder<unknown>,
  options: LoadWindowOptions,
  distinct: number,
): Promise<number> {
  // After the merge, every distinct staged key is a row of this source (inserted, updated, or
  // unchanged because equal, `_source` included), so the source owns `distinct` rows plus the
  // vanished ones: when it owns no more, there is nothing to delete, and counting its rows (an
  // index scan) is much cheaper than the anti join.
  const owned = await sql<{ n: string }>`
    select count(*) as n from ${sql.id(decl.schema, decl.name)}
     where ${ofSource(options.window.organizationId, source.source)}`.execute(trx);
  if (Number(owned.rows[0]!.n) === distinct) return 0;
  // The target's statistics do not see the rows merged in this transaction (a table created or
  // filled by this load looks empty to the planner), so it would pick a nested-loop anti join that
  // scans the whole staging table once per target row: quadratic, minutes for 100k rows. A hash
  // (or merge) anti join is linear whatever the estimates.
  await sql`select set_config('enable_nestloop', 'off', true)`.execute(trx);
  const result = await sql`
    delete from ${sql.id(decl.schema, decl.name)} as t
     where ${ofSource(options.window.organizationId, source.source, 't')}
       and not exists (select 1 from ${staging} as s where ${sameKey(decl, 's', 't')})`.execute(trx);
  await sql`reset enable_nestloop`.execute(trx);
  return Number(result.numAffectedRows ?? 0n);
}
