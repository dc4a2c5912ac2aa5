/**
 * The marts: transactions, payment_lifecycle, ledger (the centrepiece), deposit_reconciliation,
 * in_transit, daily_overview, fee_rates_monthly, chargebacks and merchant_monthly. Each reads the
 * staging views (or the marts before it), never a cybs table. Every judgement a join or a sign
 * takes is stated in the view's description (COMMENT ON VIEW).
 *
 * Local days are in the organization's zone (cybs_analytics.organizations: the zone its reports
 * are cut in, recorded by each run; UTC until then). Ages and "as of" questions use
 * cybs_analytics.as_of().
 */
import { column } from './view-def.js';
import type { ViewDef } from './view-def.js';

const ZONE = `coalesce(o.time_zone, 'UTC')`;
const ORG = `left join cybs_analytics.organizations o on o.organization_id = x.organization_id`;

const TRANSACTIONS: ViewDef = {
  name: 'transactions',
  kind: 'model',
  key: ['organization_id', 'request_id'],
  // Materialized: type and decision are computed, so a plain view gives the planner no statistics
  // for the filters every reader puts on them (docs/performance.md).
  materialized: {
    key: ['organization_id', 'request_id'],
    indexes: [
      ['organization_id', 'predecessor_request_id'],
      ['organization_id', 'local_date'],
    ],
  },
  description:
    'One row per organization and request of the Transaction Request report: what it did, its decision, amount and card. ' +
    'Type comes from the applications the request ran (Application.Name, or for an XML report its ApplicationReply elements), else from its transaction type; ' +
    'decision from its reply code. The amount is unsigned (abs): a refund is a refund by its type, because REST-era reports write refunds positive unless signedAmounts is set and legacy ones negative. ' +
    'Card type is PaymentMethod.CardType when the report has it, else the payment method (card brand).',
  sources: ['transaction_request', 'transaction_request_application_reply'],
  columns: [
    column(
      'organization_id',
      'CyberSource organization (merchant).',
      'stg_transaction_request.organization_id',
    ),
    column('request_id', 'Request id.', 'stg_transaction_request.request_id'),
    column(
      'type',
      'sale, authorization, capture, refund, void or authorization_reversal (request_type()).',
      'stg_transaction_request.applications, stg_transaction_request_application_reply.application, stg_transaction_request.transaction_type',
    ),
    column(
      'decision',
      'ACCEPT, DECLINE or ERROR (decision() of the reply code and flag).',
      'stg_transaction_request.rcode, stg_transaction_request.rflag',
    ),
    column('amount', 'Request amount, unsigned.', 'stg_transaction_request.amount'),
    column('currency', 'Request currency (ISO 4217).', 'stg_transaction_request.currency'),
    column(
      'card_type',
      'Card type, else the payment method.',
      'stg_transaction_request.card_type, stg_transaction_request.payment_method',
    ),
    column(
      'payment_method',
      'Payment method (card brand, eCheck).',
      'stg_transaction_request.payment_method',
    ),
    column(
      'merchant_reference_number',
      'Merchant’s order reference.',
      'stg_transaction_request.merchant_reference_number',
    ),
    column(
      'reconciliation_id',
      'Reconciliation id (transaction reference number).',
      'stg_transaction_request.reconciliation_id',
    ),
    column(
      'transaction_time',
      'When the request was made (UTC).',
      'stg_transaction_request.transaction_time',
    ),
    column(
      'local_date',
      'Day of the request in the organization’s zone.',
      'stg_transaction_request.transaction_time, organizations.time_zone',
    ),
    column(
      'predecessor_request_id',
      'The request this one follows up: a capture’s authorization, a refund’s capture.',
      'stg_transaction_request.predecessor_request_id',
    ),
    column(
      'applications',
      'Applications the request ran, comma-separated.',
      'stg_transaction_request.applications, stg_transaction_request_application_reply.application',
    ),
    column('reason_code', 'Reason code of the reply.', 'stg_transaction_request.reason_code'),
    column('authorization_code', 'Authorization code.', 'stg_transaction_request.authorization_code'),
    column('source', 'Source the row was loaded from.', 'stg_transaction_request.source'),
  ],
  sql: `with replies as (
  select organization_id, request_id,
         string_agg(application, ',' order by reply_number) as applications,
         min(rcode) as rcode, min(rflag) as rflag
    from cybs_analytics.stg_transaction_request_application_reply
   group by organization_id, request_id
)
select
  x.organization_id,
  x.request_id,
  cybs_analytics.request_type(cybs_analytics.applications(coalesce(x.applications, r.applications)), x.transaction_type) as type,
  cybs_analytics.decision(coalesce(x.rcode, r.rcode), coalesce(x.rflag, r.rflag)) as decision,
  abs(x.amount) as amount,
  x.currency,
  coalesce(x.card_type, x.payment_method) as card_type,
  x.payment_method,
  x.merchant_reference_number,
  x.reconciliation_id,
  x.transaction_time,
  (x.transaction_time at time zone ${ZONE})::date as local_date,
  x.predecessor_request_id,
  coalesce(x.applications, r.applications) as applications,
  x.reason_code,
  x.authorization_code,
  x.source
from cybs_analytics.stg_transaction_request x
left join replies r on r.organization_id = x.organization_id and r.request_id = x.request_id
${ORG}`,
};

