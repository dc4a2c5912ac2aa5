/**
 * An on-demand window arriving page by page: on a first load its lines are copied into the tables
 * while the next pages are fetched; otherwise its complete targets are loaded as any other.
 */
import { refuseFastPath } from '../../copy-text/fast-path-refusal.js';
import { errorMessage } from '../../errors.js';
import { toLoadError } from '../../warehouse/database-errors.js';
import type { Db } from '../../warehouse/warehouse.js';
import { sourceError } from './context.js';
import type { WindowContext } from './context.js';
import { copySource } from './copy-staging.js';
import {
  DIRECT_LINEAGE,
  copyIntoTable,
  copyTextLineage,
  copyWithSuffix,
  firstLoadResult,
  insertStaged,
  noteWriter,
  refusedByTable,
} from './first-load.js';
import { buildDeferredIndexes, prepareTarget } from './prepare-target.js';
import { expectCopied, openSavepoint } from './savepoint.js';
import type { Savepoint } from './savepoint.js';
import type { LiveFeed, LiveLoad, LoadWindowTarget, TableLoadResult } from './types.js';

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
export async function loadLive(
  ctx: WindowContext,
  trx: Db,
  live: LiveLoad,
): Promise<TableLoadResult[] | (() => LoadWindowTarget[])> {
  const copier = await startLiveCopy(ctx, trx, live);
  try {
    for await (const _page of live.pages) copier?.pageDone();
  } catch (error) {
    // The fetch's failure wins; the COPY in flight must end before the transaction rolls back.
    await copier?.stop();
    throw error;
  }
  const targets = () => live.targets();
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
      // Only a spooled source's other records can join the lines copied while paging.
      if (drift.length > 0 || source.kind !== 'spooled') {
        throw refuseFastPath('the source needs the staging path');
      }
      let rows = copied[index]!.rows;
      const perRow = await copySource(
        { ctx, trx, decl: target.table, staged, stagingName, drift: false },
        source.source,
        source.perRowBatches,
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
    await noteWriter(
      ctx,
      trx,
      live.tables.map((t) => t.table),
      live.source,
    );
    await copier.savepoint.release();
    for (const log of logLater) log();
    return results;
  } catch (error) {
    if (ctx.abort !== undefined) throw sourceError(ctx.abort, current, live.source);
    if (!refusedByTable(error)) throw toLoadError(error, { table: current, source: live.source });
    await copier.savepoint.rollback();
    // Columns added inside the savepoint are gone with it: the staging path reads the tables again.
    for (const { table } of live.tables) ctx.tableColumns.delete(`${table.schema}.${table.name}`);
    ctx.rejects.reset(rejectMark);
    ctx.rowsLoaded = rowsBefore;
    ctx.options.logger?.debug(
      { source: live.source, reason: errorMessage(error) },
      'first load while paging refused; loading the window through the staging tables',
    );
    return targets;
  }
}

export interface LiveCopy {
  /** Opened before the first COPY; released or rolled back by loadLive once the window is fetched. */
  savepoint: Savepoint;
  /**
   * Tell the copier that a page was written (a step of LiveLoad.pages); throws the copier's
   * failure when no fallback can follow it (the load fails, and the fetch ends).
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
export async function startLiveCopy(
  ctx: WindowContext,
  trx: Db,
  live: LiveLoad,
): Promise<LiveCopy | undefined> {
  const copies: { statement: string; suffix: Buffer; tableName: string; feed: LiveFeed; added: string[] }[] =
    [];
  for (const [index, { table: decl, columns, feed }] of live.tables.entries()) {
    const source = { source: live.source, columns };
    const { staged, drift, added } = await prepareTarget(ctx, trx, { table: decl, source }, index);
    if (drift.length > 0) return undefined;
    const lineage = await copyTextLineage(ctx, trx, decl, live.source);
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
  const savepoint = await openSavepoint(trx, 'cybs_live', ctx.stagingMade);
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
      const n = await copyWithSuffix(ctx.session, copy.statement, lines.chunks, copy.suffix);
      expectCopied(n, lines.lines, copy.tableName, { table: copy.tableName });
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
    savepoint,
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
      await savepoint.rollback();
      ctx.options.logger?.debug(
        { reason: errorMessage(failure) },
        'first load while paging refused; loading the window through the staging tables',
      );
      return undefined;
    },
  };
}
