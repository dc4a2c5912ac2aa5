/**
 * The spec's field catalog as data ("Field catalog" in reporting-api-spec.md), plus the agreed
 * extension fields of the `Request` and `PaymentData` groups.
 *
 * Group ids (the `Group` in `Group.Field`) are the group's stated prefix where the spec gives one,
 * else the group title in PascalCase. Field names keep the spec's own spelling (`ResolvedToIndicato`,
 * `MerchantDefinedData_field1`). Descriptions are the spec's words; "not shown" is left undefined.
 *
 * Types follow the rules in `types.ts`: amounts, rates, balances, exchange rates and fees are
 * `numeric`; times are `timestamptz`; counts are `integer`; the documented Y/N flags are `boolean`;
 * codes, ids, names, card suffixes, routing and account numbers and enumerations are `text`.
 */
import type { PgType } from './types.js';

export interface FieldSpec {
  name: string;
  type: PgType;
  description?: string;
  /** Maximum length the spec gives (informational: not enforced, the file is the truth). */
  length?: number;
  /** Documented value set (kept as text, not enforced: new values must not lose rows). */
  values?: readonly string[];
  /** Documented Simple Order API header when it differs from the naming rule. */
  soapi?: string;
  /** The Simple Order value exactly as the spec lists it, when it is not usable as `soapi`. */
  documentedSoapi?: string;
  /** Documented SCMP header when it differs from the naming rule. */
  scmp?: string;
  /** Other names seen in real files (CSV headers, XML paths such as `Request/Amount`). */
  aliases?: readonly string[];
  /** Where a field outside the spec's catalog comes from. */
  provenance?: string;
}

export interface GroupSpec {
  /** The `Group` of `Group.Field`. */
  id: string;
  /** The spec's title of the group. */
  title: string;
  /** The prefix the spec states for the group, if any. */
  prefix?: string;
  /** Column-name prefix when it differs from `snakeCase(id)` ('' = bare field names). */
  columnPrefix?: string;
  /** Where the group comes from when it is not (fully) in the spec. */
  provenance?: string;
  fields: readonly FieldSpec[];
}

function f(
  name: string,
  type: PgType = 'text',
  description?: string,
  extra: Partial<FieldSpec> = {},
): FieldSpec {
  return { name, type, ...(description === undefined ? {} : { description }), ...extra };
}

const SPF = ['S', 'P', 'F'] as const;

const EXTENSION_PROVENANCE =
  'Agreed extension: the spec lists Request fields only in its subscription examples ' +
  '(Request.RequestID, Request.TransactionDate, Request.MerchantID) and no PaymentData fields; these ' +
  'columns are the ones of the real REST-era and legacy Payment Batch Detail files (facts §5.1, §5.2; ' +
  'samples/cybersource).';

