import type { ReportingClient } from '../api/reporting-client.js';
import type { ReportSearchResult } from '../api/types.js';
import { isApiError } from '../api/errors.js';
import { CybsError } from '../errors.js';

export type ReportFormat = 'csv' | 'xml';

export type FoundReport =
  | {
      kind: 'ready';
      report: ReportSearchResult;
      reportName: string;
      reportDate: string;
      /** The search result's download link (with reportTime), when it gave one. */
      href?: string;
      format: ReportFormat;
    }
  | { kind: 'no_data'; reason: string; reportName: string; reportDate: string }
  | { kind: 'not_ready'; status: string; message: string }
  | { kind: 'error'; message: string };

export interface FindReportOptions {
  reportName: string;
  /** Sent only for a partner acting for a merchant. */
  organizationId?: string;
  /** The report period, and its reportDate: the local date of its end in the subscription's zone. */
  window: { start: Date; end: Date; reportDate: string };
  signal?: AbortSignal;
}

const NOT_READY = new Set(['QUEUED', 'PENDING', 'RUNNING', 'RERUN']);

/** The service writes report times to the second; a period's bounds match within this much. */
const SAME_INSTANT_MS = 1000;

/**
 * Find the report of a subscription for one of its report periods (search by report time frame):
 * the result whose reportStartTime and reportEndTime are the period's. A report's reportDate is
 * the local date of its end in the subscription's time zone (facts §2.8): the day after the data
 * day of a midnight-to-midnight report.
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
    return Math.abs(s - start) <= SAME_INSTANT_MS && Math.abs(e - end) <= SAME_INSTANT_MS;
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
  // The report is dated by its period's end whether it has data or not: its rows (if any were
  // loaded earlier) live under that source.
  const reportDate = options.window.reportDate;
  if (status === 'COMPLETED') {
    const href = report._link?.reportDownload?.href ?? undefined;
    return {
      kind: 'ready',
      report,
      reportName: options.reportName,
      reportDate,
      ...(href ? { href } : {}),
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
