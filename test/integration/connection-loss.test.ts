/**
 * The database connection terminated by the server (pg_terminate_backend) in the middle of a COPY:
 * never an unhandled 'error' event. An import says one sentence and exits 1, its run recorded as
 * failed; a backfill retries the window on a new connection; nothing is left `running`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnCli } from '../helpers/cli-process.js';
import type { CliProcess } from '../helpers/cli-process.js';
import { E2E_NOW, createE2eWorld } from '../helpers/e2e.js';
import type { E2eWorld } from '../helpers/e2e.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';

const ROWS = 300_000;

/** Terminate the server process of the first COPY seen in the database before `p` exits; how many. */
async function terminateCopy(url: string, p: CliProcess): Promise<number> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  let terminated = 0;
  let exited = false;
  void p.exited.then(() => (exited = true));
  try {
    while (!exited && terminated === 0) {
      const r = await admin.query(
        `select pg_terminate_backend(pid) as ok from pg_stat_activity
          where datname = current_database() and pid <> pg_backend_pid()
            and state = 'active' and query ilike 'copy %'`,
      );
      terminated += r.rows.filter((row: { ok: boolean }) => row.ok).length;
    }
  } finally {
    await admin.end();
  }
  return terminated;
}

describe('a database connection terminated during COPY', () => {
  let dir: string;
  let database: TestDatabase;
  let config: string;
  let file: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cybs-connloss-'));
    database = await createTestDatabase('connloss');
    config = join(dir, 'config.yaml');
    await writeFile(config, 'log:\n  level: silent\n');
    // A Payment Batch Detail report (the REST-era layout of the real sample) large enough that its
    // COPY is seen in pg_stat_activity.
    file = join(dir, 'PaymentBatchDetailReport.csv');
    const out = createWriteStream(file);
    out.write(
      'org1,PaymentBatchDetailReport_Daily_Classic,PaymentBatchDetail,1.10,2023-10-10T07:00:00Z to 2023-10-11T07:00:00Z,,,,,,,\n' +
        'batch_id,merchant_id,batch_date,request_id,merchant_ref_number,TransactionReferenceNumber,payment_type,currency,amount,ics_applications,status,transaction_date\n',
    );
    for (let i = 0; i < ROWS; i++) {
      const line = `21265991580,org1,2023-10-11T04:15:21Z,${6969304358566698703248n + BigInt(i)},ref-${i},${93211601 + i},MasterCard,USD,35.00,"ics_bill,ics_auth",BATCHED,2023-10-10T09:33:55Z\n`;
      if (!out.write(line)) await once(out, 'drain');
    }
    out.end();
    await once(out, 'finish');
    const migrated = spawnCli(['--config', config, 'migrate'], { DATABASE_URL: database.url });
    expect((await migrated.exited).code, migrated.stderr()).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('says one sentence, exits 1 and marks the run failed', { timeout: 120_000 }, async () => {
    const p = spawnCli(
      ['--config', config, 'import', file, '--report-definition', 'PaymentBatchDetailClass'],
      { DATABASE_URL: database.url },
    );
    const terminated = await terminateCopy(database.url, p);
    const exit = await p.exited;
    expect(terminated, p.stdout() + p.stderr()).toBeGreaterThan(0);
    expect(exit.code, p.stderr()).toBe(1);
    const lines = p.stderr().trim().split('\n');
    expect(lines, p.stderr()).toHaveLength(1);
    expect(lines[0], p.stderr()).toMatch(/^cybs-etl: Lost the database connection/);
    expect(p.stderr()).not.toMatch(/Unhandled|ECONNRESET\n|\n\s+at /);
    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    const runs = await db.query(`select status, error from etl.runs where command = 'import'`);
    await db.end();
    expect(runs.rows).toHaveLength(1);
    expect(runs.rows[0]).toMatchObject({ status: 'failed' });
  });
});

describe('a database connection terminated during a backfill COPY', () => {
  let world: E2eWorld;

  beforeAll(async () => {
    world = await createE2eWorld({
      prefix: 'connloss_run',
      simulator: { organizations: 1, transactionsPerDay: 40_000 },
      configExtra: '  globalConcurrency: 2\n',
      patient: true,
    });
    const m = await world.run(['migrate']);
    expect(m.code, m.stderr).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await world?.close();
  });

  it(
    'retries the window on a new connection; no window or run is left running',
    { timeout: 300_000 },
    async () => {
      const p = spawnCli(
        [
          '--config',
          world.configPath,
          '--now',
          E2E_NOW,
          'backfill',
          '--from',
          '2024-03-05',
          '--to',
          '2024-03-05',
        ],
        world.env,
      );
      const terminated = await terminateCopy(world.database.url, p);
      const exit = await p.exited;
      expect(terminated, p.stdout() + p.stderr()).toBeGreaterThan(0);
      expect(p.stderr()).not.toMatch(/Unhandled|\n\s+at /);
      expect(exit.code, p.stdout() + p.stderr()).toBe(0);
      expect(p.stderr()).toMatch(/window load conflict; retrying the window/);
      const running = await world.db.query(
        `select (select count(*)::int from etl.windows where status = 'running') as windows,
              (select count(*)::int from etl.runs where status = 'running') as runs`,
      );
      expect(running.rows[0]).toEqual({ windows: 0, runs: 0 });
    },
  );
});
