/**
 * The cybs_analytics marts and checks on a portfolio-sized warehouse: plain views against
 * materialized ones (docs/performance.md, "cybs_analytics").
 *
 *   node --import tsx test/bench/analytics.ts
 *
 * Environment: ANALYTICS_ORGS (default 2000), ANALYTICS_DAYS (30), ANALYTICS_TX_PER_DAY (50, per
 * organization), ANALYTICS_DB (a database this bench filled before: skip the load), ANALYTICS_KEEP=1
 * (keep the database), ANALYTICS_REPS (3), ANALYTICS_PLAIN=1 (every view plain, none materialized:
 * the comparison), ANALYTICS_TIMEOUT_S (statement timeout, default 600), ANALYTICS_QUERIES (a regular
 * expression: time only the queries whose label matches), TEST_PG_ADMIN_URL as for the tests.
 *
 * The data: the simulator's dataset (the same transactions, money chain and report rows its
 * reports and on-demand answers hold), written straight into the cybs tables with COPY, with the
 * lineage a load gives them (one daily report per organization and table, one on-demand window per
 * day) and a loaded etl.windows row per window: loading 2,000 organizations × 30 days × 10
 * pipelines through the API would measure the loader, not the models. Then ANALYZE, and each
 * query timed: a whole mart or check (count(*) over it), one organization's rows, the month-end
 * in_transit, rc_summary. The same with the views that measure slow materialized (refresh time too).
 */
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { PIPELINES } from '../../pipelines/index.js';
import { CATALOG_FIELDS } from '../../src/catalog/index.js';
import { warehouseTables } from '../../src/analytics/dictionary.js';
import { analyticsViews, installAnalytics } from '../../src/analytics/install.js';
import { REPORT_SOURCES, analyticsPipelines } from '../../src/analytics/sources.js';
import { CHECK_WORK_MEM } from '../../src/analytics/run-checks.js';
import { migrateToLatest } from '../../src/warehouse/migrate.js';
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import { createDataset } from '../../packages/simulator/src/data/dataset.js';
import type { SimOrganization, SimTransaction } from '../../packages/simulator/src/data/dataset.js';
import { fieldGetter } from '../../packages/simulator/src/render/report-fields.js';
import { ROW_SOURCE_RULES, reportDefinition } from '../../packages/simulator/src/render/report-layouts.js';
import {
  netFundings,
  paymentBatchSummaries,
  purchaseRefundSections,
  settledRecords,
} from '../../packages/simulator/src/routes/on-demand.js';
import { FUNDING_LAG_DAYS } from '../../packages/simulator/src/data/money-chain.js';
import { addDays } from '../../packages/simulator/src/data/time.js';
import { createTestDatabase } from '../helpers/db.js';

const ORGS = Number(process.env['ANALYTICS_ORGS'] ?? 2000);
const DAYS = Number(process.env['ANALYTICS_DAYS'] ?? 30);
const TX_PER_DAY = Number(process.env['ANALYTICS_TX_PER_DAY'] ?? 50);
const REPS = Number(process.env['ANALYTICS_REPS'] ?? 3);
const PLAIN = process.env['ANALYTICS_PLAIN'] === '1';
const TIMEOUT_S = Number(process.env['ANALYTICS_TIMEOUT_S'] ?? 600);
const QUERIES = new RegExp(process.env['ANALYTICS_QUERIES'] ?? '');
const START = '2026-10-01';
const END = addDays(START, DAYS - 1);
const AS_OF = `${addDays(END, 1)}T12:00:00Z`;
const DAY_MS = 86_400_000;
const log = (line: string): void => void process.stderr.write(`[analytics] ${line}\n`);

const organizations: SimOrganization[] = Array.from({ length: ORGS }, (_, index) => ({
  id: `merchant_${String(index + 1).padStart(4, '0')}`,
  index,
  name: `Merchant ${index + 1}`,
  accountId: `merchant_${index + 1}_acct`,
  accountName: 'Portfolio',
  groupName: String(1000 + index),
}));

