import { describe, expect, it } from 'vitest';
import { chunkOfWindow, oneTimeReportName } from '../../../src/extract/one-time-reports.js';
import { windowOfDay } from '../../../src/pipeline/plan-windows.js';

const tz = 'America/Los_Angeles';
const shape = (windowDays: number) => ({ pipeline: 'p', organizationId: 'o', windowDays, timeZone: tz });
const range = { from: '2024-04-21', to: '2024-06-19' };

describe('one-time report chunks', () => {
  it('cuts a range into chunks of at most 30 days anchored on its start, cut at the range end', () => {
    const first = chunkOfWindow(windowOfDay(shape(1), '2024-05-01'), shape(1), range, '2024-06-30');
    expect([first.firstDay, first.lastDay]).toEqual(['2024-04-21', '2024-05-20']);
    const second = chunkOfWindow(windowOfDay(shape(1), '2024-06-01'), shape(1), range, '2024-06-30');
    expect([second.firstDay, second.lastDay]).toEqual(['2024-05-21', '2024-06-19']);
    expect(second.start.toISOString()).toBe('2024-05-21T07:00:00.000Z');
    expect(second.end.toISOString()).toBe('2024-06-20T07:00:00.000Z');
    expect(oneTimeReportName('transaction_request', 'm_1', second)).toBe(
      'cybs-etl_transaction_request_m_1_2024-05-21_2024-06-19',
    );
  });

  it('stays within 31 × 24 h across a DST change and never reaches past the last ended day', () => {
    const fall = { from: '2024-10-20', to: '2024-11-30' };
    const c = chunkOfWindow(windowOfDay(shape(1), '2024-10-25'), shape(1), fall, '2024-12-31');
    expect(c.end.getTime() - c.start.getTime()).toBeLessThanOrEqual(31 * 86_400_000);
    const capped = chunkOfWindow(windowOfDay(shape(1), '2024-11-20'), shape(1), fall, '2024-11-25');
    expect(capped.lastDay).toBe('2024-11-25');
  });

  it('keeps multi-day windows whole', () => {
    const c = chunkOfWindow(windowOfDay(shape(7), '2024-05-01'), shape(7), range, '2024-06-30');
    const days = (Date.parse(c.lastDay) - Date.parse(c.firstDay)) / 86_400_000 + 1;
    expect(days % 7).toBe(0);
    expect(days).toBeLessThanOrEqual(30);
  });
});
