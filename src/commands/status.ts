import type { Command } from 'commander';
import cron from 'node-cron';
import { resolvePipelines } from '../pipeline/resolve-pipelines.js';
import type { ResolvedPipeline } from '../pipeline/resolve-pipelines.js';
import type { Config } from '../config/schema.js';
import type { PipelineDef } from '../pipeline/define-pipeline.js';
import type { Db } from '../warehouse/warehouse.js';
import { emptyStatus, readStatus } from '../state/status.js';
import { attentionItems, pairKey, readPipelineShapes, readWindowStates } from '../state/completeness.js';
import type { AttentionItem, Completeness } from '../state/completeness.js';
import { assessPipelines, withRecordedShapes } from '../pipeline/plan-windows.js';
import { queueLine, readQueueCounts } from '../queue/queue-status.js';
import type { CliContext } from './context.js';
import { formatTable } from './sql.js';

/** The next time a cron expression fires in a zone (minute resolution, up to 8 days ahead). */
export function nextFire(expression: string, timezone: string, now: Date): Date | null {
  const task = cron.createTask(expression, () => {}, { timezone });
  try {
    const t = new Date(Math.floor(now.getTime() / 60_000) * 60_000 + 60_000);
    for (let i = 0; i < 8 * 24 * 60; i++, t.setTime(t.getTime() + 60_000)) {
      if (task.match(t)) return new Date(t);
    }
    return null;
  } finally {
    void task.destroy();
  }
}

