/**
 * Report periods of a subscription, pure: a subscription's report covers one period of its schedule,
 * starting at `startTime` (local HHMM) in its time zone.
 *
 *  - DAILY: startTime to startTime the next local day (0900 → 09:00..09:00; 23 or 25 hours
 *    across a DST change).
 *  - WEEKLY: from `startDay` (1 = Sunday … 7 = Saturday) at startTime, for seven local days.
 *  - MONTHLY: from `startDay` (1-31, clamped to the month's length) at startTime to the same day
 *    (clamped again) of the next month.
 *  - USER_DEFINED: several reports a day, each `reportInterval` (PTnHnM) long. The service does not
 *    document how they are anchored (the SDK says of reportInterval "Do not document in developer
 *    center"); assumed: each local day's first period starts at startTime, the next ones every
 *    interval after it, and the last one ends at the next day's startTime (shorter when the interval
 *    does not divide the day).
 *
 * A local time that does not exist (skipped by DST) moves forward by the gap; one that exists twice
 * is its first occurrence.
 *
 * Window keys (etl.windows.window_key): `YYYY-MM-DD` (the local day) for a DAILY 0000 subscription,
 * the keys of calendar-day windows, so rows loaded before periods existed stay valid; for every
 * other schedule the period's local start `YYYY-MM-DDTHH:MM` (e.g. `2026-11-20T09:00`), with the
 * zone offset appended (`2026-11-01T01:00-05:00`) only for the second occurrence of a local time in
 * a DST fall-back hour, so that keys stay unique. Both sort in time order within a pipeline.
 */
import { addDays, localDate, parseDay, startOfLocalDay, zoneOffsetMs } from './time-zones.js';

export const REPORT_FREQUENCIES = ['DAILY', 'WEEKLY', 'MONTHLY', 'USER_DEFINED'] as const;
export type ReportFrequency = (typeof REPORT_FREQUENCIES)[number];

export interface ReportSchedule {
  frequency: ReportFrequency;
  /** IANA zone the periods are cut in. */
  timeZone: string;
  /** Local start, HHMM (24 h). */
  startTime: string;
  /** WEEKLY 1-7 (1 = Sunday), MONTHLY 1-31; default 1. */
  startDay?: number;
  /** USER_DEFINED only: the length of each report, PTnHnM. */
  reportInterval?: string;
}

export interface ReportPeriod {
  /** The window key (see the module comment). */
  key: string;
  start: Date;
  end: Date;
  /** Local date of the start. */
  firstDay: string;
  /** Local date of the period's last instant (end − 1 ms). */
  lastDay: string;
  /** Local date of the end: the report's reportDate. */
  reportDate: string;
  /** Local time of the end with its offset, `hh:mm:ss±hh:mm`: the download link's reportTime. */
  reportTime: string;
}

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** The schedule of calendar days: DAILY from local midnight. */
export function midnightDaily(timeZone: string): ReportSchedule {
  return { frequency: 'DAILY', timeZone, startTime: '0000' };
}

/** True for the schedule whose periods are local calendar days (its keys are `YYYY-MM-DD`). */
export function isCalendarDaily(schedule: ReportSchedule): boolean {
  return schedule.frequency === 'DAILY' && schedule.startTime === '0000';
}

/** True when a day can hold several reports (their source names need the end time, not just the date). */
export function hasSeveralReportsADay(schedule: ReportSchedule): boolean {
  return schedule.frequency === 'USER_DEFINED';
}

/** Minutes of a reportInterval `PTnHnM` (1 minute … 23 h 59 min), or undefined. */
export function intervalMinutes(text: string): number | undefined {
  const m = /^PT(?:(\d{1,2})H)?(?:(\d{1,4})M)?$/.exec(text);
  if (!m || (m[1] === undefined && m[2] === undefined)) return undefined;
  const minutes = Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0);
  return minutes >= 1 && minutes < 24 * 60 ? minutes : undefined;
}

/**
 * A subscription's startTime as local HHMM: `HHMM` or `HH:MM` as declared, or the date-time the GET
 * returns (`2017-10-01T10:10:10+05:00`), read as an instant and written in the subscription's own
 * zone (whatever offset the service wrote it with). Undefined when it is none of these.
 */
export function startTimeInZone(value: string, timeZone: string): string | undefined {
  const plain = /^([01]\d|2[0-3]):?([0-5]\d)$/.exec(value);
  if (plain) return `${plain[1]}${plain[2]}`;
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/.test(value)) return undefined;
  const t = Date.parse(value);
  if (!Number.isFinite(t)) return undefined;
  const wall = wallClock(t, timeZone);
  return `${wall.slice(11, 13)}${wall.slice(14, 16)}`;
}

