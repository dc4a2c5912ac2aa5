/**
 * Staging views, one per cybs table the models read (sources.ts): the columns the models use under
 * clean names, each cast to its catalog type (a column an old release created as text still reads
 * as a number or a time), currencies in upper case, and the lineage kept (organization, source,
 * row number, load time, run). Nothing is filtered or summed here; every model reads these views,
 * never the cybs tables.
 */
import { findField, sectionsOf } from '../catalog/index.js';
import type { OnDemandEndpoint } from '../catalog/index.js';
import { APPLICATION_REPLY_TABLE, REPORT_SOURCES } from './sources.js';
import type { ViewColumn, ViewDef } from './view-def.js';

interface StagedColumn {
  name: string;
  /** SQL over the table aliased `t`. */
  expr: string;
  description: string;
  lineage: string;
}

const quote = (id: string): string => `"${id.replace(/"/g, '""')}"`;

/** A catalog field of a report table, renamed. */
function field(table: string, name: string, id: string, description?: string): StagedColumn {
  const f = findField(id);
  if (!f) throw new Error(`staging: unknown catalog field ${id}`);
  return {
    name,
    expr: `t.${quote(f.column)}::${f.pgType}`,
    description: description ?? `${sentence(f.description ?? f.name)} (${id}).`,
    lineage: `cybs.${table}.${f.column}`,
  };
}

/** A currency column, upper case. */
function currency(table: string, name: string, id: string, description?: string): StagedColumn {
  const c = field(table, name, id, description);
  return { ...c, expr: `upper(btrim(${c.expr}))` };
}

/** A key of an on-demand section's items, renamed. */
function item(
  endpoint: OnDemandEndpoint,
  table: string,
  name: string,
  key: string,
  description?: string,
): StagedColumn {
  const section = sectionsOf(endpoint).find((s) => s.table === table);
  const f = section?.fields.find((x) => x.key === key);
  if (!f) throw new Error(`staging: ${table} has no field ${key}`);
  return {
    name,
    expr: `t.${quote(f.column)}::${f.pgType}`,
    description: description ?? `${sentence(f.description ?? key)} (${endpoint} ${section!.name}.${key}).`,
    lineage: `cybs.${table}.${f.column}`,
  };
}

function computed(name: string, expr: string, description: string, lineage: string): StagedColumn {
  return { name, expr, description, lineage };
}

function sentence(text: string): string {
  const t = text.trim().replace(/\.$/, '');
  return t.charAt(0).toUpperCase() + t.slice(1);
}

function lineageColumns(table: string): StagedColumn[] {
  return [
    computed(
      'organization_id',
      't."_organization_id"',
      'CyberSource organization (merchant) the row belongs to.',
      `cybs.${table}._organization_id`,
    ),
    computed(
      'source',
      't."_source"',
      'Where the row was loaded from: report name and date, endpoint and time window, or imported file.',
      `cybs.${table}._source`,
    ),
    computed(
      'source_row',
      't."_source_row"',
      'Line (CSV) or record (XML, JSON) number within the source.',
      `cybs.${table}._source_row`,
    ),
    computed(
      'source_key',
      't."_source_key"',
      'Number of the (organization, source) pair in etl.sources.',
      `cybs.${table}._source_key`,
    ),
    computed('loaded_at', 't."_loaded_at"', 'When the row was last written.', `cybs.${table}._loaded_at`),
    computed(
      'run_id',
      't."_run_id"',
      'etl.runs.id of the run that last wrote the row.',
      `cybs.${table}._run_id`,
    ),
  ];
}

/**
 * The time window of an on-demand source, read from its `_source` (`<endpoint>/<start>..<end>`,
 * ISO 8601 UTC); null for a source of another form.
 */
function windowColumns(table: string): StagedColumn[] {
  const range = `split_part(t."_source", '/', 2)`;
  const valid = `t."_source" ~ '^[a-z-]+/[0-9T:.Z-]+\\.\\.[0-9T:.Z-]+$'`;
  return [
    computed(
      'window_start',
      `case when ${valid} then split_part(${range}, '..', 1)::timestamptz end`,
      'Start of the on-demand request window the row was loaded from (from the source).',
      `cybs.${table}._source`,
    ),
    computed(
      'window_end',
      `case when ${valid} then split_part(${range}, '..', 2)::timestamptz end`,
      'End (exclusive) of the on-demand request window the row was loaded from (from the source).',
      `cybs.${table}._source`,
    ),
  ];
}

