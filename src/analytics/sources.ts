/**
 * What the cybs_analytics models read, as data: the report definitions and their catalog fields, and
 * the on-demand sections. One list serves three purposes:
 *  - `migrate` makes sure each table exists with these columns (typed from the catalog), so that
 *    the views can be created before the first load and never name a missing column;
 *  - `analytics: { enabled: true }` enables these pipelines and declares the report subscriptions
 *    with these fields (src/config/analytics.ts);
 *  - the staging views select them under clean names (staging.ts).
 *
 * Payment Batch Detail is read from the predefined Classic report (fixed columns, no subscription
 * to declare). The other report definitions' fields are the ones their rows need to join: the
 * request id everywhere, the funding id on deposits, the case number on chargeback fundings, the
 * request a capture or refund follows (PredecessorRequestID, a field of the real Transaction Detail
 * files).
 */
import type { OnDemandEndpoint, ReportDefinitionName } from '../catalog/index.js';

export interface ReportSource {
  kind: 'report';
  reportDefinitionName: ReportDefinitionName;
  /** Warehouse table (the definition's). */
  table: string;
  /** Catalog fields the models read. */
  fields: readonly string[];
  /** Declared as a subscription by `analytics.enabled` (false: a predefined Classic report). */
  subscribe: boolean;
}

export interface OnDemandSource {
  kind: 'on-demand';
  endpoint: OnDemandEndpoint;
  /** Pipeline that loads the endpoint. */
  pipeline: string;
  /** Tables (sections) the models read. */
  tables: readonly string[];
}

const REQUEST = ['Request.RequestID', 'Request.MerchantID'];
const PAYMENT = ['PaymentData.Amount', 'PaymentData.CurrencyCode', 'PaymentData.PaymentMethod'];

