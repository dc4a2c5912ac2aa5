/**
 * The merge's statements, built apart from their execution (merge.ts runs them): each function
 * returns the SQL of one statement as a kysely `sql` fragment, from the target's declaration, the
 * staged columns and the window's identity alone, so they are read and tested without a database.
 */
import { sql } from 'kysely';
import type { RawBuilder } from 'kysely';
import { LOAD_ERROR_CODES } from '../../warehouse/database-errors.js';
import { naturalKeyIndexColumns } from '../ddl.js';
import { LINEAGE_COLUMNS } from '../table-spec.js';
import type { TableDecl } from '../table-spec.js';
import { ofSource, sourceHasRows, sourceKeyQuery } from './source-keys.js';

/** Who a merge writes for: the window's organization and source, and the run (null outside a run). */
export interface MergeIdentity {
  pipeline: string;
  organizationId: string;
  windowKey: string;
  source: string;
  runId: number | null;
}

/** The natural key's columns other than `_organization_id` and `_source` (which a source's rows share). */
export function dataKey(decl: TableDecl): string[] {
  return decl.naturalKey.filter((k) => k !== '_organization_id' && k !== '_source');
}

/** `a.k = b.k` for each of those columns (`true` when there are none): two rows of one source, same key. */
export function sameKey(decl: TableDecl, a: string, b: string): RawBuilder<unknown> {
  const matches = dataKey(decl).map((k) => sql`${sql.id(a, k)} = ${sql.id(b, k)}`);
  return matches.length > 0 ? sql.join(matches, sql` and `) : sql`true`;
}

/** `select <whether the table has rows of the source> as owns`. */
export function ownsRowsSql(
  decl: TableDecl,
  organizationId: string,
  source: string,
): RawBuilder<{ owns: boolean }> {
  return sql<{ owns: boolean }>`select ${sourceHasRows(decl, organizationId, source)} as owns`;
}

/** `select count(*) as n` of the table's rows of the source. */
export function countOwnedSql(
  decl: TableDecl,
  organizationId: string,
  source: string,
): RawBuilder<{ n: string }> {
  return sql<{ n: string }>`
    select count(*) as n from ${sql.id(decl.schema, decl.name)}
     where ${ofSource(organizationId, source)}`;
}

/**
 * Set the planner to hash or merge joins for the rest of the transaction (`local`): the target's
 * statistics do not see the rows merged in this transaction (a table created or filled by this
 * load looks empty to the planner), so it would pick a nested loop that scans the staging table
 * once per target row: quadratic, minutes for 100k rows.
 */
export function noNestedLoopSql(): RawBuilder<unknown> {
  return sql`select set_config('enable_nestloop', 'off', true)`;
}

export function resetNestedLoopSql(): RawBuilder<unknown> {
  return sql`reset enable_nestloop`;
}

/**
 * Every staged record whose natural key a later record of the source (a higher `_source_row`)
 * repeats, inserted into etl.rejects (LOAD_DUPLICATE_KEY) with its values as staged, as a JSON
 * object (keys in jsonb's order, the same on every load path whatever the order of the source's
 * columns), and the record loaded in its place; returns their count and the first `samples`.
 */
