/**
 * Backfill beyond subscription history for a subscription whose periods are not calendar days
 * (DAILY from 09:00 in Asia/Kolkata): the periods before it existed come from one one-time report
 * of whole periods, each window keeps the rows of its own 09:00-to-09:00 period under the source a
 * subscription report would have, and the table equals the ground truth of a twin simulator whose
 * subscription existed all along.
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
import { simulatorEnv } from '../helpers/e2e.js';
import { compareWithGroundTruth } from '../helpers/ground-truth.js';

const DAY = 86_400_000;
const BASE = Date.parse('2024-06-10T06:30:00Z'); // 12:00 in Kolkata
const FROM = '2024-05-20';
const TO = '2024-06-15';
const ORG = 'sim_merchant_1';
const NAME = 'TxnRequest_Kolkata_0900';

describe('backfill with one-time reports of 09:00 periods', () => {
  let dir: string;
  let database: TestDatabase;
  let sim: SimulatorHandle;
  let twin: SimulatorHandle;
  let db: pg.Client;

  beforeAll(async () => {
    const realStart = Date.now();
    const clock = () => BASE + (Date.now() - realStart);
    const fields = [...reportDefinition('TransactionRequestClass')!.fields];
    const subscription = {
      reportName: NAME,
      reportDefinitionName: 'TransactionRequestClass',
      reportFields: fields,
      reportMimeType: 'text/csv',
      reportFrequency: 'DAILY',
      timezone: 'Asia/Kolkata',
      startTime: '0900',
      reportPreferences: { fieldNameConvention: 'SOAPI' },
    };
    const common = { seed: 4, organizations: [ORG], transactionsPerDay: 20, startDate: '2024-05-01', clock };
    sim = await startSimulator({ ...common, defaultSubscriptions: false });
    // The same data with the subscription active from the first day: the ground truth.
    twin = await startSimulator({ ...common, subscriptions: [subscription] });
    dir = await mkdtemp(join(tmpdir(), 'cybs-onetime-periods-'));
    database = await createTestDatabase('onetimeperiods');
    db = new pg.Client({ connectionString: database.url });
    await db.connect();
    const config = join(dir, 'config.yaml');
    await writeFile(
      config,
      [
        'log: { level: silent }',
        'defaults:',
        `  organizations: [${ORG}]`,
        'pipelines:',
        `  transaction_request: { reportName: ${NAME} }`,
        'subscriptions:',
        `  - reportName: ${NAME}`,
        '    reportDefinitionName: TransactionRequestClass',
        `    reportFields: [${fields.join(', ')}]`,
        '    timezone: Asia/Kolkata',
        '    startTime: "0900"',
        '    reportPreferences: { fieldNameConvention: SOAPI }',
        '',
      ].join('\n'),
    );
    const env = simulatorEnv(sim.portfolioCredentials, sim.baseUrl, database.url);
    // The subscription is created on 2024-06-10 at 12:00 (simulated), then ten days go by.
    const apply = await cli(['--config', config, 'subscriptions', 'apply', '--yes'], { env });
    expect(apply.code).toBe(0);
    sim.advance(10 * DAY);
    twin.advance(10 * DAY);
    const r = await cli(
      [
        '--config',
        config,
        '--now',
        new Date(sim.now()).toISOString(),
        'backfill',
        '--pipelines',
        'transaction_request',
        '--from',
        FROM,
        '--to',
        TO,
      ],
      { env },
    );
    expect(r.stderr).not.toContain('cybs-etl:');
    expect(r.stdout).toMatch(/windows failed\s+0/);
    expect(r.code).toBe(0);
  }, 60_000);

  afterAll(async () => {
    await db?.end();
    await sim?.close();
    await twin?.close();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('creates one one-time report of whole 09:00 periods, within 31 days', () => {
    const adhoc = sim.store.adhocReports(ORG);
    expect(adhoc.map((a) => a.reportName)).toEqual([
      `cybs-etl_transaction_request_${ORG}_2024-05-20T0900_2024-06-15T0900`,
    ]);
    const [a] = adhoc;
    expect(new Date(a!.start).toISOString()).toBe('2024-05-20T03:30:00.000Z');
    expect(new Date(a!.end).toISOString()).toBe('2024-06-16T03:30:00.000Z');
    expect(a!.timezone).toBe('Asia/Kolkata');
  });

  it('loads every period of the range, equal to the ground truth; one-time rows only before the subscription', async () => {
    const result = await compareWithGroundTruth(db, {
      truth: (org, a, b) => twin.groundTruth(org, a, b),
      organizations: [ORG],
      startDate: FROM,
      endDate: TO,
      pipelines: ['transaction_request'],
      reportNames: { transaction_request: NAME },
    });
    expect(result.mismatches).toEqual([]);
    expect(result.sourcesCompared).toBe(27);
    expect(result.rowsExpected).toBeGreaterThan(400);
    const { rows } = await db.query<{ window_key: string; source_ref: string | null; status: string }>(
      `select window_key, source_ref, status from etl.windows where pipeline = 'transaction_request' order by window_start`,
    );
    expect(rows.map((w) => w.window_key)).toHaveLength(27);
    expect(rows[0]!.window_key).toBe('2024-05-20T09:00');
    for (const w of rows) {
      expect(['loaded', 'no_data']).toContain(w.status);
      // The period of 2024-06-10 09:00 contains the subscription's creation: the service reports it.
      expect(w.source_ref!.includes('one-time report cybs-etl_')).toBe(w.window_key < '2024-06-10');
    }
  });
});