function humanLag(seconds: number | null): string {
  if (seconds === null) return 'never loaded';
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86_400).toFixed(1)} d`;
}

/** A window's time span, `2024-03-17T03:30Z..2024-03-18T03:30Z` (a report period of a report pipeline). */
function periodText(start: Date | null, end: Date | null): string {
  const minute = (d: Date) => `${d.toISOString().slice(0, 16)}Z`;
  return start && end ? `${minute(start)}..${minute(end)}` : '';
}

export function registerStatusCommand(program: Command, ctx: CliContext): void {
  program
    .command('status')
    .description('show, per pipeline and organization, what is loaded, late and failed, and the last runs')
    .option('--json', 'machine-readable output', false)
    .option('--html <file>', 'write the status page (as the schedule daemon serves it at /) to this file')
    .action(async (opts: { json: boolean; html?: string }) => {
      const config = await ctx.config();
      const warehouse = await ctx.warehouse();
      const now = ctx.now();
      if (opts.html !== undefined) {
        const { writeStatusPage } = await import('./status-page.js');
        const pipelines = await configuredPipelines(ctx.pipelines, config, warehouse.db, now);
        ctx.io.stdout.write(await writeStatusPage(warehouse.db, config, pipelines, now, opts.html));
        return;
      }
      const { pipelines: read, runs } = await readStatus(warehouse.db, now);
      const queue = await readQueueCounts(warehouse.db);
      const resolved = await configuredPipelines(ctx.pipelines, config, warehouse.db, now);
      const completeness = assessPipelines(resolved, await readWindowStates(warehouse.db), now);
      const attention = attentionItems(completeness);
      const rows = withCompleteness(read, completeness);
      const schedule = new Map(resolved.map((p) => [p.name, p]));
      const next = (name: string) => {
        const p = schedule.get(name);
        return p && p.enabled ? nextFire(p.schedule.cron, p.schedule.timezone, now) : null;
      };
      if (opts.json) {
        ctx.io.stdout.write(
          `${JSON.stringify(
            {
              attention,
              pipelines: rows.map((r) => ({ ...r, nextScheduledRun: next(r.pipeline) })),
              runs,
              queue: queue ?? null,
            },
            null,
            2,
          )}\n`,
        );
        return;
      }
      const out = ctx.io.stdout;
      out.write(formatAttention(attention));
      if (rows.length === 0) {
        out.write('No windows yet: run "cybs-etl run" or "cybs-etl backfill --from … --to …".\n');
      } else {
        out.write(
          formatTable(
            rows.map((r) => ({
              pipeline: r.pipeline,
              organization: r.organizationId,
              'last loaded': r.lastLoadedWindow ?? '',
              period: periodText(r.lastLoadedStart, r.lastLoadedEnd),
              lag: humanLag(r.lagSeconds),
              loaded: (r.windows.loaded ?? 0) + (r.windows.no_data ?? 0),
              gaps: r.gaps.reduce((n, g) => n + g.windows, 0),
              'not ready': r.notReady.length,
              failed: r.failed.length,
              rejects: r.rejects,
              'next run': next(r.pipeline)?.toISOString() ?? '',
            })),
          ),
        );
        const problems = rows.flatMap((r) => [
          ...r.failed.map(
            (f) =>
              `  failed     ${r.pipeline} ${r.organizationId} ${f.windowKey} (attempts ${f.attempts}, failed jobs in a row ${f.failures}): ${f.code}: ${f.message}`,
          ),
          ...r.notReady.map(
            (n) =>
              `  not ready  ${r.pipeline} ${r.organizationId} ${n.windowKey} since ${n.since?.toISOString() ?? '?'}: ${n.message}`,
          ),
        ]);
        if (problems.length > 0)
          out.write(`\nWindows needing attention:\n${problems.slice(0, 50).join('\n')}\n`);
      }
      out.write(queueLine(queue));
      if (runs.length > 0) {
        out.write('\nLast runs:\n');
        out.write(
          formatTable(
            runs.map((r) => ({
              run: r.id,
              command: r.command,
              trigger: r.trigger,
              status: r.status,
              started: r.startedAt.toISOString(),
              seconds: r.finishedAt
                ? ((r.finishedAt.getTime() - r.startedAt.getTime()) / 1000).toFixed(1)
                : '',
              windows: ['loaded', 'no_data', 'not_ready', 'failed']
                .map((k) => `${k}=${String(r.counts[k] ?? 0)}`)
                .join(' '),
              rows: String(r.counts.rowsLoaded ?? ''),
            })),
          ),
        );
      }
    });
}

/**
 * The pipelines as config.yaml resolves them, without the API (an unknown pipeline name in the
 * config: none), with the window shapes their last passes recorded.
 */
export async function configuredPipelines(
  pipelines: readonly PipelineDef[],
  config: Config,
  db: Db,
  now: Date,
): Promise<ResolvedPipeline[]> {
  let resolved: ResolvedPipeline[];
  try {
    resolved = resolvePipelines(pipelines, config, { defaultOrganizations: [], now });
  } catch {
    return [];
  }
  return withRecordedShapes(resolved, await readPipelineShapes(db));
}

/** A readStatus row with its completeness (expected windows, gaps, windows behind). */
type StatusRow = Awaited<ReturnType<typeof readStatus>>['pipelines'][number] &
  Pick<Completeness, 'expected' | 'gaps' | 'behind' | 'shapeDiffers'>;

/** readStatus's rows with the completeness of their pipeline and organization (and the pairs never loaded). */
function withCompleteness(
  read: Awaited<ReturnType<typeof readStatus>>['pipelines'],
  completeness: readonly Completeness[],
): StatusRow[] {
  const byPair = new Map(completeness.map((c) => [pairKey(c.pipeline, c.organizationId), c]));
  const rows: StatusRow[] = read.map((r) => {
    const c = byPair.get(pairKey(r.pipeline, r.organizationId));
    byPair.delete(pairKey(r.pipeline, r.organizationId));
    return {
      ...r,
      expected: c?.expected ?? 0,
      gaps: c?.gaps ?? [],
      behind: c?.behind ?? 0,
      shapeDiffers: c?.shapeDiffers ?? false,
    };
  });
  for (const c of byPair.values()) {
    rows.push({
      ...emptyStatus(c.pipeline, c.organizationId),
      expected: c.expected,
      gaps: c.gaps,
      behind: c.behind,
      shapeDiffers: c.shapeDiffers,
    });
  }
  return rows.sort((a, b) =>
    a.pipeline === b.pipeline
      ? a.organizationId.localeCompare(b.organizationId)
      : a.pipeline.localeCompare(b.pipeline),
  );
}

/** What is wrong, first: one line each (at most 50), or that nothing is. */
export function formatAttention(items: readonly AttentionItem[]): string {
  if (items.length === 0) return 'Nothing needs attention: no gaps, no failed windows, nothing behind.\n\n';
  const label: Record<AttentionItem['kind'], string> = {
    gap: 'gap',
    failed: 'failed',
    behind: 'behind',
    never_loaded: 'never loaded',
  };
  const lines = items
    .slice(0, 50)
    .map((i) => `  ${label[i.kind].padEnd(12)} ${i.pipeline} ${i.organizationId}: ${i.text}`);
  if (items.length > 50)
    lines.push(`  … and ${items.length - 50} more (cybs-etl status --json, cybs-etl windows list)`);
  return (
    `Needs attention (${items.length}):\n${lines.join('\n')}\n` +
    'Gaps and failed windows are loaded by the next run (cybs-etl windows list shows them; windows retry retries failures now).\n\n'
  );
}