const PAYMENT_LIFECYCLE: ViewDef = {
  name: 'payment_lifecycle',
  kind: 'model',
  key: ['organization_id', 'request_id'],
  description:
    'One row per organization and capture or credit (an accepted sale, capture or refund of the Transaction Request report, or a request of the Payment Batch Detail report): ' +
    'authorization → capture → batch → processor settlement → funding → deposit, each stage’s id, time and amount, the stage it has reached and its age. ' +
    'Joins are by organization and request id at every stage. A capture’s authorization is its PredecessorRequestID, else the Purchase and Refund Detail authorization of the request; a sale is its own authorization. ' +
    'The funding is the funding line of the request’s purchase or refund (not of its chargebacks); the deposit is the deposit line of that funding and request.',
  sources: [
    'transaction_request',
    'transaction_request_application_reply',
    'payment_batch_detail',
    'processor_settlement_detail',
    'funding_detail',
    'deposit_detail',
    'purchase_refund_authorizations',
  ],
  columns: [
    column('organization_id', 'CyberSource organization.', 'transactions, stg_payment_batch_detail'),
    column('request_id', 'Request id of the capture or credit.', 'transactions, stg_payment_batch_detail'),
    column(
      'type',
      'sale, capture or refund (from the request; for a request only in the batch, capture or refund by its batch line).',
      'transactions.type, stg_payment_batch_detail.is_credit',
    ),
    column(
      'currency',
      'Currency of the request.',
      'transactions.currency, stg_payment_batch_detail.currency',
    ),
    column(
      'amount',
      'Amount of the request, unsigned.',
      'transactions.amount, stg_payment_batch_detail.amount',
    ),
    column('local_date', 'Day of the request in the organization’s zone.', 'transactions.transaction_time'),
    column(
      'authorization_request_id',
      'The authorization (a sale’s own request id; a capture’s predecessor or its Purchase and Refund Detail authorization); null for a refund.',
      'transactions.predecessor_request_id, stg_purchase_refund_authorizations.authorization_request_id',
    ),
    column(
      'authorization_time',
      'When it was authorized.',
      'transactions.transaction_time, stg_purchase_refund_authorizations.authorization_time',
    ),
    column(
      'authorization_amount',
      'Amount authorized.',
      'transactions.amount, stg_purchase_refund_authorizations.amount',
    ),
    column(
      'refunded_request_id',
      'For a refund: the capture it refunds.',
      'transactions.predecessor_request_id',
    ),
    column(
      'capture_time',
      'When the capture or credit was requested.',
      'transactions.transaction_time, stg_payment_batch_detail.transaction_time',
    ),
    column('batch_id', 'Batch it was sent in.', 'stg_payment_batch_detail.batch_id'),
    column('batch_time', 'When the batch was sent.', 'stg_payment_batch_detail.batch_time'),
    column('batch_amount', 'Amount in the batch, unsigned.', 'stg_payment_batch_detail.amount'),
    column(
      'settlement_time',
      'When the processor settled it (its settlement time, else its batch time).',
      'stg_processor_settlement_detail.settlement_time, stg_processor_settlement_detail.batch_time',
    ),
    column(
      'settlement_amount',
      'Amount settled, unsigned.',
      'stg_processor_settlement_detail.settlement_amount, stg_processor_settlement_detail.amount',
    ),
    column('funding_id', 'Funding that paid it.', 'stg_funding_detail.funding_id'),
    column('funding_date', 'Funding date.', 'stg_funding_detail.funding_date'),
    column(
      'funded_amount',
      'Net amount funded for it (after its fee; negative for a refund).',
      'stg_funding_detail.funding_amount',
    ),
    column('deposit_id', 'Deposit that paid its funding.', 'stg_deposit_detail.deposit_id'),
    column('deposit_time', 'When it was deposited.', 'stg_deposit_detail.deposit_time'),
    column('deposited_amount', 'Amount deposited for it.', 'stg_deposit_detail.amount'),
    column(
      'stage',
      'The last stage reached: captured, batched, settled, funded or deposited.',
      'the stage columns',
    ),
    column('stage_time', 'When it reached that stage.', 'the stage columns'),
    column('age_days', 'Days from the request to as_of().', 'capture_time, as_of()'),
    column('days_in_stage', 'Days from reaching its stage to as_of().', 'stage_time, as_of()'),
  ],
  // CTEs read twice are NOT MATERIALIZED so that a filter on the organization reaches the tables.
  sql: `with tx as not materialized (
  select * from cybs_analytics.transactions where type in ('sale', 'capture', 'refund')
), base as (
  select organization_id, request_id from tx where decision = 'ACCEPT'
  union
  select organization_id, request_id from cybs_analytics.stg_payment_batch_detail
), prd_auth as (
  select organization_id, request_id, min(authorization_request_id) as authorization_request_id,
         min(authorization_time) as authorization_time, max(amount) as amount
    from cybs_analytics.stg_purchase_refund_authorizations
   group by organization_id, request_id
), funding as not materialized (
  select organization_id, request_id, min(funding_id) as funding_id, min(funding_date) as funding_date,
         sum(funding_amount) as funded_amount
    from cybs_analytics.stg_funding_detail
   where funding_kind in ('purchase', 'refund')
   group by organization_id, request_id
), deposit as (
  select d.organization_id, d.request_id, min(d.deposit_id) as deposit_id, min(d.deposit_time) as deposit_time,
         sum(d.amount) as deposited_amount
    from cybs_analytics.stg_deposit_detail d
    join funding f on f.organization_id = d.organization_id and f.request_id = d.request_id and f.funding_id = d.funding_id
   group by d.organization_id, d.request_id
), stages as (
  select
    b.organization_id,
    b.request_id,
    coalesce(t.type, case when p.is_credit then 'refund' else 'capture' end) as type,
    coalesce(t.currency, p.currency) as currency,
    coalesce(t.amount, abs(p.amount)) as amount,
    coalesce(t.transaction_time, p.transaction_time, p.batch_time) as capture_time,
    case when t.type = 'sale' then t.request_id
         when t.type = 'refund' or p.is_credit then null
         else coalesce(t.predecessor_request_id, a.authorization_request_id) end as authorization_request_id,
    case when t.type = 'sale' then t.transaction_time
         when t.type = 'refund' or p.is_credit then null
         else coalesce(au.transaction_time, a.authorization_time) end as authorization_time,
    case when t.type = 'sale' then t.amount
         when t.type = 'refund' or p.is_credit then null
         else coalesce(au.amount, a.amount) end as authorization_amount,
    case when t.type = 'refund' then t.predecessor_request_id end as refunded_request_id,
    p.batch_id, p.batch_time, abs(p.amount) as batch_amount,
    coalesce(s.settlement_time, s.batch_time) as settlement_time,
    coalesce(abs(s.settlement_amount), abs(s.amount)) as settlement_amount,
    f.funding_id, f.funding_date, f.funded_amount,
    d.deposit_id, d.deposit_time, d.deposited_amount,
    ${ZONE} as zone
  from base b
  left join tx t on t.organization_id = b.organization_id and t.request_id = b.request_id
  left join cybs_analytics.stg_payment_batch_detail p on p.organization_id = b.organization_id and p.request_id = b.request_id
  left join cybs_analytics.stg_processor_settlement_detail s on s.organization_id = b.organization_id and s.request_id = b.request_id
  left join funding f on f.organization_id = b.organization_id and f.request_id = b.request_id
  left join deposit d on d.organization_id = b.organization_id and d.request_id = b.request_id
  left join prd_auth a on a.organization_id = b.organization_id and a.request_id = b.request_id
  left join cybs_analytics.transactions au
         on au.organization_id = b.organization_id and au.request_id = t.predecessor_request_id and t.type = 'capture'
  left join cybs_analytics.organizations o on o.organization_id = b.organization_id
), staged as (
  select st.*,
    case when deposit_id is not null then 'deposited'
         when funding_id is not null then 'funded'
         when settlement_time is not null then 'settled'
         when batch_id is not null then 'batched'
         else 'captured' end as stage,
    case when deposit_id is not null then deposit_time
         when funding_id is not null then funding_date::timestamp at time zone zone
         when settlement_time is not null then settlement_time
         when batch_id is not null then batch_time
         else capture_time end as stage_time
  from stages st
)
select
  organization_id, request_id, type, currency, amount,
  (capture_time at time zone zone)::date as local_date,
  authorization_request_id, authorization_time, authorization_amount, refunded_request_id,
  capture_time, batch_id, batch_time, batch_amount, settlement_time, settlement_amount,
  funding_id, funding_date, funded_amount, deposit_id, deposit_time, deposited_amount,
  stage, stage_time,
  round((extract(epoch from cybs_analytics.as_of() - capture_time) / 86400)::numeric, 1) as age_days,
  round((extract(epoch from cybs_analytics.as_of() - stage_time) / 86400)::numeric, 1) as days_in_stage
from staged`,
};

