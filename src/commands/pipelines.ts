import type { Command } from 'commander';
import { findReportDefinition } from '../catalog/index.js';
import { tableDdl } from '../load/ddl.js';
import { pipelineTables } from '../pipeline/define-pipeline.js';
import { resolvePipelines } from '../pipeline/resolve-pipelines.js';
import type { CliContext } from './context.js';
import { formatTable } from './sql.js';

export function registerPipelinesCommand(program: Command, ctx: CliContext): void {
  program
    .command('pipelines')
    .description("list pipelines, their tables and whether they are enabled; --sql prints the tables' DDL")
    .option('--sql', 'print the CREATE TABLE statements (with comments) of every pipeline table', false)
    .option('--json', 'machine-readable output', false)
    .action(async (opts: { sql: boolean; json: boolean }) => {
      if (opts.sql) {
        const statements = ctx.pipelines.flatMap((p) => pipelineTables(p).flatMap((t) => tableDdl(t)));
        ctx.io.stdout.write(`${statements.map((s) => `${s.trim().replace(/;$/, '')};`).join('\n\n')}\n`);
        return;
      }
      const config = await ctx.config();
      const resolved = resolvePipelines(ctx.pipelines, config, {
        defaultOrganizations: ['(credential)'],
        now: new Date(),
      });
      const rows = resolved.map((p) => ({
        pipeline: p.name,
        kind:
          p.def.kind === 'report'
            ? `report ${p.def.reportDefinitionName}${findReportDefinition(p.def.reportDefinitionName)?.verified === false ? ' (unverified)' : ''}`
            : `on-demand ${p.def.endpoint}`,
        enabled: p.enabled ? 'yes' : 'no',
        source: p.def.kind === 'report' ? `subscription ${p.reportName}` : `/reporting/v3/${p.def.endpoint}`,
        tables: pipelineTables(p.def)
          .map((t) => `${t.schema}.${t.name}`)
          .join(', '),
        schedule: `${p.schedule.cron} ${p.schedule.timezone}`,
      }));
      ctx.io.stdout.write(opts.json ? `${JSON.stringify(rows, null, 2)}\n` : formatTable(rows));
    });
}
