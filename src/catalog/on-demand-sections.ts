/**
 * The on-demand JSON endpoints' sections as data (facts §2.9–§2.13): for each section the JSON key
 * of its array, the warehouse table and each item key's column, type and description.
 * Column names are `snakeCase(jsonKey)`. Descriptions are the SDK's model documentation
 * (cybersource-rest-client `src/model/ReportingV3*.js`), or the spec's words for the endpoint; the
 * keys neither describes (Net Funding's counts and amounts by type, Payment Batch Summary's account
 * and merchant names) stay undescribed and are listed as undocumented in the data dictionary.
 */
import { snakeCase } from './naming.js';
import type { PgType } from './types.js';

export const ON_DEMAND_ENDPOINTS = [
  'purchase-refund-details',
  'net-fundings',
  'conversion-details',
  'notification-of-changes',
  'payment-batch-summaries',
] as const;
export type OnDemandEndpoint = (typeof ON_DEMAND_ENDPOINTS)[number];

export interface OnDemandField {
  readonly kind: 'on-demand';
  /** JSON key in the item; for parent/synthetic fields see `source`. */
  readonly key: string;
  readonly column: string;
  readonly pgType: PgType;
  readonly description: string | undefined;
  /** `item` = the item's own key; `parent` = the key of the enclosing item; `index` = 1-based position. */
  readonly source: 'item' | 'parent' | 'index';
}

/**
 * `items`: the body key holds an array of objects, one row each.
 * `nested`: each item of `parentKey`'s array holds an array under `key`, one row per nested item.
 * `totals`: several body keys (`totalKeys`) each hold an array of {currency, value}; one row per entry
 *  with `total_type` = the body key.
 */
export interface OnDemandSection {
  readonly endpoint: OnDemandEndpoint;
  /** Section name (the JSON key, or a synthetic name for totals/nested). */
  readonly name: string;
  readonly kind: 'items' | 'nested' | 'totals';
  /** Body key of the array (items), the nested array key inside each parent item (nested). */
  readonly key: string;
  readonly parentKey?: string;
  readonly totalKeys?: readonly string[];
  readonly table: string;
  readonly description: string;
  readonly fields: readonly OnDemandField[];
}

type FieldTuple = readonly [key: string, pgType: PgType, description?: string];

function fields(list: readonly FieldTuple[], source: OnDemandField['source'] = 'item'): OnDemandField[] {
  return list.map(([key, pgType, description]) =>
    Object.freeze({ kind: 'on-demand' as const, key, column: snakeCase(key), pgType, description, source }),
  );
}

const REQUEST_ID: FieldTuple = ['requestId', 'text', 'Request id (22–26 digits), joins the sections'];

