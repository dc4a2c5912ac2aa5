/**
 * The data dictionary: the catalog (fields, their names in each convention, descriptions,
 * provenance), the tables (report definition or endpoint, natural key) and the views' columns
 * (description, lineage), kept in cybs_analytics tables by install.ts, and the
 * `data_dictionary` view that joins them to what PostgreSQL has: every column of every cybs table
 * (those schema evolution added included) and of every cybs_analytics view.
 */
import { CATALOG_FIELDS, ON_DEMAND_SECTIONS } from '../catalog/index.js';
import type { OnDemandPipelineDef, PipelineDef } from '../pipeline/define-pipeline.js';
import type { TableDecl } from '../load/table-spec.js';
import { column } from './view-def.js';
import type { ViewDef } from './view-def.js';

/** A cybs table and where its rows come from. */
export interface WarehouseTable {
  decl: TableDecl;
  kind: 'report' | 'child' | 'on-demand';
  pipeline: string;
  /** The report definition (and id) or the endpoint and section. */
  sourceReports: string;
}

/** The cybs tables of the pipelines, with their sources. */
export function warehouseTables(defs: readonly PipelineDef[]): WarehouseTable[] {
  const out: WarehouseTable[] = [];
  for (const def of defs) {
    if (def.kind === 'report') {
      out.push({
        decl: def.table,
        kind: 'report',
        pipeline: def.name,
        sourceReports: def.reportDefinitionName,
      });
      for (const child of Object.values(def.childTables ?? {}))
        out.push({
          decl: child,
          kind: 'child',
          pipeline: def.name,
          sourceReports: `${def.reportDefinitionName} (XML)`,
        });
    } else {
      for (const [section, decl] of Object.entries((def as OnDemandPipelineDef).tables))
        out.push({
          decl,
          kind: 'on-demand',
          pipeline: def.name,
          sourceReports: `${def.endpoint} ${section}`,
        });
    }
  }
  return out;
}

export interface CatalogFieldRow {
  scope: string;
  column_name: string;
  field_id: string;
  group_title: string | null;
  pg_type: string;
  description: string | null;
  soapi_name: string | null;
  scmp_name: string | null;
  aliases: string;
  provenance: string | null;
}

/**
 * The catalog as rows: report fields (scope `report`: any report table's column of that name) and
 * on-demand keys (scope: their table).
 */
export function catalogFieldRows(): CatalogFieldRow[] {
  const rows: CatalogFieldRow[] = CATALOG_FIELDS.map((f) => ({
    scope: 'report',
    column_name: f.column,
    field_id: f.id,
    group_title: f.groupTitle,
    pg_type: f.pgType,
    description: f.description ?? null,
    soapi_name: f.documentedSoapiName ?? f.soapiName,
    scmp_name: f.documentedScmpName ?? f.scmpName,
    aliases: f.aliases.join(', '),
    provenance: f.provenance ?? null,
  }));
  for (const s of ON_DEMAND_SECTIONS) {
    for (const f of s.fields) {
      rows.push({
        scope: s.table,
        column_name: f.column,
        field_id: `${s.endpoint}:${s.name}.${f.key}`,
        group_title: s.description,
        pg_type: f.pgType,
        description: f.description ?? null,
        soapi_name: null,
        scmp_name: null,
        aliases: '',
        provenance: null,
      });
    }
  }
  return rows;
}

export interface CatalogTableRow {
  table_schema: string;
  table_name: string;
  kind: string;
  pipeline: string | null;
  source_reports: string | null;
  description: string;
  natural_key: string;
  key_description: string | null;
}

export function catalogTableRows(
  tables: readonly WarehouseTable[],
  views: readonly ViewDef[],
): CatalogTableRow[] {
  return [
    ...tables.map((t) => ({
      table_schema: t.decl.schema,
      table_name: t.decl.name,
      kind: t.kind,
      pipeline: t.pipeline,
      source_reports: t.sourceReports,
      description: t.decl.description,
      natural_key: t.decl.naturalKey.join(', '),
      key_description: t.decl.keyDescription,
    })),
    ...views.map((v) => ({
      table_schema: 'cybs_analytics',
      table_name: v.name,
      kind: v.kind,
      pipeline: null,
      source_reports:
        v.sources.length > 0 ? v.sources.map((s) => `cybs.${s}`).join(', ') : 'etl.windows, etl.runs',
      description: v.description,
      natural_key: (v.key ?? []).join(', '),
      key_description: null,
    })),
  ];
}

export interface ViewColumnRow {
  table_name: string;
  ordinal: number;
  column_name: string;
  description: string;
  lineage: string;
}

