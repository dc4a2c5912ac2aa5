import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { createProgressReporter } from '../observability/progress.js';
import { dayNumber } from '../pipeline/time-zones.js';
import { configError } from '../errors.js';
import type { CliContext } from './context.js';
import { splitList } from './run.js';
import { formatSummary, prepareCommand, runPass } from './run-pass.js';
import { SIMULATOR_OPTION } from './service-access.js';

function isoDay(value: string): string {
  try {
    dayNumber(value);
    return value;
  } catch {
    throw new InvalidArgumentError('expected a date written YYYY-MM-DD.');
  }
}

function positive(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 64)
    throw new InvalidArgumentError('expected a whole number from 1 to 64.');
  return n;
}

export function registerBackfillCommand(program: Command, ctx: CliContext): void {
  program
    .command('backfill')
    .description('load every window of a date range; loaded windows are skipped unless --force')
    .requiredOption('--from <date>', 'first day (YYYY-MM-DD, in each pipeline time zone)', isoDay)
    .requiredOption('--to <date>', 'last day, inclusive (YYYY-MM-DD)', isoDay)
    .option('--pipelines <names>', 'comma-separated pipelines (default: the enabled ones)', splitList)
    .option('--organization-id <id>', 'only this organization')
    .option('--concurrency <n>', 'windows in flight overall', positive)
    .option('--force', 're-load windows that are already loaded', false)
    .option(
      '--no-one-time-reports',
      'do not create one-time reports for days no subscription report covers (they stay not ready)',
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
        simulator: boolean;
      }) => {
        if (dayNumber(opts.to) < dayNumber(opts.from)) {
          throw configError(`--to ${opts.to} is before --from ${opts.from}.`);
        }
        const started = performance.now();
        const out = ctx.io.stdout;
        const { rt, pipelines, controller, dispose } = await prepareCommand(
          ctx,
          opts.pipelines,
          (s) => `\n${s}: stopping cleanly; run the same command again to continue where it stopped.\n`,
          {
            simulator: opts.simulator,
            ...(opts.oneTimeReports ? { oneTimeReports: { range: { from: opts.from, to: opts.to } } } : {}),
          },
        );
        const progress = createProgressReporter(ctx.io.stderr, rt.logger);
        try {
          const summary = await runPass(rt, {
            command: 'backfill',
            trigger: 'cli',
            pipelines,
            range: { from: opts.from, to: opts.to },
            force: opts.force,
            ...(opts.organizationId ? { organizationId: opts.organizationId } : {}),
            ...(opts.concurrency ? { concurrency: opts.concurrency } : {}),
            signal: controller.signal,
            onProgress: (e) => progress.update(e),
          });
          progress.stop();
          out.write(formatSummary(summary, (performance.now() - started) / 1000));
          if (summary.windows.failed > 0 || summary.interrupted) ctx.exitCode = 1;
        } finally {
          progress.stop();
          dispose();
        }
      },
    );
}
