/**
 * CSV header names of report fields, as the simulator writes them: the simulator's own tables,
 * taken from CyberSource's documentation and real files, never from the product's catalog, so
 * that a naming mistake in the parser cannot hide behind the same mistake in the simulator.
 *
 * A field is identified by its `Group.Field` id (the form of `reportFields`). Three header styles:
 *  - SOAPI and SCMP (a custom report's `reportPreferences.fieldNameConvention`): the name the
 *    Reporting User Guide's field tables give in their "SOAPI Value" / "SCMP Value" columns
 *    ({@link DOCUMENTED_NAMES}); where the guide gives none, a rule: SOAPI = lower-camel group +
 *    `_` + lower-first field (`paymentData_transactionType`), SCMP = snake_case group + `_` +
 *    snake_case field (`payment_data_transaction_type`).
 *  - Classic (predefined Classic subscriptions, and any report without a convention): the
 *    columns of the real REST-era Classic files ({@link CLASSIC_HEADERS}), else the SCMP name.
 *
 * The naming rules below repeat the product's src/catalog/naming.ts on purpose: the package imports
 * nothing of the product, and the two sides must be written apart to check each other.
 */

export const FIELD_NAME_CONVENTIONS = ['SOAPI', 'SCMP'] as const;
export type FieldNameConvention = (typeof FIELD_NAME_CONVENTIONS)[number];

export const HEADER_STYLES = [...FIELD_NAME_CONVENTIONS, 'Classic'] as const;
export type HeaderStyle = (typeof HEADER_STYLES)[number];

const GUIDE =
  'https://developer.cybersource.com/library/documentation/dev_guides/reporting_and_reconciliation/Reporting_User/html/oxy_ex-1/topics/';

/** Pages of the Reporting User Guide the documented names come from. */
export const NAME_SOURCES = {
  paymentData: `${GUIDE}c_Payment_Data_Fields.html`,
  billTo: `${GUIDE}c_Bill_To_Fields.html`,
  request: `${GUIDE}c_Request_Fields.html`,
  application: `${GUIDE}c_Application_Fields.html`,
  merchantDefinedData: `${GUIDE}c_Merchant_Defined_Data_Fields.html`,
} as const;

export interface DocumentedName {
  /** The guide's "SOAPI Value", when it gives one. */
  soapi?: string;
  /** The guide's "SCMP Value", when it gives one. */
  scmp?: string;
  source: keyof typeof NAME_SOURCES;
}

const scmpOnly = (scmp: string): DocumentedName => ({ scmp, source: 'paymentData' });
const billTo = (soapi: string, scmp?: string): DocumentedName =>
  scmp === undefined ? { soapi, source: 'billTo' } : { soapi, scmp, source: 'billTo' };
const request = (soapi: string | undefined, scmp: string | undefined): DocumentedName => ({
  ...(soapi === undefined ? {} : { soapi }),
  ...(scmp === undefined ? {} : { scmp }),
  source: 'request',
});
const application = (soapi: string, scmp?: string): DocumentedName =>
  scmp === undefined ? { soapi, source: 'application' } : { soapi, scmp, source: 'application' };

/**
 * Names the Reporting User Guide gives, per field id, copied from its tables (typos included, e.g.
 * `dcc_indcator`, `partner_original_transction_id`: a report would carry what the service writes).
 * The Payment Data table has an SCMP column only. The Bill To table lists `bill_address1` for both
 * Address1 and Address2, an evident slip, so Address2 keeps the rule's SCMP name. The guide's
 * `TransactionRefNumber` row is the field the catalog calls `Request.TransactionReferenceNumber`.
 */
