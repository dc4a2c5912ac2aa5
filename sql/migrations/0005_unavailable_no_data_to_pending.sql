-- Windows that earlier versions marked no_data before their data could be available: a backfill
-- whose range reached into the future (or into the last hours) planned those windows, the service
-- had nothing for them yet, and they were recorded as having no data, then skipped when their day
-- came and made the lag look like zero. A window's data is available six hours (the default of
-- defaults.readyAfterHours) after it ends; one marked no_data before that is not known to have
-- none: it goes back to pending, and the next run or backfill that plans it loads it.
update etl.windows
   set status = 'pending',
       status_before_claim = null,
       rows_loaded = 0,
       rows_rejected = 0,
       counts = '{}'::jsonb,
       source_ref = null,
       fingerprint = null,
       loaded_at = null,
       updated_at = now()
 where status = 'no_data'
   and window_end + interval '6 hours' > coalesce(loaded_at, updated_at);

-- A window being loaded right now that would fall back to such a no_data if its load does not finish.
update etl.windows
   set status_before_claim = 'pending'
 where status = 'running'
   and status_before_claim = 'no_data'
   and window_end + interval '6 hours' > coalesce(loaded_at, updated_at);