export const ON_DEMAND_SECTIONS: readonly OnDemandSection[] = Object.freeze([
  {
    endpoint: 'purchase-refund-details',
    name: 'requestDetails',
    kind: 'items',
    key: 'requestDetails',
    table: 'purchase_refund_request_details',
    description: 'Purchase and refund request details',
    fields: fields([
      REQUEST_ID,
      ['cybersourceMerchantId', 'text', 'CyberSource merchant id'],
      ['processorMerchantId', 'text', 'CyberSource processor merchant id'],
      ['groupName', 'text', 'merchant group name (merchant group management)'],
      ['transactionReferenceNumber', 'text', 'transaction reference number'],
      ['merchantReferenceNumber', 'text', 'merchant reference number'],
    ]),
  },
  {
    endpoint: 'purchase-refund-details',
    name: 'settlements',
    kind: 'items',
    key: 'settlements',
    table: 'purchase_refund_settlements',
    description: 'Settlements of the purchase and refund requests',
    fields: fields([
      REQUEST_ID,
      ['transactionType', 'text', 'transaction type, e.g. Purchases'],
      ['submissionTime', 'timestamptz', 'submission date'],
      ['amount', 'numeric', 'amount'],
      ['currencyCode', 'text', 'ISO 4217 alpha-3 currency code'],
      ['paymentMethod', 'text', 'payment method'],
      ['walletType', 'text', 'solution type (wallet)'],
      ['paymentType', 'text', 'payment type'],
      ['accountSuffix', 'text', 'account suffix (last digits of the account number)'],
      ['cybersourceBatchTime', 'timestamptz', 'CyberSource batch time'],
      ['cybersourceBatchId', 'text', 'CyberSource batch id'],
      ['cardType', 'text', 'card type'],
      ['debitNetwork', 'text', 'debit network'],
    ]),
  },
  {
    endpoint: 'purchase-refund-details',
    name: 'authorizations',
    kind: 'items',
    key: 'authorizations',
    table: 'purchase_refund_authorizations',
    description: 'Authorizations of the purchase and refund requests',
    fields: fields([
      REQUEST_ID,
      ['transactionReferenceNumber', 'text', 'authorization transaction reference number'],
      ['time', 'timestamptz', 'authorization date'],
      ['authorizationRequestId', 'text', 'authorization request id'],
      ['amount', 'numeric', 'authorization amount'],
      ['currencyCode', 'text', 'ISO 4217 alpha-3 currency code'],
      ['code', 'text', 'authorization code'],
      ['rcode', 'text', 'authorization reply code (rcode)'],
    ]),
  },
  {
    endpoint: 'purchase-refund-details',
    name: 'feeAndFundingDetails',
    kind: 'items',
    key: 'feeAndFundingDetails',
    table: 'purchase_refund_fee_funding',
    description: 'Fee and funding details (some processors only)',
    fields: fields([
      REQUEST_ID,
      ['interchangePerItemFee', 'numeric', 'interchange per-item fee'],
      ['interchangeDescription', 'text', 'interchange description'],
      ['interchangePercentage', 'numeric', 'interchange percentage'],
      ['interchangePercentageAmount', 'numeric', 'interchange percentage amount'],
      ['discountPercentage', 'numeric', 'discount percentage'],
      ['discountAmount', 'numeric', 'discount amount'],
      ['discountPerItemFee', 'numeric', 'discount per-item fee'],
      ['totalFee', 'numeric', 'total fee'],
      ['feeCurrency', 'text', 'fee currency'],
      ['duesAssessments', 'numeric', 'dues and assessments'],
      ['fundingAmount', 'numeric', 'funding amount'],
      ['fundingCurrency', 'text', 'funding currency (ISO 4217)'],
    ]),
  },
  {
    endpoint: 'purchase-refund-details',
    name: 'others',
    kind: 'items',
    key: 'others',
    table: 'purchase_refund_others',
    description: 'Merchant-defined data and names of the requests',
    fields: fields([
      REQUEST_ID,
      ['merchantData1', 'text', 'merchant-defined data 1'],
      ['merchantData2', 'text', 'merchant-defined data 2'],
      ['merchantData3', 'text', 'merchant-defined data 3'],
      ['merchantData4', 'text', 'merchant-defined data 4'],
      ['firstName', 'text', 'first name'],
      ['lastName', 'text', 'last name'],
    ]),
  },
  {
    endpoint: 'purchase-refund-details',
    name: 'settlementStatuses',
    kind: 'items',
    key: 'settlementStatuses',
    table: 'purchase_refund_settlement_statuses',
    description: 'Settlement statuses of the requests',
    fields: fields([
      REQUEST_ID,
      ['status', 'text', 'settlement status'],
      ['settlementTime', 'timestamptz', 'settlement date'],
      ['reasonCode', 'text', 'reason code'],
      ['errorText', 'text', 'error text'],
    ]),
  },
  {
    endpoint: 'net-fundings',
    name: 'netFundingSummaries',
    kind: 'items',
    key: 'netFundingSummaries',
    table: 'net_funding_summaries',
    description: 'Net funding per type, payment subtype and currency',
    fields: fields([
      ['type', 'text', 'PURCHASES, REFUNDS, FEES or CHARGEBACKS'],
      ['paymentSubType', 'text', 'payment subtype (VI, MC, AX, DI, ...)'],
      ['conveyedCount', 'integer'],
      ['conveyedAmount', 'numeric'],
      ['settledCount', 'integer'],
      ['fundedCount', 'integer'],
      ['fundedAmount', 'numeric'],
      ['currencyCode', 'text', 'ISO 4217 alpha-3 currency code'],
    ]),
  },
  {
    endpoint: 'net-fundings',
    name: 'totals',
    kind: 'totals',
    key: 'totals',
    totalKeys: ['totalPurchases', 'totalRefunds', 'totalFees', 'totalChargebacks', 'netTotal'],
    table: 'net_funding_totals',
    description: 'Net funding totals per currency: one row per (total type, currency)',
    fields: [
      Object.freeze({
        kind: 'on-demand' as const,
        key: 'totalType',
        column: 'total_type',
        pgType: 'text' as const,
        description: 'totalPurchases, totalRefunds, totalFees, totalChargebacks or netTotal',
        source: 'parent' as const,
      }),
      ...fields([
        ['currency', 'text', 'ISO 4217 alpha-3 currency code'],
        ['value', 'numeric', 'the total in that currency'],
      ]),
    ],
  },
  {
    endpoint: 'conversion-details',
    name: 'conversionDetails',
    kind: 'items',
    key: 'conversionDetails',
    table: 'conversion_details',
    description: 'Decision Manager conversions (review outcomes)',
    fields: fields([
      ['merchantReferenceNumber', 'text', 'merchant reference number of the order'],
      ['conversionTime', 'timestamptz', 'date of the conversion'],
      REQUEST_ID,
      ['originalDecision', 'text', "order profile's evaluation result"],
      ['newDecision', 'text', "reviewer's evaluation result"],
      ['reviewer', 'text', 'user name of the reviewer'],
      ['reviewerComments', 'text', 'comments of the reviewer'],
      ['queue', 'text', 'name of the queue'],
      ['profile', 'text', 'name of the profile'],
    ]),
  },
  {
    endpoint: 'conversion-details',
    name: 'conversionDetailNotes',
    kind: 'nested',
    key: 'notes',
    parentKey: 'conversionDetails',
    table: 'conversion_detail_notes',
    description: 'Notes of each conversion, joined to it by request_id',
    fields: [
      ...fields([['requestId', 'text', 'requestId of the conversion the note belongs to']], 'parent'),
      Object.freeze({
        kind: 'on-demand' as const,
        key: 'noteNumber',
        column: 'note_number',
        pgType: 'integer' as const,
        description: '1-based position of the note in its conversion',
        source: 'index' as const,
      }),
      ...fields([
        ['time', 'timestamptz', 'time the reviewer added the note'],
        ['addedBy', 'text', 'reviewer who added the note'],
        ['comments', 'text', 'comments given by the reviewer'],
      ]),
    ],
  },
  {
    endpoint: 'notification-of-changes',
    name: 'notificationOfChanges',
    kind: 'items',
    key: 'notificationOfChanges',
    table: 'notification_of_changes',
    description: 'eCheck account values updated by a settlement response',
    fields: fields([
      ['merchantReferenceNumber', 'text', 'merchant reference number'],
      ['transactionReferenceNumber', 'text', 'transaction reference number'],
      ['time', 'timestamptz', 'notification of change date (ISO 8601)'],
      ['code', 'text', 'notification of change code'],
      ['accountType', 'text', 'account type'],
      ['routingNumber', 'text', 'routing number'],
      ['accountNumber', 'text', 'account number (masked)'],
      ['consumerName', 'text', 'consumer name'],
    ]),
  },
  {
    endpoint: 'payment-batch-summaries',
    name: 'paymentBatchSummaries',
    kind: 'items',
    key: 'paymentBatchSummaries',
    table: 'payment_batch_summaries',
    description: 'Total sales and refunds by currency and payment method',
    fields: fields([
      ['currencyCode', 'text', 'ISO 4217 alpha-3 currency code'],
      ['paymentSubTypeDescription', 'text', 'payment type (card brand, eCheck)'],
      ['startTime', 'timestamptz', 'start of the period the row sums'],
      ['endTime', 'timestamptz', 'end of the period the row sums'],
      ['salesCount', 'integer', 'number of sales'],
      ['salesAmount', 'numeric', 'total of the sales'],
      ['creditCount', 'integer', 'number of credits (refunds)'],
      ['creditAmount', 'numeric', 'total of the credits (refunds)'],
      ['accountName', 'text'],
      ['accountId', 'text'],
      ['merchantId', 'text'],
      ['merchantName', 'text'],
    ]),
  },
] satisfies OnDemandSection[]);

/** The sections of one endpoint, in response order. */
export function sectionsOf(endpoint: OnDemandEndpoint): OnDemandSection[] {
  return ON_DEMAND_SECTIONS.filter((s) => s.endpoint === endpoint);
}

/** Top-level scalar keys of each endpoint's body that describe the response (not rows). */
export const ON_DEMAND_METADATA_KEYS: Readonly<Record<OnDemandEndpoint, readonly string[]>> = {
  'purchase-refund-details': ['offset', 'limit', 'pageResults'],
  'net-fundings': ['startTime', 'endTime'],
  'conversion-details': ['organizationId', 'startTime', 'endTime'],
  'notification-of-changes': [],
  'payment-batch-summaries': ['startTime', 'endTime'],
};
