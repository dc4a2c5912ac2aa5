/**
 * Issue 27, finding 6: every error the command line ends with is one sentence with the fix, and
 * the right exit code (2 usage or config, 1 runtime), against a real PostgreSQL: a warehouse that
 * cannot be reached names its address and the setting; a URL that is not PostgreSQL, a bad cron
 * or time zone are config errors naming the key path and the file given with -c; a query error
 * says where in the query; a database refusal says what to grant.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import type { CliResult } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';

/** A local port nothing listens on (one just let go). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** One line on stderr, prefixed, with nothing on stdout. */
function oneSentence(r: CliResult): string {
  const lines = r.stderr.trim().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^cybs-etl: /);
  expect(lines[0]).not.toMatch(/unexpected error|\n\s+at /);
  return lines[0]!.slice('cybs-etl: '.length);
}

describe('errors of the command line (one sentence, the fix, the exit code)', () => {
  let dir: string;
  let database: TestDatabase;
  let config: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cybs-errors-'));
    database = await createTestDatabase('errors');
    config = join(dir, 'site.yaml');
    await writeFile(config, 'log:\n  level: silent\n');
  });
  afterAll(async () => {
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('a DATABASE_URL nothing answers at: its host, port and the setting, exit 1', async () => {
    const port = await closedPort();
    const url = `postgres://loader:s3cret-pw@127.0.0.1:${port}/warehouse`;
    for (const args of [['migrate'], ['status'], ['sql', 'select 1']]) {
      const r = await cli(['--config', config, ...args], { env: { DATABASE_URL: url } });
      expect(r.code, args.join(' ')).toBe(1);
      expect(oneSentence(r)).toBe(
        `Cannot reach the warehouse at 127.0.0.1:${port} (DATABASE_URL): nothing accepts connections there (connection refused); start PostgreSQL there or correct DATABASE_URL.`,
      );
      expect(r.stderr).not.toContain('s3cret-pw');
    }
  });

  it('warehouse.url of the file given with -c naming a database that does not exist: that file, exit 1', async () => {
    const url = new URL(database.url);
    url.pathname = '/cybs_no_such_database';
    const file = join(dir, 'url.yaml');
    await writeFile(file, `log:\n  level: silent\nwarehouse:\n  url: "${url.toString()}"\n`);
    const r = await cli(['--config', file, 'status']);
    expect(r.code).toBe(1);
    expect(oneSentence(r)).toBe(
      `Cannot reach the warehouse at ${url.host} (warehouse.url in ${file}): database "cybs_no_such_database" does not exist; create the database (createdb) or correct its name in warehouse.url in ${file}.`,
    );
  });

  it('a mysql:// URL is a config error, exit 2, before anything connects', async () => {
    const env = await cli(['--config', config, 'status'], {
      env: { DATABASE_URL: 'mysql://root:hunter22@127.0.0.1:3306/warehouse' },
    });
    expect(env.code).toBe(2);
    expect(oneSentence(env)).toBe(
      'DATABASE_URL is not a PostgreSQL URL (it starts with "mysql:"); the warehouse is PostgreSQL: set it to postgres://user@host:5432/database, or unset it for the embedded warehouse.',
    );
    const file = join(dir, 'mysql.yaml');
    await writeFile(file, 'warehouse:\n  url: mysql://root@127.0.0.1:3306/warehouse\n');
    const inFile = await cli(['--config', file, 'status']);
    expect(inFile.code).toBe(2);
    expect(oneSentence(inFile)).toMatch(
      new RegExp(
        `^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: key "warehouse\\.url": is not a PostgreSQL URL`,
      ),
    );
  });

  it('a bad cron or time zone is exit 2 naming the -c file and the key path, when the config loads', async () => {
    const file = join(dir, 'cron.yaml');
    await writeFile(
      file,
      'pipelines:\n  transaction_request:\n    schedule: { cron: "0 7 * *", timezone: UTC }\n',
    );
    // Any command that reads the config says so, not only the scheduler when it starts a task.
    for (const command of [['status'], ['pipelines'], ['schedule', '--no-catch-up']]) {
      const r = await cli(['--config', file, ...command], { env: { DATABASE_URL: database.url } });
      expect(r.code, command.join(' ')).toBe(2);
      expect(oneSentence(r)).toBe(
        `${file}: key "pipelines.transaction_request.schedule.cron": "0 7 * *" is not a cron expression (expected 5 or 6 fields but got 4); expected five fields, minute hour day-of-month month day-of-week (or six, seconds first), such as "0 7 * * *".`,
      );
    }
    const zone = join(dir, 'zone.yaml');
    await writeFile(zone, 'pipelines:\n  net_fundings:\n    timezone: America/Atlantis\n');
    const r = await cli(['--config', zone, 'pipelines']);
    expect(r.code).toBe(2);
    expect(oneSentence(r)).toBe(
      `${zone}: key "pipelines.net_fundings.timezone": unknown time zone "America/Atlantis"; expected an IANA zone such as UTC or America/Chicago.`,
    );
  });

  it('an unknown pipeline in a -c file names that file', async () => {
    const file = join(dir, 'unknown.yaml');
    await writeFile(file, 'pipelines:\n  transaction_requests: { enabled: true }\n');
    const r = await cli(['--config', file, 'pipelines']);
    expect(r.code).toBe(2);
    expect(oneSentence(r)).toMatch(
      new RegExp(
        `^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: unknown pipeline "pipelines\\.transaction_requests"; known pipelines: transaction_request, `,
      ),
    );
  });

  describe('on a migrated warehouse', () => {
    beforeAll(async () => {
      const r = await cli(['--config', config, 'migrate'], { env: { DATABASE_URL: database.url } });
      expect(r.code, r.stderr).toBe(0);
    });

    it('a query error says where in the query, exit 1; a write stays a refusal, exit 2', async () => {
      const env = { DATABASE_URL: database.url };
      const typo = await cli(
        ['--config', config, 'sql', 'select status,\n       count(*)\n  form etl.runs'],
        {
          env,
        },
      );
      expect(typo.code).toBe(1);
      expect(oneSentence(typo)).toBe('The query failed at line 3, column 8: syntax error at or near "etl".');
      const column = await cli(['--config', config, 'sql', 'select statsu from etl.runs'], { env });
      expect(column.code).toBe(1);
      expect(oneSentence(column)).toMatch(
        /^The query failed at line 1, column 8: column "statsu" does not exist \(Perhaps you meant to reference the column "runs\.status"\)\.$/,
      );
      const runtime = await cli(['--config', config, 'sql', 'select 1 / 0'], { env });
      expect(runtime.code).toBe(1);
      expect(oneSentence(runtime)).toBe('The query failed: division by zero.');
      const write = await cli(
        ['--config', config, 'sql', 'with d as (delete from etl.runs returning 1) select 1'],
        {
          env,
        },
      );
      expect(write.code).toBe(2);
      expect(oneSentence(write)).toMatch(
        /^The query was refused: cannot execute \w+ in a read-only transaction; the sql command runs one statement that only reads\.$/,
      );
    });

    it('a role without rights: what PostgreSQL refused and what to grant, exit 1', async () => {
      const admin = new pg.Client({ connectionString: database.url });
      await admin.connect();
      const role = `cybs_norights_${database.name.slice(-8)}`;
      try {
        await admin.query(`drop role if exists ${role}`);
        await admin.query(`create role ${role} login`);
        const url = new URL(database.url);
        url.username = role;
        const r = await cli(['--config', config, 'status'], { env: { DATABASE_URL: url.toString() } });
        expect(r.code).toBe(1);
        expect(oneSentence(r)).toMatch(
          /^Migrating the warehouse failed: permission denied for schema etl \(SQLSTATE 42501\); grant the role cybs-etl connects as the rights it needs \(see sql\/roles\.sql\)\.$/,
        );
      } finally {
        await admin.query(`drop owned by ${role}`).catch(() => {});
        await admin.end();
        const cleanup = new pg.Client({ connectionString: database.url });
        await cleanup.connect();
        await cleanup.query(`drop role if exists ${role}`).catch(() => {});
        await cleanup.end();
      }
    });
  });
});
