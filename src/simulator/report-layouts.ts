/**
 * The report definitions the simulator serves and their default layouts, as data.
 *
 * Numeric ids come from the id table in facts §2.1 (NODE-SDK model description). Two definitions
 * of the specification are not in that table and their ids are INVENTED here (plausible, unused
 * numbers): RiskDecisionEventDetailClass = 400 (the table's DecisionManagerEventDetailClass, which
 * the specification renames "Risk"), and RecurringBillingDetailClass = 621 (next to
 * SubscriptionDetailClass 620). A client must not rely on them.
 *
 * Each definition names the rows it holds (`source`: which simulated transactions, and which of
 * their times places a row in a report period) and its default `fields` (catalog ids
 * `Group.Field`, agreed with the catalog engineer); a subscription's `reportFields` overrides the
 * columns. `amountField` is the column summed by the ground truth.
 */
import type { SimTransaction } from './dataset.js';

export const ROW_SOURCES = [
  'requests',
  'settled',
  'declines',
  'authOnly',
  'conversions',
  'chargebacks',
  'jpy',
  'recurring',
] as const;
export type RowSource = (typeof ROW_SOURCES)[number];

export interface RowSourceRule {
  source: RowSource;
  select(tx: SimTransaction): boolean;
  /** The instant that puts a row in a report period. */
  at(tx: SimTransaction): number;
  /** Whether `at` can fall on a later UTC day than the request (batch times do). */
  later: boolean;
}

export const ROW_SOURCE_RULES: Record<RowSource, RowSourceRule> = {
  requests: { source: 'requests', select: () => true, at: (tx) => tx.time, later: false },
  settled: { source: 'settled', select: (tx) => tx.settled, at: (tx) => tx.batchTime, later: true },
  declines: { source: 'declines', select: (tx) => tx.kind === 'decline', at: (tx) => tx.time, later: false },
  authOnly: { source: 'authOnly', select: (tx) => tx.kind === 'auth', at: (tx) => tx.time, later: false },
  conversions: {
    source: 'conversions',
    select: (tx) => tx.conversion !== undefined,
    at: (tx) => tx.conversion?.time ?? 0,
    later: false,
  },
  chargebacks: {
    source: 'chargebacks',
    select: (tx) => tx.chargeback !== undefined,
    at: (tx) => tx.chargeback?.time ?? 0,
    later: false,
  },
  jpy: { source: 'jpy', select: (tx) => tx.currency === 'JPY', at: (tx) => tx.time, later: false },
  recurring: {
    source: 'recurring',
    select: (tx) => tx.subscriptionId !== undefined,
    at: (tx) => tx.time,
    later: false,
  },
};

export interface ReportDefinitionLayout {
  name: string;
  id: number;
  /** Human title, also the XML `Name` attribute. */
  title: string;
  /** Report type written in the CSV metadata line (third field), e.g. `PaymentBatchDetail`. */
  type: string;
  version: string;
  subscriptionType: 'CLASSIC' | 'CUSTOM' | 'STANDARD';
  description: string;
  source: RowSource;
  fields: readonly string[];
  amountField: string;
  currencyField: string;
  /** XML namespace of the file (the legacy DTD-style namespaces for the known ones). */
  xmlNamespace: string;
}

const MDD = [1, 2, 3, 4].map((n) => `Merchant-DefinedDataFields.MerchantDefinedData_field${n}`);
const REQUEST_CORE = [
  'Request.RequestID',
  'Request.TransactionDate',
  'Request.MerchantID',
  'Request.MerchantReferenceNumber',
  'Request.TransactionReferenceNumber',
];
const PAYMENT = [
  'PaymentData.Amount',
  'PaymentData.CurrencyCode',
  'PaymentData.PaymentMethod',
  'PaymentData.TransactionType',
];
const APPLICATION = [
  'Application.Name',
  'Application.Rcode',
  'Application.Rflag',
  'Application.Rmsg',
  'Application.ReasonCode',
];
const BILL_TO = [
  'BillTo.FirstName',
  'BillTo.LastName',
  'BillTo.CompanyName',
  'BillTo.Address1',
  'BillTo.City',
  'BillTo.State',
  'BillTo.Zip',
  'BillTo.Country',
  'BillTo.Email',
  'BillTo.Phone',
  'BillTo.IPAddress',
];
const NS = 'https://ebc.cybersource.com/ebc/reports/dtd/';

