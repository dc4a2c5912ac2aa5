/**
 * Install the cybs_analytics views: run by `cybs-etl migrate` and after the migrations every
 * warehouse command runs. In one transaction, under an advisory lock (two processes starting at
 * once install once): when the installed version (a digest of every statement, the catalog and the
 * source tables' declarations) differs, the source tables are made sure of (created, or given the
 * columns the models read, typed from the catalog), every view of the schema is dropped and the
 * current ones created with their comments, the dictionary tables reloaded, the default settings
 * added, and the analyst role (sql/roles.sql) given read access when it exists. Otherwise nothing
 * is written.
 */
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { findField } from '../catalog/index.js';
import { ensureTable, quoteIdent, quoteLiteral } from '../load/ddl.js';
import type { ColumnDecl, TableDecl } from '../load/table-spec.js';
import type { Db } from '../warehouse/warehouse.js';
import { CHECK_VIEWS } from './checks.js';
import { DATA_DICTIONARY, catalogFieldRows, catalogTableRows, viewColumnRows } from './dictionary.js';
import type { WarehouseTable } from './dictionary.js';
import { ANALYTICS_FUNCTIONS, DEFAULT_SETTINGS } from './functions.js';
import { MODEL_VIEWS } from './models.js';
import { REPORT_SOURCES, sourceTables } from './sources.js';
import { stagingViews } from './staging.js';
import { ANALYTICS_SCHEMA, qualified } from './view-def.js';
import type { ViewDef } from './view-def.js';

/**
 * Every view, in creation order. `materialize: false` makes every one a plain view (the benchmark's
 * comparison; docs/performance.md).
 */
export function analyticsViews(options: InstallOptions = {}): ViewDef[] {
  const views = [...stagingViews(), ...MODEL_VIEWS, ...CHECK_VIEWS, DATA_DICTIONARY];
  return options.materialize === false ? views.map(({ materialized: _m, ...v }) => v) : views;
}

export interface InstallOptions {
  /** False: no materialized view (for the benchmark). Default true. */
  materialize?: boolean;
}

/** The source tables as the models need them: the pipelines' declarations plus the fields they read. */
export function sourceTableDecls(tables: readonly WarehouseTable[]): TableDecl[] {
  const wanted = new Set(sourceTables());
  return tables
    .filter((t) => wanted.has(t.decl.name))
    .map((t) => {
      const source = REPORT_SOURCES.find((s) => s.table === t.decl.name);
      if (!source) return t.decl;
      const columns: ColumnDecl[] = [...t.decl.columns];
      for (const id of source.fields) {
        const f = findField(id)!;
        if (columns.some((c) => c.name === f.column)) continue;
        columns.push({
          name: f.column,
          pgType: f.pgType,
          ...(f.description ? { description: f.description } : {}),
        });
      }
      return { ...t.decl, columns };
    });
}

/** Statements that create one view (or materialized view) and its comments. */
export function viewDdl(view: ViewDef): string[] {
  const name = qualified(view.name);
  const kind = view.materialized ? 'materialized view' : 'view';
  return [
    `create ${kind} ${name} as\n${view.sql}${view.materialized ? '\nwith no data' : ''}`,
    ...(view.materialized
      ? [
          `create unique index ${quoteIdent(`${view.name}_key`)} on ${name} (${view.materialized.key.map(quoteIdent).join(', ')})`,
          ...(view.materialized.indexes ?? []).map(
            (columns) =>
              `create index ${quoteIdent(`${view.name}_${columns.join('_')}`)} on ${name} (${columns.map(quoteIdent).join(', ')})`,
          ),
        ]
      : []),
    `comment on ${kind} ${name} is ${quoteLiteral(view.description)}`,
    ...view.columns.map(
      (c) => `comment on column ${name}.${quoteIdent(c.name)} is ${quoteLiteral(c.description)}`,
    ),
  ];
}

/**
 * `cybs_analytics.refresh()`: refresh every materialized view, in order, and analyze it: what a
 * run does after loading, for data that came another way (an import, a hand fix).
 */
export function refreshFunctionDdl(views: readonly ViewDef[]): string[] {
  const body = views
    .filter((v) => v.materialized)
    .map((v) => `  refresh materialized view ${qualified(v.name)};\n  analyze ${qualified(v.name)};`)
    .join('\n');
  return [
    `create or replace function ${ANALYTICS_SCHEMA}.refresh() returns void language plpgsql as $$\nbegin\n${body}\n  return;\nend\n$$`,
    `comment on function ${ANALYTICS_SCHEMA}.refresh() is ${quoteLiteral(
      'Refresh the materialized cybs_analytics views (as each run does after loading): call it after cybs-etl import or a change by hand.',
    )}`,
  ];
}

