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
import { SIMULATOR_OPTION } from './service-access.js';
import { selectPipelines } from '../pipeline/resolve-pipelines.js';

export function registerScheduleCommand(program: Command, ctx: CliContext): void {
  program
    .command('schedule')
    .description(
      'run the pipelines on their cron schedules until stopped (SIGTERM/SIGINT); serves /healthz and /metrics',
    )
    .option('--pipelines <names>', 'comma-separated pipelines (default: the enabled ones)', splitList)
    .option('--port <n>', 'port of /healthz and /metrics (default: schedule.metricsPort)', (v) => Number(v))
    .option('--no-catch-up', 'do not run every pipeline once at start')
    .option(...SIMULATOR_OPTION)
    .action(async (opts: { pipelines?: string[]; port?: number; catchUp: boolean; simulator: boolean }) => {
      const logger = await ctx.logger();
      const rt = await createRuntime(ctx, {
        defs: PIPELINES,
        now: ctx.now(),
        announce: (line) => logger.warn(line),
        simulator: opts.simulator,
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
