/**
 * Reconciliation checks: one view `rc_<name>` per check, returning the rows that fail it, and
 * `rc_summary` (failures per check × organization × day). Every check view starts with the same
 * four columns (organization_id, check_date: the local day the failing item belongs to, reference:
 * the id it is about, detail: one sentence), then its own.
 *
 * A check that waits for a later report (a capture for its batch, a settlement for its funding)
 * fails an item only when the report that should hold the match has been loaded far enough
 * (loaded_coverage: the windows loaded per pipeline and organization): an item is not "missing"
 * from a day nobody loaded. Thresholds are in cybs_analytics.settings; ages count from as_of().
 */
import { column } from './view-def.js';
import type { ViewColumn, ViewDef } from './view-def.js';

const ZONE = `coalesce(o.time_zone, 'UTC')`;
const days = (setting: string): string => `interval '1 day' * cybs_analytics.setting('${setting}')::float8`;
/** A join to what a pipeline has loaded for the organization of `alias` (its columns as `alias`_c). */
const coverage = (pipeline: string, alias: string): string =>
  `join cybs_analytics.loaded_coverage ${alias}_c on ${alias}_c.pipeline = '${pipeline}' and ${alias}_c.organization_id = ${alias}.organization_id`;

const HEAD: ViewColumn[] = [
  column('organization_id', 'CyberSource organization.', 'the check'),
  column('check_date', 'Local day the failing item belongs to.', 'the check'),
  column('reference', 'Id of the failing item (request, funding, case, window, pipeline).', 'the check'),
  column('detail', 'What fails, in one sentence.', 'the check'),
];

export interface CheckDef extends ViewDef {
  /** The check's name without `rc_`. */
  check: string;
  /** What it finds, for `cybs-etl check`. */
  title: string;
}

function check(
  name: string,
  title: string,
  description: string,
  sources: readonly string[],
  extra: ViewColumn[],
  sql: string,
): CheckDef {
  return {
    name: `rc_${name}`,
    check: name,
    title,
    kind: 'check',
    description: `Reconciliation check: ${description} One row per failing item.`,
    columns: [...HEAD, ...extra],
    sql,
    sources,
  };
}

const LOADED_COVERAGE: ViewDef = {
  name: 'loaded_coverage',
  kind: 'check',
  key: ['pipeline', 'organization_id'],
  description:
    'What the warehouse holds, per pipeline and organization: the first start and newest end of its loaded (or no-data) windows, from etl.windows. The checks use it so that an item is not reported missing from a report nobody loaded.',
  sources: [],
  columns: [
    column('pipeline', 'Pipeline.', 'etl.windows.pipeline'),
    column('organization_id', 'CyberSource organization.', 'etl.windows.organization_id'),
    column('first_start', 'Start of the first loaded window.', 'etl.windows.window_start'),
    column('last_end', 'End of the newest loaded window.', 'etl.windows.window_end'),
    column('windows', 'Loaded windows.', 'etl.windows'),
  ],
  sql: `select pipeline, organization_id, min(window_start) as first_start, max(window_end) as last_end, count(*) as windows
  from etl.windows
 where status in ('loaded', 'no_data')
 group by pipeline, organization_id`,
};

const TX_SOURCES = ['transaction_request', 'transaction_request_application_reply'];