function copyText(value: string | number | null | undefined): string {
  if (value === null || value === undefined || value === '') return '\\N';
  return String(value)
    .replace(/\\/g, '\\\\')
    .replace(/\t/g, '\\t')
    .replace(/\n/g, '\\n')
    .replace(/\r/g, '\\r');
}

/** A COPY into one table, fed line by line with backpressure. */
class TableCopy {
  private stream!: NodeJS.WritableStream & { on: (e: string, f: (...a: unknown[]) => void) => unknown };
  private done!: Promise<void>;
  private buffer: string[] = [];
  rows = 0;
  constructor(
    private readonly client: pg.Client,
    readonly table: string,
    readonly columns: readonly string[],
  ) {}
  start(): void {
    this.stream = this.client.query(
      copyFrom(`copy cybs.${this.table} (${this.columns.map((c) => `"${c}"`).join(', ')}) from stdin`),
    ) as never;
    this.done = new Promise((resolve, reject) => {
      this.stream.on('finish', () => resolve());
      this.stream.on('error', (e) => reject(e as Error));
    });
  }
  async write(values: (string | number | null | undefined)[]): Promise<void> {
    this.buffer.push(values.map(copyText).join('\t'));
    this.rows++;
    if (this.buffer.length >= 2000) await this.flush();
  }
  async flush(): Promise<void> {
    if (this.buffer.length === 0) return;
    const ok = this.stream.write(`${this.buffer.join('\n')}\n`);
    this.buffer = [];
    if (!ok) await new Promise<void>((resolve) => this.stream.once('drain', resolve));
  }
  async end(): Promise<void> {
    await this.flush();
    this.stream.end();
    await this.done;
  }
}

const LINEAGE = ['_organization_id', '_source', '_source_row', '_run_id', '_source_key'];
const COLUMN_FIELDS = new Map(CATALOG_FIELDS.map((f) => [f.column, f.id]));

async function columnsOf(client: pg.Client, table: string): Promise<string[]> {
  const r = await client.query(
    `select column_name from information_schema.columns where table_schema = 'cybs' and table_name = $1
      and column_name not like '\\_%' order by ordinal_position`,
    [table],
  );
  return r.rows.map((x: { column_name: string }) => x.column_name);
}

