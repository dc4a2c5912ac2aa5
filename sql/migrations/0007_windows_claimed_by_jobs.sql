-- Windows are loaded by jobs of the window queue (pg-boss, schema pgboss), whose singleton key per
-- window lets one job at a time exist for it, and whose heartbeats hand a dead worker's job to
-- another. The leases of etl.windows and the schedule's fire table are replaced by them:
--
-- * A window being loaded records the job attempt that claimed it (`claim`, "<job id>/<retry>");
--   the load commits only while that attempt still holds it.
-- * Windows left `running` under a lease fall back to what they were before the claim (a re-load
--   keeps its rows and status), or `pending`, so the next run plans them again.
-- * etl.schedule_fires goes: every schedule instance may plan a fire, and the planned windows
--   collapse into one job each.
update etl.windows
   set status = case when status_before_claim in ('loaded', 'no_data', 'failed')
                     then status_before_claim else 'pending' end,
       updated_at = now()
 where status = 'running';

alter table etl.windows drop column lease_owner;
alter table etl.windows drop column lease_expires_at;
alter table etl.windows add column claim text;

drop table etl.schedule_fires;
