-- cybs-etl state schema. Forward-only: never edit a migration that has shipped; add a new one.

create schema if not exists etl;
create schema if not exists cybs;
comment on schema etl is 'cybs-etl run and window state, rejected rows and schema changes.';
comment on schema cybs is 'CyberSource reporting data loaded by cybs-etl: one table per report definition and per on-demand section.';

-- One row per invocation of run, backfill, import or a scheduled fire.
create table etl.runs (
  id            bigserial primary key,
  command       text        not null,                       -- run | backfill | import | schedule
  trigger       text        not null default 'cli',         -- cli | schedule | test
  pipelines     text[],
  host          text,
  pid           integer,
  started_at    timestamptz not null default now(),
  finished_at   timestamptz,
  status        text        not null default 'running'
                check (status in ('running', 'succeeded', 'failed', 'interrupted')),
  counts        jsonb       not null default '{}'::jsonb,    -- windows and rows by outcome
  error         text
);
create index runs_started_at_idx on etl.runs (started_at desc);

-- One row per pipeline x organization x window: the unit that commits exactly once.
create table etl.windows (
  id                  bigserial primary key,
  pipeline            text        not null,
  organization_id     text        not null,
  window_key          text        not null,                 -- e.g. 2026-11-20 or 2026-11-01..2026-11-30
  window_start        timestamptz not null,
  window_end          timestamptz not null,
  status              text        not null default 'pending'
                      check (status in ('pending', 'running', 'loaded', 'no_data', 'failed')),
  status_before_claim text,                                  -- what a re-load falls back to if it does not finish
  attempts            integer     not null default 0,
  rows_loaded         bigint      not null default 0,
  rows_rejected       bigint      not null default 0,
  counts              jsonb       not null default '{}'::jsonb, -- inserted / updated / unchanged / deleted
  source_ref          text,                                  -- report id, report name + date, endpoint + window
  last_error_code     text,
  last_error_message  text,
  not_ready_since     timestamptz,                           -- first time the report was not ready yet
  run_id              bigint references etl.runs (id),
  lease_owner         text,
  lease_expires_at    timestamptz,
  created_at          timestamptz not null default now(),
  updated_at          timestamptz not null default now(),
  loaded_at           timestamptz,
  constraint windows_pipeline_org_key unique (pipeline, organization_id, window_key),
  constraint windows_range check (window_end > window_start)
);
create index windows_status_idx on etl.windows (status, pipeline);

-- Rows that failed validation, with their raw text, so nothing is lost silently.
create table etl.rejects (
  id               bigserial primary key,
  pipeline         text        not null,
  organization_id  text        not null,
  window_key       text,
  source           text        not null,                     -- the row's _source lineage key
  record_number    bigint,                                   -- line (CSV) or record (XML, JSON)
  raw_text         text,
  error_code       text        not null,
  message          text        not null,
  run_id           bigint references etl.runs (id),
  created_at       timestamptz not null default now()
);
create index rejects_window_idx on etl.rejects (pipeline, organization_id, window_key);

-- Columns added to cybs.* tables because a report brought a header the table did not have.
create table etl.schema_changes (
  id            bigserial primary key,
  table_schema  text        not null default 'cybs',
  table_name    text        not null,
  column_name   text        not null,
  column_type   text        not null,
  change        text        not null default 'add_column',
  source        text,
  pipeline      text,
  run_id        bigint references etl.runs (id),
  changed_at    timestamptz not null default now()
);

-- Scheduled fires claimed by `cybs-etl schedule` instances (node-cron run coordinator): the first
-- instance to insert a fire's key runs it; the others skip it. One row per task and cron slot.
create table etl.schedule_fires (
  fire_key      text        primary key,                     -- <task name>:<slot ISO-8601>
  owner         text        not null,                        -- host:pid of the instance that runs it
  claimed_at    timestamptz not null default now(),
  completed_at  timestamptz,
  run_id        bigint references etl.runs (id)
);