/** What is wrong with a schedule, one sentence, or undefined when it can be planned. */
export function scheduleProblem(schedule: ReportSchedule): string | undefined {
  if (!/^([01]\d|2[0-3])[0-5]\d$/.test(schedule.startTime))
    return `startTime "${schedule.startTime}" is not HHMM`;
  const day = schedule.startDay ?? 1;
  if (schedule.frequency === 'WEEKLY' && !(Number.isInteger(day) && day >= 1 && day <= 7))
    return `startDay ${day} of a WEEKLY schedule is not 1-7`;
  if (schedule.frequency === 'MONTHLY' && !(Number.isInteger(day) && day >= 1 && day <= 31))
    return `startDay ${day} of a MONTHLY schedule is not 1-31`;
  if (schedule.frequency === 'USER_DEFINED' && intervalMinutes(schedule.reportInterval ?? '') === undefined)
    return `reportInterval "${schedule.reportInterval ?? ''}" of a USER_DEFINED schedule is not PTnHnM`;
  return undefined;
}

/**
 * The schedule of a subscription as GET /report-subscriptions/{name} returns it (startTime as a
 * date-time or HHMM, read in the subscription's own zone), its periods cut in `timeZone` (the
 * subscription's, or config.yaml's override); or what is wrong with it, one phrase.
 */
export function scheduleOfSubscription(
  subscription: {
    reportFrequency?: string | null;
    timezone?: string | null;
    startTime?: string | null;
    startDay?: number | null;
    reportInterval?: string | null;
  },
  timeZone: string,
): ReportSchedule | string {
  const frequency = String(subscription.reportFrequency ?? 'DAILY').toUpperCase();
  if (!(REPORT_FREQUENCIES as readonly string[]).includes(frequency)) {
    return `reportFrequency "${frequency}" is not one of ${REPORT_FREQUENCIES.join(', ')}`;
  }
  const raw = subscription.startTime ?? '0000';
  const startTime = startTimeInZone(raw, subscription.timezone ?? timeZone);
  if (startTime === undefined) return `startTime "${raw}" is neither HHMM nor a date-time`;
  const schedule: ReportSchedule = {
    frequency: frequency as ReportFrequency,
    timeZone,
    startTime,
    ...(subscription.startDay != null ? { startDay: subscription.startDay } : {}),
    ...(frequency === 'USER_DEFINED' && subscription.reportInterval
      ? { reportInterval: subscription.reportInterval }
      : {}),
  };
  return scheduleProblem(schedule) ?? schedule;
}

/** `YYYY-MM-DDTHH:MM:SS` of an instant's local wall clock. */
function wallClock(t: number, timeZone: string): string {
  return new Date(t + zoneOffsetMs(new Date(t), timeZone)).toISOString().slice(0, 19);
}

function offsetText(t: number, timeZone: string): string {
  const minutes = Math.round(zoneOffsetMs(new Date(t), timeZone) / MINUTE_MS);
  const abs = Math.abs(minutes);
  const hh = String(Math.floor(abs / 60)).padStart(2, '0');
  const mm = String(abs % 60).padStart(2, '0');
  return `${minutes < 0 ? '-' : '+'}${hh}:${mm}`;
}

/**
 * The instant at which a zone's wall clock shows `date` at `minutes` after midnight: the first one
 * when the time occurs twice, the time moved forward by the gap when DST skips it.
 */
export function localInstant(date: string, minutes: number, timeZone: string): number {
  const wall = parseDay(date) + minutes * MINUTE_MS;
  const before = wall - zoneOffsetMs(new Date(wall - DAY_MS), timeZone);
  const after = wall - zoneOffsetMs(new Date(wall + DAY_MS), timeZone);
  const exact = [before, after].filter((t) => t + zoneOffsetMs(new Date(t), timeZone) === wall);
  return exact.length > 0 ? Math.min(...exact) : before;
}

function startMinutes(schedule: ReportSchedule): number {
  return Number(schedule.startTime.slice(0, 2)) * 60 + Number(schedule.startTime.slice(2, 4));
}

function daysInMonth(date: string): number {
  return new Date(Date.UTC(Number(date.slice(0, 4)), Number(date.slice(5, 7)), 0)).getUTCDate();
}

/** The local date of the month after `date`'s on `day`, clamped to that month's length. */
function sameDayNextMonth(date: string, day: number): string {
  const y = Number(date.slice(0, 4));
  const m = Number(date.slice(5, 7));
  const first = m === 12 ? `${y + 1}-01-01` : `${y}-${String(m + 1).padStart(2, '0')}-01`;
  return `${first.slice(0, 8)}${String(Math.min(day, daysInMonth(first))).padStart(2, '0')}`;
}

/** Local days back from a period's start day to the day it is anchored on, at most. */
function anchorSpanDays(schedule: ReportSchedule): number {
  switch (schedule.frequency) {
    case 'WEEKLY':
      return 7;
    case 'MONTHLY':
      return 31;
    default:
      return 1;
  }
}

