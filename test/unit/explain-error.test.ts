/**
 * Issue 27, finding 6: what reaches the command line is one sentence with the fix and the right
 * exit code; "unexpected error" is left to what is truly unexpected. Errors here are real ones,
 * raised by the file system and the network stack of this machine.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lineAndColumn, queryError } from '../../src/commands/sql.js';
import { explainError, unreachableWarehouse, warehouseAddress } from '../../src/commands/explain-error.js';
import { CybsError, configError } from '../../src/errors.js';

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('explainError', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cybs-explain-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('passes the product’s own errors through with their exit code', () => {
    expect(explainError(configError('config.yaml: key "x": bad.'))).toEqual({
      message: 'config.yaml: key "x": bad.',
      exitCode: 2,
    });
    expect(explainError(new CybsError('LOAD_FAILED', 'Load failed.', { stage: 'load' })).exitCode).toBe(1);
  });

  it('gives a file system failure its path, reason and fix', () => {
    const missing = join(dir, 'nope', 'file');
    expect(explainError(thrown(() => readFileSync(missing)))).toEqual({
      message: `Cannot open ${missing}: no such file or directory (ENOENT); check the path.`,
      exitCode: 1,
    });
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    const e = explainError(thrown(() => mkdirSync(join(file, 'sub'))));
    expect(e.message).toBe(
      `Cannot mkdir ${join(file, 'sub')}: a part of the path is not a directory (ENOTDIR); check the path.`,
    );
  });

  it('says which address could not be listened on', async () => {
    const first = createServer();
    await new Promise<void>((r) => first.listen(0, '127.0.0.1', r));
    const port = (first.address() as { port: number }).port;
    const second = createServer();
    const error = await new Promise<unknown>((resolve) => {
      second.once('error', resolve);
      second.listen(port, '127.0.0.1');
    });
    first.close();
    expect(explainError(error)).toEqual({
      message: `Cannot listen on 127.0.0.1:${port}: the address is already in use (EADDRINUSE); choose another port or address (--port, --host).`,
      exitCode: 1,
    });
  });

  it('keeps "unexpected error" for what has no known cause, in one line', () => {
    const e = explainError(new TypeError('x is not a function\n    at somewhere'));
    expect(e.exitCode).toBe(1);
    expect(e.message).toBe(
      'unexpected error: x is not a function at somewhere; run again with --verbose for the stack trace, and report it.',
    );
  });
});

describe('a warehouse that cannot be reached', () => {
  it('names host and port, never the password', () => {
    expect(warehouseAddress('postgres://u:secret@db.example:6543/w')).toBe('db.example:6543');
    expect(warehouseAddress('postgres://u@db/w')).toBe('db:5432');
    expect(warehouseAddress('postgres:///w?host=/run/postgresql')).toBe(
      'the socket in /run/postgresql (port 5432)',
    );
  });

  it('is found under the errors that wrap it, and other failures are left alone', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5999'), {
      code: 'ECONNREFUSED',
      syscall: 'connect',
    });
    const wrapped = new CybsError('LOAD_MIGRATION', 'Migration (unknown) failed: connect ECONNREFUSED', {
      stage: 'load',
      cause: new AggregateError([refused], ''),
    });
    const e = unreachableWarehouse(wrapped, {
      url: 'postgres://u:pw@127.0.0.1:5999/x',
      setting: 'DATABASE_URL',
    });
    expect(e?.code).toBe('LOAD_CONNECT');
    expect(e?.exitCode).toBe(1);
    expect(e?.message).toBe(
      'Cannot reach the warehouse at 127.0.0.1:5999 (DATABASE_URL): nothing accepts connections there (connection refused); start PostgreSQL there or correct DATABASE_URL.',
    );
    expect(
      unreachableWarehouse(new Error('relation "x" does not exist'), {
        url: 'postgres://h/x',
        setting: 'DATABASE_URL',
      }),
    ).toBeUndefined();
  });

  it('is not a connection that a load had and lost (reset mid-COPY), but is a reset when connecting', () => {
    const reset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' });
    const target = { url: 'postgres://h:5432/x', setting: 'DATABASE_URL' };
    const lost = new CybsError('LOAD_CONNECTION', 'Lost the database connection: read ECONNRESET.', {
      stage: 'load',
      retryable: true,
      cause: reset(),
    });
    expect(unreachableWarehouse(lost, target)).toBeUndefined();
    expect(unreachableWarehouse(reset(), target)?.message).toMatch(
      /^Cannot reach the warehouse at h:5432 \(DATABASE_URL\): the server closed the connection at once;/,
    );
  });
});

describe('a query error’s position', () => {
  it('is the line and column of PostgreSQL’s character offset', () => {
    expect(lineAndColumn('select x', 8)).toEqual({ line: 1, column: 8 });
    expect(lineAndColumn('select 1,\n  2 form x', 20)).toEqual({ line: 2, column: 10 });
    // Characters, not UTF-16 units: the emoji before the error is one character.
    expect(lineAndColumn("select '😀', nope", 14)).toEqual({ line: 1, column: 14 });
  });

  it('reads as one sentence with the database’s hint, exit 1', () => {
    const e = queryError(
      'select\n  nme from t',
      Object.assign(new Error('column "nme" does not exist'), {
        code: '42703',
        position: '10',
        hint: 'Perhaps you meant to reference the column "t.name".',
      }),
    );
    expect(e.message).toBe(
      'The query failed at line 2, column 3: column "nme" does not exist (Perhaps you meant to reference the column "t.name").',
    );
    expect(e.exitCode).toBe(1);
  });
});
