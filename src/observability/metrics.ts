import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** The Prometheus metrics of one process (a registry of its own: no global state). */
export interface Metrics {
  registry: Registry;
  windows: Counter<'pipeline' | 'outcome'>;
  rowsLoaded: Counter<'pipeline'>;
  rowsRejected: Counter<'pipeline'>;
  windowDuration: Histogram<'pipeline' | 'outcome'>;
  apiRequests: Counter<'method' | 'endpoint' | 'status'>;
  apiRetries: Counter<'endpoint' | 'reason'>;
  lagSeconds: Gauge<'pipeline' | 'organization_id'>;
  windowsByStatus: Gauge<'pipeline' | 'status'>;
  reconciliationFailures: Gauge<'check' | 'organization_id'>;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  const opts = { registers: [registry] };
  return {
    registry,
    windows: new Counter({
      name: 'cybs_etl_windows_total',
      help: 'Windows processed, by outcome.',
      labelNames: ['pipeline', 'outcome'],
      ...opts,
    }),
    rowsLoaded: new Counter({
      name: 'cybs_etl_rows_loaded_total',
      help: 'Rows merged into cybs tables.',
      labelNames: ['pipeline'],
      ...opts,
    }),
    rowsRejected: new Counter({
      name: 'cybs_etl_rows_rejected_total',
      help: 'Rows written to etl.rejects.',
      labelNames: ['pipeline'],
      ...opts,
    }),
    windowDuration: new Histogram({
      name: 'cybs_etl_window_duration_seconds',
      help: 'Time to extract, parse and load one window.',
      labelNames: ['pipeline', 'outcome'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180, 600],
      ...opts,
    }),
    apiRequests: new Counter({
      name: 'cybs_etl_api_requests_total',
      help: 'CyberSource API responses, by status (or network error).',
      labelNames: ['method', 'endpoint', 'status'],
      ...opts,
    }),
    apiRetries: new Counter({
      name: 'cybs_etl_api_retries_total',
      help: 'CyberSource API requests retried.',
      labelNames: ['endpoint', 'reason'],
      ...opts,
    }),
    lagSeconds: new Gauge({
      name: 'cybs_etl_lag_seconds',
      help: 'Seconds between now and the end of the newest loaded window (of a report pipeline: its report period).',
      labelNames: ['pipeline', 'organization_id'],
      ...opts,
    }),
    windowsByStatus: new Gauge({
      name: 'cybs_etl_windows',
      help: 'Windows in etl.windows, by status.',
      labelNames: ['pipeline', 'status'],
      ...opts,
    }),
    reconciliationFailures: new Gauge({
      name: 'cybs_etl_reconciliation_failures',
      help: 'Items failing each reconciliation check (cybs_analytics.rc_summary), as of the last pass.',
      labelNames: ['check', 'organization_id'],
      ...opts,
    }),
  };
}

/**
 * Add prom-client's process metrics (CPU, memory, heap, event-loop lag, handles, GC) to the
 * registry: for a long-running process that serves /metrics (the schedule daemon), not for every
 * command.
 */
export function collectProcessMetrics(metrics: Metrics): void {
  collectDefaultMetrics({ register: metrics.registry });
}

/** `/reporting/v3/report-downloads?x=1` → `report-downloads`, for a bounded label set. */
export function endpointLabel(path: string): string {
  const clean = path.split('?')[0] ?? path;
  const m = /^\/reporting\/v3\/([a-z-]+)/.exec(clean);
  if (m) return m[1]!;
  const t = /^\/(tms)\/v\d+\/([a-z-]+)/.exec(clean);
  return t ? `${t[1]}/${t[2]}` : 'other';
}