/** The periods [start, end) anchored on a local day (those whose schedule starts that day). */
function periodsOfDay(schedule: ReportSchedule, date: string): [number, number][] {
  const minutes = startMinutes(schedule);
  const at = (d: string) => localInstant(d, minutes, schedule.timeZone);
  const day = schedule.startDay ?? 1;
  switch (schedule.frequency) {
    case 'DAILY':
      return [[at(date), at(addDays(date, 1))]];
    case 'WEEKLY':
      return new Date(parseDay(date)).getUTCDay() + 1 === day ? [[at(date), at(addDays(date, 7))]] : [];
    case 'MONTHLY':
      return Number(date.slice(8, 10)) === Math.min(day, daysInMonth(date))
        ? [[at(date), at(sameDayNextMonth(date, day))]]
        : [];
    case 'USER_DEFINED': {
      const step = (intervalMinutes(schedule.reportInterval ?? '') ?? 24 * 60) * MINUTE_MS;
      const first = at(date);
      const next = at(addDays(date, 1));
      const out: [number, number][] = [];
      for (let s = first; s < next; s += step) out.push([s, Math.min(s + step, next)]);
      return out;
    }
  }
}

function toPeriod(schedule: ReportSchedule, start: number, end: number): ReportPeriod {
  const tz = schedule.timeZone;
  const firstDay = localDate(new Date(start), tz);
  let key = firstDay;
  if (!isCalendarDaily(schedule)) {
    const wall = wallClock(start, tz);
    key = wall.slice(0, 16);
    const minutes = Number(wall.slice(11, 13)) * 60 + Number(wall.slice(14, 16));
    // The second occurrence of a local time (DST fall-back) carries its offset.
    if (localInstant(firstDay, minutes, tz) !== start) key += offsetText(start, tz);
  }
  return {
    key,
    start: new Date(start),
    end: new Date(end),
    firstDay,
    lastDay: localDate(new Date(end - 1), tz),
    reportDate: localDate(new Date(end), tz),
    reportTime: `${wallClock(end, tz).slice(11, 19)}${offsetText(end, tz)}`,
  };
}

/** The periods that start in [from, to), in order. */
export function periodsStartingBetween(schedule: ReportSchedule, from: Date, to: Date): ReportPeriod[] {
  const lo = from.getTime();
  const hi = to.getTime();
  if (hi <= lo) return [];
  const out: ReportPeriod[] = [];
  const last = localDate(to, schedule.timeZone);
  for (let d = addDays(localDate(from, schedule.timeZone), -1); d <= last; d = addDays(d, 1)) {
    for (const [s, e] of periodsOfDay(schedule, d)) if (s >= lo && s < hi) out.push(toPeriod(schedule, s, e));
  }
  return out;
}

/** The periods that start on the local days [fromDay, toDay] (inclusive): a backfill's range. */
export function periodsStartingOn(schedule: ReportSchedule, fromDay: string, toDay: string): ReportPeriod[] {
  return periodsStartingBetween(
    schedule,
    startOfLocalDay(fromDay, schedule.timeZone),
    startOfLocalDay(addDays(toDay, 1), schedule.timeZone),
  );
}

/** The period that contains an instant. */
export function periodContaining(schedule: ReportSchedule, instant: Date): ReportPeriod {
  const t = instant.getTime();
  const day = localDate(instant, schedule.timeZone);
  for (let back = 0; back <= anchorSpanDays(schedule) + 1; back++) {
    const d = addDays(day, -back);
    for (const [s, e] of periodsOfDay(schedule, d)) if (s <= t && t < e) return toPeriod(schedule, s, e);
  }
  // Unreachable for a valid schedule: every instant lies in a period anchored at most a span back.
  throw new Error(`no report period contains ${instant.toISOString()}`);
}

/**
 * Whether the data of a window (a report period, or days of an on-demand endpoint) that ends at
 * `end` can be available at `now`: `readyAfterHours` after it ends. Before, a report of the period
 * is not generated yet, and an on-demand answer is empty or partial, which says nothing about the
 * window: no plan (the due windows of a run, the range of a backfill) takes such a window, so none
 * is ever loaded half or marked as having no data.
 */
export function isAvailable(end: Date, now: Date, readyAfterHours: number): boolean {
  return end.getTime() <= now.getTime() - readyAfterHours * HOUR_MS;
}

export interface DuePeriodsOptions {
  /** First local day whose periods are loaded (config startDate): periods starting on or after it. */
  startDate: string;
  now: Date;
  /** A period is due this many hours after it ends. */
  readyAfterHours: number;
  /** Periods whose last local day is among the newest due period's last this many days are loaded again. */
  lookbackDays: number;
}

/**
 * The periods a run should have loaded by `now` (from startDate to the newest one ended
 * readyAfterHours ago), and the keys of those re-loaded even when loaded (the lookback).
 */
export function duePeriods(
  schedule: ReportSchedule,
  options: DuePeriodsOptions,
): { due: ReportPeriod[]; lookbackKeys: Set<string> } {
  const readyBefore = options.now.getTime() - options.readyAfterHours * HOUR_MS;
  const from = startOfLocalDay(options.startDate, schedule.timeZone);
  const due = periodsStartingBetween(schedule, from, new Date(readyBefore)).filter((p) =>
    isAvailable(p.end, options.now, options.readyAfterHours),
  );
  const newest = due.at(-1);
  const lookbackKeys = new Set<string>();
  if (newest && options.lookbackDays > 0) {
    const fromDay = addDays(newest.lastDay, 1 - options.lookbackDays);
    for (const p of due) if (p.lastDay >= fromDay) lookbackKeys.add(p.key);
  }
  return { due, lookbackKeys };
}
