import { InvalidArgumentError } from 'commander';
import type { Command } from 'commander';
import { startScheduler } from '../schedule/scheduler.js';
import { readStatus } from '../state/status.js';
import { lastSchedulePasses } from '../state/runs.js';
import { CybsError } from '../errors.js';
import type { CliContext } from './context.js';
import { splitList } from './run.js';
import { openQueueWork, runPass } from './run-pass.js';
import { createRuntime } from './runtime.js';
import { serveStatusPage } from './status-page.js';
import { collectProcessMetrics } from '../observability/metrics.js';
import { evaluateAlertsLogged } from './alerts.js';
import type { Runtime } from './runtime.js';
import { SIMULATOR_OPTION } from './service-access.js';
import { selectPipelines } from '../pipeline/resolve-pipelines.js';

/** How often the daemon evaluates the alerts between passes (a pipeline goes stale without one). */
const ALERT_INTERVAL_MS = 5 * 60_000;

/**
 * The reconciliation checks' failures after a pass, as the gauge cybs_etl_reconciliation_failures
 * (computed once a pass, not at every scrape: the checks read the whole warehouse).
 */
async function exportCheckCounts(rt: Runtime): Promise<void> {
  try {
    const { checkCounts } = await import('../analytics/run-checks.js');
    const counts = await checkCounts(rt.warehouse.db);
    rt.metrics.reconciliationFailures.reset();
    for (const c of counts)
      rt.metrics.reconciliationFailures.set(
        { check: c.check, organization_id: c.organizationId },
        c.failures,
      );
  } catch (error) {
    rt.logger.warn({ error: (error as Error).message }, 'reconciliation checks not counted');
  }
}

