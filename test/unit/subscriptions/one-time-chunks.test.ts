import { describe, expect, it } from 'vitest';
import { chunkOfWindow, oneTimeReportName } from '../../../src/extract/one-time-reports.js';
import { midnightDaily, periodContaining } from '../../../src/time/report-periods.js';
import type { ReportSchedule } from '../../../src/time/report-periods.js';

const tz = 'America/Los_Angeles';
const daily = midnightDaily(tz);
const range = { from: '2024-04-21', to: '2024-06-19' };
/** The window of the period that contains local noon of a day. */
const windowOf = (schedule: ReportSchedule, day: string) => {
  const p = periodContaining(schedule, new Date(`${day}T20:00:00Z`));
  return { windowKey: p.key, start: p.start, end: p.end };
};

describe('one-time report chunks', () => {
  it('cuts a range into chunks of at most 30 days anchored on its start, cut at the range end', () => {
    const now = new Date('2024-07-01T12:00:00Z');
    const first = chunkOfWindow(windowOf(daily, '2024-05-01'), daily, range, now);
    expect([first.first, first.last]).toEqual(['2024-04-21', '2024-05-20']);
    const second = chunkOfWindow(windowOf(daily, '2024-06-01'), daily, range, now);
    expect([second.first, second.last]).toEqual(['2024-05-21', '2024-06-19']);
    expect(second.start.toISOString()).toBe('2024-05-21T07:00:00.000Z');
    expect(second.end.toISOString()).toBe('2024-06-20T07:00:00.000Z');
    expect(oneTimeReportName('transaction_request', 'm_1', second)).toBe(
      'cybs-etl_transaction_request_m_1_2024-05-21_2024-06-19',
    );
  });

  it('stays within 31 × 24 h across a DST change and never reaches past the periods ended by now', () => {
    const fall = { from: '2024-10-20', to: '2024-11-30' };
    const c = chunkOfWindow(windowOf(daily, '2024-10-25'), daily, fall, new Date('2025-01-01T00:00:00Z'));
    expect([c.first, c.last]).toEqual(['2024-10-20', '2024-11-18']);
    expect(c.end.getTime() - c.start.getTime()).toBeLessThanOrEqual(31 * 86_400_000);
    // Now is 2024-11-26 10:00 local: the day 2024-11-25 is the last period that has ended.
    const capped = chunkOfWindow(
      windowOf(daily, '2024-11-20'),
      daily,
      fall,
      new Date('2024-11-26T18:00:00Z'),
    );
    expect(capped.last).toBe('2024-11-25');
  });

  it('keeps report periods whole: four weeks of a WEEKLY subscription', () => {
    const weekly: ReportSchedule = { frequency: 'WEEKLY', timeZone: tz, startTime: '0600', startDay: 2 };
    const c = chunkOfWindow(windowOf(weekly, '2024-05-01'), weekly, range, new Date('2024-07-01T00:00:00Z'));
    // The first Monday 06:00 in the range is 2024-04-22; four weeks fit in 30 days, five do not.
    expect([c.first, c.last]).toEqual(['2024-04-22T0600', '2024-05-13T0600']);
    expect((c.end.getTime() - c.start.getTime()) / 86_400_000).toBe(28);
  });

  it('names chunks of a 09:00 subscription by their periods', () => {
    const kolkata: ReportSchedule = { frequency: 'DAILY', timeZone: 'Asia/Kolkata', startTime: '0900' };
    const c = chunkOfWindow(
      windowOf(kolkata, '2024-03-05'),
      kolkata,
      { from: '2024-03-01', to: '2024-03-10' },
      new Date('2024-03-20T00:00:00Z'),
    );
    expect(c.start.toISOString()).toBe('2024-03-01T03:30:00.000Z');
    expect(c.end.toISOString()).toBe('2024-03-11T03:30:00.000Z');
    expect(oneTimeReportName('transaction_request', 'm_1', c)).toBe(
      'cybs-etl_transaction_request_m_1_2024-03-01T0900_2024-03-10T0900',
    );
  });
});
