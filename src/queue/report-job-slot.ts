import type { Job, PgBoss } from 'pg-boss';
import { CybsError } from '../errors.js';
import type { Db } from '../warehouse/warehouse.js';
import type { Logger } from '../observability/logger.js';
import { giveUpReport, runReportJob, wakeWaitingWindows } from './chunk-jobs.js';
import type { ReportJobDeps } from './chunk-jobs.js';
import type { ReportJobData } from './window-jobs.js';
import { ONE_TIME_QUEUE } from './window-queue.js';
import type { WindowQueue } from './window-queue.js';
import { HEARTBEAT_REFRESH_MS, attemptOf, failureOf, isLastAttempt } from './worker-slots.js';
import type { IdleLine, JobAttempt } from './worker-slots.js';

/**
 * The worker's slot for one-time report jobs (chunk-jobs.ts): it runs them one step at a time;
 * between steps they wait in the queue, not here.
 */

export interface ReportJobSlotDeps {
  queue: WindowQueue;
  db: Db;
  logger: Logger;
  report: ReportJobDeps;
  /** The credential's limit, shared with the window jobs (window-queue.ts credentialLimits). */
  perCredential: number;
}

/** Fetch and run report jobs until the worker stops; an empty queue pauses the slot in its line. */
export async function runReportJobSlot(deps: ReportJobSlotDeps, line: IdleLine): Promise<void> {
  while (!line.stopping) {
    let job: Job<ReportJobData> | undefined;
    try {
      job = await deps.queue.fetchReportJob(deps.perCredential);
    } catch (error) {
      deps.logger.warn({ err: (error as Error).message }, 'could not fetch a one-time report job');
    }
    if (!job) {
      await line.pause();
      continue;
    }
    line.found();
    await runOneReportJob(deps, job);
  }
}

/** One step of a report job, its heartbeat refreshed meanwhile: park it until its next look, or complete it. */
async function runOneReportJob(deps: ReportJobSlotDeps, job: Job<ReportJobData>): Promise<void> {
  const boss = deps.queue.boss;
  const attempt = attemptOf(job);
  const beat = setInterval(() => {
    void boss.touch(ONE_TIME_QUEUE, [attempt]).catch(() => {});
  }, HEARTBEAT_REFRESH_MS);
  try {
    const step = await runReportJob(deps.report, job.data);
    if (step.kind === 'wait') {
      await deps.queue.park(ONE_TIME_QUEUE, attempt, step.delayMs / 1000, step.data);
    } else {
      await wakeWaitingWindows(deps.report, job.data);
      await boss.complete(ONE_TIME_QUEUE, attempt);
    }
  } catch (error) {
    await settleFailedReportJob(deps, boss, job, attempt, error);
  } finally {
    clearInterval(beat);
  }
}

/**
 * A failed step: a verdict another attempt would meet again (the subscription lacks the period
 * field, ...), or its retries spent, gives the report up (its windows fail with the reason); a
 * verdict completes the job, anything else fails it, to be retried.
 */
async function settleFailedReportJob(
  deps: ReportJobSlotDeps,
  boss: PgBoss,
  job: Job<ReportJobData>,
  attempt: JobAttempt,
  error: unknown,
): Promise<void> {
  const { code, message } = failureOf(error);
  deps.logger.warn({ code, err: message, report: job.data.request.reportName }, 'one-time report job failed');
  try {
    const verdict = error instanceof CybsError && error.stage === 'extract' && !error.retryable;
    if (verdict || (await isLastAttempt(deps.db, ONE_TIME_QUEUE, job))) {
      await giveUpReport(deps.report, job.data, `${code}: ${message}`);
      await wakeWaitingWindows(deps.report, job.data);
    }
    if (verdict) await boss.complete(ONE_TIME_QUEUE, attempt, { code, message });
    else await boss.fail(ONE_TIME_QUEUE, attempt, { code, message });
  } catch (e) {
    deps.logger.error(
      { err: (e as Error).message, job: job.id },
      'could not record the failure of a one-time report job',
    );
  }
}
