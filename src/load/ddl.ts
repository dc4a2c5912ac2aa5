import { sql } from 'kysely';
import type { RawBuilder } from 'kysely';
import { CybsError } from '../errors.js';
import { LINEAGE_COLUMNS } from './table-spec.js';
import type { ColumnDecl, TableDecl } from './table-spec.js';
import type { Db } from '../warehouse/warehouse.js';

/**
 * DDL for cybs.* tables, generated from declarations. Pure text generation (unit-tested) plus
 * `ensureTable`, which applies it idempotently. Identifiers from data (report headers) are always
 * quoted; types are checked against a strict pattern because they are spliced into DDL unquoted.
 */

/** PostgreSQL identifiers are at most 63 bytes; longer ones are silently truncated by the server. */
export const MAX_IDENTIFIER_BYTES = 63;

const LINEAGE_NAMES: ReadonlySet<string> = new Set(LINEAGE_COLUMNS.map((c) => c.name));
/** Lineage columns that may be part of a natural key (the others change on every write). */
export const KEY_LINEAGE_COLUMNS: ReadonlySet<string> = new Set([
  '_organization_id',
  '_source',
  '_source_row',
]);

/** Quote an identifier: always double-quoted, embedded quotes doubled. `x"y` → `"x""y"`. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** `"schema"."name"` */
export function qualifiedName(schema: string, name: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(name)}`;
}

/**
 * Quote a string literal. Quotes are doubled; when the text holds a backslash an `E'…'` literal
 * with doubled backslashes is used, so the result means the same whatever
 * `standard_conforming_strings` says. NUL characters (which PostgreSQL text cannot hold) are dropped.
 */
export function quoteLiteral(text: string): string {
  const clean = text.includes('\0') ? text.replace(/\0/g, '') : text;
  if (clean.includes('\\')) return `E'${clean.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
  return `'${clean.replace(/'/g, "''")}'`;
}

/**
 * A type name as it may appear in DDL: one word (optionally schema-qualified) or one of the
 * multi-word built-in names, optional `(p)` / `(p,s)` modifiers, optional `[]`. Anything else
 * (`text default now()`, `text references t`) is refused: types are spliced into DDL unquoted.
 */
const PG_TYPE_PATTERN =
  /^(?:[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)?|double precision|character varying|bit varying|(?:timestamp|time)(?:\s*\(\s*\d+\s*\))? with(?:out)? time zone)(?:\s*\(\s*\d+\s*(?:,\s*-?\d+\s*)?\))?(?:\[\])?$/i;

export function assertSafePgType(pgType: string, where: string): void {
  if (!PG_TYPE_PATTERN.test(pgType.trim())) {
    throw new CybsError('LOAD_INVALID_DECLARATION', `${where}: "${pgType}" is not a PostgreSQL type name.`, {
      stage: 'load',
      context: { pgType, where },
    });
  }
}

export function assertIdentifier(name: string, where: string): void {
  if (name.length === 0 || Buffer.byteLength(name, 'utf8') > MAX_IDENTIFIER_BYTES || name.includes('\0')) {
    throw new CybsError(
      'LOAD_INVALID_IDENTIFIER',
      `${where}: column name ${JSON.stringify(name)} is empty, holds a NUL character or is longer than ` +
        `${MAX_IDENTIFIER_BYTES} bytes (PostgreSQL would truncate it); map it to a shorter name in the catalog.`,
      { stage: 'load', context: { name, where } },
    );
  }
}

