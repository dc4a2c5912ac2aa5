import type { PlannedWindow } from '../state/windows.js';
import { duePeriods, hasSeveralReportsADay, isAvailable, periodsStartingOn } from '../time/report-periods.js';
import type { ReportPeriod, ReportSchedule } from '../time/report-periods.js';
import { addDays, dateOfDayNumber, dayNumber, localDate, startOfLocalDay } from '../time/time-zones.js';

/**
 * Window planning, pure. A report pipeline's window is one report period of its subscription
 * (src/time/report-periods.ts, keys as described there). An on-demand pipeline's window is
 * `windowDays` local calendar days in the pipeline's time zone, aligned on 1970-01-01 so that every
 * process (run, backfill, schedule) cuts the same windows whatever range it was asked for. Keys:
 * `2026-11-20` for one day, `2026-11-01..2026-11-07` (first and last day, inclusive) for longer windows.
 */
export interface WindowShape {
  pipeline: string;
  organizationId: string;
  timeZone: string;
  windowDays: number;
}

export interface CalendarWindow extends PlannedWindow {
  /** First local day of the window (YYYY-MM-DD). */
  firstDay: string;
  /** Last local day of the window, inclusive. */
  lastDay: string;
  /**
   * The report's name for this window after `<reportName>/` in `_source`: its reportDate (the end's
   * local date), with the end's local time (`2026-11-20T15:00`) when a day has several reports.
   */
  reportRef: string;
  /** Set for a report period: the end's local time and offset (the download link's reportTime). */
  reportTime?: string;
}

/** The window that contains a local day. */
export function windowOfDay(shape: WindowShape, day: string): CalendarWindow {
  const n = dayNumber(day);
  const first = n - (((n % shape.windowDays) + shape.windowDays) % shape.windowDays);
  const firstDay = dateOfDayNumber(first);
  const lastDay = dateOfDayNumber(first + shape.windowDays - 1);
  return {
    pipeline: shape.pipeline,
    organizationId: shape.organizationId,
    windowKey: shape.windowDays === 1 ? firstDay : `${firstDay}..${lastDay}`,
    firstDay,
    lastDay,
    reportRef: addDays(lastDay, 1),
    start: startOfLocalDay(firstDay, shape.timeZone),
    end: startOfLocalDay(addDays(lastDay, 1), shape.timeZone),
  };
}

/** Every window that overlaps the local days [from, to] (inclusive), in order. */
export function windowsBetween(shape: WindowShape, from: string, to: string): CalendarWindow[] {
  if (dayNumber(to) < dayNumber(from)) return [];
  const out: CalendarWindow[] = [];
  let w = windowOfDay(shape, from);
  for (;;) {
    out.push(w);
    const next = addDays(w.lastDay, 1);
    if (dayNumber(next) > dayNumber(to)) return out;
    w = windowOfDay(shape, next);
  }
}

export interface DuePlanOptions {
  /** First local day to load (config startDate). */
  startDate: string;
  now: Date;
  /** A window is due this many hours after it ends (reports: six). */
  readyAfterHours: number;
  /** Windows ending within this many days before the newest due window are re-loaded. */
  lookbackDays: number;
}

export interface DuePlan {
  /** Every window from startDate to the newest one that should be available now. */
  due: CalendarWindow[];
  /** The keys among `due` that are re-loaded even when already loaded (late-arriving data). */
  lookbackKeys: Set<string>;
}

/**
 * The windows a nightly run should have loaded by `now`. Missing days after downtime are simply the
 * due windows that are not loaded yet; the caller skips loaded ones except the lookback.
 */
export function planDueWindows(shape: WindowShape, options: DuePlanOptions): DuePlan {
  const readyBefore = new Date(options.now.getTime() - options.readyAfterHours * 3_600_000);
  // The newest window whose end is at or before readyBefore.
  let lastDay = localDate(readyBefore, shape.timeZone);
  let last = windowOfDay(shape, lastDay);
  while (last.end.getTime() > readyBefore.getTime()) {
    lastDay = addDays(last.firstDay, -1);
    last = windowOfDay(shape, lastDay);
  }
  const due = windowsBetween(shape, options.startDate, last.lastDay).filter(
    (w) =>
      dayNumber(w.lastDay) >= dayNumber(options.startDate) &&
      isAvailable(w.end, options.now, options.readyAfterHours),
  );
  const lookbackFrom = dayNumber(last.lastDay) - options.lookbackDays + 1;
  const lookbackKeys = new Set(
    options.lookbackDays <= 0
      ? []
      : due.filter((w) => dayNumber(w.lastDay) >= lookbackFrom).map((w) => w.windowKey),
  );
  return { due, lookbackKeys };
}

/** A subscription's report period as a window of a pipeline and organization. */
export function periodWindow(
  shape: { pipeline: string; organizationId: string },
  schedule: ReportSchedule,
  period: ReportPeriod,
): CalendarWindow {
  return {
    pipeline: shape.pipeline,
    organizationId: shape.organizationId,
    windowKey: period.key,
    firstDay: period.firstDay,
    lastDay: period.lastDay,
    start: period.start,
    end: period.end,
    reportRef: hasSeveralReportsADay(schedule)
      ? `${period.reportDate}T${period.reportTime.slice(0, 5)}`
      : period.reportDate,
    reportTime: period.reportTime,
  };
}

/** The report periods of a backfill: those that start on the local days [from, to]. */
export function periodWindowsStartingOn(
  shape: { pipeline: string; organizationId: string },
  schedule: ReportSchedule,
  from: string,
  to: string,
): CalendarWindow[] {
  return periodsStartingOn(schedule, from, to).map((p) => periodWindow(shape, schedule, p));
}

/** planDueWindows for report periods. */
export function planDuePeriodWindows(
  shape: { pipeline: string; organizationId: string },
  schedule: ReportSchedule,
  options: DuePlanOptions,
): DuePlan {
  const plan = duePeriods(schedule, options);
  return { due: plan.due.map((p) => periodWindow(shape, schedule, p)), lookbackKeys: plan.lookbackKeys };
}
