-- What each `cybs-etl import` of a report left, as etl.windows.fingerprint keeps it for a window
-- (src/pipeline/fingerprint.ts): the file's digest, the loader and declaration that read it, and the
-- rows it left. An import of the same bytes again then writes nothing when the table still holds
-- them, and restores only the rows touched since when a few were changed by hand.
create table if not exists etl.import_fingerprints (
  organization_id  text        not null,
  source           text        not null,
  fingerprint      jsonb       not null,
  imported_at      timestamptz not null default now(),
  primary key (organization_id, source)
);