function def(
  name: string,
  id: number,
  title: string,
  type: string,
  source: RowSource,
  fields: readonly string[],
  extra: Partial<ReportDefinitionLayout> = {},
): ReportDefinitionLayout {
  return {
    name,
    id,
    title,
    type,
    version: '1.10',
    subscriptionType: 'CUSTOM',
    description: `${title}: ${
      {
        requests: 'one row per request (all applications, accepted and declined)',
        settled: 'one row per settled request, by batch date',
        declines: 'one row per declined request',
        authOnly: 'one row per open authorization',
        conversions: 'one row per review decision (order conversion), by decision time',
        chargebacks: 'one row per chargeback case, by case time',
        jpy: 'one row per JPY request',
        recurring: 'one row per recurring-billing request',
      }[source]
    }`,
    source,
    fields,
    amountField: 'PaymentData.Amount',
    currencyField: 'PaymentData.CurrencyCode',
    xmlNamespace: `${NS}${type.replace(/[a-z]/g, '').toLowerCase()}_1_1.dtd`,
    ...extra,
  };
}

export const REPORT_DEFINITIONS: readonly ReportDefinitionLayout[] = [
  def('TransactionRequestClass', 210, 'Transaction Request Report', 'TransactionRequest', 'requests', [
    ...REQUEST_CORE,
    ...PAYMENT,
    ...APPLICATION,
    ...BILL_TO,
    'AuthorizationResults.AVSResult',
    'AuthorizationResults.CVVResult',
    ...MDD,
    'Device.DeviceID',
  ]),
  def(
    'PaymentBatchDetailClass',
    211,
    'Payment Batch Detail Report',
    'PaymentBatchDetail',
    'settled',
    [
      'Batch.BatchID',
      'Request.MerchantID',
      'Batch.BatchDate',
      'Request.RequestID',
      'Request.MerchantReferenceNumber',
      'Request.TransactionReferenceNumber',
      'PaymentData.PaymentMethod',
      'PaymentData.CurrencyCode',
      'PaymentData.Amount',
      'Application.Name',
      'Batch.Status',
      'Request.TransactionDate',
    ],
    { subscriptionType: 'CLASSIC', xmlNamespace: 'http://reports.ic3.com/reports/pbdr/1.0' },
  ),
  def('ExceptionDetailClass', 212, 'Transaction Exception Detail Report', 'ExceptionDetail', 'declines', [
    ...REQUEST_CORE,
    ...PAYMENT,
    'Exception.ExceptionDate',
    'Exception.ExceptionCategory',
    'Exception.ExceptionReasonCode',
    'Exception.ExceptionReasonDescription',
    'Exception.ExceptionStatus',
    'Application.Name',
    'Application.Rflag',
  ]),
  def(
    'ProcessorSettlementDetailClass',
    213,
    'Processor Settlement Detail Report',
    'ProcessorSettlementDetail',
    'settled',
    [
      ...REQUEST_CORE,
      ...PAYMENT,
      'Batch.BatchID',
      'Batch.BatchDate',
      'Fee.SettlementAmount',
      'Fee.SettlementCurrency',
      'Fee.SettlementTime',
    ],
  ),
  def(
    'ProcessorEventsDetailClass',
    214,
    'Processor Events Detail Report',
    'ProcessorEventsDetail',
    'settled',
    [
      'Request.RequestID',
      'Request.MerchantID',
      'Request.MerchantReferenceNumber',
      'Event.Event',
      'Event.EventDate',
      'Event.Amount',
      'Event.CurrencyCode',
      'Event.ProcessorMessage',
      'PaymentData.PaymentMethod',
    ],
    { amountField: 'Event.Amount', currencyField: 'Event.CurrencyCode' },
  ),
  def(
    'FundingDetailClass',
    215,
    'Funding Detail Report',
    'FundingDetail',
    'settled',
    [
      'Request.RequestID',
      'Request.MerchantID',
      'Request.MerchantReferenceNumber',
      'PaymentData.Amount',
      'PaymentData.CurrencyCode',
      'PaymentData.PaymentMethod',
      'Funding.FundingAmount',
      'Funding.FundingCurrency',
      'Funding.FeeAmount',
      'Funding.FeeCurrency',
      'Funding.FundingDate',
      'Funding.FundingIdentificationNumber',
      'Funding.Status',
    ],
    {
      subscriptionType: 'STANDARD',
      amountField: 'Funding.FundingAmount',
      currencyField: 'Funding.FundingCurrency',
    },
  ),
  def('AgingDetailClass', 216, 'Aging Detail Report', 'AgingDetail', 'authOnly', [
    ...REQUEST_CORE,
    ...PAYMENT,
    'PaymentData.AuthorizationCode',
    'Application.Name',
  ]),
  def(
    'ChargebackAndRetrievalDetailClass',
    217,
    'Chargeback And Retrieval Detail Report',
    'ChargebackAndRetrievalDetail',
    'chargebacks',
    [
      'Request.RequestID',
      'Request.MerchantID',
      'Request.MerchantReferenceNumber',
      'ChargebackAndRetrieval.CaseNumber',
      'ChargebackAndRetrieval.CaseTime',
      'ChargebackAndRetrieval.CaseType',
      'ChargebackAndRetrieval.ChargebackAmount',
      'ChargebackAndRetrieval.ChargebackCurrency',
      'ChargebackAndRetrieval.ChargebackReasonCode',
      'ChargebackAndRetrieval.FinancialImpact',
    ],
    {
      amountField: 'ChargebackAndRetrieval.ChargebackAmount',
      currencyField: 'ChargebackAndRetrieval.ChargebackCurrency',
    },
  ),
  def(
    'DepositDetailClass',
    218,
    'Deposit Detail Report',
    'DepositDetail',
    'settled',
    [
      'Deposit.Identifier',
      'Deposit.MerchantID',
      'Request.RequestID',
      'Deposit.Amount',
      'Deposit.Currency',
      'Deposit.Time',
      'Deposit.Status',
      'Deposit.Method',
      'Deposit.MerchantBankAcctLast4',
    ],
    { subscriptionType: 'STANDARD', amountField: 'Deposit.Amount', currencyField: 'Deposit.Currency' },
  ),
  def(
    'FeeDetailClass',
    219,
    'Fee Detail Report',
    'FeeDetail',
    'settled',
    [
      'Request.RequestID',
      'Request.MerchantID',
      'PaymentData.Amount',
      'PaymentData.CurrencyCode',
      'Fee.DiscountRate',
      'Fee.DiscountAmount',
      'Fee.InterchangeRate',
      'Fee.InterchangeAmount',
      'Fee.PerItemFeeAmount',
      'Fee.TotalFeeAmount',
      'Fee.TotalFeeCurrency',
      'Fee.BillingType',
    ],
    {
      subscriptionType: 'STANDARD',
      amountField: 'Fee.TotalFeeAmount',
      currencyField: 'Fee.TotalFeeCurrency',
    },
  ),
  def('InvoiceSummaryClass', 220, 'Invoice Summary Report', 'InvoiceSummary', 'requests', [
    'Invoice.OrganizationID',
    'Request.RequestID',
    'Invoice.PerformedServices',
    'Invoice.Processed',
    'Invoice.NotProcessed',
    'PaymentData.Amount',
    'PaymentData.CurrencyCode',
  ]),
  def('PayerAuthDetailClass', 221, 'Payer Authentication Detail Report', 'PayerAuthDetail', 'requests', [
    ...REQUEST_CORE,
    ...PAYMENT,
    'Application.Name',
    'Application.Rflag',
    'AuthorizationResults.AVSResult',
    'AuthorizationResults.CVVResult',
  ]),
  def('ConversionDetailClass', 222, 'Conversion Detail Report', 'ConversionDetail', 'conversions', [
    'Request.RequestID',
    'Request.MerchantID',
    'Request.MerchantReferenceNumber',
    'Conversion.ConversionDate',
    'Conversion.OriginalDecision',
    'Conversion.NewDecision',
    'Conversion.Reviewer',
    'Conversion.ReviewerComments',
    'Conversion.Queue',
    'Conversion.Profile',
    'PaymentData.Amount',
    'PaymentData.CurrencyCode',
  ]),
  def('SubscriptionDetailClass', 620, 'Subscription Detail Report', 'SubscriptionDetail', 'recurring', [
    'Request.RequestID',
    'Request.SubscriptionID',
    'Request.MerchantID',
    'Request.TransactionDate',
    ...PAYMENT,
    'BillTo.FirstName',
    'BillTo.LastName',
    'BillTo.Email',
    'TMSToken.InstrumentIdentifierID',
  ]),
  def(
    'JPTransactionDetailClass',
    270,
    'JP Transaction Detail Report',
    'JPTransactionDetail',
    'jpy',
    [
      'JP.RequestID',
      'JP.MerchantID',
      'JP.MerchantReferenceNumber',
      'JP.TransactionReferenceNumber',
      'JP.Date',
      'JP.Time',
      'JP.Amount',
      'JP.Currency',
      'JP.PaymentMethod',
      'JP.CardSuffix',
      'JP.AuthorizationCode',
      'JP.TransactionType',
      'JP.CustomerFirstName',
      'JP.CustomerLastName',
    ],
    { amountField: 'JP.Amount', currencyField: 'JP.Currency' },
  ),
  def(
    'ServiceFeeDetailClass',
    271,
    'Service Fee Detail Report',
    'ServiceFeeDetail',
    'settled',
    [
      'Request.RequestID',
      'Request.MerchantID',
      'PaymentData.Amount',
      'PaymentData.CurrencyCode',
      'Fee.ServiceFeeRate',
      'Fee.ServiceFeeAmount',
      'Fee.ServiceFeeAmountCcy',
      'Fee.SettlementTime',
    ],
    { amountField: 'Fee.ServiceFeeAmount', currencyField: 'Fee.ServiceFeeAmountCcy' },
  ),
  def(
    'GatewayTransactionRequestClass',
    310,
    'Gateway Transaction Request Report',
    'GatewayTransactionRequest',
    'requests',
    [...REQUEST_CORE, ...PAYMENT, ...APPLICATION, 'BillTo.FirstName', 'BillTo.LastName', 'BillTo.Email'],
  ),
  // Invented id (see the header comment): the spec's rename of DecisionManagerEventDetailClass (400).
  def(
    'RiskDecisionEventDetailClass',
    400,
    'Risk Decision Event Detail Report',
    'RiskDecisionEventDetail',
    'conversions',
    [
      'Request.RequestID',
      'Request.MerchantID',
      'Conversion.ConversionDate',
      'Conversion.OriginalDecision',
      'Conversion.NewDecision',
      'Conversion.Profile',
      'Conversion.Queue',
      'PaymentData.Amount',
      'PaymentData.CurrencyCode',
    ],
  ),
  // Invented id (see the header comment).
  def(
    'RecurringBillingDetailClass',
    621,
    'Recurring Billing Details Report',
    'RecurringBillingDetail',
    'recurring',
    [
      'Request.RequestID',
      'Request.SubscriptionID',
      'Request.MerchantID',
      'Request.TransactionDate',
      'PaymentData.Amount',
      'PaymentData.CurrencyCode',
      'Application.Rflag',
      'TMSToken.InstrumentIdentifierID',
      'TMSToken.InstrumentIdentifierState',
    ],
  ),
];

const BY_NAME = new Map(REPORT_DEFINITIONS.map((d) => [d.name, d]));
const BY_ID = new Map(REPORT_DEFINITIONS.map((d) => [d.id, d]));

export function reportDefinition(name: string): ReportDefinitionLayout | undefined {
  return BY_NAME.get(name);
}

export function reportDefinitionById(id: number): ReportDefinitionLayout | undefined {
  return BY_ID.get(id);
}

/** Application names accepted by the `Application.Name` report filter. */
export const APPLICATION_NAMES = [
  'ics_auth',
  'ics_bill',
  'ics_credit',
  'ics_void',
  'ecp_debit',
  'ecp_credit',
  'ics_score',
  'ics_auth_reversal',
] as const;
