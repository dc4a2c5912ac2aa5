/**
 * One table's load: the strategy its source calls for (CSV bytes, COPY text lines, pre-encoded
 * segments, typed records), first load straight into the table or staging and merge.
 */
import { toLoadError } from '../../warehouse/database-errors.js';
import type { Db } from '../../warehouse/warehouse.js';
import { copyRawText } from './raw-text-copy.js';
import { sourceError } from './context.js';
import type { WindowContext } from './context.js';
import { copyPreEncoded, copyRawCsv, copySource } from './copy-staging.js';
import {
  copyRawCsvIntoTable,
  copyRawTextIntoTable,
  copyTextIntoTable,
  firstLoadResult,
} from './first-load.js';
import { deleteVanished, mergeStaging } from './merge.js';
import { buildDeferredIndexes, prepareTarget } from './prepare-target.js';
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