function stagingView(table: string, description: string, columns: StagedColumn[]): ViewDef {
  const all = [...columns, ...lineageColumns(table)];
  return {
    name: `stg_${table}`,
    kind: 'staging',
    description: `Staging view of cybs.${table}: ${description} One row per row of the table; columns renamed and cast to their catalog types, lineage kept.`,
    columns: all.map(({ name, description: d, lineage }): ViewColumn => ({ name, description: d, lineage })),
    sql: `select\n  ${all.map((c) => `${c.expr} as ${quote(c.name)}`).join(',\n  ')}\nfrom cybs.${quote(table)} as t`,
    sources: [table],
  };
}

function reportFields(table: string): readonly string[] {
  const source = REPORT_SOURCES.find((s) => s.table === table);
  if (!source) throw new Error(`staging: ${table} is not a report source`);
  return source.fields;
}

/** Every staging view, in creation order. */
export function stagingViews(): ViewDef[] {
  const tr = 'transaction_request';
  const pbd = 'payment_batch_detail';
  const ps = 'processor_settlement_detail';
  const fd = 'funding_detail';
  const fee = 'fee_detail';
  const dd = 'deposit_detail';
  const cb = 'chargeback_and_retrieval_detail';
  const views = [
    stagingView(tr, 'every request (authorizations, captures, sales, refunds, voids, declines).', [
      field(tr, 'request_id', 'Request.RequestID'),
      field(tr, 'transaction_time', 'Request.TransactionDate'),
      field(tr, 'merchant_id', 'Request.MerchantID'),
      field(tr, 'merchant_reference_number', 'Request.MerchantReferenceNumber'),
      field(
        tr,
        'reconciliation_id',
        'Request.TransactionReferenceNumber',
        'Reconciliation id: the transaction reference number that ties gateway and processor reports (Request.TransactionReferenceNumber).',
      ),
      field(tr, 'predecessor_request_id', 'Request.PredecessorRequestID'),
      field(tr, 'amount', 'PaymentData.Amount'),
      currency(tr, 'currency', 'PaymentData.CurrencyCode'),
      field(tr, 'payment_method', 'PaymentData.PaymentMethod'),
      field(tr, 'transaction_type', 'PaymentData.TransactionType'),
      field(tr, 'authorization_code', 'PaymentData.AuthorizationCode'),
      field(tr, 'card_type', 'PaymentMethod.CardType'),
      field(tr, 'applications', 'Application.Name'),
      field(tr, 'rcode', 'Application.Rcode'),
      field(tr, 'rflag', 'Application.Rflag'),
      field(tr, 'reason_code', 'Application.ReasonCode'),
    ]),
    stagingView(
      APPLICATION_REPLY_TABLE,
      'the ApplicationReply elements of Transaction Detail XML reports, one per application of a request.',
      [
        field(APPLICATION_REPLY_TABLE, 'request_id', 'Request.RequestID'),
        computed(
          'reply_number',
          't."reply_number"::integer',
          'Position of the reply among the request’s ApplicationReplies, from 1.',
          `cybs.${APPLICATION_REPLY_TABLE}.reply_number`,
        ),
        field(APPLICATION_REPLY_TABLE, 'application', 'Application.Name'),
        field(APPLICATION_REPLY_TABLE, 'rcode', 'Application.Rcode'),
        field(APPLICATION_REPLY_TABLE, 'rflag', 'Application.Rflag'),
      ],
    ),
    stagingView(pbd, 'every capture and credit sent to the processor in a batch.', [
      field(pbd, 'request_id', 'Request.RequestID'),
      field(pbd, 'batch_id', 'Batch.BatchID'),
      field(pbd, 'batch_time', 'Batch.BatchDate'),
      field(pbd, 'batch_status', 'Batch.Status'),
      field(pbd, 'merchant_id', 'Request.MerchantID'),
      field(pbd, 'merchant_reference_number', 'Request.MerchantReferenceNumber'),
      field(pbd, 'reconciliation_id', 'Request.TransactionReferenceNumber'),
      field(pbd, 'transaction_time', 'Request.TransactionDate'),
      field(pbd, 'payment_method', 'PaymentData.PaymentMethod'),
      field(pbd, 'amount', 'PaymentData.Amount'),
      currency(pbd, 'currency', 'PaymentData.CurrencyCode'),
      field(pbd, 'applications', 'Application.Name'),
      field(pbd, 'transaction_type', 'PaymentData.TransactionType'),
      computed(
        'is_credit',
        `lower(coalesce(t."application_name", t."transaction_type", '')) like any (array['%credit%', '%refund%'])`,
        'True for a credit (refund): its application (ics_credit, ecp_credit) or, in the legacy file, its transaction_type says so. The amount’s sign does not: REST-era files write refunds positive unless signedAmounts is set.',
        `cybs.${pbd}.application_name, cybs.${pbd}.transaction_type`,
      ),
    ]),
    stagingView(ps, 'every request settled by the processor.', [
      field(ps, 'request_id', 'Request.RequestID'),
      field(ps, 'merchant_id', 'Request.MerchantID'),
      field(ps, 'transaction_time', 'Request.TransactionDate'),
      field(ps, 'amount', 'PaymentData.Amount'),
      currency(ps, 'currency', 'PaymentData.CurrencyCode'),
      field(ps, 'payment_method', 'PaymentData.PaymentMethod'),
      field(ps, 'transaction_type', 'PaymentData.TransactionType'),
      field(ps, 'batch_id', 'Batch.BatchID'),
      field(ps, 'batch_time', 'Batch.BatchDate'),
      field(ps, 'settlement_amount', 'Fee.SettlementAmount'),
      currency(ps, 'settlement_currency', 'Fee.SettlementCurrency'),
      field(ps, 'settlement_time', 'Fee.SettlementTime'),
    ]),
    stagingView(fd, 'every funded event (a purchase, refund, chargeback or adjustment) and its funding.', [
      field(fd, 'request_id', 'Request.RequestID'),
      field(fd, 'merchant_id', 'Request.MerchantID'),
      field(fd, 'merchant_reference_number', 'Request.MerchantReferenceNumber'),
      field(fd, 'amount', 'PaymentData.Amount'),
      currency(fd, 'currency', 'PaymentData.CurrencyCode'),
      field(fd, 'payment_method', 'PaymentData.PaymentMethod'),
      field(fd, 'transaction_type', 'PaymentData.TransactionType'),
      field(fd, 'funding_amount', 'Funding.FundingAmount'),
      currency(fd, 'funding_currency', 'Funding.FundingCurrency'),
      field(fd, 'fee_amount', 'Funding.FeeAmount'),
      currency(fd, 'fee_currency', 'Funding.FeeCurrency'),
      field(fd, 'funding_date', 'Funding.FundingDate'),
      field(
        fd,
        'funding_id',
        'Funding.FundingIdentificationNumber',
        'Identification of the funding (the processor’s payment to the merchant) the event belongs to (Funding.FundingIdentificationNumber).',
      ),
      field(fd, 'funding_status', 'Funding.Status'),
      field(fd, 'exchange_rate', 'Funding.CurrencyExchangeRate'),
      field(fd, 'case_number', 'ChargebackAndRetrieval.CaseNumber'),
      computed(
        'funding_kind',
        // LIKE on lower(), not regular expressions: this runs for every funding line (a regex
        // match cost the ledger's refresh more than the rest of its reading; docs/performance.md).
        `case
    when lower(t."transaction_type") like '%revers%' or lower(t."transaction_type") like '%represent%' then 'chargeback_reversal'
    when lower(t."transaction_type") like '%chargeback%' then 'chargeback'
    when lower(t."transaction_type") like '%adjust%' then 'adjustment'
    when lower(t."transaction_type") like '%refund%' or lower(t."transaction_type") like '%credit%' then 'refund'
    when t."transaction_type" is null and t."funding_amount"::numeric < 0 then 'refund'
    else 'purchase'
  end`,
        'What the funded event is: purchase, refund, chargeback, chargeback_reversal or adjustment, from its transaction type (a line without one is a refund when it funds a negative amount, else a purchase).',
        `cybs.${fd}.transaction_type, cybs.${fd}.funding_amount`,
      ),
    ]),
    stagingView(fee, 'the fees charged per settled request.', [
      field(fee, 'request_id', 'Request.RequestID'),
      field(fee, 'merchant_id', 'Request.MerchantID'),
      field(fee, 'amount', 'PaymentData.Amount'),
      currency(fee, 'currency', 'PaymentData.CurrencyCode'),
      field(fee, 'payment_method', 'PaymentData.PaymentMethod'),
      field(fee, 'total_fee_amount', 'Fee.TotalFeeAmount'),
      currency(fee, 'fee_currency', 'Fee.TotalFeeCurrency'),
      field(fee, 'discount_rate', 'Fee.DiscountRate'),
      field(fee, 'discount_amount', 'Fee.DiscountAmount'),
      field(fee, 'interchange_rate', 'Fee.InterchangeRate'),
      field(fee, 'interchange_amount', 'Fee.InterchangeAmount'),
      field(fee, 'per_item_fee_amount', 'Fee.PerItemFeeAmount'),
      field(fee, 'billing_type', 'Fee.BillingType'),
      field(fee, 'interchange_level', 'Fee.ClearedInterchangeLevel'),
      field(fee, 'settlement_time', 'Fee.SettlementTime'),
    ]),
    stagingView(dd, 'every deposited event and the deposit that paid it.', [
      field(
        dd,
        'deposit_id',
        'Deposit.Identifier',
        'Unique reference number of the deposit into the merchant’s bank account (Deposit.Identifier).',
      ),
      field(dd, 'merchant_id', 'Deposit.MerchantID'),
      field(dd, 'request_id', 'Request.RequestID'),
      field(dd, 'amount', 'Deposit.Amount'),
      currency(dd, 'currency', 'Deposit.Currency'),
      field(dd, 'deposit_time', 'Deposit.Time'),
      field(dd, 'deposit_status', 'Deposit.Status'),
      field(dd, 'method', 'Deposit.Method'),
      field(dd, 'deposit_type', 'Deposit.Type'),
      field(
        dd,
        'funding_id',
        'Funding.FundingIdentificationNumber',
        'The funding this deposit pays (Funding.FundingIdentificationNumber on the deposit line).',
      ),
    ]),
    stagingView(cb, 'every chargeback, retrieval and representment line of a case.', [
      field(cb, 'request_id', 'Request.RequestID'),
      field(cb, 'merchant_id', 'Request.MerchantID'),
      field(cb, 'merchant_reference_number', 'Request.MerchantReferenceNumber'),
      field(cb, 'case_number', 'ChargebackAndRetrieval.CaseNumber'),
      field(cb, 'case_identifier', 'ChargebackAndRetrieval.CaseIdentifier'),
      field(cb, 'case_time', 'ChargebackAndRetrieval.CaseTime'),
      field(cb, 'case_type', 'ChargebackAndRetrieval.CaseType'),
      field(cb, 'amount', 'ChargebackAndRetrieval.ChargebackAmount'),
      currency(cb, 'currency', 'ChargebackAndRetrieval.ChargebackCurrency'),
      field(cb, 'reason_code', 'ChargebackAndRetrieval.ChargebackReasonCode'),
      field(cb, 'reason_description', 'ChargebackAndRetrieval.ChargebackReasonCodeDescription'),
      field(cb, 'chargeback_time', 'ChargebackAndRetrieval.ChargebackTime'),
      field(cb, 'financial_impact', 'ChargebackAndRetrieval.FinancialImpact'),
      computed(
        'financial_impact_type',
        `lower(btrim(t."chargeback_financial_impact_type"::text))`,
        'debit, credit or none (lower case) (ChargebackAndRetrieval.FinancialImpactType).',
        `cybs.${cb}.chargeback_financial_impact_type`,
      ),
      field(cb, 'fee_amount', 'ChargebackAndRetrieval.FeeAmount'),
      currency(cb, 'fee_currency', 'ChargebackAndRetrieval.FeeCurrency'),
      field(cb, 'adjustment_amount', 'ChargebackAndRetrieval.AdjustmentAmount'),
      currency(cb, 'adjustment_currency', 'ChargebackAndRetrieval.AdjustmentCurrency'),
      field(cb, 'respond_by_date', 'ChargebackAndRetrieval.RespondByDate'),
      field(cb, 'resolution_time', 'ChargebackAndRetrieval.ResolutionTime'),
      field(
        cb,
        'resolved_to',
        'ChargebackAndRetrieval.ResolvedToIndicato',
        'Resolved-to status: B Bank, M Merchant, S Split, G General ledger (ChargebackAndRetrieval.ResolvedToIndicato).',
      ),
    ]),
    stagingView(
      'purchase_refund_authorizations',
      'the authorizations of captures, from Purchase and Refund Detail.',
      [
        item('purchase-refund-details', 'purchase_refund_authorizations', 'request_id', 'requestId'),
        item(
          'purchase-refund-details',
          'purchase_refund_authorizations',
          'authorization_request_id',
          'authorizationRequestId',
        ),
        item('purchase-refund-details', 'purchase_refund_authorizations', 'authorization_time', 'time'),
        item('purchase-refund-details', 'purchase_refund_authorizations', 'amount', 'amount'),
        {
          ...item('purchase-refund-details', 'purchase_refund_authorizations', 'currency', 'currencyCode'),
          expr: 'upper(btrim(t."currency_code"))',
        },
        item('purchase-refund-details', 'purchase_refund_authorizations', 'authorization_code', 'code'),
        item('purchase-refund-details', 'purchase_refund_authorizations', 'rcode', 'rcode'),
        ...windowColumns('purchase_refund_authorizations'),
      ],
    ),
    stagingView('net_funding_totals', 'the Net Funding totals of each window, one per total and currency.', [
      item('net-fundings', 'net_funding_totals', 'total_type', 'totalType'),
      {
        ...item('net-fundings', 'net_funding_totals', 'currency', 'currency'),
        expr: 'upper(btrim(t."currency"))',
      },
      item('net-fundings', 'net_funding_totals', 'value', 'value'),
      ...windowColumns('net_funding_totals'),
    ]),
    stagingView(
      'payment_batch_summaries',
      'the Payment Batch Summary of each window: sales and credits per currency and payment type.',
      [
        {
          ...item('payment-batch-summaries', 'payment_batch_summaries', 'currency', 'currencyCode'),
          expr: 'upper(btrim(t."currency_code"))',
        },
        item(
          'payment-batch-summaries',
          'payment_batch_summaries',
          'payment_type',
          'paymentSubTypeDescription',
        ),
        item('payment-batch-summaries', 'payment_batch_summaries', 'period_start', 'startTime'),
        item('payment-batch-summaries', 'payment_batch_summaries', 'period_end', 'endTime'),
        item('payment-batch-summaries', 'payment_batch_summaries', 'sales_count', 'salesCount'),
        item('payment-batch-summaries', 'payment_batch_summaries', 'sales_amount', 'salesAmount'),
        item('payment-batch-summaries', 'payment_batch_summaries', 'credit_count', 'creditCount'),
        item('payment-batch-summaries', 'payment_batch_summaries', 'credit_amount', 'creditAmount'),
        item('payment-batch-summaries', 'payment_batch_summaries', 'merchant_id', 'merchantId'),
        ...windowColumns('payment_batch_summaries'),
      ],
    ),
  ];
  // Every report field the models read is staged (the list in sources.ts is the contract).
  for (const s of REPORT_SOURCES) {
    const view = views.find((v) => v.name === `stg_${s.table}`)!;
    for (const id of reportFields(s.table)) {
      const col = findField(id)!.column;
      if (!view.columns.some((c) => c.lineage.split(', ').includes(`cybs.${s.table}.${col}`)))
        throw new Error(`staging: stg_${s.table} does not stage ${id}`);
    }
  }
  return views;
}
