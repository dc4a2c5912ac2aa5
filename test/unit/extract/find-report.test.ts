import { describe, expect, it } from 'vitest';
import type { ReportingClient } from '../../../src/api/reporting-client.js';
import { findReport } from '../../../src/extract/find-report.js';

function clientWith(status: string): ReportingClient {
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
        ],
      }),
  } as unknown as ReportingClient;
}

const window = {
  start: new Date('2024-03-03T05:00:00Z'),
  end: new Date('2024-03-04T05:00:00Z'),
  lastDay: '2024-03-03',
};

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
});
