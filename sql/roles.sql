-- Roles for a shared PostgreSQL warehouse. Run once as a superuser (or a role with CREATEROLE),
-- after `cybs-etl migrate`:   psql "$ADMIN_URL" -f sql/roles.sql
-- Then give the roles logins:  alter role cybs_loader login password '…'; (or grant them to users)
--
--   cybs_loader   what cybs-etl runs as: owns and writes cybs.*, etl.* and cybs_analytics.*.
--   cybs_analyst  read-only: every cybs.* table (present and future), every cybs_analytics view
--                 (the models, the reconciliation checks, the data dictionary), the run and window
--                 state, and a view of rejects WITHOUT the raw rejected text (which may hold
--                 card-holder data); reading etl.rejects itself needs an explicit grant.
-- Safe to run again.

do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'cybs_loader') then
    create role cybs_loader nologin;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'cybs_analyst') then
    create role cybs_analyst nologin;
  end if;
end
$$;

-- The loader owns the schemas so that it can add tables and columns (schema evolution).
alter schema cybs owner to cybs_loader;
alter schema etl owner to cybs_loader;
alter schema cybs_analytics owner to cybs_loader;
grant usage, create on schema cybs, etl, cybs_analytics to cybs_loader;
grant all on all tables in schema cybs, etl, cybs_analytics to cybs_loader;
grant all on all sequences in schema cybs, etl to cybs_loader;

-- Analysts: read cybs.*, now and for tables the loader creates later.
grant usage on schema cybs to cybs_analyst;
grant select on all tables in schema cybs to cybs_analyst;
alter default privileges for role cybs_loader in schema cybs grant select on tables to cybs_analyst;

-- Analysts: the cybs_analytics views, now and as cybs-etl recreates them (cybs-etl also grants
-- select on them to cybs_analyst each time it installs a new version of the views). Views run with
-- their owner's rights on the cybs tables, so analysts need nothing more. Read only: no insert,
-- update or delete through a view, no object of their own in the schema.
grant usage on schema cybs_analytics to cybs_analyst;
grant select on all tables in schema cybs_analytics to cybs_analyst;
alter default privileges for role cybs_loader in schema cybs_analytics grant select on tables to cybs_analyst;

-- Analysts: the state tables, but not the raw text of rejected rows.
grant usage on schema etl to cybs_analyst;
grant select on etl.runs, etl.windows, etl.schema_changes, etl.sources to cybs_analyst;
revoke all on etl.rejects from cybs_analyst;

create or replace view etl.rejects_summary as
  select id, pipeline, organization_id, window_key, source, record_number, error_code, message, run_id, created_at
  from etl.rejects;
comment on view etl.rejects_summary is 'etl.rejects without the raw rejected text, for analysts.';
alter view etl.rejects_summary owner to cybs_loader;
grant select on etl.rejects_summary to cybs_analyst;
