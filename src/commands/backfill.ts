import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { createProgressReporter } from '../observability/progress.js';
import { dayNumber } from '../time/time-zones.js';
import { configError } from '../errors.js';
import type { CliContext } from './context.js';
import { splitList, windowConcurrency } from './run.js';
import { formatSummary, prepareCommand, runPass } from './run-pass.js';
import { planJobs, planPipelineWindows } from '../pipeline/run-pipelines.js';
import { toJobData } from '../queue/window-jobs.js';
import type { Runtime } from './runtime.js';
import type { CalendarWindow } from '../pipeline/plan-windows.js';
import type { ResolvedPipeline } from '../pipeline/resolve-pipelines.js';
import { SIMULATOR_OPTION } from './service-access.js';

export function isoDay(value: string): string {
  try {
    dayNumber(value);
    return value;
  } catch {
    throw new InvalidArgumentError('expected a date written YYYY-MM-DD.');
  }
}

export function registerBackfillCommand(program: Command, ctx: CliContext): void {
  program
    .command('backfill')
    .description('load every window of a date range; loaded windows are skipped unless --force')
    .requiredOption('--from <date>', 'first day (YYYY-MM-DD, in each pipeline time zone)', isoDay)
    .requiredOption('--to <date>', 'last day, inclusive (YYYY-MM-DD)', isoDay)
    .option('--pipelines <names>', 'comma-separated pipelines (default: the enabled ones)', splitList)
    .option('--organization-id <id>', 'only this organization')
    .option('--concurrency <n>', 'windows in flight overall', windowConcurrency)
    .option('--force', 're-load windows that are already loaded', false)
    .option(
      '--no-one-time-reports',
      'do not create one-time reports for days no subscription report covers (they stay not ready)',
    )
    .option(
      '--detach',
      'only plan and enqueue the windows for `cybs-etl worker` processes (on this or other machines) to load',
      false,
    )
    .option(...SIMULATOR_OPTION)
    .action(
      async (opts: {
        from: string;
        to: string;
        pipelines?: string[];
        organizationId?: string;
        concurrency?: number;
        force: boolean;
        oneTimeReports: boolean;
        detach: boolean;
        simulator: boolean;
      }) => {
        if (dayNumber(opts.to) < dayNumber(opts.from)) {
          throw configError(`--to ${opts.to} is before --from ${opts.from}.`);
        }
        const started = performance.now();
        const out = ctx.io.stdout;
        const range = { from: opts.from, to: opts.to };
        const { rt, pipelines, controller, dispose } = await prepareCommand(
          ctx,
          opts.pipelines,
          (s) => `\n${s}: stopping cleanly; run the same command again to continue where it stopped.\n`,
          { simulator: opts.simulator },
        );
        let progress: ReturnType<typeof createProgressReporter> | undefined;
        try {
          // A range that reaches past the newest available window stops there, and says so.
          const stop = whereRangeStops(
            pipelines.filter((p) => !rt.unavailable.has(p.name)),
            range,
            rt.now(),
            opts.organizationId,
          );
          if (stop) out.write(`${stop}\n\n`);
          if (opts.detach) {
            out.write(
              await enqueueRange(rt, {
                pipelines: pipelines.filter((p) => !rt.unavailable.has(p.name)),
                range,
                force: opts.force,
                ...(opts.organizationId ? { organizationId: opts.organizationId } : {}),
                oneTime: opts.oneTimeReports,
              }),
            );
            for (const [name, reason] of rt.unavailable) {
              if (pipelines.some((p) => p.name === name)) {
                out.write(`${name}: not enqueued: ${reason}\n`);
                ctx.exitCode = 1;
              }
            }
            return;
          }
          progress = createProgressReporter(ctx.io.stderr, rt.logger, undefined, ctx.terminal());
          const summary = await runPass(rt, {
            command: 'backfill',
            trigger: 'cli',
            pipelines,
            range,
            force: opts.force,
            ...(opts.organizationId ? { organizationId: opts.organizationId } : {}),
            ...(opts.concurrency ? { concurrency: opts.concurrency } : {}),
            ...(opts.oneTimeReports ? { oneTime: range } : {}),
            signal: controller.signal,
            onProgress: (e) => progress?.update(e),
          });
          progress.stop();
          out.write(formatSummary(summary, (performance.now() - started) / 1000));
          // As after a run: the webhooks hear of the windows it failed, and of those it resolved.
          const { evaluateAlertsAfterPass } = await import('./alerts.js');
          await evaluateAlertsAfterPass(rt, ctx.io.env);
          if (summary.windows.failed > 0 || summary.interrupted) ctx.exitCode = 1;
        } finally {
          progress?.stop();
          dispose();
        }
      },
    );
}

