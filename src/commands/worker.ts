import type { Command } from 'commander';
import { leaseOwner } from '../pipeline/run-pipelines.js';
import { openWindowQueue } from '../queue/window-queue.js';
import { startWindowWorker } from '../queue/window-worker.js';
import { LEASE_LOCK_SPACE, releaseLeases } from '../state/windows.js';
import type { CliContext } from './context.js';
import { interruptOnSignals, refreshModels } from './run-pass.js';
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
      const owner = leaseOwner();
      const releaseOwnerLock = await rt.warehouse.holdAdvisoryLock(LEASE_LOCK_SPACE, owner);
      const queue = await openWindowQueue(rt.warehouse.connection, {
        logger: rt.logger,
        supervise: true,
        settings: rt.config.queue,
      });
      const perProcess = opts.concurrency ?? rt.config.defaults.globalConcurrency;
      const loadedSinceRefresh = new Set<string>();
      const worker = await startWindowWorker(
        {
          queue,
          db: rt.warehouse.db,
          logger: rt.logger,
          execute: rt.executor,
          pipelines: new Map(rt.pipelines.map((p) => [p.name, p])),
          unavailable: rt.unavailable,
          now: rt.now,
        },
        {
          owner,
          leaseSeconds: rt.config.defaults.leaseSeconds,
          concurrency: perProcess,
          perCredential: rt.config.api.maxConcurrentWindows,
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
        },
      );
      rt.logger.info(
        { owner, concurrency: perProcess, perCredential: rt.config.api.maxConcurrentWindows },
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
        { signal, inFlight: worker.inFlight },
        'worker stopping: windows in flight finish, or roll back and return to the queue',
      );
      await worker.stop(STOP_GRACE_MS);
      await queue.stop({ graceful: true, timeoutMs: 5_000 });
      await releaseLeases(rt.warehouse.db, owner).catch(() => 0);
      await releaseOwnerLock();
      rt.logger.info('worker stopped');
    });
}
