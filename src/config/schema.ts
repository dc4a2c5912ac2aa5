import { validateDetailed as validateCron } from 'node-cron';
import { z } from 'zod';
import { isValidTimeZone, parseDay } from '../time/time-zones.js';
import { POSTGRES_URL_EXAMPLE, postgresUrlProblem } from './database-url.js';
import * as D from './defaults.js';
import { REPORT_NAME_PATTERN, subscriptionsSchema } from './subscriptions-schema.js';

export const DEPLOYMENTS = ['test', 'production', 'production-india'] as const;

/**
 * What a load does with a column its source has and its table lacks (like dlt's schema contract
 * for columns): `evolve` adds it (recorded in etl.schema_changes); `freeze` fails the window (or
 * the import) naming the column, and the table keeps the columns it has.
 */
export const SCHEMA_CHANGES = ['evolve', 'freeze'] as const;
export type SchemaChanges = (typeof SCHEMA_CHANGES)[number];
export type Deployment = (typeof DEPLOYMENTS)[number];

/** A date written YYYY-MM-DD that is on the calendar (2024-02-30 is not). */
const isoDate = z.string().refine(isCalendarDate, 'expected a calendar date written YYYY-MM-DD');
const positiveInt = z.number().int().positive();
const organizationId = z
  .string()
  .regex(/^[a-zA-Z0-9_-]{1,32}$/, 'expected an organizationId of 1-32 letters, digits, "-" or "_"');

function isCalendarDate(date: string): boolean {
  try {
    parseDay(date);
    return true;
  } catch {
    return false;
  }
}

/** An IANA time zone this runtime knows, checked when the config loads (not when a task starts). */
const timeZone = z.string().superRefine((zone, ctx) => {
  if (!isValidTimeZone(zone)) {
    ctx.addIssue({
      code: 'custom',
      message: `unknown time zone "${zone}"; expected an IANA zone such as UTC or America/Chicago`,
    });
  }
});

/** A cron expression node-cron (the scheduler) accepts, checked when the config loads. */
const cronExpression = z.string().superRefine((expression, ctx) => {
  const { valid, errors } = validateCron(expression);
  if (!valid) {
    const why = errors.map((e) => e.message).join(', ');
    ctx.addIssue({
      code: 'custom',
      message: `"${expression}" is not a cron expression (${why}); expected five fields, minute hour day-of-month month day-of-week (or six, seconds first), such as "0 7 * * *"`,
    });
  }
});

export const scheduleSettingsSchema = z.strictObject({
  cron: cronExpression,
  timezone: timeZone.default('UTC'),
});

/** Per-pipeline settings; every key is optional and falls back to `defaults`. */
export const pipelineSettingsSchema = z.strictObject({
  enabled: z.boolean().default(true),
  /** Partner use: the merchants to load. Omitted: the credential's own organization. */
  organizations: z.array(organizationId).min(1).optional(),
  /**
   * Subscription report name (report-file pipelines): a name the service reads subscriptions by
   * (REPORT_NAME_PATTERN); it is sent in queries and names the downloaded file's spool.
   */
  reportName: z
    .string()
    .regex(
      REPORT_NAME_PATTERN,
      'expected the name of a subscription: 1-80 letters, digits, "-", "_" or "+" (the service reads subscriptions only by such names)',
    )
    .optional(),
  schedule: scheduleSettingsSchema.optional(),
  /** Time zone the windows are cut in; default: the subscription's (report files), else the schedule's. */
  timezone: timeZone.optional(),
  startDate: isoDate.optional(),
  lookbackDays: z.number().int().min(0).max(90).optional(),
  windowDays: z.number().int().min(1).max(D.MAX_WINDOW_DAYS).optional(),
  concurrency: positiveInt.max(32).optional(),
  pageLimit: z.number().int().min(1).max(2000).optional(),
  schemaChanges: z.enum(SCHEMA_CHANGES).optional(),
  /** Hours the newest loaded window may have ended ago before the pipeline is stale; default: defaults.freshnessHours. */
  freshnessHours: z
    .number()
    .positive()
    .max(24 * 366)
    .optional(),
});
export type PipelineSettings = z.infer<typeof pipelineSettingsSchema>;

