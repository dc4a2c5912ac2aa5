import type { Warehouse } from '../warehouse/warehouse.js';
import { expectedWindows } from '../pipeline/plan-windows.js';
import type { CalendarWindow } from '../pipeline/plan-windows.js';
import { readWindowJob } from '../queue/queue-status.js';
import { toJobData } from '../queue/window-jobs.js';
import type { WindowJobData } from '../queue/window-jobs.js';
import { pairKey } from '../state/completeness.js';
import type { WindowRow } from '../state/windows.js';
import type { CliContext } from './context.js';
import { credentialGroupOf } from './runtime.js';
import { configuredPipelines } from './status.js';

/** What `windows retry` did on the window queue. */
export interface RetryEnqueued {
  /** New jobs. */
  enqueued: number;
  /** Windows whose job was queued, waiting to retry or being loaded already (a waiting retry is made due now). */
  alreadyQueued: number;
  /** Windows that could not be enqueued, each with the reason. */
  notEnqueued: { window: WindowRow; reason: string }[];
}

/**
 * Enqueue failed windows on the window queue as a pass would (one job per window; a window whose
 * job is still there is not enqueued twice, and its retry, if it waits for one, is made due now),
 * so that the workers working the queue load them at once. Each window is cut as the pipeline cuts
 * it (the planner's expected windows, in the shape its last pass recorded), so its job is the one a
 * pass would have enqueued. `credential`: the credential group to load them with (a runtime's);
 * otherwise that of the credentials in the environment, else that of the window's last job.
 */
export async function enqueueFailedWindows(
  ctx: CliContext,
  warehouse: Warehouse,
  failed: readonly WindowRow[],
  credential?: string,
): Promise<RetryEnqueued> {
  const now = ctx.now();
  const config = await ctx.config();
  const pipelines = new Map(
    (await configuredPipelines(ctx.pipelines, config, warehouse.db, now)).map((p) => [p.name, p]),
  );
  const envCredentials = ctx.env().credentials;
  const ourCredential = credential ?? (envCredentials ? credentialGroupOf(envCredentials) : undefined);
  const byPair = new Map<string, WindowRow[]>();
  for (const w of failed) {
    const key = pairKey(w.pipeline, w.organizationId);
    byPair.set(key, [...(byPair.get(key) ?? []), w]);
  }
  const jobs: WindowJobData[] = [];
  const notEnqueued: RetryEnqueued['notEnqueued'] = [];
  for (const rows of byPair.values()) {
    const { pipeline: name, organizationId } = rows[0]!;
    const pipeline = pipelines.get(name);
    if (!pipeline) {
      for (const window of rows)
        notEnqueued.push({ window, reason: `pipeline ${name} is not among the pipelines of config.yaml` });
      continue;
    }
    const plan = expectedWindows(
      pipeline,
      organizationId,
      rows.map((r) => ({ ...r, retryDue: true })),
      now,
    );
    const cut = new Map<string, CalendarWindow>(plan.windows.map((w) => [w.windowKey, w]));
    for (const row of rows) {
      const window = cut.get(row.windowKey);
      if (!window) {
        notEnqueued.push({
          window: row,
          reason: `the pipeline no longer cuts a window ${row.windowKey} (its time zone or report schedule changed); windows reset forgets it`,
        });
        continue;
      }
      const group = ourCredential ?? (await readWindowJob(warehouse.db, row))?.credential ?? undefined;
      if (group === undefined) {
        notEnqueued.push({
          window: row,
          reason: 'no CyberSource credentials in the environment to load it with; set them, or add --run',
        });
        continue;
      }
      jobs.push(toJobData({ pipeline, window, claimable: ['pending', 'failed'] }, null, group));
    }
  }
  if (jobs.length === 0) return { enqueued: 0, alreadyQueued: 0, notEnqueued };
  const { openWindowQueue } = await import('../queue/window-queue.js');
  const queue = await openWindowQueue(warehouse.connection, {
    logger: await ctx.logger(),
    supervise: false,
    settings: config.queue,
  });
  try {
    const { added, alreadyQueued, ids } = await queue.enqueue(jobs);
    if (alreadyQueued > 0) await queue.retryNow(ids);
    return { enqueued: added, alreadyQueued, notEnqueued };
  } finally {
    await queue.stop({ graceful: false, timeoutMs: 1_000 });
  }
}

/** What `windows retry` prints once its windows are on the queue. */
export function retryEnqueuedText(r: RetryEnqueued, willRun: boolean): string {
  const lines = [
    `Enqueued ${r.enqueued} window job(s) on the window queue; ${r.alreadyQueued} already queued` +
      (r.alreadyQueued > 0 ? ' (a retry that was waiting is due now)' : '') +
      '.',
  ];
  for (const { window: w, reason } of r.notEnqueued.slice(0, 20))
    lines.push(`  not enqueued: ${w.pipeline} ${w.organizationId} ${w.windowKey}: ${reason}`);
  if (r.notEnqueued.length > 20) lines.push(`  … and ${r.notEnqueued.length - 20} more not enqueued`);
  if (!willRun && r.enqueued + r.alreadyQueued > 0)
    lines.push(
      'Running `cybs-etl worker` processes and the schedule daemon load them now; without one, the next `cybs-etl run` does (or add --run).',
    );
  return `${lines.join('\n')}\n`;
}