export function registerScheduleCommand(program: Command, ctx: CliContext): void {
  program
    .command('schedule')
    .description(
      'run the pipelines on their cron schedules until stopped (SIGTERM/SIGINT); serves /healthz, /readyz and /metrics',
    )
    .option('--pipelines <names>', 'comma-separated pipelines (default: the enabled ones)', splitList)
    .option(
      '--port <n>',
      'port of /healthz, /readyz and /metrics (default: schedule.metricsPort)',
      portNumber,
    )
    .option('--no-catch-up', 'do not run every pipeline once at start')
    .option('--no-work', 'only plan: enqueue the due windows for `cybs-etl worker` processes, load none here')
    .option(...SIMULATOR_OPTION)
    .action(
      async (opts: {
        pipelines?: string[];
        port?: number;
        catchUp: boolean;
        work: boolean;
        simulator: boolean;
      }) => {
        const logger = await ctx.logger();
        const rt = await createRuntime(ctx, {
          defs: ctx.pipelines,
          now: ctx.now(),
          announce: (line) => logger.warn(line),
          simulator: opts.simulator,
          ...(opts.pipelines ? { selected: opts.pipelines } : {}),
        });
        const pipelines = selectPipelines(rt.pipelines, opts.pipelines);
        collectProcessMetrics(rt.metrics);
        for (const [name, reason] of rt.unavailable) rt.logger.error({ pipeline: name }, reason);
        // Every fire plans and enqueues; the daemon works the queue too unless --no-work.
        const work = await openQueueWork(rt, {
          work: opts.work,
          concurrency: rt.config.defaults.globalConcurrency,
        });
        const alertDeps = () => ({
          db: rt.warehouse.db,
          config: rt.config,
          env: ctx.io.env,
          logger: rt.logger,
          now: new Date(),
        });
        const env = ctx.env();
        const host = env.metricsHost ?? rt.config.schedule.metricsHost;
        const port = opts.port ?? rt.config.schedule.metricsPort;
        const address = {
          host,
          port,
          hostSetting: env.metricsHost ? 'CYBS_METRICS_HOST' : 'schedule.metricsHost',
          portSetting: opts.port !== undefined ? '--port' : 'schedule.metricsPort',
        };
        const scheduler = await startScheduler(
          {
            logger: rt.logger,
            metrics: rt.metrics,
            runPass: async (selected, trigger, signals, firedAt) => {
              const summary = await runPass(rt, {
                command: 'schedule',
                trigger,
                ...(firedAt ? { firedAt } : {}),
                pipelines: selected,
                signal: signals.abort,
                drain: signals.drain,
                queue: { queue: work.queue, detach: !opts.work },
              });
              rt.logger.info(
                { runId: summary.runId, windows: summary.windows, rows: summary.rowsLoaded },
                'pass finished',
              );
              await exportCheckCounts(rt);
              await evaluateAlertsLogged(alertDeps());
            },
            lastPasses: (names) => lastSchedulePasses(rt.warehouse.db, names),
            statusPage: serveStatusPage(rt.warehouse.db, rt.config, rt.pipelines),
            refreshGauges: async () => {
              const { pipelines: rows } = await readStatus(rt.warehouse.db, new Date());
              rt.metrics.windowsByStatus.reset();
              rt.metrics.lagSeconds.reset();
              for (const r of rows) {
                for (const [status, n] of Object.entries(r.windows))
                  rt.metrics.windowsByStatus.inc({ pipeline: r.pipeline, status }, n);
                if (r.lagSeconds !== null)
                  rt.metrics.lagSeconds.set(
                    { pipeline: r.pipeline, organization_id: r.organizationId },
                    r.lagSeconds,
                  );
              }
            },
          },
          {
            pipelines: pipelines.filter((p) => !rt.unavailable.has(p.name)),
            catchUp: opts.catchUp,
            metricsPort: port,
            metricsHost: host,
            shutdownTimeoutMs: rt.config.schedule.shutdownTimeoutMs,
          },
        ).catch(async (error: unknown) => {
          await work.stop(0);
          throw listenError(error, address) ?? error;
        });
        ctx.io.stdout.write(
          `cybs-etl schedule: ${scheduler.tasks.size} pipelines scheduled; the status page (/), /healthz, /readyz and /metrics on port ${scheduler.port} of ${host}. Stop with Ctrl-C or SIGTERM.\n`,
        );
        const stop = (signal: string) => {
          rt.logger.info({ signal }, 'shutdown requested');
          void scheduler.stop();
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
        // Staleness comes without a pass: the alerts are evaluated between passes too.
        const alertTimer =
          rt.config.alerts.webhooks.length > 0
            ? setInterval(() => void evaluateAlertsLogged(alertDeps()), ALERT_INTERVAL_MS).unref()
            : undefined;
        await scheduler.stopped;
        clearInterval(alertTimer);
        // Windows this daemon is loading finish within the shutdown timeout, else roll back and are requeued.
        await work.stop(rt.config.schedule.shutdownTimeoutMs);
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        ctx.io.stdout.write('cybs-etl schedule: stopped cleanly.\n');
      },
    );
}

/** `--port N`: a TCP port, 0 for any free one. */
function portNumber(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n > 65535) {
    throw new InvalidArgumentError('expected a port number from 0 to 65535.');
  }
  return n;
}

interface ServerAddress {
  host: string;
  port: number;
  hostSetting: string;
  portSetting: string;
}

/** The HTTP server could not listen where it was told to: why, and which setting to change. */
function listenError(error: unknown, a: ServerAddress): CybsError | undefined {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  const where = `${a.host}:${a.port}`;
  const sentence: Record<string, [string, number]> = {
    EADDRINUSE: [
      `Port ${a.port} on ${a.host} is already in use; stop what holds it or choose another port (${a.portSetting}).`,
      1,
    ],
    EACCES: [
      `Port ${a.port} on ${a.host} needs privileges this user lacks; choose a port above 1023 (${a.portSetting}).`,
      2,
    ],
    EADDRNOTAVAIL: [
      `${a.host} is not an address of this machine, so ${where} cannot be served; correct ${a.hostSetting} (127.0.0.1 for this machine only, 0.0.0.0 for every interface).`,
      2,
    ],
    ENOTFOUND: [
      `The host name ${a.host} does not resolve, so ${where} cannot be served; correct ${a.hostSetting} (127.0.0.1 for this machine only, 0.0.0.0 for every interface).`,
      2,
    ],
  };
  const known = code ? sentence[code] : undefined;
  if (!known) return undefined;
  return new CybsError('SCHEDULE_LISTEN', known[0], {
    stage: 'schedule',
    exitCode: known[1],
    cause: error,
    context: { host: a.host, port: a.port },
  });
}
