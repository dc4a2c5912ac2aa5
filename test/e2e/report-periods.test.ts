/**
 * Issue 25, point 1, end to end: subscriptions whose reports are not local calendar days load from
 * the simulator through `backfill` and `run`, equal to the simulator's ground truth, and `status`
 * shows their periods:
 *  - DAILY from 09:00 in Asia/Kolkata (+05:30): transaction_request;
 *  - WEEKLY from Monday 06:00 in America/New_York, across the DST change of 2024-03-10:
 *    payment_batch_detail;
 *  - USER_DEFINED every six hours (PT6H) from 03:00 in Europe/Berlin: funding_detail.
 * The subscriptions are given to the simulator as a YAML file, as `cybs-etl simulator
 * --subscriptions FILE` takes them.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { reportDefinition } from '../../packages/simulator/src/render/report-layouts.js';
import { readSubscriptionsFile } from '../../packages/simulator/src/server/seed-subscriptions.js';
import { createE2eWorld } from '../helpers/e2e.js';
import type { E2eWorld } from '../helpers/e2e.js';
import { compareWithGroundTruth, duplicateRows } from '../helpers/ground-truth.js';

const NAMES = {
  transaction_request: 'TxnRequest_Kolkata_0900',
  payment_batch_detail: 'PaymentBatch_Weekly_Monday',
  funding_detail: 'Funding_Every_6h',
} as const;
const PIPELINES = Object.keys(NAMES).join(',');

const fieldsOf = (definition: string) => [...reportDefinition(definition)!.fields];

const SUBSCRIPTIONS = [
  {
    reportName: NAMES.transaction_request,
    reportDefinitionName: 'TransactionRequestClass',
    reportFields: fieldsOf('TransactionRequestClass'),
    reportMimeType: 'text/csv',
    reportFrequency: 'DAILY',
    timezone: 'Asia/Kolkata',
    startTime: '0900',
    reportPreferences: { signedAmounts: false, fieldNameConvention: 'SOAPI' },
  },
  {
    reportName: NAMES.payment_batch_detail,
    reportDefinitionName: 'PaymentBatchDetailClass',
    reportFields: fieldsOf('PaymentBatchDetailClass'),
    reportMimeType: 'application/xml',
    reportFrequency: 'WEEKLY',
    timezone: 'America/New_York',
    startTime: '0600',
    startDay: 2,
  },
  {
    reportName: NAMES.funding_detail,
    reportDefinitionName: 'FundingDetailClass',
    reportFields: fieldsOf('FundingDetailClass'),
    reportMimeType: 'text/csv',
    reportFrequency: 'USER_DEFINED',
    reportInterval: 'PT6H',
    timezone: 'Europe/Berlin',
    startTime: '0300',
    reportPreferences: { signedAmounts: true, fieldNameConvention: 'SCMP' },
  },
];

describe('report periods end to end (DAILY 0900 Asia/Kolkata, WEEKLY, USER_DEFINED PT6H)', () => {
  let world: E2eWorld;
  let dir: string | undefined;
  const compare = (startDate: string, endDate: string) =>
    compareWithGroundTruth(world.db, {
      truth: (org, a, b) => world.sim.groundTruth(org, a, b),
      organizations: world.sim.organizations,
      startDate,
      endDate,
      pipelines: Object.keys(NAMES),
      reportNames: NAMES,
    });
  const windowKeys = async (pipeline: string) =>
    (
      await world.db.query(
        `select window_key, status from etl.windows where pipeline = $1 order by window_start`,
        [pipeline],
      )
    ).rows as { window_key: string; status: string }[];

  beforeAll(async () => {
    // The simulator reads the subscriptions from a file, as `cybs-etl simulator --subscriptions` does.
    dir = await mkdtemp(join(tmpdir(), 'cybs-periods-subs-'));
    const file = join(dir, 'subscriptions.yaml');
    await writeFile(file, stringify(SUBSCRIPTIONS));
    world = await createE2eWorld({
      prefix: 'periods',
      simulator: {
        organizations: 2,
        subscriptions: await readSubscriptionsFile(file),
        subscriptionsSource: file,
      },
      configExtra: [
        `  startDate: "2024-03-04"`,
        'pipelines:',
        ...Object.entries(NAMES).flatMap(([p, name]) => [`  ${p}:`, `    reportName: ${name}`]),
      ].join('\n'),
    });
  });

  afterAll(async () => {
    await world?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('backfill loads the periods that start in its range, equal to the ground truth', async () => {
    const r = await world.run([
      'backfill',
      '--from',
      '2024-03-04',
      '--to',
      '2024-03-17',
      '--pipelines',
      PIPELINES,
    ]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/windows failed\s+0/);
    expect(r.code).toBe(0);

    const kolkata = await windowKeys('transaction_request');
    // 14 daily periods per organization, 09:00 to 09:00 local, keyed by their local start.
    expect(kolkata.map((w) => w.window_key)).toContain('2024-03-04T09:00');
    expect(new Set(kolkata.map((w) => w.window_key)).size).toBe(14);
    const weekly = await windowKeys('payment_batch_detail');
    expect([...new Set(weekly.map((w) => w.window_key))]).toEqual(['2024-03-04T06:00', '2024-03-11T06:00']);
    const sixHours = await windowKeys('funding_detail');
    expect(new Set(sixHours.map((w) => w.window_key)).size).toBe(14 * 4);
    expect(sixHours.map((w) => w.window_key).slice(0, 2)).toEqual(['2024-03-04T03:00', '2024-03-04T03:00']);
    for (const w of [...kolkata, ...weekly, ...sixHours]) expect(['loaded', 'no_data']).toContain(w.status);

    const result = await compare('2024-03-04', '2024-03-17');
    expect(result.mismatches).toEqual([]);
    expect(result.rowsExpected).toBeGreaterThan(500);
    expect(result.sourcesCompared).toBe(2 * (14 + 2 + 56));
    expect(await duplicateRows(world.db)).toBe(0);
    // Rows are under their six-hour report, named by its end (reportDate and local end time).
    const sources = await world.db.query(`select distinct _source from cybs.funding_detail`);
    expect(sources.rows.length).toBeGreaterThan(1);
    for (const row of sources.rows) {
      expect(row['_source']).toMatch(new RegExp(`^${NAMES.funding_detail}/2024-03-\\d\\dT(03|09|15|21):00$`));
    }
  });

  it('status shows the last period loaded of each pipeline', async () => {
    const r = await world.run(['status']);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    // Per pipeline and organization: the last period's key (local start) and its span.
    const expected: Record<string, [string, string]> = {
      // 09:00 in Kolkata is 03:30Z.
      transaction_request: ['2024-03-17T09:00', '2024-03-17T03:30Z..2024-03-18T03:30Z'],
      // Monday 06:00 EDT, after the DST change.
      payment_batch_detail: ['2024-03-11T06:00', '2024-03-11T10:00Z..2024-03-18T10:00Z'],
      // The last six-hour period that starts on 2024-03-17 in Berlin: 21:00 to 03:00 CET.
      funding_detail: ['2024-03-17T21:00', '2024-03-17T20:00Z..2024-03-18T02:00Z'],
    };
    for (const [pipeline, [key, span]] of Object.entries(expected)) {
      const rows = lines.filter((l) => l.trimStart().startsWith(pipeline));
      expect(rows, pipeline).toHaveLength(2);
      for (const row of rows)
        expect(row, pipeline).toMatch(new RegExp(`${key}\\s.*${span.replace(/\./g, '\\.')}`));
    }
  });

  it('run loads every due period after them, equal to the ground truth', async () => {
    const r = await world.run(['run', '--pipelines', PIPELINES]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/windows failed\s+0/);
    expect(r.code).toBe(0);
    // Now is 2024-03-25T12:00Z and a report is due six hours after its period ends.
    const kolkata = (await windowKeys('transaction_request')).map((w) => w.window_key);
    expect(kolkata.at(-1)).toBe('2024-03-24T09:00');
    const weekly = (await windowKeys('payment_batch_detail')).map((w) => w.window_key);
    expect(weekly.at(-1)).toBe('2024-03-11T06:00');
    const sixHours = (await windowKeys('funding_detail')).map((w) => w.window_key);
    // 2024-03-24 21:00 CET ends at 02:00Z; the next one ends at 08:00Z, not six hours ago.
    expect(sixHours.at(-1)).toBe('2024-03-24T21:00');

    const result = await compare('2024-03-04', '2024-03-25');
    expect(result.mismatches).toEqual([]);
    expect(await duplicateRows(world.db)).toBe(0);
  });
});
