-- Retries of failed windows with a backoff: `failures` counts the failed attempts since the window
-- last loaded (attempts counts every claim, loads and not-ready looks included), and a failed
-- window is planned again only once `retry_after` has passed (retryDelaySeconds in src/state/windows.ts). Both
-- are cleared when the window loads, and by `cybs-etl windows retry` / `reset`.
alter table etl.windows add column if not exists failures integer not null default 0;
alter table etl.windows add column if not exists failed_at timestamptz;
alter table etl.windows add column if not exists retry_after timestamptz;

-- Failed windows of earlier versions: one failure each, to be retried at the next pass.
update etl.windows set failures = 1, failed_at = updated_at where status = 'failed' and failures = 0;

-- The shape a pipeline's windows were last planned with (its time zone and, for a report pipeline,
-- its subscription's schedule), so that `status` and `windows list`, which do not ask the API,
-- measure completeness against the same windows a run plans.
create table if not exists etl.pipeline_shapes (
  pipeline         text primary key,
  time_zone        text        not null,
  report_schedule  jsonb,
  updated_at       timestamptz not null default now()
);
