/**
 * A re-load of the very bytes the window's last load read (a report file, or an on-demand window's
 * spooled pages), into tables that something else has touched since (a row edited by hand): only
 * the source's rows that are not as that load left them are read from the source again, staged and
 * merged, where a full re-load would stage and compare
 * every record of the file. The same statements as the full merge decide what is rewritten, so
 * the tables, the window's rejects and the result end as the full merge would leave them.
 */
import { isFastPathRefusal } from '../../copy-text/fast-path-refusal.js';
import { isCybsError } from '../../errors.js';
import { LOAD_ERROR_CODES } from '../../warehouse/database-errors.js';
import type { Db } from '../../warehouse/warehouse.js';
import type { WindowContext } from './context.js';
import { copySource } from './copy-staging.js';
import { mergeIdentity, upsert } from './merge.js';
import { countOwnedSql, createChangedRowsSql, sameKey, upsertSql } from './merge-sql.js';
import { prepareTarget } from './prepare-target.js';
import { checkRejects, restampWindowRejects } from './rejects.js';
import { fewTouched, loadedState } from './reload-check.js';
import type { SourceRows } from './reload-check.js';
import { hasSqlState, withSavepoint } from './savepoint.js';
import { ofSource } from './source-keys.js';
import type { LoadSource, RecordsOn } from '../table-spec.js';
import type { LoadWindowResult, LoadWindowTarget, LoadedState, TableLoadResult } from './types.js';
import { sql } from 'kysely';

/** Thrown inside the restore's savepoint: something it cannot vouch for, so the full load follows. */
class NotRestorable extends Error {}

/**
 * Restore what was touched since the window's last load, when the load reads the very bytes that
 * load read (LoadWindowOptions.state.skipIfUnchanged) and its tables hold what it left but for a
 * few rows (`counts`, from tablesUnchangedSinceLoadIn; fewTouched): each of the source's rows that
 * none of the last load's writers wrote, and each line whose row is gone (deleted, or taken over
 * by another source), is read again from the file by its line and merged as the full merge would
 * (the rows equal to the file left as they are). Only when every touched row still has the key of
 * its line's record, and the source then owns as many rows as the last load left: nothing was
 * added under the source, and the full merge would delete nothing. Otherwise (a row added under
 * the source, a key changed), for a source with no way to read single records again (recordsOn),
 * a key the file held twice, a child table, more rows touched than fewTouched allows, or a record
 * that reads differently: undefined, having written nothing, and the caller loads the whole file.
 */
export async function restoreTouched(
  ctx: WindowContext,
  trx: Db,
  targets: readonly LoadWindowTarget[],
  previous: LoadedState,
  counts: readonly SourceRows[],
): Promise<LoadWindowResult | undefined> {
  if (counts.length !== targets.length || !fewTouched(previous, counts)) return undefined;
  if (counts.every((c, i) => c.other === 0 && c.owned === previous.tables[i]!.owned)) return undefined;
  for (const { table, source } of targets) {
    if (recordsOnOf(source) === undefined || table.parent !== undefined) return undefined;
  }
  // The reject threshold as the load would check it (the file's rejects are the last load's).
  ctx.rowsLoaded = previous.tables.reduce((n, t) => n + t.owned, 0);
  ctx.rejects.count = previous.rejected;
  const rejects = ctx.rejects.mark();
  const writers = new Set(ctx.writers);
  const undo = () => {
    ctx.rowsLoaded = 0;
    ctx.rejects.reset({ count: 0, samples: 0 });
    ctx.writers = writers;
    ctx.abort = undefined;
  };
  try {
    checkRejects(ctx, true);
  } catch {
    undo();
    return undefined;
  }
  const outcome = await withSavepoint(
    trx,
    'cybs_touched',
    ctx.stagingMade,
    async () => {
      const tables: TableLoadResult[] = [];
      const touchedAt: string[][] = [];
      for (const [index, target] of targets.entries()) {
        const restored = await restoreTable(ctx, trx, target, index, previous, counts[index]!);
        tables.push(restored.result);
        touchedAt.push(restored.touchedAt);
      }
      if (ctx.rejects.count !== rejects.count) throw new NotRestorable('a record read again was rejected');
      return { tables, touchedAt };
    },
    // A record read again that is now rejected (over the cap) or a key met twice: the full load decides.
    (error) =>
      error instanceof NotRestorable ||
      isFastPathRefusal(error) ||
      hasSqlState(error, '21000') ||
      (isCybsError(error) && error.code === LOAD_ERROR_CODES.rejectThreshold),
  );
  if (!outcome.done) {
    ctx.options.logger?.debug(
      { reason: (outcome.error as Error).message },
      'touched rows not restorable one by one; loading the whole file',
    );
    undo();
    return undefined;
  }
  const { tables, touchedAt } = outcome.value;
  if (previous.rejected > 0) await restampWindowRejects(trx, ctx.options.window, ctx.options.runId);
  const result: LoadWindowResult = { tables, rowsLoaded: ctx.rowsLoaded, rowsRejected: previous.rejected };
  const loaded = targets.map((t) => ({ decl: t.table, source: t.source.source }));
  const state = await loadedState(ctx, trx, tables, loaded, { previous, touchedAt });
  if (state) result.state = state;
  const { pipeline, organizationId, windowKey } = ctx.options.window;
  ctx.options.logger?.info(
    {
      pipeline,
      organizationId,
      windowKey,
      touched: counts.reduce((n, c) => n + c.other, 0),
      missing: counts.reduce((n, c, i) => n + previous.tables[i]!.owned - c.owned, 0),
      rewritten: tables.reduce((n, t) => n + t.updated, 0),
    },
    "the same sources as the window's last load: only the rows touched since were read again",
  );
  return result;
}

