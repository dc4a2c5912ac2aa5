import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { sql } from 'kysely';
import { configError } from '../errors.js';
import type { Db, Warehouse } from '../warehouse/warehouse.js';
import { assessPipelines } from '../pipeline/plan-windows.js';
import { selectPipelines } from '../pipeline/resolve-pipelines.js';
import { configuredPipelines } from './status.js';
import { WINDOW_STATES, readWindowStates, windowState } from '../state/completeness.js';
import type { WindowState } from '../state/completeness.js';
import { markForRetry, resetWindows, selectWindows } from '../state/windows.js';
import type { WindowRow, WindowSelection } from '../state/windows.js';
import { dayNumber } from '../time/time-zones.js';
import { YES_OPTION, confirmChange } from './confirm.js';
import type { CliContext } from './context.js';
import type { OutputStream } from '../observability/progress.js';
import { formatSummary, prepareCommand, runPass } from './run-pass.js';
import { splitList } from './run.js';
import { isoDay } from './backfill.js';
import { formatTable } from './sql.js';
import { readWindowJob, workerOfJob } from '../queue/queue-status.js';
import type { WindowJob } from '../queue/queue-status.js';
import { getOneTimeReport } from '../state/one-time-reports.js';
import type { OneTimeReportRow } from '../state/one-time-reports.js';
import { enqueueFailedWindows, retryEnqueuedText } from './windows-retry.js';

/**
 * `cybs-etl windows`: the state of each window (etl.windows) to look at and act on, instead of
 * editing the table by hand: list, show (with the window's job on the queue), retry (failed windows:
 * their jobs go on the window queue now) and reset
 * (forget a window's state, so the next run loads it again).
 */

interface SelectionOptions {
  pipelines?: string[];
  organizationId?: string;
  status?: WindowState[];
  from?: string;
  to?: string;
}

function windowStates(value: string): WindowState[] {
  const states = splitList(value);
  const unknown = states.filter((s) => !(WINDOW_STATES as readonly string[]).includes(s));
  if (unknown.length > 0)
    throw new InvalidArgumentError(
      `expected states among ${WINDOW_STATES.join(', ')}, not ${unknown.join(', ')}.`,
    );
  return states as WindowState[];
}

function withSelection(command: Command, statuses = true): Command {
  command
    .option('--pipelines <names>', 'comma-separated pipelines', splitList)
    .option('--organization-id <id>', 'only this organization')
    .option('--from <date>', 'windows whose first day is on or after this one (YYYY-MM-DD)', isoDay)
    .option('--to <date>', 'windows whose first day is on or before this one (YYYY-MM-DD)', isoDay);
  if (statuses)
    command.option('--status <states>', `comma-separated states: ${WINDOW_STATES.join(', ')}`, windowStates);
  return command;
}

function selection(opts: SelectionOptions): WindowSelection {
  if (opts.from && opts.to && dayNumber(opts.to) < dayNumber(opts.from))
    throw configError(`--to ${opts.to} is before --from ${opts.from}.`);
  return {
    ...(opts.pipelines ? { pipelines: opts.pipelines } : {}),
    ...(opts.organizationId ? { organizationId: opts.organizationId } : {}),
    ...(opts.status ? { states: opts.status } : {}),
    ...(opts.from ? { from: opts.from } : {}),
    ...(opts.to ? { to: opts.to } : {}),
  };
}

/** One line of a list: a window's row, or a span of gaps (expected windows without a loaded row). */
interface ListedWindow {
  pipeline: string;
  organizationId: string;
  window: string;
  state: WindowState;
  windows: number;
  attempts: number | null;
  failures: number | null;
  rowsLoaded: number | null;
  rowsRejected: number | null;
  retryAfter: Date | null;
  error: string | null;
  updatedAt: Date | null;
}

