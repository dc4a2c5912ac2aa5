/**
 * The merge of a staging table into its target and the deletes that follow it, executed in the load
 * transaction (the statements are merge-sql.ts's).
 */
import { sql } from 'kysely';
import type { RawBuilder } from 'kysely';
import { LOAD_ERROR_CODES } from '../../warehouse/database-errors.js';
import type { Db } from '../../warehouse/warehouse.js';
import type { LoadSource, TableDecl } from '../table-spec.js';
import type { StagedColumn, WindowContext } from './context.js';
import {
  changedKeyRepeatedSql,
  countOwnedSql,
  createChangedRowsSql,
  deleteItemsLeftBehindSql,
  deleteVanishedSql,
  noNestedLoopSql,
  ownsRowsSql,
  rejectRepeatedKeysSql,
  resetNestedLoopSql,
  upsertSql,
} from './merge-sql.js';
import type { MergeIdentity } from './merge-sql.js';
import { REJECT_SAMPLES, checkRejects } from './rejects.js';
import { hasSqlState, withSavepoint } from './savepoint.js';
import type { LoadWindowOptions, LoadWindowTarget } from './types.js';

export interface MergeCounts {
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
export async function mergeStaging(
  ctx: WindowContext,
  trx: Db,
  decl: TableDecl,
  source: LoadSource,
  staged: StagedColumn[],
  stagingName: string,
  stagedCount: number,
): Promise<MergeCounts> {
  const who = mergeIdentity(ctx, source);
  const data = staged.map((c) => c.name);
  const staging = sql.id('pg_temp', stagingName);
  const deduplicated = async (): Promise<MergeCounts> => {
    await rejectRepeatedKeys(ctx, trx, decl, who, staging);
    return upsert(trx, upsertSql(decl, who, data, staging, true));
  };
  const changed = await changedRows(trx, decl, who, staged, stagingName, stagedCount);
  if (changed === 'repeated key') return deduplicated();
  if (changed === 'none') return { distinct: stagedCount, inserted: 0, updated: 0 };
  const once = await withSavepoint(
    trx,
    'cybs_merge',
    ctx.stagingMade,
    () => upsert(trx, upsertSql(decl, who, data, changed ?? staging, false)),
    (error) => hasSqlState(error, '21000'),
  );
  if (once.done) return { ...once.value, distinct: stagedCount };
  return deduplicated();
}

export function mergeIdentity(ctx: WindowContext, source: LoadSource): MergeIdentity {
  return { ...ctx.options.window, source: source.source, runId: ctx.options.runId };
}

export async function upsert(trx: Db, statement: ReturnType<typeof upsertSql>): Promise<MergeCounts> {
  const row = (await statement.execute(trx)).rows[0]!;
  return {
    distinct: Number(row.distinct_rows ?? 0),
    inserted: Number(row.inserted),
    updated: Number(row.updated),
    ...(row.writer !== null ? { writer: row.writer } : {}),
  };
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
  who: MergeIdentity,
  staging: RawBuilder<unknown>,
): Promise<void> {
  const table = `${decl.schema}.${decl.name}`;
  const result = await rejectRepeatedKeysSql(decl, who, staging, REJECT_SAMPLES).execute(trx);
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
  who: MergeIdentity,
  staged: StagedColumn[],
  stagingName: string,
  stagedCount: number,
): Promise<RawBuilder<unknown> | 'none' | 'repeated key' | undefined> {
  const owns = await ownsRowsSql(decl, who.organizationId, who.source).execute(trx);
  if (!owns.rows[0]!.owns) return undefined;
  const changedName = `${stagingName}_changed`;
  const changed = sql.id('pg_temp', changedName);
  const compared = [...staged.map((c) => c.name), '_source_row'];
  // Linear whatever the statistics say (see noNestedLoopSql): a nested loop over a target the
  // planner believes empty would scan it once per staged row.
  await noNestedLoopSql().execute(trx);
  await createChangedRowsSql(
    decl,
    who.organizationId,
    who.source,
    compared,
    stagingName,
    changedName,
  ).execute(trx);
  const counted = await sql<{ n: string }>`select count(*) as n from ${changed}`.execute(trx);
  const count = Number(counted.rows[0]!.n);
  if (count === 0 || count > stagedCount / 2) {
    await sql`drop table ${changed}`.execute(trx);
    await resetNestedLoopSql().execute(trx);
    return count === 0 ? 'none' : undefined;
  }
  const result = await changedKeyRepeatedSql(decl, compared, stagingName, changedName).execute(trx);
  await resetNestedLoopSql().execute(trx);
  return result.rows[0]!.repeated ? 'repeated key' : changed;
}

/**
 * Delete the rows this source owned that it no longer has. Only rows whose `_source` is this
 * source (and organization) are candidates: rows another source wrote last are never touched.
 */
export async function deleteVanished(
  trx: Db,
  decl: TableDecl,
  source: LoadSource,
  staging: RawBuilder<unknown>,
  options: LoadWindowOptions,
  distinct: number,
): Promise<number> {
  const { organizationId } = options.window;
  // After the merge, every distinct staged key is a row of this source (inserted, updated, or
  // unchanged because equal, `_source` included), so the source owns `distinct` rows plus the
  // vanished ones: when it owns no more, there is nothing to delete, and counting its rows (an
  // index scan) is much cheaper than the anti join.
  const owned = await countOwnedSql(decl, organizationId, source.source).execute(trx);
  if (Number(owned.rows[0]!.n) === distinct) return 0;
  await noNestedLoopSql().execute(trx);
  const result = await deleteVanishedSql(decl, organizationId, source.source, staging).execute(trx);
  await resetNestedLoopSql().execute(trx);
  return Number(result.numAffectedRows ?? 0n);
}

/**
 * A child table (TableDecl.parent) loaded with its records: the items that other sources left for
 * the records this load wrote (a record now owned by this source, whose items another source had
 * loaded) are deleted, so a record's items are the ones of the source that last wrote it. The
 * records' target must come first. Records keyed by source and row own their items already.
 * Returns the rows deleted.
 */
export async function deleteItemsLeftBehind(
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
  const statement = deleteItemsLeftBehindSql(
    decl,
    records.table,
    parent.key,
    options.window.organizationId,
    source.source,
  );
  const result = await statement.execute(trx);
  return Number(result.numAffectedRows ?? 0n);
}
