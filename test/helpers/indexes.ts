import { sql } from 'kysely';
import { expect } from 'vitest';
import {
  naturalKeyIndexColumns,
  naturalKeyIndexName,
  needsSourceIndex,
  qualifiedName,
  sourceIndexName,
} from '../../src/load/ddl.js';
import type { TableDecl } from '../../src/load/table-spec.js';
import type { Db } from '../../src/warehouse/warehouse.js';

export interface IndexShape {
  name: string;
  unique: boolean;
  columns: string[];
}

/** The indexes a table has (none when it does not exist), by name: unique or not, columns in order. */
export async function indexesOf(db: Db, decl: Pick<TableDecl, 'schema' | 'name'>): Promise<IndexShape[]> {
  const result = await sql<IndexShape>`
    select i.relname::text as name, x.indisunique as "unique",
           array(select a.attname::text
                   from unnest(x.indkey) with ordinality as k(attnum, n)
                   join pg_catalog.pg_attribute a on a.attrelid = x.indrelid and a.attnum = k.attnum
                  order by k.n) as columns
      from pg_catalog.pg_index x
      join pg_catalog.pg_class i on i.oid = x.indexrelid
     where x.indrelid = to_regclass(${qualifiedName(decl.schema, decl.name)})
     order by 1`.execute(db);
  return result.rows;
}

/**
 * The OIDs of a table's indexes, by name: an index dropped and built again (a first load that
 * deferred it) has a new one.
 */
export async function indexOidsOf(
  db: Db,
  decl: Pick<TableDecl, 'schema' | 'name'>,
): Promise<{ name: string; oid: string }[]> {
  const result = await sql<{ name: string; oid: string }>`
    select i.relname::text as name, i.oid::text as oid
      from pg_catalog.pg_index x
      join pg_catalog.pg_class i on i.oid = x.indexrelid
     where x.indrelid = to_regclass(${qualifiedName(decl.schema, decl.name)})
     order by 1`.execute(db);
  return result.rows;
}

/** The indexes the table of `decl` is declared with (tableIndexDdl), as indexesOf gives them. */
export function declaredIndexes(decl: TableDecl): IndexShape[] {
  const indexes: IndexShape[] = [
    { name: naturalKeyIndexName(decl), unique: true, columns: naturalKeyIndexColumns(decl) },
    ...(needsSourceIndex(decl)
      ? [{ name: sourceIndexName(decl), unique: false, columns: ['_source_key'] }]
      : []),
  ];
  return indexes.sort((a, b) => (a.name < b.name ? -1 : 1));
}

/** Drop the table of `decl` in each database (a load then creates it anew). */
export async function dropTables(
  dbs: readonly Db[],
  decl: Pick<TableDecl, 'schema' | 'name'>,
): Promise<void> {
  for (const db of dbs) await sql`drop table ${sql.id(decl.schema, decl.name)}`.execute(db);
}

/** Each database's table of `decl` has exactly the indexes it is declared with. */
export async function expectDeclaredIndexes(dbs: readonly Db[], decl: TableDecl): Promise<void> {
  for (const db of dbs) expect(await indexesOf(db, decl)).toEqual(declaredIndexes(decl));
}
