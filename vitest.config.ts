import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The test files that need no database: they never open PostgreSQL (test/helpers/db.ts, the
 * warehouse, the embedded server) nor run a command that does. `npm run test:unit` runs these
 * alone (project `unit`), with no PostgreSQL at all; test/helpers/no-database.ts fails any of them
 * that opens a connection. Every other file is in project `database`. `npm test` runs both.
 */
const NO_DATABASE = [
  'test/unit/**/*.test.ts',
  'test/integration/api-*.test.ts',
  'test/integration/request-safety.test.ts',
  'test/integration/simulator-*.test.ts',
  'test/integration/subscriptions-cli.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: NO_DATABASE, setupFiles: ['test/helpers/no-database.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'database',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...NO_DATABASE],
        },
      },
    ],
  },
});
