import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isoInZone, localDate, zoneOffsetMinutes, zonedTime } from '../../src/data/time.js';

const ZONES = [
  'UTC',
  'America/Chicago',
  'America/Los_Angeles',
  'Europe/London',
  'Asia/Kolkata',
  'Asia/Kathmandu',
  'Australia/Lord_Howe',
  'Pacific/Chatham',
  'America/St_Johns',
  'Pacific/Apia',
  'Africa/Casablanca',
];

/** The wall clock as Intl writes it, the way the simulator wrote it before its offsets were kept. */
function intlIso(ms: number, tz: string): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: tz,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(ms));
  const get = (type: string) => parts.find((p) => p.type === type)!.value;
  return `${get('year')}-${get('month')}-${get('day')}T${String(Number(get('hour')) % 24).padStart(2, '0')}:${get('minute')}:${get('second')}`;
}

describe('simulator time: zone offsets kept per hour', () => {
  it('gives the wall clock Intl gives, at any instant of 1900-2100, around transitions too', () => {
    const instants = fc.oneof(
      fc.integer({ min: Date.UTC(1900, 0, 1), max: Date.UTC(2100, 0, 1) }),
      // Seconds either side of every hour of 2024 and 2026 (where the zones above change offset).
      fc
        .tuple(fc.integer({ min: 0, max: 2 * 366 * 24 }), fc.integer({ min: -3000, max: 3000 }))
        .map(
          ([h, s]) => Date.UTC(h < 366 * 24 ? 2024 : 2025, 0, 1) + (h % (366 * 24)) * 3_600_000 + s * 1000,
        ),
    );
    fc.assert(
      fc.property(instants, fc.constantFrom(...ZONES), (ms, tz) => {
        expect(isoInZone(ms, tz).slice(0, 19)).toBe(intlIso(ms, tz));
        expect(localDate(ms, tz)).toBe(intlIso(ms, tz).slice(0, 10));
      }),
      { numRuns: 3000 },
    );
  });

  it('finds the instant of a local time across a DST change', () => {
    // America/Chicago: 2026-03-08 02:30 does not exist (CST → CDT); 2026-11-01 01:30 happens twice.
    expect(new Date(zonedTime('2026-03-08', 3, 0, 'America/Chicago')).toISOString()).toBe(
      '2026-03-08T08:00:00.000Z',
    );
    expect(new Date(zonedTime('2026-03-07', 0, 0, 'America/Chicago')).toISOString()).toBe(
      '2026-03-07T06:00:00.000Z',
    );
    expect(zoneOffsetMinutes(Date.UTC(2026, 6, 1), 'America/Chicago')).toBe(-300);
    expect(zoneOffsetMinutes(Date.UTC(2026, 0, 1), 'Asia/Kathmandu')).toBe(345);
  });
});
