import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The test files that need no database: they never open PostgreSQL (test/helpers/db.ts, the
 * warehouse, the embedded server) nor run a command that does. All of test/unit/ and of the simulator
 * package's tests, and the files of
 * test/integration/ named one by one (a new one is in `database` until it is listed here).
 * `npm run test:unit` runs these alone (project `unit`), with no PostgreSQL at all;
 * test/helpers/no-database.ts fails any of them that opens a connection. Every other file is in
 * project `database`. `npm test` runs both.
 */
const NO_DATABASE = [
  'test/unit/**/*.test.ts',
  // The simulator package's own tests (packages/simulator): it never opens a database.
  'packages/simulator/test/**/*.test.ts',
  ...[
    'api-cli',
    'api-download',
    'api-secrets',
    'request-safety',
    'simulator-cli',
    'simulator-memory',
    'simulator-strictness',
    'subscriptions-cli',
  ].map((name) => `test/integration/${name}.test.ts`),
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
          include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...NO_DATABASE],
        },
      },
    ],
  },
});
