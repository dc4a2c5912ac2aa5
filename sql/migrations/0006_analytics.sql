-- cybs_analytics: the schema of the models, checks and data dictionary built on the cybs tables.
-- The views themselves are (re)created by cybs-etl (src/analytics/install.ts) whenever their
-- definition changes; this migration creates what they keep between versions.

create schema if not exists cybs_analytics;
comment on schema cybs_analytics is
  'cybs-etl models on the cybs tables: staging views, transactions, payment lifecycle, ledger, reconciliations, reconciliation checks (rc_*) and the data dictionary.';

-- The zone each organization's reports are cut in: local days of the models. Recorded by each run
-- (the Transaction Request pipeline's zone); an organization without a row is read in UTC.
create table cybs_analytics.organizations (
  organization_id text primary key,
  time_zone       text not null default 'UTC',
  updated_at      timestamptz not null default now()
);
comment on table cybs_analytics.organizations is
  'Time zone of each organization''s local days in the models (its reports'' zone, recorded by each run; UTC when absent).';
comment on column cybs_analytics.organizations.organization_id is 'CyberSource organization (merchant).';
comment on column cybs_analytics.organizations.time_zone is 'IANA time zone its local days are cut in.';
comment on column cybs_analytics.organizations.updated_at is 'When the zone was last recorded.';

-- Thresholds of the reconciliation checks; change a value with an UPDATE (as the loader role).
create table cybs_analytics.settings (
  name        text primary key,
  value       numeric not null,
  description text not null
);
comment on table cybs_analytics.settings is 'Thresholds of the reconciliation checks (rc_* views).';
comment on column cybs_analytics.settings.name is 'Threshold name, as the check descriptions name it.';
comment on column cybs_analytics.settings.value is 'Its value (days or hours, as its description says).';
comment on column cybs_analytics.settings.description is 'What it decides.';

-- The catalog and the views' columns, reloaded with each version of the views (data_dictionary).
create table cybs_analytics.catalog_fields (
  scope       text not null,
  column_name text not null,
  field_id    text not null,
  group_title text,
  pg_type     text not null,
  description text,
  soapi_name  text,
  scmp_name   text,
  aliases     text not null default '',
  provenance  text,
  primary key (scope, column_name)
);
comment on table cybs_analytics.catalog_fields is
  'The field catalog: scope report (a column of any report table) or an on-demand table; read by data_dictionary.';

create table cybs_analytics.catalog_tables (
  table_schema    text not null,
  table_name      text not null,
  kind            text not null,
  pipeline        text,
  source_reports  text,
  description     text not null,
  natural_key     text not null,
  key_description text,
  primary key (table_schema, table_name)
);
comment on table cybs_analytics.catalog_tables is
  'Each cybs table and cybs_analytics view: kind, source report or endpoint, natural key; read by data_dictionary.';

create table cybs_analytics.view_columns (
  table_name  text not null,
  ordinal     integer not null,
  column_name text not null,
  description text not null,
  lineage     text not null,
  primary key (table_name, column_name)
);
comment on table cybs_analytics.view_columns is 'Each cybs_analytics view column: description and lineage; read by data_dictionary.';

-- Which definition of the views is installed (a digest of their SQL, the catalog and the tables they read).
create table etl.analytics (
  id           boolean primary key default true check (id),
  version      text not null,
  installed_at timestamptz not null default now()
);
comment on table etl.analytics is 'The installed version of the cybs_analytics views.';
