/**
 * An XML report window through the executor (search → download → fast or per-row XML path →
 * load): the records' table and the child tables of their repeated groups are written in the
 * window's transaction, every child row belongs to a record of the same source, and a forced
 * re-load of the same file writes nothing in any of the tables.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_PIPELINES } from '../../pipelines/index.js';
import { startSimulator } from '../../packages/simulator/src/server/start-simulator.js';
import type { SimulatorHandle } from '../../packages/simulator/src/server/start-simulator.js';
import { cli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';

const DAY_MS = 86_400_000;
const REPORT_NAME = 'TransactionRequestReport_Daily';
const pipeline = REPORT_PIPELINES.find((p) => p.reportDefinitionName === 'TransactionRequestClass')!;
const children = Object.values(pipeline.childTables ?? {});

describe('an XML report window with child tables', () => {
  let sim: SimulatorHandle;
  let database: TestDatabase;
  let client: pg.Client;
  let dir: string;
  let config: string;
  let env: Record<string, string>;
  const day = new Date(Date.now() - 4 * DAY_MS).toISOString().slice(0, 10);

  beforeAll(async () => {
    sim = await startSimulator({
      seed: 7,
      organizations: 1,
      transactionsPerDay: 30,
      quietDayRate: 0,
      startDate: new Date(Date.now() - 10 * DAY_MS).toISOString().slice(0, 10),
    });
    for (const org of sim.organizations)
      sim.store.findSubscription(org, REPORT_NAME)!.reportMimeType = 'application/xml';
    database = await createTestDatabase('xmlwindow');
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
    dir = await mkdtemp(join(tmpdir(), 'cybs-xml-window-'));
    config = join(dir, 'config.yaml');
    await writeFile(
      config,
      [
        'log:',
        '  level: silent',
        'defaults:',
        `  startDate: "${day}"`,
        `  organizations: [${sim.organizations.join(', ')}]`,
        '',
      ].join('\n'),
    );
    const key = sim.portfolioCredentials;
    env = {
      CYBS_BASE_URL: sim.baseUrl,
      CYBS_MERCHANT_ID: key.merchantId,
      CYBS_KEY_ID: key.keyId,
      CYBS_SHARED_SECRET: key.sharedSecret,
      CYBS_PORTFOLIO_ID: key.portfolioId,
      DATABASE_URL: database.url,
    };
  }, 60_000);

  afterAll(async () => {
    await client?.end();
    await database?.drop();
    await sim?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const backfill = (...extra: string[]) =>
    cli(
      ['--config', config, 'backfill', '--from', day, '--to', day, '--pipelines', pipeline.name, ...extra],
      {
        env,
      },
    );
  const count = async (table: string) =>
    Number((await client.query(`select count(*)::int as n from cybs."${table}"`)).rows[0].n);
  /** One after the other: one pg client runs one query at a time. */
  const counts = async (tables: readonly { name: string }[]) => {
    const all: number[] = [];
    for (const t of tables) all.push(await count(t.name));
    return all;
  };

  it('loads the records and creates the child tables in the window; every item has its record', async () => {
    const r = await backfill();
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(await count(pipeline.table.name)).toBeGreaterThan(0);
    expect(children.map((t) => t.name)).toEqual([
      'transaction_request_application_reply',
      'transaction_request_line_item',
    ]);
    for (const table of children) {
      const orphans = await client.query(
        `select count(*)::int as n from cybs."${table.name}" c
          where not exists (select 1 from cybs."${pipeline.table.name}" p
                             where p.request_id = c.request_id and p._organization_id = c._organization_id
                               and p._source = c._source)`,
      );
      expect({ table: table.name, orphans: orphans.rows[0].n }).toEqual({ table: table.name, orphans: 0 });
    }
  });

  it('a forced re-load of the same file writes nothing in any table', async () => {
    const before = await counts([pipeline.table, ...children]);
    const loadedAt = await client.query(
      `select max(_loaded_at)::text as t from cybs."${pipeline.table.name}"`,
    );
    const r = await backfill('--force');
    expect(r.code).toBe(0);
    expect(await counts([pipeline.table, ...children])).toEqual(before);
    const after = await client.query(`select max(_loaded_at)::text as t from cybs."${pipeline.table.name}"`);
    expect(after.rows[0].t).toBe(loadedAt.rows[0].t);
    const windows = await client.query(`select status, counts from etl.windows where pipeline = $1`, [
      pipeline.name,
    ]);
    expect(
      windows.rows.map((w) => [w.status, w.counts.inserted, w.counts.updated, w.counts.deleted]),
    ).toEqual(windows.rows.map(() => ['loaded', 0, 0, 0]));
  });
});