/** Fill the warehouse: every analytics source table, etl.windows, etl.sources, organizations. */
async function load(url: string): Promise<void> {
  const dataset = createDataset({
    seed: 11,
    organizations,
    transactionsPerDay: TX_PER_DAY,
    startDate: START,
    quietDayRate: 0.02,
  });
  const clients: pg.Client[] = [];
  const client = async (): Promise<pg.Client> => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query('set synchronous_commit = off');
    clients.push(c);
    return c;
  };
  const main = await client();
  await main.query(
    `insert into etl.runs (command, trigger, pipelines, status, finished_at) values ('backfill', 'bench', $1, 'succeeded', now())`,
    [analyticsPipelines()],
  );
  const sources = new Map<string, number>();
  const sourceKey = (org: string, source: string): number => {
    const key = `${org}\u0000${source}`;
    let n = sources.get(key);
    if (n === undefined) sources.set(key, (n = sources.size + 1));
    return n;
  };
  const rowNumbers = new Map<string, number>();
  const nextRow = (table: string, org: string, source: string): number => {
    const key = `${table}\u0000${org}\u0000${source}`;
    const n = (rowNumbers.get(key) ?? 0) + 1;
    rowNumbers.set(key, n);
    return n;
  };

  // Report tables: each row in the daily report (UTC day) of its time, as rowsOf places it.
  const reportCopies: {
    copy: TableCopy;
    getters: ((tx: SimTransaction) => string)[];
    definition: string;
    reportName: string;
  }[] = [];
  for (const s of REPORT_SOURCES) {
    const c = await client();
    const columns = await columnsOf(c, s.table);
    const getters = columns.map((col) => {
      const id = COLUMN_FIELDS.get(col);
      const g = id ? fieldGetter(id) : () => '';
      return (tx: SimTransaction) => g(tx, { signedAmounts: false });
    });
    const copy = new TableCopy(c, s.table, [...columns, ...LINEAGE]);
    copy.start();
    reportCopies.push({
      copy,
      getters,
      definition: s.reportDefinitionName,
      reportName: `${s.reportDefinitionName.replace(/Class$/, '')}Report_Daily`,
    });
  }
  const onDemand = async (table: string): Promise<TableCopy> => {
    const c = await client();
    const copy = new TableCopy(c, table, [...(await columnsOf(c, table)), ...LINEAGE]);
    copy.start();
    return copy;
  };
  const authorizations = await onDemand('purchase_refund_authorizations');
  const totals = await onDemand('net_funding_totals');
  const summaries = await onDemand('payment_batch_summaries');
  const rangeStart = Date.parse(`${START}T00:00:00Z`);
  const rangeEnd = Date.parse(`${addDays(END, 1)}T00:00:00Z`);
  const started = performance.now();
  for (const org of organizations) {
    for (let day = addDays(START, -FUNDING_LAG_DAYS); day <= END; day = addDays(day, 1)) {
      for (const tx of dataset.day(org.id, day)) {
        for (const r of reportCopies) {
          const layout = reportDefinition(r.definition)!;
          const rule = ROW_SOURCE_RULES[layout.source];
          if (!rule.select(tx)) continue;
          const rows = rule.expand ? rule.expand(tx) : [rule.map ? rule.map(tx) : tx];
          for (const row of rows) {
            const at = rule.at(row);
            if (at < rangeStart || at >= rangeEnd) continue;
            const source = `${r.reportName}/${addDays(new Date(at).toISOString().slice(0, 10), 1)}`;
            await r.copy.write([
              ...r.getters.map((g) => g(row)),
              org.id,
              source,
              nextRow(r.copy.table, org.id, source),
              1,
              sourceKey(org.id, source),
            ]);
          }
        }
      }
    }
    for (let day = START; day <= END; day = addDays(day, 1)) {
      const start = Date.parse(`${day}T00:00:00Z`);
      const w = { organizationId: org.id, start, end: start + DAY_MS, now: Date.parse(AS_OF) };
      const range = `${new Date(w.start).toISOString()}..${new Date(w.end).toISOString()}`;
      let n = 0;
      const prd = `purchase-refund-details/${range}`;
      for (const tx of settledRecords(dataset, w)) {
        const a = purchaseRefundSections(tx, org).authorizations;
        if (!a) continue;
        await authorizations.write([
          a['requestId'],
          a['transactionReferenceNumber'],
          a['time'],
          a['authorizationRequestId'],
          a['amount'],
          a['currencyCode'],
          a['code'],
          a['rcode'],
          org.id,
          prd,
          ++n,
          1,
          sourceKey(org.id, prd),
        ]);
      }
      const nf = netFundings(dataset, w);
      const nfs = `net-fundings/${range}`;
      n = 0;
      for (const type of [
        'totalPurchases',
        'totalRefunds',
        'totalFees',
        'totalChargebacks',
        'netTotal',
      ] as const) {
        for (const t of nf?.[type] ?? [])
          await totals.write([type, t.currency, t.value, org.id, nfs, ++n, 1, sourceKey(org.id, nfs)]);
      }
      const pbs = paymentBatchSummaries(dataset, [w]);
      const pbss = `payment-batch-summaries/${range}`;
      n = 0;
      for (const p of pbs?.paymentBatchSummaries ?? []) {
        await summaries.write([
          p.currencyCode,
          p.paymentSubTypeDescription,
          p.startTime,
          p.endTime,
          p.salesCount,
          p.salesAmount,
          p.creditCount,
          p.creditAmount,
          p.accountName,
          p.accountId,
          p.merchantId,
          p.merchantName,
          org.id,
          pbss,
          ++n,
          1,
          sourceKey(org.id, pbss),
        ]);
      }
    }
    if (org.index % 100 === 99)
      log(
        `${org.index + 1} organizations generated (${((performance.now() - started) / 1000).toFixed(0)} s)`,
      );
  }
  for (const copy of [...reportCopies.map((r) => r.copy), authorizations, totals, summaries]) {
    await copy.end();
    log(`cybs.${copy.table}: ${copy.rows} rows`);
  }
  // The numbers of the sources, as the loader takes them.
  await main.query('create temp table s (source_key bigint, organization_id text, source text)');
  const sc = main.query(copyFrom('copy s from stdin')) as unknown as NodeJS.WritableStream;
  const scDone = new Promise((resolve, reject) => (sc.on('finish', resolve), sc.on('error', reject)));
  let chunk: string[] = [];
  for (const [key, n] of sources) {
    const [org, source] = key.split('\u0000');
    chunk.push(`${n}\t${copyText(org)}\t${copyText(source)}`);
    if (chunk.length >= 5000) {
      if (!sc.write(`${chunk.join('\n')}\n`)) await new Promise((r) => sc.once('drain', r));
      chunk = [];
    }
  }
  if (chunk.length > 0) sc.write(`${chunk.join('\n')}\n`);
  sc.end();
  await scDone;
  await main.query(
    'insert into etl.sources (source_key, organization_id, source) overriding system value select * from s',
  );
  // One loaded window per pipeline, organization and day; every organization's days in UTC.
  await main.query(
    `insert into etl.windows (pipeline, organization_id, window_key, window_start, window_end, status, run_id, loaded_at)
     select p, o, d::date::text, d, d + interval '1 day', 'loaded', 1, now()
       from unnest($1::text[]) as p, unnest($2::text[]) as o,
            generate_series($3::timestamptz, $4::timestamptz, interval '1 day') as d`,
    [analyticsPipelines(), organizations.map((o) => o.id), `${START}T00:00:00Z`, `${END}T00:00:00Z`],
  );
  await main.query(
    `insert into cybs_analytics.organizations (organization_id, time_zone) select unnest($1::text[]), 'UTC'`,
    [organizations.map((o) => o.id)],
  );
  log(`loaded in ${((performance.now() - started) / 1000).toFixed(0)} s; analyzing`);
  await main.query('vacuum analyze');
  for (const c of clients) await c.end();
}