function listedRow(w: WindowRow): ListedWindow {
  return {
    pipeline: w.pipeline,
    organizationId: w.organizationId,
    window: w.windowKey,
    state: windowState({ ...w, retryDue: true }),
    windows: 1,
    attempts: w.attempts,
    failures: w.failures,
    rowsLoaded: w.rowsLoaded,
    rowsRejected: w.rowsRejected,
    retryAfter: w.retryAfter,
    error: w.lastErrorCode ? `${w.lastErrorCode}: ${w.lastErrorMessage ?? ''}` : null,
    updatedAt: w.updatedAt,
  };
}

/**
 * The windows of a selection: the rows etl.windows holds, and the gaps (expected windows of the
 * enabled pipelines never loaded, src/state/completeness.ts) as spans.
 */
async function listWindows(ctx: CliContext, db: Db, opts: SelectionOptions): Promise<ListedWindow[]> {
  const sel = selection(opts);
  const wanted = (s: WindowState) => !opts.status || opts.status.includes(s);
  const rows = (await selectWindows(db, sel)).map(listedRow).filter((w) => w.state !== 'gap');
  if (!wanted('gap')) return rows;
  const now = ctx.now();
  const config = await ctx.config();
  const pipelines = (await configuredPipelines(ctx.pipelines, config, db, now)).filter(
    (p) => !opts.pipelines || opts.pipelines.includes(p.name),
  );
  const states = await readWindowStates(db, {
    pipelines: pipelines.map((p) => p.name),
    ...(opts.organizationId ? { organizationId: opts.organizationId } : {}),
  });
  const inRange = (day: string) =>
    (!opts.from || day >= opts.from) && (!opts.to || day.slice(0, 10) <= opts.to);
  const gaps = assessPipelines(pipelines, states, now)
    .filter((c) => !opts.organizationId || c.organizationId === opts.organizationId)
    .flatMap((c) =>
      c.gaps
        .filter((g) => inRange(g.to.slice(0, 10)) && inRange(g.from.slice(0, 10)))
        .map((g): ListedWindow => ({
          pipeline: c.pipeline,
          organizationId: c.organizationId,
          window: g.from === g.to ? g.from : `${g.from}..${g.to}`,
          state: 'gap',
          windows: g.windows,
          attempts: null,
          failures: null,
          rowsLoaded: null,
          rowsRejected: null,
          retryAfter: null,
          error: null,
          updatedAt: null,
        })),
    );
  return [...rows, ...gaps].sort(
    (a, b) =>
      a.pipeline.localeCompare(b.pipeline) ||
      a.organizationId.localeCompare(b.organizationId) ||
      a.window.localeCompare(b.window),
  );
}

/** At most 20 lines naming windows, then how many more. */
function namedWindows(rows: readonly WindowRow[]): string {
  const lines = rows
    .slice(0, 20)
    .map(
      (w) => `  ${w.pipeline} ${w.organizationId} ${w.windowKey} (${windowState({ ...w, retryDue: true })})`,
    );
  if (rows.length > 20) lines.push(`  … and ${rows.length - 20} more`);
  return `${lines.join('\n')}\n`;
}

export function registerWindowsCommand(program: Command, ctx: CliContext): void {
  const command = program
    .command('windows')
    .description('list, show, retry and reset the windows of the pipelines (etl.windows)');

  withSelection(
    command.command('list').description('list windows and gaps, oldest first per pipeline and organization'),
  )
    .option('--json', 'machine-readable output', false)
    .action((opts: ListOptions) => writeWindowList(ctx, opts));

  command
    .command('show')
    .description(
      'show one window: state, attempts, errors, counts, rejects, source, fingerprint and its job on the window queue',
    )
    .argument('<pipeline>', 'the pipeline')
    .argument('<window>', 'the window key, e.g. 2026-11-20 (cybs-etl windows list shows them)')
    .option('--organization-id <id>', 'the organization (needed when the pipeline loads several)')
    .option('--json', 'machine-readable output', false)
    .action((pipeline: string, windowKey: string, opts: ShowOptions) =>
      showWindow(ctx, pipeline, windowKey, opts),
    );

  withSelection(
    command
      .command('retry')
      .description(
        'retry the failed windows of a selection now: their jobs go on the window queue, which cybs-etl worker processes (and the schedule daemon) load at once; their backoff is cleared; --run loads them in this process',
      ),
    false,
  )
    .option(
      '--run',
      'also load them here and now, with a run of their pipelines (which also loads whatever else is due)',
      false,
    )
    .option(...YES_OPTION)
    .action((opts: RetryOptions) => retryWindows(ctx, opts));

  withSelection(
    command
      .command('reset')
      .description(
        'forget the state of the windows of a selection, so the next run loads them again (their rows stay until that load replaces them)',
      ),
  )
    .option(...YES_OPTION)
    .action((opts: SelectionOptions & { yes: boolean }) => resetSelectedWindows(ctx, opts));
}

