import type { Warehouse } from '../warehouse/warehouse.js';
import { closeAbandonedRuns, finishRun, RUN_LOCK_SPACE, runHolderKey, startRun } from '../state/runs.js';
import type { ProgressEvent, RunSummary } from '../pipeline/run-pipelines.js';
import { PassNudge, runQueuedPass } from '../queue/queue-pass.js';
import type { QueuedPassSummary } from '../queue/queue-pass.js';
import { openWindowQueue } from '../queue/window-queue.js';
import type { WindowQueue } from '../queue/window-queue.js';
import { startWindowWorker } from '../queue/window-worker.js';
import type { WindowWorker, WindowWorkerOptions } from '../queue/window-worker.js';
import type { ResolvedPipeline } from '../pipeline/resolve-pipelines.js';
import { selectPipelines } from '../pipeline/resolve-pipelines.js';
import { pipelineTables } from '../pipeline/define-pipeline.js';
import type { CliContext } from './context.js';
import { createRuntime, refuseRealOrganizations } from './runtime.js';
import type { Runtime, RuntimeOptions } from './runtime.js';

export interface PassOptions {
  command: 'run' | 'backfill' | 'schedule';
  trigger: string;
  pipelines: ResolvedPipeline[];
  organizationId?: string;
  range?: { from: string; to: string };
  force?: boolean;
  /** A schedule pass: its cron fire's scheduled time (PlanOptions.firedAt). */
  firedAt?: Date;
  /** Backfill: windows no subscription report covers load from one-time reports of chunks of this range. */
  oneTime?: { from: string; to: string };
  concurrency?: number;
  signal?: AbortSignal;
  drain?: AbortSignal;
  onProgress?: (event: ProgressEvent) => void;
  /**
   * The queue this process works already (a schedule daemon's, or none with --no-work: `detach`).
   * Without it the pass opens the queue and works it itself until its windows are done.
   */
  queue?: { queue: WindowQueue; detach: boolean };
}

/** How long a pass's own worker lets windows of other runs it took finish once the pass is done. */
const PASS_WORKER_GRACE_MS = 30_000;

/** The window queue opened by a process, with the worker that works it here (none: plan only). */
export interface QueueWork {
  queue: WindowQueue;
  worker: WindowWorker | undefined;
  /** Start the worker opened with `startLater` (once; a no-op otherwise). */
  startWorker(): Promise<void>;
  /** Stop the worker (windows in flight finish within `graceMs`, else roll back and are requeued), then the queue. */
  stop(graceMs: number): Promise<void>;
}

/**
 * Open the window queue on the warehouse and, unless `work` is false, work it from this process:
 * `concurrency` windows in flight, at most api.maxConcurrentWindows per credential across every
 * worker. The same job handler runs here as in `cybs-etl worker`.
 */
export async function openQueueWork(
  rt: Runtime,
  options: {
    work: boolean;
    /**
     * Open the queue now and start the worker only when startWorker() is called: a pass starts it
     * once its windows are enqueued, so it cannot take and finish a job the pass planned for before
     * the pass follows that job (the pass would enqueue the window a second time).
     */
    startLater?: boolean;
    concurrency: number;
    pollingSeconds?: number;
    onWindow?: WindowWorkerOptions['onWindow'];
    onIdle?: WindowWorkerOptions['onIdle'];
    onSettled?: WindowWorkerOptions['onSettled'];
  },
): Promise<QueueWork> {
  const queue = await openWindowQueue(rt.warehouse.connection, {
    logger: rt.logger,
    supervise: options.work,
    settings: rt.config.queue,
  });
  const start = () =>
    startWindowWorker(
      {
        queue,
        db: rt.warehouse.db,
        logger: rt.logger,
        execute: rt.executor,
        pipelines: new Map(rt.pipelines.map((p) => [p.name, p])),
        unavailable: rt.unavailable,
        now: rt.now,
        oneTimeReports: rt.oneTimeReports,
      },
      {
        concurrency: options.concurrency,
        perCredential: rt.config.api.maxConcurrentWindows,
        ...(options.pollingSeconds !== undefined ? { pollingSeconds: options.pollingSeconds } : {}),
        ...(options.onWindow ? { onWindow: options.onWindow } : {}),
        ...(options.onIdle ? { onIdle: options.onIdle } : {}),
        ...(options.onSettled ? { onSettled: options.onSettled } : {}),
      },
    );
  let worker = options.work && !options.startLater ? await start() : undefined;
  return {
    queue,
    get worker() {
      return worker;
    },
    async startWorker() {
      if (options.work && worker === undefined) worker = await start();
    },
    async stop(graceMs) {
      await worker?.stop(graceMs);
      await queue.stop({ graceful: true, timeoutMs: 5_000 });
    },
  };
}

