/**
 * The field catalog as data: the seed's catalog ("Field catalog" in reporting-api-spec.md), completed
 * from CyberSource's Reporting User Guide (Request, Payment Data, Application, Bill To, Payment
 * Method, Line Item, Merchant Defined Data and Billable Transactions fields, with the SOAPI and SCMP
 * values the pages give per field), and the fields and column names of real report files (the
 * Transaction Detail XML, the Classic CSV files), each with its provenance.
 *
 * Group ids (the `Group` in `Group.Field`) are the group's stated prefix where a source gives one
 * (`prefix`), else the group title in PascalCase (an invented prefix, flagged in subscriptions). Field names keep the spec's own spelling (`ResolvedToIndicato`,
 * `MerchantDefinedData_field1`). Descriptions are the spec's words, else those of CyberSource's
 * Reporting User Guide and REST Reporting field pages, the Simple Order API field reference and the
 * SDK's model docs; a few follow only from the field's name and group (marked where they are). The
 * fields no source describes and whose name leaves the meaning open stay undefined.
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
  /** The SCMP value exactly as the documentation lists it, when it is not usable as `scmp`
   *  (a per-item template, a typo, or a name another field's header already means). */
  documentedScmp?: string;
  /** Other names seen in real files (CSV headers, XML paths such as `Request/Amount`). */
  aliases?: readonly string[];
  /** Where a field outside the spec's catalog comes from. */
  provenance?: string;
  /** Warehouse column when the naming rule would give an SQL keyword. */
  column?: string;
}