/** Check a declaration before any DDL is generated from it. */
export function validateTableDecl(decl: TableDecl): void {
  const where = `table ${decl.schema}.${decl.name}`;
  assertIdentifier(decl.schema, where);
  assertIdentifier(decl.name, where);
  const seen = new Set<string>();
  for (const column of decl.columns) {
    assertIdentifier(column.name, where);
    assertSafePgType(column.pgType, `${where}, column ${column.name}`);
    if (LINEAGE_NAMES.has(column.name)) {
      throw invalidDecl(`${where}: data column "${column.name}" collides with a lineage column.`);
    }
    if (seen.has(column.name)) throw invalidDecl(`${where}: column "${column.name}" is declared twice.`);
    seen.add(column.name);
  }
  if (!decl.naturalKey.includes('_organization_id')) {
    throw invalidDecl(
      `${where}: the natural key must include _organization_id (rows of two organizations never merge).`,
    );
  }
  for (const key of decl.naturalKey) {
    if (!seen.has(key) && !KEY_LINEAGE_COLUMNS.has(key)) {
      throw invalidDecl(
        `${where}: natural key column "${key}" is neither a declared column nor _organization_id, _source or _source_row.`,
      );
    }
  }
  if (new Set(decl.naturalKey).size !== decl.naturalKey.length) {
    throw invalidDecl(`${where}: the natural key names a column twice.`);
  }
  if (decl.parent !== undefined) {
    const { table, key } = decl.parent;
    assertIdentifier(table, where);
    // Its rows are found by the records' key (a prefix of the natural key after the organization).
    const prefix = decl.naturalKey.slice(1, 1 + key.length);
    if (key.some((k, i) => !seen.has(k) || prefix[i] !== k) || decl.naturalKey.length <= key.length + 1) {
      throw invalidDecl(
        `${where}: a child table's natural key must be the organization, the key of ${table} (${key.join(', ')}) and the item's number.`,
      );
    }
  }
}

function invalidDecl(message: string): CybsError {
  return new CybsError('LOAD_INVALID_DECLARATION', message, { stage: 'load' });
}

/** Name of the unique index on the natural key (≤ 63 bytes). */
export function naturalKeyIndexName(decl: TableDecl): string {
  return indexName(decl.name, '_natural_key');
}

/**
 * The natural key's columns as its unique index has them (and `on conflict` names them). A key
 * starting with (`_organization_id`, `_source`) has the two replaced by `_source_key`, the
 * source's number in etl.sources (one number for one organization and source, so the index is
 * unique on the same rows): an index entry of (`_source_key`, `_source_row`) is ≈ 24 bytes where
 * one of (`_organization_id`, `_source`, `_source_row`) would be ≈ 110 for a Purchase and Refund
 * Detail source, and every COPY inserts into it. A key of data columns (a request id) has
 * `_organization_id` last: every comparison in the index then stops at the first column, where
 * with the organization first (one value for a whole load) it would compare two.
 */
export function naturalKeyIndexColumns(decl: TableDecl): string[] {
  if (keyStartsWithSource(decl)) return ['_source_key', ...decl.naturalKey.slice(2)];
  const [first, ...rest] = decl.naturalKey;
  if (first !== '_organization_id' || rest.length === 0) return [...decl.naturalKey];
  return [...rest, first];
}

/** Whether the natural key starts with (`_organization_id`, `_source`), indexed as `_source_key`. */
function keyStartsWithSource(decl: TableDecl): boolean {
  return decl.naturalKey[0] === '_organization_id' && decl.naturalKey[1] === '_source';
}

/** Name of the index on `_source_key` used to find a source's rows. */
export function sourceIndexName(decl: TableDecl): string {
  return indexName(decl.name, '_source');
}

/**
 * Whether the table needs its own index to find a source's rows: not when the natural key starts
 * with (`_organization_id`, `_source`), whose unique index (on `_source_key` first) serves the same
 * lookups, and a second index on that prefix would slow every COPY into the table by about a
 * quarter.
 */
export function needsSourceIndex(decl: TableDecl): boolean {
  return !keyStartsWithSource(decl);
}

function indexName(table: string, suffix: string): string {
  let base = table;
  while (Buffer.byteLength(base + suffix, 'utf8') > MAX_IDENTIFIER_BYTES) base = base.slice(0, -1);
  return base + suffix;
}

function lineageColumnDdl(column: ColumnDecl): string {
  switch (column.name) {
    case '_organization_id':
    case '_source':
      return `${quoteIdent(column.name)} text not null`;
    case '_source_row':
    case '_source_key':
      return `${quoteIdent(column.name)} bigint not null`;
    case '_run_id':
      return `${quoteIdent(column.name)} bigint`;
    case '_loaded_at':
      return `${quoteIdent(column.name)} timestamptz not null default now()`;
    default:
      return `${quoteIdent(column.name)} ${column.pgType}`;
  }
}

export function tableComment(decl: TableDecl): string {
  const key = decl.naturalKey.join(', ');
  return `${decl.description.trim()} Natural key (${key}): ${decl.keyDescription.trim()}`;
}

function columnComment(column: ColumnDecl): string {
  return column.description?.trim() || `${column.name} (no description in the catalog).`;
}

