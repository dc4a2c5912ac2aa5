import pg from 'pg';
import { PgBoss } from 'pg-boss';
import type { Job, JobInsert } from 'pg-boss';
import type { Logger } from '../observability/logger.js';
import {
  ONE_TIME_QUEUE,
  QUEUE_SCHEMA,
  WINDOW_DEAD_LETTER_QUEUE,
  WINDOW_QUEUE,
  reportJobKey,
  windowJobKey,
} from './window-jobs.js';
import type { ReportJobData, WindowJobData } from './window-jobs.js';

/**
 * Windows as pg-boss jobs, in the warehouse (schema `pgboss`). A job is one window of one pipeline
 * and organization; its singleton key (`pipeline|organization|window`) and the queue's `exclusive`
 * policy collapse any number of planners enqueueing the same window into one job while it is queued,
 * waiting to retry or active, and pg-boss runs one attempt of a job at a time. The window's state
 * (etl.windows) records the attempt that claimed it, so a job that finds its window settled does
 * nothing, and an attempt whose job was handed on cannot commit.
 */
export { ONE_TIME_QUEUE, QUEUE_SCHEMA, WINDOW_DEAD_LETTER_QUEUE, WINDOW_QUEUE } from './window-jobs.js';

/** The longest wait between two retries of a window's job (the backoff doubles up to it). */
const RETRY_DELAY_MAX_SECONDS = 1800;
/** A window that runs this long is taken for lost and retried (its claim protects the rows). */
const EXPIRE_SECONDS = 4 * 3600;

/**
 * The advisory-lock space of job fetches. pg-boss counts a group's active jobs in the same
 * statement that claims the next one, so two fetches at the same moment can both see room for one
 * more and exceed the group's limit; fetches of the window and one-time report queues take this
 * transaction lock first, one at a time across every worker, and each sees the jobs the ones before
 * it claimed.
 */
const FETCH_LOCK_SPACE = 0x63796271;
const FETCH_BEGIN = `begin; select pg_advisory_xact_lock(${FETCH_LOCK_SPACE}, hashtext('${WINDOW_QUEUE}'))`;

/**
 * A credential's limit holds its window jobs and its one-time report jobs together (both send
 * requests with its key). Each job's group is its credential and so is its group tier: a fetch from
 * one queue, under the fetch lock, reads the other queue's active jobs per credential and passes
 * what is left of each credential's limit as that credential's tier limit.
 */
function activeByCredential(queue: string): string {
  return `select group_id as credential, count(*)::int as n from ${QUEUE_SCHEMA}.job
           where name = '${queue}' and state = 'active' and group_id is not null group by group_id`;
}

function credentialLimits(
  perCredential: number,
  activeElsewhere: readonly { credential: string; n: number }[],
): { default: number; tiers?: Record<string, number> } {
  if (activeElsewhere.length === 0) return { default: perCredential };
  const tiers: Record<string, number> = {};
  for (const { credential, n } of activeElsewhere) tiers[credential] = Math.max(0, perCredential - n);
  return { default: perCredential, tiers };
}

