import { DEFAULT_MAX_CATCH_UP_WINDOWS } from '../config/defaults.js';
import { assessCompleteness, earliestStart, groupWindowStates, pairKey } from '../state/completeness.js';
import type { Completeness, ExpectedWindow, PipelineShape, WindowStateRow } from '../state/completeness.js';
import type { PlannedWindow, WindowStatus } from '../state/windows.js';
import {
  duePeriods,
  hasSeveralReportsADay,
  isAvailable,
  midnightDaily,
  periodsStartingOn,
} from '../time/report-periods.js';
import type { ReportPeriod, ReportSchedule } from '../time/report-periods.js';
import { addDays, dateOfDayNumber, dayNumber, localDate, startOfLocalDay } from '../time/time-zones.js';
import type { ResolvedPipeline } from './resolve-pipelines.js';

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

export interface PipelineWindowPlan {
  /** The windows to load: available ones only (isAvailable), in order. */
  windows: CalendarWindow[];
  /** The keys among `windows` re-loaded even when already loaded (a run's lookback). */
  reload: Set<string>;
  /** A backfill's windows of the range that are not available yet (left out of `windows`). */
  notAvailable: CalendarWindow[];
}

/**
 * The windows of one pipeline and organization a pass plans. Report files: the subscription's
 * report periods (a backfill takes those that start in its range); on-demand endpoints: windows of
 * windowDays local days. A run takes the due windows; a backfill its range up to the newest
 * window available now, so a range that reaches into the future stops there.
 */
export function planPipelineWindows(
  pipeline: ResolvedPipeline,
  organizationId: string,
  options: { range?: { from: string; to: string }; now: Date },
): PipelineWindowPlan {
  const shape = {
    pipeline: pipeline.name,
    organizationId,
    timeZone: pipeline.timeZone,
    windowDays: pipeline.windowDays,
  };
  const schedule =
    pipeline.def.kind === 'report'
      ? (pipeline.reportSchedule ?? midnightDaily(pipeline.timeZone))
      : undefined;
  if (options.range) {
    const all = schedule
      ? periodWindowsStartingOn(shape, schedule, options.range.from, options.range.to)
      : windowsBetween(shape, options.range.from, options.range.to);
    const available = (w: CalendarWindow) => isAvailable(w.end, options.now, pipeline.readyAfterHours);
    return {
      windows: all.filter(available),
      reload: new Set(),
      notAvailable: all.filter((w) => !available(w)),
    };
  }
  const due = {
    startDate: pipeline.startDate,
    now: options.now,
    readyAfterHours: pipeline.readyAfterHours,
    lookbackDays: pipeline.lookbackDays,
  };
  const plan = schedule ? planDuePeriodWindows(shape, schedule, due) : planDueWindows(shape, due);
  return { windows: plan.due, reload: plan.lookbackKeys, notAvailable: [] };
}

/**
 * The windows of one pipeline and organization that should be loaded by `now`: from its first
 * window the warehouse knows (`rows`) or its startDate, whichever is earlier, to the newest
 * available one. What `status` measures completeness against, and what a run catches up on.
 */
export function expectedWindows(
  pipeline: ResolvedPipeline,
  organizationId: string,
  rows: Iterable<WindowStateRow>,
  now: Date,
): PipelineWindowPlan {
  const startDate = expectedStartDate(pipeline, rows);
  return planPipelineWindows({ ...pipeline, startDate }, organizationId, { now });
}

/** The first local day expectedWindows plans from: the first window's, or startDate if earlier. */
function expectedStartDate(pipeline: ResolvedPipeline, rows: Iterable<WindowStateRow>): string {
  const first = earliestStart(rows);
  const firstDay = first ? localDate(first, pipeline.timeZone) : undefined;
  return firstDay && dayNumber(firstDay) < dayNumber(pipeline.startDate) ? firstDay : pipeline.startDate;
}

/** A window a pass sets out to load, with the statuses that make it claimable. */
export interface PassWindow {
  window: CalendarWindow;
  claimable: WindowStatus[];
  /**
   * A window before the pipeline's startDate that was never loaded or failed: a pass takes at most
   * maxCatchUpWindows of them, oldest first, after the newest windows.
   */
  catchUp: boolean;
}

const ALL_SETTLED: WindowStatus[] = ['pending', 'failed', 'loaded', 'no_data'];
const UNSETTLED: WindowStatus[] = ['pending', 'failed'];

/**
 * The windows one pass loads of one pipeline and organization, given the rows etl.windows holds
 * for them (by key). A backfill: its range (loaded ones too with force). A run: the due windows
 * from startDate (the lookback's re-loaded), and before them every gap and failed window since the
 * first window the warehouse knows, to catch up on. A failed window waits for its backoff
 * (retryDue), except in a backfill, which asks for its range explicitly. A schedule pass's
 * `firedAt` (PlanOptions): lookback windows loaded since then are not re-loaded for that fire.
 */
