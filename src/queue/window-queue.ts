import pg from 'pg';
import { PgBoss } from 'pg-boss';
import type { Job, JobInsert } from 'pg-boss';
import type { Logger } from '../observability/logger.js';
import { QUEUE_SCHEMA, WINDOW_DEAD_LETTER_QUEUE, WINDOW_QUEUE, windowJobKey } from './window-jobs.js';
import type { WindowJobData } from './window-jobs.js';

/**
 * Windows as pg-boss jobs, in the warehouse (schema `pgboss`). A job is one window of one pipeline
 * and organization; its singleton key (`pipeline|organization|window`) and the queue's `exclusive`
 * policy collapse any number of planners enqueueing the same window into one job while it is queued
 * or active. The window's own state (etl.windows, its lease) still decides who loads it, so a job
 * that finds its window settled does nothing.
 */
export { QUEUE_SCHEMA, WINDOW_DEAD_LETTER_QUEUE, WINDOW_QUEUE } from './window-jobs.js';

/** The longest wait between two retries of a window's job (the backoff doubles up to it). */
const RETRY_DELAY_MAX_SECONDS = 1800;
/** A window that runs this long is taken for lost and retried (its own lease protects the rows). */
const EXPIRE_SECONDS = 4 * 3600;

/**
 * The advisory-lock space of window-job fetches. pg-boss counts a group's active jobs in the same
 * statement that claims the next one, so two fetches at the same moment can both see room for one
 * more and exceed the group's limit; fetches of the window queue take this transaction lock first,
 * one at a time across every worker, and each sees the jobs the ones before it claimed.
 */
const FETCH_LOCK_SPACE = 0x63796271;

export interface WindowQueue {
  readonly boss: PgBoss;
  readonly settings: QueueSettings;
  /**
   * Claim the next window job whose credential group has fewer than `perCredential` jobs active,
   * across every worker; undefined when there is none.
   */
  fetch(perCredential: number): Promise<Job<WindowJobData> | undefined>;
  /** Enqueue windows; those already queued or active (same singleton key) are not added again. */
  enqueue(jobs: readonly WindowJobData[]): Promise<{ added: number; alreadyQueued: number }>;
  stop(options?: { graceful?: boolean; timeoutMs?: number }): Promise<void>;
}

/**
 * Start pg-boss on the warehouse, on a small pool of its own (installing or upgrading its schema) and make sure the window
 * queues exist. `supervise`: this process also runs pg-boss's maintenance (expiring jobs whose
 * worker stopped sending heartbeats, retention); workers do, planners need not.
 */
/** config.yaml's `queue`: set on each job a planner enqueues, so workers need not agree on them. */
export interface QueueSettings {
  /**
   * A worker refreshes the heartbeat of each job it runs three times within this; a job whose
   * worker died (no heartbeat for this long) is failed by pg-boss's supervisor and retried.
   */
  heartbeatSeconds: number;
  retryLimit: number;
  retryDelaySeconds: number;
}

export interface WindowQueueOptions {
  logger: Logger;
  /** This process also runs pg-boss's supervision (workers do; planners need not). */
  supervise: boolean;
  settings: QueueSettings;
  maxConnections?: number;
}

export async function openWindowQueue(
  connection: Readonly<pg.ClientConfig>,
  options: WindowQueueOptions,
): Promise<WindowQueue> {
  const { host, port, user, database, password, connectionString, ssl } = connection;
  const boss = new PgBoss({
    ...(connectionString !== undefined ? { connectionString } : {}),
    ...(host !== undefined ? { host } : {}),
    ...(port !== undefined ? { port } : {}),
    ...(user !== undefined ? { user } : {}),
    ...(database !== undefined ? { database } : {}),
    ...(typeof password === 'string' ? { password } : {}),
    ...(ssl !== undefined ? { ssl } : {}),
    max: options.maxConnections ?? 4,
    application_name: 'cybs-etl queue',
    schema: QUEUE_SCHEMA,
    schedule: false,
    supervise: options.supervise,
    // Dead workers' jobs are found as often as a heartbeat can lapse.
    superviseIntervalSeconds: options.settings.heartbeatSeconds,
    migrate: true,
  });
  boss.on('error', (error: Error) => options.logger.warn({ err: error.message }, 'job queue error'));
  await boss.start();
  if ((await boss.getQueue(WINDOW_DEAD_LETTER_QUEUE)) === null) {
    await boss.createQueue(WINDOW_DEAD_LETTER_QUEUE, { retentionSeconds: 30 * 86400 });
  }
  if ((await boss.getQueue(WINDOW_QUEUE)) === null) {
    await boss.createQueue(WINDOW_QUEUE, {
      policy: 'exclusive',
      deadLetter: WINDOW_DEAD_LETTER_QUEUE,
      retryBackoff: true,
      retryDelayMax: RETRY_DELAY_MAX_SECONDS,
      expireInSeconds: EXPIRE_SECONDS,
    });
  }
  const { settings } = options;
  // Fetches run on a connection of their own, inside the transaction that holds the fetch lock.
  const fetchPool = new pg.Pool({ ...connection, max: 2, application_name: 'cybs-etl queue fetch' });
  fetchPool.on('error', () => {});
  return {
    boss,
    settings,
    async fetch(perCredential) {
      const client = await fetchPool.connect();
      try {
        await client.query('begin');
        await client.query('select pg_advisory_xact_lock($1, hashtext($2))', [
          FETCH_LOCK_SPACE,
          WINDOW_QUEUE,
        ]);
        const [job] = await boss.fetch<WindowJobData>(WINDOW_QUEUE, {
          batchSize: 1,
          groupConcurrency: perCredential,
          db: { executeSql: async (text, values) => ({ rows: (await client.query(text, values)).rows }) },
        });
        await client.query('commit');
        return job;
      } catch (error) {
        await client.query('rollback').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    async enqueue(jobs) {
      let added = 0;
      for (let i = 0; i < jobs.length; i += 500) {
        const slice = jobs.slice(i, i + 500);
        const inserts: JobInsert<WindowJobData>[] = slice.map((data) => ({
          data,
          singletonKey: windowJobKey({ ...data, windowKey: data.window.windowKey }),
          group: { id: data.credential },
          heartbeatSeconds: settings.heartbeatSeconds,
          retryLimit: settings.retryLimit,
          retryDelay: settings.retryDelaySeconds,
          retryBackoff: true,
          retryDelayMax: RETRY_DELAY_MAX_SECONDS,
          deadLetter: WINDOW_DEAD_LETTER_QUEUE,
        }));
        const ids = await boss.insert(WINDOW_QUEUE, inserts, { returnId: true });
        added += ids?.length ?? 0;
      }
      return { added, alreadyQueued: jobs.length - added };
    },
    async stop(stopOptions = {}) {
      await boss.stop({
        graceful: stopOptions.graceful ?? true,
        timeout: stopOptions.timeoutMs ?? 30_000,
        close: true,
      });
      await fetchPool.end();
    },
  };
}
