import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import type { OneTimeReportRequest } from '../extract/one-time-reports.js';
import type { CalendarWindow } from '../pipeline/plan-windows.js';
import type { PlannedJob } from '../pipeline/run-pipelines.js';
import type { WindowStatus } from '../state/windows.js';

/**
 * A window as a job of the window queue (window-queue.ts) carries it, and the keys jobs are grouped
 * and collapsed by. No pg-boss here, so that planning code can use it without loading the queue.
 */

/** The queue of window jobs (in the warehouse's schema QUEUE_SCHEMA). */
export const WINDOW_QUEUE = 'cybs_etl_windows';
/** Where a window's job goes once its retries are spent. */
export const WINDOW_DEAD_LETTER_QUEUE = 'cybs_etl_windows_failed';
export const QUEUE_SCHEMA = 'pgboss';
/** The queue of one-time report jobs: one per report of a backfill chunk (chunk-jobs.ts). */
export const ONE_TIME_QUEUE = 'cybs_etl_one_time_reports';

/** The window as a job carries it: CalendarWindow with its times as ISO text. */
export interface WindowJobData {
  pipeline: string;
  organizationId: string;
  window: Omit<CalendarWindow, 'start' | 'end' | 'pipeline' | 'organizationId'> & {
    start: string;
    end: string;
  };
  /** Loaded and no_data windows are loaded again (a run's lookback, backfill --force). */
  reload: boolean;
  /** The etl.runs row of the pass that planned it. */
  runId: number | null;
  /** The API credential the window is loaded with (its hash): pg-boss's group for per-credential concurrency. */
  credential: string;
  /**
   * A backfill's range of local days: a window no subscription report covers is loaded from the
   * one-time report of its chunk of this range. Absent: no one-time reports (a run, or
   * backfill --no-one-time-reports).
   */
  oneTime?: { from: string; to: string };
  /** When the job was enqueued (ISO): a one-time report that failed before is asked for again. */
  queuedAt?: string;
  /**
   * The one-time report the window waits for: the job was put back in the queue until that
   * report's job finds it final (chunk-jobs.ts wakes it), so that no worker waits for it.
   */
  waitingFor?: string;
}

/** A one-time report's job: the report to create (unless found) and follow until it is final. */
export interface ReportJobData {
  request: OneTimeReportRequest;
  /** The credential group of the window that asked for it. */
  credential: string;
  /** The wait before its next look at a report not final yet (ms); it doubles up to the maximum. */
  delayMs?: number;
  /** When the job first looked at the report (ISO): it gives up on it after the timeout. */
  since?: string;
}

/** One job per report: `pipeline|organization|report name` (the report name names its chunk). */
export function reportJobKey(request: {
  pipeline: string;
  organizationId: string;
  reportName: string;
}): string {
  return `${request.pipeline}|${request.organizationId}|${request.reportName}`;
}

export function windowJobKey(ref: { pipeline: string; organizationId: string; windowKey: string }): string {
  return `${ref.pipeline}|${ref.organizationId}|${ref.windowKey}`;
}

/**
 * A job attempt's claim on its window (etl.windows.claim): the job, which of its attempts, and the
 * process running it (host:pid, for whoever looks at a window being loaded).
 */
export function jobClaim(attempt: { id: string; retryCount: number }): string {
  return `${attempt.id}/${attempt.retryCount}@${hostname()}:${process.pid}`;
}

/** A credential's group id: a hash, so that no key id is written to the queue's tables. */
export function credentialGroup(credential: { merchantId: string; keyId: string }): string {
  return createHash('sha256')
    .update(`${credential.merchantId}\0${credential.keyId}`)
    .digest('hex')
    .slice(0, 16);
}

export function toJobData(
  job: PlannedJob,
  runId: number | null,
  credential: string,
  oneTime?: { from: string; to: string },
): WindowJobData {
  const { pipeline: _pipeline, organizationId, start, end, ...window } = job.window;
  return {
    pipeline: job.pipeline.name,
    organizationId,
    window: { ...window, start: start.toISOString(), end: end.toISOString() },
    reload: job.claimable.includes('loaded'),
    runId,
    credential,
    ...(oneTime ? { oneTime, queuedAt: new Date().toISOString() } : {}),
  };
}

export function windowOfJob(data: WindowJobData): CalendarWindow {
  return {
    ...data.window,
    pipeline: data.pipeline,
    organizationId: data.organizationId,
    start: new Date(data.window.start),
    end: new Date(data.window.end),
  };
}

/** The statuses a job's window may be claimed from (see runWindow). */
export function claimableOf(data: WindowJobData): WindowStatus[] {
  return data.reload ? ['pending', 'failed', 'loaded', 'no_data'] : ['pending', 'failed'];
}
