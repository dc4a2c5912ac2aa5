import type { Command } from 'commander';
import { sql } from 'kysely';
import type { CliContext } from './context.js';

/** Render rows as an aligned text table (psql-like). */
export function formatTable(rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return '(0 rows)\n';
  const columns = Object.keys(rows[0]!);
  const cell = (v: unknown) =>
    v === null || v === undefined
      ? ''
      : v instanceof Date
        ? v.toISOString()
        : typeof v === 'object'
          ? JSON.stringify(v)
          : String(v);
  const cells = rows.map((r) => columns.map((c) => cell(r[c])));
  const widths = columns.map((c, i) => Math.min(60, Math.max(c.length, ...cells.map((r) => r[i]!.length))));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.slice(0, 60).padEnd(widths[i]!))
      .join(' | ')
      .trimEnd();
  return (
    [
      line(columns),
      widths.map((w) => '-'.repeat(w)).join('-+-'),
      ...cells.map(line),
      `(${rows.length} row${rows.length === 1 ? '' : 's'})`,
    ].join('\n') + '\n'
  );
}

export function registerSqlCommand(program: Command, ctx: CliContext): void {
  program
    .command('sql')
    .description(
      'run a read-only SQL query against the warehouse (handy for the embedded one) and print the rows',
    )
    .argument('<query>', 'SQL text, e.g. "select count(*) from cybs.transaction_request"')
    .option('--json', 'print rows as JSON', false)
    .action(async (query: string, opts: { json: boolean }) => {
      const warehouse = await ctx.warehouse();
      const rows = await warehouse.session(({ db }) =>
        db.transaction().execute(async (trx) => {
          await sql`set transaction read only`.execute(trx);
          return (await sql.raw<Record<string, unknown>>(query).execute(trx)).rows;
        }),
      );
      ctx.io.stdout.write(opts.json ? `${JSON.stringify(rows, null, 2)}\n` : formatTable(rows));
    });
}
