import type { ReportingClient } from '../api/reporting-client.js';
import type { ReportSearchResult } from '../api/types.js';
import { isApiError } from '../api/errors.js';
import { CybsError } from '../errors.js';
import { addDays } from '../pipeline/time-zones.js';

export type ReportFormat = 'csv' | 'xml';

export type FoundReport =
  | {
      kind: 'ready';
      report: ReportSearchResult;
      reportName: string;
      reportDate: string;
      format: ReportFormat;
    }
  | { kind: 'no_data'; reason: string; reportName: string; reportDate: string }
  | { kind: 'not_ready'; status: string; message: string }
  | { kind: 'error'; message: string };

export interface FindReportOptions {
  reportName: string;
  /** Sent only for a partner acting for a merchant. */
  organizationId?: string;
  window: { start: Date; end: Date; lastDay: string };
  signal?: AbortSignal;
}

const NOT_READY = new Set(['QUEUED', 'PENDING', 'RUNNING', 'RERUN']);

/**
 * Find the report of a subscription that covers a window (search by report time frame). A daily
 * report's reportDate is the day after its data day: the report's end date in the subscription's
 * time zone (facts §2.8).
 */
export async function findReport(client: ReportingClient, options: FindReportOptions): Promise<FoundReport> {
  let results: ReportSearchResult[];
  try {
    const response = await client.searchReports(
      {
        startTime: options.window.start,
        endTime: options.window.end,
        timeQueryType: 'reportTimeFrame',
        reportName: options.reportName,
        ...(options.organizationId ? { organizationId: options.organizationId } : {}),
      },
      { ...(options.signal ? { signal: options.signal } : {}) },
    );
    results = response.reportSearchResults;
  } catch (error) {
    if (isApiError(error) && error.status === 404) {
      return {
        kind: 'not_ready',
        status: 'NOT_FOUND',
        message: `no report "${options.reportName}" found for the window yet`,
      };
    }
    throw error;
  }
  const start = options.window.start.getTime();
  const end = options.window.end.getTime();
  const matching = results.filter((r) => {
    if (r.reportName !== undefined && r.reportName !== options.reportName) return false;
    const s = r.reportStartTime ? Date.parse(r.reportStartTime) : NaN;
    const e = r.reportEndTime ? Date.parse(r.reportEndTime) : NaN;
    return s === start && e === end;
  });
  if (matching.length === 0) {
    return {
      kind: 'not_ready',
      status: 'NOT_FOUND',
      message: `no report "${options.reportName}" covers the window yet`,
    };
  }
  // Prefer a completed report (the newest one when a report was re-run), then any other state.
  const rank = (r: ReportSearchResult) =>
    r.status === 'COMPLETED' ? 0 : r.status === 'NO_DATA' ? 1 : NOT_READY.has(String(r.status)) ? 2 : 3;
  matching.sort(
    (a, b) =>
      rank(a) - rank(b) ||
      String(b.reportCompletedTime ?? '').localeCompare(String(a.reportCompletedTime ?? '')),
  );
  const report = matching[0]!;
  const status = String(report.status ?? 'UNKNOWN');
  // The report of the local days firstDay..lastDay is dated the day after lastDay, whether it has
  // data or not: its rows (if any were loaded earlier) live under that source.
  const reportDate = addDays(options.window.lastDay, 1);
  if (status === 'COMPLETED') {
    return {
      kind: 'ready',
      report,
      reportName: options.reportName,
      reportDate,
      format: formatOf(report.reportMimeType),
    };
  }
  if (status === 'NO_DATA') {
    return {
      kind: 'no_data',
      reason: `report ${report.reportId ?? ''} has no data`.trim(),
      reportName: options.reportName,
      reportDate,
    };
  }
  if (NOT_READY.has(status)) {
    return { kind: 'not_ready', status, message: `report "${options.reportName}" is ${status}` };
  }
  return { kind: 'error', message: `report "${options.reportName}" ended in ${status}` };
}

export function formatOf(mimeType: string | undefined | null): ReportFormat {
  if (!mimeType) return 'csv';
  if (/xml/i.test(mimeType)) return 'xml';
  if (/csv/i.test(mimeType)) return 'csv';
  throw new CybsError(
    'EXTRACT_UNSUPPORTED_FORMAT',
    `unsupported report format ${mimeType}; expected text/csv or application/xml`,
    {
      stage: 'extract',
    },
  );
}
