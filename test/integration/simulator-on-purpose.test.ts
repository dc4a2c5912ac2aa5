/**
 * Issue 27, finding 2: the built-in simulator starts only on purpose. With a PostgreSQL warehouse
 * and no CYBS_* credentials (docker-compose's default), `schedule` used to start the simulator and
 * load `sim_merchant_*` rows into the warehouse with one warn line. Now every command that calls the
 * service refuses before doing anything (exit 2, naming the variables and --simulator); with
 * --simulator it loads the simulator's merchants, but never into a warehouse that holds a real
 * organization's data.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/db.js';
import { samplesDir } from '../unit/parse/helpers.js';
import type { TestDatabase } from '../helpers/db.js';

const SAMPLE = join(samplesDir, 'rest-v3-PaymentBatchDetailReport_Daily_Classic.sul-dlss-fixture.csv');

describe('the built-in simulator only on purpose', () => {
  let dir: string;
  let config: string;
  let database: TestDatabase;
  let db: pg.Client;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cybs-sim-purpose-'));
    config = join(dir, 'config.yaml');
    // Loads with the simulator take one small on-demand pipeline (--pipelines) over three days.
    await writeFile(
      config,
      `log:\n  level: silent\ndefaults:\n  startDate: "${new Date(Date.now() - 3 * 86_400_000).toISOString().slice(0, 10)}"\n`,
    );
    database = await createTestDatabase('sim_purpose');
    db = new pg.Client({ connectionString: database.url });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const env = () => ({ DATABASE_URL: database.url });
  const etlSchemaExists = async () =>
    (await db.query(`select 1 from pg_namespace where nspname = 'etl'`)).rowCount === 1;

  it.each([
    ['run'],
    ['backfill', '--from', '2024-03-01', '--to', '2024-03-02'],
    ['schedule', '--port', '0'],
    ['subscriptions', 'list'],
  ])(
    'PostgreSQL and no credentials: `%s` exits 2 before doing anything, naming the variables and --simulator',
    async (...args) => {
      const r = await cli(['--config', config, ...args], { env: env() });
      expect(r.code, r.stdout + r.stderr).toBe(2);
      expect(r.stderr).toBe(
        'cybs-etl: no CyberSource credentials in the environment and the warehouse is PostgreSQL (DATABASE_URL): ' +
          'set CYBS_MERCHANT_ID, CYBS_KEY_ID and CYBS_SHARED_SECRET (or CYBS_AUTH=jwt-p12 with CYBS_P12_PATH and CYBS_P12_PASSWORD), ' +
          "or pass --simulator to load the built-in simulator's made-up merchants into it.\n",
      );
      expect(r.stdout).toBe('');
      // Not even migrated: nothing was done.
      expect(await etlSchemaExists()).toBe(false);
    },
  );

  it('names warehouse.url when the config file sets it', async () => {
    const withUrl = join(dir, 'url.yaml');
    await writeFile(withUrl, `log:\n  level: silent\nwarehouse:\n  url: ${database.url}\n`);
    const r = await cli(['--config', withUrl, 'run']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`the warehouse is PostgreSQL (warehouse.url in ${withUrl})`);
    expect(await etlSchemaExists()).toBe(false);
  });

  it('with --simulator, loads the simulated merchants and says so', async () => {
    const r = await cli(['--config', config, 'run', '--simulator', '--pipelines', 'net_fundings'], {
      env: env(),
    });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /^No CyberSource credentials in the environment .*: using the built-in simulator at/,
    );
    expect(r.stdout).toContain('Data below is simulated, not yours.');
    const orgs = await db.query(`select distinct organization_id from etl.windows order by 1`);
    expect(orgs.rows.map((o) => o.organization_id)).toEqual(['sim_merchant_1', 'sim_merchant_2']);
  });

  it('never loads simulated rows into a warehouse that holds a real organization', async () => {
    const imported = await cli(
      ['--config', config, 'import', SAMPLE, '--report-definition', 'PaymentBatchDetailClass'],
      { env: env() },
    );
    expect(imported.code, imported.stderr).toBe(0);
    const windowsBefore = (await db.query(`select count(*)::int as n, max(updated_at) as t from etl.windows`))
      .rows[0];
    const runsBefore = (await db.query(`select count(*)::int as n from etl.runs`)).rows[0].n as number;
    for (const args of [
      ['run', '--simulator'],
      ['backfill', '--simulator', '--from', '2024-03-01', '--to', '2024-03-01'],
      ['schedule', '--simulator', '--port', '0'],
    ]) {
      const r = await cli(['--config', config, ...args], { env: env() });
      expect(r.code, r.stdout + r.stderr).toBe(2);
      expect(r.stderr).toMatch(
        /^cybs-etl: the warehouse postgres:\/\/.* holds data of real organizations \(wfgsulair\), so the built-in simulator's made-up merchants are not loaded into it: set CYBS_MERCHANT_ID, CYBS_KEY_ID and CYBS_SHARED_SECRET .* to load from CyberSource, or use another warehouse for the simulator\.\n$/,
      );
    }
    expect(
      (await db.query(`select count(*)::int as n, max(updated_at) as t from etl.windows`)).rows[0],
    ).toEqual(windowsBefore);
    expect((await db.query(`select count(*)::int as n from etl.runs`)).rows[0].n).toBe(runsBefore);
  });
});
