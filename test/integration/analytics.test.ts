/**
 * cybs_analytics on PostgreSQL: the views install with the columns and descriptions they declare;
 * a hand-made money chain (the legacy Payment Batch Detail sample and small Fee, Funding, Deposit
 * and Chargeback files written here) lands in the ledger to the cent as computed by hand, and a
 * fee planted wrong shows in rc_funding_arithmetic; the analyst role of sql/roles.sql reads the
 * views and cannot write; the data dictionary has every column of every cybs table, and docs and
 * dbt render from it.
 */
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { EXAMPLE_QUERIES } from '../../src/analytics/docs.js';
import { analyticsViews } from '../../src/analytics/install.js';
import { refreshAfterRun } from '../../src/analytics/refresh.js';
import { checkCounts } from '../../src/analytics/run-checks.js';
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import { cli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';

const SAMPLES = resolve(process.cwd(), '..', 'shared', 'samples', 'cybersource');
const LEGACY_PBD = join(SAMPLES, 'legacy-docs-PaymentBatchDetailReport.csv');
// The sample's requests: two bills of 100.00 and a credit written -100.00 (ics_credit).
const R1 = '0004172180000167905139';
const R2 = '0004173790000167905139';
const R3 = '0004174690000167905139';

const FUNDING_HEADER = [
  'Request.RequestID',
  'PaymentData.Amount',
  'PaymentData.CurrencyCode',
  'PaymentData.TransactionType',
  'Funding.FundingAmount',
  'Funding.FundingCurrency',
  'Funding.FeeAmount',
  'Funding.FundingDate',
  'Funding.FundingIdentificationNumber',
  'ChargebackAndRetrieval.CaseNumber',
];

/** A REST-era report file: metadata line, header of Group.Field ids, rows. */
function report(
  org: string,
  name: string,
  type: string,
  day: string,
  header: string[],
  rows: string[][],
): string {
  const next = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
  return [
    `${org},${name},${type},1.10,${day}T00:00:00Z to ${next}T00:00:00Z`,
    header.join(','),
    ...rows.map((r) => r.join(',')),
    '',
  ].join('\n');
}

/**
 * The chain by hand: R1 and R3 sold 100.00 (fee 2.90 each), R2 refunded 100.00; funding F1 on May 2
 * pays 97.10 − 100.00 + 97.10 = 94.20; R3 is charged back 100.00 with a 15.00 fee, taken back by
 * funding F2 on May 3 (−115.00). Deposits D1 and D2 pay F1 and F2. `r3Fee` is what the Fee Detail
 * report says R3 cost (the funding took 2.90).
 */
function handFiles(org: string, r3Fee: string): Record<string, { definition: string; text: string }> {
  return {
    fee: {
      definition: 'FeeDetailClass',
      text: report(
        org,
        'FeeDetailReport_Daily',
        'FeeDetail',
        '2003-05-01',
        [
          'Request.RequestID',
          'PaymentData.Amount',
          'PaymentData.CurrencyCode',
          'PaymentData.PaymentMethod',
          'Fee.TotalFeeAmount',
          'Fee.TotalFeeCurrency',
          'Fee.ClearedInterchangeLevel',
          'Fee.SettlementTime',
        ],
        [
          [R1, '100.00', 'USD', 'Visa', '2.90', 'USD', 'CPS Retail', '2003-05-01T20:00:00Z'],
          [R2, '100.00', 'USD', 'Visa', '0.00', 'USD', '', '2003-05-01T20:00:00Z'],
          [R3, '100.00', 'USD', 'Visa', r3Fee, 'USD', 'CPS Retail', '2003-05-01T20:00:00Z'],
        ],
      ),
    },
    funding1: {
      definition: 'FundingDetailClass',
      text: report(org, 'FundingDetailReport_Daily', 'FundingDetail', '2003-05-02', FUNDING_HEADER, [
        [R1, '100.00', 'USD', 'sale', '97.10', 'USD', '2.90', '2003-05-02', 'F1', ''],
        [R2, '100.00', 'USD', 'refund', '-100.00', 'USD', '0.00', '2003-05-02', 'F1', ''],
        [R3, '100.00', 'USD', 'sale', '97.10', 'USD', '2.90', '2003-05-02', 'F1', ''],
      ]),
    },
    funding2: {
      definition: 'FundingDetailClass',
      text: report(org, 'FundingDetailReport_Daily', 'FundingDetail', '2003-05-03', FUNDING_HEADER, [
        [R3, '100.00', 'USD', 'chargeback', '-115.00', 'USD', '15.00', '2003-05-03', 'F2', 'C1'],
      ]),
    },
    chargeback: {
      definition: 'ChargebackAndRetrievalDetailClass',
      text: report(
        org,
        'ChargebackAndRetrievalDetailReport_Daily',
        'ChargebackAndRetrievalDetail',
        '2003-05-02',
        [
          'Request.RequestID',
          'ChargebackAndRetrieval.CaseNumber',
          'ChargebackAndRetrieval.CaseTime',
          'ChargebackAndRetrieval.ChargebackAmount',
          'ChargebackAndRetrieval.ChargebackCurrency',
          'ChargebackAndRetrieval.FinancialImpactType',
          'ChargebackAndRetrieval.FeeAmount',
          'ChargebackAndRetrieval.RespondByDate',
          'ChargebackAndRetrieval.ResolutionTime',
        ],
        [
          [
            R3,
            'C1',
            '2003-05-02T10:00:00Z',
            '100.00',
            'USD',
            'debit',
            '15.00',
            '2003-05-12',
            '2003-05-02T10:00:00Z',
          ],
        ],
      ),
    },
    deposit1: {
      definition: 'DepositDetailClass',
      text: report(
        org,
        'DepositDetailReport_Daily',
        'DepositDetail',
        '2003-05-03',
        [
          'Deposit.Identifier',
          'Request.RequestID',
          'Deposit.Amount',
          'Deposit.Currency',
          'Deposit.Time',
          'Funding.FundingIdentificationNumber',
        ],
        [
          ['D1', R1, '97.10', 'USD', '2003-05-03T10:00:00Z', 'F1'],
          ['D1', R2, '-100.00', 'USD', '2003-05-03T10:00:00Z', 'F1'],
          ['D1', R3, '97.10', 'USD', '2003-05-03T10:00:00Z', 'F1'],
          ['D2', R3, '-115.00', 'USD', '2003-05-03T11:00:00Z', 'F2'],
        ],
      ),
    },
  };
}

describe('cybs_analytics on PostgreSQL', () => {
  let database: TestDatabase;
  let client: pg.Client;
  let dir: string;
  let config: string;
  const run = (...args: string[]) =>
    cli(['--config', config, ...args], { env: { DATABASE_URL: database.url } });
  /** The legacy Payment Batch Detail sample, imported for `org`. */
  const importBatchSample = async (org: string) => {
    const r = await run(
      'import',
      LEGACY_PBD,
      '--report-definition',
      'PaymentBatchDetailClass',
      '--organization-id',
      org,
    );
    expect(r.code, r.stderr).toBe(0);
  };

  beforeAll(async () => {
    database = await createTestDatabase('analytics');
    dir = await mkdtemp(join(tmpdir(), 'cybs-analytics-'));
    config = join(dir, 'config.yaml');
    await writeFile(config, 'log:\n  level: warn\n');
    const migrated = await run('migrate');
    expect(migrated.stderr).toBe('');
    expect(migrated.stdout).toMatch(/Installed the cybs_analytics views/);
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
    for (const [org, r3Fee] of [
      ['hand_ok', '2.90'],
      ['hand_fee', '3.00'],
    ] as const) {
      await importBatchSample(org);
      for (const [name, f] of Object.entries(handFiles(org, r3Fee))) {
        const file = join(dir, `${org}-${name}.csv`);
        await writeFile(file, f.text);
        const r = await run('import', file, '--report-definition', f.definition, '--organization-id', org);
        expect(r.code, `${name}: ${r.stderr}`).toBe(0);
      }
    }
    // An import is not a run: the materialized views are refreshed by hand, as the README says.
    await client.query('select cybs_analytics.refresh()');
  });

  afterAll(async () => {
    await client?.end();
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('creates every view with the columns it declares, each described, and migrates again without change', async () => {
    for (const view of analyticsViews()) {
      const r = await client.query(
        `select a.attname as name, col_description(a.attrelid, a.attnum) as comment
           from pg_attribute a where a.attrelid = $1::regclass and a.attnum > 0 and not a.attisdropped order by a.attnum`,
        [`cybs_analytics.${view.name}`],
      );
      expect(
        r.rows.map((x) => x.name),
        view.name,
      ).toEqual(view.columns.map((c) => c.name));
      for (const row of r.rows) expect(row.comment, `${view.name}.${row.name}`).toBeTruthy();
      const comment = await client.query(`select obj_description($1::regclass, 'pg_class') as c`, [
        `cybs_analytics.${view.name}`,
      ]);
      expect(comment.rows[0].c).toBe(view.description);
    }
    const again = await run('migrate');
    expect(again.stdout).toMatch(/up to date/);
    expect(again.stdout).toMatch(/cybs_analytics views are up to date/);
  });

  it('keeps every movement of the hand-made chain in the ledger, signed, to the cent', async () => {
    const r = await client.query(
      `select entry_type, account, request_id, coalesce(funding_id, '') as funding_id, coalesce(deposit_id, '') as deposit_id,
              amount::text as amount
         from cybs_analytics.ledger where organization_id = 'hand_ok'
        order by entry_type, account, request_id, amount`,
    );
    const e = (
      type: string,
      account: string,
      request: string,
      funding: string,
      deposit: string,
      amount: string,
    ) => ({
      entry_type: type,
      account,
      request_id: request,
      funding_id: funding,
      deposit_id: deposit,
      amount,
    });
    expect(r.rows).toEqual([
      e('chargeback', 'processor', R3, 'F2', 'D2', '-100.00'),
      e('deposit', 'transit', R1, 'F1', 'D1', '-97.10'),
      e('deposit', 'transit', R2, 'F1', 'D1', '100.00'),
      e('deposit', 'transit', R3, 'F1', 'D1', '-97.10'),
      e('deposit', 'transit', R3, 'F2', 'D2', '115.00'),
      e('fee', 'processor', R1, 'F1', 'D1', '-2.90'),
      e('fee', 'processor', R3, 'F2', 'D2', '-15.00'),
      e('fee', 'processor', R3, 'F1', 'D1', '-2.90'),
      e('funding', 'processor', R1, 'F1', 'D1', '-97.10'),
      e('funding', 'processor', R2, 'F1', 'D1', '100.00'),
      e('funding', 'processor', R3, 'F1', 'D1', '-97.10'),
      e('funding', 'processor', R3, 'F2', 'D2', '115.00'),
      e('funding', 'transit', R1, 'F1', 'D1', '97.10'),
      e('funding', 'transit', R2, 'F1', 'D1', '-100.00'),
      e('funding', 'transit', R3, 'F2', 'D2', '-115.00'),
      e('funding', 'transit', R3, 'F1', 'D1', '97.10'),
      // The legacy file writes the refund -100.00 and the REST-era files +100.00: the application decides.
      e('refund', 'processor', R2, 'F1', 'D1', '-100.00'),
      e('sale', 'processor', R1, 'F1', 'D1', '100.00'),
      e('sale', 'processor', R3, 'F1', 'D1', '100.00'),
    ]);
    const balances = await client.query(
      `select account, sum(amount)::text as s from cybs_analytics.ledger where organization_id = 'hand_ok' group by 1 order by 1`,
    );
    expect(balances.rows).toEqual([
      { account: 'processor', s: '0.00' },
      { account: 'transit', s: '0.00' },
    ]);
    const rec = await client.query(
      `select level, coalesce(funding_id, '') as f, coalesce(deposit_id, '') as d, gross_amount::text as gross,
              fee_amount::text as fees, chargeback_amount::text as chargebacks, expected_net::text as expected,
              funded_amount::text as funded, deposited_amount::text as deposited, difference::text as difference
         from cybs_analytics.deposit_reconciliation where organization_id = 'hand_ok' order by level, f`,
    );
    expect(rec.rows).toEqual([
      {
        level: 'deposit',
        f: 'F1',
        d: 'D1',
        gross: '100.00',
        fees: '5.80',
        chargebacks: '0',
        expected: '94.20',
        funded: '94.20',
        deposited: '94.20',
        difference: '0.00',
      },
      {
        level: 'deposit',
        f: 'F2',
        d: 'D2',
        gross: '0',
        fees: '15.00',
        chargebacks: '100.00',
        expected: '-115.00',
        funded: '-115.00',
        deposited: '-115.00',
        difference: '0.00',
      },
      {
        level: 'funding',
        f: 'F1',
        d: 'D1',
        gross: '100.00',
        fees: '5.80',
        chargebacks: '0',
        expected: '94.20',
        funded: '94.20',
        deposited: '94.20',
        difference: '0.00',
      },
      {
        level: 'funding',
        f: 'F2',
        d: 'D2',
        gross: '0',
        fees: '15.00',
        chargebacks: '100.00',
        expected: '-115.00',
        funded: '-115.00',
        deposited: '-115.00',
        difference: '0.00',
      },
    ]);
    const transit = await client.query(
      `select as_of_date::text as d, settled_not_funded::numeric(12, 2)::text as s,
              funded_not_deposited::numeric(12, 2)::text as f
         from cybs_analytics.in_transit where organization_id = 'hand_ok' order by 1`,
    );
    // May 1: sold 200, refunded 100, fees 5.80; May 2: charged back 115.00, F1 funds 94.20; May 3: F2, deposits.
    expect(transit.rows).toEqual([
      { d: '2003-05-01', s: '94.20', f: '0.00' },
      { d: '2003-05-02', s: '-115.00', f: '94.20' },
      { d: '2003-05-03', s: '0.00', f: '0.00' },
    ]);
    const fees = await client.query(
      `select card_type, interchange_level, transactions::int as n, volume::text as v, total_fees::text as f, effective_rate::text as rate
         from cybs_analytics.fee_rates_monthly where organization_id = 'hand_ok'`,
    );
    expect(fees.rows).toEqual([
      { card_type: 'Visa', interchange_level: 'CPS Retail', n: 2, v: '200.00', f: '5.80', rate: '0.029000' },
    ]);
  });

  it('finds the fee planted wrong, and only it', async () => {
    const r = await client.query(
      `select check_name, organization_id, failures::int as failures from cybs_analytics.rc_summary order by 1, 2`,
    );
    expect(r.rows).toEqual([{ check_name: 'funding_arithmetic', organization_id: 'hand_fee', failures: 1 }]);
    const f = await client.query(
      `select reference, expected_net::text as expected, funded_amount::text as funded, difference::text as difference
         from cybs_analytics.rc_funding_arithmetic`,
    );
    expect(f.rows).toEqual([{ reference: 'F1', expected: '94.10', funded: '94.20', difference: '0.10' }]);
    const check = await run('check', '--json');
    expect(check.code).toBe(1);
    const outcome = JSON.parse(check.stdout) as {
      failing: number;
      checks: { check: string; failures: number }[];
    };
    expect(outcome.failing).toBe(1);
    expect(outcome.checks.find((c) => c.check === 'rc_funding_arithmetic')!.failures).toBe(1);
    const warehouse = await openWarehouse({ url: database.url, path: '' });
    try {
      // What the schedule daemon exports after a pass.
      expect(await checkCounts(warehouse.db)).toEqual([
        { check: 'funding_arithmetic', organizationId: 'hand_fee', failures: 1 },
      ]);
    } finally {
      await warehouse.close();
    }
    const clean = await run('check', '--organization-id', 'hand_ok');
    expect(clean.code).toBe(0);
    expect(clean.stdout).toContain('reconciliation checks pass');
  });

  it('lets the analyst role read the views and the dictionary, and write nothing', async () => {
    const text = await readFile('sql/roles.sql', 'utf8');
    await client.query('select pg_advisory_lock(727274)');
    try {
      await client.query(text);
    } finally {
      await client.query('select pg_advisory_unlock(727274)');
    }
    await client.query('set role cybs_analyst');
    try {
      for (const view of [
        'ledger',
        'transactions',
        'deposit_reconciliation',
        'rc_summary',
        'data_dictionary',
        'stg_fee_detail',
      ])
        await expect(
          client.query(`select * from cybs_analytics.${view} limit 1`),
          view,
        ).resolves.toBeDefined();
      await expect(client.query(`select cybs_analytics.as_of()`)).resolves.toBeDefined();
      await expect(
        client.query(`insert into cybs_analytics.stg_fee_detail (request_id) values ('x')`),
      ).rejects.toThrow(/permission denied/);
      await expect(client.query(`delete from cybs_analytics.stg_payment_batch_detail`)).rejects.toThrow(
        /permission denied/,
      );
      await expect(client.query(`update cybs_analytics.settings set value = 0`)).rejects.toThrow(
        /permission denied/,
      );
      await expect(client.query(`refresh materialized view cybs_analytics.ledger`)).rejects.toThrow(
        /must be owner/,
      );
      await expect(client.query(`create view cybs_analytics.mine as select 1`)).rejects.toThrow(
        /permission denied/,
      );
    } finally {
      await client.query('reset role');
    }
  });

  it('documents every column of every cybs table and view, and renders pages and dbt sources from it', async () => {
    // Tables, views and materialized views (which information_schema leaves out).
    const columns = await client.query(
      `select count(*)::int as n
         from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
        where n.nspname in ('cybs', 'cybs_analytics') and c.relkind in ('r', 'v', 'm') and a.attnum > 0
          and not a.attisdropped and c.relname not in ('catalog_fields', 'catalog_tables', 'view_columns')`,
    );
    const dictionary = await client.query(
      `select count(*)::int as n, count(*) filter (where documented)::int as documented from cybs_analytics.data_dictionary`,
    );
    expect(dictionary.rows[0].n).toBe(columns.rows[0].n);
    expect(dictionary.rows[0].documented / dictionary.rows[0].n).toBeGreaterThan(0.95);
    const amount = await client.query(
      `select catalog_id, soapi_name, scmp_name, description, lineage from cybs_analytics.data_dictionary
        where table_schema = 'cybs' and table_name = 'funding_detail' and column_name = 'funding_amount'`,
    );
    expect(amount.rows[0]).toMatchObject({
      catalog_id: 'Funding.FundingAmount',
      soapi_name: 'funding_fundingAmount',
      description: 'funding amount of the transaction',
      lineage: 'FundingDetailClass Funding.FundingAmount',
    });
    const out = join(dir, 'docs');
    const docs = await run('docs', '--out', out, '--dbt', join(dir, 'dbt'));
    expect(docs.code, docs.stderr).toBe(0);
    const files = await readdir(out);
    expect(files).toContain('index.md');
    expect(files).toContain('cybs.funding_detail.md');
    expect(files).toContain('cybs_analytics.ledger.md');
    const index = await readFile(join(out, 'index.md'), 'utf8');
    expect(index).toContain('From capture to deposit: the join map');
    expect(index).toContain('cybs_analytics.deposit_reconciliation');
    // Each example query of the index runs as written, in one line per table: its first sentence.
    for (const q of EXAMPLE_QUERIES) await expect(client.query(q.sql), q.question).resolves.toBeDefined();
    expect(index).toMatch(
      /^- \[cybs_analytics\.rc_funding_arithmetic\]\(.*\): Reconciliation check: a funding /m,
    );
    const page = await readFile(join(out, 'cybs.funding_detail.md'), 'utf8');
    expect(page).toContain(
      '| `funding_amount` | numeric | funding amount of the transaction | Funding.FundingAmount |',
    );
    const html = await run('docs', '--format', 'html', '--out', join(dir, 'html'));
    expect(html.code).toBe(0);
    expect(await readFile(join(dir, 'html', 'index.html'), 'utf8')).toMatch(/<h2>From capture to deposit/);
    const dbt = parseYaml(await readFile(join(dir, 'dbt', 'sources.yml'), 'utf8')) as {
      sources: {
        name: string;
        tables: { name: string; freshness?: unknown; data_tests?: unknown; columns: { name: string }[] }[];
      }[];
    };
    const cybs = dbt.sources.find((s) => s.name === 'cybs')!;
    const tr = cybs.tables.find((t) => t.name === 'transaction_request')!;
    expect(tr.freshness).toEqual({
      warn_after: { count: 30, period: 'hour' },
      error_after: { count: 96, period: 'hour' },
    });
    expect(tr.data_tests).toEqual([
      {
        unique: {
          column_name: "(coalesce(_organization_id::text, '') || '|' || coalesce(request_id::text, ''))",
        },
      },
    ]);
    expect(tr.columns.map((c) => c.name)).toContain('predecessor_request_id');
    expect(dbt.sources.find((s) => s.name === 'cybs_analytics')!.tables.map((t) => t.name)).toContain(
      'ledger',
    );
  });

  it('compares a funding that pays batches before the loaded history only once that history reaches back far enough', async () => {
    // F1 pays R1 (in the Payment Batch Detail sample) and R4 (a batch before it): 100.00 expected.
    const org = 'hand_edge';
    await importBatchSample(org);
    const file = join(dir, `${org}-funding.csv`);
    await writeFile(
      file,
      report(org, 'FundingDetailReport_Daily', 'FundingDetail', '2003-05-02', FUNDING_HEADER, [
        [R1, '100.00', 'USD', 'sale', '97.10', 'USD', '2.90', '2003-05-02', 'F1', ''],
        ['0004170000000167905139', '50.00', 'USD', 'sale', '48.55', 'USD', '1.45', '2003-05-02', 'F1', ''],
      ]),
    );
    const funding = await run(
      'import',
      file,
      '--report-definition',
      'FundingDetailClass',
      '--organization-id',
      org,
    );
    expect(funding.code, funding.stderr).toBe(0);
    await client.query('select cybs_analytics.refresh()');
    const failing = async () =>
      (
        await client.query(
          `select reference, difference::text as difference from cybs_analytics.rc_funding_arithmetic where organization_id = $1`,
          [org],
        )
      ).rows;
    // Imported files only (no loaded windows): every funding is compared.
    expect(await failing()).toEqual([{ reference: 'F1', difference: '45.65' }]);
    // Loaded windows of Payment Batch Detail that start the day before the funding: its unmatched
    // line may be in a batch nobody loaded (settle_fund_days, 5, before the funding date).
    await client.query(
      `insert into etl.windows (pipeline, organization_id, window_key, window_start, window_end, status, rows_loaded)
       values ('payment_batch_detail', $1, '2003-05-01', '2003-05-01T00:00Z', '2003-05-02T00:00Z', 'loaded', 3)`,
      [org],
    );
    expect(await failing()).toEqual([]);
    // Loaded from far enough back, the line is missing from a loaded batch: the funding fails.
    await client.query(
      `update etl.windows set window_key = '2003-04-27', window_start = '2003-04-27T00:00Z'
        where pipeline = 'payment_batch_detail' and organization_id = $1`,
      [org],
    );
    expect(await failing()).toEqual([{ reference: 'F1', difference: '45.65' }]);
  });

  it('refreshes the views a run loaded the tables of, unless analytics.refresh is manual', async () => {
    const warehouse = await openWarehouse({ url: database.url, path: dir });
    const count = async () =>
      Number((await client.query('select count(*) as n from cybs_analytics.ledger')).rows[0].n);
    try {
      const before = await count();
      expect(before).toBeGreaterThan(0);
      // A row gone from its table (by hand): the materialized view holds it until a refresh.
      await client.query(
        'delete from cybs.payment_batch_detail where ctid = (select ctid from cybs.payment_batch_detail limit 1)',
      );
      const after = (refreshViews: boolean) =>
        refreshAfterRun(warehouse.db, {
          loaded: { pipelines: ['payment_batch_detail'] },
          pipelineTables: new Map([['payment_batch_detail', ['payment_batch_detail']]]),
          zones: [],
          refreshViews,
        });
      expect((await after(false)).refreshed).toEqual([]);
      expect(await count()).toBe(before);
      expect((await after(true)).refreshed).toEqual(['ledger']);
      expect(await count()).toBeLessThan(before);
    } finally {
      await warehouse.close();
    }
  });
});