const LEDGER: ViewDef = {
  name: 'ledger',
  kind: 'model',
  key: ['organization_id', 'entry_id'],
  // Materialized: every money mart and check reads it (docs/performance.md).
  materialized: {
    key: ['organization_id', 'entry_id'],
    indexes: [
      ['organization_id', 'funding_id'],
      ['organization_id', 'effective_date'],
    ],
  },
  description:
    'Every money movement as one signed entry, from the merchant’s side, on one of two balances: `processor` (settled, owed by the processor, not yet funded) and `transit` (funded, not yet in the bank). ' +
    'sale (+) and refund (−): each Payment Batch Detail line, at its batch time, signed by its application (ics_credit/ecp_credit, or the legacy transaction_type) and never by the amount’s own sign (REST-era files write refunds positive unless signedAmounts is set, legacy ones negative). ' +
    'fee (−): Fee Detail’s total fee of each request (a negative fee, a rebate, is a credit), at its settlement time; and a chargeback’s exception fee. ' +
    'chargeback (−) and chargeback_reversal (+): Chargeback and Retrieval lines with a financial impact of debit or credit (a line without an impact type but with an amount is a debit; retrievals without impact are left out), at the chargeback time. ' +
    'adjustment (as written, signed): a chargeback line’s adjustment amount. ' +
    'funding: each Funding Detail line twice, −funded on processor and +funded on transit, on its funding date (a date, taken as the organization’s local day). deposit (−, transit): each Deposit Detail line, at its deposit time. ' +
    'An entry belongs to a funding by the Funding Detail line of its request and kind: sales, refunds and their fees to the purchase or refund line, chargebacks, reversals and their fees and adjustments to the chargeback line of the same case number (else of the same request). ' +
    'Its deposit is its funding’s. So, for a funding, Σ processor entries = gross − fees − chargebacks ± adjustments − funded = 0 when it balances; Σ transit entries = funded − deposited.',
  sources: [
    'payment_batch_detail',
    'fee_detail',
    'chargeback_and_retrieval_detail',
    'funding_detail',
    'deposit_detail',
  ],
  columns: [
    column('organization_id', 'CyberSource organization.', 'the staging views'),
    column(
      'entry_id',
      'Id of the entry: source table, source number (etl.sources), row, entry type and account.',
      'the staging views’ source_key and source_row',
    ),
    column(
      'entry_type',
      'sale, refund, fee, chargeback, chargeback_reversal, adjustment, funding or deposit.',
      'the staging views',
    ),
    column(
      'account',
      'processor (settled, not yet funded) or transit (funded, not yet deposited).',
      'entry_type',
    ),
    column(
      'amount',
      'Signed amount: + raises the balance of the account, − lowers it.',
      'stg_payment_batch_detail.amount, stg_fee_detail.total_fee_amount, stg_chargeback_and_retrieval_detail.amount, .fee_amount, .adjustment_amount, stg_funding_detail.funding_amount, stg_deposit_detail.amount',
    ),
    column('currency', 'Currency of the amount.', 'the staging views’ currency columns'),
    column(
      'effective_at',
      'When the movement happened (batch, settlement, chargeback, funding or deposit time).',
      'the staging views’ time columns',
    ),
    column(
      'effective_date',
      'Day of the movement in the organization’s zone.',
      'effective_at, organizations.time_zone',
    ),
    column('request_id', 'Request the entry belongs to.', 'the staging views’ request_id'),
    column('batch_id', 'Batch of a sale or refund.', 'stg_payment_batch_detail.batch_id'),
    column(
      'case_number',
      'Chargeback case.',
      'stg_chargeback_and_retrieval_detail.case_number, stg_funding_detail.case_number',
    ),
    column(
      'funding_id',
      'Funding the entry belongs to; null when no funding line covers it.',
      'stg_funding_detail.funding_id',
    ),
    column('deposit_id', 'Deposit of its funding.', 'stg_deposit_detail.deposit_id'),
    column('source_table', 'cybs table the entry comes from.', 'the staging views'),
    column('source', 'Source the row was loaded from.', 'the staging views’ source'),
    column('source_row', 'Row of the source.', 'the staging views’ source_row'),
  ],
  sql: `with pay_funding as (
  select organization_id, request_id, funding_kind, min(funding_id) as funding_id
    from cybs_analytics.stg_funding_detail
   where funding_kind in ('purchase', 'refund')
   group by organization_id, request_id, funding_kind
), case_funding as (
  select organization_id, case_number, funding_kind, min(funding_id) as funding_id
    from cybs_analytics.stg_funding_detail
   where funding_kind in ('chargeback', 'chargeback_reversal') and case_number is not null
   group by organization_id, case_number, funding_kind
), request_case_funding as (
  select organization_id, request_id, funding_kind, min(funding_id) as funding_id
    from cybs_analytics.stg_funding_detail
   where funding_kind in ('chargeback', 'chargeback_reversal') and case_number is null
   group by organization_id, request_id, funding_kind
), deposits as (
  select organization_id, funding_id, min(deposit_id) as deposit_id
    from cybs_analytics.stg_deposit_detail
   where funding_id is not null
   group by organization_id, funding_id
), chargebacks as (
  select c.*,
    case when c.financial_impact_type = 'credit' then 'chargeback_reversal'
         when c.financial_impact_type = 'debit'
           or (c.financial_impact_type is null and c.financial_impact is not false and c.amount <> 0) then 'chargeback'
    end as kind
  from cybs_analytics.stg_chargeback_and_retrieval_detail c
), chargeback_lines as (
  select c.*, coalesce(f1.funding_id, f2.funding_id) as funding_id
    from chargebacks c
    left join case_funding f1 on f1.organization_id = c.organization_id and f1.case_number = c.case_number
                             and f1.funding_kind = coalesce(c.kind, 'chargeback')
    left join request_case_funding f2 on f2.organization_id = c.organization_id and f2.request_id = c.request_id
                                     and f2.funding_kind = coalesce(c.kind, 'chargeback')
), entries as (
  select p.organization_id,
         case when p.is_credit then 'refund' else 'sale' end as entry_type,
         'processor' as account,
         case when p.is_credit then -abs(p.amount) else abs(p.amount) end as amount,
         p.currency, p.batch_time as effective_at, null::date as effective_day,
         p.request_id, p.batch_id, null::text as case_number, pf.funding_id, null::text as deposit_id,
         'payment_batch_detail' as source_table, p.source, p.source_key, p.source_row
    from cybs_analytics.stg_payment_batch_detail p
    left join pay_funding pf on pf.organization_id = p.organization_id and pf.request_id = p.request_id
                            and pf.funding_kind = case when p.is_credit then 'refund' else 'purchase' end
  union all
  select f.organization_id, 'fee', 'processor', -f.total_fee_amount, coalesce(f.fee_currency, f.currency),
         coalesce(f.settlement_time, p.batch_time), null::date,
         f.request_id, p.batch_id, null, coalesce(pf.funding_id, rf.funding_id), null,
         'fee_detail', f.source, f.source_key, f.source_row
    from cybs_analytics.stg_fee_detail f
    left join cybs_analytics.stg_payment_batch_detail p on p.organization_id = f.organization_id and p.request_id = f.request_id
    left join pay_funding pf on pf.organization_id = f.organization_id and pf.request_id = f.request_id and pf.funding_kind = 'purchase'
    left join pay_funding rf on rf.organization_id = f.organization_id and rf.request_id = f.request_id and rf.funding_kind = 'refund'
   where f.total_fee_amount <> 0
  union all
  select c.organization_id, c.kind, 'processor',
         case when c.kind = 'chargeback_reversal' then abs(c.amount) else -abs(c.amount) end,
         c.currency, coalesce(c.chargeback_time, c.case_time), null::date,
         c.request_id, null, c.case_number, c.funding_id, null,
         'chargeback_and_retrieval_detail', c.source, c.source_key, c.source_row
    from chargeback_lines c
   where c.kind is not null and c.amount <> 0
  union all
  select c.organization_id, 'fee', 'processor', -c.fee_amount, coalesce(c.fee_currency, c.currency),
         coalesce(c.chargeback_time, c.case_time), null::date,
         c.request_id, null, c.case_number, c.funding_id, null,
         'chargeback_and_retrieval_detail', c.source, c.source_key, c.source_row
    from chargeback_lines c
   where c.fee_amount <> 0
  union all
  select c.organization_id, 'adjustment', 'processor', c.adjustment_amount, coalesce(c.adjustment_currency, c.currency),
         coalesce(c.chargeback_time, c.case_time), null::date,
         c.request_id, null, c.case_number, c.funding_id, null,
         'chargeback_and_retrieval_detail', c.source, c.source_key, c.source_row
    from chargeback_lines c
   where c.adjustment_amount <> 0
  union all
  select f.organization_id, 'funding', a.account,
         case when a.account = 'processor' then -f.funding_amount else f.funding_amount end,
         coalesce(f.funding_currency, f.currency), null::timestamptz, f.funding_date,
         f.request_id, null, f.case_number, f.funding_id, null,
         'funding_detail', f.source, f.source_key, f.source_row
    from cybs_analytics.stg_funding_detail f
   cross join (values ('processor'), ('transit')) as a(account)
   where f.funding_amount is not null
  union all
  select d.organization_id, 'deposit', 'transit', -d.amount, d.currency, d.deposit_time, null::date,
         d.request_id, null, null, d.funding_id, d.deposit_id,
         'deposit_detail', d.source, d.source_key, d.source_row
    from cybs_analytics.stg_deposit_detail d
   where d.amount is not null
)
select
  e.organization_id,
  e.source_table || ':' || e.source_key || ':' || e.source_row || ':' || e.entry_type || ':' || e.account as entry_id,
  e.entry_type,
  e.account,
  e.amount,
  e.currency,
  coalesce(e.effective_at, e.effective_day::timestamp at time zone ${ZONE}) as effective_at,
  coalesce(e.effective_day, (e.effective_at at time zone ${ZONE})::date) as effective_date,
  e.request_id,
  e.batch_id,
  e.case_number,
  e.funding_id,
  coalesce(e.deposit_id, d.deposit_id) as deposit_id,
  e.source_table,
  e.source,
  e.source_row
from entries e
left join deposits d on d.organization_id = e.organization_id and d.funding_id = e.funding_id
left join cybs_analytics.organizations o on o.organization_id = e.organization_id`,
};

