import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import cron from 'node-cron';
import type { ScheduledTask } from 'node-cron';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { ResolvedPipeline } from '../pipeline/resolve-pipelines.js';
import type { SchedulePass } from '../state/runs.js';
import { errorMessage } from '../errors.js';
import { judgeReadiness, READY_GRACE_MS } from './readiness.js';

/**
 * Runs one pass over the given pipelines (a run row, windows, summary); provided by the command.
 * `firedAt`: the cron fire's scheduled time, the same in every instance (none for a catch-up pass).
 */
export type RunPass = (
  pipelines: ResolvedPipeline[],
  trigger: string,
  signals: { abort: AbortSignal; drain: AbortSignal },
  firedAt?: Date,
) => Promise<void>;

export interface SchedulerOptions {
  pipelines: readonly ResolvedPipeline[];
  /** Run every pipeline once at start, to catch up windows missed while the daemon was down. */
  catchUp: boolean;
  metricsPort: number;
  metricsHost: string;
  shutdownTimeoutMs: number;
  /** How long a due fire may go without a pass before /readyz calls it stale (READY_GRACE_MS). */
  readyGraceMs?: number;
}

export interface SchedulerDeps {
  logger: Logger;
  metrics: Metrics;
  runPass: RunPass;
  /** Refresh gauges (windows by status, lag) before /metrics answers. */
  refreshGauges?: () => Promise<void>;
  /** The status page at `/` (read-only HTML). */
  statusPage?: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  /** The newest pass of each pipeline in etl.runs: /readyz's query of the warehouse. */
  lastPasses?: (pipelines: readonly string[]) => Promise<ReadonlyMap<string, SchedulePass>>;
}

/** /readyz waits this long for the warehouse; a slower one is not ready. */
const READY_QUERY_TIMEOUT_MS = 5_000;

export interface RunningScheduler {
  /** Port the health and metrics server listens on. */
  port: number;
  tasks: Map<string, ScheduledTask>;
  /** Stop the cron tasks, let in-flight passes finish (or abort them after the timeout), close the server. */
  stop(): Promise<void>;
  /** Resolves when stop() has finished. */
  stopped: Promise<void>;
}

/**
 * The `cybs-etl schedule` daemon: a node-cron task per pipeline in its time zone, no overlapping
 * passes of one pipeline in an instance (every instance may fire: a pass plans and enqueues its
 * windows, and the window queue's singleton keys make one job of each window), catch-up at start,
 * the status page at /, /healthz (liveness), /readyz (readiness.ts) and Prometheus /metrics. The HTTP
 * server listens before any task starts, so an address that cannot be used fails the start with
 * nothing left running.
 */
