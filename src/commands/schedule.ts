import type { Command } from 'commander';
import { PIPELINES } from '../../pipelines/index.js';
import { leaseOwner } from '../pipeline/run-pipelines.js';
import { PgRunCoordinator } from '../schedule/pg-run-coordinator.js';
import { startScheduler } from '../schedule/scheduler.js';
import { readStatus } from '../state/status.js';
import type { CliContext } from './context.js';
import { splitList } from './run.js';
import { runPass } from './run-pass.js';
import { createRuntime } from './runtime.js';
import type { Runtime } from './runtime.js';
import { selectPipelines } from '../pipeline/resolve-pipelines.js';

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
      'run the pipelines on their cron schedules until stopped (SIGTERM/SIGINT); serves /healthz and /metrics',
    )
    .option('--pipelines <names>', 'comma-separated pipelines (default: the enabled ones)', splitList)
    .option('--port <n>', 'port of /healthz and /metrics (default: schedule.metricsPort)', (v) => Number(v))
    .option('--no-catch-up', 'do not run every pipeline once at start')
    .action(async (opts: { pipelines?: string[]; port?: number; catchUp: boolean }) => {
      const logger = await ctx.logger();
      const rt = await createRuntime(ctx, {
        defs: PIPELINES,
        now: ctx.now(),
        announce: (line) => logger.warn(line),
        ...(opts.pipelines ? { selected: opts.pipelines } : {}),
      });
      const pipelines = selectPipelines(rt.pipelines, opts.pipelines);
      for (const [name, reason] of rt.unavailable) rt.logger.error({ pipeline: name }, reason);
      const owner = leaseOwner();
      const scheduler = await startScheduler(
        {
          logger: rt.logger,
          metrics: rt.metrics,
          runPass: async (selected, trigger, signals) => {
            const summary = await runPass(rt, {
              command: 'schedule',
              trigger,
              pipelines: selected,
              signal: signals.abort,
              drain: signals.drain,
            });
            rt.logger.info(
              { runId: summary.runId, windows: summary.windows, rows: summary.rowsLoaded },
              'pass finished',
            );
            await exportCheckCounts(rt);
          },
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
          coordinator: new PgRunCoordinator(rt.warehouse.db, owner),
          catchUp: opts.catchUp,
          metricsPort: opts.port ?? rt.config.schedule.metricsPort,
          metricsHost: rt.config.schedule.metricsHost,
          shutdownTimeoutMs: rt.config.schedule.shutdownTimeoutMs,
        },
      );
      ctx.io.stdout.write(
        `cybs-etl schedule: ${scheduler.tasks.size} pipelines scheduled; /healthz and /metrics on port ${scheduler.port}. Stop with Ctrl-C or SIGTERM.\n`,
      );
      const stop = (signal: string) => {
        rt.logger.info({ signal }, 'shutdown requested');
        void scheduler.stop();
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      await scheduler.stopped;
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      ctx.io.stdout.write('cybs-etl schedule: stopped cleanly.\n');
    });
}
