/**
 * The `etl` schema as kysely sees it (sql/migrations/*.sql): the run state the product queries with
 * the query builder. The `cybs` tables are not here: their columns come from report headers at run
 * time, so they are queried with raw `sql` over `Db` (warehouse.ts).
 */
import type { ColumnType, Kysely } from 'kysely';
import type { AlertEvent } from '../config/schema.js';

/**
 * Column types: what a select reads, an insert may write (undefined: the column has a default) and
 * an update writes. Written out rather than wrapped in Generated<>, which does not unwrap a
 * ColumnType inside it.
 */
type Column<T, Default extends boolean = false> = ColumnType<T, Default extends true ? T | undefined : T, T>;
/** A timestamptz: read as a Date, written as a Date or an ISO string (or now() through `sql`). */
type Timestamp<Default extends boolean = false> = ColumnType<
  Date,
  Date | string | (Default extends true ? undefined : never),
  Date | string
>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null, Date | string | null>;
/** An int8: node-postgres reads it as a string, PGlite as a number. */
type Int8<Default extends boolean = false> = Column<string | number, Default>;
/** A jsonb column: read parsed, written as a value or its JSON text. */
type Json<T, Default extends boolean = false> = ColumnType<
  T,
  T | string | (Default extends true ? undefined : never),
  T | string
>;

/** etl.windows.status and etl.runs.status: the values their check constraints allow. */
export type WindowStatusValue = 'pending' | 'running' | 'loaded' | 'no_data' | 'failed';
export type RunStatusValue = 'running' | 'succeeded' | 'failed' | 'interrupted';

/** etl.runs: one row per invocation of run, backfill, import or a scheduled fire. */
export interface RunsTable {
  id: Int8<true>;
  command: string;
  trigger: Column<string, true>;
  pipelines: string[] | null;
  host: string | null;
  pid: number | null;
  started_at: Timestamp<true>;
  finished_at: NullableTimestamp;
  status: Column<RunStatusValue, true>;
  counts: Json<Record<string, unknown>, true>;
  error: string | null;
}

/** etl.windows: one row per pipeline × organization × window, the unit that commits exactly once. */
export interface WindowsTable {
  id: Int8<true>;
  pipeline: string;
  organization_id: string;
  window_key: string;
  window_start: Timestamp;
  window_end: Timestamp;
  status: Column<WindowStatusValue, true>;
  status_before_claim: WindowStatusValue | null;
  attempts: Column<number, true>;
  rows_loaded: Int8<true>;
  rows_rejected: Int8<true>;
  counts: Json<Record<string, unknown>, true>;
  source_ref: string | null;
  last_error_code: string | null;
  last_error_message: string | null;
  not_ready_since: NullableTimestamp;
  run_id: Column<string | number | null>;
  /** The job attempt that holds a running window: `<job id>/<attempt>@<host>:<pid>`. */
  claim: string | null;
  created_at: Timestamp<true>;
  updated_at: Timestamp<true>;
  loaded_at: NullableTimestamp;
  fingerprint: Json<unknown>;
  /** Failed attempts since the window last loaded (the retry backoff's step). */
  failures: Column<number, true>;
  failed_at: NullableTimestamp;
  /** A failed window is planned again from this time on (null: at the next pass). */
  retry_after: NullableTimestamp;
}

/** etl.pipeline_shapes: how a pipeline's windows were last cut by a pass (time zone, report schedule). */
export interface PipelineShapesTable {
  pipeline: string;
  time_zone: string;
  report_schedule: Json<unknown | null>;
  updated_at: Timestamp<true>;
}

/** etl.rejects: rows that failed validation, with their raw text. */
export interface RejectsTable {
  id: Int8<true>;
  pipeline: string;
  organization_id: string;
  window_key: string | null;
  source: string;
  record_number: Column<string | number | null>;
  raw_text: string | null;
  error_code: string;
  message: string;
  run_id: Column<string | number | null>;
  created_at: Timestamp<true>;
}

/** etl.schema_changes: columns added to cybs tables because a report brought a new header. */
export interface SchemaChangesTable {
  id: Int8<true>;
  table_schema: Column<string, true>;
  table_name: string;
  column_name: string;
  column_type: string;
  change: Column<string, true>;
  source: string | null;
  pipeline: string | null;
  run_id: Column<string | number | null>;
  changed_at: Timestamp<true>;
}

/** etl.sources: one number per (organization, source) loaded, the rows' _source_key. */
export interface SourcesTable {
  source_key: Int8<true>;
  organization_id: string;
  source: string;
  created_at: Timestamp<true>;
}

/** etl.alert_incidents: one row per alert condition on a subject, told once open and once resolved. */
export interface AlertIncidentsTable {
  id: Int8<true>;
  event: AlertEvent;
  subject: string;
  text: string;
  details: Json<Record<string, unknown>, true>;
  opened_at: Timestamp<true>;
  resolved_at: NullableTimestamp;
  /** Null: the opening is to be told (again) at the next evaluation. */
  notified_open_at: NullableTimestamp;
  notified_resolved_at: NullableTimestamp;
}

/** etl.import_fingerprints: what the last `import` of each report left (a WindowFingerprint). */
export interface ImportFingerprintsTable {
  organization_id: string;
  source: string;
  fingerprint: Json<unknown>;
  imported_at: Timestamp<true>;
}

export interface Database {
  'etl.runs': RunsTable;
  'etl.windows': WindowsTable;
  'etl.rejects': RejectsTable;
  'etl.schema_changes': SchemaChangesTable;
  'etl.sources': SourcesTable;
  'etl.pipeline_shapes': PipelineShapesTable;
  'etl.alert_incidents': AlertIncidentsTable;
  'etl.import_fingerprints': ImportFingerprintsTable;
}

/** Kysely over the `etl` tables; a `Db` (warehouse.ts) is one, as the pool's instance is untyped. */
export type EtlDb = Kysely<Database>;