export const REPORT_SOURCES: readonly ReportSource[] = [
  {
    kind: 'report',
    reportDefinitionName: 'TransactionRequestClass',
    table: 'transaction_request',
    subscribe: true,
    fields: [
      ...REQUEST,
      'Request.TransactionDate',
      'Request.MerchantReferenceNumber',
      'Request.TransactionReferenceNumber',
      'Request.PredecessorRequestID',
      ...PAYMENT,
      'PaymentData.TransactionType',
      'PaymentData.AuthorizationCode',
      'PaymentMethod.CardType',
      'Application.Name',
      'Application.Rcode',
      'Application.Rflag',
      'Application.ReasonCode',
    ],
  },
  {
    kind: 'report',
    reportDefinitionName: 'PaymentBatchDetailClass',
    table: 'payment_batch_detail',
    subscribe: false,
    // The Classic file's columns (sul-dlss), and the legacy file's transaction_type.
    fields: [
      'Batch.BatchID',
      ...REQUEST,
      'Batch.BatchDate',
      'Request.MerchantReferenceNumber',
      'Request.TransactionReferenceNumber',
      ...PAYMENT,
      'Application.Name',
      'Batch.Status',
      'Request.TransactionDate',
      'PaymentData.TransactionType',
    ],
  },
  {
    kind: 'report',
    reportDefinitionName: 'ProcessorSettlementDetailClass',
    table: 'processor_settlement_detail',
    subscribe: true,
    fields: [
      ...REQUEST,
      'Request.TransactionDate',
      ...PAYMENT,
      'PaymentData.TransactionType',
      'Batch.BatchID',
      'Batch.BatchDate',
      'Fee.SettlementAmount',
      'Fee.SettlementCurrency',
      'Fee.SettlementTime',
    ],
  },
  {
    kind: 'report',
    reportDefinitionName: 'FundingDetailClass',
    table: 'funding_detail',
    subscribe: true,
    fields: [
      ...REQUEST,
      'Request.MerchantReferenceNumber',
      ...PAYMENT,
      'PaymentData.TransactionType',
      'Funding.FundingAmount',
      'Funding.FundingCurrency',
      'Funding.FeeAmount',
      'Funding.FeeCurrency',
      'Funding.FundingDate',
      'Funding.FundingIdentificationNumber',
      'Funding.Status',
      'Funding.CurrencyExchangeRate',
      'ChargebackAndRetrieval.CaseNumber',
    ],
  },
  {
    kind: 'report',
    reportDefinitionName: 'FeeDetailClass',
    table: 'fee_detail',
    subscribe: true,
    fields: [
      ...REQUEST,
      ...PAYMENT,
      'Fee.TotalFeeAmount',
      'Fee.TotalFeeCurrency',
      'Fee.DiscountRate',
      'Fee.DiscountAmount',
      'Fee.InterchangeRate',
      'Fee.InterchangeAmount',
      'Fee.PerItemFeeAmount',
      'Fee.BillingType',
      'Fee.ClearedInterchangeLevel',
      'Fee.SettlementTime',
    ],
  },
  {
    kind: 'report',
    reportDefinitionName: 'DepositDetailClass',
    table: 'deposit_detail',
    subscribe: true,
    fields: [
      'Deposit.Identifier',
      'Deposit.MerchantID',
      'Request.RequestID',
      'Deposit.Amount',
      'Deposit.Currency',
      'Deposit.Time',
      'Deposit.Status',
      'Deposit.Method',
      'Deposit.Type',
      'Funding.FundingIdentificationNumber',
    ],
  },
  {
    kind: 'report',
    reportDefinitionName: 'ChargebackAndRetrievalDetailClass',
    table: 'chargeback_and_retrieval_detail',
    subscribe: true,
    fields: [
      ...REQUEST,
      'Request.MerchantReferenceNumber',
      'ChargebackAndRetrieval.CaseNumber',
      'ChargebackAndRetrieval.CaseIdentifier',
      'ChargebackAndRetrieval.CaseTime',
      'ChargebackAndRetrieval.CaseType',
      'ChargebackAndRetrieval.ChargebackAmount',
      'ChargebackAndRetrieval.ChargebackCurrency',
      'ChargebackAndRetrieval.ChargebackReasonCode',
      'ChargebackAndRetrieval.ChargebackReasonCodeDescription',
      'ChargebackAndRetrieval.ChargebackTime',
      'ChargebackAndRetrieval.FinancialImpact',
      'ChargebackAndRetrieval.FinancialImpactType',
      'ChargebackAndRetrieval.FeeAmount',
      'ChargebackAndRetrieval.FeeCurrency',
      'ChargebackAndRetrieval.AdjustmentAmount',
      'ChargebackAndRetrieval.AdjustmentCurrency',
      'ChargebackAndRetrieval.RespondByDate',
      'ChargebackAndRetrieval.ResolutionTime',
      'ChargebackAndRetrieval.ResolvedToIndicato',
    ],
  },
];

export const ON_DEMAND_SOURCES: readonly OnDemandSource[] = [
  {
    kind: 'on-demand',
    endpoint: 'purchase-refund-details',
    pipeline: 'purchase_refund_details',
    tables: ['purchase_refund_authorizations'],
  },
  {
    kind: 'on-demand',
    endpoint: 'net-fundings',
    pipeline: 'net_fundings',
    tables: ['net_funding_totals'],
  },
  {
    kind: 'on-demand',
    endpoint: 'payment-batch-summaries',
    pipeline: 'payment_batch_summaries',
    tables: ['payment_batch_summaries'],
  },
];

/** The child table of Transaction Request whose ApplicationReply rows give an XML report's applications. */
export const APPLICATION_REPLY_TABLE = 'transaction_request_application_reply';

/** Every cybs table the models read. */
export function sourceTables(): string[] {
  return [
    ...REPORT_SOURCES.map((s) => s.table),
    APPLICATION_REPLY_TABLE,
    ...ON_DEMAND_SOURCES.flatMap((s) => s.tables),
  ];
}

/** The pipelines `analytics.enabled` turns on: the tables' pipelines (a report pipeline is named as its table). */
export function analyticsPipelines(): string[] {
  return [...REPORT_SOURCES.map((s) => s.table), ...ON_DEMAND_SOURCES.map((s) => s.pipeline)];
}
