import { describe, expect, it } from 'vitest';
import type { ReportingClient } from '../../../src/api/reporting-client.js';
import { findReport } from '../../../src/extract/find-report.js';
import { midnightDaily, periodContaining } from '../../../src/time/report-periods.js';

function clientWith(status: string, results: Record<string, unknown>[] = []): ReportingClient {
  return {
    searchReports: () =>
      Promise.resolve({
        reportSearchResults: [
          {
            reportId: 'r1',
            reportName: 'Daily',
            status,
            reportMimeType: 'text/csv',
            reportStartTime: '2024-03-03T05:00:00Z',
            reportEndTime: '2024-03-04T05:00:00Z',
          },
          ...results,
        ],
      }),
  } as unknown as ReportingClient;
}

// The local day 2024-03-03 in New York (05:00Z..05:00Z): its report is dated by its end.
const period = periodContaining(midnightDaily('America/New_York'), new Date('2024-03-03T12:00:00Z'));
const window = { start: period.start, end: period.end, reportDate: period.reportDate };

describe('findReport', () => {
  it('dates a report with data the day after the window (its source in the warehouse)', async () => {
    const found = await findReport(clientWith('COMPLETED'), { reportName: 'Daily', window });
    expect(found).toMatchObject({ kind: 'ready', reportDate: '2024-03-04' });
  });

  it('dates a NO_DATA report the same way, so that clearing it never touches the previous day', async () => {
    // Regression: the NO_DATA window used the window key (its first day) as reportDate, so its
    // empty load deleted the rows of the previous day's report, which is dated that day.
    const found = await findReport(clientWith('NO_DATA'), { reportName: 'Daily', window });
    expect(found).toMatchObject({ kind: 'no_data', reportName: 'Daily', reportDate: '2024-03-04' });
  });

  it('finds the report of a 09:00 period in Asia/Kolkata, times rounded to the second, through its link', async () => {
    const kolkata = {
      start: new Date('2024-03-05T03:30:00Z'),
      end: new Date('2024-03-06T03:30:00Z'),
      reportDate: '2024-03-06',
    };
    const href =
      '/reporting/v3/report-downloads?reportDate=2024-03-06&reportName=Daily&reportTime=09:00:00+05:30';
    const found = await findReport(
      clientWith('COMPLETED', [
        {
          reportId: 'r2',
          reportName: 'Daily',
          status: 'COMPLETED',
          reportMimeType: 'application/xml',
          reportStartTime: '2024-03-05T09:00:00+05:30',
          reportEndTime: '2024-03-06T08:59:59+05:30',
          _link: { reportDownload: { href, method: 'GET' } },
        },
      ]),
      { reportName: 'Daily', window: kolkata },
    );
    expect(found).toMatchObject({ kind: 'ready', reportDate: '2024-03-06', href, format: 'xml' });
  });

  it('does not take the report of another period', async () => {
    const other = {
      start: new Date('2024-03-03T04:00:00Z'),
      end: new Date('2024-03-04T04:00:00Z'),
      reportDate: '2024-03-04',
    };
    const found = await findReport(clientWith('COMPLETED'), { reportName: 'Daily', window: other });
    expect(found).toMatchObject({ kind: 'not_ready', status: 'NOT_FOUND' });
  });
});