export function viewColumnRows(views: readonly ViewDef[]): ViewColumnRow[] {
  return views.flatMap((v) =>
    v.columns.map((c, i) => ({
      table_name: v.name,
      ordinal: i + 1,
      column_name: c.name,
      description: c.description,
      lineage: c.lineage,
    })),
  );
}

/** Column comments the DDL writes when it knows nothing better: not a description. */
export const PLACEHOLDER_COMMENT = `'(\\(no description in the catalog\\)\\.$|^(Unknown header|Column) first seen in )'`;

export const DATA_DICTIONARY: ViewDef = {
  name: 'data_dictionary',
  kind: 'dictionary',
  key: ['table_schema', 'table_name', 'column_name'],
  description:
    'Every column of every cybs table and cybs_analytics view, as PostgreSQL has them now (columns added by schema evolution included): type, description (the catalog’s, else the column comment; a column whose only comment is a placeholder is undocumented), catalog id (Group.Field, or endpoint:section.key), Simple Order and SCMP header names, source reports, natural key and lineage. `cybs-etl docs` renders it.',
  sources: [],
  columns: [
    column('table_schema', 'cybs or cybs_analytics.', 'pg_namespace'),
    column('table_name', 'Table or view.', 'pg_class'),
    column(
      'table_kind',
      'report, child, on-demand (cybs tables) or staging, model, check, dictionary (views).',
      'catalog_tables.kind',
    ),
    column('table_description', 'What the table holds.', 'catalog_tables.description, obj_description'),
    column('ordinal', 'Position of the column.', 'pg_attribute.attnum'),
    column('column_name', 'Column.', 'pg_attribute.attname'),
    column('data_type', 'PostgreSQL type.', 'format_type'),
    column(
      'description',
      'What the column holds; null when nothing documents it.',
      'catalog_fields.description, view_columns.description, col_description',
    ),
    column('documented', 'Whether a description exists.', 'description'),
    column(
      'catalog_id',
      'Catalog field: Group.Field, or endpoint:section.key for on-demand tables.',
      'catalog_fields.field_id',
    ),
    column('soapi_name', 'Simple Order API header name.', 'catalog_fields.soapi_name'),
    column('scmp_name', 'SCMP header name.', 'catalog_fields.scmp_name'),
    column(
      'source_reports',
      'Report definition or endpoint (cybs tables), cybs tables read (views).',
      'catalog_tables.source_reports',
    ),
    column('natural_key', 'Columns that identify a row of the table.', 'catalog_tables.natural_key'),
    column('in_natural_key', 'Whether the column is part of it.', 'catalog_tables.natural_key'),
    column('lineage', 'Where the value comes from.', 'view_columns.lineage, catalog_fields'),
  ],
  sql: `select
  n.nspname::text as table_schema,
  c.relname::text as table_name,
  coalesce(t.kind, case c.relkind when 'r' then 'table' else 'view' end) as table_kind,
  coalesce(t.description, obj_description(c.oid, 'pg_class')) as table_description,
  a.attnum::int as ordinal,
  a.attname::text as column_name,
  format_type(a.atttypid, a.atttypmod) as data_type,
  d.description,
  d.description is not null as documented,
  f.field_id as catalog_id,
  f.soapi_name,
  f.scmp_name,
  t.source_reports,
  t.natural_key,
  coalesce(a.attname::text = any(string_to_array(t.natural_key, ', ')), false) as in_natural_key,
  coalesce(v.lineage,
           case when a.attname::text like '\\_%' then 'set by cybs-etl when the row is loaded'
                when f.field_id is not null then t.source_reports || ' ' || f.field_id end) as lineage
from pg_catalog.pg_attribute a
join pg_catalog.pg_class c on c.oid = a.attrelid
join pg_catalog.pg_namespace n on n.oid = c.relnamespace
left join cybs_analytics.catalog_tables t on t.table_schema = n.nspname and t.table_name = c.relname
left join cybs_analytics.view_columns v on n.nspname = 'cybs_analytics' and v.table_name = c.relname and v.column_name = a.attname
left join cybs_analytics.catalog_fields f
       on n.nspname = 'cybs' and f.column_name = a.attname
      and (f.scope = c.relname or (f.scope = 'report' and coalesce(t.kind, 'report') in ('report', 'child')))
cross join lateral (
  select coalesce(v.description, f.description,
                  case when col_description(c.oid, a.attnum) !~ ${PLACEHOLDER_COMMENT} then col_description(c.oid, a.attnum) end)
         as description
) d
where n.nspname in ('cybs', 'cybs_analytics')
  and c.relkind in ('r', 'v', 'm', 'p')
  and a.attnum > 0 and not a.attisdropped
  and not (n.nspname = 'cybs_analytics' and c.relname in ('catalog_fields', 'catalog_tables', 'view_columns'))`,
};
