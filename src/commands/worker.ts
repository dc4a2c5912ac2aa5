import type { Command } from 'commander';
import type { CliContext } from './context.js';
import { interruptOnSignals, openQueueWork, refreshModels } from './run-pass.js';
import { windowConcurrency } from './run.js';
import { createRuntime } from './runtime.js';
import { SIMULATOR_OPTION } from './service-access.js';

/** How long a stopping worker lets its windows in flight finish before it rolls them back. */
const STOP_GRACE_MS = 30_000;

export function registerWorkerCommand(program: Command, ctx: CliContext): void {
  program
    .command('worker')
    .description(
      'load windows from the job queue in the warehouse until stopped (SIGTERM/SIGINT); start one per machine, or several',
    )
    .option(
      '--concurrency <n>',
      'windows in flight in this process (default: defaults.globalConcurrency)',
      windowConcurrency,
    )
    .option(...SIMULATOR_OPTION)
    .action(async (opts: { concurrency?: number; simulator: boolean }) => {
      const logger = await ctx.logger();
      // Every pipeline: a planner may enqueue any of them (backfill --pipelines), not only the enabled ones.
      const rt = await createRuntime(ctx, {
        defs: ctx.pipelines,
        now: ctx.now(),
        announce: (line) => logger.warn(line),
        simulator: opts.simulator,
        selected: ctx.pipelines.map((p) => p.name),
      });
      const perProcess = opts.concurrency ?? rt.config.defaults.globalConcurrency;
      const loadedSinceRefresh = new Set<string>();
      const work = await openQueueWork(rt, {
        work: true,
        concurrency: perProcess,
        onWindow: (data, outcome) => {
          if (outcome.kind === 'loaded' && outcome.rowsLoaded > 0) loadedSinceRefresh.add(data.pipeline);
        },
        // Once the queue is empty, the cybs_analytics materialized views whose tables this worker
        // loaded are refreshed, as a run refreshes them after its windows.
        onIdle: async () => {
          if (loadedSinceRefresh.size === 0) return;
          const pipelines = [...loadedSinceRefresh];
          loadedSinceRefresh.clear();
          await refreshModels(rt, { pipelines });
        },
      });
      rt.logger.info(
        { concurrency: perProcess, perCredential: rt.config.api.maxConcurrentWindows },
        'worker started; waiting for windows',
      );
      const stopped = new Promise<string>((resolve) => {
        const controller = new AbortController();
        const dispose = interruptOnSignals(controller, (signal) => {
          dispose();
          resolve(signal);
        });
      });
      const signal = await stopped;
      rt.logger.info(
        { signal, inFlight: work.worker?.inFlight ?? 0 },
        'worker stopping: windows in flight finish, or roll back and return to the queue',
      );
      await work.stop(STOP_GRACE_MS);
      rt.logger.info('worker stopped');
    });
}