export function commentOnColumnDdl(decl: TableDecl, column: ColumnDecl): string {
  return `comment on column ${qualifiedName(decl.schema, decl.name)}.${quoteIdent(column.name)} is ${quoteLiteral(columnComment(column))}`;
}

export function addColumnDdl(decl: Pick<TableDecl, 'schema' | 'name'>, column: ColumnDecl): string {
  return `alter table ${qualifiedName(decl.schema, decl.name)} add column if not exists ${quoteIdent(column.name)} ${column.pgType}`;
}

/**
 * Statements that create the table of a declaration, each idempotent: schema, table (data columns,
 * then lineage columns; natural-key data columns are `not null`), its indexes (tableIndexDdl), and
 * comments on the table and every column.
 */
export function tableDdl(decl: TableDecl): string[] {
  return [...tableBaseDdl(decl), ...tableIndexDdl(decl), ...tableCommentDdl(decl)];
}

/**
 * The table's indexes, each idempotent (`if not exists`): the unique index on the natural key
 * (naturalKeyIndexColumns), and an index on `_source_key` unless the natural key starts with
 * (`_organization_id`, `_source`) (see needsSourceIndex).
 */
export function tableIndexDdl(decl: TableDecl): string[] {
  validateTableDecl(decl);
  const table = qualifiedName(decl.schema, decl.name);
  return tableIndexes(decl).map(
    (index) =>
      `create ${index.unique ? 'unique ' : ''}index if not exists ${quoteIdent(index.name)} on ${table} (${index.columns
        .map(quoteIdent)
        .join(', ')})`,
  );
}

/** The indexes a table of `decl` is declared with: its natural key's, and `_source_key`'s when needed. */
function tableIndexes(decl: TableDecl): { name: string; unique: boolean; columns: string[] }[] {
  return [
    { name: naturalKeyIndexName(decl), unique: true, columns: naturalKeyIndexColumns(decl) },
    ...(needsSourceIndex(decl)
      ? [{ name: sourceIndexName(decl), unique: false, columns: ['_source_key'] }]
      : []),
  ];
}

function tableCommentDdl(decl: TableDecl): string[] {
  const table = qualifiedName(decl.schema, decl.name);
  return [
    `comment on table ${table} is ${quoteLiteral(tableComment(decl))}`,
    ...[...decl.columns, ...LINEAGE_COLUMNS].map((c) => commentOnColumnDdl(decl, c)),
  ];
}

function tableBaseDdl(decl: TableDecl): string[] {
  validateTableDecl(decl);
  const table = qualifiedName(decl.schema, decl.name);
  const keys = new Set(decl.naturalKey);
  const columns = [
    ...decl.columns.map(
      (c) => `  ${quoteIdent(c.name)} ${c.pgType.trim()}${keys.has(c.name) ? ' not null' : ''}`,
    ),
    ...LINEAGE_COLUMNS.map((c) => `  ${lineageColumnDdl(c)}`),
  ];
  return [
    `create schema if not exists ${quoteIdent(decl.schema)}`,
    `create table if not exists ${table} (\n${columns.join(',\n')}\n)`,
  ];
}

export interface ExistingColumn {
  name: string;
  /** As `format_type` prints it: `numeric(12,2)`, `timestamp with time zone`, `text`. */
  type: string;
}

/** The columns of a table in order, or null when the table does not exist. */
export async function readTableColumns(
  db: Db,
  schema: string,
  name: string,
): Promise<ExistingColumn[] | null> {
  const result = await sql<{ name: string; type: string; exists: boolean }>`
    select a.attname as name, format_type(a.atttypid, a.atttypmod) as type, true as exists
      from pg_catalog.pg_attribute a
     where a.attrelid = to_regclass(${qualifiedName(schema, name)})
       and a.attnum > 0 and not a.attisdropped
     order by a.attnum`.execute(db);
  if (result.rows.length === 0) {
    const exists = await sql<{
      oid: unknown;
    }>`select to_regclass(${qualifiedName(schema, name)}) as oid`.execute(db);
    return exists.rows[0]?.oid == null ? null : [];
  }
  return result.rows.map((r) => ({ name: r.name, type: r.type }));
}

/**
 * A scalar subquery: the columns of the named tables (`schema.name`, quoted as qualifiedName gives
 * them), as JSON `[[table, column, type, default of _loaded_at], …]` in table then column order;
 * tables that do not exist give nothing. Used where a statement is sent anyway, to spare catalog
 * queries per table.
 */
