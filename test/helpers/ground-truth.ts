/**
 * Compare a warehouse with the simulator's ground truth: row counts and exact amount sums per
 * report day and per on-demand window, table by table.
 *
 *   const result = await compareWithGroundTruth(pgClient, {
 *     truth: (org, from, to) => sim.groundTruth(org, from, to),   // or groundTruthOverHttp(baseUrl)
 *     organizations: sim.organizations,
 *     startDate: '2024-03-02',
 *     endDate: '2024-03-04',
 *   });
 *   expect(result.mismatches).toEqual([]);
 *
 * What is compared (see packages/simulator/src/data/ground-truth.ts for the shape of the truth):
 *
 *  - Report files: every DAILY report of the truth whose definition has a compared pipeline
 *    (default: the pipelines enabled out of the box), or with `reportNames` the reports of the named
 *    subscription of any frequency. The report of a period is the rows of the definition's table
 *    with `_source = '<reportName>/<reportDate>'` (reportDate = the local date of the period's end;
 *    for a midnight-to-midnight day D, D + 1), `<reportDate>T<hh:mm>` (its end time) for USER_DEFINED. COMPLETED: the row count and
 *    the sum of the definition's amount column per currency column must be equal. NO_DATA or not
 *    yet available (QUEUED, RUNNING, stuck): no row may exist for that source.
 *  - On-demand endpoints: for each window of `onDemandWindowDays` UTC days (default 1) from
 *    startDate, the rows with `_source = '<endpoint>/<startISO>..<endISO>'`:
 *    purchase-refund-details (the six sections' row counts; settlements and authorizations
 *    `amount` by `currency_code`; fee/funding `total_fee` by `fee_currency` and `funding_amount`
 *    by `funding_currency`), net-fundings (`net_funding_totals`: each total type by currency),
 *    payment-batch-summaries (sales and credit counts and amounts by currency), conversion-details
 *    and notification-of-changes (row counts).
 *  - `strict` (default true): a row of a compared table for a compared organization whose
 *    `_source` is not one of the expected sources of the range is a mismatch (a leftover, a
 *    duplicate under another source, or a window loaded twice under different names).
 *
 * Amounts are compared as exact decimals (trailing zeros and zero-valued currencies ignored), never
 * as floats. Duplicated rows show up as a row count above the truth (natural keys prevent exact
 * duplicates; this catches a window loaded under two sources too); lost rows as a count below it.
 *
 * The comparison needs only a `query(text, values)` function (pg.Client, pg.Pool or a wrapper), so
 * it runs against any PostgreSQL the CLI loaded. It reports tables that do not exist as mismatches
 * unless nothing is expected in them.
 */
import { findField } from '../../src/catalog/index.js';
import type { GroundTruth, AmountSums } from '../../packages/simulator/src/data/ground-truth.js';
import { reportDefinition } from '../../packages/simulator/src/render/report-layouts.js';
import { ON_DEMAND_PIPELINES, PIPELINES, REPORT_PIPELINES } from '../../pipelines/index.js';

export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
}

export type TruthSource = (
  organizationId: string,
  startDate: string,
  endDate: string,
) => GroundTruth | Promise<GroundTruth>;

export interface CompareOptions {
  truth: TruthSource;
  organizations: readonly string[];
  /** First local day (reports) / UTC day (on-demand), YYYY-MM-DD. */
  startDate: string;
  /** Last day, inclusive. */
  endDate: string;
  /** Pipeline names to compare (default: the pipelines enabled out of the box). */
  pipelines?: readonly string[];
  /**
   * The subscription each report pipeline loads (pipeline name → reportName): only its reports are
   * compared, whatever their frequency. Default: every DAILY report of the pipeline's definition.
   */
  reportNames?: Readonly<Record<string, string>>;
  /** Days per on-demand window (the pipelines' windowDays; default 1). */
  onDemandWindowDays?: number;
  /** Unexpected `_source` values in compared tables are mismatches (default true). */
  strict?: boolean;
}

export interface CompareResult {
  ok: boolean;
  /** Human-readable differences, one per line; empty when the warehouse equals the truth. */
  mismatches: string[];
  /** Rows the truth expects that the warehouse lacks, summed over compared sources (≥ 0). */
  rowsMissing: number;
  /** Rows the warehouse holds beyond the truth (extra rows per source + rows under unexpected sources). */
  rowsExtra: number;
  /** Rows expected over every compared source and table. */
  rowsExpected: number;
  /** Sources (report days and on-demand windows × sections) compared. */
  sourcesCompared: number;
}