export function planPassWindows(
  pipeline: ResolvedPipeline,
  organizationId: string,
  options: { range?: { from: string; to: string }; force?: boolean; firedAt?: Date; now: Date },
  rows: ReadonlyMap<string, WindowStateRow>,
): PassWindow[] {
  const plan = options.range
    ? planPipelineWindows(pipeline, organizationId, { range: options.range, now: options.now })
    : expectedWindows(pipeline, organizationId, rows.values(), options.now);
  const out: PassWindow[] = [];
  for (const window of plan.windows) {
    const row = rows.get(window.windowKey);
    // A lookback window another schedule instance loaded for this same cron fire is not re-loaded.
    const loadedForThisFire =
      options.firedAt !== undefined &&
      row?.loadedAt != null &&
      row.loadedAt.getTime() >= options.firedAt.getTime();
    const again = options.force === true || (plan.reload.has(window.windowKey) && !loadedForThisFire);
    const claimable = again ? ALL_SETTLED : UNSETTLED;
    if (row && row.status !== 'running' && !claimable.includes(row.status)) continue;
    if (!options.range && row?.status === 'failed' && !row.retryDue) continue;
    const catchUp = !options.range && !again && dayNumber(window.lastDay) < dayNumber(pipeline.startDate);
    out.push({ window, claimable, catchUp });
  }
  return out;
}

/**
 * A pass's windows in the order it loads them: the newest (due from startDate, or a backfill's
 * range) oldest first, then at most `maxCatchUp` catch-up windows, oldest first.
 */
export function orderPassWindows<T extends { window: ExpectedWindow; catchUp: boolean }>(
  planned: readonly T[],
  maxCatchUp: number = DEFAULT_MAX_CATCH_UP_WINDOWS,
): T[] {
  const byStart = (a: T, b: T) => a.window.start.getTime() - b.window.start.getTime();
  const newest = planned.filter((p) => !p.catchUp).sort(byStart);
  const catchUp = planned
    .filter((p) => p.catchUp)
    .sort(byStart)
    .slice(0, Math.max(0, maxCatchUp));
  return [...newest, ...catchUp];
}

/**
 * Completeness of every enabled pipeline and organization (its configured organizations and those
 * etl.windows holds rows of), from their rows (readWindowStates). Pure: what `status` shows first.
 */
export function assessPipelines(
  pipelines: readonly ResolvedPipeline[],
  rows: readonly WindowStateRow[],
  now: Date,
): Completeness[] {
  const grouped = groupWindowStates(rows);
  const out: Completeness[] = [];
  for (const pipeline of pipelines) {
    if (!pipeline.enabled) continue;
    const organizations = new Set(pipeline.organizations);
    for (const r of rows) if (r.pipeline === pipeline.name) organizations.add(r.organizationId);
    // Organizations' expected windows (keys and times) differ only by their first day: each first
    // day's are planned once (thousands of organizations share a few).
    const byStartDate = new Map<string, readonly ExpectedWindow[]>();
    for (const organizationId of [...organizations].sort()) {
      const own = grouped.get(pairKey(pipeline.name, organizationId)) ?? new Map<string, WindowStateRow>();
      const startDate = expectedStartDate(pipeline, own.values());
      let expected = byStartDate.get(startDate);
      if (!expected) {
        expected = expectedWindows(pipeline, organizationId, own.values(), now).windows;
        byStartDate.set(startDate, expected);
      }
      out.push(assessCompleteness({ pipeline: pipeline.name, organizationId }, expected, own));
    }
  }
  return out;
}

/** How a pass cuts a pipeline's windows, to record (recordPipelineShapes). */
export function shapeOf(pipeline: ResolvedPipeline): PipelineShape {
  return {
    pipeline: pipeline.name,
    timeZone: pipeline.timeZone,
    reportSchedule: pipeline.def.kind === 'report' ? (pipeline.reportSchedule ?? null) : null,
  };
}

/**
 * Pipelines resolved from config alone (no API: status, windows list) with the time zone and
 * report schedule their last pass cut windows with, where one was recorded.
 */
export function withRecordedShapes(
  pipelines: readonly ResolvedPipeline[],
  shapes: ReadonlyMap<string, PipelineShape>,
): ResolvedPipeline[] {
  return pipelines.map((p) => {
    const shape = shapes.get(p.name);
    if (!shape) return p;
    return {
      ...p,
      timeZone: shape.timeZone,
      ...(shape.reportSchedule ? { reportSchedule: shape.reportSchedule } : {}),
    };
  });
}