/** `analytics:`, the cybs_analytics models' switch (what it does: src/config/analytics.ts). */
const analyticsSettingsSchema = z
  .strictObject({
    enabled: z.boolean().default(false),
    /** Time zone of the subscriptions the switch declares (their report days). */
    timezone: z
      .string()
      .default('UTC')
      .refine((tz) => isValidTimeZone(tz), {
        message: 'expected an IANA time zone such as UTC or America/New_York',
      }),
    /**
     * When the materialized views are refreshed: `after-run` (each run, backfill and idle worker
     * refreshes the views whose tables it loaded), or `manual` (never by the loader: a large
     * warehouse refreshes on its own schedule with `select cybs_analytics.refresh()`).
     */
    refresh: z.enum(['after-run', 'manual']).default('after-run'),
  })
  .prefault({});

export type AnalyticsSettings = z.infer<typeof analyticsSettingsSchema>;

export const ALERT_EVENTS = ['window_failed', 'pipeline_stale', 'schema_change', 'rejects'] as const;
export type AlertEvent = (typeof ALERT_EVENTS)[number];

/**
 * A webhook's URL: http(s), written in config.yaml as is or with `${VARIABLE}` parts that are read
 * from the environment when an alert is sent (a Slack webhook's path is its secret).
 */
const webhookUrl = z.string().superRefine((url, ctx) => {
  const probe = url.replace(/\$\{[A-Za-z_][A-Za-z0-9_]*\}/g, 'x');
  // A URL that starts with a variable (the whole URL from the environment) is checked when sent.
  if (/\$\{/.test(probe) || !(url.startsWith('${') || /^https?:\/\/[^\s/]+/.test(probe))) {
    ctx.addIssue({
      code: 'custom',
      message:
        'expected an http(s) URL, with any secret part from the environment as ${VARIABLE} (e.g. "${SLACK_WEBHOOK_URL}")',
    });
  }
});

const alertsSettingsSchema = z
  .strictObject({
    webhooks: z
      .array(
        z.strictObject({
          url: webhookUrl,
          /** The events this webhook is told about; all of ALERT_EVENTS when absent. */
          events: z.array(z.enum(ALERT_EVENTS)).min(1).optional(),
        }),
      )
      .default([]),
    /** A rejects alert when a window's rejected rows exceed this share of its rows. */
    rejectsShare: z.number().min(0).max(1).default(D.DEFAULT_ALERT_REJECTS_SHARE),
    attempts: z.number().int().min(1).max(20).default(D.DEFAULT_ALERT_ATTEMPTS),
    retryDelayMs: z.number().int().min(0).max(600_000).default(D.DEFAULT_ALERT_RETRY_DELAY_MS),
  })
  .prefault({});

export type AlertsSettings = z.infer<typeof alertsSettingsSchema>;

/** The freshness limit of a pipeline, in seconds (pipelines.<name>.freshnessHours, else the default). */
export function freshnessSeconds(config: Config, pipeline: string): number {
  return Math.round((config.pipelines[pipeline]?.freshnessHours ?? config.defaults.freshnessHours) * 3600);
}

export const configSchema = z.strictObject({
  warehouse: z
    .strictObject({
      /** PostgreSQL URL; DATABASE_URL wins. Omit both for the embedded warehouse (a PostgreSQL server cybs-etl runs itself at `path`). */
      url: z
        .string()
        .superRefine((url, ctx) => {
          const problem = postgresUrlProblem(url);
          if (problem) {
            ctx.addIssue({
              code: 'custom',
              message: `${problem}; expected ${POSTGRES_URL_EXAMPLE}, or no url for the embedded warehouse`,
            });
          }
        })
        .optional(),
      path: z.string().min(1).default(D.DEFAULT_WAREHOUSE_PATH),
    })
    .prefault({}),
  api: z
    .strictObject({
      environment: z.enum(DEPLOYMENTS).default(D.DEFAULT_ENVIRONMENT),
      connectTimeoutMs: positiveInt.default(D.DEFAULT_CONNECT_TIMEOUT_MS),
      headersTimeoutMs: positiveInt.default(D.DEFAULT_HEADERS_TIMEOUT_MS),
      bodyTimeoutMs: positiveInt.default(D.DEFAULT_BODY_TIMEOUT_MS),
      connectionsPerHost: positiveInt.max(64).default(D.DEFAULT_CONNECTIONS_PER_HOST),
      /**
       * Windows in flight at once with one API credential, across every `worker` on the warehouse,
       * so that a fleet cannot ask more of one key than the service allows it.
       */
      maxConcurrentWindows: positiveInt.max(256).default(D.DEFAULT_MAX_CONCURRENT_WINDOWS),
      retry: z
        .strictObject({
          attempts: z.number().int().min(1).max(20).default(D.DEFAULT_RETRY_ATTEMPTS),
          minDelayMs: z.number().int().min(0).default(D.DEFAULT_RETRY_MIN_DELAY_MS),
          maxDelayMs: positiveInt.default(D.DEFAULT_RETRY_MAX_DELAY_MS),
          maxTotalMs: positiveInt.default(D.DEFAULT_RETRY_MAX_TOTAL_MS),
        })
        .prefault({}),
    })
    .prefault({}),
  log: z
    .strictObject({
      level: z
        .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
        .default(D.DEFAULT_LOG_LEVEL),
    })
    .prefault({}),
  defaults: z
    .strictObject({
      startDate: isoDate.optional(),
      lookbackDays: z.number().int().min(0).max(90).default(D.DEFAULT_LOOKBACK_DAYS),
      windowDays: z.number().int().min(1).max(D.MAX_WINDOW_DAYS).default(D.DEFAULT_WINDOW_DAYS),
      concurrency: positiveInt.max(32).default(D.DEFAULT_PIPELINE_CONCURRENCY),
      globalConcurrency: positiveInt.max(64).default(D.DEFAULT_GLOBAL_CONCURRENCY),
      readyAfterHours: z.number().min(0).max(240).default(D.DEFAULT_READY_AFTER_HOURS),
      notReadyHorizonHours: z
        .number()
        .min(1)
        .max(24 * 60)
        .default(D.DEFAULT_NOT_READY_HORIZON_HOURS),
      rejectThreshold: z.number().min(0).max(1).default(D.DEFAULT_REJECT_THRESHOLD),
      leaseSeconds: positiveInt.default(D.DEFAULT_LEASE_SECONDS),
      maxCatchUpWindows: z.number().int().min(0).max(1_000_000).default(D.DEFAULT_MAX_CATCH_UP_WINDOWS),
      organizations: z.array(organizationId).min(1).optional(),
      schemaChanges: z.enum(SCHEMA_CHANGES).default(D.DEFAULT_SCHEMA_CHANGES),
      freshnessHours: z
        .number()
        .positive()
        .max(24 * 366)
        .default(D.DEFAULT_FRESHNESS_HOURS),
    })
    .prefault({}),
  /** The window queue (pg-boss, in the warehouse) that `worker` processes take windows from. */
  queue: z
    .strictObject({
      /** A worker silent this long (killed, cut off) loses its windows' jobs to another worker. */
      heartbeatSeconds: z.number().int().min(10).max(3600).default(D.DEFAULT_QUEUE_HEARTBEAT_SECONDS),
      /** Retries of a failed window, with exponential backoff from retryDelaySeconds, before the dead-letter queue. */
      retryLimit: z.number().int().min(0).max(20).default(D.DEFAULT_QUEUE_RETRY_LIMIT),
      retryDelaySeconds: z.number().int().min(1).max(3600).default(D.DEFAULT_QUEUE_RETRY_DELAY_SECONDS),
    })
    .prefault({}),
  schedule: z
    .strictObject({
      metricsPort: z.number().int().min(0).max(65535).default(D.DEFAULT_METRICS_PORT),
      /** Address of /healthz, /readyz and /metrics; CYBS_METRICS_HOST wins (0.0.0.0 in the container). */
      metricsHost: z.string().min(1).default(D.DEFAULT_METRICS_HOST),
      shutdownTimeoutMs: positiveInt.default(D.DEFAULT_SHUTDOWN_TIMEOUT_MS),
    })
    .prefault({}),
  pipelines: z
    .record(z.string().regex(/^[a-z][a-z0-9_]*$/, 'expected a pipeline name'), pipelineSettingsSchema)
    .default({}),
  /** Report subscriptions as code (cybs-etl subscriptions plan/apply); absent: not managed. */
  subscriptions: subscriptionsSchema.optional(),
  /** The cybs_analytics models' pipelines and subscriptions in one switch (src/config/analytics.ts). */
  analytics: analyticsSettingsSchema,
  /** Webhooks told about failed windows, stale pipelines, schema changes and rejects (src/commands/alerts.ts). */
  alerts: alertsSettingsSchema,
});

export type Config = z.infer<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;