export const CHECKS: readonly CheckDef[] = [
  check(
    'capture_not_batched',
    'accepted capture, sale or refund in no batch after capture_batch_days',
    'an accepted sale, capture or refund (Transaction Request) that is in no Payment Batch Detail line capture_batch_days after its request, once that report is loaded that far; a capture voided by a later void is not expected in a batch.',
    [...TX_SOURCES, 'payment_batch_detail'],
    [
      column('request_id', 'The request.', 'transactions.request_id'),
      column('type', 'sale, capture or refund.', 'transactions.type'),
      column('currency', 'Currency.', 'transactions.currency'),
      column('amount', 'Amount.', 'transactions.amount'),
      column('transaction_time', 'When it was requested.', 'transactions.transaction_time'),
    ],
    `select t.organization_id, t.local_date as check_date, t.request_id as reference,
       t.type || ' of ' || t.amount || ' ' || t.currency || ' requested ' || t.transaction_time || ' is in no batch' as detail,
       t.request_id, t.type, t.currency, t.amount, t.transaction_time
  from cybs_analytics.transactions t
  ${coverage('payment_batch_detail', 't')}
 where t.type in ('sale', 'capture', 'refund') and t.decision = 'ACCEPT'
   and t.transaction_time < cybs_analytics.as_of() - ${days('capture_batch_days')}
   and t_c.last_end >= t.transaction_time + ${days('capture_batch_days')}
   and not exists (select 1 from cybs_analytics.stg_payment_batch_detail p
                    where p.organization_id = t.organization_id and p.request_id = t.request_id)
   and not exists (select 1 from cybs_analytics.transactions v
                    where v.organization_id = t.organization_id and v.predecessor_request_id = t.request_id
                      and v.type = 'void' and v.decision = 'ACCEPT')`,
  ),
  check(
    'batch_detail_vs_summary',
    'Payment Batch Summary differs from its Payment Batch Detail lines',
    'a Payment Batch Summary window whose sales or credits (count or amount, per currency and payment type) differ from the Payment Batch Detail lines of the requests made in that window; only windows whose batches (up to a day later) the detail report has loaded are compared.',
    ['payment_batch_summaries', 'payment_batch_detail'],
    [
      column(
        'currency',
        'Currency.',
        'stg_payment_batch_summaries.currency, stg_payment_batch_detail.currency',
      ),
      column(
        'payment_type',
        'Payment type (lower case).',
        'stg_payment_batch_summaries.payment_type, stg_payment_batch_detail.payment_method',
      ),
      column('window_start', 'Start of the summary window.', 'stg_payment_batch_summaries.window_start'),
      column('window_end', 'End of the summary window.', 'stg_payment_batch_summaries.window_end'),
      column('summary_sales_count', 'Sales in the summary.', 'stg_payment_batch_summaries.sales_count'),
      column('detail_sales_count', 'Sales in the detail.', 'stg_payment_batch_detail'),
      column(
        'summary_sales_amount',
        'Sales amount in the summary.',
        'stg_payment_batch_summaries.sales_amount',
      ),
      column('detail_sales_amount', 'Sales amount in the detail.', 'stg_payment_batch_detail.amount'),
      column('summary_credit_count', 'Credits in the summary.', 'stg_payment_batch_summaries.credit_count'),
      column('detail_credit_count', 'Credits in the detail.', 'stg_payment_batch_detail'),
      column(
        'summary_credit_amount',
        'Credit amount in the summary.',
        'stg_payment_batch_summaries.credit_amount',
      ),
      column('detail_credit_amount', 'Credit amount in the detail.', 'stg_payment_batch_detail.amount'),
    ],
    // The summary and the detail meet in a union and one grouping (not a full join), and the
    // windows are inlined, so that a filter on the organization reaches every table.
    `with windows as not materialized (
  select w.organization_id, w.window_start, w.window_end
    from etl.windows w
    join cybs_analytics.loaded_coverage c
      on c.pipeline = 'payment_batch_detail' and c.organization_id = w.organization_id
     and c.first_start <= w.window_start and c.last_end >= w.window_end + interval '1 day'
   where w.pipeline = 'payment_batch_summaries' and w.status in ('loaded', 'no_data')
), compared as (
  select organization_id, window_start, window_end, currency, payment_type,
         sum(summary_sales_count) as summary_sales_count, sum(detail_sales_count) as detail_sales_count,
         sum(summary_sales_amount) as summary_sales_amount, sum(detail_sales_amount) as detail_sales_amount,
         sum(summary_credit_count) as summary_credit_count, sum(detail_credit_count) as detail_credit_count,
         sum(summary_credit_amount) as summary_credit_amount, sum(detail_credit_amount) as detail_credit_amount
    from (
      select w.organization_id, w.window_start, w.window_end, s.currency, lower(s.payment_type) as payment_type,
             coalesce(s.sales_count, 0) as summary_sales_count, 0 as detail_sales_count,
             coalesce(s.sales_amount, 0) as summary_sales_amount, 0 as detail_sales_amount,
             coalesce(s.credit_count, 0) as summary_credit_count, 0 as detail_credit_count,
             coalesce(s.credit_amount, 0) as summary_credit_amount, 0 as detail_credit_amount
        from windows w
        join cybs_analytics.stg_payment_batch_summaries s
          on coalesce(s.merchant_id, s.organization_id) = w.organization_id
         and s.window_start = w.window_start and s.window_end = w.window_end
      union all
      select w.organization_id, w.window_start, w.window_end, p.currency, lower(p.payment_method),
             0, case when p.is_credit then 0 else 1 end,
             0, case when p.is_credit then 0 else abs(p.amount) end,
             0, case when p.is_credit then 1 else 0 end,
             0, case when p.is_credit then abs(p.amount) else 0 end
        from windows w
        join cybs_analytics.stg_payment_batch_detail p
          on p.organization_id = w.organization_id and p.transaction_time >= w.window_start and p.transaction_time < w.window_end
    ) x
   group by organization_id, window_start, window_end, currency, payment_type
)
select x.organization_id, (x.window_start at time zone ${ZONE})::date as check_date,
       x.window_start || '..' || x.window_end || ' ' || x.currency || ' ' || x.payment_type as reference,
       'summary says ' || x.summary_sales_count || ' sales of ' || x.summary_sales_amount || ' and ' || x.summary_credit_count ||
       ' credits of ' || x.summary_credit_amount || ', the detail ' || x.detail_sales_count || ' of ' || x.detail_sales_amount ||
       ' and ' || x.detail_credit_count || ' of ' || x.detail_credit_amount as detail,
       x.currency, x.payment_type, x.window_start, x.window_end,
       x.summary_sales_count, x.detail_sales_count, x.summary_sales_amount, x.detail_sales_amount,
       x.summary_credit_count, x.detail_credit_count, x.summary_credit_amount, x.detail_credit_amount
  from compared x
  left join cybs_analytics.organizations o on o.organization_id = x.organization_id
 where x.summary_sales_count <> x.detail_sales_count or x.summary_sales_amount <> x.detail_sales_amount
    or x.summary_credit_count <> x.detail_credit_count or x.summary_credit_amount <> x.detail_credit_amount`,
  ),
  check(
    'batched_not_settled',
    'batched but not settled by the processor after batch_settle_days',
    'a Payment Batch Detail line with no Processor Settlement Detail line batch_settle_days after its batch, once that report is loaded that far.',
    ['payment_batch_detail', 'processor_settlement_detail'],
    [
      column('request_id', 'The request.', 'stg_payment_batch_detail.request_id'),
      column('batch_id', 'Its batch.', 'stg_payment_batch_detail.batch_id'),
      column('batch_time', 'When the batch was sent.', 'stg_payment_batch_detail.batch_time'),
      column('currency', 'Currency.', 'stg_payment_batch_detail.currency'),
      column('amount', 'Amount, unsigned.', 'stg_payment_batch_detail.amount'),
    ],
    `select p.organization_id, (p.batch_time at time zone ${ZONE})::date as check_date, p.request_id as reference,
       'batched in ' || coalesce(p.batch_id, '?') || ' at ' || p.batch_time || ', not settled by the processor' as detail,
       p.request_id, p.batch_id, p.batch_time, p.currency, abs(p.amount) as amount
  from cybs_analytics.stg_payment_batch_detail p
  ${coverage('processor_settlement_detail', 'p')}
  left join cybs_analytics.organizations o on o.organization_id = p.organization_id
 where p.batch_time < cybs_analytics.as_of() - ${days('batch_settle_days')}
   and p_c.last_end >= p.batch_time + ${days('batch_settle_days')}
   and not exists (select 1 from cybs_analytics.stg_processor_settlement_detail s
                    where s.organization_id = p.organization_id and s.request_id = p.request_id)`,
  ),
  check(
    'settled_not_funded',
    'settled but not funded after settle_fund_days',
    'a Processor Settlement Detail line with no purchase or refund Funding Detail line settle_fund_days after its settlement, once that report is loaded that far.',
    ['processor_settlement_detail', 'funding_detail'],
    [
      column('request_id', 'The request.', 'stg_processor_settlement_detail.request_id'),
      column('settlement_time', 'When it was settled.', 'stg_processor_settlement_detail.settlement_time'),
      column('currency', 'Currency.', 'stg_processor_settlement_detail.currency'),
      column('amount', 'Amount, unsigned.', 'stg_processor_settlement_detail.amount'),
    ],
    `select s.organization_id, (s.settled_at at time zone ${ZONE})::date as check_date, s.request_id as reference,
       'settled at ' || s.settled_at || ', not funded' as detail,
       s.request_id, s.settled_at as settlement_time, s.currency, abs(s.amount) as amount
  from (select x.*, coalesce(x.settlement_time, x.batch_time) as settled_at
          from cybs_analytics.stg_processor_settlement_detail x) s
  ${coverage('funding_detail', 's')}
  left join cybs_analytics.organizations o on o.organization_id = s.organization_id
 where s.settled_at < cybs_analytics.as_of() - ${days('settle_fund_days')}
   and s_c.last_end >= s.settled_at + ${days('settle_fund_days')}
   and not exists (select 1 from cybs_analytics.stg_funding_detail f
                    where f.organization_id = s.organization_id and f.request_id = s.request_id
                      and f.funding_kind in ('purchase', 'refund'))`,
  ),
  check(
    'funding_arithmetic',
    'gross − fees − chargebacks ± adjustments differs from what was funded',
    'a funding whose amount differs from what its ledger entries add up to (gross − fees − chargebacks ± adjustments: Payment Batch Detail, Fee Detail, Chargeback and Retrieval), from deposit_reconciliation; a funding with a sale or refund line no Payment Batch Detail line matches is compared only when that report’s loaded windows (loaded_coverage; none: imported files, all compared) start settle_fund_days before its funding date or earlier (the first fundings of a loaded history pay batches before it).',
    [
      'payment_batch_detail',
      'fee_detail',
      'chargeback_and_retrieval_detail',
      'funding_detail',
      'deposit_detail',
    ],
    [
      column('funding_id', 'The funding.', 'deposit_reconciliation.funding_id'),
      column('currency', 'Currency.', 'deposit_reconciliation.currency'),
      column('gross_amount', 'Sales − refunds.', 'deposit_reconciliation.gross_amount'),
      column('fee_amount', 'Fees.', 'deposit_reconciliation.fee_amount'),
      column('chargeback_amount', 'Chargebacks − reversals.', 'deposit_reconciliation.chargeback_amount'),
      column('adjustment_amount', 'Adjustments.', 'deposit_reconciliation.adjustment_amount'),
      column('expected_net', 'What the ledger says should be funded.', 'deposit_reconciliation.expected_net'),
      column('funded_amount', 'What was funded.', 'deposit_reconciliation.funded_amount'),
      column('difference', 'funded − expected.', 'deposit_reconciliation.difference'),
    ],
    `select r.organization_id, r.funding_date as check_date, r.funding_id as reference,
       'funded ' || r.funded_amount || ' ' || r.currency || ' where gross ' || r.gross_amount || ' − fees ' || r.fee_amount ||
       ' − chargebacks ' || r.chargeback_amount || ' + adjustments ' || r.adjustment_amount || ' = ' || r.expected_net as detail,
       r.funding_id, r.currency, r.gross_amount, r.fee_amount, r.chargeback_amount, r.adjustment_amount,
       r.expected_net, r.funded_amount, r.difference
  from cybs_analytics.deposit_reconciliation r
  left join cybs_analytics.loaded_coverage r_c on r_c.pipeline = 'payment_batch_detail' and r_c.organization_id = r.organization_id
 where r.level = 'funding' and r.difference <> 0
   and (r_c.first_start is null
        or r.funding_date >= ((r_c.first_start + ${days('settle_fund_days')}) at time zone 'UTC')::date
        or not exists (select 1 from cybs_analytics.stg_funding_detail f
                        where f.organization_id = r.organization_id and f.funding_id = r.funding_id
                          and f.funding_kind in ('purchase', 'refund')
                          and not exists (select 1 from cybs_analytics.stg_payment_batch_detail p
                                           where p.organization_id = f.organization_id and p.request_id = f.request_id)))`,
  ),
  check(
    'deposit_mismatch',
    'funded but not deposited after fund_deposit_days, or deposited ≠ funded',
    'a funding whose deposit lines pay another amount than it funded, or that no deposit line pays fund_deposit_days after its funding date (once Deposit Detail is loaded that far).',
    [
      'funding_detail',
      'deposit_detail',
      'payment_batch_detail',
      'fee_detail',
      'chargeback_and_retrieval_detail',
    ],
    [
      column('funding_id', 'The funding.', 'deposit_reconciliation.funding_id'),
      column('deposit_id', 'Its deposit.', 'deposit_reconciliation.deposit_id'),
      column('currency', 'Currency.', 'deposit_reconciliation.currency'),
      column('funded_amount', 'What was funded.', 'deposit_reconciliation.funded_amount'),
      column('deposited_amount', 'What was deposited.', 'deposit_reconciliation.deposited_amount'),
      column('difference', 'deposited − funded.', 'the columns above'),
    ],
    `select r.organization_id, r.funding_date as check_date, r.funding_id as reference,
       case when r.deposit_id is null then 'funded ' || r.funded_amount || ' ' || r.currency || ' on ' || r.funding_date || ', not deposited'
            else 'funded ' || r.funded_amount || ' ' || r.currency || ', deposit ' || r.deposit_id || ' paid ' || r.deposited_amount end as detail,
       r.funding_id, r.deposit_id, r.currency, r.funded_amount, r.deposited_amount, r.deposited_amount - r.funded_amount as difference
  from cybs_analytics.deposit_reconciliation r
  left join cybs_analytics.loaded_coverage r_c on r_c.pipeline = 'deposit_detail' and r_c.organization_id = r.organization_id
 where r.level = 'funding' and r.funding_id is not null and r.funded_amount <> 0
   and (r.deposit_id is not null and r.deposited_amount <> r.funded_amount
        or r.deposit_id is null
           and r.funding_date < (cybs_analytics.as_of() - ${days('fund_deposit_days')})::date
           and r_c.last_end >= r.funding_date + ${days('fund_deposit_days')})`,
  ),
  check(
    'net_funding_vs_detail',
    'Net Funding totals differ from their Funding Detail lines',
    'a Net Funding window and currency whose totals (purchases, refunds, fees, chargebacks, net) differ from the Funding Detail lines both of the requests made in the window and of the lines funded on its days: the report does not say which date places a line in its window, so either may match. Only windows whose fundings (up to three days later) and requests’ batches are loaded are compared.',
    ['net_funding_totals', 'funding_detail', 'payment_batch_detail'],
    [
      column('currency', 'Currency.', 'stg_net_funding_totals.currency'),
      column('window_start', 'Start of the window.', 'stg_net_funding_totals.window_start'),
      column('window_end', 'End of the window.', 'stg_net_funding_totals.window_end'),
      column('total_purchases', 'Net Funding totalPurchases.', 'stg_net_funding_totals.value'),
      column('total_refunds', 'Net Funding totalRefunds.', 'stg_net_funding_totals.value'),
      column('total_fees', 'Net Funding totalFees.', 'stg_net_funding_totals.value'),
      column('total_chargebacks', 'Net Funding totalChargebacks.', 'stg_net_funding_totals.value'),
      column('net_total', 'Net Funding netTotal.', 'stg_net_funding_totals.value'),
      column(
        'detail_net_by_request_date',
        'Σ funded of the lines whose request is in the window.',
        'stg_funding_detail.funding_amount',
      ),
      column(
        'detail_net_by_funding_date',
        'Σ funded of the lines funded on the window’s days.',
        'stg_funding_detail.funding_amount',
      ),
    ],
    // CTEs read more than once are inlined, so that a filter on the organization reaches the tables.
    `with totals as not materialized (
  select t.organization_id, t.window_start, t.window_end, t.currency,
         coalesce(sum(t.value) filter (where t.total_type = 'totalPurchases'), 0) as purchases,
         coalesce(sum(t.value) filter (where t.total_type = 'totalRefunds'), 0) as refunds,
         coalesce(sum(t.value) filter (where t.total_type = 'totalFees'), 0) as fees,
         coalesce(sum(t.value) filter (where t.total_type = 'totalChargebacks'), 0) as chargebacks,
         coalesce(sum(t.value) filter (where t.total_type = 'netTotal'), 0) as net
    from cybs_analytics.stg_net_funding_totals t
    join cybs_analytics.loaded_coverage f on f.pipeline = 'funding_detail' and f.organization_id = t.organization_id
     and f.first_start <= t.window_start and f.last_end >= t.window_end + interval '3 days'
    join cybs_analytics.loaded_coverage b on b.pipeline = 'payment_batch_detail' and b.organization_id = t.organization_id
     and b.first_start <= t.window_start and b.last_end >= t.window_end + interval '1 day'
   where t.window_start is not null
   group by 1, 2, 3, 4
), lines as not materialized (
  select f.organization_id, coalesce(f.funding_currency, f.currency) as currency, f.funding_date,
         coalesce(p.transaction_time, r.transaction_time) as request_time,
         case when f.funding_kind = 'purchase' then abs(f.amount) else 0 end as purchases,
         case when f.funding_kind = 'refund' then abs(f.amount) else 0 end as refunds,
         coalesce(f.fee_amount, 0) as fees,
         case when f.funding_kind = 'chargeback' then abs(f.amount)
              when f.funding_kind = 'chargeback_reversal' then -abs(f.amount) else 0 end as chargebacks,
         coalesce(f.funding_amount, 0) as net
    from cybs_analytics.stg_funding_detail f
    left join cybs_analytics.stg_payment_batch_detail p on p.organization_id = f.organization_id and p.request_id = f.request_id
    left join cybs_analytics.stg_transaction_request r on r.organization_id = f.organization_id and r.request_id = f.request_id
), by_request as (
  select t.organization_id, t.window_start, t.currency,
         sum(l.purchases) as purchases, sum(l.refunds) as refunds, sum(l.fees) as fees,
         sum(l.chargebacks) as chargebacks, sum(l.net) as net
    from totals t
    join lines l on l.organization_id = t.organization_id and l.currency = t.currency
                and l.request_time >= t.window_start and l.request_time < t.window_end
   group by 1, 2, 3
), by_funding as (
  select t.organization_id, t.window_start, t.currency,
         sum(l.purchases) as purchases, sum(l.refunds) as refunds, sum(l.fees) as fees,
         sum(l.chargebacks) as chargebacks, sum(l.net) as net
    from totals t
    join lines l on l.organization_id = t.organization_id and l.currency = t.currency
                and l.funding_date >= ((t.window_start + interval '12 hours') at time zone 'UTC')::date
                and l.funding_date < ((t.window_end + interval '12 hours') at time zone 'UTC')::date
   group by 1, 2, 3
)
select t.organization_id, (t.window_start at time zone ${ZONE})::date as check_date,
       t.window_start || '..' || t.window_end || ' ' || t.currency as reference,
       'net total ' || t.net || ' ' || t.currency || '; its funding lines fund ' || coalesce(r.net, 0) ||
       ' by request date and ' || coalesce(f.net, 0) || ' by funding date' as detail,
       t.currency, t.window_start, t.window_end, t.purchases as total_purchases, t.refunds as total_refunds,
       t.fees as total_fees, t.chargebacks as total_chargebacks, t.net as net_total,
       coalesce(r.net, 0) as detail_net_by_request_date, coalesce(f.net, 0) as detail_net_by_funding_date
  from totals t
  left join by_request r on r.organization_id = t.organization_id and r.window_start = t.window_start and r.currency = t.currency
  left join by_funding f on f.organization_id = t.organization_id and f.window_start = t.window_start and f.currency = t.currency
  left join cybs_analytics.organizations o on o.organization_id = t.organization_id
 where not (t.purchases = coalesce(r.purchases, 0) and t.refunds = coalesce(r.refunds, 0) and t.fees = coalesce(r.fees, 0)
            and t.chargebacks = coalesce(r.chargebacks, 0) and t.net = coalesce(r.net, 0))
   and not (t.purchases = coalesce(f.purchases, 0) and t.refunds = coalesce(f.refunds, 0) and t.fees = coalesce(f.fees, 0)
            and t.chargebacks = coalesce(f.chargebacks, 0) and t.net = coalesce(f.net, 0))`,
  ),
  check(
    'refund_exceeds_capture',
    'refunds of a capture exceed it',
    'an accepted sale or capture whose accepted refunds (Transaction Request lines naming it as PredecessorRequestID, in its currency) add up to more than its amount.',
    TX_SOURCES,
    [
      column('request_id', 'The capture.', 'transactions.request_id'),
      column('currency', 'Currency.', 'transactions.currency'),
      column('capture_amount', 'Amount captured.', 'transactions.amount'),
      column('refunded_amount', 'Amount refunded.', 'transactions.amount of the refunds'),
      column('refunds', 'Refunds.', 'transactions'),
    ],
    `select c.organization_id, c.local_date as check_date, c.request_id as reference,
       'refunded ' || sum(r.amount) || ' ' || c.currency || ' of a ' || c.type || ' of ' || c.amount as detail,
       c.request_id, c.currency, c.amount as capture_amount, sum(r.amount) as refunded_amount, count(*) as refunds
  from cybs_analytics.transactions c
  join cybs_analytics.transactions r
    on r.organization_id = c.organization_id and r.predecessor_request_id = c.request_id
   and r.type = 'refund' and r.decision = 'ACCEPT' and r.currency = c.currency
 where c.type in ('sale', 'capture') and c.decision = 'ACCEPT'
 group by c.organization_id, c.local_date, c.request_id, c.type, c.currency, c.amount
having sum(r.amount) > c.amount`,
  ),
  check(
    'open_authorization',
    'authorization neither captured nor reversed after authorization_open_days',
    'an accepted authorization that no accepted capture, sale, void or authorization reversal follows (PredecessorRequestID, or a Purchase and Refund Detail authorization of a capture) authorization_open_days after it, once Transaction Request is loaded that far.',
    [...TX_SOURCES, 'purchase_refund_authorizations'],
    [
      column('request_id', 'The authorization.', 'transactions.request_id'),
      column('currency', 'Currency.', 'transactions.currency'),
      column('amount', 'Amount authorized.', 'transactions.amount'),
      column('transaction_time', 'When it was authorized.', 'transactions.transaction_time'),
    ],
    `select a.organization_id, a.local_date as check_date, a.request_id as reference,
       'authorized ' || a.amount || ' ' || a.currency || ' at ' || a.transaction_time || ', never captured nor reversed' as detail,
       a.request_id, a.currency, a.amount, a.transaction_time
  from cybs_analytics.transactions a
  ${coverage('transaction_request', 'a')}
 where a.type = 'authorization' and a.decision = 'ACCEPT'
   and a.transaction_time < cybs_analytics.as_of() - ${days('authorization_open_days')}
   and a_c.last_end >= a.transaction_time + ${days('authorization_open_days')}
   and not exists (select 1 from cybs_analytics.transactions c
                    where c.organization_id = a.organization_id and c.predecessor_request_id = a.request_id
                      and c.type in ('capture', 'sale', 'void', 'authorization_reversal') and c.decision = 'ACCEPT')
   and not exists (select 1 from cybs_analytics.stg_purchase_refund_authorizations p
                    where p.organization_id = a.organization_id and p.authorization_request_id = a.request_id)`,
  ),
  check(
    'chargeback_without_transaction',
    'chargeback on a request the warehouse does not have',
    'a chargeback case whose request id is in neither Transaction Request nor Payment Batch Detail (the original transaction may also predate what the warehouse holds: first_loaded says from when it does).',
    ['chargeback_and_retrieval_detail', ...TX_SOURCES, 'payment_batch_detail'],
    [
      column('request_id', 'The request id the chargeback names.', 'chargebacks.request_id'),
      column('case_number', 'The case.', 'chargebacks.case_number'),
      column('currency', 'Currency.', 'chargebacks.currency'),
      column('chargeback_amount', 'Amount charged back.', 'chargebacks.chargeback_amount'),
      column(
        'first_loaded',
        'Start of the first loaded Transaction Request or Payment Batch Detail window.',
        'loaded_coverage',
      ),
    ],
    `select c.organization_id, (coalesce(c.chargeback_time, c.case_time) at time zone ${ZONE})::date as check_date,
       c.case_number as reference,
       'case ' || c.case_number || ' charges back ' || c.chargeback_amount || ' ' || coalesce(c.currency, '') ||
       ' on request ' || coalesce(c.request_id, '?') || ', which is in no transaction report' as detail,
       c.request_id, c.case_number, c.currency, c.chargeback_amount,
       (select min(l.first_start) from cybs_analytics.loaded_coverage l
         where l.organization_id = c.organization_id and l.pipeline in ('transaction_request', 'payment_batch_detail')) as first_loaded
  from cybs_analytics.chargebacks c
  left join cybs_analytics.organizations o on o.organization_id = c.organization_id
 where not c.transaction_found`,
  ),
  check(
    'chargeback_due',
    'open chargeback due within chargeback_due_days',
    'an open chargeback case (no resolution, no reversal) whose respond-by date is today or within chargeback_due_days (days counted in the organization’s zone from as_of()).',
    ['chargeback_and_retrieval_detail', ...TX_SOURCES, 'payment_batch_detail'],
    [
      column('case_number', 'The case.', 'chargebacks.case_number'),
      column('request_id', 'The request.', 'chargebacks.request_id'),
      column('currency', 'Currency.', 'chargebacks.currency'),
      column('chargeback_amount', 'Amount charged back.', 'chargebacks.chargeback_amount'),
      column('respond_by_date', 'Respond-by date.', 'chargebacks.respond_by_date'),
      column('days_to_respond', 'Days left.', 'chargebacks.days_to_respond'),
    ],
    `select c.organization_id, c.respond_by_date as check_date, c.case_number as reference,
       'case ' || c.case_number || ' (' || c.chargeback_amount || ' ' || coalesce(c.currency, '') || ') must be answered by ' ||
       c.respond_by_date || ', in ' || c.days_to_respond || ' day(s)' as detail,
       c.case_number, c.request_id, c.currency, c.chargeback_amount, c.respond_by_date, c.days_to_respond
  from cybs_analytics.chargebacks c
 where c.status = 'open' and c.days_to_respond between 0 and cybs_analytics.setting('chargeback_due_days')`,
  ),
  check(
    'request_in_two_currencies',
    'one request in two currencies',
    'a request id whose transaction currency differs between the reports that carry it (Transaction Request, Payment Batch Detail, Processor Settlement Detail, Fee Detail, and the purchase and refund lines of Funding Detail; the funding and settlement currencies, which may be converted ones, are not compared).',
    [...TX_SOURCES, 'payment_batch_detail', 'processor_settlement_detail', 'fee_detail', 'funding_detail'],
    [
      column('request_id', 'The request.', 'the staging views’ request_id'),
      column('currencies', 'Each report and the currency it names.', 'the staging views’ currency'),
    ],
    `with named as not materialized (
  select organization_id, request_id, currency, 'transaction_request' as report, transaction_time as at
    from cybs_analytics.stg_transaction_request where currency is not null
  union all
  select organization_id, request_id, currency, 'payment_batch_detail', coalesce(transaction_time, batch_time)
    from cybs_analytics.stg_payment_batch_detail where currency is not null
  union all
  select organization_id, request_id, currency, 'processor_settlement_detail', coalesce(transaction_time, batch_time)
    from cybs_analytics.stg_processor_settlement_detail where currency is not null
  union all
  select organization_id, request_id, currency, 'fee_detail', settlement_time
    from cybs_analytics.stg_fee_detail where currency is not null
  union all
  select organization_id, request_id, currency, 'funding_detail', funding_date::timestamp at time zone 'UTC'
    from cybs_analytics.stg_funding_detail where currency is not null and funding_kind in ('purchase', 'refund')
), requests as (
  select organization_id, request_id, min(at) as at
    from named
   group by organization_id, request_id
  having min(currency) <> max(currency)
)
select r.organization_id, (r.at at time zone ${ZONE})::date as check_date, r.request_id as reference,
       'request ' || r.request_id || ' is ' || string_agg(distinct n.report || ' ' || n.currency, ', ') as detail,
       r.request_id, string_agg(distinct n.report || '=' || n.currency, ', ') as currencies
  from requests r
  join named n on n.organization_id = r.organization_id and n.request_id = r.request_id
  left join cybs_analytics.organizations o on o.organization_id = r.organization_id
 group by r.organization_id, r.at, r.request_id, o.time_zone`,
  ),
  check(
    'window_gaps',
    'failed windows and holes in the loaded time',
    'a window of etl.windows that failed, or a hole in time before a window (the previous window of the pipeline and organization ends before it starts): data that is not in the warehouse.',
    [],
    [
      column('pipeline', 'Pipeline.', 'etl.windows.pipeline'),
      column('window_key', 'Window.', 'etl.windows.window_key'),
      column('window_start', 'Start of the window.', 'etl.windows.window_start'),
      column('window_end', 'End of the window.', 'etl.windows.window_end'),
      column('status', 'Its status.', 'etl.windows.status'),
      column(
        'gap_start',
        'Start of the hole before it (null when the window failed).',
        'etl.windows.window_end of the previous window',
      ),
    ],
    `with w as (
  select pipeline, organization_id, window_key, window_start, window_end, status, last_error_code, last_error_message,
         lag(window_end) over (partition by pipeline, organization_id order by window_start) as previous_end
    from etl.windows
)
select w.organization_id, (w.window_start at time zone ${ZONE})::date as check_date,
       w.pipeline || ' ' || w.window_key as reference,
       case when w.status = 'failed'
            then 'window failed: ' || coalesce(w.last_error_code, '') || ' ' || coalesce(w.last_error_message, '')
            else 'nothing loaded from ' || w.previous_end || ' to ' || w.window_start end as detail,
       w.pipeline, w.window_key, w.window_start, w.window_end, w.status,
       case when w.status = 'failed' then null else w.previous_end end as gap_start
  from w
  left join cybs_analytics.organizations o on o.organization_id = w.organization_id
 where w.status = 'failed' or w.previous_end < w.window_start`,
  ),
  check(
    'stale_pipelines',
    'pipeline whose newest loaded window is older than stale_pipeline_hours',
    'a pipeline that a run of the last seven days named, whose newest loaded window for the organization ended more than stale_pipeline_hours before as_of().',
    [],
    [
      column('pipeline', 'Pipeline.', 'etl.windows.pipeline'),
      column('last_end', 'End of its newest loaded window.', 'loaded_coverage.last_end'),
      column('hours_behind', 'Hours from it to as_of().', 'last_end, as_of()'),
    ],
    `with recent as (
  select distinct unnest(pipelines) as pipeline
    from etl.runs
   where started_at >= cybs_analytics.as_of() - interval '7 days'
)
select c.organization_id, (cybs_analytics.as_of() at time zone ${ZONE})::date as check_date, c.pipeline as reference,
       'newest loaded window ended ' || c.last_end || ', ' ||
       round((extract(epoch from cybs_analytics.as_of() - c.last_end) / 3600)::numeric) || ' hours before ' || cybs_analytics.as_of() as detail,
       c.pipeline, c.last_end,
       round((extract(epoch from cybs_analytics.as_of() - c.last_end) / 3600)::numeric, 1) as hours_behind
  from cybs_analytics.loaded_coverage c
  join recent r on r.pipeline = c.pipeline
  left join cybs_analytics.organizations o on o.organization_id = c.organization_id
 where c.last_end < cybs_analytics.as_of() - interval '1 hour' * cybs_analytics.setting('stale_pipeline_hours')::float8`,
  ),
];

const SUMMARY: ViewDef = {
  name: 'rc_summary',
  kind: 'check',
  key: ['check_name', 'organization_id', 'check_date'],
  description:
    'Failures per reconciliation check × organization × local day (the rc_* views): what cybs-etl check prints and the daemon exports as metrics.',
  sources: [...new Set(CHECKS.flatMap((c) => c.sources))],
  columns: [
    column('check_name', 'The check (rc_<name> without rc_).', 'the rc_* views'),
    column('organization_id', 'CyberSource organization.', 'the rc_* views'),
    column('check_date', 'Local day of the failing items.', 'the rc_* views'),
    column('failures', 'Failing items.', 'the rc_* views'),
  ],
  sql: CHECKS.map(
    (c) =>
      `select '${c.check}'::text as check_name, organization_id, check_date, count(*) as failures\n  from cybs_analytics.${c.name}\n group by organization_id, check_date`,
  ).join('\nunion all\n'),
};

/** The check views in creation order: the coverage they share, each check, then rc_summary. */
export const CHECK_VIEWS: readonly ViewDef[] = [LOADED_COVERAGE, ...CHECKS, SUMMARY];
