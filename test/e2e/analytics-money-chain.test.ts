/**
 * The money chain end to end: the simulator, `cybs-etl backfill` of every pipeline the analytics
 * switch enables, the models and checks it refreshes.
 *  - A clean simulated month of three organizations: every reconciliation check is empty and
 *    `cybs-etl check` exits 0; the ledger's sums per funding and per deposit equal the funded and
 *    deposited amounts, and those equal the simulator's ground truth, to the cent.
 *  - One organization with every anomaly the simulator can seed: exactly the check each one
 *    breaks fails, at the seeded rows, and `cybs-etl check` exits 1; a failed window and a stale
 *    pipeline planted in etl.windows fail their checks too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load-config.js';
import { subscriptionRequest } from '../../src/subscriptions/declared-subscriptions.js';
import { ANOMALY_NAMES } from '../../packages/simulator/src/data/anomalies.js';
import type { AnomalyName } from '../../packages/simulator/src/data/anomalies.js';
import { currencyExponent, formatScaled, parseScaled } from '../../packages/simulator/src/data/money.js';
import { E2E_NOW, createE2eWorld, e2eConfigYaml } from '../helpers/e2e.js';
import type { E2eWorld } from '../helpers/e2e.js';

const ANALYTICS = 'analytics:\n  enabled: true\n';

/**
 * The e2e world (simulated now E2E_NOW) with the CLI configured with the switch on and a simulator
 * holding the subscriptions it declares, as `subscriptions apply` would create them.
 */
async function world(options: {
  organizations: string[];
  startDate: string;
  transactionsPerDay: number;
  anomalies?: readonly AnomalyName[];
}): Promise<E2eWorld> {
  const declared = parseConfig(e2eConfigYaml(options.organizations, ANALYTICS)).subscriptions ?? [];
  return createE2eWorld({
    prefix: 'money_chain',
    configExtra: ANALYTICS,
    simulator: {
      seed: 21,
      organizations: options.organizations,
      transactionsPerDay: options.transactionsPerDay,
      startDate: options.startDate,
      quietDayRate: 0,
      additionalSubscriptions: declared.map(
        (d) => subscriptionRequest(d) as unknown as Record<string, unknown>,
      ),
      ...(options.anomalies ? { anomalies: options.anomalies } : {}),
    },
  });
}

async function backfill(w: E2eWorld, from: string, to: string): Promise<void> {
  const r = await w.run(['backfill', '--from', from, '--to', to]);
  expect(r.code, r.stdout + r.stderr).toBe(0);
  expect(r.stdout).toMatch(/windows failed\s+0/);
}

describe('a clean simulated month of three organizations', () => {
  let w: E2eWorld;
  const orgs = ['chain_a', 'chain_b', 'chain_c'];

  beforeAll(async () => {
    w = await world({ organizations: orgs, startDate: '2024-02-20', transactionsPerDay: 20 });
    await backfill(w, '2024-02-20', '2024-03-24');
    await w.db.query(`set cybs_analytics.as_of = '${E2E_NOW}'`);
  }, 600_000);
  afterAll(async () => w?.close(), 120_000);

  it('passes every reconciliation check', async () => {
    const summary = await w.db.query(`select * from cybs_analytics.rc_summary`);
    expect(summary.rows).toEqual([]);
    const check = await w.run(['check']);
    expect(check.stdout).toContain('All 14 reconciliation checks pass.');
    expect(check.code).toBe(0);
  });

  it('sums the ledger per funding and per deposit to what was funded and deposited, and to the simulator’s truth', async () => {
    let compared = 0;
    for (const org of orgs) {
      const truth = w.sim.groundTruth(org, '2024-02-20', '2024-03-19').fundings;
      expect(truth.length).toBeGreaterThan(50);
      const rows = await w.db.query<Record<string, string>>(
        `select level, funding_id, deposit_id, currency, expected_net::text as expected, funded_amount::text as funded,
                deposited_amount::text as deposited, difference::text as difference
           from cybs_analytics.deposit_reconciliation
          where organization_id = $1 and level in ('funding', 'deposit')`,
        [org],
      );
      const byFunding = new Map(rows.rows.filter((r) => r.level === 'funding').map((r) => [r.funding_id, r]));
      const byDeposit = new Map(rows.rows.filter((r) => r.level === 'deposit').map((r) => [r.deposit_id, r]));
      // Exact decimals in the currency's minor units, never floats.
      const units = (currency: string, text: string | undefined) =>
        parseScaled(text ?? 'missing', currencyExponent(currency));
      for (const t of truth) {
        const f = byFunding.get(t.fundingId) ?? {};
        const d = byDeposit.get(t.depositId) ?? {};
        const net = units(t.currency, t.net);
        const deposited = units(t.currency, t.deposited);
        expect(units(t.currency, f['expected']), `${t.fundingId} ledger`).toBe(net);
        expect(units(t.currency, f['funded']), `${t.fundingId} funded`).toBe(net);
        expect(units(t.currency, f['deposited']), `${t.fundingId} deposited`).toBe(deposited);
        expect(units(t.currency, d['expected']), `${t.depositId} ledger`).toBe(deposited);
        expect(units(t.currency, d['deposited']), `${t.depositId} deposited`).toBe(deposited);
        compared++;
      }
      for (const r of rows.rows)
        expect(units(r['currency']!, r['difference']), `${r['level']} ${r['funding_id']}`).toBe(0n);
    }
    expect(compared).toBeGreaterThan(200);
  });

  it('records the zone each organization’s reports are cut in', async () => {
    const zones = await w.db.query(
      `select organization_id, time_zone from cybs_analytics.organizations order by 1`,
    );
    expect(zones.rows).toEqual(orgs.map((organization_id) => ({ organization_id, time_zone: 'UTC' })));
  });

  it('ties every capture of the month to its deposit', async () => {
    const stages = await w.db.query(
      `select stage, count(*)::int as n from cybs_analytics.payment_lifecycle
        where local_date between '2024-02-20' and '2024-03-19' group by 1 order by 1`,
    );
    expect(stages.rows).toEqual([{ stage: 'deposited', n: expect.any(Number) }]);
  });
});

