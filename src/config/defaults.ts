/** Defaults of every setting, in one place, so that docs, schema and code agree. */
export const DEFAULT_CONFIG_PATH = './config.yaml';
export const DEFAULT_WAREHOUSE_PATH = './data/warehouse';
export const DEFAULT_ENVIRONMENT = 'test';
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
export const DEFAULT_HEADERS_TIMEOUT_MS = 60_000;
export const DEFAULT_BODY_TIMEOUT_MS = 120_000;
export const DEFAULT_CONNECTIONS_PER_HOST = 4;
/** Windows in flight per API credential across every worker on the warehouse (queue group concurrency). */
export const DEFAULT_MAX_CONCURRENT_WINDOWS = 8;
/** A worker that sends no heartbeat for this long has its windows' jobs retried by another. */
export const DEFAULT_QUEUE_HEARTBEAT_SECONDS = 30;
/** Retries of a failed window's job before it goes to the dead-letter queue, and the first delay. */
export const DEFAULT_QUEUE_RETRY_LIMIT = 3;
export const DEFAULT_QUEUE_RETRY_DELAY_SECONDS = 30;
export const DEFAULT_RETRY_ATTEMPTS = 6;
export const DEFAULT_RETRY_MIN_DELAY_MS = 500;
export const DEFAULT_RETRY_MAX_DELAY_MS = 30_000;
export const DEFAULT_RETRY_MAX_TOTAL_MS = 300_000;
export const DEFAULT_LOG_LEVEL = 'info';
export const DEFAULT_LOOKBACK_DAYS = 3;
export const DEFAULT_WINDOW_DAYS = 1;
export const MAX_WINDOW_DAYS = 31;
export const DEFAULT_PIPELINE_CONCURRENCY = 2;
export const DEFAULT_GLOBAL_CONCURRENCY = 4;
export const DEFAULT_READY_AFTER_HOURS = 6;
export const DEFAULT_NOT_READY_HORIZON_HOURS = 72;
export const DEFAULT_REJECT_THRESHOLD = 0.01;
export const DEFAULT_PAGE_LIMIT = 2000;
export const DEFAULT_LEASE_SECONDS = 900;
export const DEFAULT_METRICS_PORT = 9464;
/** Loopback only: the daemon's HTTP server is not exposed unless asked (the container asks). */
export const DEFAULT_METRICS_HOST = '127.0.0.1';
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 60_000;
export const DEFAULT_START_DATE_DAYS_AGO = 7;
/**
 * Windows before startDate (gaps, failed ones) one run or scheduled pass loads at most, oldest
 * first, after the newest: a year of one pipeline and two organizations, so a warehouse catches up
 * in a few passes without one pass taking all night.
 */
export const DEFAULT_MAX_CATCH_UP_WINDOWS = 1000;
export const DEFAULT_SCHEMA_CHANGES = 'evolve';
/**
 * A pipeline whose newest loaded window ended longer ago than this is stale (status page, alerts):
 * a daily window is complete some hours after its day ends and loaded at the next scheduled run,
 * so a healthy daily pipeline's lag stays under about 31 hours.
 */
export const DEFAULT_FRESHNESS_HOURS = 48;
/** A window whose rejected rows are more than this share of its rows raises a rejects alert. */
export const DEFAULT_ALERT_REJECTS_SHARE = 0.01;
/** Attempts to deliver one alert to one webhook, with exponential backoff from the first delay. */
export const DEFAULT_ALERT_ATTEMPTS = 5;
export const DEFAULT_ALERT_RETRY_DELAY_MS = 1_000;
