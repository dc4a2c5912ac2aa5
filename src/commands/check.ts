import type { Command } from 'commander';
import { configError } from '../errors.js';
import type { CliContext } from './context.js';

const DATE = /^\d{4}-\d{2}-\d{2}$/;

export function registerCheckCommand(program: Command, ctx: CliContext): void {
  program
    .command('check')
    .description(
      'run the reconciliation checks (cybs_analytics.rc_*) and print what fails; exit 1 when any fails (for a nightly job after run)',
    )
    .option('--organization-id <id>', 'only this organization')
    .option('--from <YYYY-MM-DD>', 'first local day of the failing items')
    .option('--to <YYYY-MM-DD>', 'last local day of the failing items')
    .option('--rows <n>', 'failing rows to show per check', (v) => Number(v), 10)
    .option('--json', 'print the outcome as JSON', false)
    .action(
      async (opts: { organizationId?: string; from?: string; to?: string; rows: number; json: boolean }) => {
        for (const [flag, value] of [
          ['--from', opts.from],
          ['--to', opts.to],
        ] as const) {
          if (value !== undefined && !DATE.test(value))
            throw configError(`${flag} ${value} is not a date written YYYY-MM-DD.`);
        }
        if (opts.from && opts.to && opts.to < opts.from)
          throw configError(`--to ${opts.to} is before --from ${opts.from}.`);
        if (!Number.isInteger(opts.rows) || opts.rows < 0)
          throw configError('--rows expects a whole number, 0 or more.');
        const warehouse = await ctx.warehouse();
        const { runChecks } = await import('../analytics/run-checks.js');
        // The checks count ages from --now when it is given (replays), else from the database's clock.
        const asOf = ctx.globals().now ? ctx.now() : undefined;
        const outcomes = await runChecks(
          warehouse.db,
          {
            ...(opts.organizationId ? { organizationId: opts.organizationId } : {}),
            ...(opts.from ? { from: opts.from } : {}),
            ...(opts.to ? { to: opts.to } : {}),
            ...(asOf ? { asOf } : {}),
          },
          opts.rows,
        );
        const failing = outcomes.filter((o) => o.failures > 0);
        const out = ctx.io.stdout;
        if (opts.json) {
          out.write(
            `${JSON.stringify(
              {
                asOf: (asOf ?? new Date()).toISOString(),
                failing: failing.length,
                checks: outcomes.map((o) => ({
                  check: `rc_${o.check}`,
                  title: o.title,
                  failures: o.failures,
                  rows: o.rows,
                })),
              },
              (_k, v: unknown) => (v instanceof Date ? v.toISOString() : v),
            )}\n`,
          );
        } else {
          const width = Math.max(...outcomes.map((o) => o.check.length));
          for (const o of outcomes) {
            out.write(
              `${o.failures > 0 ? 'FAIL' : 'ok  '}  ${o.check.padEnd(width)}  ${String(o.failures).padStart(6)}  ${o.title}\n`,
            );
            for (const row of o.rows) {
              const day =
                row['check_date'] instanceof Date
                  ? row['check_date'].toISOString().slice(0, 10)
                  : String(row['check_date']);
              out.write(
                `        ${day} ${String(row['organization_id'])} ${String(row['reference'])}: ${String(row['detail'])}\n`,
              );
            }
            if (o.failures > o.rows.length && o.rows.length > 0)
              out.write(
                `        … and ${o.failures - o.rows.length} more (select * from cybs_analytics.rc_${o.check})\n`,
              );
          }
          out.write(
            failing.length === 0
              ? `\nAll ${outcomes.length} reconciliation checks pass.\n`
              : `\n${failing.length} of ${outcomes.length} reconciliation checks fail (${failing.reduce((n, o) => n + o.failures, 0)} items).\n`,
          );
        }
        if (failing.length > 0) ctx.exitCode = 1;
      },
    );
}