describe('every anomaly the simulator seeds', () => {
  let w: E2eWorld;

  beforeAll(async () => {
    w = await world({
      organizations: ['chain_x'],
      startDate: '2024-03-01',
      transactionsPerDay: 30,
      anomalies: ANOMALY_NAMES,
    });
    expect(w.sim.anomalies.map((a) => a.name)).toEqual([...ANOMALY_NAMES]);
    await backfill(w, '2024-03-01', '2024-03-24');
    await w.db.query(`set cybs_analytics.as_of = '${E2E_NOW}'`);
  }, 600_000);
  afterAll(async () => w?.close(), 120_000);

  const seeded = (name: AnomalyName) => w.sim.anomalies.find((a) => a.name === name)!;
  const references = async (check: string) =>
    (await w.db.query(`select reference from cybs_analytics.rc_${check} order by reference`)).rows.map(
      (r) => r.reference,
    );

  it('fails exactly the check each anomaly breaks, at the seeded rows', async () => {
    const minor = (a: { currency: string }) => formatScaled(1, currencyExponent(a.currency));
    expect(await references('capture_not_batched')).toEqual([seeded('unbatched-capture').requestId]);
    expect(await references('batched_not_settled')).toEqual([seeded('unsettled-batch').requestId]);
    expect(await references('settled_not_funded')).toEqual([seeded('unfunded-settlement').requestId]);
    expect(await references('open_authorization')).toEqual([seeded('open-authorization').requestId]);
    expect(await references('refund_exceeds_capture')).toEqual([
      seeded('refund-exceeds-capture').predecessorRequestId,
    ]);
    expect(await references('request_in_two_currencies')).toEqual([seeded('two-currencies').requestId]);
    expect(await references('chargeback_due')).toEqual([seeded('chargeback-due').caseNumber]);
    expect(await references('funding_arithmetic')).toEqual([seeded('fee-mismatch').fundingId]);
    expect(await references('deposit_mismatch')).toEqual([seeded('deposit-mismatch').fundingId]);

    const fee = await w.db.query(`select difference::text as d from cybs_analytics.rc_funding_arithmetic`);
    expect(fee.rows[0].d).toBe(`-${minor(seeded('fee-mismatch'))}`);
    const orphan = await w.db.query(
      `select reference, request_id from cybs_analytics.rc_chargeback_without_transaction`,
    );
    expect(orphan.rows).toEqual([
      {
        reference: seeded('orphan-chargeback').caseNumber,
        request_id: seeded('orphan-chargeback').chargebackRequestId,
      },
    ]);
    for (const [check, name] of [
      ['batch_detail_vs_summary', 'batch-summary-mismatch'],
      ['net_funding_vs_detail', 'net-funding-mismatch'],
    ] as const) {
      const a = seeded(name);
      const rows = await w.db.query<Record<string, string>>(
        `select currency, window_start <= $1::timestamptz and window_end > $1::timestamptz as holds
           from cybs_analytics.rc_${check}`,
        [`${a.day}T12:00:00Z`],
      );
      expect(rows.rows, check).toEqual([{ currency: a.currency, holds: true }]);
    }
    const summary = await w.db.query(
      `select check_name, sum(failures)::int as n from cybs_analytics.rc_summary group by 1 order by 1`,
    );
    expect(summary.rows).toEqual(
      [
        'batch_detail_vs_summary',
        'batched_not_settled',
        'capture_not_batched',
        'chargeback_due',
        'chargeback_without_transaction',
        'deposit_mismatch',
        'funding_arithmetic',
        'net_funding_vs_detail',
        'open_authorization',
        'refund_exceeds_capture',
        'request_in_two_currencies',
        'settled_not_funded',
      ].map((check_name) => ({ check_name, n: 1 })),
    );
    const check = await w.run(['check', '--json']);
    expect(check.code).toBe(1);
    const outcome = JSON.parse(check.stdout) as { failing: number };
    expect(outcome.failing).toBe(12);
  });

  it('fails a window that failed and a pipeline gone stale', async () => {
    await w.db.query(
      `update etl.windows set status = 'failed', last_error_code = 'PLANTED', last_error_message = 'planted'
        where pipeline = 'fee_detail' and window_key = '2024-03-20'`,
    );
    await w.db.query(
      `delete from etl.windows where pipeline = 'net_fundings' and window_start >= '2024-03-20'`,
    );
    expect(await references('window_gaps')).toEqual(['fee_detail 2024-03-20']);
    expect(await references('stale_pipelines')).toEqual(['net_fundings']);
  });
});