export function rejectRepeatedKeysSql(
  decl: TableDecl,
  who: MergeIdentity,
  staging: RawBuilder<unknown>,
  samples: number,
): RawBuilder<{ n: string; samples: { line: number; message: string }[] | null }> {
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
  return sql<{ n: string; samples: { line: number; message: string }[] | null }>`
    with repeated as (
      select s."_source_row" as line,
             max(s."_source_row") over (${partition}) as kept,
             ${keyText} as key_text,
             (to_jsonb(s) - '_source_row')::text as raw
        from ${staging} as s
    ), written as (
      insert into etl.rejects (pipeline, organization_id, window_key, source, record_number, raw_text,
                               error_code, message, run_id)
      select ${who.pipeline}, ${who.organizationId}, ${who.windowKey}, ${who.source}, r.line, r.raw,
             ${LOAD_ERROR_CODES.duplicateKey},
             ${`${who.source} record `} || r.line || ${`: its natural key in ${table} (`} || r.key_text ||
               ${') is repeated by record '} || r.kept || ${', which is loaded; this record is kept as a reject.'},
             ${who.runId}::bigint
        from repeated as r
       where r.line < r.kept
      returning record_number, message
    )
    select count(*)::bigint as n,
           (select json_agg(json_build_object('line', w.record_number, 'message', w.message))
              from (select * from written order by record_number limit ${samples}) as w) as samples
      from written`;
}

/**
 * `create temp table <changed>`: the staged rows that differ from the row the source wrote for
 * their key (data columns and `_source_row` compared), by a hash anti join that writes nothing.
 */
export function createChangedRowsSql(
  decl: TableDecl,
  organizationId: string,
  source: string,
  compared: readonly string[],
  stagingName: string,
  changedName: string,
): RawBuilder<unknown> {
  const row = (alias: string) => sql.join(compared.map((c) => sql.id(alias, c)));
  return sql`
    create temp table ${sql.id(changedName)} on commit drop as
    select * from ${sql.id('pg_temp', stagingName)} as s
     where not exists (select 1 from ${sql.id(decl.schema, decl.name)} as t
                        where ${ofSource(organizationId, source, 't')}
                          and ${sameKey(decl, 't', 's')}
                          and (${row('t')}) is not distinct from (${row('s')}))`;
}

/** Whether a changed row's key is staged again with other values (a key the source repeats). */
export function changedKeyRepeatedSql(
  decl: TableDecl,
  compared: readonly string[],
  stagingName: string,
  changedName: string,
): RawBuilder<{ repeated: boolean }> {
  const row = (alias: string) => sql.join(compared.map((c) => sql.id(alias, c)));
  return sql<{ repeated: boolean }>`
    select exists (select 1 from ${sql.id('pg_temp', changedName)} as c
                     join ${sql.id('pg_temp', stagingName)} as s on ${sameKey(decl, 'c', 's')}
                    where (${row('c')}) is distinct from (${row('s')})) as repeated`;
}

/**
 * The upsert of the staged rows (`data` columns, then `_source_row`) into the table, the lineage
 * values added: a conflicting row is rewritten only when its data, `_source`, `_source_row` or
 * `_source_key` differ. With `dedupe`, DISTINCT ON the natural key, the last record of the source
 * winning (the rows are counted in `distinct_rows`); otherwise a key staged twice fails the
 * statement (21000). Returns the inserted and updated counts and one writer's id.
 */
export function upsertSql(
  decl: TableDecl,
  who: Pick<MergeIdentity, 'organizationId' | 'source' | 'runId'>,
  data: readonly string[],
  staging: RawBuilder<unknown>,
  dedupe: boolean,
): RawBuilder<{ distinct_rows: string | null; inserted: string; updated: string; writer: string | null }> {
  const keyExprs = dataKey(decl).map((k) => sql.id('s', k));
  const distinctOn = keyExprs.length > 0 ? sql.join(keyExprs) : sql`true`;
  const insertColumns = [...data, ...LINEAGE_COLUMNS.map((c) => c.name)];
  const compared = [...data, '_source', '_source_row', '_source_key'];
  const updated = [...data, '_source', '_source_row', '_run_id', '_loaded_at', '_source_key'];
  const target = sql.id(decl.schema, decl.name);
  const src = sql`
      select ${dedupe ? sql`distinct on (${distinctOn})` : sql``}
             ${sql.join([...data, '_source_row'].map((c) => sql.id('s', c)))},
             ${who.organizationId}::text as "_organization_id",
             ${who.source}::text as "_source",
             ${who.runId}::bigint as "_run_id",
             now() as "_loaded_at",
             ${sourceKeyQuery(who.organizationId, who.source)} as "_source_key"
        from ${staging} as s
        ${dedupe ? sql`order by ${distinctOn}, s."_source_row" desc` : sql``}`;
  return sql<{ distinct_rows: string | null; inserted: string; updated: string; writer: string | null }>`
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
      from merged`;
}

/** Delete the rows the source owns whose key is no longer staged (only rows whose `_source` it is). */
export function deleteVanishedSql(
  decl: TableDecl,
  organizationId: string,
  source: string,
  staging: RawBuilder<unknown>,
): RawBuilder<unknown> {
  return sql`
    delete from ${sql.id(decl.schema, decl.name)} as t
     where ${ofSource(organizationId, source, 't')}
       and not exists (select 1 from ${staging} as s where ${sameKey(decl, 's', 't')})`;
}

/**
 * Delete the items of a child table (`child`, TableDecl.parent) that other sources left for the
 * records of `records` the source now owns: from the source's records (found by `_source_key`) to
 * their items (the child's key index starts with the records' key), never over the whole child.
 */
export function deleteItemsLeftBehindSql(
  child: TableDecl,
  records: TableDecl,
  parentKey: readonly string[],
  organizationId: string,
  source: string,
): RawBuilder<unknown> {
  const sameRecord = sql.join(
    parentKey.map((k) => sql`${sql.id('p', k)} = ${sql.id('c', k)}`),
    sql` and `,
  );
  return sql`
    delete from ${sql.id(child.schema, child.name)} as c using ${sql.id(records.schema, records.name)} as p
     where ${ofSource(organizationId, source, 'p')}
       and ${sameRecord} and c."_organization_id" = p."_organization_id"
       and c."_source_key" is distinct from p."_source_key"`;
}