const MONEY_SOURCES = LEDGER.sources;

const DEPOSIT_RECONCILIATION: ViewDef = {
  name: 'deposit_reconciliation',
  kind: 'model',
  key: ['level', 'organization_id', 'funding_id', 'deposit_id', 'currency'],
  description:
    'One row per organization × funding × currency (level funding), per organization × deposit × currency (level deposit), and per organization × currency for the ledger entries no funding covers (level unassigned). ' +
    'expected_net is what the ledger says the funding should pay: its processor entries other than the funding (gross − fees − chargebacks ± adjustments). ' +
    'A funding row compares it with the funded amount (difference = funded − expected); a deposit row with the amount deposited (difference = deposited − expected, over the fundings the deposit pays); an unassigned row shows what is settled but belongs to no funding yet (difference = −expected). ' +
    'Amounts are in the funding’s currency; an entry in another currency (a funding that converts) stays in its own currency’s row and shows as a difference: the exchange rate of the funding line is not applied.',
  sources: MONEY_SOURCES,
  columns: [
    column('level', 'funding, deposit or unassigned.', 'ledger'),
    column('organization_id', 'CyberSource organization.', 'ledger'),
    column(
      'funding_id',
      'The funding (level funding), the first funding a deposit pays (level deposit).',
      'ledger.funding_id',
    ),
    column('deposit_id', 'The deposit (levels funding and deposit).', 'ledger.deposit_id'),
    column('currency', 'Currency.', 'ledger.currency'),
    column('funding_date', 'Funding date.', 'ledger.effective_date of funding entries'),
    column('deposit_time', 'When the deposit was made.', 'ledger.effective_at of deposit entries'),
    column('entries', 'Ledger entries (other than funding and deposit) in the row.', 'ledger'),
    column('gross_amount', 'Sales − refunds.', 'ledger.amount of sale and refund entries'),
    column('fee_amount', 'Fees charged (positive = charged).', 'ledger.amount of fee entries'),
    column(
      'chargeback_amount',
      'Chargebacks − reversals (positive = taken back).',
      'ledger.amount of chargeback and chargeback_reversal entries',
    ),
    column('adjustment_amount', 'Adjustments, signed.', 'ledger.amount of adjustment entries'),
    column('expected_net', 'gross − fees − chargebacks + adjustments: what should be paid.', 'ledger.amount'),
    column('funded_amount', 'What the funding lines pay.', 'ledger.amount of funding entries (transit)'),
    column('deposited_amount', 'What the deposit lines pay.', 'ledger.amount of deposit entries'),
    column(
      'difference',
      'funded − expected (funding), deposited − expected (deposit), −expected (unassigned); 0 when it reconciles.',
      'the columns above',
    ),
  ],
  // One pass over the ledger per level, no full join, CTEs inlined: a filter on the organization
  // reaches the ledger's index.
  sql: `with fundings as not materialized (
  select organization_id, funding_id, currency,
         min(effective_date) filter (where entry_type = 'funding') as funding_date,
         count(*) filter (where account = 'processor' and entry_type <> 'funding') as entries,
         coalesce(sum(amount) filter (where entry_type in ('sale', 'refund')), 0) as gross_amount,
         coalesce(-sum(amount) filter (where entry_type = 'fee'), 0) as fee_amount,
         coalesce(-sum(amount) filter (where entry_type in ('chargeback', 'chargeback_reversal')), 0) as chargeback_amount,
         coalesce(sum(amount) filter (where entry_type = 'adjustment'), 0) as adjustment_amount,
         coalesce(sum(amount) filter (where account = 'processor' and entry_type <> 'funding'), 0) as expected_net,
         coalesce(sum(amount) filter (where entry_type = 'funding' and account = 'transit'), 0) as funded_amount
    from cybs_analytics.ledger
   where funding_id is not null and entry_type <> 'deposit'
   group by organization_id, funding_id, currency
), deposited as not materialized (
  select organization_id, deposit_id, funding_id, currency, min(effective_at) as deposit_time, -sum(amount) as deposited_amount
    from cybs_analytics.ledger
   where entry_type = 'deposit'
   group by organization_id, deposit_id, funding_id, currency
)
select 'funding' as level, f.organization_id, f.funding_id, dep.deposit_id, f.currency, f.funding_date, dep.deposit_time,
       f.entries, f.gross_amount, f.fee_amount, f.chargeback_amount, f.adjustment_amount, f.expected_net,
       f.funded_amount, coalesce(dep.deposited_amount, 0) as deposited_amount,
       f.funded_amount - f.expected_net as difference
  from fundings f
  left join (select organization_id, funding_id, currency, min(deposit_id) as deposit_id, min(deposit_time) as deposit_time,
                    sum(deposited_amount) as deposited_amount
               from deposited group by organization_id, funding_id, currency) dep
         on dep.organization_id = f.organization_id and dep.funding_id = f.funding_id and dep.currency = f.currency
union all
select 'deposit', d.organization_id, min(d.funding_id), d.deposit_id, d.currency, min(f.funding_date), min(d.deposit_time),
       coalesce(sum(f.entries), 0), coalesce(sum(f.gross_amount), 0), coalesce(sum(f.fee_amount), 0),
       coalesce(sum(f.chargeback_amount), 0), coalesce(sum(f.adjustment_amount), 0), coalesce(sum(f.expected_net), 0),
       coalesce(sum(f.funded_amount), 0), sum(d.deposited_amount),
       sum(d.deposited_amount) - coalesce(sum(f.expected_net), 0)
  from deposited d
  left join fundings f on f.organization_id = d.organization_id and f.funding_id = d.funding_id and f.currency = d.currency
 group by d.organization_id, d.deposit_id, d.currency
union all
select 'unassigned', organization_id, null, null, currency, null, null,
       count(*),
       coalesce(sum(amount) filter (where entry_type in ('sale', 'refund')), 0),
       coalesce(-sum(amount) filter (where entry_type = 'fee'), 0),
       coalesce(-sum(amount) filter (where entry_type in ('chargeback', 'chargeback_reversal')), 0),
       coalesce(sum(amount) filter (where entry_type = 'adjustment'), 0),
       sum(amount), 0, 0, -sum(amount)
  from cybs_analytics.ledger
 where funding_id is null and account = 'processor' and entry_type <> 'funding'
 group by organization_id, currency`,
};