/** Passes in progress per warehouse, and the release of the lock they share (see RUN_LOCK_SPACE). */
const runLocks = new WeakMap<Warehouse, { passes: number; release: Promise<() => Promise<void>> }>();

/**
 * Run `fn` while this process holds its runs' lock on `warehouse` (one lock for the passes that
 * overlap in a schedule daemon; released with the last of them).
 */
async function whileHoldingRunLock<T>(warehouse: Warehouse, fn: () => Promise<T>): Promise<T> {
  let held = runLocks.get(warehouse);
  if (held === undefined) {
    held = { passes: 0, release: warehouse.holdAdvisoryLock(RUN_LOCK_SPACE, runHolderKey()) };
    runLocks.set(warehouse, held);
  }
  held.passes++;
  try {
    await held.release;
    return await fn();
  } finally {
    if (--held.passes === 0) {
      runLocks.delete(warehouse);
      await (
        await held.release.catch(() => async () => {})
      )();
    }
  }
}

/**
 * One recorded pass: an etl.runs row around runQueuedPass (plan, enqueue, and wait for the windows
 * to be loaded by this process's worker or any other), with unavailable pipelines counted as failed.
 */
export async function runPass(rt: Runtime, options: PassOptions): Promise<RunSummary & { runId: number }> {
  // Every pass, also a daemon's later ones: real data may have been imported since it started.
  if (rt.simulator) await refuseRealOrganizations(rt.warehouse);
  return whileHoldingRunLock(rt.warehouse, () => recordedPass(rt, options));
}

async function recordedPass(rt: Runtime, options: PassOptions): Promise<RunSummary & { runId: number }> {
  const runnable = options.pipelines.filter((p) => !rt.unavailable.has(p.name));
  // Runs left `running` by processes that are gone are closed first, so they do not stay so for ever.
  await closeAbandonedRuns(rt.warehouse.db);
  const runId = await startRun(rt.warehouse.db, {
    command: options.command,
    trigger: options.trigger,
    pipelines: options.pipelines.map((p) => p.name),
  });
  let summary: QueuedPassSummary;
  try {
    // run and backfill open the queue and work it for the pass; a daemon passes its own. The pass
    // looks at its jobs as soon as its own worker settles one, not at its next poll.
    const nudge = new PassNudge();
    const own = options.queue
      ? undefined
      : await openQueueWork(rt, {
          work: true,
          startLater: true,
          concurrency: options.concurrency ?? rt.config.defaults.globalConcurrency,
          pollingSeconds: 0.5,
          onSettled: () => nudge.nudge(),
        });
    const queue = options.queue?.queue ?? own!.queue;
    try {
      summary = await runQueuedPass(
        { db: rt.warehouse.db, logger: rt.logger.child({ runId }), queue, credential: rt.credentialGroup },
        {
          pipelines: runnable,
          ...(options.organizationId ? { organizationId: options.organizationId } : {}),
          ...(options.range ? { range: options.range } : {}),
          force: options.force ?? false,
          maxCatchUpWindows: rt.config.defaults.maxCatchUpWindows,
          ...(options.firedAt ? { firedAt: options.firedAt } : {}),
          ...(options.oneTime ? { oneTime: options.oneTime } : {}),
          runId,
          now: rt.now,
          detach: options.queue?.detach ?? false,
          ...(options.signal ? { signal: options.signal } : {}),
          ...(options.drain ? { drain: options.drain } : {}),
          ...(options.onProgress ? { onProgress: options.onProgress } : {}),
          ...(own ? { onEnqueued: () => own.startWorker(), nudge } : {}),
        },
      );
    } finally {
      // Interrupted: the windows in flight roll back at once and go back to the queue.
      await own?.stop(options.signal?.aborted ? 0 : PASS_WORKER_GRACE_MS);
    }
  } catch (error) {
    await finishRun(rt.warehouse.db, runId, { status: 'failed', error: (error as Error).message });
    throw error;
  }
  await refreshModels(rt, { runId });
  for (const p of options.pipelines) {
    const reason = rt.unavailable.get(p.name);
    if (reason) {
      summary.windows.failed++;
      summary.failures.push({
        pipeline: p.name,
        organizationId: '*',
        windowKey: '*',
        code: 'PIPELINE_UNAVAILABLE',
        message: reason,
      });
    }
  }
  const counts = { ...summary.windows, rowsLoaded: summary.rowsLoaded, rowsRejected: summary.rowsRejected };
  await finishRun(rt.warehouse.db, runId, {
    status: summary.interrupted ? 'interrupted' : summary.windows.failed > 0 ? 'failed' : 'succeeded',
    counts,
    error: summary.failures.length > 0 ? `${summary.failures.length} window(s) failed` : null,
  });
  return { ...summary, runId };
}

