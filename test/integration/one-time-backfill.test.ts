/**
 * Backfill beyond subscription history: a subscription that exists only for the last 10 of 60 days;
 * the first 50 come from two one-time reports (≤ 31 days each), the table equals the simulator's
 * ground truth for all 60 days, a second backfill creates no new one-time report, and a one-time
 * report that ends in ERROR fails its windows with the service's verdict.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportDefinition } from '../../packages/simulator/src/render/report-layouts.js';
import { startSimulator } from '../../packages/simulator/src/server/start-simulator.js';
import type { SimulatorHandle } from '../../packages/simulator/src/server/start-simulator.js';
import { cli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';

const DAY = 86_400_000;
const BASE = Date.parse('2024-06-10T19:00:00Z'); // 12:00 in Los Angeles
const FROM = '2024-04-21';
const TO = '2024-06-19';
const ORG = 'sim_merchant_1';
const NAME = 'TransactionRequestReport_Daily';

describe('backfill with one-time reports', () => {
  let dir: string;
  let database: TestDatabase;
  let sim: SimulatorHandle;
  /** The same data with the subscription active from the first day: the ground truth. */
  let twin: SimulatorHandle;
  let db: pg.Client;
  let config: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    const realStart = Date.now();
    const clock = () => BASE + (Date.now() - realStart);
    const common = { seed: 11, organizations: 2, transactionsPerDay: 20, startDate: '2024-04-01', clock };
    sim = await startSimulator({ ...common, defaultSubscriptions: false });
    twin = await startSimulator(common);
    dir = await mkdtemp(join(tmpdir(), 'cybs-onetime-'));
    database = await createTestDatabase('onetime');
    db = new pg.Client({ connectionString: database.url });
    await db.connect();
    const fields = reportDefinition('TransactionRequestClass')!.fields;
    config = join(dir, 'config.yaml');
    await writeFile(
      config,
      [
        'log: { level: silent }',
        'defaults:',
        `  organizations: [${ORG}, sim_merchant_2]`,
        'subscriptions:',
        `  - reportName: ${NAME}`,
        '    reportDefinitionName: TransactionRequestClass',
        `    reportFields: [${fields.join(', ')}]`,
        '    timezone: America/Los_Angeles',
        '    reportPreferences: { fieldNameConvention: SOAPI }',
        '',
      ].join('\n'),
    );
    const k = sim.portfolioCredentials;
    env = {
      CYBS_BASE_URL: sim.baseUrl,
      CYBS_MERCHANT_ID: k.merchantId,
      CYBS_KEY_ID: k.keyId,
      CYBS_SHARED_SECRET: k.sharedSecret,
      CYBS_PORTFOLIO_ID: k.portfolioId,
      DATABASE_URL: database.url,
    };
    // The subscription is created on 2024-06-10 (simulated), then ten days go by.
    const apply = await cli(['--config', config, 'subscriptions', 'apply', '--yes'], { env });
    expect(apply.code).toBe(0);
    sim.advance(10 * DAY);
    twin.advance(10 * DAY);
  }, 60_000);

  afterAll(async () => {
    await db?.end();
    await sim?.close();
    await twin?.close();
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const backfill = (...args: string[]) =>
    cli(
      [
        '--config',
        config,
        '--now',
        new Date(sim.now()).toISOString(),
        'backfill',
        '--pipelines',
        'transaction_request',
        ...args,
      ],
      { env },
    );

  async function tableByDay(org: string) {
    const { rows } = await db.query<{ day: string; currency: string; n: string; total: string }>(
      `select to_char((transaction_date at time zone 'America/Los_Angeles')::date, 'YYYY-MM-DD') as day,
              currency_code as currency, count(*) as n, sum(amount)::text as total
         from cybs.transaction_request where _organization_id = $1 group by 1, 2`,
      [org],
    );
    const out = new Map<string, { rows: number; byCurrency: Record<string, number> }>();
    for (const r of rows) {
      const day = out.get(r.day) ?? { rows: 0, byCurrency: {} };
      day.rows += Number(r.n);
      day.byCurrency[r.currency] = Number(r.total);
      out.set(r.day, day);
    }
    return out;
  }

  function truthByDay(org: string) {
    const report = twin.groundTruth(org, FROM, TO).reports.find((r) => r.reportName === NAME)!;
    return new Map(
      report.days.map((d) => [
        d.reportStartTime.slice(0, 10),
        {
          rows: d.rowCount,
          byCurrency: Object.fromEntries(
            Object.entries(d.amounts.byCurrency).map(([c, v]) => [c, Number(v)]),
          ),
        },
      ]),
    );
  }

  it('loads 60 days: 50 from two one-time reports, 10 from the subscription; equal to the ground truth', async () => {
    const r = await backfill('--from', FROM, '--to', TO, '--organization-id', ORG);
    expect(r.stderr).not.toContain('cybs-etl:');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/windows failed\s+0/);
    expect(r.stdout).toMatch(/windows not ready\s+0/);

    const adhoc = sim.store.adhocReports(ORG);
    expect(adhoc.map((a) => a.reportName).sort()).toEqual([
      `cybs-etl_transaction_request_${ORG}_2024-04-21_2024-05-20`,
      `cybs-etl_transaction_request_${ORG}_2024-05-21_2024-06-19`,
    ]);
    for (const a of adhoc) {
      expect(a.end - a.start).toBeLessThanOrEqual(31 * DAY);
      expect(a.timezone).toBe('America/Los_Angeles');
      expect(a.reportMimeType).toBe('text/csv');
      expect(a.reportFields).toEqual([...reportDefinition('TransactionRequestClass')!.fields]);
    }

    const truth = truthByDay(ORG);
    expect(truth.size).toBe(60);
    const table = await tableByDay(ORG);
    for (const [day, expected] of truth) {
      expect({ day, ...(table.get(day) ?? { rows: 0, byCurrency: {} }) }).toEqual({ day, ...expected });
    }
    expect([...table.keys()].every((d) => truth.has(d))).toBe(true);

    // Where each window came from: one-time reports before 2024-06-10, the subscription from then on.
    const { rows } = await db.query<{ window_key: string; source_ref: string | null; status: string }>(
      `select window_key, source_ref, status from etl.windows where pipeline = 'transaction_request' and organization_id = $1`,
      [ORG],
    );
    expect(rows).toHaveLength(60);
    for (const w of rows) {
      expect(['loaded', 'no_data']).toContain(w.status);
      expect(w.source_ref!.includes('one-time report cybs-etl_')).toBe(w.window_key < '2024-06-10');
    }
  }, 60_000);

  it('a second backfill (--force) finds the one-time reports by name and creates none', async () => {
    const before = await tableByDay(ORG);
    const r = await backfill('--from', FROM, '--to', TO, '--organization-id', ORG, '--force');
    expect(r.code).toBe(0);
    expect(sim.store.adhocReports(ORG)).toHaveLength(2);
    expect(await tableByDay(ORG)).toEqual(before);
    // A sub-range re-uses the report that covers it too, although its own chunk would differ.
    const part = await backfill(
      '--from',
      '2024-05-10',
      '--to',
      '2024-05-25',
      '--organization-id',
      ORG,
      '--force',
    );
    expect(part.code).toBe(0);
    expect(sim.store.adhocReports(ORG)).toHaveLength(2);
    expect(await tableByDay(ORG)).toEqual(before);
  }, 60_000);

  it('a one-time report that ends in ERROR fails its windows with the service verdict', async () => {
    sim.setFaults(`report:error=cybs-etl_transaction_request_sim_merchant_2_*`);
    try {
      const r = await backfill(
        '--from',
        '2024-05-01',
        '--to',
        '2024-05-03',
        '--organization-id',
        'sim_merchant_2',
      );
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/windows failed\s+3/);
      expect(r.stdout).toContain('EXTRACT_ONE_TIME_ERROR');
      expect(r.stdout).toContain('ended in ERROR at the service');
      const { rows } = await db.query<{ status: string; last_error_message: string }>(
        `select status, last_error_message from etl.windows where organization_id = 'sim_merchant_2'`,
      );
      expect(rows).toHaveLength(3);
      for (const w of rows) {
        expect(w.status).toBe('failed');
        expect(w.last_error_message).toContain(
          'cybs-etl_transaction_request_sim_merchant_2_2024-05-01_2024-05-03',
        );
      }
      expect(sim.store.adhocReports('sim_merchant_2')).toHaveLength(1);
    } finally {
      sim.setFaults('');
    }
  }, 60_000);
});
