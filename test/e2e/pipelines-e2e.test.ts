/**
 * Issue 7, end to end: the simulator → the CLI (in-process) → a fresh PostgreSQL database.
 *  - backfill of 14 days for two organizations over every enabled pipeline equals the ground truth;
 *  - `run` right after changes nothing;
 *  - `run` the next (pretended) day loads only the new windows and the on-demand lookback windows.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PIPELINES } from '../../pipelines/index.js';
import { pipelineTables } from '../../src/pipeline/define-pipeline.js';
import { addDays } from '../../src/time/time-zones.js';
import { startSimulator } from '../../packages/simulator/src/server/start-simulator.js';
import type { SimulatorHandle } from '../../packages/simulator/src/server/start-simulator.js';
import { cli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { compareWithGroundTruth, duplicateRows } from '../helpers/ground-truth.js';

const today = new Date().toISOString().slice(0, 10);
// Every day up to `to + 1` is complete and its reports ready in real time.
const to = addDays(today, -4);
const from = addDays(to, -13);

describe('pipelines end to end (simulator → CLI → PostgreSQL)', () => {
  let sim: SimulatorHandle;
  let database: TestDatabase;
  let client: pg.Client;
  let dir: string;
  let env: Record<string, string>;
  let config: string;

  const runCli = (args: string[]) => cli(['--config', config, ...args], { env });
  const windowsOfRun = async (runId: number) =>
    (
      await client.query(
        `select pipeline, organization_id, window_key, counts from etl.windows where run_id = $1 order by 1, 2, 3`,
        [runId],
      )
    ).rows as {
      pipeline: string;
      organization_id: string;
      window_key: string;
      counts: Record<string, number>;
    }[];
  const lastRunId = async () => Number((await client.query('select max(id) as id from etl.runs')).rows[0].id);

  beforeAll(async () => {
    sim = await startSimulator({
      organizations: 2,
      transactionsPerDay: 40,
      seed: 11,
      startDate: addDays(from, -5),
    });
    database = await createTestDatabase('e2e');
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
    dir = await mkdtemp(join(tmpdir(), 'cybs-e2e-'));
    config = join(dir, 'config.yaml');
    await writeFile(
      config,
      [
        'log:',
        '  level: silent',
        'api:',
        '  retry:',
        '    minDelayMs: 5',
        '    maxDelayMs: 50',
        'defaults:',
        `  startDate: "${from}"`,
        `  organizations: [${sim.organizations.join(', ')}]`,
        '  globalConcurrency: 4',
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
  });

  afterAll(async () => {
    await client?.end();
    await database?.drop();
    await sim?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('backfills 14 days for two organizations over every enabled pipeline, equal to the ground truth', async () => {
    const r = await runCli(['backfill', '--from', from, '--to', to]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/windows failed\s+0/);
    expect(r.code).toBe(0);
    const result = await compareWithGroundTruth(client, {
      truth: (org, a, b) => sim.groundTruth(org, a, b),
      organizations: sim.organizations,
      startDate: from,
      endDate: to,
    });
    expect(result.mismatches).toEqual([]);
    expect(result.sourcesCompared).toBeGreaterThan(14 * 2 * 5);
    expect(result.rowsExpected).toBeGreaterThan(1000);
    expect(result.rowsMissing + result.rowsExtra).toBe(0);
    expect(await duplicateRows(client)).toBe(0);
    const windows = await client.query(`select status, count(*)::int as n from etl.windows group by 1`);
    expect(windows.rows.find((w) => w.status === 'failed')).toBeUndefined();
  });

  it('a run right after changes nothing', async () => {
    const before = await client.query(
      `select count(*)::int as n, max(_loaded_at) as t from cybs.transaction_request`,
    );
    // Pretend it is the morning after `to`: every window up to `to` is due, nothing later.
    const r = await runCli(['--now', `${addDays(to, 1)}T15:00:00Z`, 'run']);
    expect(r.code).toBe(0);
    const runId = await lastRunId();
    const touched = await windowsOfRun(runId);
    // Only the on-demand lookback windows were loaded again, and they changed nothing: each one
    // with data was recognised (the same pages as its last load, its rows untouched).
    expect(touched.length).toBeGreaterThan(0);
    const loaded = await client.query(
      `select count(*)::int as n from etl.windows where run_id = $1 and status = 'loaded'`,
      [runId],
    );
    expect(Number(loaded.rows[0].n)).toBeGreaterThan(0);
    expect(r.stdout).toMatch(new RegExp(`windows loaded\\s+${loaded.rows[0].n}\\b`));
    expect(r.stdout).toMatch(new RegExp(`of which unchanged\\s+${loaded.rows[0].n}\\b`));
    for (const w of touched) {
      expect(w.pipeline).toMatch(
        /^(purchase_refund_details|net_fundings|conversion_details|notification_of_changes|payment_batch_summaries)$/,
      );
      expect(w.counts.inserted ?? 0).toBe(0);
      expect(w.counts.updated ?? 0).toBe(0);
      expect(w.counts.deleted ?? 0).toBe(0);
    }
    const after = await client.query(
      `select count(*)::int as n, max(_loaded_at) as t from cybs.transaction_request`,
    );
    expect(after.rows[0]).toEqual(before.rows[0]);
  });

  it('a run the next day loads only the new windows and the lookback windows', async () => {
    const r = await runCli(['--now', `${addDays(to, 2)}T15:00:00Z`, 'run']);
    expect(r.code).toBe(0);
    const touched = await windowsOfRun(await lastRunId());
    const newDay = addDays(to, 1);
    const lookback = new Set([addDays(to, -1), to, newDay]);
    for (const w of touched) {
      const onDemand =
        /^(purchase_refund_details|net_fundings|conversion_details|notification_of_changes|payment_batch_summaries)$/.test(
          w.pipeline,
        );
      if (onDemand) expect(lookback.has(w.window_key)).toBe(true);
      else expect(w.window_key).toBe(newDay);
    }
    // 4 report pipelines + 5 on-demand pipelines (3 lookback days each), for 2 organizations.
    expect(touched.length).toBe(2 * (4 * 1 + 5 * 3));
    const result = await compareWithGroundTruth(client, {
      truth: (org, a, b) => sim.groundTruth(org, a, b),
      organizations: sim.organizations,
      startDate: from,
      endDate: newDay,
    });
    expect(result.mismatches).toEqual([]);
  });

  it('status shows every pipeline and organization, their last window, lag and the last runs', async () => {
    const r = await runCli(['--now', `${addDays(to, 2)}T16:00:00Z`, 'status', '--json']);
    expect(r.code).toBe(0);
    const status = JSON.parse(r.stdout) as {
      pipelines: {
        pipeline: string;
        organizationId: string;
        lastLoadedWindow: string;
        lagSeconds: number;
        failed: unknown[];
      }[];
      runs: { command: string; status: string }[];
    };
    expect(status.pipelines).toHaveLength(9 * 2);
    for (const p of status.pipelines) {
      expect(p.lastLoadedWindow).toBe(addDays(to, 1));
      expect(p.failed).toEqual([]);
      expect(p.lagSeconds).toBeGreaterThan(0);
    }
    expect(status.runs.map((run) => run.command)).toEqual(['run', 'run', 'backfill']);
    const text = await runCli(['status']);
    expect(text.stdout).toMatch(/transaction_request\s+\| sim_merchant_1/);
    expect(text.stdout).toContain('Last runs:');
  });

  it('pipelines lists every pipeline and prints the DDL of every table', async () => {
    const list = await runCli(['pipelines', '--json']);
    const rows = JSON.parse(list.stdout) as { pipeline: string; kind: string; enabled: string }[];
    expect(rows).toHaveLength(26 + 5);
    // Named after the real definitions; the seed-only one is marked unverified (audit #1).
    expect(rows.find((row) => row.pipeline === 'decision_manager_event_detail')).toMatchObject({
      kind: 'report DecisionManagerEventDetailClass',
      enabled: 'no',
    });
    expect(rows.find((row) => row.pipeline === 'recurring_billing_detail')?.kind).toBe(
      'report RecurringBillingDetailClass (unverified)',
    );
    expect(rows.filter((row) => row.kind.endsWith('(unverified)'))).toHaveLength(1);
    expect(rows.filter((row) => row.enabled === 'yes')).toHaveLength(9);
    const ddl = await runCli(['pipelines', '--sql']);
    expect(ddl.code).toBe(0);
    expect(ddl.stdout.match(/create table if not exists/gi)).toHaveLength(
      PIPELINES.flatMap((p) => pipelineTables(p)).length,
    );
    expect(ddl.stdout).toContain('"cybs"."transaction_request_application_reply"');
    expect(ddl.stdout).toContain('"cybs"."purchase_refund_fee_funding"');
    expect(ddl.stdout).toMatch(/comment on column "cybs"\."transaction_request"\."amount"/i);
  });

  it('a forced re-load of unchanged files and pages writes nothing; a row changed by hand is put right', async () => {
    const day = addDays(to, -3);
    const fingerprinted = await client.query(
      `select count(*)::int as n from etl.windows
        where window_key = $1 and status = 'loaded' and fingerprint is not null`,
      [day],
    );
    const reportWindows = Number(fingerprinted.rows[0].n);
    // Every window of the day with data: report files, and on-demand pages (spooled) alike.
    expect(reportWindows).toBeGreaterThanOrEqual(12);
    const table = async () =>
      (
        await client.query(
          `select *, _loaded_at::text as _loaded_at from cybs.transaction_request
            order by _organization_id, request_id`,
        )
      ).rows;
    const before = await table();
    const forced = await runCli(['backfill', '--from', day, '--to', day, '--force']);
    expect(forced.code).toBe(0);
    expect(forced.stdout).toMatch(new RegExp(`of which unchanged\\s+${reportWindows}\\b`));
    expect(await table()).toEqual(before);
    for (const w of await windowsOfRun(await lastRunId())) {
      expect([w.counts.inserted ?? 0, w.counts.updated ?? 0, w.counts.deleted ?? 0]).toEqual([0, 0, 0]);
    }

    const org = sim.organizations[0]!;
    /** `<statement> where` one row of `table` that the window of `pipeline` loaded (org, day). */
    const oneRowOf = (statement: string, table: string, pipeline: string) =>
      client.query(
        `${statement}
          where ctid = (select ctid from cybs.${table}
                         where _organization_id = $1
                           and _source = (select split_part(source_ref, ' ', 1) from etl.windows
                                           where pipeline = '${pipeline}' and organization_id = $1
                                             and window_key = $2)
                         limit 1)`,
        [org, day],
      );
    const changed = await oneRowOf(
      'update cybs.transaction_request set amount = amount + 1',
      'transaction_request',
      'transaction_request',
    );
    expect(changed.rowCount).toBe(1);
    // And a row an on-demand window loaded (its source is the endpoint and the window).
    const onDemand = await oneRowOf(
      'delete from cybs.net_funding_summaries',
      'net_funding_summaries',
      'net_fundings',
    );
    expect(onDemand.rowCount).toBe(1);
    const again = await runCli(['backfill', '--from', day, '--to', day, '--force']);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(new RegExp(`of which unchanged\\s+${reportWindows - 2}\\b`));
    const windows = await windowsOfRun(await lastRunId());
    const reloaded = windows.find((w) => w.pipeline === 'transaction_request' && w.organization_id === org);
    expect(reloaded?.counts).toMatchObject({ inserted: 0, updated: 1, deleted: 0 });
    const refilled = windows.find((w) => w.pipeline === 'net_fundings' && w.organization_id === org);
    expect(refilled?.counts).toMatchObject({ inserted: 1, updated: 0, deleted: 0 });
    const result = await compareWithGroundTruth(client, {
      truth: (o, a, b) => sim.groundTruth(o, a, b),
      organizations: sim.organizations,
      startDate: from,
      endDate: addDays(to, 1),
    });
    expect(result.mismatches).toEqual([]);
  });
});