/** The version of the views: a digest of what install would do. */
export function analyticsVersion(tables: readonly WarehouseTable[], options: InstallOptions = {}): string {
  const hash = createHash('sha256');
  for (const f of ANALYTICS_FUNCTIONS) hash.update(f.sql + f.description);
  for (const v of analyticsViews(options)) hash.update(viewDdl(v).join(';\n'));
  hash.update(refreshFunctionDdl(analyticsViews(options)).join(';\n'));
  hash.update(JSON.stringify(DEFAULT_SETTINGS));
  hash.update(JSON.stringify(sourceTableDecls(tables)));
  hash.update(JSON.stringify(catalogFieldRows()));
  hash.update(JSON.stringify(catalogTableRows(tables, [])));
  return hash.digest('hex').slice(0, 16);
}

export interface InstallResult {
  /** False when this version was installed already. */
  installed: boolean;
  version: string;
  views: number;
}

const LOCK_KEY = 'cybs-etl:analytics';

export async function installAnalytics(
  db: Db,
  tables: readonly WarehouseTable[],
  options: InstallOptions = {},
): Promise<InstallResult> {
  const version = analyticsVersion(tables, options);
  const views = analyticsViews(options);
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtextextended(${LOCK_KEY}, 0))`.execute(trx);
    const current = await sql<{ version: string }>`select version from etl.analytics`.execute(trx);
    if (current.rows[0]?.version === version) return { installed: false, version, views: views.length };
    for (const decl of sourceTableDecls(tables)) await ensureTable(trx, decl);
    await dropViews(trx);
    for (const f of ANALYTICS_FUNCTIONS) {
      await sql.raw(f.sql).execute(trx);
      await sql
        .raw(`comment on function ${ANALYTICS_SCHEMA}.${f.name} is ${quoteLiteral(f.description)}`)
        .execute(trx);
    }
    for (const s of DEFAULT_SETTINGS) {
      await sql`insert into cybs_analytics.settings (name, value, description)
                values (${s.name}, ${s.value}, ${s.description})
                on conflict (name) do update set description = excluded.description`.execute(trx);
    }
    await reloadDictionary(trx, tables, views);
    for (const view of views) for (const statement of viewDdl(view)) await sql.raw(statement).execute(trx);
    for (const statement of refreshFunctionDdl(views)) await sql.raw(statement).execute(trx);
    for (const view of views) {
      if (!view.materialized) continue;
      await sql.raw(`refresh materialized view ${qualified(view.name)}`).execute(trx);
      await sql.raw(`analyze ${qualified(view.name)}`).execute(trx);
    }
    await grantToAnalyst(trx);
    await sql`insert into etl.analytics (id, version, installed_at) values (true, ${version}, now())
              on conflict (id) do update set version = excluded.version, installed_at = excluded.installed_at`.execute(
      trx,
    );
    return { installed: true, version, views: views.length };
  });
}

/** Drop every view and materialized view of the schema (its tables stay). */
async function dropViews(db: Db): Promise<void> {
  const existing = await sql<{ name: string; kind: string }>`
    select c.relname as name, c.relkind::text as kind
      from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
     where n.nspname = ${ANALYTICS_SCHEMA} and c.relkind in ('v', 'm')`.execute(db);
  for (const v of existing.rows) {
    await sql
      .raw(
        `drop ${v.kind === 'm' ? 'materialized view' : 'view'} if exists ${ANALYTICS_SCHEMA}.${quoteIdent(v.name)} cascade`,
      )
      .execute(db);
  }
}

async function reloadDictionary(
  db: Db,
  tables: readonly WarehouseTable[],
  views: readonly ViewDef[],
): Promise<void> {
  await sql`delete from cybs_analytics.catalog_fields`.execute(db);
  await sql`delete from cybs_analytics.catalog_tables`.execute(db);
  await sql`delete from cybs_analytics.view_columns`.execute(db);
  await insertRows(db, 'catalog_fields', catalogFieldRows());
  await insertRows(db, 'catalog_tables', catalogTableRows(tables, views));
  await insertRows(db, 'view_columns', viewColumnRows(views));
}

async function insertRows<T extends object>(db: Db, table: string, rows: readonly T[]): Promise<void> {
  if (rows.length === 0) return;
  const keys = Object.keys(rows[0]!) as (keyof T & string)[];
  for (let i = 0; i < rows.length; i += 200) {
    const chunk = rows.slice(i, i + 200);
    await sql`insert into ${sql.table(`cybs_analytics.${table}`)} (${sql.join(keys.map((k) => sql.ref(k)))})
              values ${sql.join(chunk.map((r) => sql`(${sql.join(keys.map((k) => r[k] as unknown))})`))}`.execute(
      db,
    );
  }
}

/** Read access for the analyst role of sql/roles.sql, when it exists (the views are new objects). */
async function grantToAnalyst(db: Db): Promise<void> {
  const role = await sql<{
    n: number;
  }>`select count(*)::int as n from pg_catalog.pg_roles where rolname = 'cybs_analyst'`.execute(db);
  if ((role.rows[0]?.n ?? 0) === 0) return;
  await sql.raw(`grant usage on schema ${ANALYTICS_SCHEMA} to cybs_analyst`).execute(db);
  await sql.raw(`grant select on all tables in schema ${ANALYTICS_SCHEMA} to cybs_analyst`).execute(db);
}
