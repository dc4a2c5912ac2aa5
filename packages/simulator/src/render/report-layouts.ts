/**
 * The report definitions the simulator serves and their default layouts, as data.
 *
 * Names and numeric ids come from the id table of the SDK's ReportDefinitions model (facts §2.1).
 * The Decision Manager event report is served under its wire name, DecisionManagerEventDetailClass
 * (400); the specification's rename RiskDecisionEventDetailClass is unknown here, as it is to the
 * service. RecurringBillingDetailClass comes only from the specification: its id 621 is INVENTED
 * (next to SubscriptionDetailClass 620), and a client must not rely on it.
 *
 * Each definition names the rows it holds (`source`: which simulated transactions, and which of
 * their times places a row in a report period) and its default `fields` (catalog ids
 * `Group.Field`, agreed with the catalog engineer); a subscription's `reportFields` overrides the
 * columns. `amountField` is the column summed by the ground truth. `xml` says how the
 * definition's XML file looks (the real Transaction Detail and legacy Payment Batch Detail
 * layouts where a real file is known), and CLASSIC_REPORTS lists the predefined Classic reports
 * under their real names.
 */
import type { SimTransaction } from '../data/dataset.js';
import { fundingEvents } from '../data/money-chain.js';
import type { FundingEvent } from '../data/money-chain.js';

export const ROW_SOURCES = [
  'requests',
  'settled',
  'processorSettled',
  'fundingEvents',
  'depositEvents',
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
  /** The row a selected transaction is written as, when the report shows it otherwise. */
  map?: (tx: SimTransaction) => SimTransaction;
  /**
   * Rows that are events of a transaction (fundings, deposits): several or none per transaction,
   * each at its own time, up to FUNDING_LAG_DAYS after the request.
   */
  expand?: (tx: SimTransaction) => SimTransaction[];
}

/** A report row of a funded event: the transaction as the funding or deposit line shows it. */
export interface EventRow extends SimTransaction {
  event: FundingEvent;
}

function eventRows(tx: SimTransaction): EventRow[] {
  return fundingEvents(tx).map((event) => ({
    ...tx,
    requestId: event.requestId,
    amount: Math.abs(event.gross),
    fundingAmount: event.net,
    event,
  }));
}

/** The currency `two-currencies` writes on the Processor Settlement line: another of the same exponent. */
function otherCurrency(currency: string): string {
  return currency === 'USD' ? 'EUR' : currency === 'JPY' || currency === 'KWD' ? currency : 'USD';
}

export const ROW_SOURCE_RULES: Record<RowSource, RowSourceRule> = {
  requests: { source: 'requests', select: () => true, at: (tx) => tx.time, later: false },
  settled: { source: 'settled', select: (tx) => tx.settled, at: (tx) => tx.batchTime, later: true },
  processorSettled: {
    source: 'processorSettled',
    select: (tx) => tx.settled && tx.anomaly !== 'unsettled-batch',
    at: (tx) => tx.batchTime,
    later: true,
    map: (tx) => (tx.anomaly === 'two-currencies' ? { ...tx, currency: otherCurrency(tx.currency) } : tx),
  },
  fundingEvents: {
    source: 'fundingEvents',
    select: (tx) => tx.settled,
    at: (tx) => (tx as EventRow).event.fundingTime,
    later: true,
    expand: eventRows,
  },
  depositEvents: {
    source: 'depositEvents',
    select: (tx) => tx.settled,
    at: (tx) => (tx as EventRow).event.depositTime,
    later: true,
    expand: eventRows,
  },
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
    // An orphan chargeback names a request id no transaction has.
    map: (tx) =>
      tx.chargeback && tx.chargeback.requestId !== tx.requestId
        ? { ...tx, requestId: tx.chargeback.requestId }
        : tx,
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
  xml: XmlLayout;
}

/**
 * How a definition's XML file looks. `transactionDetail`: the real Transaction Detail family
 * layout (killbill `tdr_1_3`/`tdr_1_6` files, dotnet #38 `tedr_1_1`): a DOCTYPE, `<Request>`
 * attributes, repeated groups as `ApplicationReplies`/`LineItems`. `batches`: the legacy official
 * Payment Batch Detail sample (`Batches/Batch/Requests/Request`). `generic`: no real file is known;
 * `<Requests><Request RequestID=…>` with one child element per group.
 */
