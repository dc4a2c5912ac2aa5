/**
 * One table's load: the target made ready, then its source's strategy (strategy.ts): a first load
 * straight into the table, or a copy into staging and the merge.
 */
import { toLoadError } from '../../warehouse/database-errors.js';
import type { Db } from '../../warehouse/warehouse.js';
import { sourceError } from './context.js';
import type { WindowContext } from './context.js';
import { firstLoadResult } from './first-load.js';
import { deleteVanished, mergeStaging } from './merge.js';
import { buildDeferredIndexes, ensureStaging, prepareTarget } from './prepare-target.js';
import { strategyFor } from './strategy.js';
import type { LoadWindowTarget, TableLoadResult } from './types.js';
import { sql } from 'kysely';

export async function loadTarget(
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
    const copy = { ctx, trx, decl, staged, stagingName, drift: drift.length > 0 };
    const strategy = strategyFor(copy, source);

    const rejectedBefore = ctx.rejects.count;
    const started = performance.now();
    const direct = await strategy.intoTable();
    if (direct !== undefined) {
      // Nothing merged or deleted.
      return firstLoadResult(ctx, tableName, source.source, added, direct, started, rejectedBefore);
    }
    const stagedCount = await strategy.intoStaging();
    if (stagedCount === 0 && ctx.newSources.has(source.source)) {
      // A source new to etl.sources that brought no row: it owns nothing to merge or delete.
      return firstLoadResult(
        ctx,
        tableName,
        source.source,
        added,
        0,
        started,
        rejectedBefore,
        'table load phases (a new source with no rows: nothing to merge)',
      );
    }
    await ensureStaging(copy);
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