export interface WindowQueue {
  readonly boss: PgBoss;
  readonly settings: QueueSettings;
  /**
   * Claim the next window job whose credential has fewer than `perCredential` window and one-time
   * report jobs active, across every worker; undefined when there is none.
   */
  fetch(perCredential: number): Promise<Job<WindowJobData> | undefined>;
  /**
   * Enqueue windows; those already queued, waiting to retry or active (same singleton key) are not
   * added again. `ids`: the job of each window, in order, new or already there.
   */
  enqueue(jobs: readonly WindowJobData[]): Promise<{ added: number; alreadyQueued: number; ids: string[] }>;
  /** The jobs among `ids` that are no longer queued or active: settled, or waiting for a retry. */
  settled(ids: readonly string[]): Promise<SettledJob[]>;
  /** Make jobs among `ids` that wait for a retry due now (a planner that wants them loaded at once). */
  retryNow(ids: readonly string[]): Promise<void>;
  /**
   * Claim the next due one-time report job (chunk-jobs.ts) whose credential has fewer than
   * `perCredential` window and report jobs active; undefined when there is none.
   */
  fetchReportJob(perCredential: number): Promise<Job<ReportJobData> | undefined>;
  /** Make sure a job follows this report (one per report: its singleton key). */
  ensureReportJob(data: ReportJobData): Promise<void>;
  /**
   * Put an active job back in its queue, due in `delaySeconds`, with `data` (its attempt ends without
   * counting as one: no retry is spent). False when the attempt no longer holds the job.
   */
  park(
    queue: typeof WINDOW_QUEUE | typeof ONE_TIME_QUEUE,
    attempt: { id: string; retryCount: number },
    delaySeconds: number,
    data: WindowJobData | ReportJobData,
  ): Promise<boolean>;
  /** Make the window jobs waiting for a one-time report due now: those of `windowKeys` (singleton keys). */
  wake(reportName: string, windowKeys: readonly string[]): Promise<number>;
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

/** A job as `settled` reads it: its state and what its last attempt left (outcome or failure). */
export interface SettledJob {
  id: string;
  state: 'completed' | 'failed' | 'cancelled' | 'retry';
  /** Attempts that failed before the one to come (a job waiting for a retry) or the last one. */
  retryCount: number;
  output: Record<string, unknown> | null;
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
  // One job per key while queued, waiting to retry or active; failed attempts retried with backoff.
  const exclusive = {
    policy: 'exclusive',
    retryBackoff: true,
    retryDelayMax: RETRY_DELAY_MAX_SECONDS,
    expireInSeconds: EXPIRE_SECONDS,
  } as const;
  if ((await boss.getQueue(ONE_TIME_QUEUE)) === null) {
    await boss.createQueue(ONE_TIME_QUEUE, exclusive);
  }
  if ((await boss.getQueue(WINDOW_QUEUE)) === null) {
    await boss.createQueue(WINDOW_QUEUE, { ...exclusive, deadLetter: WINDOW_DEAD_LETTER_QUEUE });
  }
  const { settings } = options;
  // Fetches run on a connection of their own, inside the transaction that holds the fetch lock;
  // so do the reads of jobs' states.
  const fetchPool = new pg.Pool({ ...connection, max: 2, application_name: 'cybs-etl queue fetch' });
  const jobTable = `${QUEUE_SCHEMA}.job`;
  fetchPool.on('error', () => {});
  /** One job of `queue`, its credential's limit shared with `other`'s active jobs (see credentialLimits). */
  const fetchUnderLock = async <T extends object>(
    queue: string,
    other: string,
    perCredential: number,
  ): Promise<Job<T> | undefined> => {
    const client = await fetchPool.connect();
    try {
      // One round trip: the lock and the other queue's active jobs are constants, one simple query.
      const results = (await client.query(
        `${FETCH_BEGIN}; ${activeByCredential(other)}`,
      )) as unknown as pg.QueryResult<{ credential: string; n: number }>[];
      const [job] = await boss.fetch<T>(queue, {
        batchSize: 1,
        groupConcurrency: credentialLimits(perCredential, results[results.length - 1]!.rows),
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
  };
  return {
    boss,
    settings,
    fetch(perCredential) {
      return fetchUnderLock<WindowJobData>(WINDOW_QUEUE, ONE_TIME_QUEUE, perCredential);
    },
    async enqueue(jobs) {
      let added = 0;
      const ids: string[] = [];
      for (let i = 0; i < jobs.length; i += 500) {
        const slice = jobs.slice(i, i + 500);
        const keys = slice.map((data) => windowJobKey({ ...data, windowKey: data.window.windowKey }));
        const byKey = new Map<string, string>();
        const readLive = async (wanted: string[]) => {
          const found = await fetchPool.query<{ id: string; key: string }>(
            `select id::text as id, singleton_key as key from ${jobTable}
              where name = $1 and singleton_key = any($2::text[]) and state < 'completed'`,
            [WINDOW_QUEUE, wanted],
          );
          for (const row of found.rows) byKey.set(row.key, row.id);
        };
        // The jobs already there are read before the insert: one that settles right after is still
        // followed, not enqueued again. A job another planner adds and that settles between this
        // insert and the read after it is inserted again (the next round).
        await readLive(keys);
        for (let round = 0; round < 3 && byKey.size < slice.length; round++) {
          // In key order: planners inserting the same windows at once wait for each other's rows
          // in one order, never in a cycle (a deadlock between their inserts).
          const missing = keys
            .map((key, j) => ({ key, data: slice[j]! }))
            .filter(({ key }) => !byKey.has(key))
            .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
          const inserts: JobInsert<WindowJobData>[] = missing.map(({ key, data }) => ({
            data,
            singletonKey: key,
            group: { id: data.credential, tier: data.credential },
            heartbeatSeconds: settings.heartbeatSeconds,
            retryLimit: settings.retryLimit,
            retryDelay: settings.retryDelaySeconds,
            retryBackoff: true,
            retryDelayMax: RETRY_DELAY_MAX_SECONDS,
            deadLetter: WINDOW_DEAD_LETTER_QUEUE,
          }));
          added += (await boss.insert(WINDOW_QUEUE, inserts, { returnId: true }))?.length ?? 0;
          await readLive(keys.filter((k) => !byKey.has(k)));
        }
        for (const key of keys) {
          const id = byKey.get(key);
          if (id === undefined) throw new Error(`window job ${key} could be neither enqueued nor found`);
          ids.push(id);
        }
      }
      return { added, alreadyQueued: jobs.length - added, ids };
    },
    async settled(ids) {
      const found = await fetchPool.query<SettledJob>(
        `select id::text as id, state::text as state, retry_count as "retryCount", output from ${jobTable}
          where name = $1 and id = any($2::uuid[]) and state in ('completed', 'failed', 'cancelled', 'retry')`,
        [WINDOW_QUEUE, ids],
      );
      return found.rows;
    },
    async retryNow(ids) {
      await fetchPool.query(
        `update ${jobTable} set start_after = ${QUEUE_SCHEMA}.job_now()
          where name = $1 and id = any($2::uuid[]) and state = 'retry' and start_after > ${QUEUE_SCHEMA}.job_now()`,
        [WINDOW_QUEUE, ids],
      );
    },
    fetchReportJob(perCredential) {
      return fetchUnderLock<ReportJobData>(ONE_TIME_QUEUE, WINDOW_QUEUE, perCredential);
    },
    async ensureReportJob(data) {
      await boss.send(ONE_TIME_QUEUE, data, {
        singletonKey: reportJobKey(data.request),
        group: { id: data.credential, tier: data.credential },
        heartbeatSeconds: settings.heartbeatSeconds,
        retryLimit: settings.retryLimit,
        retryDelay: settings.retryDelaySeconds,
        retryBackoff: true,
        retryDelayMax: RETRY_DELAY_MAX_SECONDS,
      });
    },
    async park(queue, attempt, delaySeconds, data) {
      // started_on cleared: pg-boss counts a claim of a job that started before as a retry.
      const parked = await fetchPool.query(
        `update ${jobTable}
            set state = 'created', started_on = null, heartbeat_on = null, data = $4::jsonb,
                start_after = ${QUEUE_SCHEMA}.job_now() + make_interval(secs => $5)
          where name = $1 and id = $2::uuid and retry_count = $3 and state = 'active'`,
        [queue, attempt.id, attempt.retryCount, JSON.stringify(data), delaySeconds],
      );
      return parked.rowCount === 1;
    },
    async wake(reportName, windowKeys) {
      if (windowKeys.length === 0) return 0;
      const woken = await fetchPool.query(
        `update ${jobTable} set start_after = ${QUEUE_SCHEMA}.job_now()
          where name = $1 and singleton_key = any($2::text[]) and state = 'created'
            and data->>'waitingFor' = $3 and start_after > ${QUEUE_SCHEMA}.job_now()`,
        [WINDOW_QUEUE, windowKeys, reportName],
      );
      return woken.rowCount ?? 0;
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