export interface XmlLayout {
  kind: 'transactionDetail' | 'batches' | 'generic';
  /** The root's `Name` attribute (the report's title without "Report", as the real files). */
  name: string;
  version: string;
  namespace: string;
  /** DTD system id written in `<!DOCTYPE Report SYSTEM …>`; undefined: no DOCTYPE (legacy PBD). */
  doctype?: string;
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

/** The Transaction Detail layout of the real files, at the DTD version of the killbill sample. */
const TRANSACTION_DETAIL_XML: XmlLayout = {
  kind: 'transactionDetail',
  name: 'Transaction Detail',
  version: '1.6',
  namespace: `${NS}tdr_1_6.dtd`,
  doctype: `${NS}tdr_1_6.dtd`,
};

/**
 * Fields of the Transaction Detail layout beyond the custom report's usual columns: the groups and
 * elements of the real file (ship-to, card, line item, payment data), so that the default
 * Transaction Request report carries every part of that layout. AVS and CVN results are the
 * Payment Data fields the real file carries (not an AuthorizationResults group).
 */
const TRANSACTION_DETAIL = [
  'ShipTo.City',
  'ShipTo.Zip',
  'PaymentMethod.AccountSuffix',
  'PaymentMethod.ExpirationMonth',
  'PaymentMethod.ExpirationYear',
  'PaymentMethod.CardType',
  'LineItems.Number',
  'LineItems.FulfillmentType',
  'LineItems.Quantity',
  'LineItems.UnitPrice',
  'LineItems.TaxAmount',
  'LineItems.ProductCode',
  'PaymentData.PaymentRequestID',
  'PaymentData.PaymentProcessor',
  'PaymentData.TotalTaxAmount',
  'PaymentData.AuthorizationType',
  'PaymentData.AuthorizationCode',
  'PaymentData.AVSResult',
  'PaymentData.AVSResultMapped',
  'PaymentData.CVResult',
  'PaymentData.GrandTotal',
];

/** The columns of the real Classic Payment Batch Detail file (sul-dlss), in its order. */
const PAYMENT_BATCH_DETAIL = [
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
];

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
        processorSettled: 'one row per request settled at the processor, by batch date',
        fundingEvents: 'one row per funded event (a settled request, a chargeback), by funding date',
        depositEvents: 'one row per deposited event (a settled request, a chargeback), by deposit time',
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
    xml: {
      kind: 'generic',
      name: title.replace(/ Report$/, ''),
      version: '1.0',
      namespace: `${NS}${type.replace(/[a-z]/g, '').toLowerCase()}_1_1.dtd`,
    },
    ...extra,
  };
}

