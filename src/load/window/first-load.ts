/**
 * A first load (no row of the table has the source yet) straight into the table, lineage values
 * appended to every line, in a savepoint: what staging and merge would give, without writing every
 * row twice. A key already there or twice rolls back, and the caller stages.
 */
import type { RawCopyTextBody, RawCsvBody } from '../../copy-text/bodies.js';
import { escapeCopyText } from '../../copy-text/cell-encoders.js';
import { isFastPathRefusal } from '../../copy-text/fast-path-refusal.js';
import { errorMessage } from '../../errors.js';
import { RAW_CSV_COPY_OPTIONS, copyTextField } from '../../parse/csv/raw-csv-report.js';
import { withCopyBuffers } from '../../copy-text/copy-buffers.js';
import type { Db, WarehouseSession } from '../../warehouse/warehouse.js';
import { quoteIdent } from '../ddl.js';
import { assertRawTextCopyable, copyRawTextLines } from './raw-text-copy.js';
import type { CopyLinesSource, CsvBytesSource, SpooledSource, TableDecl } from '../table-spec.js';
import type { StagedColumn, TargetCopy, WindowContext } from './context.js';
import { copyRawBytes, copySource, rawCsvChecks } from './copy-staging.js';
import { buildDeferredIndexes, ensureStaging } from './prepare-target.js';
import { ofSource, sourceHasRows, sourceKeyOf } from './source-keys.js';
import { expectCopied, hasSqlState, withSavepoint } from './savepoint.js';
import type { TableLoadResult } from './types.js';
import { sql } from 'kysely';

/**
 * Note the (sub)transaction that has just written every row of the source in these tables (a first
 * load straight into them, all in one savepoint, so one writer), read from one of those rows.
 */
export async function noteWriter(
  ctx: WindowContext,
  trx: Db,
  decls: readonly TableDecl[],
  source: string,
): Promise<void> {
  const probes = decls.map(
    (decl) => sql`(select xmin::text as x from ${sql.id(decl.schema, decl.name)}
                    where ${ofSource(ctx.options.window.organizationId, source)} limit 1)`,
  );
  const result = await sql<{ x: string }>`
    select x from (${sql.join(probes, sql` union all `)}) as written limit 1`.execute(trx);
  if (result.rows[0]) ctx.writers.add(result.rows[0].x);
}

/** The result of a first load that went straight into the table (nothing merged or deleted). */
export function firstLoadResult(
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

/** The lineage columns a direct first load sets (`_loaded_at` is left to its default, now()). */
export const DIRECT_LINEAGE = ['_organization_id', '_source', '_run_id', '_source_key'];

/** `COPY <table> (<columns>) FROM STDIN` (text format) straight into the target table. */
export function copyIntoTable(decl: TableDecl, columns: readonly string[]): string {
  return `COPY ${quoteIdent(decl.schema)}.${quoteIdent(decl.name)} (${columns.map(quoteIdent).join(', ')}) FROM STDIN`;
}

/** The records staged by the per-row path, inserted as they are with their lineage (a first load). */
export async function insertStaged(
  ctx: WindowContext,
  trx: Db,
  decl: TableDecl,
  source: string,
  staged: StagedColumn[],
  stagingName: string,
): Promise<number> {
  await ensureStaging({ ctx, trx, decl, staged, stagingName });
  const data = [...staged.map((c) => c.name), '_source_row'];
  const inserted = await sql`
    insert into ${sql.id(decl.schema, decl.name)} (${sql.join([...data, ...DIRECT_LINEAGE].map((c) => sql.id(c)))})
    select ${sql.join(data.map((c) => sql.id('s', c)))}, ${ctx.options.window.organizationId}::text,
           ${source}::text, ${ctx.options.runId}::bigint, ${sourceKeyOf(ctx, source)}::bigint
      from ${sql.id('pg_temp', stagingName)} as s`.execute(trx);
  return Number(inserted.numAffectedRows ?? 0n);
}

/**
 * Whether a direct first load failed on the data (PostgreSQL's classes 22, data exception, and 23,
 * integrity constraint violation: a key twice or of another source) or was refused before it
 * wrote (a fast-path refusal): then the staging path loads the same records.
 */
export function refusedByTable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (
    isFastPathRefusal(error) || (typeof code === 'string' && (code.startsWith('22') || code.startsWith('23')))
  );
}

