import type { Command } from 'commander';
import { migrateToLatest } from '../warehouse/migrate.js';
import type { CliContext } from './context.js';

export function registerMigrateCommand(program: Command, ctx: CliContext): void {
  program
    .command('migrate')
    .description(
      'create or upgrade the warehouse schemas (etl, cybs), the cybs_analytics views and the window queue (pgboss); safe to run again',
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
      // The window queue's schema and queues too, so that the first run or worker has no DDL to do
      // (and a role that may not create schemas can run them).
      const { openWindowQueue } = await import('../queue/window-queue.js');
      const queue = await openWindowQueue(warehouse.connection, {
        logger: await ctx.logger(),
        supervise: false,
        settings: (await ctx.config()).queue,
        maxConnections: 1,
      });
      await queue.stop({ graceful: false, timeoutMs: 1_000 });
      ctx.io.stdout.write('The window queue (schema pgboss) is ready.\n');
    });
}
