-- Alerts (cybs-etl alerts, the schedule daemon): one row per incident, so that each is told once
-- when it opens and once when it resolves, whichever process evaluates it. An incident is a
-- condition on a subject: a failed window, a stale pipeline × organization, a window's rejects
-- share, a schema change (told once, it has no resolution).
create table if not exists etl.alert_incidents (
  id                   bigserial   primary key,
  event                text        not null
                       check (event in ('window_failed', 'pipeline_stale', 'schema_change', 'rejects')),
  subject              text        not null,                 -- e.g. pipeline/organization/window
  text                 text        not null,                 -- what the opening alert said
  details              jsonb       not null default '{}'::jsonb,
  opened_at            timestamptz not null default now(),
  resolved_at          timestamptz,
  notified_open_at     timestamptz,                          -- null: to be told (again) at the next evaluation
  notified_resolved_at timestamptz
);
-- At most one open incident per condition: the process whose insert wins tells it.
create unique index if not exists alert_incidents_open_idx
  on etl.alert_incidents (event, subject) where resolved_at is null;
create index if not exists alert_incidents_untold_idx
  on etl.alert_incidents (id) where notified_open_at is null or (resolved_at is not null and notified_resolved_at is null);
comment on table etl.alert_incidents is
  'Alert incidents: each told to the webhooks of config alerts once when it opens and once when it resolves.';