export function tableColumnsJson(tables: readonly TableDecl[]): RawBuilder<unknown> {
  const names = tables.map((t) => qualifiedName(t.schema, t.name));
  return sql`(select coalesce(json_agg(json_build_array(t.name, a.attname, format_type(a.atttypid, a.atttypmod),
                                                        case when a.attname = '_loaded_at'
                                                             then pg_get_expr(d.adbin, d.adrelid) end,
                                                        c.relpages)
                                       order by t.ord, a.attnum), '[]')
                from unnest(${names}::text[]) with ordinality as t(name, ord)
                join pg_catalog.pg_attribute a
                  on a.attrelid = to_regclass(t.name) and a.attnum > 0 and not a.attisdropped
                join pg_catalog.pg_class c on c.oid = a.attrelid
                left join pg_catalog.pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum)`;
}

export interface TablesAtStart {
  /** The columns of each table that existed, by `schema.name`. */
  columns: Map<string, readonly ExistingColumn[]>;
  /** Whether each table that existed has `_loaded_at` default to now(), by `schema.name`. */
  loadedAtNow: Map<string, boolean>;
  /** The tables that existed and whose pages pg_class counts as none, by `schema.name`. */
  noPages: Set<string>;
}

/** The result of tableColumnsJson, by `schema.name` of the tables given to it. */
export function tableColumnsOf(tables: readonly TableDecl[], json: unknown): TablesAtStart {
  const byQualified = new Map(tables.map((t) => [qualifiedName(t.schema, t.name), `${t.schema}.${t.name}`]));
  const columns = new Map<string, ExistingColumn[]>();
  const loadedAtNow = new Map<string, boolean>();
  const noPages = new Set<string>();
  for (const [qualified, name, type, loadedAt, pages] of json as [
    string,
    string,
    string,
    string | null,
    number,
  ][]) {
    const table = byQualified.get(qualified);
    if (table === undefined) continue;
    let list = columns.get(table);
    if (!list) {
      columns.set(table, (list = []));
      loadedAtNow.set(table, false);
      if (pages === 0) noPages.add(table);
    }
    list.push({ name, type });
    if (name === '_loaded_at') loadedAtNow.set(table, loadedAt === 'now()');
  }
  return { columns, loadedAtNow, noPages };
}

export interface EnsureTableResult {
  created: boolean;
  /**
   * With `deferIndexes`, when the table was created: its index statements (tableIndexDdl), not yet
   * run. The caller runs them before the transaction commits.
   */
  deferredIndexes?: string[];
  /** Declared columns that an existing table lacked and that were added. */
  columnsAdded: ColumnDecl[];
  /** The table's columns after the change. */
  columns: ExistingColumn[];
}

/**
 * Create the table of `decl` when missing, or add the declared columns an existing table lacks
 * (with their comments). Never drops or retypes a column. Run it inside the load transaction so a
 * failed load leaves no half-made table; concurrent callers serialise on an advisory lock per table.
 * With `deferIndexes`, a table it creates gets no index yet: the statements are returned
 * (`deferredIndexes`) for the caller to run once the first rows are in, which PostgreSQL does in
 * one sort instead of one index insertion per row. No one else sees the table before the
 * transaction commits, so no one can miss its indexes. (An existing table that holds no row:
 * deferIndexesOfEmptyTables.)
 */
export async function ensureTable(
  db: Db,
  decl: TableDecl,
  options: { deferIndexes?: boolean } = {},
): Promise<EnsureTableResult> {
  validateTableDecl(decl);
  let existing = await readTableColumns(db, decl.schema, decl.name);
  if (existing && decl.columns.every((c) => existing!.some((e) => e.name === c.name))) {
    return { created: false, columnsAdded: [], columns: existing };
  }
  await lockTableDdl(db, decl.schema, decl.name);
  existing = await readTableColumns(db, decl.schema, decl.name);
  if (existing === null) {
    const indexes = tableIndexDdl(decl);
    const statements = [
      ...tableBaseDdl(decl),
      ...(options.deferIndexes ? [] : indexes),
      ...tableCommentDdl(decl),
    ];
    for (const statement of statements) await sql.raw(statement).execute(db);
    const columns = (await readTableColumns(db, decl.schema, decl.name)) ?? [];
    return {
      created: true,
      columnsAdded: [],
      columns,
      ...(options.deferIndexes ? { deferredIndexes: indexes } : {}),
    };
  }
  const have = new Set(existing.map((c) => c.name));
  const missing = decl.columns.filter((c) => !have.has(c.name));
  for (const column of missing) {
    await sql.raw(addColumnDdl(decl, column)).execute(db);
    await sql.raw(commentOnColumnDdl(decl, column)).execute(db);
  }
  const columns = (await readTableColumns(db, decl.schema, decl.name)) ?? [];
  return { created: false, columnsAdded: missing, columns };
}

