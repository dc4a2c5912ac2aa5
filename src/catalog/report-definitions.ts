/**
 * The report definitions: every one of the SDK's id table, plus one the seed names that the table
 * does not list, with their numeric ids and warehouse tables.
 *
 * Ids and names come from the only id table the SDK has (`cybersource-rest-client`
 * `src/model/ReportingV3ReportDefinitionsGet200ResponseReportDefinitions.js`, the
 * `reportDefinitionId` description). Two names of the seed are not that table's:
 *  - `RiskDecisionEventDetailClass`: the seed's editorial rename of `DecisionManagerEventDetailClass`
 *    (400). The real name is the one sent to the service; the seed's is accepted as an alias in
 *    config and on the command line (`REPORT_DEFINITION_ALIASES`) and normalised first.
 *  - `RecurringBillingDetailClass`: only the seed names it, with no id. It is kept, marked
 *    `verified: false` (`cybs-etl pipelines` and the docs say so); the service may refuse it.
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
  'DecisionManagerEventDetailClass',
  'RecurringBillingDetailClass',
  'BillableTransactionsDetailClass',
  'DecisionManagerDetailClass',
  'FeeSummaryClass',
  'TaxCalculationClass',
  'POSTerminalExceptionClass',
  'StandardBillingDataPackageClass',
  'StandardMonthlyFeeClass',
] as const;
export type ReportDefinitionName = (typeof REPORT_DEFINITION_NAMES)[number];

/** Names written elsewhere (the seed) for a real definition: accepted, normalised, warned about. */
export const REPORT_DEFINITION_ALIASES: Readonly<Record<string, ReportDefinitionName>> = {
  RiskDecisionEventDetailClass: 'DecisionManagerEventDetailClass',
};

/** Pipeline (and table) names a release used for a definition now named after its real name. */
export const PIPELINE_NAME_ALIASES: Readonly<Record<string, string>> = {
  risk_decision_event_detail: 'decision_manager_event_detail',
};

export interface ReportDefinition {
  readonly name: ReportDefinitionName;
  /** The report's title. */
  readonly title: string;
  /** Numeric `reportDefinitionId`, or null when no source gives one. */
  readonly id: number | null;
  /** `table` = the SDK's id table; `none` = no id known. */
  readonly idSource: 'table' | 'none';
  /** False when no CyberSource source confirms the definition exists (the seed only). */
  readonly verified: boolean;
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
  extra: Partial<Pick<ReportDefinition, 'note' | 'xmlRecordElement' | 'verified'>> = {},
): ReportDefinition {
  return Object.freeze({
    name,
    title,
    id,
    idSource: id === null ? ('none' as const) : ('table' as const),
    verified: extra.verified ?? id !== null,
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
    'DecisionManagerEventDetailClass',
    'Decision Manager Event Detail Report',
    400,
    'decision_manager_event_detail',
    { note: 'The seed calls it RiskDecisionEventDetailClass; that name is accepted as an alias.' },
  ),
  def('RecurringBillingDetailClass', 'Recurring Billing Details Report', null, 'recurring_billing_detail', {
    note: 'Unverified: named only by the seed, not in the SDK id table; the service may refuse it.',
  }),
  def(
    'BillableTransactionsDetailClass',
    'Billable Transactions Detail Report',
    225,
    'billable_transactions_detail',
  ),
  def('DecisionManagerDetailClass', 'Decision Manager Detail Report', 401, 'decision_manager_detail'),
  def('FeeSummaryClass', 'Fee Summary Report', 410, 'fee_summary'),
  def('TaxCalculationClass', 'Tax Calculation Report', 420, 'tax_calculation'),
  def('POSTerminalExceptionClass', 'POS Terminal Exception Report', 520, 'pos_terminal_exception'),
  def(
    'StandardBillingDataPackageClass',
    'Standard Billing Data Package Report',
    630,
    'standard_billing_data_package',
  ),
  def('StandardMonthlyFeeClass', 'Standard Monthly Fee Report', 706, 'standard_monthly_fee'),
]);

const BY_NAME = new Map<string, ReportDefinition>(REPORT_DEFINITIONS.map((d) => [d.name, d]));

/** Subscription report names a merchant's usual daily reports have when not the rule's. */
const DEFAULT_REPORT_NAMES: Readonly<Record<string, string>> = {
  PaymentBatchDetailClass: 'PaymentBatchDetailReport_Daily_Classic',
};

/**
 * The subscription report name a definition's pipeline looks for unless config.yaml names another:
 * `<definition without Class>Report_Daily`, or the predefined Classic report's name.
 */
export function defaultReportName(definitionName: string): string {
  return DEFAULT_REPORT_NAMES[definitionName] ?? `${definitionName.replace(/Class$/, '')}Report_Daily`;
}