export const REPORT_DEFINITIONS: readonly ReportDefinitionLayout[] = [
  def(
    'TransactionRequestClass',
    210,
    'Transaction Request Report',
    'TransactionRequest',
    'requests',
    [...REQUEST_CORE, ...PAYMENT, ...APPLICATION, ...BILL_TO, ...MDD, ...TRANSACTION_DETAIL],
    { xml: TRANSACTION_DETAIL_XML },
  ),
  def(
    'PaymentBatchDetailClass',
    211,
    'Payment Batch Detail Report',
    'PaymentBatchDetail',
    'settled',
    PAYMENT_BATCH_DETAIL,
    {
      subscriptionType: 'CLASSIC',
      xml: {
        kind: 'batches',
        name: 'Payment Batch Detail',
        version: '1.0',
        namespace: 'http://reports.ic3.com/reports/pbdr/1.0',
      },
    },
  ),
  def(
    'ExceptionDetailClass',
    212,
    'Transaction Exception Detail Report',
    'ExceptionDetail',
    'declines',
    [
      ...REQUEST_CORE,
      ...PAYMENT,
      'Exception.ExceptionDate',
      'Exception.ExceptionCategory',
      'Exception.ExceptionReasonCode',
      'Exception.ExceptionReasonDescription',
      'Exception.ExceptionStatus',
      'Application.Name',
      'Application.Rflag',
    ],
    {
      // dotnet #38: an (empty) Transaction Exception Detail file of the same family.
      xml: {
        kind: 'transactionDetail',
        name: 'Transaction Exception Detail',
        version: '1.1',
        namespace: `${NS}tedr_1_1.dtd`,
        doctype: `${NS}tedr_1_1.dtd`,
      },
    },
  ),
  def(
    'ProcessorSettlementDetailClass',
    213,
    'Processor Settlement Detail Report',
    'ProcessorSettlementDetail',
    'processorSettled',
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
    'fundingEvents',
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
      'PaymentData.TransactionType',
      'ChargebackAndRetrieval.CaseNumber',
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
      'ChargebackAndRetrieval.FinancialImpactType',
      'ChargebackAndRetrieval.ChargebackTime',
      'ChargebackAndRetrieval.FeeAmount',
      'ChargebackAndRetrieval.FeeCurrency',
      'ChargebackAndRetrieval.RespondByDate',
      'ChargebackAndRetrieval.ResolutionTime',
      'ChargebackAndRetrieval.ResolvedToIndicato',
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
    'depositEvents',
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
      'Funding.FundingIdentificationNumber',
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
      'PaymentData.PaymentMethod',
      'Fee.ClearedInterchangeLevel',
      'Fee.SettlementTime',
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
    { xml: { ...TRANSACTION_DETAIL_XML } },
  ),
  def(
    'DecisionManagerEventDetailClass',
    400,
    'Decision Manager Event Detail Report',
    'DecisionManagerEventDetail',
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
  // Invented definition and id, from the specification only (see the header comment).
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

/**
 * The predefined Classic reports (PUT /predefined-report-subscriptions, subscriptionType CLASSIC)
 * under their real names: PaymentBatchDetailReport_Daily_Classic (sul-dlss),
 * PaymentSubmissionDetailReport_Daily_Classic (edX: the Payment Batch Detail columns and
 * `payment_processor`), TransactionExceptionDetailReport_Daily_Classic (dotnet #38) and
 * TransactionDetailReport_Daily_Classic (the specification's predefined example). `type` is the
 * third field of the CSV metadata line. The first report of a definition is its default name; the
 * definition a Payment Submission Detail subscription names is not documented, Payment Batch
 * Detail is assumed.
 */
export interface ClassicReport {
  reportName: string;
  definitionName: string;
  type: string;
  fields: readonly string[];
}

export const CLASSIC_REPORTS: readonly ClassicReport[] = [
  {
    reportName: 'PaymentBatchDetailReport_Daily_Classic',
    definitionName: 'PaymentBatchDetailClass',
    type: 'PaymentBatchDetail',
    fields: PAYMENT_BATCH_DETAIL,
  },
  {
    reportName: 'PaymentSubmissionDetailReport_Daily_Classic',
    definitionName: 'PaymentBatchDetailClass',
    type: 'PaymentSubmissionDetail',
    fields: [...PAYMENT_BATCH_DETAIL, 'PaymentData.PaymentProcessor'],
  },
  {
    reportName: 'TransactionExceptionDetailReport_Daily_Classic',
    definitionName: 'ExceptionDetailClass',
    type: 'TransactionExceptionDetail',
    fields: reportDefinition('ExceptionDetailClass')!.fields,
  },
  {
    reportName: 'TransactionDetailReport_Daily_Classic',
    definitionName: 'TransactionRequestClass',
    type: 'TransactionDetail',
    fields: reportDefinition('TransactionRequestClass')!.fields,
  },
];

/** The Classic report of a subscription name, if it is one of the predefined ones. */
export function classicReport(reportName: string): ClassicReport | undefined {
  return CLASSIC_REPORTS.find((c) => c.reportName === reportName);
}

/** The default predefined Classic report of a definition, if it has one. */
export function defaultClassicReport(definitionName: string): ClassicReport | undefined {
  return CLASSIC_REPORTS.find((c) => c.definitionName === definitionName);
}
