import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planDueWindows, windowsBetween } from '../../../src/pipeline/plan-windows.js';
import {
  duePeriods,
  intervalMinutes,
  localInstant,
  midnightDaily,
  periodContaining,
  periodsStartingBetween,
  periodsStartingOn,
  scheduleOfSubscription,
  scheduleProblem,
  startTimeInZone,
} from '../../../src/time/report-periods.js';
import type { ReportPeriod, ReportSchedule } from '../../../src/time/report-periods.js';

const iso = (p: ReportPeriod) => [p.start.toISOString(), p.end.toISOString()];
const kolkata0900: ReportSchedule = { frequency: 'DAILY', timeZone: 'Asia/Kolkata', startTime: '0900' };

describe('report periods', () => {
  it('DAILY 0900 in Asia/Kolkata (+05:30) covers 09:00 to 09:00 the next day', () => {
    const p = periodContaining(kolkata0900, new Date('2026-11-20T10:00:00Z'));
    expect(iso(p)).toEqual(['2026-11-20T03:30:00.000Z', '2026-11-21T03:30:00.000Z']);
    expect(p).toMatchObject({
      key: '2026-11-20T09:00',
      firstDay: '2026-11-20',
      lastDay: '2026-11-21',
      reportDate: '2026-11-21',
      reportTime: '09:00:00+05:30',
    });
    // 08:59 local on the 20th still belongs to the period of the 19th.
    expect(periodContaining(kolkata0900, new Date('2026-11-20T03:29:00Z')).key).toBe('2026-11-19T09:00');
  });

  it('DAILY 0000 keeps the keys of calendar-day windows, so existing etl.windows rows stay valid', () => {
    for (const tz of ['UTC', 'America/Chicago', 'Asia/Kolkata', 'America/Santiago']) {
      const shape = { pipeline: 'p', organizationId: 'o', timeZone: tz, windowDays: 1 };
      const days = windowsBetween(shape, '2026-02-25', '2026-11-10');
      const periods = periodsStartingOn(midnightDaily(tz), '2026-02-25', '2026-11-10');
      expect(periods.map((p) => [p.key, ...iso(p), p.reportDate])).toEqual(
        days.map((w) => [w.windowKey, w.start.toISOString(), w.end.toISOString(), w.reportRef]),
      );
    }
  });

  it('DAILY is 23 or 25 hours long across DST changes, starting at startTime local', () => {
    const chicago: ReportSchedule = { frequency: 'DAILY', timeZone: 'America/Chicago', startTime: '0900' };
    const spring = periodsStartingOn(chicago, '2026-03-07', '2026-03-08');
    expect(spring.map(iso)).toEqual([
      ['2026-03-07T15:00:00.000Z', '2026-03-08T14:00:00.000Z'],
      ['2026-03-08T14:00:00.000Z', '2026-03-09T14:00:00.000Z'],
    ]);
    const fall = periodsStartingOn(chicago, '2026-10-31', '2026-10-31');
    expect(fall[0]!.end.getTime() - fall[0]!.start.getTime()).toBe(25 * 3_600_000);
  });

  it('a start time skipped by DST moves forward by the gap; a repeated one is its first occurrence', () => {
    // New York springs forward at 02:00 on 2026-03-08: 02:30 does not exist, 03:30 EDT is used.
    expect(new Date(localInstant('2026-03-08', 150, 'America/New_York')).toISOString()).toBe(
      '2026-03-08T07:30:00.000Z',
    );
    // 01:30 exists twice on 2026-11-01: the first (EDT) one.
    expect(new Date(localInstant('2026-11-01', 90, 'America/New_York')).toISOString()).toBe(
      '2026-11-01T05:30:00.000Z',
    );
  });

  it('WEEKLY starts on startDay (1 = Sunday) at startTime, for seven days', () => {
    const weekly: ReportSchedule = {
      frequency: 'WEEKLY',
      timeZone: 'Europe/London',
      startTime: '0600',
      startDay: 2,
    };
    const periods = periodsStartingOn(weekly, '2026-03-20', '2026-04-10');
    // Mondays 2026-03-23, 03-30 (after the change to BST on the 29th), 04-06.
    expect(periods.map((p) => p.key)).toEqual(['2026-03-23T06:00', '2026-03-30T06:00', '2026-04-06T06:00']);
    expect(iso(periods[0]!)).toEqual(['2026-03-23T06:00:00.000Z', '2026-03-30T05:00:00.000Z']);
    expect(periods[0]!.reportDate).toBe('2026-03-30');
    expect(periodContaining(weekly, new Date('2026-03-29T12:00:00Z')).key).toBe('2026-03-23T06:00');
  });

  it('MONTHLY starts on startDay, clamped to the length of the month', () => {
    const monthly: ReportSchedule = {
      frequency: 'MONTHLY',
      timeZone: 'UTC',
      startTime: '0000',
      startDay: 31,
    };
    const periods = periodsStartingOn(monthly, '2026-01-01', '2026-05-31');
    expect(periods.map((p) => [p.key, p.reportDate])).toEqual([
      ['2026-01-31T00:00', '2026-02-28'],
      ['2026-02-28T00:00', '2026-03-31'],
      ['2026-03-31T00:00', '2026-04-30'],
      ['2026-04-30T00:00', '2026-05-31'],
      ['2026-05-31T00:00', '2026-06-30'],
    ]);
    expect(periodContaining(monthly, new Date('2026-03-15T00:00:00Z')).key).toBe('2026-02-28T00:00');
  });

  it('USER_DEFINED makes several reports a day, aligned at startTime each day', () => {
    const six: ReportSchedule = {
      frequency: 'USER_DEFINED',
      timeZone: 'Asia/Kolkata',
      startTime: '0100',
      reportInterval: 'PT6H',
    };
    const day = periodsStartingOn(six, '2026-11-20', '2026-11-20');
    expect(day.map((p) => [p.key, p.reportDate, p.reportTime])).toEqual([
      ['2026-11-20T01:00', '2026-11-20', '07:00:00+05:30'],
      ['2026-11-20T07:00', '2026-11-20', '13:00:00+05:30'],
      ['2026-11-20T13:00', '2026-11-20', '19:00:00+05:30'],
      ['2026-11-20T19:00', '2026-11-21', '01:00:00+05:30'],
    ]);
    // An interval that does not divide the day: the last report of a day ends at the next startTime.
    const seven = { ...six, startTime: '0000', reportInterval: 'PT7H' };
    const cut = periodsStartingOn(seven, '2026-11-20', '2026-11-20');
    expect(cut.map((p) => p.key)).toEqual([
      '2026-11-20T00:00',
      '2026-11-20T07:00',
      '2026-11-20T14:00',
      '2026-11-20T21:00',
    ]);
    expect(cut[3]!.end.getTime() - cut[3]!.start.getTime()).toBe(3 * 3_600_000);
  });

  it('USER_DEFINED keys stay unique in a DST fall-back hour', () => {
    const hourly: ReportSchedule = {
      frequency: 'USER_DEFINED',
      timeZone: 'America/New_York',
      startTime: '0000',
      reportInterval: 'PT1H',
    };
    const keys = periodsStartingOn(hourly, '2026-11-01', '2026-11-01').map((p) => p.key);
    expect(keys).toHaveLength(25);
    expect(new Set(keys).size).toBe(25);
    expect(keys.slice(0, 4)).toEqual([
      '2026-11-01T00:00',
      '2026-11-01T01:00',
      '2026-11-01T01:00-05:00',
      '2026-11-01T02:00',
    ]);
  });

  it('periods tile time without gaps or overlaps, and each contains its own instants', () => {
    const zones = ['UTC', 'America/Chicago', 'Asia/Kolkata', 'Europe/London', 'Australia/Lord_Howe'];
    const schedules = fc.oneof(
      fc.record({
        frequency: fc.constant('DAILY' as const),
        timeZone: fc.constantFrom(...zones),
        startTime: fc.constantFrom('0000', '0030', '0230', '0900', '2345'),
      }),
      fc.record({
        frequency: fc.constant('WEEKLY' as const),
        timeZone: fc.constantFrom(...zones),
        startTime: fc.constantFrom('0000', '0230', '1800'),
        startDay: fc.integer({ min: 1, max: 7 }),
      }),
      fc.record({
        frequency: fc.constant('MONTHLY' as const),
        timeZone: fc.constantFrom(...zones),
        startTime: fc.constantFrom('0000', '0230', '1800'),
        startDay: fc.integer({ min: 1, max: 31 }),
      }),
      fc.record({
        frequency: fc.constant('USER_DEFINED' as const),
        timeZone: fc.constantFrom(...zones),
        startTime: fc.constantFrom('0000', '0100', '0930'),
        reportInterval: fc.constantFrom('PT1H', 'PT6H', 'PT2H30M', 'PT23H59M'),
      }),
    );
    fc.assert(
      fc.property(schedules, fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) }), (s, t) => {
        const schedule = s as ReportSchedule;
        const from = new Date(t);
        const to = new Date(t + 45 * 86_400_000);
        const periods = periodsStartingBetween(schedule, from, to);
        expect(periods.length).toBeGreaterThan(0);
        for (let i = 1; i < periods.length; i++) {
          expect(periods[i]!.start.getTime()).toBe(periods[i - 1]!.end.getTime());
          expect(periods[i]!.key > periods[i - 1]!.key || periods[i]!.key.length > 16).toBe(true);
        }
        for (const p of periods) {
          expect(p.end.getTime()).toBeGreaterThan(p.start.getTime());
          expect(periodContaining(schedule, p.start).key).toBe(p.key);
          expect(periodContaining(schedule, new Date(p.end.getTime() - 1)).key).toBe(p.key);
        }
      }),
      { numRuns: 40 },
    );
  });

  it('due periods are those ended readyAfterHours ago, from startDate; lookback counts local days', () => {
    const plan = duePeriods(kolkata0900, {
      startDate: '2026-11-15',
      now: new Date('2026-11-21T09:00:00Z'),
      readyAfterHours: 6,
      lookbackDays: 2,
    });
    // Ready before 2026-11-21T03:00Z: the period of the 19th ended 2026-11-20T03:30Z; the 20th's
    // ends 2026-11-21T03:30Z, which is not six hours ago.
    expect(plan.due.map((p) => p.key)).toEqual([
      '2026-11-15T09:00',
      '2026-11-16T09:00',
      '2026-11-17T09:00',
      '2026-11-18T09:00',
      '2026-11-19T09:00',
    ]);
    expect([...plan.lookbackKeys]).toEqual(['2026-11-18T09:00', '2026-11-19T09:00']);
  });

  it('due periods of DAILY 0000 equal the due calendar-day windows', () => {
    for (const tz of ['UTC', 'America/Chicago', 'Asia/Kolkata']) {
      for (const now of ['2026-03-09T03:00:00Z', '2026-03-09T15:00:00Z', '2026-11-02T07:00:00Z']) {
        const options = { startDate: '2026-02-20', now: new Date(now), readyAfterHours: 6, lookbackDays: 3 };
        const windows = planDueWindows(
          { pipeline: 'p', organizationId: 'o', timeZone: tz, windowDays: 1 },
          options,
        );
        const periods = duePeriods(midnightDaily(tz), options);
        expect(periods.due.map((p) => p.key)).toEqual(windows.due.map((w) => w.windowKey));
        expect([...periods.lookbackKeys]).toEqual([...windows.lookbackKeys]);
      }
    }
  });

  it('reads startTime as HHMM, HH:MM, or the date-time the GET returns, in the subscription zone', () => {
    expect(startTimeInZone('0900', 'Asia/Kolkata')).toBe('0900');
    expect(startTimeInZone('09:00', 'Asia/Kolkata')).toBe('0900');
    expect(startTimeInZone('2024-03-01T09:00:00+05:30', 'Asia/Kolkata')).toBe('0900');
    // Written with another offset (or in UTC): the instant is what counts.
    expect(startTimeInZone('2024-03-01T03:30:00Z', 'Asia/Kolkata')).toBe('0900');
    expect(startTimeInZone('2017-10-01T10:10:10+05:00', 'America/Chicago')).toBe('0010');
    expect(startTimeInZone('9am', 'UTC')).toBeUndefined();
    expect(startTimeInZone('2460', 'UTC')).toBeUndefined();
  });

  it('checks schedules and intervals', () => {
    expect(intervalMinutes('PT6H')).toBe(360);
    expect(intervalMinutes('PT2H30M')).toBe(150);
    expect(intervalMinutes('PT')).toBeUndefined();
    expect(intervalMinutes('PT24H')).toBeUndefined();
    expect(scheduleProblem(kolkata0900)).toBeUndefined();
    expect(scheduleProblem({ frequency: 'WEEKLY', timeZone: 'UTC', startTime: '0000', startDay: 8 })).toMatch(
      /startDay 8/,
    );
    expect(scheduleProblem({ frequency: 'USER_DEFINED', timeZone: 'UTC', startTime: '0000' })).toMatch(
      /reportInterval/,
    );
  });

  it('reads the schedule of a subscription as the GET returns it', () => {
    // Audit #22: startTime comes back as a date-time; its local time in the subscription's zone counts.
    expect(
      scheduleOfSubscription(
        { reportFrequency: 'DAILY', timezone: 'Asia/Kolkata', startTime: '2024-03-01T09:00:00+05:30' },
        'Asia/Kolkata',
      ),
    ).toEqual(kolkata0900);
    expect(
      scheduleOfSubscription(
        { reportFrequency: 'WEEKLY', timezone: 'America/Chicago', startTime: '0600', startDay: 2 },
        'UTC',
      ),
    ).toEqual({ frequency: 'WEEKLY', timeZone: 'UTC', startTime: '0600', startDay: 2 });
    expect(
      scheduleOfSubscription(
        { reportFrequency: 'USER_DEFINED', timezone: 'UTC', startTime: '0000', reportInterval: 'PT6H' },
        'UTC',
      ),
    ).toMatchObject({ frequency: 'USER_DEFINED', reportInterval: 'PT6H' });
    expect(scheduleOfSubscription({ reportFrequency: 'ADHOC' }, 'UTC')).toMatch(/reportFrequency "ADHOC"/);
    expect(scheduleOfSubscription({ reportFrequency: 'USER_DEFINED' }, 'UTC')).toMatch(/reportInterval/);
    expect(scheduleOfSubscription({}, 'UTC')).toEqual(midnightDaily('UTC'));
  });
});