/**
 * The models' part of a pass (src/analytics/refresh.ts): record the zone each organization's
 * Transaction Request reports are cut in, and refresh the materialized views whose tables the pass
 * (or a worker, naming the pipelines it loaded) loaded. A failure here is logged, never the run's.
 */
export async function refreshModels(
  rt: Runtime,
  loaded: { runId: number } | { pipelines: readonly string[] },
): Promise<void> {
  const runId = 'runId' in loaded ? loaded.runId : undefined;
  try {
    const { refreshAfterRun } = await import('../analytics/refresh.js');
    const tr = rt.pipelines.find(
      (p) => p.name === 'transaction_request' && (p.reportSchedule !== undefined || p.timeZoneConfigured),
    );
    const result = await refreshAfterRun(rt.warehouse.db, {
      loaded,
      pipelineTables: new Map(rt.pipelines.map((p) => [p.name, pipelineTables(p.def).map((t) => t.name)])),
      zones: tr ? tr.organizations.map((organizationId) => ({ organizationId, timeZone: tr.timeZone })) : [],
      refreshViews: rt.config.analytics.refresh === 'after-run',
    });
    if (result.refreshed.length > 0)
      rt.logger.info({ runId, views: result.refreshed }, 'cybs_analytics materialized views refreshed');
  } catch (error) {
    rt.logger.warn(
      { runId, error: (error as Error).message },
      'cybs_analytics was not refreshed after the run; its data loaded all the same',
    );
  }
}

/** The summary table printed at the end of run and backfill. */
export function formatSummary(summary: RunSummary & { runId: number }, seconds: number): string {
  const w = summary.windows;
  const lines = [
    `Run ${summary.runId} ${summary.interrupted ? 'interrupted' : 'finished'} in ${seconds.toFixed(1)} s`,
    '',
    '  windows loaded      ' + String(w.loaded).padStart(8),
    '    of which unchanged' +
      String(w.unchanged).padStart(8) +
      '   (the data last loaded, its rows untouched: nothing written)',
    '  windows no data     ' + String(w.no_data).padStart(8),
    '  windows not ready   ' + String(w.not_ready).padStart(8),
    '  windows failed      ' + String(w.failed).padStart(8),
    '  windows skipped     ' + String(w.skipped).padStart(8) + '   (loaded by another process meanwhile)',
    '  rows loaded         ' + String(summary.rowsLoaded).padStart(8),
    '  rows rejected       ' + String(summary.rowsRejected).padStart(8) + '   (see etl.rejects)',
  ];
  if (summary.failures.length > 0) {
    lines.push('', 'Failed:');
    for (const f of summary.failures.slice(0, 20)) {
      lines.push(`  ${f.pipeline} ${f.organizationId} ${f.windowKey}: ${f.code}: ${f.message}`);
    }
    if (summary.failures.length > 20)
      lines.push(`  … and ${summary.failures.length - 20} more (cybs-etl status)`);
  }
  return lines.join('\n') + '\n';
}

/** Abort on the first SIGINT/SIGTERM (windows in flight roll back and are released); returns a disposer. */
export function interruptOnSignals(
  controller: AbortController,
  onSignal?: (signal: string) => void,
): () => void {
  const handler = (signal: NodeJS.Signals) => {
    onSignal?.(signal);
    controller.abort();
  };
  process.once('SIGINT', handler);
  process.once('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}

/**
 * What run and backfill share before their pass: the runtime (announcing the simulator on stdout),
 * the selected pipelines, and an abort controller wired to SIGINT/SIGTERM.
 */
export async function prepareCommand(
  ctx: CliContext,
  selected: string[] | undefined,
  onSignal: (signal: string) => string,
  extra: Pick<RuntimeOptions, 'simulator'> = {},
): Promise<{ rt: Runtime; pipelines: ResolvedPipeline[]; controller: AbortController; dispose: () => void }> {
  const out = ctx.io.stdout;
  const rt = await createRuntime(ctx, {
    defs: ctx.pipelines,
    now: ctx.now(),
    announce: (line) => out.write(`${line}\n\n`),
    ...(selected ? { selected } : {}),
    ...extra,
  });
  const pipelines = selectPipelines(rt.pipelines, selected);
  const controller = new AbortController();
  // Above the progress bar when one is shown, so that the message is never cut into it.
  const terminal = ctx.terminal();
  const dispose = interruptOnSignals(controller, (s) =>
    terminal ? terminal.writeAbove(onSignal(s), out) : out.write(onSignal(s)),
  );
  return { rt, pipelines, controller, dispose };
}
