import { sql } from 'kysely';
import type { Db } from '../warehouse/warehouse.js';

/**
 * The one-time reports of backfills in the warehouse (etl.one_time_reports): which report covers a
 * window, and how far it is. A report's job (src/queue/chunk-jobs.ts) writes its status; the
 * windows it covers, on any machine, read it.
 */

/** Statuses after which a report's job is done with it (FAILED: cybs-etl gave up on it). */
export const ONE_TIME_FINAL_STATUSES = ['COMPLETED', 'NO_DATA', 'ERROR', 'FAILED'] as const;

export function isFinalOneTimeStatus(status: string): boolean {
  return (ONE_TIME_FINAL_STATUSES as readonly string[]).includes(status);
}

export interface OneTimeReportKey {
  pipeline: string;
  organizationId: string;
  reportName: string;
}

export interface OneTimeReportRow extends OneTimeReportKey {
  start: Date;
  end: Date;
  /** REQUESTED (not created yet), the service's status (QUEUED, RUNNING, ...), or a final one. */
  status: string;
  reportId: string | null;
  mimeType: string | null;
  timeZone: string | null;
  /** Why it ERRORed or FAILED. */
  message: string | null;
  nextCheckAt: Date | null;
  updatedAt: Date;
}

interface Row {
  pipeline: string;
  organization_id: string;
  report_name: string;
  period_start: Date;
  period_end: Date;
  status: string;
  report_id: string | null;
  mime_type: string | null;
  time_zone: string | null;
  message: string | null;
  next_check_at: Date | null;
  updated_at: Date;
}

function toRow(r: Row): OneTimeReportRow {
  return {
    pipeline: r.pipeline,
    organizationId: r.organization_id,
    reportName: r.report_name,
    start: new Date(r.period_start),
    end: new Date(r.period_end),
    status: r.status,
    reportId: r.report_id,
    mimeType: r.mime_type,
    timeZone: r.time_zone,
    message: r.message,
    nextCheckAt: r.next_check_at ? new Date(r.next_check_at) : null,
    updatedAt: new Date(r.updated_at),
  };
}

const TABLE = sql.table('etl.one_time_reports');

/**
 * The reports of a pipeline and organization whose period covers [start, end), the ready ones
 * first (COMPLETED, NO_DATA), then those still to come, then the failed ones (ERROR, FAILED).
 */
export async function oneTimeReportsCovering(
  db: Db,
  ref: { pipeline: string; organizationId: string },
  period: { start: Date; end: Date },
): Promise<OneTimeReportRow[]> {
  const r = await sql<Row>`
    select * from ${TABLE}
     where pipeline = ${ref.pipeline} and organization_id = ${ref.organizationId}
       and period_start <= ${period.start} and period_end >= ${period.end}
     order by case when status in ('COMPLETED', 'NO_DATA') then 0
                   when status in ('ERROR', 'FAILED') then 2 else 1 end,
              period_start, report_name`.execute(db);
  return r.rows.map(toRow);
}

export async function getOneTimeReport(db: Db, key: OneTimeReportKey): Promise<OneTimeReportRow | undefined> {
  const r = await sql<Row>`
    select * from ${TABLE}
     where pipeline = ${key.pipeline} and organization_id = ${key.organizationId}
       and report_name = ${key.reportName}`.execute(db);
  const row = r.rows[0];
  return row ? toRow(row) : undefined;
}

/**
 * A window asks for its chunk's report: recorded as REQUESTED unless known. A FAILED report whose
 * failure is older than `retryFailedBefore` (the asking window's job was queued after it: a later
 * pass) is asked for again; a newer failure is the window's too.
 */
export async function requestOneTimeReport(
  db: Db,
  report: OneTimeReportKey & { start: Date; end: Date },
  retryFailedBefore: Date,
): Promise<OneTimeReportRow> {
  await sql`
    insert into ${TABLE} (pipeline, organization_id, report_name, period_start, period_end, status)
    values (${report.pipeline}, ${report.organizationId}, ${report.reportName}, ${report.start}, ${report.end}, 'REQUESTED')
    on conflict (pipeline, organization_id, report_name) do update
       set status = 'REQUESTED', message = null, next_check_at = null, updated_at = now()
     where one_time_reports.status = 'FAILED' and one_time_reports.updated_at < ${retryFailedBefore}`.execute(
    db,
  );
  return (await getOneTimeReport(db, report))!;
}

/** Record what is known of a report (found by the search, created, looked at, given up on). */
export async function recordOneTimeReport(
  db: Db,
  report: OneTimeReportKey & {
    start: Date;
    end: Date;
    status: string;
    reportId?: string | null;
    mimeType?: string | null;
    timeZone?: string | null;
    message?: string | null;
    nextCheckAt?: Date | null;
  },
): Promise<void> {
  await sql`
    insert into ${TABLE} (pipeline, organization_id, report_name, period_start, period_end, status,
                          report_id, mime_type, time_zone, message, next_check_at)
    values (${report.pipeline}, ${report.organizationId}, ${report.reportName}, ${report.start}, ${report.end},
            ${report.status}, ${report.reportId ?? null}, ${report.mimeType ?? null}, ${report.timeZone ?? null},
            ${report.message ?? null}, ${report.nextCheckAt ?? null})
    on conflict (pipeline, organization_id, report_name) do update
       set period_start = excluded.period_start, period_end = excluded.period_end,
           status = excluded.status,
           report_id = coalesce(excluded.report_id, one_time_reports.report_id),
           mime_type = coalesce(excluded.mime_type, one_time_reports.mime_type),
           time_zone = coalesce(excluded.time_zone, one_time_reports.time_zone),
           message = excluded.message, next_check_at = excluded.next_check_at, updated_at = now()`.execute(
    db,
  );
}

/** Forget a requested report that was not created (others found by the search cover its period). */
export async function dropOneTimeReport(db: Db, key: OneTimeReportKey): Promise<void> {
  await sql`
    delete from ${TABLE}
     where pipeline = ${key.pipeline} and organization_id = ${key.organizationId}
       and report_name = ${key.reportName} and status = 'REQUESTED'`.execute(db);
}

/** The keys of the windows whose period lies within a report's (the windows it covers). */
export async function windowKeysWithin(
  db: Db,
  report: { pipeline: string; organizationId: string; start: Date; end: Date },
): Promise<string[]> {
  const r = await sql<{ window_key: string }>`
    select window_key from etl.windows
     where pipeline = ${report.pipeline} and organization_id = ${report.organizationId}
       and window_start >= ${report.start} and window_end <= ${report.end}`.execute(db);
  return r.rows.map((row) => row.window_key);
}