/**
 * Whether a load can go straight into the table: no row of the table has this source yet (else it
 * is a re-load, which goes through the staging table), and `_loaded_at` defaults to now() (the
 * transaction's start, the value the merge gives). The direct COPYs leave `_loaded_at` to that
 * default rather than send it: PostgreSQL would parse the same timestamp text on every row.
 */
export async function isFirstLoad(
  ctx: WindowContext,
  trx: Db,
  decl: TableDecl,
  source: string,
): Promise<boolean> {
  // A source numbered by this very load has no rows anywhere yet; the default was read with the lock.
  const defaulted = ctx.loadedAtNow.get(`${decl.schema}.${decl.name}`);
  if (ctx.newSources.has(source) && defaulted !== undefined) return defaulted;
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

/**
 * The COPY text fields (each after a tab) of `_organization_id`, `_source` and `_run_id` for a
 * first load straight into the table (`_loaded_at` is left to its default); undefined when the
 * load goes through the staging table (see isFirstLoad) or for lineage text COPY cannot carry.
 */
export async function copyTextLineage(
  ctx: WindowContext,
  trx: Db,
  decl: TableDecl,
  source: string,
): Promise<string | undefined> {
  const org = escapeCopyText(ctx.options.window.organizationId);
  const src = escapeCopyText(source);
  if (org === undefined || src === undefined) return undefined;
  if (!(await isFirstLoad(ctx, trx, decl, source))) return undefined;
  const runId = ctx.options.runId;
  return `\t${org}\t${src}\t${runId === null ? '\\N' : String(runId)}\t${sourceKeyOf(ctx, source)}`;
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
export async function copyTextIntoTable(
  copy: TargetCopy,
  source: SpooledSource,
  perRow: number,
): Promise<number | undefined> {
  const { ctx, trx, decl, staged, stagingName } = copy;
  const tableName = `${decl.schema}.${decl.name}`;
  const lineage = await copyTextLineage(ctx, trx, decl, source.source);
  if (lineage === undefined) return undefined;
  const outcome = await withSavepoint(
    trx,
    'cybs_direct',
    ctx.stagingMade,
    async () => {
      let total = 0;
      if (perRow > 0) total += await insertStaged(ctx, trx, decl, source.source, staged, stagingName);
      for (const segment of source.segments) {
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
        const copied = await copyWithSuffix(ctx.session, statement, (into) => segment.chunks(into), suffix);
        expectCopied(copied, segment.lines, tableName, { table: tableName, source: source.source });
        total += copied;
      }
      await buildDeferredIndexes(ctx, trx, decl);
      await noteWriter(ctx, trx, [decl], source.source);
      return total;
    },
    refusedByTable,
  );
  if (outcome.done) return outcome.value;
  const { error } = outcome;
  ctx.options.logger?.debug(
    {
      table: tableName,
      source: source.source,
      sqlState: (error as { code?: unknown } | null)?.code,
      reason: errorMessage(error),
    },
    'first load refused by the table; loading through the staging table',
  );
  return undefined;
}

/**
 * A first load of ready COPY text lines (the fast XML path) straight into the table, the lineage
 * values appended to every line, in a savepoint: what the staging table and merge would give for a
 * window whose source has no rows yet, without writing every row twice. A key already in the
 * table or twice in the file (23505) rolls back to the savepoint (`conflict`: the caller stages the
 * lines read again); `staging` for a re-load. Anything else PostgreSQL refuses, an empty key
 * included (the key columns are NOT NULL), refuses the fast path as in the staging table.
 */
export async function copyRawTextIntoTable(
  copy: TargetCopy,
  source: CopyLinesSource,
  body: RawCopyTextBody,
): Promise<number | 'conflict' | 'staging'> {
  const { ctx, trx, decl, staged } = copy;
  assertRawTextCopyable(staged, false);
  const lineage = await copyTextLineage(ctx, trx, decl, source.source);
  if (lineage === undefined) return 'staging';
  const columns = [...staged.map((c) => c.name), '_source_row', ...DIRECT_LINEAGE];
  const outcome = await withSavepoint(
    trx,
    'cybs_direct',
    ctx.stagingMade,
    async () => {
      await withCopyBuffers(1, ([out]) =>
        copyRawTextLines(
          ctx.session,
          copyIntoTable(decl, columns),
          body,
          appendToLines(body.chunks, Buffer.from(`${lineage}\n`, 'utf8'), out!),
          { inTurn: true },
        ),
      );
      await buildDeferredIndexes(ctx, trx, decl);
      await noteWriter(ctx, trx, [decl], source.source);
    },
    (error) => hasSqlState(error, '23505'),
  );
  if (outcome.done) return body.records();
  return 'conflict';
}

/**
 * COPY text lines with `suffix` (which ends with the line feed) in place of each line feed: in COPY
 * text format a LF byte always ends a line (a LF in a value is written `\n`). Written into `out`,
 * yielded each time it is full and at the end: for a COPY written in turn (WarehouseSession.copyFrom),
 * which is done with a chunk before it asks for the next. A chunk may end inside a line (COPY reads
 * a stream of bytes).
 */
export async function* appendToLines(
  chunks: AsyncIterable<Uint8Array>,
  suffix: Buffer,
  out: Buffer,
): AsyncGenerator<Buffer> {
  let at = 0;
  for await (const chunk of chunks) {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    for (let start = 0; start < bytes.length;) {
      const lf = bytes.indexOf(10, start);
      const stop = lf < 0 ? bytes.length : lf;
      while (start < stop) {
        if (at === out.length) {
          yield out;
          at = 0;
        }
        const n = bytes.copy(out, at, start, stop);
        at += n;
        start += n;
      }
      if (lf < 0) break;
      for (let s = 0; s < suffix.length;) {
        if (at === out.length) {
          yield out;
          at = 0;
        }
        const n = suffix.copy(out, at, s);
        at += n;
        s += n;
      }
      start = lf + 1;
    }
  }
  if (at > 0) yield out.subarray(0, at);
}

/**
 * One COPY of `chunks` (a spool's lines, read into a buffer of their own) with `suffix` appended to
 * every line, written in turn through two lent buffers (copy-buffers.ts).
 */
export function copyWithSuffix(
  session: WarehouseSession,
  statement: string,
  chunks: (into: Buffer) => AsyncIterable<Uint8Array>,
  suffix: Buffer,
): Promise<number> {
  return withCopyBuffers(2, ([read, out]) =>
    session.copyFrom(statement, appendToLines(chunks(read!), suffix, out!), { inTurn: true }),
  );
}

/**
 * A first load on the fast path (no row of the table has this source yet): the bytes go straight
 * into the table with one COPY, as `psql \copy` would, the scanner appending the line number and
 * the lineage values to every record; the records the scanner set aside are typed (or rejected)
 * by the per-row path, staged and inserted beside; nothing can have vanished and nothing needs
 * merging. When a key is in the table already (another source's row) or twice in the file,
 * PostgreSQL refuses the COPY or the insert (23505): all of it is rolled back to a savepoint and
 * the caller loads the bytes, read again, through the staging table (`conflict`). `staging` when
 * the table has rows of this source already (a re-load), or for lineage values COPY text cannot
 * carry (empty), without reading anything.
 */
export async function copyRawCsvIntoTable(
  copy: TargetCopy,
  source: CsvBytesSource,
  body: RawCsvBody,
): Promise<number | 'conflict' | 'staging'> {
  const { ctx, trx, decl, staged } = copy;
  const { organizationId } = ctx.options.window;
  if (!(await isFirstLoad(ctx, trx, decl, source.source))) return 'staging';
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
  const outcome = await withSavepoint(
    trx,
    'cybs_direct',
    ctx.stagingMade,
    async () => {
      let copied = await copyRawBytes(
        ctx,
        `COPY ${table} (${columns}, ${lineage.map(quoteIdent).join(', ')}) FROM STDIN ${RAW_CSV_COPY_OPTIONS}`,
        body,
        { ...rawCsvChecks(decl, staged), append },
      );
      const aside = body.setAside();
      if (aside.length > 0) {
        // The records set aside: typed or rejected by the per-row path, staged, then inserted.
        await copySource(copy, source.source, source.perRowRecords(aside));
        copied += await insertStaged(ctx, trx, decl, source.source, staged, copy.stagingName);
      }
      await buildDeferredIndexes(ctx, trx, decl);
      await noteWriter(ctx, trx, [decl], source.source);
      return copied;
    },
    (error) => hasSqlState(error, '23505', true),
  );
  if (outcome.done) return outcome.value;
  // A key met in the table or twice in the file: the staging table does what this cannot (merge,
  // de-duplicate); what was staged and rejected here is rolled back and forgotten.
  ctx.rejects.reset(rejects);
  return 'conflict';
}