const IN_TRANSIT: ViewDef = {
  name: 'in_transit',
  kind: 'model',
  key: ['organization_id', 'currency', 'as_of_date'],
  description:
    'Money in transit, per organization × currency × local day, at the end of that day, from the first to the last day the ledger has for them: ' +
    'settled_not_funded is the processor balance (sales − refunds − fees − chargebacks ± adjustments − funded, up to that day), funded_not_deposited the transit balance (funded − deposited). ' +
    "Filter on as_of_date for the month-end question (where as_of_date = date '2026-11-30').",
  sources: MONEY_SOURCES,
  columns: [
    column('organization_id', 'CyberSource organization.', 'ledger'),
    column('currency', 'Currency.', 'ledger.currency'),
    column('as_of_date', 'The local day, at its end.', 'ledger.effective_date'),
    column(
      'settled_not_funded',
      'Processor balance at the end of the day.',
      'ledger.amount (account processor)',
    ),
    column(
      'funded_not_deposited',
      'Transit balance at the end of the day.',
      'ledger.amount (account transit)',
    ),
  ],
  // daily is read twice: NOT MATERIALIZED, so that a filter on the organization reaches the ledger.
  sql: `with daily as not materialized (
  select organization_id, currency, effective_date as day,
         coalesce(sum(amount) filter (where account = 'processor'), 0) as processor,
         coalesce(sum(amount) filter (where account = 'transit'), 0) as transit
    from cybs_analytics.ledger
   where effective_date is not null
   group by organization_id, currency, effective_date
), span as (
  select organization_id, currency, min(day) as first_day, max(day) as last_day from daily group by organization_id, currency
), days as (
  select s.organization_id, s.currency, d::date as as_of_date
    from span s, generate_series(s.first_day, s.last_day, interval '1 day') as d
)
select d.organization_id, d.currency, d.as_of_date,
       sum(coalesce(x.processor, 0)) over w as settled_not_funded,
       sum(coalesce(x.transit, 0)) over w as funded_not_deposited
  from days d
  left join daily x on x.organization_id = d.organization_id and x.currency = d.currency and x.day = d.as_of_date
window w as (partition by d.organization_id, d.currency order by d.as_of_date)`,
};