export async function startScheduler(
  deps: SchedulerDeps,
  options: SchedulerOptions,
): Promise<RunningScheduler> {
  const controller = new AbortController();
  const draining = new AbortController();
  const inFlight = new Set<Promise<void>>();
  const tasks = new Map<string, ScheduledTask>();
  const track = (p: Promise<void>) => {
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
    return p;
  };
  const busy = new Set<string>();
  const lastDue = new Map<string, Date>();
  const pass = (pipeline: ResolvedPipeline, trigger: string, firedAt?: Date) => {
    if (busy.has(pipeline.name)) {
      deps.logger.warn({ pipeline: pipeline.name }, 'previous pass still running; this fire is skipped');
      return Promise.resolve();
    }
    busy.add(pipeline.name);
    return track(
      deps
        .runPass([pipeline], trigger, { abort: controller.signal, drain: draining.signal }, firedAt)
        .catch((error) => deps.logger.error({ err: error, pipeline: pipeline.name }, 'scheduled pass failed'))
        .finally(() => busy.delete(pipeline.name)),
    );
  };

  const readiness = async () => {
    if (draining.signal.aborted) return { status: 'stopping' };
    const names = options.pipelines.map((p) => p.name);
    let lastPasses: ReadonlyMap<string, SchedulePass> | undefined = new Map();
    let warehouseError: string | undefined;
    if (deps.lastPasses) {
      try {
        lastPasses = await withTimeout(deps.lastPasses(names), READY_QUERY_TIMEOUT_MS);
      } catch (error) {
        lastPasses = undefined;
        warehouseError = errorMessage(error);
      }
    }
    const judged = judgeReadiness({
      now: new Date(),
      pipelines: names,
      lastPasses,
      ...(warehouseError !== undefined ? { warehouseError } : {}),
      lastDue,
      graceMs: options.readyGraceMs ?? READY_GRACE_MS,
    });
    return { status: judged.ready ? 'ready' : 'not ready', ...judged };
  };

  // Imported here, not at the top: an ESM import of node:http loads Node's own undici (its
  // WebSocket getters) in every command that bundles this module, served or not.
  const { createServer } = await import('node:http');
  const server: Server = createServer((req, res) => {
    const url = req.url ?? '/';
    if (url.startsWith('/healthz')) {
      res.writeHead(draining.signal.aborted ? 503 : 200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          status: draining.signal.aborted ? 'stopping' : 'ok',
          tasks: [...tasks].map(([name, t]) => ({
            pipeline: name,
            status: t.getStatus(),
            next: t.getNextRun(),
          })),
          running: [...busy],
        }),
      );
      return;
    }
    if (url.startsWith('/readyz')) {
      void readiness().then(
        (body) => {
          res.writeHead(body.status === 'ready' ? 200 : 503, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        },
        (error: unknown) => {
          res.writeHead(503, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ status: 'not ready', error: errorMessage(error) }));
        },
      );
      return;
    }
    if (url.startsWith('/metrics')) {
      void (async () => {
        try {
          await deps.refreshGauges?.();
          res.writeHead(200, { 'content-type': deps.metrics.registry.contentType });
          res.end(await deps.metrics.registry.metrics());
        } catch (error) {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(`metrics unavailable: ${(error as Error).message}\n`);
        }
      })();
      return;
    }
    const path = url.split('?')[0];
    if (deps.statusPage && (path === '/' || path === '/index.html')) {
      deps.statusPage(req, res).catch((error: unknown) => {
        deps.logger.warn({ error: errorMessage(error) }, 'the status page could not be read');
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`status page unavailable: ${errorMessage(error)}\n`);
      });
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.metricsPort, options.metricsHost, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.metricsPort;
  deps.logger.info(
    { url: `http://${options.metricsHost}:${port}/metrics` },
    'health and metrics server listening',
  );

  for (const pipeline of options.pipelines) {
    const task = cron.createTask(
      pipeline.schedule.cron,
      (ctx) => {
        lastDue.set(pipeline.name, new Date());
        return pass(pipeline, 'schedule', new Date(Math.floor(ctx.date.getTime() / 1000) * 1000));
      },
      {
        name: `cybs-etl:${pipeline.name}`,
        timezone: pipeline.schedule.timezone,
        noOverlap: true,
        suppressMissedWarning: true,
      },
    );
    await task.start();
    tasks.set(pipeline.name, task);
    deps.logger.info(
      {
        pipeline: pipeline.name,
        cron: pipeline.schedule.cron,
        timezone: pipeline.schedule.timezone,
        next: task.getNextRun(),
      },
      'scheduled',
    );
  }

  if (options.catchUp) {
    for (const pipeline of options.pipelines) {
      lastDue.set(pipeline.name, new Date());
      void pass(pipeline, 'catch-up');
    }
  }

  let resolveStopped!: () => void;
  const stopped = new Promise<void>((r) => (resolveStopped = r));
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      deps.logger.info({ inFlight: inFlight.size }, 'stopping: no new fires; waiting for current windows');
      for (const task of tasks.values()) await task.stop();
      draining.abort();
      const all = Promise.allSettled([...inFlight]);
      const timer = setTimeout(() => {
        deps.logger.warn('shutdown timeout: aborting current windows (they roll back and are released)');
        controller.abort();
      }, options.shutdownTimeoutMs);
      timer.unref();
      // Windows stop being claimed immediately; in-flight ones finish unless the timeout aborts them.
      await all;
      clearTimeout(timer);
      controller.abort();
      for (const task of tasks.values()) await task.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      resolveStopped();
    })();
    return stopping;
  };
  return { port, tasks, stop, stopped };
}

/** The promise's value, or a rejection once `ms` have passed without one. */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