export interface GroupSpec {
  /** The `Group` of `Group.Field`. */
  id: string;
  /** The spec's title of the group. */
  title: string;
  /** The `Group.` prefix a source states for the group (the seed, a CyberSource page or the SDK's
   *  examples), if any; groups without one carry an invented prefix. */
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

const TDR_PROVENANCE =
  'Real Transaction Detail XML (tdr_1_6, killbill/killbill-cybersource-plugin; samples/cybersource).';

/** XML paths of an ApplicationReplies/ApplicationReply child (or attribute, with `@`). */
function applicationReply(name: string, sep: '/' | '@' = '/'): string[] {
  return [`ApplicationReplies/ApplicationReply${sep}${name}`, `ApplicationReply${sep}${name}`];
}

/** XML paths of a LineItems/LineItem child (or attribute, with `@`). */
function lineItem(name: string, sep: '/' | '@' = '/'): string[] {
  return [`LineItems/LineItem${sep}${name}`, `LineItem${sep}${name}`];
}

/** XML paths of a PaymentMethod/Card child. */
function card(name: string): string[] {
  return [`PaymentMethod/Card/${name}`, `Card/${name}`];
}

export const FIELD_GROUPS: readonly GroupSpec[] = [
  {
    id: 'Application',
    title: 'Application',
    // "Fields in this group prepend the field name with Application:" (Invoicing guide, Application Fields).
    prefix: 'Application',
    // Reporting User Guide, Application Fields: SOAPI values are the bare field names (Name, Rcode, …),
    // too generic to be headers, so they are kept as documented text; SCMP values are the ics_ names.
    // In Transaction Detail XML these are the children of ApplicationReplies/ApplicationReply.
    fields: [
      f('Name', 'text', 'name of application used', {
        documentedSoapi: 'Name',
        scmp: 'ics_applications',
        aliases: ['Request/Application', ...applicationReply('Name', '@')],
      }),
      f('Rcode', 'text', 'one-digit code showing whether the whole request succeeded', {
        documentedSoapi: 'Rcode',
        scmp: 'ics_rcode',
        aliases: applicationReply('RCode'),
      }),
      f('ReasonCode', 'text', 'numeric result of the overall request', {
        documentedSoapi: 'ReasonCode',
        aliases: applicationReply('ReasonCode'),
      }),
      f('Rflag', 'text', 'one-word result of the whole request', {
        documentedSoapi: 'Rflag',
        scmp: 'ics_rflag',
        aliases: applicationReply('RFlag'),
      }),
      f('Rmsg', 'text', 'message that explains the flag value', {
        documentedSoapi: 'Rmsg',
        scmp: 'ics_rmsg',
        aliases: applicationReply('RMsg'),
      }),
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
      f('Address', 'text', "bank's address"),
      f('BranchCode', 'text', "branch of the customer's bank when no IBAN is used"),
      f('City', 'text', 'city in which the bank is located'),
      f('Country', 'text', 'country in which the bank is located'),
      f('Name', 'text', "bank's name"),
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
      f('BatchID', 'text', 'batch in which the transaction was sent', { aliases: ['batch_id'] }),
      f('Status', 'text', 'status of batch file'),
      // Values not documented: kept as text rather than guessing a boolean spelling.
      f('SuccessFlag', 'text', 'whether batch processing succeeded'),
    ],
  },
  {
    id: 'BillableTransactions',
    title: 'Billable Transactions Detail',
    // Reporting User Guide, Billable Transactions Detail Fields (report 225). The page gives display
    // names ("Requested Amount", "Service Name"), no Group. prefix; the fields the other groups
    // already hold (Currency, Merchant Reference Number, Payment Processor, Request ID, Transaction
    // Date) resolve to those. Report-scoped aliases map the display names of this group.
    fields: [
      f('OrganizationID', 'text', 'transacting merchant ID assigned by Cybersource or Visa Acceptance'),
      f('ProductCode', 'text', 'Cybersource product code for the transaction'),
      f('ProductDescription', 'text', 'Cybersource product description for the transaction'),
      f('Quantity', 'numeric', 'quantity of the service requested'),
      f('RequestedAmount', 'numeric', 'amount used in the transaction'),
      f('ServiceName', 'text', 'name of the service requested, as identified in Cybersource'),
    ],
  },
  {
    id: 'BillTo',
    title: 'Bill To',
    prefix: 'BillTo',
    // Reporting User Guide, Bill To Fields (SOAPI and SCMP values). Phone, State and Zip: the page's
    // extract ends before them; their names are those of the Simple Order/SCMP field reference.
    fields: [
      f('Address1', 'text', "first line of the billing street address as in the card issuer's records", {
        length: 400,
        soapi: 'billTo_street1',
        scmp: 'bill_address1',
      }),
      // The page lists bill_address1 for Address2 as well; bill_address2 is the SCMP request field.
      f('Address2', 'text', 'additional address information', {
        length: 400,
        soapi: 'billTo_street2',
        scmp: 'bill_address2',
        documentedScmp: 'bill_address1',
      }),
      f('City', 'text', 'city of the billing address', {
        length: 50,
        soapi: 'billTo_city',
        scmp: 'bill_city',
      }),
      f('CompanyName', 'text', "name of the customer's company", {
        length: 60,
        soapi: 'billTo_company',
        scmp: 'company_name',
      }),
      f('CompanyTaxID', 'text', "tax identification number of the customer's company", {
        length: 9,
        soapi: 'billTo_companyTaxID',
        scmp: 'bill_company_tax_id',
      }),
      f('Country', 'text', 'country of the billing address', {
        length: 2,
        soapi: 'billTo_country',
        scmp: 'bill_country',
      }),
      f('CustomerID', 'text', "merchant's identifier for the customer", {
        length: 30,
        soapi: 'billTo_customerID',
        scmp: 'customer_account_id',
      }),
      f('Email', 'text', "customer's email address", {
        length: 1500,
        soapi: 'billTo_email',
        scmp: 'customer_email',
      }),
      f('FirstName', 'text', 'first name of the billed customer', {
        length: 60,
        soapi: 'billTo_firstName',
        scmp: 'customer_firstname',
      }),
      f('HostName', 'text', 'DNS-resolved host name from the IP address', {
        length: 255,
        soapi: 'billTo_hostname',
        scmp: 'customer_hostname',
      }),
      f('IPAddress', 'text', "customer's IP address", {
        length: 15,
        soapi: 'billTo_ipAddress',
        scmp: 'customer_ipaddress',
      }),
      f('LastName', 'text', 'last name of the billed customer', {
        length: 60,
        soapi: 'billTo_lastName',
        scmp: 'customer_lastname',
      }),
      f('MiddleName', 'text', 'middle name of the billed customer', {
        length: 60,
        soapi: 'billTo_middleName',
        scmp: 'customer_middlename',
      }),
      f('NameSuffix', 'text', 'suffix of the billed customer', {
        length: 60,
        soapi: 'billTo_suffix',
        scmp: 'customer_suffix',
      }),
      f(
        'PersonalID',
        'text',
        'supported only for one processor in Brazil; holds the national individual taxpayer number used for address verification',
      ),
      f('Phone', 'text', "customer's phone number", { soapi: 'billTo_phoneNumber', scmp: 'customer_phone' }),
      f('State', 'text', 'state or province', { soapi: 'billTo_state', scmp: 'bill_state' }),
      f('Title', 'text', 'title of the customer'),
      f('UserName'),
      f('Zip', 'text', 'postal code, five to nine digits', { soapi: 'billTo_postalCode', scmp: 'bill_zip' }),
    ],
  },
  {
    id: 'ChargebackAndRetrieval',
    title: 'Chargeback and Retrieval',
    columnPrefix: 'chargeback',
    fields: [
      f('AdjustmentAmount', 'numeric', 'amount of the chargeback adjustment'),
      f('AdjustmentCurrency', 'text', 'currency of the chargeback adjustment'),
      f('AdjustmentARN', 'text', 'association reference number'),
      f(
        'CaseIdentifier',
        'text',
        'numeric identifier of a unique chargeback, representment or other exception',
      ),
      f('CaseNumber', 'text', 'processor-assigned'),
      f('CaseTime', 'timestamptz', 'date case opened'),
      f('CaseType', 'text', 'description of the case type'),
      f('ChargebackAmount', 'numeric', 'amount of the chargeback'),
      f('ChargebackCurrency', 'text', 'chargeback currency code'),
      f('ChargebackMessage', 'text', "issuer's explanation"),
      f('ChargebackReasonCode', 'text', 'association reason code'),
      f('ChargebackReasonCodeDescription', 'text', 'text description of the reason code'),
      f('ChargebackTime', 'timestamptz', 'date the issuing bank originated the chargeback'),
      f('DocumentIndicator', 'boolean', '`Y` or `N`, whether documents are associated'),
      f('FeeAmount', 'numeric', 'chargeback exception fee'),
      f('FeeCurrency', 'text', 'currency code of the chargeback exception fee'),
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
      f('BankTransitNumber', 'text', 'bank routing number, also called the transit number'),
      f('AccountEncoderID', 'text', 'bank that provided the encoded account number'),
      f('SecCode', 'text', 'authorization method used'),
    ],
  },
  {
    id: 'Conversion',
    title: 'Conversion',
    fields: [
      // ConversionDate and ReviewerComments have no documented definition: described from their names.
      f('ConversionDate', 'timestamptz', 'date of the conversion'),
      f('NewDecision', 'text', "reviewer's evaluation result"),
      f('OriginalDecision', 'text', "order profile's evaluation result"),
      f('Profile', 'text', 'order profile used'),
      f('Reviewer', 'text', 'person who evaluated the order originally marked for review'),
      f('ReviewerComments', 'text', "reviewer's comments"),
      f('Queue', 'text', 'review queue originally assigned'),
    ],
  },
  {
    id: 'Deposit',
    title: 'Deposit',
    fields: [
      f('Amount', 'numeric', 'amount of the deposit'),
      f('Category', 'text', 'category of the deposit'),
      f('Currency', 'text', 'currency code'),
      f('ExchangeRate', 'numeric', 'decimal point, up to 4 decimal places'),
      f('ExchangeRateDescription', 'text', 'from funding bank'),
      f('Identifier', 'text', 'unique reference number of the deposit'),
      f('MerchantBankAcctLast4', 'text', 'all but last 4 digits masked'),
      f('MerchantBankAcctName', 'text', 'name used on the bank account'),
      f('MerchantBankCode', 'text', 'routing number'),
      f('MerchantBankCountry', 'text', 'two-character ISO country code'),
      f('MerchantBankName', 'text', "bank's name"),
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
    fields: [
      f('DeviceID', 'text', 'value created by the client software that uniquely identifies the POS device'),
    ],
  },
  {
    id: 'Event',
    title: 'Event',
    fields: [
      f('Amount', 'numeric', 'amount for the event'),
      f('CurrencyCode', 'text', 'currency code for the event'),
      f('Event', 'text', 'type of event for the transaction'),
      f('EventDate', 'timestamptz', 'date in GMT; can be null for some event types such as Declined'),
      f(
        'ProcessorMessage',
        'text',
        'additional information from the processor about the event, such as an error message',
      ),
    ],
  },
  {
    id: 'Exception',
    title: 'Exception',
    fields: [
      f('Action', 'text', 'brief description of the action'),
      f('ClientID', 'text', 'ID of the client'),
      f('ProviderExceptionID', 'text', 'exception ID assigned by the service'),
      f('DccLookupStatus', 'text', 'DCC lookup status of the transaction'),
      f('DccExchangeRate', 'numeric', 'DCC exchange rate of the transaction'),
      f('DccMarginRate', 'numeric', 'DCC margin rate of the transaction'),
      f('ExceptionAmount', 'numeric', 'amount specified in the exception'),
      f('ExceptionAmountCurrency', 'text', 'ISO 4217:2008 alpha-3'),
      f('ExceptionCategory', 'text', 'type of exception'),
      f('ExceptionDate', 'timestamptz', 'date of the exception'),
      f('ExceptionDescription', 'text', 'description of the exception'),
      f('ExceptionDeviceHardwareRevision', 'text', 'hardware revision number of the device'),
      f('ExceptionDeviceID', 'text', 'ID of the device'),
      f('ExceptionDeviceOS', 'text', 'operating system of the device'),
      f('ExceptionDeviceOSVersion', 'text', 'operating system version of the device'),
      f('ExceptionDeviceTerminalID', 'text', 'terminal ID of the device'),
      f('ExceptionMessage', 'text', 'message describing the exception'),
      f('ExceptionReasonCode', 'text', 'same reason code as in the response or receipt'),
      f('ExceptionReasonDescription', 'text', 'description of the exception reason'),
      f('ExceptionStatus', 'text', 'current status of the transaction'),
      f('ExceptionStatusCode', 'text', 'status code of the exception'),
      f('ExceptionType', 'text', 'type of exception'),
      f('FinancialStatus', 'text', 'financial status of the transaction'),
      f('LastActionDate', 'timestamptz', 'date of the last action on the transaction'),
      f('LocalCurrencyCode', 'text', 'local currency code'),
      f('NextActionDate', 'timestamptz', 'date of the next action on the transaction'),
      f('OriginalTransactionSubmissionDate', 'timestamptz', 'date on which the transaction was submitted'),
      f('PartnerMerchantID', 'text', 'merchant ID of the partner'),
      f('PartnerMerchantName', 'text', 'merchant name of the partner'),
      f('PaymentNumber', 'text', 'payment number'),
      f('ProcessorCaseID', 'text', 'processor-assigned case number'),
      f('ProcessorResponseCode', 'text', 'code returned by the processor for the exception'),
      f('ReasonCode', 'text', 'reason code for the exception'),
      f('RetryCount', 'integer', 'payments pending in retry mode'),
      f('SchemeOperator', 'text', 'scheme operator'),
      f('SDKVersion'),
      f('SettlementProcessor', 'text', 'name of the settlement processor'),
      f('StorageMechanism'),
    ],
  },
  {
    id: 'Fee',
    title: 'Fee',
    fields: [
      f('AssessmentAmount', 'numeric', 'amount of the assessment'),
      f('AssessmentCurrency', 'text', 'currency of the assessment'),
      f('BillingCycle', 'text', '`daily`, `weekly`, `monthly`', { values: ['daily', 'weekly', 'monthly'] }),
      f('BillingType', 'text', '`discount`, `interchangePlus`, `serviceFee`, `other`', {
        values: ['discount', 'interchangePlus', 'serviceFee', 'other'],
      }),
      f('ClearedInterchangeLevel', 'text', 'clearing level code'),
      f('DiscountAmount', 'numeric', 'discount rate times transaction amount, four decimal points'),
      f('DiscountCurrency', 'text', 'currency of the discount'),
      f('DiscountRate', 'numeric', 'discount rate'),
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
      f(
        'InterchangeAmount',
        'numeric',
        'final amount of the transaction after the interchange rates are applied',
      ),
      f('InterchangeCurrency', 'text', 'ISO currency code of the clearing rate'),
      f('InterchangeRate', 'numeric', 'interchange rate for the transaction'),
      f('PerItemFeeAmount', 'numeric', 'fee for a single item'),
      f('PerItemFeeCurrency', 'text', 'currency of the single-item fee'),
      f('PricedInterchangeLevel', 'numeric', 'flat rate assigned at account setup, four decimal points'),
      f('ServiceFeeAmount', 'numeric', 'amount of the service fee for the transaction'),
      f('ServiceFeeAmountCcy', 'text', 'currency of the service fee'),
      f('ServiceFeeFixedAmount', 'numeric', 'amount of the fixed service fee for the transaction'),
      f('ServiceFeeFixedAmountCcy', 'text', 'currency of the fixed service fee'),
      f('ServiceFeeRate', 'numeric', 'percentage'),
      f('SettlementAmount', 'numeric', 'amount of the settlement'),
      f('SettlementCurrency', 'text', 'currency of the settlement'),
      f('SettlementTime', 'timestamptz', 'time the settlement was processed'),
      f('SettlementTimeZone', 'text', 'time zone of the settlement'),
      f('SourceDescriptor', 'text', 'source descriptor for the transaction'),
      f('TotalFeeAmount', 'numeric', 'all fee transactions in the date range'),
      f('TotalFeeCurrency', 'text', 'currency of all fee transactions in the date range'),
    ],
  },
  {
    id: 'FeeSummary',
    title: 'Fee Summary',
    // No page describes these fields: the descriptions follow from the names alone; Count (a count of
    // what?) stays undescribed.
    fields: [
      f('CardType', 'text', 'card type the fees are summarized for'),
      f('Count', 'integer'),
      f('FeeDescription', 'text', 'description of the fee'),
      f('FeeType', 'text', 'type of the fee'),
      f('FundingCurrency', 'text', 'funding currency'),
      f('PaymentMethod', 'text', 'payment method the fees are summarized for'),
      f('PercentageFee', 'numeric', 'percentage fee'),
      f('PerItemFee', 'numeric', 'per-item fee'),
      f('TotalFeeAmount', 'numeric', 'total fee amount'),
      f('TransactionAmount', 'numeric', 'transaction amount'),
      f('TransactionType', 'text', 'transaction type the fees are summarized for'),
    ],
  },
  {
    id: 'Funding',
    title: 'Funding',
    prefix: 'Funding',
    fields: [
      f('CurrencyExchangeDescription', 'text', 'exchange rate description from the processor'),
      f('CurrencyExchangeRate', 'numeric', 'transaction currency to funding currency'),
      f('FeeAmount', 'numeric', 'fee for the transaction'),
      f('FeeCurrency', 'text', 'ISO 4217:2008 alpha-3'),
      f('FeeDescription', 'text', 'fee description from the processor'),
      f('FundingAccountSuffix', 'text', 'last 4 digits'),
      f('FundingAmount', 'numeric', 'funding amount of the transaction'),
      f('FundingBankCode', 'text', 'bank code of the funding bank'),
      f('FundingBankCountry', 'text', 'ISO 3166-1 alpha-3'),
      f('FundingBankName', 'text', 'name of the bank funding the transaction'),
      f('FundingCurrency', 'text', 'ISO 4217:2008 alpha-3'),
      f('FundingDate', 'date', 'funding date of the transaction'),
      f('FundingIdentificationNumber', 'text', 'identification of the funding of the transaction'),
      f('FundingProcessorMessage', 'text', 'funding response message from the processor'),
      f('FundingTransferMessage', 'text', 'funding transfer message from the processor'),
      f('ProcessorResponseCode', 'text', 'funding response code from the processor'),
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
      f('BillingGroupDescription', 'text', 'description of the billing group'),
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
      f('AuthorizationCode', 'text', 'transaction authorization code'),
      f('CardSuffix', 'text', 'last four digits'),
      f('Currency', 'text', 'currency used in the transaction'),
      f('CustomerFirstName', 'text', 'customer first name'),
      f('CustomerLastName', 'text', 'customer last name'),
      f('Date', 'date', 'date of the transaction'),
      f('Gateway', 'text', 'name of the gateway used to process the transaction'),
      f('JPOInstallmentMethod', 'text', 'number of installments, Japanese payment method only'),
      f('JPOPaymentMethod', 'text', 'type of Japanese payment method used'),
      f('MerchantID', 'text', 'gateway merchant identifier'),
      f('MerchantReferenceNumber', 'text', 'merchant order reference or tracking number'),
      f('NetworkTokenTransType', 'text', 'network token transaction type'),
      f('PaymentMethod', 'text', 'method of payment'),
      f('RequestID', 'text', 'client request identifier'),
      f('SubscriptionID', 'text', 'customer profile identifier'),
      // Time of day next to JP.Date; its format is not documented, so it stays text.
      f('Time', 'text', 'time of the transaction'),
      f('TransactionReferenceNumber', 'text', 'reconciles gateway reports with processor reports'),
      f('TransactionType', 'text', 'type of transaction'),
    ],
  },
  {
    id: 'LineItems',
    title: 'Line Item',
    prefix: 'LineItems',
    // Reporting User Guide, Line Item Fields. The documented SOAPI/SCMP values are per item
    // (item_#_productSKU, offer#_merchant_product_sku), kept as documented text. In Transaction
    // Detail XML each item is a LineItems/LineItem element with a Number attribute.
    fields: [
      f('FulfillmentType', 'text', 'information about the product code used for the line item', {
        length: 2,
        documentedScmp: 'offer#_fullfillment_type',
        aliases: lineItem('FulfillmentType'),
      }),
      f('InvoiceNumber', 'text', 'invoice number for the order', {
        length: 30,
        documentedSoapi: 'item_#_invoiceNumber',
        documentedScmp: 'offer#_invoice_number',
        aliases: lineItem('InvoiceNumber'),
      }),
      f('MerchantProductSku', 'text', 'identification code for the product', {
        length: 255,
        documentedSoapi: 'item_#_productSKU',
        documentedScmp: 'offer#_merchant_product_sku',
        aliases: lineItem('MerchantProductSku'),
      }),
      f('Number', 'integer', 'number of the line item in the order', { aliases: lineItem('Number', '@') }),
      f('ProductCode', 'text', 'product category: electronic, handling, physical, service, shipping', {
        length: 255,
        documentedSoapi: 'item_#_productCode',
        documentedScmp: 'offer#_product_code',
        aliases: lineItem('ProductCode'),
      }),
      f('ProductName', 'text', 'name of the product', {
        length: 255,
        documentedSoapi: 'item_#_productName',
        documentedScmp: 'offer#_product_name',
        aliases: lineItem('ProductName'),
      }),
      f('Quantity', 'integer', 'quantity of the product', {
        documentedSoapi: 'item_#_quantity',
        documentedScmp: 'offer#_quantity',
        aliases: lineItem('Quantity'),
      }),
      f('TaxAmount', 'numeric', 'total tax to apply to the product', {
        documentedSoapi: 'item_#_taxAmount',
        documentedScmp: 'offer#_tax_amount',
        aliases: lineItem('TaxAmount'),
      }),
      f('UnitPrice', 'numeric', 'per-item price of the product', {
        documentedSoapi: 'item_#_unitPrice',
        documentedScmp: 'offer#_amount',
        aliases: lineItem('UnitPrice'),
      }),
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
        // Reporting User Guide, Merchant Defined Data Fields: SOAPI and SCMP values.
        soapi: `merchantDefinedData_field${i + 1}`,
        scmp: `merchant_defined_data${i + 1}`,
        // Classic Payment Batch Detail columns (sul-dlss 2025 file: merchant_data_1..5) and the
        // Transaction Detail XML element MerchantDefinedData/fieldN.
        aliases: [`merchant_data_${i + 1}`, `MerchantDefinedData/field${i + 1}`],
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
      f('LCMEventUniqueID', 'text', 'unique identifier of the life-cycle management event applied'),
    ],
  },
  {
    id: 'NetworkToken',
    title: 'Network Token Life-Cycle Management (NetworkToken)',
    prefix: 'NetworkToken',
    fields: [
      // Expiry dates are card-style (month/year); their format is not documented: text.
      f('CardExpiryDate', 'text', 'expiration date of the card'),
      f('CardSuffix', 'text', 'last four digits of card'),
      f('PAR', 'text', 'unique reference of the underlying payment account'),
      f('TokenExpiryDate', 'text', 'expiration date of the network token'),
      f('TokenModifiedDate', 'timestamptz', 'date the network token was modified'),
      f('TokenRequestorID', 'text', 'wallet the token belongs to'),
      f('TokenService', 'text', 'token service that provisioned the token'),
      f('TokenState', 'text', 'state of the network token'),
      f('TokenSuffix', 'text', 'last four digits of the token'),
      f('TokenUniqueID', 'text', 'unique identifier of the network token'),
    ],
  },
  {
    id: 'TMSToken',
    title: 'Network Token Life-Cycle Management (TMSToken)',
    prefix: 'TMSToken',
    fields: [
      f('Creator', 'text', 'organization or merchant ID that created the token'),
      f('InstrumentIdentifierID', 'text', 'unique identifier of the instrument identifier'),
      f('InstrumentIdentifierState', 'text', 'current state of the instrument identifier token'),
      f('VaultID', 'text', 'vault the token belongs to'),
    ],
  },
  {
    id: 'PaymentData',
    title: 'Payment Data',
    // "Field names in this group are prepended with the text PaymentData:" (REST Reporting guide).
    prefix: 'PaymentData',
    columnPrefix: '',
    // Reporting User Guide, Payment Data Fields: field, definition, type and SCMP value. Fields the
    // real Transaction Detail XML carries beyond that extract (PaymentRequestID, PaymentProcessor,
    // TotalTaxAmount, GrandTotal) and the Classic file columns are marked with their provenance.
    fields: [
      f('AAV_CAVV', 'text', 'optional authentication data received after the customer is authenticated', {
        length: 3,
        scmp: 'cavv',
      }),
      f('ACHVerificationResult', 'text', 'raw result of the ACH verification service', {
        scmp: 'ecp_debit_verification_code_raw',
      }),
      f('ACHVerificationResultMapped', 'text', 'mapped result of the ACH verification service', {
        scmp: 'ecp_debit_verification_code',
      }),
      f('AcquirerMerchantID', 'text', 'merchant ID of the acquirer'),
      f('AcquirerMerchantNumber', 'text', 'identifier assigned by the acquirer, printed on the receipt', {
        length: 15,
      }),
      f('Amount', 'numeric', 'grand total for the order', {
        length: 19,
        scmp: 'grand_total_amount',
        aliases: ['amount', 'Request/Amount'],
      }),
      f('AuthIndicator', 'text', 'authorization indicator for the transaction'),
      f('AuthorizationCode', 'text', 'authorization code for the payment', { length: 15, scmp: 'auth_code' }),
      f('AuthorizationType', 'text', 'authorization type of the payment', { length: 1, scmp: 'auth_type' }),
      f('AuthReversalAmount', 'numeric', 'authorization reversal amount'),
      f('AuthReversalResult', 'text', 'result of the authorization reversal'),
      f('AVSResult', 'text', 'raw Address Verification Service result for the payment', {
        length: 10,
        scmp: 'auth_avs_raw',
      }),
      f('AVSResultMapped', 'text', 'Address Verification Service result for the payment', {
        length: 5,
        scmp: 'auth_auth_avs',
      }),
      f('BalanceAmount', 'numeric', 'remaining balance on the account', {
        length: 19,
        scmp: 'account_balance',
      }),
      f('BalanceCurrencyCode', 'text', 'currency of the remaining balance on the account', {
        length: 3,
        scmp: 'account_balance_currency',
      }),
      f('BankAccountName', 'text', 'name of the account holder', { length: 90, scmp: 'bank_account_name' }),
      f('BankCode', 'text', 'bank code or sort code of the account, when a bank account was used', {
        length: 15,
        scmp: 'bank_code',
      }),
      f('BatchFilesID'),
      f('BinNumber', 'text', 'bank identification number (AccountPrefix in the Business Center)', {
        length: 8,
      }),
      f('CardCategory', 'text', 'type of card used in the transaction', { length: 10 }),
      f('CardCategoryCode', 'text', 'category code of the card used in the transaction'),
      f('CardPresent', 'text', 'whether the card was present at the time of the transaction', { length: 1 }),
      f('CardVerificationMethod', 'text', 'card verification method used'),
      f('CurrencyCode', 'text', 'currency code for the payment', {
        length: 3,
        scmp: 'currency',
        aliases: ['currency_code', 'Request/CurrencyCode'],
      }),
      f('CustomerAccountID'),
      f('CVResult', 'text', 'CVN result code', { scmp: 'auth_cv_result' }),
      // The page writes the SCMP value dcc_indcator (sic): accepted as written.
      f('DCCIndicator', 'text', 'whether Dynamic Currency Conversion is used for the transaction', {
        length: 1,
        scmp: 'dcc_indcator',
      }),
      f('DomesticRouting', 'text', 'whether the transaction was routed domestically'),
      f('ECI', 'text', 'optional information received when the Payer Authentication service is used'),
      // eCommerceIndicator is listed in this group and in Request; Request.eCommerceIndicator holds it.
      f('EMVRequestFallback', 'text', 'EMV request fallback indicator'),
      f('EVEmail', 'text', "mapped Electronic Verification response code for the customer's email address"),
      f('EVEmailRaw', 'text', "raw Electronic Verification response code for the customer's email address"),
      f('GrandTotal', 'numeric', 'grand total of the payment', { provenance: TDR_PROVENANCE }),
      f('PaymentProcessor', 'text', 'payment processor of the transaction', {
        aliases: ['payment_processor'],
        provenance: `${TDR_PROVENANCE} The Classic Payment Submission Detail column payment_processor.`,
      }),
      f('PaymentRequestID', 'text', 'request id of the payment', { provenance: TDR_PROVENANCE }),
      f('TotalTaxAmount', 'numeric', 'total tax amount of the payment', {
        scmp: 'total_tax_amount',
        soapi: 'purchaseTotals_taxAmount',
        provenance: TDR_PROVENANCE,
      }),
      f('PaymentMethod', 'text', 'payment type (card brand or payment method) of the Classic files', {
        aliases: ['payment_method', 'payment_type', 'Request/PaymentMethod'],
        provenance: EXTENSION_PROVENANCE,
      }),
      // The Request Fields page lists a TransactionType too (no definition): the same column.
      f('TransactionType', 'text', 'transaction type', {
        aliases: ['transaction_type', 'Request.TransactionType'],
        provenance: EXTENSION_PROVENANCE,
      }),
    ],
  },
  {
    id: 'PaymentMethod',
    title: 'Payment Method',
    // "Fields in this group prepend the field name with PaymentMethod:" (Invoicing guide); values
    // from the Reporting User Guide, Payment Method Fields (SOAPI and SCMP values). The card fields
    // are the children of PaymentMethod/Card in Transaction Detail XML.
    prefix: 'PaymentMethod',
    fields: [
      f(
        'AccountEncoderID',
        'text',
        "identifier of the bank that provided the customer's encoded account number",
        { soapi: 'AccountEncoderID', scmp: 'account_encoder_id' },
      ),
      f('AccountSuffix', 'text', "last four digits of the customer's payment account number", {
        length: 4,
        soapi: 'card_suffix',
        scmp: 'customer_cc_number',
        aliases: card('AccountSuffix'),
      }),
      f('AccountType', 'text', 'bank account type: checking, savings, corporate checking or general ledger', {
        soapi: 'AccountType',
        scmp: 'ecp_account_type',
      }),
      // bank_account_name and bank_code are also Payment Data's SCMP values; those headers mean
      // PaymentData.BankAccountName and PaymentData.BankCode.
      f('BankAccountName', 'text', "bank's account name", {
        length: 90,
        documentedSoapi: 'BankAccountName',
        documentedScmp: 'bank_account_name',
      }),
      f('BankCheckDigit', 'text', "code used to validate the customer's account number", {
        soapi: 'BankCheckDigit',
        scmp: 'bank_check_digit',
      }),
      f('BankCity', 'text', "city in which the customer's bank is located", {
        soapi: 'BankCity',
        scmp: 'bank_city',
      }),
      f('BankCode', 'text', "bank's code, used in some countries when no IBAN is used", {
        length: 15,
        soapi: 'BankInfo_bankCode',
        documentedScmp: 'bank_code',
      }),
      f('BankCountry', 'text', "country in which the customer's bank is located", {
        soapi: 'BankCountry',
        scmp: 'bank_country',
      }),
      f('BankNumber', 'text', undefined, { soapi: 'BankNumber', scmp: 'bank_number' }),
      f('BankTransitNumber', 'text', 'bank routing number, also called the transit number', {
        soapi: 'BankTransitNumber',
        scmp: 'ecp_rdfi',
      }),
      f('BoletoBarCodeNumber', 'text', 'numeric representation of the boleto barcode', {
        length: 50,
        scmp: 'boleto_payment_bar_code_number',
      }),
      f('BoletoNumber', 'text', 'Boleto Bancário payment number', {
        length: 50,
        soapi: 'boletoNumber',
        scmp: 'boleto_payment_boleto_number',
      }),
      f('BranchCode', 'text', "code that identifies the branch of the customer's bank", {
        soapi: 'BranchCode',
        scmp: 'branch_code',
      }),
      f('CardCategory', 'text', 'type of card used', {
        length: 10,
        soapi: 'cardCategory',
        scmp: 'auth_card_category',
      }),
      f('CardCategoryCode', 'text', 'code of the card type used', {
        length: 10,
        scmp: 'auth_card_category_code',
      }),
      f('CardType', 'text', 'type of card to authorize', {
        length: 5,
        soapi: 'card_cardType',
        scmp: 'card_type',
        aliases: card('CardType'),
      }),
      f('CheckNumber', 'text', 'check number', {
        length: 10,
        soapi: 'check_checkNumber',
        scmp: 'ecp_check_no',
      }),
      // Card-style month and year ("12", "2009"): kept as written.
      f('ExpirationMonth', 'text', 'two-digit month in which the credit card expires', {
        soapi: 'card_expirationMonth',
        scmp: 'customer_cc_expmo',
        aliases: card('ExpirationMonth'),
      }),
      f('ExpirationYear', 'text', 'four-digit year in which the credit card expires', {
        soapi: 'card_expirationYear',
        scmp: 'customer_cc_expyr',
        aliases: card('ExpirationYear'),
      }),
      f(
        'IssueNumber',
        'text',
        'number of times a Maestro (UK Domestic) card has been issued to the account holder',
        {
          soapi: 'card_issueNumber',
          scmp: 'customer_cc_issue_number',
          aliases: card('IssueNumber'),
        },
      ),
      f('MandateId', 'text', 'identification reference for the direct debit mandate'),
      f('MandateType', 'text', 'type of mandate'),
      f('SignatureDate', 'text', 'date of signature'),
      f('StartMonth', 'text', 'month of the start of the Maestro (UK Domestic) card validity period', {
        soapi: 'card_startMonth',
        scmp: 'customer_cc_startmo',
        aliases: card('StartMonth'),
      }),
      f('StartYear', 'text', 'year of the start of the Maestro (UK Domestic) card validity period', {
        soapi: 'card_startYear',
        scmp: 'customer_cc_startyr',
        aliases: card('StartYear'),
      }),
      f('WalletType', 'text', 'type of wallet'),
    ],
  },
  {
    id: 'Request',
    title: 'Request',
    // The group of the SDK's and the seed's subscription examples (Request.RequestID, …).
    prefix: 'Request',
    columnPrefix: '',
    // Reporting User Guide, Request Fields (SOAPI and SCMP values). The Transaction Detail XML carries
    // these as attributes of Request (RequestDate is the SOAPI value of TransactionDate).
    fields: [
      f('RequestID', 'text', 'identifier of the transaction request', {
        length: 26,
        soapi: 'RequestID',
        scmp: 'request_id',
        aliases: ['Request@RequestID'],
      }),
      f('TransactionDate', 'timestamptz', 'date on which the transaction took place', {
        soapi: 'RequestDate',
        scmp: 'transaction_date',
        aliases: ['Request@RequestDate', 'Request@TransactionDate'],
      }),
      f('MerchantID', 'text', 'merchant ID used for the transaction', {
        length: 30,
        aliases: ['merchant_id'],
      }),
      f('MerchantReferenceNumber', 'text', "merchant's order reference or tracking number", {
        soapi: 'MerchantReferenceNumber',
        scmp: 'merchant_ref_number',
        aliases: ['Request@MerchantReferenceNumber'],
      }),
      // The page names it TransactionRefNumber; SOAPI value and XML attribute: TransactionReferenceNumber.
      f('TransactionReferenceNumber', 'text', 'transaction identifier (reconciliation id)', {
        soapi: 'TransactionReferenceNumber',
        scmp: 'trans_ref_no',
        aliases: [
          'Request.TransactionRefNumber',
          'TransactionRefNumber',
          'Request/TransactionReferenceNumber',
          'Request@TransactionReferenceNumber',
        ],
      }),
      f('Comments', 'text', 'optional comments about the subscription or customer profile', {
        length: 255,
        soapi: 'Comments',
        scmp: 'comments',
      }),
      f('eCommerceIndicator', 'text', 'transaction type', {
        scmp: 'e_commerce_indicator',
        aliases: ['PaymentData.eCommerceIndicator'],
      }),
      // The standard Transaction Request report lists Request.LocalizedDate; the Request Fields page
      // writes LocalizedRequestDate. Its zone and format are not documented, so it stays text.
      f('LocalizedRequestDate', 'text', 'localized request date', {
        aliases: ['Request.LocalizedDate', 'LocalizedDate', 'Request.LocalizedrequestDate'],
      }),
      f('PartnerOriginalTransactionID', 'text', 'partner original transaction identifier', {
        scmp: 'partner_original_transction_id',
      }),
      f('PartnerSDKVersion', 'text', 'partner SDK version', {
        soapi: 'PartnerSDKVersion',
        scmp: 'partner_sdk_version',
      }),
      f('Source', 'text', 'source of the request', {
        soapi: 'Source',
        scmp: 'source',
        aliases: ['Request@Source'],
      }),
      f('SubscriptionID', 'text', 'identifier of the customer profile', {
        length: 26,
        soapi: 'SubscriptionID',
        scmp: 'subscription_id',
        aliases: ['Request@SubscriptionID'],
      }),
      f('TerminalSerialNumber', 'text', 'terminal serial number assigned by the hardware manufacturer', {
        soapi: 'TerminalSerialNumber',
        scmp: 'terminal_serial_number',
      }),
      f('TransactionID', 'text', undefined, { soapi: 'TransactionId' }),
      // Column request_user: a column named user would be shadowed by SQL's USER in every query.
      f('User', 'text', 'information about a user', {
        length: 30,
        column: 'request_user',
        aliases: ['Request@User'],
      }),
      f('PredecessorRequestID', 'text', 'request id of the request this one follows up', {
        aliases: ['Request@PredecessorRequestID'],
        provenance: TDR_PROVENANCE,
      }),
      // Classic Payment Batch Detail column (sul-dlss 2025 file, e.g. 7ff7f3c7:cf238f9f:66a1dfd0);
      // its meaning is not documented.
      f('CompleteRoute', 'text', 'complete_route column of the Classic reports (undocumented)', {
        aliases: ['complete_route'],
        provenance:
          'Classic Payment Batch Detail column complete_route (sul-dlss/cybersource-rest-ruby, 2025).',
      }),
    ],
  },
  {
    id: 'ShipTo',
    title: 'Ship To',
    // Element ShipTo of Transaction Detail XML; the names are those of the Simple Order and SCMP
    // field reference (shipTo_street1 / ship_to_address1, …). No reporting page states the prefix.
    provenance: TDR_PROVENANCE,
    fields: [
      f('Address1', 'text', 'first line of the shipping address', {
        soapi: 'shipTo_street1',
        scmp: 'ship_to_address1',
      }),
      f('Address2', 'text', 'second line of the shipping address', {
        soapi: 'shipTo_street2',
        scmp: 'ship_to_address2',
      }),
      f('City', 'text', 'city of the shipping address', { soapi: 'shipTo_city', scmp: 'ship_to_city' }),
      f('CompanyName', 'text', "recipient's company name", {
        soapi: 'shipTo_company',
        scmp: 'ship_to_company_name',
      }),
      f('Country', 'text', 'country of the shipping address', {
        soapi: 'shipTo_country',
        scmp: 'ship_to_country',
      }),
      f('FirstName', 'text', 'first name of the recipient', {
        soapi: 'shipTo_firstName',
        scmp: 'ship_to_firstname',
      }),
      f('LastName', 'text', 'last name of the recipient', {
        soapi: 'shipTo_lastName',
        scmp: 'ship_to_lastname',
      }),
      f('Phone', 'text', "recipient's phone number", { soapi: 'shipTo_phoneNumber', scmp: 'ship_to_phone' }),
      f('State', 'text', 'state or province of the shipping address', {
        soapi: 'shipTo_state',
        scmp: 'ship_to_state',
      }),
      f('Zip', 'text', 'postal code of the shipping address', {
        soapi: 'shipTo_postalCode',
        scmp: 'ship_to_zip',
      }),
    ],
  },
];

/** Whether a CyberSource document (or the SDK's examples) states the group's `Group.` prefix. */
export function isDocumentedGroupPrefix(groupId: string): boolean {
  return FIELD_GROUPS.some((g) => g.id === groupId && g.prefix !== undefined);
}