const DAILY_OVERVIEW: ViewDef = {
  name: 'daily_overview',
  kind: 'model',
  key: ['organization_id', 'local_date', 'currency'],
  description:
    'Per organization × local day × currency: requests and their decisions (Transaction Request, by request day), the money of the day (ledger, by effective day: sales, refunds, fees, chargebacks, funded, deposited) and the balances in transit at the end of the day (in_transit). ' +
    'Amounts are positive magnitudes except net_activity (sales − refunds − fees − chargebacks ± adjustments).',
  sources: [...new Set([...MONEY_SOURCES, 'transaction_request', 'transaction_request_application_reply'])],
  columns: [
    column('organization_id', 'CyberSource organization.', 'transactions, ledger'),
    column('local_date', 'Local day.', 'transactions.local_date, ledger.effective_date'),
    column('currency', 'Currency.', 'transactions.currency, ledger.currency'),
    column('requests', 'Requests made that day.', 'transactions'),
    column('accepted_requests', 'Of which accepted.', 'transactions.decision'),
    column('declined_requests', 'Of which declined.', 'transactions.decision'),
    column('sales_count', 'Sales and captures settled that day.', 'ledger (sale)'),
    column('sales_amount', 'Their amount.', 'ledger (sale)'),
    column('refunds_count', 'Refunds settled that day.', 'ledger (refund)'),
    column('refunds_amount', 'Their amount.', 'ledger (refund)'),
    column('fees_amount', 'Fees charged.', 'ledger (fee)'),
    column('chargebacks_count', 'Chargebacks.', 'ledger (chargeback)'),
    column('chargebacks_amount', 'Their amount.', 'ledger (chargeback)'),
    column('chargeback_reversals_amount', 'Chargebacks reversed.', 'ledger (chargeback_reversal)'),
    column('adjustments_amount', 'Adjustments, signed.', 'ledger (adjustment)'),
    column(
      'net_activity',
      'Sales − refunds − fees − chargebacks ± adjustments.',
      'ledger (processor, not funding)',
    ),
    column('funded_amount', 'Funded that day.', 'ledger (funding)'),
    column('deposited_amount', 'Deposited that day.', 'ledger (deposit)'),
    column('settled_not_funded', 'Processor balance at the end of the day.', 'in_transit'),
    column('funded_not_deposited', 'Transit balance at the end of the day.', 'in_transit'),
  ],
  // The two sides meet in a union and one grouping (not a full join), so that a filter on the
  // organization reaches both.
  sql: `with day as (
  select organization_id, local_date, currency,
         sum(requests) as requests, sum(accepted_requests) as accepted_requests, sum(declined_requests) as declined_requests,
         sum(sales_count) as sales_count, sum(sales_amount) as sales_amount,
         sum(refunds_count) as refunds_count, sum(refunds_amount) as refunds_amount, sum(fees_amount) as fees_amount,
         sum(chargebacks_count) as chargebacks_count, sum(chargebacks_amount) as chargebacks_amount,
         sum(chargeback_reversals_amount) as chargeback_reversals_amount, sum(adjustments_amount) as adjustments_amount,
         sum(net_activity) as net_activity, sum(funded_amount) as funded_amount, sum(deposited_amount) as deposited_amount
    from (
      select organization_id, local_date, currency,
             1 as requests,
             case when decision = 'ACCEPT' then 1 else 0 end as accepted_requests,
             case when decision = 'DECLINE' then 1 else 0 end as declined_requests,
             0 as sales_count, 0 as sales_amount, 0 as refunds_count, 0 as refunds_amount, 0 as fees_amount,
             0 as chargebacks_count, 0 as chargebacks_amount, 0 as chargeback_reversals_amount, 0 as adjustments_amount,
             0 as net_activity, 0 as funded_amount, 0 as deposited_amount
        from cybs_analytics.transactions
      union all
      select organization_id, effective_date, currency,
             0, 0, 0,
             case when entry_type = 'sale' then 1 else 0 end,
             case when entry_type = 'sale' then amount else 0 end,
             case when entry_type = 'refund' then 1 else 0 end,
             case when entry_type = 'refund' then -amount else 0 end,
             case when entry_type = 'fee' then -amount else 0 end,
             case when entry_type = 'chargeback' then 1 else 0 end,
             case when entry_type = 'chargeback' then -amount else 0 end,
             case when entry_type = 'chargeback_reversal' then amount else 0 end,
             case when entry_type = 'adjustment' then amount else 0 end,
             case when account = 'processor' and entry_type <> 'funding' then amount else 0 end,
             case when entry_type = 'funding' and account = 'transit' then amount else 0 end,
             case when entry_type = 'deposit' then -amount else 0 end
        from cybs_analytics.ledger
    ) x
   group by organization_id, local_date, currency
)
select d.organization_id, d.local_date, d.currency, d.requests, d.accepted_requests, d.declined_requests,
       d.sales_count, d.sales_amount, d.refunds_count, d.refunds_amount, d.fees_amount,
       d.chargebacks_count, d.chargebacks_amount, d.chargeback_reversals_amount, d.adjustments_amount,
       d.net_activity, d.funded_amount, d.deposited_amount,
       t.settled_not_funded, t.funded_not_deposited
  from day d
  left join cybs_analytics.in_transit t
         on t.organization_id = d.organization_id and t.currency = d.currency and t.as_of_date = d.local_date`,
};

