/**
 * The 19 report definitions of the spec, with their numeric ids and warehouse tables.
 *
 * Ids come from the report definition id table of facts §2.1 (NODE-SDK model description). Two
 * definitions are not in that table under their spec name:
 *  - `RiskDecisionEventDetailClass`: the spec says the product word of the original identifier is
 *    written as "Risk"; the table's `DecisionManagerEventDetailClass` (400) is that original, so the
 *    id is 400 (`idSource: 'derived'`).
 *  - `RecurringBillingDetailClass`: no id anywhere in the sources → `null`.
 * The table name is the snake_case title without "Report" (and the class name without "Class"
 * where the title is longer, e.g. `exception_detail`, `payer_auth_detail`).
 */
export const REPORT_DEFINITION_NAMES = [
  'TransactionRequestClass',
  'PaymentBatchDetailClass',
  'ExceptionDetailClass',
  'ProcessorSettlementDetailClass',
  'ProcessorEventsDetailClass',
  'FundingDetailClass',
  'AgingDetailClass',
  'ChargebackAndRetrievalDetailClass',
  'DepositDetailClass',
  'FeeDetailClass',
  'InvoiceSummaryClass',
  'PayerAuthDetailClass',
  'ConversionDetailClass',
  'SubscriptionDetailClass',
  'JPTransactionDetailClass',
  'ServiceFeeDetailClass',
  'GatewayTransactionRequestClass',
  'RiskDecisionEventDetailClass',
  'RecurringBillingDetailClass',
] as const;
export type ReportDefinitionName = (typeof REPORT_DEFINITION_NAMES)[number];

export interface ReportDefinition {
  readonly name: ReportDefinitionName;
  /** The spec's report title. */
  readonly title: string;
  /** Numeric `reportDefinitionId`, or null when no source gives one. */
  readonly id: number | null;
  /** `table` = facts §2.1 id table; `derived` = see the module comment; `none` = no id known. */
  readonly idSource: 'table' | 'derived' | 'none';
  /** Warehouse table in schema `cybs`. */
  readonly table: string;
  /** Element that holds one record in the XML form of the report. */
  readonly xmlRecordElement: string;
  readonly note?: string;
}

function def(
  name: ReportDefinitionName,
  title: string,
  id: number | null,
  table: string,
  extra: Partial<Pick<ReportDefinition, 'idSource' | 'note' | 'xmlRecordElement'>> = {},
): ReportDefinition {
  return Object.freeze({
    name,
    title,
    id,
    idSource: extra.idSource ?? (id === null ? 'none' : 'table'),
    table,
    xmlRecordElement: extra.xmlRecordElement ?? 'Request',
    ...(extra.note === undefined ? {} : { note: extra.note }),
  });
}

export const REPORT_DEFINITIONS: readonly ReportDefinition[] = Object.freeze([
  def('TransactionRequestClass', 'Transaction Request Report', 210, 'transaction_request'),
  def('PaymentBatchDetailClass', 'Payment Batch Detail Report', 211, 'payment_batch_detail'),
  def('ExceptionDetailClass', 'Transaction Exception Detail Report', 212, 'exception_detail'),
  def(
    'ProcessorSettlementDetailClass',
    'Processor Settlement Detail Report',
    213,
    'processor_settlement_detail',
  ),
  def('ProcessorEventsDetailClass', 'Processor Events Detail Report', 214, 'processor_events_detail'),
  def('FundingDetailClass', 'Funding Detail Report', 215, 'funding_detail'),
  def('AgingDetailClass', 'Aging Detail Report', 216, 'aging_detail'),
  def(
    'ChargebackAndRetrievalDetailClass',
    'Chargeback And Retrieval Detail Report',
    217,
    'chargeback_and_retrieval_detail',
  ),
  def('DepositDetailClass', 'Deposit Detail Report', 218, 'deposit_detail'),
  def('FeeDetailClass', 'Fee Detail Report', 219, 'fee_detail'),
  def('InvoiceSummaryClass', 'Invoice Summary Report', 220, 'invoice_summary'),
  def('PayerAuthDetailClass', 'Payer Authentication Detail Report', 221, 'payer_auth_detail'),
  def('ConversionDetailClass', 'Conversion Detail Report', 222, 'conversion_detail'),
  def('SubscriptionDetailClass', 'Subscription Detail Report', 620, 'subscription_detail'),
  def('JPTransactionDetailClass', 'JP Transaction Detail Report', 270, 'jp_transaction_detail'),
  def('ServiceFeeDetailClass', 'Service Fee Detail Report', 271, 'service_fee_detail'),
  def(
    'GatewayTransactionRequestClass',
    'Gateway Transaction Request Report',
    310,
    'gateway_transaction_request',
  ),
  def(
    'RiskDecisionEventDetailClass',
    'Risk decision Event Detail Report',
    400,
    'risk_decision_event_detail',
    {
      idSource: 'derived',
      note: 'Spec name of DecisionManagerEventDetailClass (id 400 in the facts §2.1 table); the spec writes the product word as "Risk".',
    },
  ),
  def('RecurringBillingDetailClass', 'Recurring Billing Details Report', null, 'recurring_billing_detail', {
    note: 'Not in the facts §2.1 id table; no id is known.',
  }),
]);

const BY_NAME = new Map<string, ReportDefinition>(REPORT_DEFINITIONS.map((d) => [d.name, d]));

export function isReportDefinitionName(name: string): name is ReportDefinitionName {
  return BY_NAME.has(name);
}

/** A report definition by its `reportDefinitionName`, or undefined. */
export function findReportDefinition(name: string): ReportDefinition | undefined {
  return BY_NAME.get(name);
}

/** A report definition by its numeric or string `reportDefinitionId` ("210" in search results). */
export function findReportDefinitionById(id: number | string): ReportDefinition | undefined {
  const n = typeof id === 'number' ? id : Number(id);
  return REPORT_DEFINITIONS.find((d) => d.id !== null && d.id === n);
}

/**
 * The report definition a file's metadata names: the classic report type (`PaymentBatchDetail`), a
 * subscription name (`PaymentBatchDetailReport_Daily_Classic`) or a title (`Payment Batch Detail Report`).
 */
export function guessReportDefinition(...names: (string | undefined)[]): ReportDefinition | undefined {
  const squash = (s: string): string => s.toLowerCase().replace(/[^a-z0-9]/g, '');
  for (const raw of names) {
    if (raw === undefined || raw === '') continue;
    const key = squash(raw);
    for (const d of REPORT_DEFINITIONS) {
      const base = squash(d.name.replace(/Class$/, ''));
      const title = squash(d.title);
      if (
        key === squash(d.name) ||
        key === base ||
        key === title ||
        key.startsWith(title) ||
        key === `${base}report`
      )
        return d;
    }
  }
  return undefined;
}