/** The ground truth from a simulator in another process (GET /__simulator/ground-truth). */
export function groundTruthOverHttp(baseUrl: string): TruthSource {
  return async (organizationId, startDate, endDate) => {
    const url = new URL('/__simulator/ground-truth', baseUrl);
    url.searchParams.set('organizationId', organizationId);
    url.searchParams.set('startDate', startDate);
    url.searchParams.set('endDate', endDate);
    const res = await fetch(url);
    if (!res.ok) throw new Error(`ground truth: HTTP ${res.status} ${await res.text()}`);
    return (await res.json()) as GroundTruth;
  };
}

/** Exact decimal normalisation: "0012.3400" → "12.34", "-0.00" → "0". */
export function normaliseDecimal(value: unknown): string {
  if (value === null || value === undefined) return '0';
  let s = String(value).trim();
  let sign = '';
  if (s.startsWith('-') || s.startsWith('+')) {
    sign = s[0] === '-' ? '-' : '';
    s = s.slice(1);
  }
  let [int = '0', frac = ''] = s.split('.');
  int = int.replace(/^0+(?=\d)/, '');
  frac = frac.replace(/0+$/, '');
  if (int === '' || int === '0') int = '0';
  const out = frac ? `${int}.${frac}` : int;
  return out === '0' ? '0' : `${sign}${out}`;
}

function nonZero(byCurrency: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [c, v] of Object.entries(byCurrency)) {
    const n = normaliseDecimal(v);
    if (n !== '0') out[c] = n;
  }
  return out;
}

function sameSums(a: Record<string, string>, b: Record<string, string>): boolean {
  const x = nonZero(a);
  const y = nonZero(b);
  const keys = new Set([...Object.keys(x), ...Object.keys(y)]);
  for (const k of keys) if (x[k] !== y[k]) return false;
  return true;
}

function addDays(day: string, n: number): string {
  const t = Date.parse(`${day}T00:00:00Z`) + n * 86_400_000;
  return new Date(t).toISOString().slice(0, 10);
}

const ident = (name: string): string => `"${name.replace(/"/g, '""')}"`;

interface Expectation {
  table: string;
  source: string;
  organizationId: string;
  rows: number;
  /** amount column → currency column → expected sums by currency. */
  sums: { amount: string; currency: string; expected: AmountSums }[];
  /** Extra checks on the table (e.g. net funding totals by type). */
  custom?: (db: Queryable, exp: Expectation) => Promise<string[]>;
}

/**
 * Compare the warehouse with the ground truth over [startDate, endDate] for each organization.
 * Never throws on a difference: every difference is a line in `mismatches`.
 */
