/**
 * A target made ready for its source: the source checked, the table created or given the columns it
 * lacks (etl.schema_changes), its staging table made when rows go through it, deferred indexes built.
 */
import { encoderFor, typeFamily } from '../../copy-text/cell-encoders.js';
import { CybsError } from '../../errors.js';
import { LOAD_ERROR_CODES } from '../../warehouse/database-errors.js';
import type { EtlDb } from '../../warehouse/database.js';
import type { Db } from '../../warehouse/warehouse.js';
import {
  KEY_LINEAGE_COLUMNS,
  addColumnDdl,
  assertIdentifier,
  assertSafePgType,
  commentOnColumnDdl,
  ensureTable,
  lockTableDdl,
  readTableColumns,
} from '../ddl.js';
import type { ExistingColumn } from '../ddl.js';
import { LINEAGE_COLUMNS } from '../table-spec.js';
import type { ColumnDecl, LoadSourceBase, TableDecl } from '../table-spec.js';
import type { StagedColumn, TargetCopy, WindowContext } from './context.js';
import { sql } from 'kysely';

export interface PreparedTarget {
  staged: StagedColumn[];
  /** Columns whose source type is of another family than the table's. */
  drift: StagedColumn[];
  /** Columns added to the table by this load. */
  added: string[];
  /** The name of the target's TEMP staging table, made when first needed (ensureStaging). */
  stagingName: string;
}

/** Validate the source and create the table or add what it lacks. */
export async function prepareTarget(
  ctx: WindowContext,
  trx: Db,
  target: { table: TableDecl; source: LoadSourceBase },
  index: number,
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
  return { staged, drift, added, stagingName: `_cybs_stg_${index}` };
}

/**
 * Make the target's TEMP staging table (in pg_temp, dropped on commit), typed like the table, unless
 * this transaction has it already. Called by whatever writes or reads it, so that a first load
 * straight into the table makes none.
 */
export async function ensureStaging(
  copy: Pick<TargetCopy, 'ctx' | 'trx' | 'decl' | 'staged' | 'stagingName'>,
): Promise<void> {
  const { ctx, trx, decl, staged, stagingName } = copy;
  if (ctx.stagingMade.has(stagingName)) return;
  const stagingColumns = [...staged.map((c) => c.name), '_source_row'];
  await sql`create temp table if not exists ${sql.id(stagingName)} on commit drop as
    select ${sql.join(stagingColumns.map((c) => sql.id(c)))} from ${sql.id(decl.schema, decl.name)}
    with no data`.execute(trx);
  ctx.stagingMade.add(stagingName);
}

export const LINEAGE_NAMES = new Set(LINEAGE_COLUMNS.map((c) => c.name));

export function validateSource(decl: TableDecl, source: LoadSourceBase): void {
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
export async function evolveSchema(
  ctx: WindowContext,
  trx: Db,
  decl: TableDecl,
  source: LoadSourceBase,
): Promise<{ columns: ExistingColumn[]; added: string[] }> {
  const table = `${decl.schema}.${decl.name}`;
  // A table that has every column already needs no DDL, nor another look at the catalog.
  const known = ctx.tableColumns.get(table);
  if (known) {
    const have = new Set(known.map((c) => c.name));
    if ([...decl.columns, ...source.columns].every((c) => have.has(c.name)))
      return { columns: [...known], added: [] };
  }
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
    const etl: EtlDb = trx;
    await etl
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
  ctx.tableColumns.set(table, columns);
  return { columns, added: added.map((c) => c.name) };
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
export async function buildDeferredIndexes(ctx: WindowContext, trx: Db, decl?: TableDecl): Promise<void> {
  const tables = decl ? [`${decl.schema}.${decl.name}`] : [...ctx.deferredIndexes.keys()];
  for (const table of tables) {
    for (const statement of ctx.deferredIndexes.get(table) ?? []) await sql.raw(statement).execute(trx);
  }
}
