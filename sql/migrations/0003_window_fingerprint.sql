-- What a window's last load read and left behind, so that a re-load of the very same report file
-- into tables nobody has touched since can be recognised and skipped: the file's SHA-256 (and of
-- each of its 8 MiB blocks, to see early in a download that a file differs), the loader and table
-- declarations it was loaded with, per table the columns and the rows the source owns, the
-- window's rejects, and the transaction ids that wrote those rows (src/load/load-window.ts,
-- unchangedSince). NULL when the last load was not of a report file (on-demand, one-time).
alter table etl.windows add column if not exists fingerprint jsonb;