/**
 * One table's touched rows and missing lines, read again from its source and merged; with the
 * ctids the touched rows were found at (RestoredRows.touchedAt). The missing
 * lines (rows deleted, or taken over by another source, since) are the lines a record of the file
 * starts on, from its first data line on, that neither a row of the source nor a reject of the
 * window holds: there must be as many as the rows the source lost.
 */
async function restoreTable(
  ctx: WindowContext,
  trx: Db,
  target: LoadWindowTarget,
  index: number,
  previous: LoadedState,
  count: SourceRows,
): Promise<{ result: TableLoadResult; touchedAt: string[] }> {
  const { table: decl, source } = target;
  const recordsOn = recordsOnOf(source);
  if (recordsOn === undefined) throw new NotRestorable('no recordsOn');
  const { organizationId } = ctx.options.window;
  const tableName = `${decl.schema}.${decl.name}`;
  const table = sql.id(decl.schema, decl.name);
  const before = previous.tables[index]!;
  const touched = count.touched;
  const lines = touched.map((r) => (r.line === null ? NaN : Number(r.line)));
  if (touched.length !== count.other || lines.some((l) => !Number.isSafeInteger(l))) {
    throw new NotRestorable('a touched row has no line');
  }
  if (new Set(lines).size !== lines.length) throw new NotRestorable('two touched rows of one line');
  const lost = before.owned - count.owned;
  const result: TableLoadResult = {
    table: tableName,
    inserted: 0,
    updated: 0,
    unchanged: before.owned,
    deleted: 0,
    rejected: before.rejected,
    staged: before.owned,
    duplicates: 0,
    columnsAdded: [],
  };
  const touchedAt = touched.map((r) => r.at);
  if (lines.length === 0 && lost === 0) return { result, touchedAt };
  const { staged, drift, stagingName } = await prepareTarget(ctx, trx, target, index);
  if (drift.length > 0) throw new NotRestorable('column types differ from the table');
  // The touched rows' lines, and the records in the lines no row or reject holds (the whole file
  // read), which are the lines of the rows lost.
  const wanted = new Set(lines);
  // A spooled source's sections share the window's rejects, whose record numbers do not say which
  // section they are of: the lines no row holds cannot be told from them.
  if (lost > 0 && source.kind === 'spooled') throw new NotRestorable('rows lost from a spooled source');
  const free = lost > 0 ? await freeLines(ctx, trx, decl, source.source, recordsOn.first) : undefined;
  const read = await recordsOn.read({
    wants: (line) => wanted.has(line) || (free !== undefined && free(line)),
    through: free ? Infinity : Math.max(...lines),
  });
  if (read === undefined) throw new NotRestorable('the records cannot be told by line');
  const missing = read.lines.filter((line) => !wanted.has(line));
  if (read.lines.length - missing.length !== lines.length)
    throw new NotRestorable('a touched line is no record');
  if (missing.length !== lost) throw new NotRestorable('the lost rows are not the free lines');
  const copy = { ctx, trx, decl, staged, stagingName, drift: false };
  const copied = await copySource(copy, source.source, read.batches);
  if (copied !== lines.length + missing.length) throw new NotRestorable('a line read again gave no record');
  // Each touched row is its line's record, changed: the same key (and so the row the full merge
  // compares that record with).
  const staging = sql.id('pg_temp', stagingName);
  if (lines.length > 0) {
    const matched = await sql<{ n: string }>`
      select count(*) as n from ${staging} as s
        join ${table} as t on t.ctid = any(${`{${touchedAt.map((at) => `"${at}"`).join(',')}}`}::tid[])
       where t."_source_row" = s."_source_row" and ${sameKey(decl, 't', 's')}`.execute(trx);
    if (Number(matched.rows[0]!.n) !== lines.length) throw new NotRestorable("a touched row's key changed");
  }
  // A few rows: the planner is told so, and looks each up by the table's key index.
  await sql`analyze ${staging}`.execute(trx);
  // The full merge's statements: the staged rows that differ from the table's, then their upsert.
  const changedName = `${stagingName}_changed`;
  const compared = [...staged.map((c) => c.name), '_source_row'];
  await createChangedRowsSql(decl, organizationId, source.source, compared, stagingName, changedName).execute(
    trx,
  );
  const who = mergeIdentity(ctx, source);
  const data = staged.map((c) => c.name);
  const merge = await upsert(trx, upsertSql(decl, who, data, sql.id('pg_temp', changedName), false));
  if (merge.writer !== undefined) ctx.writers.add(merge.writer);
  // The source owns what the last load left again, and nothing else: the full merge would then
  // delete nothing either.
  if (lost > 0 || merge.inserted > 0) {
    const owned = await countOwnedSql(decl, organizationId, source.source).execute(trx);
    if (Number(owned.rows[0]!.n) !== before.owned) throw new NotRestorable('the source owns other rows');
  }
  return {
    result: {
      ...result,
      inserted: merge.inserted,
      updated: merge.updated,
      unchanged: before.owned - merge.inserted - merge.updated,
    },
    touchedAt,
  };
}