type ListOptions = SelectionOptions & { json: boolean };

/** `windows list`: the windows and gaps of a selection, as JSON or a table. */
async function writeWindowList(ctx: CliContext, opts: ListOptions): Promise<void> {
  const warehouse = await ctx.warehouse();
  const listed = await listWindows(ctx, warehouse.db, opts);
  if (opts.json) {
    ctx.io.stdout.write(`${JSON.stringify(listed, null, 2)}\n`);
    return;
  }
  ctx.io.stdout.write(
    listed.length === 0
      ? 'No window matches.\n'
      : formatTable(
          listed.map((w) => ({
            pipeline: w.pipeline,
            organization: w.organizationId,
            window: w.window,
            state: w.windows > 1 ? `${w.state} (${w.windows} windows)` : w.state,
            attempts: w.attempts ?? '',
            'failed jobs': w.failures || '',
            rows: w.rowsLoaded ?? '',
            rejected: w.rowsRejected ?? '',
            'retry after': w.retryAfter?.toISOString() ?? '',
            error: w.error?.slice(0, 100) ?? '',
          })),
        ),
  );
}

interface ShowOptions {
  organizationId?: string;
  json: boolean;
}

/** What `windows show` prints of a window: its row, its rejects, its job and the report that job waits for. */
interface ShownWindow extends WindowRow {
  state: WindowState;
  rejects: Rejects;
  job: (WindowJob & { worker: string | null }) | null;
  oneTimeReport: OneTimeReportRow | null;
}

/** `windows show`: one window, as JSON or one field a line. */
async function showWindow(
  ctx: CliContext,
  pipeline: string,
  windowKey: string,
  opts: ShowOptions,
): Promise<void> {
  const warehouse = await ctx.warehouse();
  const w = await findOneWindow(warehouse.db, pipeline, windowKey, opts.organizationId);
  const rejects = await readRejects(warehouse.db, w);
  const job = await readWindowJob(warehouse.db, w);
  const worker = workerOfJob(job, w.claim);
  // The one-time report its job waits for, as that report's job last saw it.
  const report = job?.waitingFor
    ? await getOneTimeReport(warehouse.db, { ...w, reportName: job.waitingFor })
    : undefined;
  const shown: ShownWindow = {
    ...w,
    state: windowState({ ...w, retryDue: true }),
    rejects,
    job: job ? { ...job, worker } : null,
    oneTimeReport: report ?? null,
  };
  if (opts.json) {
    ctx.io.stdout.write(`${JSON.stringify(shown, null, 2)}\n`);
    return;
  }
  writeShownWindow(ctx.io.stdout, shown);
}

/** The one window of a pipeline with this key; an error when there is none, or one per several organizations. */
async function findOneWindow(
  db: Db,
  pipeline: string,
  windowKey: string,
  organizationId: string | undefined,
): Promise<WindowRow> {
  const found = await selectWindows(db, {
    pipelines: [pipeline],
    windowKey,
    ...(organizationId ? { organizationId } : {}),
  });
  if (found.length === 0)
    throw configError(
      `no window ${pipeline} ${windowKey}${organizationId ? ` of organization ${organizationId}` : ''} in etl.windows; cybs-etl windows list --pipelines ${pipeline} shows its windows.`,
    );
  if (found.length > 1)
    throw configError(
      `window ${pipeline} ${windowKey} exists for several organizations (${found.map((w) => w.organizationId).join(', ')}); name one with --organization-id.`,
    );
  return found[0]!;
}