export function isReportDefinitionName(name: string): name is ReportDefinitionName {
  return BY_NAME.has(name);
}

/** The real name of a definition written under an alias (the seed's); other names unchanged. */
export function normalizeReportDefinitionName(name: string): string {
  return REPORT_DEFINITION_ALIASES[name] ?? name;
}

/** A report definition by its `reportDefinitionName` or an alias of it, or undefined. */
export function findReportDefinition(name: string): ReportDefinition | undefined {
  return BY_NAME.get(normalizeReportDefinitionName(name));
}

/** A report definition by its numeric or string `reportDefinitionId` ("210" in search results). */
export function findReportDefinitionById(id: number | string): ReportDefinition | undefined {
  const n = typeof id === 'number' ? id : Number(id);
  return REPORT_DEFINITIONS.find((d) => d.id !== null && d.id === n);
}

/**
 * Report names seen in real files that name no definition by themselves, mapped to the definition
 * whose table holds their rows (keys compared squashed: case and punctuation do not matter).
 */
const KNOWN_REPORT_NAMES: Readonly<Record<string, ReportDefinitionName>> = {
  // The Classic predefined subscriptions (PredefinedSubscriptionRequestBean), by their report names.
  // Payment Batch Detail: the Classic file (sul-dlss) carries its own PaymentBatchDetail rows.
  PaymentBatchDetailReport_Daily_Classic: 'PaymentBatchDetailClass',
  // Transaction Exception Detail: the exceptions of requests, as ExceptionDetailClass reports them.
  TransactionExceptionDetailReport_Daily_Classic: 'ExceptionDetailClass',
  // Payment Submission Detail: one line per payment request submitted in a batch, with the
  // Payment Batch Detail columns (batch_date, merchant_ref_number, amount, ics_applications,
  // payment_type, request_id — edX's reader of this report); no definition of its own exists.
  PaymentSubmissionDetailReport_Daily_Classic: 'PaymentBatchDetailClass',
  // Transaction Detail: one Request per transaction (the tdr XML family), as TransactionRequestClass.
  TransactionDetailReport_Daily_Classic: 'TransactionRequestClass',
  // Root `Name` of the Transaction Detail family XML files (tdr_1_N, tedr_1_N DTDs).
  'Transaction Detail': 'TransactionRequestClass',
  'Transaction Exception Detail': 'ExceptionDetailClass',
  'Payment Submission Detail': 'PaymentBatchDetailClass',
  PaymentSubmissionDetail: 'PaymentBatchDetailClass',
  TransactionDetail: 'TransactionRequestClass',
  TransactionExceptionDetail: 'ExceptionDetailClass',
};

const squashName = (s: string): string => s.toLowerCase().replace(/[^a-z0-9]/g, '');

const KNOWN_BY_SQUASHED = new Map(
  Object.entries(KNOWN_REPORT_NAMES).map(([name, definition]) => [squashName(name), definition]),
);

/**
 * Names that several definitions' files carry: the Transaction Detail XML family's root `Name`
 * (tdr_1_N DTDs), the layout of Transaction Request and of Gateway Transaction Request XML reports.
 * Such a name tells a reader the layout (guessReportDefinition still answers the usual definition),
 * not which definition a file is of.
 */
const SHARED_REPORT_NAMES = new Set(['Transaction Detail'].map(squashName));

/** Whether files of more than one definition carry this name (see SHARED_REPORT_NAMES). */
export function isSharedReportName(name: string): boolean {
  return SHARED_REPORT_NAMES.has(squashName(name));
}

/**
 * The report definition a file's metadata names: the classic report type (`PaymentBatchDetail`), a
 * subscription name (`PaymentBatchDetailReport_Daily_Classic`), a title (`Payment Batch Detail Report`,
 * or without "Report" as an XML root's `Name` writes it),
 * a Classic or Transaction Detail report name (`KNOWN_REPORT_NAMES`) or an alias of a definition.
 */
export function guessReportDefinition(...names: (string | undefined)[]): ReportDefinition | undefined {
  for (const raw of names) {
    if (raw === undefined || raw === '') continue;
    const key = squashName(raw);
    const known = KNOWN_BY_SQUASHED.get(key);
    if (known !== undefined) return BY_NAME.get(known);
    const aliased = findReportDefinition(raw.trim());
    if (aliased !== undefined) return aliased;
    for (const d of REPORT_DEFINITIONS) {
      const base = squashName(d.name.replace(/Class$/, ''));
      const title = squashName(d.title);
      if (
        key === squashName(d.name) ||
        key === base ||
        key === title ||
        `${key}report` === title ||
        key.startsWith(title) ||
        key === `${base}report`
      )
        return d;
    }
  }
  return undefined;
}