/**
 * How a source reads single records again, and the `_source_row` its first record has: a CSV file's
 * first data line, a spooled source's record 1 (on-demand pages number their records from 1).
 */
function recordsOnOf(source: LoadSource): { read: RecordsOn; first: number } | undefined {
  if (source.kind === 'csv-bytes' && source.recordsOn) {
    return { read: source.recordsOn, first: source.body.firstLine };
  }
  if (source.kind === 'spooled' && source.recordsOn) return { read: source.recordsOn, first: 1 };
  return undefined;
}

/**
 * Whether a line from `firstLine` on is held by neither a row of the source nor a reject of the
 * window, as a test on the ranges between the lines held (one sort of the source's lines).
 */
async function freeLines(
  ctx: WindowContext,
  trx: Db,
  decl: LoadWindowTarget['table'],
  source: string,
  firstLine: number,
): Promise<(line: number) => boolean> {
  const { pipeline, organizationId, windowKey } = ctx.options.window;
  // The source's lines sorted in memory (a million take some 30 MB).
  await sql`select set_config('work_mem', '64MB', true)`.execute(trx);
  const ranges = await sql<{ a: string; b: string | null }>`
    select g.a::text as a, g.b::text as b from (
      select l + 1 as a, lead(l) over (order by l) - 1 as b
        from (select "_source_row" as l from ${sql.id(decl.schema, decl.name)}
               where ${ofSource(organizationId, source)}
              union all
              select r.record_number from etl.rejects as r
               where r.pipeline = ${pipeline} and r.organization_id = ${organizationId}
                 and r.window_key = ${windowKey} and r.record_number is not null
              union all
              select ${firstLine - 1}::bigint) as held
    ) as g
     where g.b is null or g.b >= g.a
     order by g.a`.execute(trx);
  await sql`reset work_mem`.execute(trx);
  const starts = ranges.rows.map((r) => Number(r.a));
  const ends = ranges.rows.map((r) => (r.b === null ? Infinity : Number(r.b)));
  return (line) => {
    // The last range starting at or before the line.
    let lo = 0;
    let hi = starts.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid]! <= line) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found >= 0 && line <= ends[found]! && line >= firstLine;
  };
}