const FEE_RATES_MONTHLY: ViewDef = {
  name: 'fee_rates_monthly',
  kind: 'model',
  key: ['organization_id', 'month', 'currency', 'card_type', 'interchange_level'],
  description:
    'Effective fee rates per organization × local month (of the settlement) × currency × card type × interchange level, from Fee Detail. ' +
    'volume is the amount of the fee-bearing requests (a request whose total fee is not zero: refunds carry none), so effective_rate = total fees / volume. ' +
    'Card type is the fee line’s payment method, else its batch line’s; the interchange level is Fee.ClearedInterchangeLevel (unknown when the report lacks it).',
  sources: ['fee_detail', 'payment_batch_detail'],
  columns: [
    column('organization_id', 'CyberSource organization.', 'stg_fee_detail'),
    column('month', 'First day of the local month of the settlement.', 'stg_fee_detail.settlement_time'),
    column('currency', 'Fee currency.', 'stg_fee_detail.fee_currency, stg_fee_detail.currency'),
    column(
      'card_type',
      'Card type (payment method).',
      'stg_fee_detail.payment_method, stg_payment_batch_detail.payment_method',
    ),
    column('interchange_level', 'Cleared interchange level.', 'stg_fee_detail.interchange_level'),
    column('transactions', 'Fee-bearing requests.', 'stg_fee_detail'),
    column('volume', 'Their amount.', 'stg_fee_detail.amount'),
    column('total_fees', 'Total fees.', 'stg_fee_detail.total_fee_amount'),
    column('interchange_fees', 'Interchange part.', 'stg_fee_detail.interchange_amount'),
    column('discount_fees', 'Discount part.', 'stg_fee_detail.discount_amount'),
    column('per_item_fees', 'Per-item fees.', 'stg_fee_detail.per_item_fee_amount'),
    column('effective_rate', 'total_fees / volume.', 'the columns above'),
    column('interchange_rate', 'interchange_fees / volume.', 'the columns above'),
  ],
  sql: `select
  x.organization_id,
  date_trunc('month', coalesce(x.settlement_time, p.batch_time) at time zone ${ZONE})::date as month,
  coalesce(x.fee_currency, x.currency) as currency,
  coalesce(x.payment_method, p.payment_method, 'unknown') as card_type,
  coalesce(x.interchange_level, 'unknown') as interchange_level,
  count(*) as transactions,
  sum(abs(x.amount)) as volume,
  sum(x.total_fee_amount) as total_fees,
  coalesce(sum(x.interchange_amount), 0) as interchange_fees,
  coalesce(sum(x.discount_amount), 0) as discount_fees,
  coalesce(sum(x.per_item_fee_amount), 0) as per_item_fees,
  round(sum(x.total_fee_amount) / nullif(sum(abs(x.amount)), 0), 6) as effective_rate,
  round(coalesce(sum(x.interchange_amount), 0) / nullif(sum(abs(x.amount)), 0), 6) as interchange_rate
from cybs_analytics.stg_fee_detail x
left join cybs_analytics.stg_payment_batch_detail p on p.organization_id = x.organization_id and p.request_id = x.request_id
${ORG}
where x.total_fee_amount <> 0
group by 1, 2, 3, 4, 5`,
};

const CHARGEBACKS: ViewDef = {
  name: 'chargebacks',
  kind: 'model',
  key: ['organization_id', 'case_number', 'currency'],
  description:
    'One row per organization × chargeback case (its case number, else its case identifier, else its request) × currency, from the Chargeback and Retrieval lines of the case: ' +
    'the chargeback and its reversal (financial impact debit and credit), fees, adjustments, the respond-by date and days left to it (from as_of(), in the organization’s zone), the resolution, ' +
    'and the original transaction when the warehouse has it (Transaction Request, else Payment Batch Detail). ' +
    'status: reversed when a credit line exists, resolved when a resolution time at or before as_of() exists, else open.',
  sources: [
    'chargeback_and_retrieval_detail',
    'transaction_request',
    'transaction_request_application_reply',
    'payment_batch_detail',
  ],
  columns: [
    column('organization_id', 'CyberSource organization.', 'stg_chargeback_and_retrieval_detail'),
    column(
      'case_number',
      'The case (case number, else case identifier, else the request id).',
      'stg_chargeback_and_retrieval_detail.case_number, .case_identifier, .request_id',
    ),
    column('currency', 'Chargeback currency.', 'stg_chargeback_and_retrieval_detail.currency'),
    column('request_id', 'The charged-back request.', 'stg_chargeback_and_retrieval_detail.request_id'),
    column('case_type', 'Case type.', 'stg_chargeback_and_retrieval_detail.case_type'),
    column('case_time', 'When the case opened.', 'stg_chargeback_and_retrieval_detail.case_time'),
    column(
      'chargeback_time',
      'When the issuer originated the chargeback.',
      'stg_chargeback_and_retrieval_detail.chargeback_time',
    ),
    column('reason_code', 'Association reason code.', 'stg_chargeback_and_retrieval_detail.reason_code'),
    column('reason_description', 'Reason.', 'stg_chargeback_and_retrieval_detail.reason_description'),
    column('chargeback_amount', 'Charged back (debit lines).', 'stg_chargeback_and_retrieval_detail.amount'),
    column('reversal_amount', 'Reversed (credit lines).', 'stg_chargeback_and_retrieval_detail.amount'),
    column('fee_amount', 'Chargeback fees.', 'stg_chargeback_and_retrieval_detail.fee_amount'),
    column(
      'adjustment_amount',
      'Adjustments, signed.',
      'stg_chargeback_and_retrieval_detail.adjustment_amount',
    ),
    column(
      'respond_by_date',
      'Date by which the response must reach the processor.',
      'stg_chargeback_and_retrieval_detail.respond_by_date',
    ),
    column(
      'days_to_respond',
      'Days from as_of()’s local day to the respond-by date (negative: past).',
      'respond_by_date, as_of()',
    ),
    column(
      'resolution_time',
      'When the case was resolved.',
      'stg_chargeback_and_retrieval_detail.resolution_time',
    ),
    column(
      'resolved_to',
      'B Bank, M Merchant, S Split, G General ledger.',
      'stg_chargeback_and_retrieval_detail.resolved_to',
    ),
    column('status', 'open, resolved or reversed.', 'the columns above'),
    column('lines', 'Lines of the case.', 'stg_chargeback_and_retrieval_detail'),
    column(
      'transaction_found',
      'Whether the charged-back request is in the warehouse.',
      'transactions, stg_payment_batch_detail',
    ),
    column(
      'transaction_amount',
      'Amount of the charged-back request.',
      'transactions.amount, stg_payment_batch_detail.amount',
    ),
    column(
      'transaction_time',
      'When it was made.',
      'transactions.transaction_time, stg_payment_batch_detail.transaction_time',
    ),
    column(
      'merchant_reference_number',
      'Merchant’s order reference.',
      'stg_chargeback_and_retrieval_detail.merchant_reference_number, transactions.merchant_reference_number',
    ),
  ],
  sql: `with cases as (
  select organization_id,
         coalesce(case_number, case_identifier, request_id) as case_number,
         currency,
         min(request_id) as request_id,
         min(case_type) as case_type,
         min(case_time) as case_time,
         min(chargeback_time) as chargeback_time,
         max(reason_code) as reason_code,
         max(reason_description) as reason_description,
         coalesce(sum(abs(amount)) filter (where financial_impact_type is distinct from 'credit' and financial_impact_type is distinct from 'none'), 0) as chargeback_amount,
         coalesce(sum(abs(amount)) filter (where financial_impact_type = 'credit'), 0) as reversal_amount,
         coalesce(sum(fee_amount), 0) as fee_amount,
         coalesce(sum(adjustment_amount), 0) as adjustment_amount,
         min(respond_by_date) as respond_by_date,
         max(resolution_time) as resolution_time,
         max(resolved_to) as resolved_to,
         bool_or(financial_impact_type = 'credit') as reversed,
         count(*) as lines,
         max(merchant_reference_number) as merchant_reference_number
    from cybs_analytics.stg_chargeback_and_retrieval_detail
   group by 1, 2, 3
)
select x.organization_id, x.case_number, x.currency, x.request_id, x.case_type, x.case_time, x.chargeback_time,
       x.reason_code, x.reason_description, x.chargeback_amount, x.reversal_amount, x.fee_amount, x.adjustment_amount,
       x.respond_by_date,
       x.respond_by_date - (cybs_analytics.as_of() at time zone ${ZONE})::date as days_to_respond,
       x.resolution_time, x.resolved_to,
       case when x.reversed then 'reversed'
            when x.resolution_time <= cybs_analytics.as_of() then 'resolved'
            else 'open' end as status,
       x.lines,
       (t.request_id is not null or p.request_id is not null) as transaction_found,
       coalesce(t.amount, abs(p.amount)) as transaction_amount,
       coalesce(t.transaction_time, p.transaction_time) as transaction_time,
       coalesce(x.merchant_reference_number, t.merchant_reference_number, p.merchant_reference_number) as merchant_reference_number
  from cases x
  left join cybs_analytics.transactions t on t.organization_id = x.organization_id and t.request_id = x.request_id
  left join cybs_analytics.stg_payment_batch_detail p on p.organization_id = x.organization_id and p.request_id = x.request_id
  ${ORG}`,
};

