-- The one-time reports of backfills (src/extract/one-time-reports.ts), as the chunk jobs of the
-- window queue (src/queue/chunk-jobs.ts) see them: one row per report, from the moment a window
-- asks for its chunk's report (REQUESTED) through the service's statuses to COMPLETED, NO_DATA or
-- ERROR, or FAILED when cybs-etl gave up on it (its job's retries spent, or still not ready at the
-- timeout). Windows of any process read here which report covers them and whether it is ready;
-- each process downloads a COMPLETED report by its name once, for all its windows of the report.
create table if not exists etl.one_time_reports (
  pipeline         text        not null,
  organization_id  text        not null,
  report_name      text        not null,
  period_start     timestamptz not null,
  period_end       timestamptz not null,
  status           text        not null,
  report_id        text,
  -- Of a COMPLETED report, as the search told them: what its download is asked for with.
  mime_type        text,
  time_zone        text,
  message          text,
  -- When the report's job looks at it next (a report not yet final).
  next_check_at    timestamptz,
  updated_at       timestamptz not null default now(),
  primary key (pipeline, organization_id, report_name)
);