export const FIELD_GROUPS: readonly GroupSpec[] = [
  {
    id: 'Application',
    title: 'Application',
    fields: [
      f('Name', 'text', 'name of application used', { aliases: ['ics_applications', 'Request/Application'] }),
      f('Rcode', 'text', 'one-digit code showing whether the whole request succeeded'),
      f('ReasonCode', 'text', 'numeric result of the overall request'),
      f('Rflag', 'text', 'one-word result of the whole request'),
      f('Rmsg', 'text', 'message that explains the flag value'),
    ],
  },
  {
    id: 'AuthorizationResults',
    title: 'Authorization results',
    fields: [
      f('AVSResult', 'text', 'optional address verification result'),
      f('CVVResult', 'text', 'optional card verification number result'),
    ],
  },
  {
    id: 'BankInfo',
    title: 'Bank information',
    prefix: 'BankInfo',
    fields: [
      f('Address'),
      f('BranchCode', 'text', "branch of the customer's bank when no IBAN is used"),
      f('City'),
      f('Country'),
      f('Name'),
      f('SwiftCode', 'text', 'bank identification code'),
    ],
  },
  {
    id: 'Batch',
    title: 'Batch',
    fields: [
      // timestamptz, not date: the REST-era file carries a full timestamp (2023-10-11T04:15:21Z), the
      // legacy files a date (2003-05-01 → midnight UTC). See types.ts.
      f('BatchDate', 'timestamptz', 'date batch sent to processor', { aliases: ['batch_date'] }),
      f('BatchID', 'text', undefined, { aliases: ['batch_id'] }),
      f('Status', 'text', 'status of batch file'),
      // Values not documented: kept as text rather than guessing a boolean spelling.
      f('SuccessFlag', 'text', 'whether batch processing succeeded'),
    ],
  },
  {
    id: 'BillTo',
    title: 'Bill To',
    prefix: 'BillTo',
    fields: [
      f('Address1'),
      f('Address2'),
      f('City'),
      f('CompanyName'),
      f('CompanyTaxID'),
      f('Country'),
      f('CustomerID', 'text', "merchant's identifier for the customer"),
      f('Email'),
      f('FirstName'),
      f('HostName', 'text', 'DNS-resolved host name from the IP address'),
      f('IPAddress'),
      f('LastName'),
      f('MiddleName'),
      f('NameSuffix'),
      f(
        'PersonalID',
        'text',
        'supported only for one processor in Brazil; holds the national individual taxpayer number used for address verification',
      ),
      f('Phone'),
      f('State', 'text', 'state or province'),
      f('Title'),
      f('UserName'),
      f('Zip', 'text', 'postal code, five to nine digits'),
    ],
  },
  {
    id: 'ChargebackAndRetrieval',
    title: 'Chargeback and Retrieval',
    columnPrefix: 'chargeback',
    fields: [
      f('AdjustmentAmount', 'numeric'),
      f('AdjustmentCurrency'),
      f('AdjustmentARN', 'text', 'association reference number'),
      f(
        'CaseIdentifier',
        'text',
        'numeric identifier of a unique chargeback, representment or other exception',
      ),
      f('CaseNumber', 'text', 'processor-assigned'),
      f('CaseTime', 'timestamptz', 'date case opened'),
      f('CaseType'),
      f('ChargebackAmount', 'numeric'),
      f('ChargebackCurrency'),
      f('ChargebackMessage', 'text', "issuer's explanation"),
      f('ChargebackReasonCode', 'text', 'association reason code'),
      f('ChargebackReasonCodeDescription'),
      f('ChargebackTime', 'timestamptz', 'date the issuing bank originated the chargeback'),
      f('DocumentIndicator', 'boolean', '`Y` or `N`, whether documents are associated'),
      f('FeeAmount', 'numeric', 'chargeback exception fee'),
      f('FeeCurrency'),
      f('FinancialImpact', 'boolean', '`Y` or `N`'),
      f('FinancialImpactType', 'text', 'debit, credit, or none', { values: ['debit', 'credit', 'none'] }),
      f('MerchantCategoryCode', 'text', 'four-digit number'),
      f('PartialIndicator', 'boolean', 'flag for partial chargeback enabled'),
      f('ResolutionTime', 'timestamptz', 'UTC'),
      f(
        'ResolvedToIndicato',
        'text',
        'resolved-to status; values `B` Bank, `M` Merchant, `S` Split, `G` General ledger',
        {
          values: ['B', 'M', 'S', 'G'],
        },
      ),
      f('RespondByDate', 'date', 'date by which the item must reach the chargeback processor'),
      f('TransactionType', 'text', 'capture type of original transaction'),
    ],
  },
  {
    id: 'Check',
    title: 'Check',
    prefix: 'Check',
    fields: [
      f('BankTransitNumber'),
      f('AccountEncoderID', 'text', 'bank that provided the encoded account number'),
      f('SecCode', 'text', 'authorization method used'),
    ],
  },
  {
    id: 'Conversion',
    title: 'Conversion',
    fields: [
      f('ConversionDate', 'timestamptz'),
      f('NewDecision', 'text', "reviewer's evaluation result"),
      f('OriginalDecision', 'text', "order profile's evaluation result"),
      f('Profile', 'text', 'order profile used'),
      f('Reviewer', 'text', 'person who evaluated the order originally marked for review'),
      f('ReviewerComments'),
      f('Queue', 'text', 'review queue originally assigned'),
    ],
  },
  {
    id: 'Deposit',
    title: 'Deposit',
    fields: [
      f('Amount', 'numeric'),
      f('Category'),
      f('Currency', 'text', 'currency code'),
      f('ExchangeRate', 'numeric', 'decimal point, up to 4 decimal places'),
      f('ExchangeRateDescription', 'text', 'from funding bank'),
      f('Identifier', 'text', 'unique reference number of the deposit'),
      f('MerchantBankAcctLast4', 'text', 'all but last 4 digits masked'),
      f('MerchantBankAcctName'),
      f('MerchantBankCode', 'text', 'routing number'),
      f('MerchantBankCountry', 'text', 'two-character ISO country code'),
      f('MerchantBankName'),
      f('MerchantID', 'text', 'service merchant ID'),
      f('Method', 'text', 'funds transfer method'),
      f('Status', 'text', '`S` Success, `P` Pending, `F` Failed', { values: SPF }),
      f('Time', 'timestamptz', 'deposit time, UTC'),
      f('TransferMessage', 'text', 'from processor'),
      f('Type', 'text', 'events included in the transfer'),
    ],
  },
  {
    id: 'Device',
    title: 'Device',
    fields: [f('DeviceID')],
  },
  {
    id: 'Event',
    title: 'Event',
    fields: [
      f('Amount', 'numeric'),
      f('CurrencyCode'),
      f('Event', 'text', 'type of event for the transaction'),
      f('EventDate', 'timestamptz', 'date in GMT; can be null for some event types such as Declined'),
      f('ProcessorMessage'),
    ],
  },
  {
    id: 'Exception',
    title: 'Exception',
    fields: [
      f('Action'),
      f('ClientID'),
      f('ProviderExceptionID', 'text', 'exception ID assigned by the service'),
      f('DccLookupStatus'),
      f('DccExchangeRate', 'numeric'),
      f('DccMarginRate', 'numeric'),
      f('ExceptionAmount', 'numeric'),
      f('ExceptionAmountCurrency', 'text', 'ISO 4217:2008 alpha-3'),
      f('ExceptionCategory'),
      f('ExceptionDate', 'timestamptz'),
      f('ExceptionDescription'),
      f('ExceptionDeviceHardwareRevision'),
      f('ExceptionDeviceID'),
      f('ExceptionDeviceOS'),
      f('ExceptionDeviceOSVersion'),
      f('ExceptionDeviceTerminalID'),
      f('ExceptionMessage'),
      f('ExceptionReasonCode', 'text', 'same reason code as in the response or receipt'),
      f('ExceptionReasonDescription'),
      f('ExceptionStatus'),
      f('ExceptionStatusCode'),
      f('ExceptionType'),
      f('FinancialStatus'),
      f('LastActionDate', 'timestamptz'),
      f('LocalCurrencyCode'),
      f('NextActionDate', 'timestamptz'),
      f('OriginalTransactionSubmissionDate', 'timestamptz'),
      f('PartnerMerchantID'),
      f('PartnerMerchantName'),
      f('PaymentNumber'),
      f('ProcessorCaseID'),
      f('ProcessorResponseCode'),
      f('ReasonCode'),
      f('RetryCount', 'integer', 'payments pending in retry mode'),
      f('SchemeOperator'),
      f('SDKVersion'),
      f('SettlementProcessor'),
      f('StorageMechanism'),
    ],
  },
  {
    id: 'Fee',
    title: 'Fee',
    fields: [
      f('AssessmentAmount', 'numeric'),
      f('AssessmentCurrency'),
      f('BillingCycle', 'text', '`daily`, `weekly`, `monthly`', { values: ['daily', 'weekly', 'monthly'] }),
      f('BillingType', 'text', '`discount`, `interchangePlus`, `serviceFee`, `other`', {
        values: ['discount', 'interchangePlus', 'serviceFee', 'other'],
      }),
      f('ClearedInterchangeLevel', 'text', 'clearing level code'),
      f('DiscountAmount', 'numeric', 'discount rate times transaction amount, four decimal points'),
      f('DiscountCurrency'),
      f('DiscountRate', 'numeric'),
      f(
        'DowngradeReasonCode',
        'text',
        '`1` transaction exceeded timeliness; `2` authorization code missing; `8` POS entry mode does not qualify; ' +
          '`9` POS condition code does not qualify; `A` POS terminal capability does not qualify; ' +
          '`D` mail/phone/e-commerce indicator does not qualify; `K` cleared as intraregional; ' +
          '`L` cleared as interregional; `R` reclassification; `U` UK domestic; `V` German domestic; ' +
          '`W` cleared as world signia; `X` did not qualify at merchant price level',
        { values: ['1', '2', '8', '9', 'A', 'D', 'K', 'L', 'R', 'U', 'V', 'W', 'X'] },
      ),
      f('InterchangeAmount', 'numeric'),
      f('InterchangeCurrency', 'text', 'ISO currency code of the clearing rate'),
      f('InterchangeRate', 'numeric'),
      f('PerItemFeeAmount', 'numeric'),
      f('PerItemFeeCurrency'),
      f('PricedInterchangeLevel', 'numeric', 'flat rate assigned at account setup, four decimal points'),
      f('ServiceFeeAmount', 'numeric'),
      f('ServiceFeeAmountCcy'),
      f('ServiceFeeFixedAmount', 'numeric'),
      f('ServiceFeeFixedAmountCcy'),
      f('ServiceFeeRate', 'numeric', 'percentage'),
      f('SettlementAmount', 'numeric'),
      f('SettlementCurrency'),
      f('SettlementTime', 'timestamptz'),
      f('SettlementTimeZone'),
      f('SourceDescriptor'),
      f('TotalFeeAmount', 'numeric', 'all fee transactions in the date range'),
      f('TotalFeeCurrency'),
    ],
  },
  {
    id: 'FeeSummary',
    title: 'Fee Summary',
    fields: [
      f('CardType'),
      f('Count', 'integer'),
      f('FeeDescription'),
      f('FeeType'),
      f('FundingCurrency'),
      f('PaymentMethod'),
      f('PercentageFee', 'numeric'),
      f('PerItemFee', 'numeric'),
      f('TotalFeeAmount', 'numeric'),
      f('TransactionAmount', 'numeric'),
      f('TransactionType'),
    ],
  },
  {
    id: 'Funding',
    title: 'Funding',
    prefix: 'Funding',
    fields: [
      f('CurrencyExchangeDescription'),
      f('CurrencyExchangeRate', 'numeric', 'transaction currency to funding currency'),
      f('FeeAmount', 'numeric'),
      f('FeeCurrency', 'text', 'ISO 4217:2008 alpha-3'),
      f('FeeDescription'),
      f('FundingAccountSuffix', 'text', 'last 4 digits'),
      f('FundingAmount', 'numeric'),
      f('FundingBankCode'),
      f('FundingBankCountry', 'text', 'ISO 3166-1 alpha-3'),
      f('FundingBankName'),
      f('FundingCurrency', 'text', 'ISO 4217:2008 alpha-3'),
      f('FundingDate', 'date'),
      f('FundingIdentificationNumber'),
      f('FundingProcessorMessage'),
      f('FundingTransferMessage'),
      f('ProcessorResponseCode'),
      f('Status', 'text', '`S` Success, `P` Pending, `F` Failed', { values: SPF }),
    ],
  },
  {
    id: 'FundTransfer',
    title: 'Fund Transfer',
    prefix: 'FundTransfer',
    fields: [
      f('BankCheckDigit', 'text', "validates the customer's account number"),
      f('IbanIndicator', 'text', 'International Bank Account Number'),
    ],
  },
  {
    id: 'GiftCard',
    title: 'Gift Card',
    fields: [
      f('CurrentBalance', 'numeric', 'Balance in local currency.', {
        length: 12,
        soapi: 'giftCard_currentBalance',
        scmp: 'gift_card_current_balance',
      }),
      f(
        'PreviousBalance',
        'numeric',
        'Balance before the concurrent transaction; supported only on one gift-card processor.',
        { length: 12, soapi: 'giftCard_previousBalance', scmp: 'gift_card_previous_balance' },
      ),
      // The spec lists RedemptionType's Simple Order value as giftCard_previousBalance, the same as
      // PreviousBalance's: kept as documented text, but the header giftCard_previousBalance always means
      // PreviousBalance; RedemptionType is read from the rule-derived giftCard_redemptionType.
      f(
        'RedemptionType',
        'text',
        'Values `CASHOUT`, `REDEMPTION`, `REDEMPTION_PARTIAL_ALLOWED` (default); supported only on one gift-card processor.',
        {
          length: 26,
          values: ['CASHOUT', 'REDEMPTION', 'REDEMPTION_PARTIAL_ALLOWED'],
          soapi: 'giftCard_redemptionType',
          documentedSoapi: 'giftCard_previousBalance',
          scmp: 'gift_card_redemption_type',
        },
      ),
    ],
  },
  {
    id: 'Healthcare',
    title: 'Healthcare',
    fields: [
      f('Amount', 'numeric', 'Amount of the healthcare payment', { length: 13 }),
      f('AmountType', 'text', 'Type of healthcare payment, for example `healthcare`, `dental`, `clinic`', {
        length: 35,
      }),
      f('Currency', 'text', 'Currency used', { length: 3 }),
      f('IndustryType', 'text', 'Industry type of the transaction', { length: 20 }),
    ],
  },
  {
    id: 'Invoice',
    title: 'Invoice',
    prefix: 'Invoice',
    fields: [
      f('BillingGroupDescription'),
      f('NotProcessed', 'integer', 'number of unprocessed transactions'),
      f('OrganizationID', 'text', 'merchant ID'),
      f('PerformedServices', 'text', 'service name'),
      f('Processed', 'integer', 'number of processed transactions'),
      f('Total', 'integer', 'invoice count'),
    ],
  },
  {
    id: 'JP',
    title: 'JP',
    fields: [
      f('Amount', 'numeric', 'transaction grand total'),
      f(
        'AuthForward',
        'text',
        'Japanese acquirer that processed the transaction; available only for two Japanese gateways',
      ),
      f('AuthorizationCode'),
      f('CardSuffix', 'text', 'last four digits'),
      f('Currency'),
      f('CustomerFirstName'),
      f('CustomerLastName'),
      f('Date', 'date'),
      f('Gateway'),
      f('JPOInstallmentMethod', 'text', 'number of installments, Japanese payment method only'),
      f('JPOPaymentMethod'),
      f('MerchantID'),
      f('MerchantReferenceNumber'),
      f('NetworkTokenTransType'),
      f('PaymentMethod'),
      f('RequestID'),
      f('SubscriptionID', 'text', 'customer profile identifier'),
      // Time of day next to JP.Date; its format is not documented, so it stays text.
      f('Time'),
      f('TransactionReferenceNumber', 'text', 'reconciles gateway reports with processor reports'),
      f('TransactionType'),
    ],
  },
  {
    id: 'LineItems',
    title: 'Line Item',
    prefix: 'LineItems',
    fields: [
      f('FulfillmentType', 'text', 'product code information'),
      f('InvoiceNumber'),
      f('MerchantProductSku'),
      f('Number', 'integer', 'line item number in the order'),
      f('ProductCode', 'text', 'product category: electronic, handling, physical, service, shipping'),
      f('ProductName'),
      f('Quantity', 'integer'),
      f('TaxAmount', 'numeric'),
      f('UnitPrice', 'numeric'),
    ],
  },
  {
    id: 'Merchant-DefinedDataFields',
    title: 'Merchant Defined Data',
    prefix: 'Merchant-DefinedDataFields',
    // The field names already say "merchant defined data": bare field names as columns.
    columnPrefix: '',
    fields: Array.from({ length: 20 }, (_, i) =>
      f(`MerchantDefinedData_field${i + 1}`, 'text', 'merchant-usable storage field', {
        aliases: [`merchantDefinedData_field${i + 1}`, `merchant_defined_data${i + 1}`],
      }),
    ),
  },
  {
    id: 'LifeCycleManagementEvent',
    title: 'Network Token Life-Cycle Management (LifeCycleManagementEvent)',
    prefix: 'LifeCycleManagementEvent',
    columnPrefix: 'lcm',
    fields: [
      f('LCMEventDateProcessed', 'timestamptz', 'date fully processed'),
      f('LCMEventStatus', 'text', 'processing status'),
      f('LCMEventStatusText', 'text', 'free text on the processing'),
      f('LCMEventType', 'text', 'type of event applied'),
      f('LCMEventUniqueID'),
    ],
  },
  {
    id: 'NetworkToken',
    title: 'Network Token Life-Cycle Management (NetworkToken)',
    prefix: 'NetworkToken',
    fields: [
      // Expiry dates are card-style (month/year); their format is not documented: text.
      f('CardExpiryDate'),
      f('CardSuffix', 'text', 'last four digits of card'),
      f('PAR', 'text', 'unique reference of the underlying payment account'),
      f('TokenExpiryDate'),
      f('TokenModifiedDate', 'timestamptz'),
      f('TokenRequestorID', 'text', 'wallet the token belongs to'),
      f('TokenService', 'text', 'token service that provisioned the token'),
      f('TokenState'),
      f('TokenSuffix', 'text', 'last four digits of the token'),
      f('TokenUniqueID'),
    ],
  },
  {
    id: 'TMSToken',
    title: 'Network Token Life-Cycle Management (TMSToken)',
    prefix: 'TMSToken',
    fields: [
      f('Creator', 'text', 'organization or merchant ID that created the token'),
      f('InstrumentIdentifierID'),
      f('InstrumentIdentifierState'),
      f('VaultID', 'text', 'vault the token belongs to'),
    ],
  },
  {
    id: 'PaymentData',
    title: 'Payment Data',
    columnPrefix: '',
    provenance: EXTENSION_PROVENANCE,
    fields: [
      f('Amount', 'numeric', undefined, {
        aliases: ['amount', 'Request/Amount'],
        provenance: EXTENSION_PROVENANCE,
      }),
      f('CurrencyCode', 'text', undefined, {
        scmp: 'currency',
        aliases: ['currency', 'currency_code', 'Request/CurrencyCode'],
        provenance: EXTENSION_PROVENANCE,
      }),
      f('PaymentMethod', 'text', undefined, {
        aliases: ['payment_method', 'payment_type', 'Request/PaymentMethod'],
        provenance: EXTENSION_PROVENANCE,
      }),
      f('TransactionType', 'text', undefined, {
        aliases: ['transaction_type'],
        provenance: EXTENSION_PROVENANCE,
      }),
    ],
  },
  {
    id: 'Request',
    title: 'Request',
    columnPrefix: '',
    provenance: EXTENSION_PROVENANCE,
    fields: [
      f('RequestID', 'text', undefined, {
        aliases: ['request_id', 'Request@RequestID'],
        provenance: EXTENSION_PROVENANCE,
      }),
      f('TransactionDate', 'timestamptz', undefined, {
        aliases: ['transaction_date'],
        provenance: EXTENSION_PROVENANCE,
      }),
      f('MerchantID', 'text', undefined, { aliases: ['merchant_id'], provenance: EXTENSION_PROVENANCE }),
      f('MerchantReferenceNumber', 'text', undefined, {
        scmp: 'merchant_ref_number',
        aliases: ['merchant_ref_number', 'Request@MerchantReferenceNumber'],
        provenance: EXTENSION_PROVENANCE,
      }),
      f('TransactionReferenceNumber', 'text', undefined, {
        scmp: 'trans_ref_no',
        aliases: ['trans_ref_no', 'TransactionReferenceNumber', 'Request/TransactionReferenceNumber'],
        provenance: EXTENSION_PROVENANCE,
      }),
    ],
  },
];
