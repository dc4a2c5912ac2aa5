import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { warehouseTempDir } from '../helpers/temp-dir.js';

describe('cybs-etl command line (foundation)', () => {
  let dir: string;
  let database: TestDatabase;

  beforeAll(async () => {
    dir = await warehouseTempDir('cybs-cli-');
    database = await createTestDatabase('cli');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await database.drop();
  });

  it('lists every command in --help, and each command has its own --help', async () => {
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    for (const name of [
      'run',
      'backfill',
      'schedule',
      'status',
      'import',
      'subscriptions',
      'simulator',
      'api',
      'pipelines',
      'migrate',
    ]) {
      expect(help.stdout).toContain(name);
      const sub = await cli([name, '--help']);
      expect(sub.code).toBe(0);
      expect(sub.stdout).toContain(`Usage: cybs-etl ${name}`);
    }
  });

  it('reads only its own exit code: an earlier process.exitCode neither leaks in nor is lost', async () => {
    process.exitCode = 3;
    try {
      expect((await cli(['--version'])).code).toBe(0);
      expect(process.exitCode).toBe(3);
    } finally {
      process.exitCode = undefined;
    }
  });

  it('exits 2 on a usage error', async () => {
    const r = await cli(['no-such-command']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown command 'no-such-command'");
  });

  it('migrates PostgreSQL named by DATABASE_URL, twice without change', async () => {
    const config = join(dir, 'pg.yaml');
    await writeFile(config, 'log:\n  level: silent\n');
    const first = await cli(['--config', config, 'migrate'], { env: { DATABASE_URL: database.url } });
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/Applied 11 migration\(s\)/);
    expect(first.stdout).toMatch(/The window queue \(schema pgboss\) is ready/);
    const second = await cli(['--config', config, 'migrate'], { env: { DATABASE_URL: database.url } });
    expect(second.stdout).toMatch(/up to date/);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const r = await client.query(
      "select count(*)::int as n from information_schema.tables where table_schema = 'etl'",
    );
    expect(r.rows[0].n).toBeGreaterThanOrEqual(4);
    // The window queue is installed with the rest: a run after it does no DDL of its own there.
    const q = await client.query("select name from pgboss.queue where name like 'cybs_etl_%' order by name");
    expect(q.rows.map((row) => row.name)).toEqual([
      'cybs_etl_one_time_reports',
      'cybs_etl_windows',
      'cybs_etl_windows_failed',
    ]);
    await client.end();
  });

  it('returns its own exit code, not one left in process.exitCode by an earlier invocation', async () => {
    // Regression: run/backfill set the global process.exitCode on failed windows, and runCli
    // returned it, so every later invocation in the same process (tests, embedding) "failed".
    const config = join(dir, 'pg.yaml');
    await writeFile(config, 'log:\n  level: silent\n');
    const before = process.exitCode;
    process.exitCode = 1;
    try {
      const r = await cli(['--config', config, 'migrate'], { env: { DATABASE_URL: database.url } });
      expect(r.code).toBe(0);
    } finally {
      process.exitCode = before;
    }
  });

  it('migrates the embedded warehouse when no DATABASE_URL is set', async () => {
    const config = join(dir, 'lite.yaml');
    await writeFile(config, `warehouse:\n  path: ${join(dir, 'wh')}\n`);
    const r = await cli(['--config', config, 'migrate']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('embedded warehouse');
  });

  it('fails with exit 2 and the key path on a typo in the config file', async () => {
    const config = join(dir, 'typo.yaml');
    await writeFile(config, 'warehouse:\n  pth: ./x\n');
    const r = await cli(['--config', config, 'migrate']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('cybs-etl: ' + config + ': unknown key "warehouse.pth".\n');
  });

  it('refuses a pipeline reportName that is a path, with exit 2 and the key path (issue 26 #9)', async () => {
    const config = join(dir, 'traversal.yaml');
    await writeFile(config, 'pipelines:\n  transaction_request:\n    reportName: "../../../pwn_rn"\n');
    const r = await cli(['--config', config, 'run', '--pipelines', 'transaction_request']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `cybs-etl: ${config}: key "pipelines.transaction_request.reportName": expected the name of a subscription: 1-80 letters, digits, "-", "_" or "+" (the service reads subscriptions only by such names).\n`,
    );
  });

  it('says one sentence for a missing config file, with no stack trace', async () => {
    const r = await cli(['--config', join(dir, 'missing.yaml'), 'migrate']);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});
