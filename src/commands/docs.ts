import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import { sql } from 'kysely';
import { configError } from '../errors.js';
import type { DictionaryRow } from '../analytics/docs.js';
import type { CliContext } from './context.js';

export function registerDocsCommand(program: Command, ctx: CliContext): void {
  program
    .command('docs')
    .description(
      'render the data dictionary (cybs_analytics.data_dictionary): one page per table with the join map and example queries, or a dbt sources.yml',
    )
    .option('--format <md|html>', 'page format', 'md')
    .option('--out <dir>', 'write the pages to this directory (without it: the index on stdout)')
    .option('--dbt <dir>', 'write a dbt sources.yml of the warehouse to this directory')
    .action(async (opts: { format: string; out?: string; dbt?: string }) => {
      if (opts.format !== 'md' && opts.format !== 'html')
        throw configError(`--format ${opts.format}: expected md or html.`);
      const config = await ctx.config();
      const warehouse = await ctx.warehouse();
      const { dbtSourcesYaml, renderDocs } = await import('../analytics/docs.js');
      const rows = (
        await sql<DictionaryRow>`select * from cybs_analytics.data_dictionary order by table_schema, table_name, ordinal`.execute(
          warehouse.db,
        )
      ).rows;
      const out = ctx.io.stdout;
      if (opts.dbt) {
        const { resolvePipelines } = await import('../pipeline/resolve-pipelines.js');
        const { pipelineTables } = await import('../pipeline/define-pipeline.js');
        // Freshness from each pipeline's limits: a window is due readyAfterHours after it ends and
        // fails after notReadyHorizonHours; a table is fresh while its newest window is that recent.
        const freshness = new Map<string, { warnAfterHours: number; errorAfterHours: number }>();
        for (const p of resolvePipelines(ctx.pipelines, config, {
          defaultOrganizations: [],
          now: ctx.now(),
        })) {
          const windowHours = p.def.kind === 'report' ? 24 : 24 * p.windowDays;
          for (const t of pipelineTables(p.def))
            freshness.set(t.name, {
              warnAfterHours: windowHours + p.readyAfterHours,
              errorAfterHours: windowHours + p.notReadyHorizonHours,
            });
        }
        await mkdir(opts.dbt, { recursive: true });
        const file = join(opts.dbt, 'sources.yml');
        await writeFile(file, dbtSourcesYaml(rows, freshness));
        out.write(`Wrote ${file}: sources cybs and cybs_analytics for dbt.\n`);
      }
      const files = renderDocs(rows, opts.format);
      if (opts.out) {
        await mkdir(opts.out, { recursive: true });
        for (const f of files) await writeFile(join(opts.out, f.path), f.content);
        out.write(
          `Wrote ${files.length} pages to ${opts.out} (start at ${join(opts.out, files[0]!.path)}).\n`,
        );
      } else if (!opts.dbt) {
        out.write(files[0]!.content);
      }
    });
}
