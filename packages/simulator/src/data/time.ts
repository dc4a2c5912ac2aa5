/**
 * Time helpers for the simulator: IANA time zones through Intl (no tz database of our own),
 * local dates (`YYYY-MM-DD`), zoned wall-clock → instant, and ISO-8601 formatting with offsets.
 * The Intl formatter cache repeats the product's src/time/time-zones.ts on purpose: the package
 * imports nothing of the product.
 */

export const DAY_MS = 86_400_000;
export const HOUR_MS = 3_600_000;

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(tz, f);
  }
  return f;
}

export function isValidTimeZone(tz: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(tz)) return false;
  try {
    formatter(tz);
    return true;
  } catch {
    return false;
  }
}

interface WallClock {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

/** The wall clock of an instant in a zone as Intl gives it (slow: offsetMs keeps its answers). */
function intlWallClock(ms: number, tz: string): WallClock {
  const parts = formatter(tz).formatToParts(new Date(ms));
  const get = (type: string): number => Number(parts.find((p) => p.type === type)?.value ?? 0);
  return {
    year: get('year'),
    month: get('month'),
    day: get('day'),
    hour: get('hour') % 24,
    minute: get('minute'),
    second: get('second'),
  };
}

/** How far a zone's wall clock is ahead of UTC at an instant's whole second, in ms, from Intl. */
function intlOffsetMs(second: number, tz: string): number {
  const w = intlWallClock(second, tz);
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second) - second;
}

/**
 * Zone offsets by zone and UTC hour, for the hours whose first and last seconds have the same
 * offset (no zone changes its offset twice within an hour); other hours are asked of Intl each
 * time. Bounded: a report renders thousands of rows within a few hours, so the map is cleared
 * rather than grown past its limit.
 */
const hourOffsets = new Map<string, Map<number, number>>();
let hourOffsetCount = 0;
const HOUR_OFFSET_LIMIT = 100_000;

function offsetMs(ms: number, tz: string): number {
  const second = Math.floor(ms / 1000) * 1000;
  const hour = Math.floor(ms / HOUR_MS);
  let byHour = hourOffsets.get(tz);
  const known = byHour?.get(hour);
  if (known !== undefined) return known;
  const first = intlOffsetMs(hour * HOUR_MS, tz);
  const last = intlOffsetMs(hour * HOUR_MS + HOUR_MS - 1000, tz);
  if (first !== last) return intlOffsetMs(second, tz);
  if (hourOffsetCount >= HOUR_OFFSET_LIMIT) {
    hourOffsets.clear();
    hourOffsetCount = 0;
  }
  if (!byHour) hourOffsets.set(tz, (byHour = new Map()));
  byHour.set(hour, first);
  hourOffsetCount++;
  return first;
}

function wallClock(ms: number, tz: string): WallClock {
  const d = new Date(Math.floor(ms / 1000) * 1000 + offsetMs(ms, tz));
  return {
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
    second: d.getUTCSeconds(),
  };
}

/** Offset of a zone at an instant, in minutes east of UTC (America/Chicago in winter → -360). */
export function zoneOffsetMinutes(ms: number, tz: string): number {
  return Math.round(offsetMs(ms, tz) / 60_000);
}

/** The instant at which the wall clock in `tz` shows `date` (`YYYY-MM-DD`) at `hour:minute`. */
export function zonedTime(date: string, hour: number, minute: number, tz: string): number {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const wall = Date.UTC(y, m - 1, d, hour, minute);
  let guess = wall - zoneOffsetMinutes(wall, tz) * 60_000;
  guess = wall - zoneOffsetMinutes(guess, tz) * 60_000;
  return guess;
}

/** `YYYY-MM-DD` of an instant in a zone. */
export function localDate(ms: number, tz: string): string {
  const w = wallClock(ms, tz);
  return `${w.year}-${pad2(w.month)}-${pad2(w.day)}`;
}

/** `YYYY-MM-DD` in UTC. */
export function utcDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export function addDays(date: string, days: number): string {
  return utcDate(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS);
}

/** Day of week of a local date: 1 = Sunday … 7 = Saturday (the CyberSource startDay convention). */
export function weekday(date: string): number {
  return new Date(`${date}T00:00:00Z`).getUTCDay() + 1;
}

export function daysInMonth(date: string): number {
  const [y, m] = date.split('-').map(Number) as [number, number];
  return new Date(Date.UTC(y, m, 0)).getUTCDate();
}

export function isValidDate(date: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) return false;
  const ms = Date.parse(`${date}T00:00:00Z`);
  return Number.isFinite(ms) && utcDate(ms) === date;
}

function pad2(n: number): string {
  return String(n).padStart(2, '0');
}

/** `2023-10-11T04:15:21Z` (seconds precision, UTC). */
export function isoUtc(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** `2017-10-01T10:00:00+05:00` — an instant written in a zone with its numeric offset. */
export function isoInZone(ms: number, tz: string): string {
  const w = wallClock(ms, tz);
  const off = zoneOffsetMinutes(ms, tz);
  const sign = off < 0 ? '-' : '+';
  const abs = Math.abs(off);
  return (
    `${w.year}-${pad2(w.month)}-${pad2(w.day)}T${pad2(w.hour)}:${pad2(w.minute)}:${pad2(w.second)}` +
    `${sign}${pad2(Math.floor(abs / 60))}:${pad2(abs % 60)}`
  );
}

const ISO_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})$/;

/**
 * Parse an ISO-8601 date-time that carries a zone (`Z`, `+05:00` or `+0500`); undefined when the
 * text is anything else (a bare date, no zone, impossible values).
 */
export function parseIsoDateTime(text: string): number | undefined {
  const m = ISO_DATE_TIME.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s ?? '0');
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  const base = Date.UTC(Number(y), month - 1, day, hour, minute, second);
  if (new Date(base).getUTCDate() !== day) return undefined;
  const ms = frac ? Math.floor(Number(`0.${frac}`) * 1000) : 0;
  let offset = 0;
  if (zone && zone !== 'Z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2));
    const om = Number(digits.slice(2));
    if (oh > 14 || om > 59) return undefined;
    offset = sign * (oh * 60 + om);
  }
  return base + ms - offset * 60_000;
}