function writeShownWindow(out: OutputStream, w: ShownWindow): void {
  const field = (name: string, value: unknown) =>
    `  ${name.padEnd(20)} ${value === null || value === undefined || value === '' ? '-' : String(value)}\n`;
  out.write(`${w.pipeline} ${w.organizationId} ${w.windowKey}\n`);
  out.write(field('state', w.state + (w.status !== w.state ? ` (status ${w.status})` : '')));
  out.write(field('period', `${w.start.toISOString()}..${w.end.toISOString()}`));
  out.write(field('attempts', w.attempts));
  out.write(field('failed jobs in a row', w.failures));
  out.write(field('last failed at', w.failedAt?.toISOString()));
  out.write(field('retry after', w.retryAfter?.toISOString()));
  out.write(field('last error', w.lastErrorCode ? `${w.lastErrorCode}: ${w.lastErrorMessage ?? ''}` : ''));
  out.write(field('not ready since', w.notReadySince?.toISOString()));
  out.write(field('rows loaded', w.rowsLoaded));
  out.write(field('rows rejected', w.rowsRejected));
  out.write(field('counts', Object.keys(w.counts).length > 0 ? JSON.stringify(w.counts) : ''));
  out.write(field('source', w.sourceRef));
  out.write(field('fingerprint', w.fingerprint === null ? '' : JSON.stringify(w.fingerprint)));
  out.write(field('run', w.runId));
  out.write(field('loaded at', w.loadedAt?.toISOString()));
  out.write(field('updated at', w.updatedAt.toISOString()));
  out.write(field('claim', w.claim));
  const { job, oneTimeReport: report } = w;
  if (!job) out.write(field('job', 'not queued'));
  else {
    out.write(field('job', `${job.id} on the window queue`));
    out.write(field('job state', jobStateText(job)));
    out.write(field('job retries', `${job.retryCount} of ${job.retryLimit}`));
    out.write(field('job start after', job.startAfter.toISOString()));
    out.write(field('job worker', job.worker));
    if (report) {
      const next = report.nextCheckAt ? `, looked at again at ${report.nextCheckAt.toISOString()}` : '';
      out.write(field('one-time report', `${report.reportName}: ${report.status}${next}`));
    }
  }
  const { rejects } = w;
  out.write(`  rejects              ${rejects.count}${rejects.count > 0 ? ' (etl.rejects):' : ''}\n`);
  for (const r of rejects.first)
    out.write(`    record ${r.recordNumber ?? '?'}: ${r.errorCode}: ${r.message}\n`);
}

/** A job's state, with what it waits for. */
function jobStateText(job: WindowJob): string {
  if (job.state === 'retry') return 'retry (waiting for its next attempt)';
  if (job.state === 'created' && job.waitingFor)
    return `created (waiting for one-time report ${job.waitingFor}: its job wakes the window once the report is ready, else at the start after below)`;
  if (job.state === 'created') return 'created (queued)';
  if (job.state === 'failed' && job.deadLettered)
    return `failed (dead-lettered: its retries are spent; the window waits for its backoff)`;
  return job.state;
}

type RetryOptions = SelectionOptions & { run: boolean; yes: boolean };

/** `windows retry`: the failed windows of a selection go on the window queue, their backoff cleared. */
async function retryWindows(ctx: CliContext, opts: RetryOptions): Promise<void> {
  const warehouse = await ctx.warehouse();
  const sel = selection(opts);
  const failed = await selectWindows(warehouse.db, { ...sel, states: ['failed'] });
  const out = ctx.io.stdout;
  if (failed.length === 0) {
    out.write('No failed window matches: nothing to retry.\n');
    return;
  }
  out.write(
    `${failed.length} failed window(s) will be retried now: enqueued on the window queue, their backoff cleared${opts.run ? ', and loaded by this process' : ''}:\n${namedWindows(failed)}`,
  );
  if (!(await confirmChange(ctx, { yes: opts.yes, question: 'Retry them?', what: 'windows retry' }))) return;
  // The backoff goes first, so that a pass planning meanwhile follows the jobs instead of skipping them.
  await markForRetry(warehouse.db, sel);
  if (opts.run) {
    await retryAndRunWindows(ctx, warehouse, failed, opts);
    return;
  }
  const enqueued = await enqueueFailedWindows(ctx, warehouse, failed);
  out.write(retryEnqueuedText(enqueued, false));
  if (enqueued.notEnqueued.length > 0) ctx.exitCode = 1;
}

