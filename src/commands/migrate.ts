import type { Command } from 'commander';
import { migrateToLatest } from '../warehouse/migrate.js';
import type { CliContext } from './context.js';

export function registerMigrateCommand(program: Command, ctx: CliContext): void {
  program
    .command('migrate')
    .description(
      'create or upgrade the warehouse schemas (etl, cybs) and the cybs_analytics views; safe to run again',
    )
    .action(async () => {
      const warehouse = await ctx.warehouse({ migrate: false });
      const result = await migrateToLatest(warehouse.db);
      const analytics = await ctx.installAnalytics(warehouse);
      const where = `${warehouse.kind === 'embedded' ? 'embedded warehouse' : 'PostgreSQL'} ${warehouse.location}`;
      ctx.io.stdout.write(
        result.applied.length === 0
          ? `Warehouse ${where} is up to date (${result.alreadyApplied} migrations applied earlier).\n`
          : `Applied ${result.applied.length} migration(s) to ${where}: ${result.applied.join(', ')}.\n`,
      );
      ctx.io.stdout.write(
        analytics.installed
          ? `Installed the cybs_analytics views (${analytics.views}, version ${analytics.version}).\n`
          : `The cybs_analytics views are up to date (version ${analytics.version}).\n`,
      );
    });
}
