/**
 * One-time report jobs: one job per one-time report of a backfill chunk (its singleton key:
 * `pipeline|organization|report name`, so every window of the chunk, planned by any number of
 * planners, collapses to one). A run of the job is one step: find or create the report, or look at
 * it once; while the report is not final the job puts itself back in the queue for later (doubling
 * waits, as the poll of one process did) and its worker takes other jobs meanwhile. Once the report
 * is final (or given up on) the windows waiting for it are woken, each loaded and committed by its
 * own window job (src/pipeline/window/one-time.ts).
 */
import type { OneTimeReports, OneTimeReportSeen } from '../extract/one-time-reports.js';
import type { Logger } from '../observability/logger.js';
import {
  dropOneTimeReport,
  getOneTimeReport,
  isFinalOneTimeStatus,
  recordOneTimeReport,
  windowKeysWithin,
} from '../state/one-time-reports.js';
import type { Db } from '../warehouse/warehouse.js';
import { windowJobKey } from './window-jobs.js';
import type { ReportJobData } from './window-jobs.js';
import type { WindowQueue } from './window-queue.js';

/**
 * A window waiting for a one-time report is due again after this long even if nothing wakes it
 * (its report's job was lost): it then makes sure a job follows the report, and waits again.
 */
export const WAIT_FOR_REPORT_SECONDS = 300;

export interface ReportJobDeps {
  db: Db;
  queue: WindowQueue;
  reports: OneTimeReports;
  logger: Logger;
}

/** What a step of a report's job leaves: wait (put back in the queue with `data`) or done. */
export type ReportJobStep = { kind: 'wait'; delayMs: number; data: ReportJobData } | { kind: 'done' };

/** Whether the periods of `reports` together cover [start, end). */
function coveredBy(reports: readonly { start: Date; end: Date }[], start: Date, end: Date): boolean {
  let reached = start.getTime();
  for (const r of [...reports].sort((a, b) => a.start.getTime() - b.start.getTime())) {
    if (r.start.getTime() > reached) break;
    reached = Math.max(reached, r.end.getTime());
  }
  return reached >= end.getTime();
}

/**
 * One step of a report's job. A report only requested is first looked for among the cybs-etl
 * one-time reports over its period (a re-run, even of another range, finds them): those found are
 * recorded, and when they cover the period the requested one is not created. Otherwise it is created,
 * or looked at once. Not final yet: wait (the delay doubles up to the maximum); past the timeout it
 * is given up on (FAILED), and its windows fail with the reason.
 */
export async function runReportJob(deps: ReportJobDeps, data: ReportJobData): Promise<ReportJobStep> {
  const request = data.request;
  const key = {
    pipeline: request.pipeline,
    organizationId: request.organizationId,
    reportName: request.reportName,
  };
  const period = { start: new Date(request.start), end: new Date(request.end) };
  const record = (seen: OneTimeReportSeen, nextCheckAt: Date | null = null) =>
    recordOneTimeReport(deps.db, {
      pipeline: request.pipeline,
      organizationId: request.organizationId,
      reportName: seen.reportName,
      start: seen.start,
      end: seen.end,
      status: seen.status,
      reportId: seen.reportId ?? null,
      mimeType: seen.mimeType ?? null,
      timeZone: seen.timeZone ?? null,
      message: seen.message ?? null,
      nextCheckAt,
    });
  const row = await getOneTimeReport(deps.db, key);
  if (!row || isFinalOneTimeStatus(row.status)) return { kind: 'done' };
  let status = row.status;
  if (status === 'REQUESTED') {
    const found = await deps.reports.discover(request);
    for (const seen of found) await record(seen);
    const self = found.find((r) => r.reportName === request.reportName);
    if (self) {
      status = self.status;
    } else if (
      coveredBy(
        found.filter((r) => r.status !== 'ERROR'),
        period.start,
        period.end,
      )
    ) {
      // Reports of an earlier backfill cover the chunk: its windows load from those.
      await dropOneTimeReport(deps.db, key);
      return { kind: 'done' };
    } else {
      await deps.reports.create(request);
      status = 'CREATED';
      await record({ reportName: request.reportName, ...period, status });
    }
  } else {
    const seen = await deps.reports.look(request);
    if (seen) {
      status = seen.status;
      if (isFinalOneTimeStatus(status)) await record(seen);
    }
  }
  if (isFinalOneTimeStatus(status)) {
    deps.logger.info({ reportName: request.reportName, status }, 'one-time report final');
    return { kind: 'done' };
  }
  const backoff = deps.reports.backoff;
  // Real time (not a run's --now): how long the service has been at it.
  const now = new Date();
  const since = data.since ? new Date(data.since) : now;
  if (now.getTime() - since.getTime() > backoff.timeoutMs) {
    const waited =
      backoff.timeoutMs >= 60_000
        ? `${Math.round(backoff.timeoutMs / 60_000)} minutes`
        : `${Math.round(backoff.timeoutMs / 1000)} seconds`;
    await record({
      reportName: request.reportName,
      ...period,
      status: 'FAILED',
      message: `still ${status} at the service after ${waited}`,
    });
    return { kind: 'done' };
  }
  const delayMs = Math.min(backoff.maxMs, data.delayMs ?? backoff.initialMs);
  await record({ reportName: request.reportName, ...period, status }, new Date(now.getTime() + delayMs));
  return {
    kind: 'wait',
    delayMs,
    data: { ...data, delayMs: Math.min(backoff.maxMs, delayMs * 2), since: since.toISOString() },
  };
}

/** A report's job failed for good (its retries spent): the report is given up on, with the reason. */
export async function giveUpReport(deps: ReportJobDeps, data: ReportJobData, reason: string): Promise<void> {
  const request = data.request;
  await recordOneTimeReport(deps.db, {
    pipeline: request.pipeline,
    organizationId: request.organizationId,
    reportName: request.reportName,
    start: new Date(request.start),
    end: new Date(request.end),
    status: 'FAILED',
    message: reason,
  });
}

/** Wake the windows waiting for a report whose job is done with it (final, given up on, or dropped). */
export async function wakeWaitingWindows(deps: ReportJobDeps, data: ReportJobData): Promise<number> {
  const request = data.request;
  const keys = await windowKeysWithin(deps.db, {
    pipeline: request.pipeline,
    organizationId: request.organizationId,
    start: new Date(request.start),
    end: new Date(request.end),
  });
  return deps.queue.wake(
    request.reportName,
    keys.map((windowKey) => windowJobKey({ ...request, windowKey })),
  );
}

/**
 * After a window's job was put back to wait for a report: if the report became final meanwhile
 * (its job may have woken the waiting windows before this one was put back), the window is due now.
 */
export async function wakeIfReportFinal(
  deps: Pick<ReportJobDeps, 'db' | 'queue'>,
  data: ReportJobData,
  windowKey: string,
): Promise<void> {
  const row = await getOneTimeReport(deps.db, data.request);
  if (row && !isFinalOneTimeStatus(row.status)) return;
  await deps.queue.wake(data.request.reportName, [windowJobKey({ ...data.request, windowKey })]);
}