const MERCHANT_MONTHLY: ViewDef = {
  name: 'merchant_monthly',
  kind: 'model',
  key: ['organization_id', 'month', 'currency'],
  description:
    'For partners: per organization × local month × currency, volume, approval, refund and chargeback ratios, effective fee rate, and the rank of the organization’s sales volume across the portfolio (the organizations in the warehouse) for that month and currency. ' +
    'approval_rate = accepted / all authorization attempts (authorizations and sales) by request day; refund_ratio = refunds / sales (amounts); chargeback_ratio = chargebacks / sales (counts, the card schemes’ measure); effective_fee_rate = fees / sales. Money figures are by ledger effective day.',
  sources: [...new Set([...MONEY_SOURCES, 'transaction_request', 'transaction_request_application_reply'])],
  columns: [
    column('organization_id', 'CyberSource organization.', 'transactions, ledger'),
    column('month', 'First day of the local month.', 'transactions.local_date, ledger.effective_date'),
    column('currency', 'Currency.', 'transactions.currency, ledger.currency'),
    column('authorization_attempts', 'Authorizations and sales requested.', 'transactions'),
    column('approved', 'Of which accepted.', 'transactions.decision'),
    column('approval_rate', 'approved / authorization_attempts.', 'the columns above'),
    column('sales_count', 'Sales and captures settled.', 'ledger (sale)'),
    column('sales_amount', 'Their amount.', 'ledger (sale)'),
    column('refunds_amount', 'Refunds settled.', 'ledger (refund)'),
    column('refund_ratio', 'refunds_amount / sales_amount.', 'the columns above'),
    column('chargebacks_count', 'Chargebacks.', 'ledger (chargeback)'),
    column('chargebacks_amount', 'Their amount.', 'ledger (chargeback)'),
    column('chargeback_ratio', 'chargebacks_count / sales_count.', 'the columns above'),
    column('fees_amount', 'Fees charged.', 'ledger (fee)'),
    column('effective_fee_rate', 'fees_amount / sales_amount.', 'the columns above'),
    column(
      'volume_rank',
      'Rank of sales_amount among the organizations for the month and currency (1 = largest).',
      'sales_amount',
    ),
    column('organizations_ranked', 'Organizations ranked for the month and currency.', 'sales_amount'),
  ],
  sql: `with auth as (
  select organization_id, date_trunc('month', local_date)::date as month, currency,
         count(*) as authorization_attempts,
         count(*) filter (where decision = 'ACCEPT') as approved
    from cybs_analytics.transactions
   where type in ('authorization', 'sale')
   group by 1, 2, 3
), money as (
  select organization_id, date_trunc('month', effective_date)::date as month, currency,
         count(*) filter (where entry_type = 'sale') as sales_count,
         coalesce(sum(amount) filter (where entry_type = 'sale'), 0) as sales_amount,
         coalesce(-sum(amount) filter (where entry_type = 'refund'), 0) as refunds_amount,
         count(*) filter (where entry_type = 'chargeback') as chargebacks_count,
         coalesce(-sum(amount) filter (where entry_type = 'chargeback'), 0) as chargebacks_amount,
         coalesce(-sum(amount) filter (where entry_type = 'fee'), 0) as fees_amount
    from cybs_analytics.ledger
   where account = 'processor'
   group by 1, 2, 3
), joined as (
  select coalesce(m.organization_id, a.organization_id) as organization_id,
         coalesce(m.month, a.month) as month,
         coalesce(m.currency, a.currency) as currency,
         coalesce(a.authorization_attempts, 0) as authorization_attempts,
         coalesce(a.approved, 0) as approved,
         coalesce(m.sales_count, 0) as sales_count, coalesce(m.sales_amount, 0) as sales_amount,
         coalesce(m.refunds_amount, 0) as refunds_amount,
         coalesce(m.chargebacks_count, 0) as chargebacks_count, coalesce(m.chargebacks_amount, 0) as chargebacks_amount,
         coalesce(m.fees_amount, 0) as fees_amount
    from money m
    full join auth a on a.organization_id = m.organization_id and a.month = m.month and a.currency = m.currency
)
select organization_id, month, currency, authorization_attempts, approved,
       round(approved::numeric / nullif(authorization_attempts, 0), 4) as approval_rate,
       sales_count, sales_amount, refunds_amount,
       round(refunds_amount / nullif(sales_amount, 0), 4) as refund_ratio,
       chargebacks_count, chargebacks_amount,
       round(chargebacks_count::numeric / nullif(sales_count, 0), 4) as chargeback_ratio,
       fees_amount,
       round(fees_amount / nullif(sales_amount, 0), 6) as effective_fee_rate,
       rank() over (partition by month, currency order by sales_amount desc) as volume_rank,
       count(*) over (partition by month, currency) as organizations_ranked
  from joined`,
};

/** The marts, in creation order (each after the views it reads). */
export const MODEL_VIEWS: readonly ViewDef[] = [
  TRANSACTIONS,
  PAYMENT_LIFECYCLE,
  LEDGER,
  DEPOSIT_RECONCILIATION,
  IN_TRANSIT,
  DAILY_OVERVIEW,
  FEE_RATES_MONTHLY,
  CHARGEBACKS,
  MERCHANT_MONTHLY,
];
