import { InvalidArgumentError } from 'commander';
import type { Command } from 'commander';
import type { CliContext } from './context.js';
import type { Runtime } from './runtime.js';
import { formatSummary, prepareCommand, runPass } from './run-pass.js';
import type { WarehouseKind } from '../warehouse/warehouse.js';
import { SIMULATOR_OPTION } from './service-access.js';

export function registerRunCommand(program: Command, ctx: CliContext): void {
  program
    .command('run')
    .description('load every due window of the enabled pipelines once (the nightly job)')
    .option('--pipelines <names>', 'comma-separated pipelines (default: the enabled ones)', splitList)
    .option('--organization-id <id>', 'only this organization')
    .option(...SIMULATOR_OPTION)
    .action(async (opts: { pipelines?: string[]; organizationId?: string; simulator: boolean }) => {
      const started = performance.now();
      const out = ctx.io.stdout;
      const { rt, pipelines, controller, dispose } = await prepareCommand(
        ctx,
        opts.pipelines,
        (s) => `\n${s}: stopping; windows in flight roll back.\n`,
        { simulator: opts.simulator },
      );
      try {
        const summary = await runPass(rt, {
          command: 'run',
          trigger: 'cli',
          pipelines,
          ...(opts.organizationId ? { organizationId: opts.organizationId } : {}),
          signal: controller.signal,
        });
        out.write(formatSummary(summary, (performance.now() - started) / 1000));
        const { evaluateAlertsAfterPass } = await import('./alerts.js');
        await evaluateAlertsAfterPass(rt, ctx.io.env);
        if (rt.simulator) await writeLedgerSummary(rt, out);
        out.write(whereTheDataIs(rt.warehouse.kind, rt.warehouse.location));
        if (summary.windows.failed > 0 || summary.interrupted) ctx.exitCode = 1;
      } finally {
        dispose();
      }
    });
}

/** The demo's ledger: the money of the simulated merchants, from capture to deposit. */
async function writeLedgerSummary(rt: Runtime, out: { write(text: string): unknown }): Promise<void> {
  try {
    const { formatLedgerSummary, ledgerSummary } = await import('../analytics/ledger-summary.js');
    const rows = await ledgerSummary(rt.warehouse.db);
    if (rows.length === 0) return;
    out.write(
      `\nThe ledger (cybs_analytics.ledger), from capture to deposit:\n${formatLedgerSummary(rows)}\n` +
        `(not funded: settled, not yet funded; not deposited: funded, not yet in the bank. Both count from\n` +
        `the first day loaded: fundings and deposits of earlier sales can make them negative.)\n`,
    );
  } catch (error) {
    rt.logger.warn({ error: (error as Error).message }, 'the ledger summary could not be read');
  }
}

/** A `--concurrency` value: windows in flight, 1 to 64. */
export function windowConcurrency(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 64)
    throw new InvalidArgumentError('expected a whole number from 1 to 64.');
  return n;
}

export function splitList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

export function whereTheDataIs(kind: WarehouseKind, location: string): string {
  const query = `select date_trunc('day', transaction_date) as day, currency_code, count(*), sum(amount) from cybs.transaction_request group by 1, 2 order by 1, 2;`;
  return kind === 'embedded'
    ? `\nData is in the embedded warehouse at ${location} (schemas cybs, cybs_analytics and etl). Try:\n` +
        `  npx cybs-etl sql "${query}"\n`
    : `\nData is in PostgreSQL ${location} (schemas cybs, cybs_analytics and etl). Try:\n  psql "$DATABASE_URL" -c "${query}"\n`;
}