export async function compareWithGroundTruth(db: Queryable, options: CompareOptions): Promise<CompareResult> {
  const selected = new Set(
    options.pipelines ??
      [...REPORT_PIPELINES, ...ON_DEMAND_PIPELINES].filter((p) => p.enabledByDefault).map((p) => p.name),
  );
  const reportByDefinition = new Map(
    REPORT_PIPELINES.filter((p) => selected.has(p.name)).map((p) => [p.reportDefinitionName, p]),
  );
  const onDemand = ON_DEMAND_PIPELINES.filter((p) => selected.has(p.name));
  const step = options.onDemandWindowDays ?? 1;
  const expectations: Expectation[] = [];
  const mismatches: string[] = [];

  for (const org of options.organizations) {
    const whole = await options.truth(org, options.startDate, options.endDate);
    for (const report of whole.reports) {
      const pipeline = reportByDefinition.get(report.reportDefinitionName);
      if (!pipeline) continue;
      const named = options.reportNames?.[pipeline.name];
      if (
        named !== undefined ? report.reportName !== named : report.reportFrequency.toUpperCase() !== 'DAILY'
      )
        continue;
      // Several reports a day (USER_DEFINED) are told apart by their end time.
      const several = report.reportFrequency.toUpperCase() === 'USER_DEFINED';
      for (const day of report.days) {
        const source = `${report.reportName}/${day.reportDate}${several ? `T${day.reportTime.slice(0, 5)}` : ''}`;
        const table = pipeline.table.name;
        if (day.status !== 'COMPLETED') {
          expectations.push({ table, source, organizationId: org, rows: 0, sums: [] });
          continue;
        }
        const amount = findField(day.amountField)?.column;
        const currencyFieldId = reportDefinition(report.reportDefinitionName)?.currencyField;
        const currency = currencyFieldId ? findField(currencyFieldId)?.column : undefined;
        expectations.push({
          table,
          source,
          organizationId: org,
          rows: day.rowCount,
          sums: amount && currency ? [{ amount, currency, expected: day.amounts }] : [],
        });
      }
    }
    for (let day = options.startDate; day <= options.endDate; day = addDays(day, step)) {
      const last = addDays(day, step - 1);
      const truth =
        step === 1 && options.startDate === options.endDate ? whole : await options.truth(org, day, last);
      const od = truth.onDemand;
      const window = `${od.startTime}..${od.endTime}`;
      for (const p of onDemand) {
        const source = `${p.endpoint}/${window}`;
        const base = { source, organizationId: org };
        if (p.endpoint === 'purchase-refund-details') {
          const s = od.purchaseRefundDetails.sections;
          expectations.push(
            { ...base, table: 'purchase_refund_request_details', rows: s.requestDetails.rowCount, sums: [] },
            {
              ...base,
              table: 'purchase_refund_settlements',
              rows: s.settlements.rowCount,
              sums: [
                { amount: 'amount', currency: 'currency_code', expected: s.settlements.amounts['amount']! },
              ],
            },
            {
              ...base,
              table: 'purchase_refund_authorizations',
              rows: s.authorizations.rowCount,
              sums: [
                {
                  amount: 'amount',
                  currency: 'currency_code',
                  expected: s.authorizations.amounts['amount']!,
                },
              ],
            },
            {
              ...base,
              table: 'purchase_refund_fee_funding',
              rows: s.feeAndFundingDetails.rowCount,
              sums: [
                {
                  amount: 'total_fee',
                  currency: 'fee_currency',
                  expected: s.feeAndFundingDetails.amounts['totalFee']!,
                },
                {
                  amount: 'funding_amount',
                  currency: 'funding_currency',
                  expected: s.feeAndFundingDetails.amounts['fundingAmount']!,
                },
              ],
            },
            { ...base, table: 'purchase_refund_others', rows: s.others.rowCount, sums: [] },
            {
              ...base,
              table: 'purchase_refund_settlement_statuses',
              rows: s.settlementStatuses.rowCount,
              sums: [],
            },
          );
        } else if (p.endpoint === 'net-fundings') {
          const totals = od.netFundings;
          const anyTotal = Object.values(totals).some((t) => Object.keys(nonZero(t.byCurrency)).length > 0);
          expectations.push({
            ...base,
            table: 'net_funding_totals',
            rows: -1, // one row per (type, currency): checked through the sums below
            sums: [],
            custom: async (q, exp) => {
              const r = await q.query(
                `select total_type, currency, sum(value)::text as v, count(*)::int as n
                   from cybs.net_funding_totals where _organization_id = $1 and _source = $2
                  group by 1, 2`,
                [exp.organizationId, exp.source],
              );
              const got: Record<string, Record<string, string>> = {};
              for (const row of r.rows) {
                (got[String(row['total_type'])] ??= {})[String(row['currency'])] = String(row['v']);
              }
              const out: string[] = [];
              for (const [type, sums] of Object.entries(totals) as [string, AmountSums][]) {
                if (!sameSums(got[type] ?? {}, sums.byCurrency)) {
                  out.push(
                    `${exp.organizationId} net_funding_totals ${exp.source} ${type}: warehouse ${JSON.stringify(nonZero(got[type] ?? {}))} ≠ truth ${JSON.stringify(nonZero(sums.byCurrency))}`,
                  );
                }
              }
              if (!anyTotal && r.rows.length > 0) {
                out.push(
                  `${exp.organizationId} net_funding_totals ${exp.source}: rows where the truth has none`,
                );
              }
              return out;
            },
          });
        } else if (p.endpoint === 'payment-batch-summaries') {
          const b = od.paymentBatchSummaries;
          expectations.push({
            ...base,
            table: 'payment_batch_summaries',
            rows: -1,
            sums: [
              { amount: 'sales_amount', currency: 'currency_code', expected: b.salesAmount },
              { amount: 'credit_amount', currency: 'currency_code', expected: b.creditAmount },
            ],
            custom: async (q, exp) => {
              const r = await q.query(
                `select coalesce(sum(sales_count), 0)::int as s, coalesce(sum(credit_count), 0)::int as c
                   from cybs.payment_batch_summaries where _organization_id = $1 and _source = $2`,
                [exp.organizationId, exp.source],
              );
              const row = r.rows[0] ?? {};
              return row['s'] === b.salesCount && row['c'] === b.creditCount
                ? []
                : [
                    `${exp.organizationId} payment_batch_summaries ${exp.source}: counts sales ${String(row['s'])}/credit ${String(row['c'])} ≠ truth ${b.salesCount}/${b.creditCount}`,
                  ];
            },
          });
        } else if (p.endpoint === 'conversion-details') {
          expectations.push({
            ...base,
            table: 'conversion_details',
            rows: od.conversionDetails.rowCount,
            sums: [],
          });
        } else if (p.endpoint === 'notification-of-changes') {
          expectations.push({
            ...base,
            table: 'notification_of_changes',
            rows: od.notificationOfChanges.rowCount,
            sums: [],
          });
        }
      }
    }
  }

  const existing = new Set(
    (await db.query(`select table_name from information_schema.tables where table_schema = 'cybs'`)).rows.map(
      (r) => String(r['table_name']),
    ),
  );
  let rowsMissing = 0;
  let rowsExtra = 0;
  let rowsExpected = 0;
  for (const exp of expectations) {
    const where = `${exp.organizationId} ${exp.table} ${exp.source}`;
    if (!existing.has(exp.table)) {
      if (exp.rows > 0 || exp.custom) mismatches.push(`${where}: table cybs.${exp.table} does not exist`);
      rowsMissing += Math.max(exp.rows, 0);
      rowsExpected += Math.max(exp.rows, 0);
      continue;
    }
    const count = await db.query(
      `select count(*)::int as n from cybs.${ident(exp.table)} where _organization_id = $1 and _source = $2`,
      [exp.organizationId, exp.source],
    );
    const n = Number(count.rows[0]?.['n'] ?? 0);
    if (exp.rows >= 0) {
      rowsExpected += exp.rows;
      if (n !== exp.rows) {
        mismatches.push(`${where}: ${n} rows, truth ${exp.rows}`);
        if (n < exp.rows) rowsMissing += exp.rows - n;
        else rowsExtra += n - exp.rows;
      }
    }
    for (const s of exp.sums) {
      const r = await db.query(
        `select ${ident(s.currency)} as c, sum(${ident(s.amount)})::text as v
           from cybs.${ident(exp.table)} where _organization_id = $1 and _source = $2 group by 1`,
        [exp.organizationId, exp.source],
      );
      const got: Record<string, string> = {};
      for (const row of r.rows) got[String(row['c'])] = String(row['v']);
      if (!sameSums(got, s.expected.byCurrency)) {
        mismatches.push(
          `${where}: sum(${s.amount}) ${JSON.stringify(nonZero(got))} ≠ truth ${JSON.stringify(nonZero(s.expected.byCurrency))}`,
        );
      }
    }
    if (exp.custom) mismatches.push(...(await exp.custom(db, exp)));
  }

  if (options.strict !== false) {
    const byTable = new Map<string, Set<string>>();
    for (const exp of expectations) {
      const set = byTable.get(exp.table) ?? new Set<string>();
      set.add(`${exp.organizationId}\u0000${exp.source}`);
      byTable.set(exp.table, set);
    }
    for (const [table, expected] of byTable) {
      if (!existing.has(table)) continue;
      const r = await db.query(
        `select _organization_id as o, _source as s, count(*)::int as n from cybs.${ident(table)}
          where _organization_id = any($1) group by 1, 2`,
        [[...options.organizations]],
      );
      for (const row of r.rows) {
        const key = `${String(row['o'])}\u0000${String(row['s'])}`;
        if (!expected.has(key)) {
          rowsExtra += Number(row['n']);
          mismatches.push(
            `${String(row['o'])} ${table} ${String(row['s'])}: ${String(row['n'])} rows under a source the truth does not expect`,
          );
        }
      }
    }
  }

  return {
    ok: mismatches.length === 0,
    mismatches,
    rowsMissing,
    rowsExtra,
    rowsExpected,
    sourcesCompared: expectations.length,
  };
}

/**
 * Rows that share a natural key (as declared in pipelines/): always 0 while the warehouse's unique
 * keys hold; a non-zero count means a window's rows were loaded twice.
 */
export async function duplicateRows(db: Queryable): Promise<number> {
  const existing = new Set(
    (await db.query(`select table_name from information_schema.tables where table_schema = 'cybs'`)).rows.map(
      (r) => String(r['table_name']),
    ),
  );
  const tables = new Map<string, readonly string[]>();
  for (const p of PIPELINES) {
    for (const t of p.kind === 'report' ? [p.table] : Object.values(p.tables))
      tables.set(t.name, t.naturalKey);
  }
  let total = 0;
  for (const [table, key] of tables) {
    if (!existing.has(table)) continue;
    const r = await db.query(
      `select coalesce(sum(n - 1), 0)::int as d from (select count(*) as n from cybs.${ident(table)}
        group by ${key.map(ident).join(', ')} having count(*) > 1) x`,
    );
    total += Number(r.rows[0]?.['d'] ?? 0);
  }
  return total;
}
