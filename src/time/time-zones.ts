/**
 * Calendar arithmetic in IANA time zones with nothing but Intl: local dates of instants, and the UTC
 * instant at which a local date starts (DST-aware). Pure functions.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** True when the runtime knows this IANA time zone. */
export function isValidTimeZone(timeZone: string): boolean {
  try {
    formatter(timeZone);
    return true;
  } catch {
    return false;
  }
}

/**
 * Offsets already computed, by zone and instant: planning asks for the same few instants (the
 * bounds of the same days) once per organization and pipeline, and Intl's formatToParts is slow.
 */
const offsets = new Map<string, number>();
const MAX_OFFSETS = 10_000;

/** Offset of the zone from UTC at an instant, in milliseconds (local = utc + offset). */
export function zoneOffsetMs(instant: Date, timeZone: string): number {
  const key = `${timeZone}|${instant.getTime()}`;
  let offset = offsets.get(key);
  if (offset === undefined) {
    offset = computeZoneOffsetMs(instant, timeZone);
    if (offsets.size >= MAX_OFFSETS) offsets.clear();
    offsets.set(key, offset);
  }
  return offset;
}

function computeZoneOffsetMs(instant: Date, timeZone: string): number {
  const parts: Record<string, number> = {};
  for (const p of formatter(timeZone).formatToParts(instant)) {
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  }
  const asUtc = Date.UTC(
    parts.year!,
    parts.month! - 1,
    parts.day!,
    parts.hour!,
    parts.minute!,
    parts.second!,
  );
  return asUtc - Math.floor(instant.getTime() / 1000) * 1000;
}

/** The local calendar date (YYYY-MM-DD) of an instant in a zone. */
export function localDate(instant: Date, timeZone: string): string {
  return new Date(instant.getTime() + zoneOffsetMs(instant, timeZone)).toISOString().slice(0, 10);
}

/**
 * The UTC instant at which a local date begins in a zone. On a day whose midnight is skipped by DST
 * (e.g. America/Santiago), the day begins at the first local time that exists.
 */
export function startOfLocalDay(date: string, timeZone: string): Date {
  const midnightAsUtc = parseDay(date);
  const first = midnightAsUtc - zoneOffsetMs(new Date(midnightAsUtc), timeZone);
  const second = midnightAsUtc - zoneOffsetMs(new Date(first), timeZone);
  // The earliest candidate that lies on the requested local day (both do, except around DST).
  const onDay = [first, second].filter((t) => localDate(new Date(t), timeZone) === date);
  return new Date(onDay.length > 0 ? Math.min(...onDay) : Math.max(first, second));
}

const DAY_MS = 86_400_000;

/** Days since 1970-01-01 of a YYYY-MM-DD date. */
export function dayNumber(date: string): number {
  return Math.round(parseDay(date) / DAY_MS);
}

export function dateOfDayNumber(n: number): string {
  return new Date(n * DAY_MS).toISOString().slice(0, 10);
}

export function addDays(date: string, days: number): string {
  return dateOfDayNumber(dayNumber(date) + days);
}

export function parseDay(date: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  if (!m) throw new Error(`expected a date written YYYY-MM-DD, got "${date}"`);
  const t = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  if (new Date(t).toISOString().slice(0, 10) !== date) throw new Error(`not a calendar date: "${date}"`);
  return t;
}