interface Timing {
  query: string;
  seconds: number[];
  rows: number;
}

/** Runs of a query; a run stopped by the statement timeout counts as Infinity (and ends the runs). */
async function time(client: pg.Client, label: string, query: string, reps = REPS): Promise<Timing> {
  if (!QUERIES.test(label)) return { query: label, seconds: [], rows: 0 };
  const seconds: number[] = [];
  let rows = 0;
  for (let i = 0; i < reps; i++) {
    const t = performance.now();
    try {
      const r = await client.query(query);
      rows = Number((r.rows[0] as { n?: string } | undefined)?.n ?? r.rowCount ?? 0);
      seconds.push((performance.now() - t) / 1000);
    } catch (error) {
      if ((error as { code?: string }).code !== '57014') throw error;
      seconds.push(Number.POSITIVE_INFINITY);
      break;
    }
  }
  const t: Timing = { query: label, seconds, rows };
  log(`${label}: ${seconds.map((s) => s.toFixed(2)).join(' / ')} s (${rows} rows)`);
  return t;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function measure(url: string, label: string): Promise<Timing[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query(`set cybs_analytics.as_of = '${AS_OF}'`);
  await c.query(`set statement_timeout = '${TIMEOUT_S}s'`);
  const one = organizations[Math.floor(ORGS / 2)]!.id;
  const out: Timing[] = [];
  // What a run does after loading: refresh each materialized view (as refresh.ts: concurrently,
  // with its work_mem), analyze it.
  await c.query(`set work_mem = '64MB'`);
  for (const v of analyticsViews({ materialize: !PLAIN }).filter((x) => x.materialized)) {
    out.push(
      await time(
        c,
        `refresh ${v.name} (first, not concurrently)`,
        `refresh materialized view cybs_analytics.${v.name}`,
        1,
      ),
    );
    await c.query(`analyze cybs_analytics.${v.name}`);
    out.push(
      await time(
        c,
        `refresh ${v.name} (concurrently, as after a run)`,
        `refresh materialized view concurrently cybs_analytics.${v.name}`,
        1,
      ),
    );
    await c.query(`analyze cybs_analytics.${v.name}`);
  }
  const views = analyticsViews().filter(
    (v) => v.kind === 'model' || (v.kind === 'check' && v.name.startsWith('rc_')),
  );
  for (const v of views) {
    // Marts as an analyst's session reads them (the server's work_mem); checks as cybs-etl check runs them.
    await c.query(v.kind === 'check' ? `set work_mem = '${CHECK_WORK_MEM}'` : 'reset work_mem');
    out.push(await time(c, `${label} ${v.name} (all)`, `select count(*) as n from cybs_analytics.${v.name}`));
    if (v.name !== 'rc_summary')
      out.push(
        await time(
          c,
          `${label} ${v.name} (one organization)`,
          `select count(*) as n from (select * from cybs_analytics.${v.name} where organization_id = '${one}') x`,
        ),
      );
  }
  out.push(
    await time(
      c,
      `${label} in_transit at month end`,
      `select count(*) as n from (select * from cybs_analytics.in_transit where as_of_date = date '${END}') x`,
    ),
  );
  await c.end();
  return out;
}

async function main(): Promise<void> {
  let url = process.env['ANALYTICS_DB'];
  let drop: (() => Promise<void>) | undefined;
  if (!url) {
    const db = await createTestDatabase('analytics_bench');
    url = db.url;
    drop = () => db.drop();
    const w = await openWarehouse({ url, path: '' });
    await migrateToLatest(w.db);
    await installAnalytics(w.db, warehouseTables(PIPELINES), { materialize: false });
    await w.close();
    log(`database ${url}: ${ORGS} organizations × ${DAYS} days × ${TX_PER_DAY} transactions a day`);
    await load(url);
  }
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const size = await c.query(`select pg_size_pretty(pg_database_size(current_database())) as s`);
  log(`database size ${size.rows[0].s}`);
  await c.end();
  {
    // The views as this run measures them: all plain (ANALYTICS_PLAIN=1), or as the product installs them.
    const w = await openWarehouse({ url, path: '' });
    const r = await installAnalytics(w.db, warehouseTables(PIPELINES), { materialize: !PLAIN });
    await w.close();
    log(
      `views ${r.installed ? 'installed' : 'as installed'} (${PLAIN ? 'plain' : 'materialized where the product does'})`,
    );
  }
  const results = await measure(url, PLAIN ? 'plain' : 'product');
  process.stdout.write('\nquery\tmedian_s\truns_s\trows\n');
  for (const r of results.filter((x) => x.seconds.length > 0))
    process.stdout.write(
      `${r.query}\t${Number.isFinite(median(r.seconds)) ? median(r.seconds).toFixed(2) : `>${TIMEOUT_S}`}\t${r.seconds.map((s) => (Number.isFinite(s) ? s.toFixed(2) : `>${TIMEOUT_S}`)).join('/')}\t${r.rows}\n`,
    );
  if (drop && process.env['ANALYTICS_KEEP'] !== '1') await drop();
  else log(`kept ${url}`);
}

await main();
