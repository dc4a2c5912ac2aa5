/**
 * Setup of the tests that need no database (vitest.config.ts, project `unit`). A PostgreSQL
 * connection opened by one of them (through pg, which kysely, the warehouse, the embedded server
 * and test/helpers/db.ts all use) is refused and fails the test, whether or not a server would
 * have answered: such a test must not pass only where PostgreSQL happens to run, nor be skipped
 * where it does not. It belongs in the `database` project. Child processes are not covered: a test
 * that starts the CLI gives it its environment itself.
 */
import pg from 'pg';
import { afterAll, afterEach, expect } from 'vitest';

const opened: string[] = [];

function refusal(): Error {
  const last = opened[opened.length - 1];
  return new Error(
    `${expect.getState().testPath ?? 'this test file'} is in the no-database set (vitest.config.ts NO_DATABASE) but opened a PostgreSQL connection (${last}): move it to the database project.`,
  );
}

pg.Client.prototype.connect = function connect(this: pg.Client, callback?: (error: Error) => void) {
  opened.push(`${this.host ?? '?'}:${this.port ?? '?'}/${this.database ?? '?'}`);
  const error = refusal();
  if (callback) {
    process.nextTick(callback, error);
    return undefined;
  }
  return Promise.reject(error);
} as typeof pg.Client.prototype.connect;

/** Fails the test even when the code under test caught the refused connection. */
function failIfOpened(): void {
  if (opened.length === 0) return;
  const error = refusal();
  opened.length = 0;
  throw error;
}

afterEach(failIfOpened);
afterAll(failIfOpened);