export const DOCUMENTED_NAMES: Readonly<Record<string, DocumentedName>> = {
  'PaymentData.AAV_CAVV': scmpOnly('cavv'),
  'PaymentData.ACHVerificationResult': scmpOnly('ecp_debit_verification_code_raw'),
  'PaymentData.ACHVerificationResultMapped': scmpOnly('ecp_debit_verification_code'),
  'PaymentData.Amount': scmpOnly('grand_total_amount'),
  'PaymentData.AuthorizationCode': scmpOnly('auth_code'),
  'PaymentData.AuthorizationType': scmpOnly('auth_type'),
  'PaymentData.AVSResult': scmpOnly('auth_avs_raw'),
  'PaymentData.AVSResultMapped': scmpOnly('auth_auth_avs'),
  'PaymentData.BalanceAmount': scmpOnly('account_balance'),
  'PaymentData.BalanceCurrencyCode': scmpOnly('account_balance_currency'),
  'PaymentData.BankAccountName': scmpOnly('bank_account_name'),
  'PaymentData.BankCode': scmpOnly('bank_code'),
  'PaymentData.CurrencyCode': scmpOnly('currency'),
  'PaymentData.CVResult': scmpOnly('auth_cv_result'),
  'PaymentData.DCCIndicator': scmpOnly('dcc_indcator'),
  'BillTo.Address1': billTo('billTo_street1', 'bill_address1'),
  'BillTo.Address2': billTo('billTo_street2'),
  'BillTo.City': billTo('billTo_city', 'bill_city'),
  'BillTo.CompanyName': billTo('billTo_company', 'company_name'),
  'BillTo.CompanyTaxID': billTo('billTo_companyTaxID', 'bill_company_tax_id'),
  'BillTo.Country': billTo('billTo_country', 'bill_country'),
  'BillTo.CustomerID': billTo('billTo_customerID', 'customer_account_id'),
  'BillTo.Email': billTo('billTo_email', 'customer_email'),
  'BillTo.FirstName': billTo('billTo_firstName', 'customer_firstname'),
  'BillTo.HostName': billTo('billTo_hostname', 'customer_hostname'),
  'BillTo.IPAddress': billTo('billTo_ipAddress', 'customer_ipaddress'),
  'BillTo.LastName': billTo('billTo_lastName', 'customer_lastname'),
  'BillTo.MiddleName': billTo('billTo_middleName', 'customer_middlename'),
  'BillTo.NameSuffix': billTo('billTo_suffix', 'customer_suffix'),
  'Request.Comments': request('Comments', 'comments'),
  'Request.eCommerceIndicator': request(undefined, 'e_commerce_indicator'),
  'Request.MerchantReferenceNumber': request('MerchantReferenceNumber', 'merchant_ref_number'),
  'Request.PartnerOriginalTransactionID': request(undefined, 'partner_original_transction_id'),
  'Request.PartnerSDKVersion': request('PartnerSDKVersion', 'partner_sdk_version'),
  'Request.RequestID': request('RequestID', 'request_id'),
  'Request.Source': request('Source', 'source'),
  'Request.SubscriptionID': request('SubscriptionID', 'subscription_id'),
  'Request.TerminalSerialNumber': request('TerminalSerialNumber', 'terminal_serial_number'),
  'Request.TransactionDate': request('RequestDate', 'transaction_date'),
  'Request.TransactionID': request('TransactionId', undefined),
  'Request.TransactionReferenceNumber': request('TransactionReferenceNumber', 'trans_ref_no'),
  'Application.Name': application('Name', 'ics_applications'),
  'Application.Rcode': application('Rcode', 'ics_rcode'),
  'Application.ReasonCode': application('ReasonCode'),
  'Application.Rflag': application('Rflag', 'ics_rflag'),
  'Application.Rmsg': application('Rmsg', 'ics_rmsg'),
  // The guide has one row for Field1 - Field20: `merchantDefinedData_field1` / `merchant_defined_data1`.
  ...Object.fromEntries(
    Array.from({ length: 20 }, (_, i) => [
      `Merchant-DefinedDataFields.MerchantDefinedData_field${i + 1}`,
      {
        soapi: `merchantDefinedData_field${i + 1}`,
        scmp: `merchant_defined_data${i + 1}`,
        source: 'merchantDefinedData',
      } satisfies DocumentedName,
    ]),
  ),
};

/**
 * Columns of the real Classic files: the REST-era PaymentBatchDetailReport_Daily_Classic
 * (sul-dlss fixture: `batch_id … transaction_date`, later `merchant_data_1..5`) and
 * PaymentSubmissionDetailReport_Daily_Classic (edX pipeline: the same columns and
 * `payment_processor`). Note the one CamelCase column, `TransactionReferenceNumber`.
 */
export const CLASSIC_HEADERS: Readonly<Record<string, string>> = {
  'Batch.BatchID': 'batch_id',
  'Request.MerchantID': 'merchant_id',
  'Batch.BatchDate': 'batch_date',
  'Request.RequestID': 'request_id',
  'Request.MerchantReferenceNumber': 'merchant_ref_number',
  'Request.TransactionReferenceNumber': 'TransactionReferenceNumber',
  'PaymentData.PaymentMethod': 'payment_type',
  'PaymentData.CurrencyCode': 'currency',
  'PaymentData.Amount': 'amount',
  'Application.Name': 'ics_applications',
  'Batch.Status': 'status',
  'Request.TransactionDate': 'transaction_date',
  'PaymentData.PaymentProcessor': 'payment_processor',
  ...Object.fromEntries(
    [1, 2, 3, 4, 5].map((n) => [
      `Merchant-DefinedDataFields.MerchantDefinedData_field${n}`,
      `merchant_data_${n}`,
    ]),
  ),
};

export function splitFieldId(id: string): { group: string; field: string } {
  const dot = id.indexOf('.');
  if (dot <= 0 || dot === id.length - 1) throw new Error(`Not a Group.Field id: ${id}`);
  return { group: id.slice(0, dot), field: id.slice(dot + 1) };
}

/** `RequestID` → `requestID`, `BillTo` → `billTo`. */
function lowerFirst(name: string): string {
  return name.length === 0 ? name : name[0]!.toLowerCase() + name.slice(1);
}

/** snake_case keeping acronyms together: `RequestID` → `request_id`, `AVSResult` → `avs_result`. */
export function snakeCase(name: string): string {
  return name
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/_+/g, '_')
    .replace(/^_|_$/g, '')
    .toLowerCase();
}

/** The rule's SOAPI name, for fields the guide names in no SOAPI column. */
export function ruleSoapiName(id: string): string {
  const { group, field } = splitFieldId(id);
  return `${lowerFirst(group.replace(/[^A-Za-z0-9]/g, ''))}_${lowerFirst(field)}`;
}

/** The rule's SCMP name, for fields the guide names in no SCMP column. */
export function ruleScmpName(id: string): string {
  const { group, field } = splitFieldId(id);
  return `${snakeCase(group)}_${snakeCase(field)}`;
}

/** The header of a field id in a style; a string that is not a `Group.Field` id is kept as is. */
export function headerName(id: string, style: HeaderStyle): string {
  if (!/^[^.]+\.[^.]/.test(id)) return id;
  const documented = DOCUMENTED_NAMES[id];
  if (style === 'SOAPI') return documented?.soapi ?? ruleSoapiName(id);
  if (style === 'Classic' && CLASSIC_HEADERS[id] !== undefined) return CLASSIC_HEADERS[id];
  return documented?.scmp ?? ruleScmpName(id);
}