/**
 * backfill --detach: plan the range's windows (creating their etl.windows rows) and enqueue them as
 * jobs for workers; returns the sentence that says how many were enqueued.
 */
async function enqueueRange(
  rt: Runtime,
  options: {
    pipelines: ResolvedPipeline[];
    range: { from: string; to: string };
    force: boolean;
    organizationId?: string;
    /** Windows no subscription report covers load from one-time reports. */
    oneTime: boolean;
  },
): Promise<string> {
  const jobs = await planJobs(rt.warehouse.db, { ...options, now: rt.now });
  const { openWindowQueue } = await import('../queue/window-queue.js');
  const queue = await openWindowQueue(rt.warehouse.connection, {
    logger: rt.logger,
    supervise: false,
    settings: rt.config.queue,
  });
  try {
    const { added, alreadyQueued } = await queue.enqueue(
      jobs.map((job) =>
        toJobData(job, null, rt.credentialGroup, options.oneTime ? options.range : undefined),
      ),
    );
    return (
      `Enqueued ${added} window(s) of ${options.range.from}..${options.range.to} for workers` +
      (alreadyQueued > 0 ? ` (${alreadyQueued} more were already queued or being loaded)` : '') +
      (jobs.length === 0 ? ': every window of the range is already loaded (--force loads them again)' : '') +
      '; start `cybs-etl worker` on one or more machines to load them, and `cybs-etl status` to follow.\n'
    );
  } finally {
    await queue.stop({ graceful: false, timeoutMs: 1_000 });
  }
}

/**
 * Where a backfill's range stops being available (planPipelineWindows leaves those windows out):
 * undefined when all of it is available; the sentence that says where it stops; a usage error when
 * none of it is (nothing is planned or written then).
 */
export function whereRangeStops(
  pipelines: readonly ResolvedPipeline[],
  range: { from: string; to: string },
  now: Date,
  organizationId?: string,
): string | undefined {
  let available = 0;
  let firstLater: { pipeline: ResolvedPipeline; window: CalendarWindow } | undefined;
  const newest = new Map<string, string>();
  for (const pipeline of pipelines) {
    for (const org of organizationId ? [organizationId] : pipeline.organizations) {
      const plan = planPipelineWindows(pipeline, org, { range, now });
      available += plan.windows.length;
      const last = plan.windows.at(-1);
      if (plan.notAvailable.length > 0) newest.set(pipeline.name, last?.windowKey ?? 'none');
      const later = plan.notAvailable[0];
      if (later && (!firstLater || later.end < firstLater.window.end))
        firstLater = { pipeline, window: later };
    }
  }
  if (!firstLater) return undefined;
  const hours = firstLater.pipeline.readyAfterHours;
  const rule = `a window can be loaded ${hours} hours (defaults.readyAfterHours) after it ends`;
  if (available === 0) {
    const from = new Date(firstLater.window.end.getTime() + hours * 3_600_000).toISOString();
    throw configError(
      `nothing of ${range.from}..${range.to} is available yet: ${rule}, so the first of its windows (${firstLater.pipeline.name} ${firstLater.window.windowKey}) can be loaded from ${from}.`,
    );
  }
  return (
    `The backfill stops at the newest available windows (${rule}): ` +
    [...newest].map(([name, key]) => `${name} ${key}`).join(', ') +
    '; the later windows of the range are left for a later run.'
  );
}