/**
 * The declared indexes of existing tables that hold no row (`migrate` makes the report tables
 * before their first load), dropped in this transaction so that their first rows go in without
 * them: their statements (tableIndexDdl), by `schema.name`, for the caller to run once the rows
 * are in, as for a table ensureTable creates. All of the tables or none: undefined, and nothing
 * changed, when one has a row or another transaction holds any lock on it (a load or a query in
 * progress) or its DDL lock (lockTableDdl: a load adding a column). Every lock is asked for without
 * waiting, in a savepoint whose rollback gives them all back: no load waits for another here, and
 * no reader waits for a table that turns out to have rows.
 *
 * Once they are taken, every other transaction that touches one of the tables, a reader too, waits
 * for this one, which holds the strongest lock of each table it writes and each table's DDL lock:
 * it waits for no such transaction in turn. Only a caller that waits for nothing else another load
 * may hold, until it commits, may ask (loadWindowIn: not a load fetching its pages).
 */
export async function deferIndexesOfEmptyTables(
  db: Db,
  decls: readonly TableDecl[],
): Promise<Map<string, string[]> | undefined> {
  // In one order, so that two loads of the same tables meet at the first.
  const sorted = [...new Map(decls.map((d) => [`${d.schema}.${d.name}`, d])).entries()].sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0,
  );
  if (sorted.length === 0) return undefined;
  await sql.raw(`savepoint ${DEFER_SAVEPOINT}`).execute(db);
  let deferrable = true;
  try {
    for (const [, decl] of sorted) {
      const table = qualifiedName(decl.schema, decl.name);
      // The table's DDL lock first (lockTableDdl's), as every other change to the table takes it
      // before the table's own lock: a load adding a column holds it while it waits for the table.
      const ddl = await sql<{
        locked: boolean;
      }>`select pg_try_advisory_xact_lock(hashtextextended(${ddlLockKey(decl.schema, decl.name)}, 0)) as locked`.execute(
        db,
      );
      if (ddl.rows[0]?.locked !== true) {
        deferrable = false;
        break;
      }
      await sql.raw(`lock table ${table} in access exclusive mode nowait`).execute(db);
      if ((await sql.raw(`select 1 from ${table} limit 1`).execute(db)).rows.length > 0) {
        deferrable = false;
        break;
      }
    }
  } catch (error) {
    if ((error as { code?: unknown }).code !== LOCK_NOT_AVAILABLE) throw error;
    deferrable = false;
  }
  if (!deferrable) {
    await sql.raw(`rollback to savepoint ${DEFER_SAVEPOINT}`).execute(db);
    await sql.raw(`release savepoint ${DEFER_SAVEPOINT}`).execute(db);
    return undefined;
  }
  const deferred = new Map<string, string[]>();
  for (const [key, decl] of sorted) {
    for (const { name } of tableIndexes(decl))
      await sql.raw(`drop index if exists ${qualifiedName(decl.schema, name)}`).execute(db);
    deferred.set(key, tableIndexDdl(decl));
  }
  await sql.raw(`release savepoint ${DEFER_SAVEPOINT}`).execute(db);
  return deferred;
}

const DEFER_SAVEPOINT = 'cybs_etl_defer_indexes';
/** PostgreSQL's lock_not_available (a NOWAIT lock another transaction holds). */
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Serialise DDL on one table until the end of the transaction (two windows of one pipeline loading
 * at once must not both try to create the table or add the same column).
 */
export async function lockTableDdl(db: Db, schema: string, name: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${ddlLockKey(schema, name)}, 0))`.execute(db);
}

function ddlLockKey(schema: string, name: string): string {
  return `cybs-etl:ddl:${schema}.${name}`;
}