/** `windows retry --run`: the failed windows' jobs enqueued with this process's credential, then a run of their pipelines. */
async function retryAndRunWindows(
  ctx: CliContext,
  warehouse: Warehouse,
  failed: readonly WindowRow[],
  opts: RetryOptions,
): Promise<void> {
  const out = ctx.io.stdout;
  const names = [...new Set(failed.map((w) => w.pipeline))];
  const started = performance.now();
  const { rt, pipelines, controller, dispose } = await prepareCommand(
    ctx,
    names,
    (s) => `\n${s}: stopping; windows in flight roll back.\n`,
  );
  try {
    const enqueued = await enqueueFailedWindows(ctx, warehouse, failed, rt.credentialGroup);
    out.write(retryEnqueuedText(enqueued, true));
    const summary = await runPass(rt, {
      command: 'run',
      trigger: 'cli',
      pipelines: selectPipelines(pipelines, names),
      ...(opts.organizationId ? { organizationId: opts.organizationId } : {}),
      signal: controller.signal,
    });
    out.write(formatSummary(summary, (performance.now() - started) / 1000));
    if (summary.windows.failed > 0 || summary.interrupted || enqueued.notEnqueued.length > 0)
      ctx.exitCode = 1;
  } finally {
    dispose();
  }
}

/** `windows reset`: forget the state of a selection's windows (those not running), so the next run loads them. */
async function resetSelectedWindows(
  ctx: CliContext,
  opts: SelectionOptions & { yes: boolean },
): Promise<void> {
  if (!opts.pipelines?.length)
    throw configError(
      'windows reset needs --pipelines (and may narrow with --organization-id, --from, --to, --status).',
    );
  const warehouse = await ctx.warehouse();
  const sel = selection(opts);
  const chosen = (await selectWindows(warehouse.db, sel)).filter((w) => w.status !== 'running');
  const out = ctx.io.stdout;
  if (chosen.length === 0) {
    out.write('No window matches: nothing to reset.\n');
    return;
  }
  out.write(
    `${chosen.length} window(s) will be forgotten and loaded again by the next run (their rows stay until then):\n${namedWindows(chosen)}`,
  );
  if (!(await confirmChange(ctx, { yes: opts.yes, question: 'Reset them?', what: 'windows reset' }))) return;
  const reset = await resetWindows(warehouse.db, sel);
  out.write(`Reset ${reset} window(s); the next run loads them again (cybs-etl run).\n`);
}

interface Rejects {
  count: number;
  first: { recordNumber: number | null; errorCode: string; message: string }[];
}

/** How many rows of a window were rejected, and the first few (etl.rejects). */
async function readRejects(db: Db, w: WindowRow): Promise<Rejects> {
  const where = sql`pipeline = ${w.pipeline} and organization_id = ${w.organizationId} and window_key = ${w.windowKey}`;
  const count = await sql<{ n: number }>`select count(*)::int as n from etl.rejects where ${where}`.execute(
    db,
  );
  const first = await sql<{ record_number: string | null; error_code: string; message: string }>`
    select record_number, error_code, message from etl.rejects where ${where} order by id limit 5`.execute(
    db,
  );
  return {
    count: count.rows[0]?.n ?? 0,
    first: first.rows.map((r) => ({
      recordNumber: r.record_number === null ? null : Number(r.record_number),
      errorCode: r.error_code,
      message: r.message,
    })),
  };
}
