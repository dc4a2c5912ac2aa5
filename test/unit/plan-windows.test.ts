import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { planDueWindows, windowOfDay, windowsBetween } from '../../src/pipeline/plan-windows.js';
import { addDays, localDate, startOfLocalDay, zoneOffsetMs } from '../../src/time/time-zones.js';
import { PIPELINES } from '../../pipelines/index.js';
import { whereRangeStops } from '../../src/commands/backfill.js';
import { parseConfig } from '../../src/config/load-config.js';
import { resolvePipelines } from '../../src/pipeline/resolve-pipelines.js';
import { planPipelineWindows } from '../../src/pipeline/run-pipelines.js';

const shape = (timeZone = 'UTC', windowDays = 1) => ({
  pipeline: 'p',
  organizationId: 'o',
  timeZone,
  windowDays,
});

describe('time zones', () => {
  it('finds local midnight in UTC across DST changes', () => {
    expect(startOfLocalDay('2026-03-08', 'America/Chicago').toISOString()).toBe('2026-03-08T06:00:00.000Z');
    expect(startOfLocalDay('2026-03-09', 'America/Chicago').toISOString()).toBe('2026-03-09T05:00:00.000Z');
    expect(startOfLocalDay('2026-11-01', 'America/Chicago').toISOString()).toBe('2026-11-01T05:00:00.000Z');
    expect(startOfLocalDay('2026-11-02', 'America/Chicago').toISOString()).toBe('2026-11-02T06:00:00.000Z');
    expect(startOfLocalDay('2026-06-01', 'Asia/Kolkata').toISOString()).toBe('2026-05-31T18:30:00.000Z');
  });

  it('handles a zone whose midnight is skipped by DST', () => {
    // America/Santiago springs forward at 00:00 local on 2026-09-06: the day starts at 01:00 (-03).
    const start = startOfLocalDay('2026-09-06', 'America/Santiago');
    expect(localDate(start, 'America/Santiago')).toBe('2026-09-06');
    expect(localDate(new Date(start.getTime() - 1), 'America/Santiago')).toBe('2026-09-05');
  });

  it('local day boundaries round-trip for any day and zone', () => {
    const zones = [
      'UTC',
      'America/Chicago',
      'Europe/London',
      'Asia/Kolkata',
      'Australia/Lord_Howe',
      'America/Santiago',
    ];
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 20_000 }), fc.constantFrom(...zones), (n, tz) => {
        const day = addDays('1990-01-01', n);
        const start = startOfLocalDay(day, tz);
        expect(localDate(start, tz)).toBe(day);
        expect(localDate(new Date(start.getTime() - 1), tz)).toBe(addDays(day, -1));
        expect(Number.isInteger(zoneOffsetMs(start, tz) / 60_000)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

describe('window planning', () => {
  it('cuts one-day windows with 23- and 25-hour days at DST', () => {
    const ws = windowsBetween(shape('America/Chicago'), '2026-03-07', '2026-03-09');
    expect(ws.map((w) => w.windowKey)).toEqual(['2026-03-07', '2026-03-08', '2026-03-09']);
    expect(ws.map((w) => (w.end.getTime() - w.start.getTime()) / 3_600_000)).toEqual([24, 23, 24]);
    expect(
      windowOfDay(shape('America/Chicago'), '2026-11-01').end.getTime() -
        windowOfDay(shape('America/Chicago'), '2026-11-01').start.getTime(),
    ).toBe(25 * 3_600_000);
  });

  it('aligns multi-day windows on the epoch whatever range is asked for', () => {
    const a = windowsBetween(shape('UTC', 7), '2026-11-03', '2026-11-20');
    const b = windowsBetween(shape('UTC', 7), '2026-11-10', '2026-11-10');
    expect(a.map((w) => w.windowKey)).toEqual([
      '2026-10-29..2026-11-04',
      '2026-11-05..2026-11-11',
      '2026-11-12..2026-11-18',
      '2026-11-19..2026-11-25',
    ]);
    expect(b[0]!.windowKey).toBe('2026-11-05..2026-11-11');
  });

  it('windows tile the timeline without gaps or overlaps', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 31 }),
        fc.integer({ min: 0, max: 5000 }),
        fc.integer({ min: 0, max: 120 }),
        (days, offset, span) => {
          const from = addDays('2010-01-01', offset);
          const ws = windowsBetween(shape('Europe/Berlin', days), from, addDays(from, span));
          for (let i = 1; i < ws.length; i++) expect(ws[i]!.start.getTime()).toBe(ws[i - 1]!.end.getTime());
          expect(ws[0]!.firstDay <= from).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('plans due windows: ready six hours after the day ends, with lookback', () => {
    const now = new Date('2026-11-21T05:59:00Z');
    const plan = planDueWindows(shape('UTC'), {
      startDate: '2026-11-15',
      now,
      readyAfterHours: 6,
      lookbackDays: 3,
    });
    expect(plan.due.map((w) => w.windowKey)).toEqual([
      '2026-11-15',
      '2026-11-16',
      '2026-11-17',
      '2026-11-18',
      '2026-11-19',
    ]);
    expect([...plan.lookbackKeys]).toEqual(['2026-11-17', '2026-11-18', '2026-11-19']);
    const later = planDueWindows(shape('UTC'), {
      startDate: '2026-11-15',
      now: new Date('2026-11-21T06:00:00Z'),
      readyAfterHours: 6,
      lookbackDays: 0,
    });
    expect(later.due.at(-1)!.windowKey).toBe('2026-11-20');
    expect(later.lookbackKeys.size).toBe(0);
  });

  it('catches up every missing day after downtime, in the pipeline time zone', () => {
    const plan = planDueWindows(shape('America/Chicago'), {
      startDate: '2026-10-30',
      now: new Date('2026-11-05T12:00:00Z'),
      readyAfterHours: 6,
      lookbackDays: 3,
    });
    // 2026-11-04 in Chicago ends at 2026-11-05T06:00Z; ready at 12:00Z.
    expect(plan.due.map((w) => w.windowKey)).toEqual([
      '2026-10-30',
      '2026-10-31',
      '2026-11-01',
      '2026-11-02',
      '2026-11-03',
      '2026-11-04',
    ]);
  });

  it('plans nothing before the start date', () => {
    const plan = planDueWindows(shape('UTC'), {
      startDate: '2026-12-01',
      now: new Date('2026-11-21T12:00:00Z'),
      readyAfterHours: 6,
      lookbackDays: 3,
    });
    expect(plan.due).toEqual([]);
  });
});

describe('backfill ranges and availability', () => {
  const config = parseConfig('defaults:\n  readyAfterHours: 6\n');
  const now = new Date('2026-11-20T12:00:00Z');
  const [report, onDemand] = resolvePipelines(PIPELINES, config, { defaultOrganizations: ['o'], now }).filter(
    (p) => p.name === 'transaction_request' || p.name === 'net_fundings',
  );
  // Several reports a day: periods of six hours from 03:00 in Berlin.
  report!.timeZone = 'Europe/Berlin';
  report!.reportSchedule = {
    frequency: 'USER_DEFINED',
    timeZone: 'Europe/Berlin',
    startTime: '0300',
    reportInterval: 'PT6H',
  };

  it('plans only windows available at now; the rest of the range is left out, never planned', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -40, max: 40 }),
        fc.integer({ min: 0, max: 20 }),
        fc.integer({ min: 0, max: 48 * 60 }),
        (fromOffset, days, minutes) => {
          const at = new Date(now.getTime() + minutes * 60_000);
          const from = addDays('2026-11-20', fromOffset);
          const range = { from, to: addDays(from, days) };
          for (const p of [report!, onDemand!]) {
            const plan = planPipelineWindows(p, 'o', { range, now: at });
            const ready = at.getTime() - 6 * 3_600_000;
            for (const w of plan.windows) expect(w.end.getTime()).toBeLessThanOrEqual(ready);
            for (const w of plan.notAvailable) expect(w.end.getTime()).toBeGreaterThan(ready);
            const all = planPipelineWindows(p, 'o', { range, now: new Date('2100-01-01T00:00:00Z') });
            expect([...plan.windows, ...plan.notAvailable].map((w) => w.windowKey)).toEqual(
              all.windows.map((w) => w.windowKey),
            );
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a backfill into the future is refused with the first moment something of it can be loaded', () => {
    expect(() => whereRangeStops([onDemand!], { from: '2030-01-01', to: '2030-01-02' }, now)).toThrow(
      'nothing of 2030-01-01..2030-01-02 is available yet: a window can be loaded 6 hours (defaults.readyAfterHours) after it ends, so the first of its windows (net_fundings 2030-01-01) can be loaded from 2030-01-02T06:00:00.000Z.',
    );
  });

  it('a range that reaches past the newest available window says where it stops', () => {
    expect(whereRangeStops([onDemand!], { from: '2026-11-18', to: '2026-11-19' }, now)).toBeUndefined();
    expect(whereRangeStops([report!, onDemand!], { from: '2026-11-18', to: '2026-11-22' }, now)).toBe(
      'The backfill stops at the newest available windows (a window can be loaded 6 hours (defaults.readyAfterHours) after it ends): ' +
        'transaction_request 2026-11-19T21:00, net_fundings 2026-11-19; the later windows of the range are left for a later run.',
    );
  });
});
