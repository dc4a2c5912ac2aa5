import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  unknownColumnName,
  CATALOG_FIELDS,
  FIELD_GROUPS,
  MAX_IDENTIFIER_LENGTH,
  PG_TYPES,
  REPORT_DEFINITIONS,
  findField,
  findReportDefinition,
  findReportDefinitionById,
  getField,
  guessReportDefinition,
  PIPELINE_NAME_ALIASES,
  findFieldByAnyName,
  findGroupField,
  isDocumentedGroupPrefix,
  lookupKey,
  normalizeReportDefinitionName,
  resolveHeader,
  scmpName,
  soapiName,
  ON_DEMAND_SECTIONS,
} from '../../../src/catalog/index.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const SAMPLES = path.resolve(repoRoot, '..', 'shared', 'samples', 'cybersource');

/** The SDK's id table: `| 210 | TransactionRequestClass |` rows of the reportDefinitionId description. */
function sdkIdTable(): Map<number, string> {
  const model = readFileSync(
    path.resolve(
      repoRoot,
      'node_modules/cybersource-rest-client/src/model/ReportingV3ReportDefinitionsGet200ResponseReportDefinitions.js',
    ),
    'utf8',
  );
  const rows = [...model.matchAll(/\|\s*(\d{3})\s*\|\s*([A-Za-z]+Class)\s*\|/g)];
  return new Map(rows.map((m) => [Number(m[1]), m[2]!]));
}

describe('report definitions', () => {
  it('has every definition of the SDK id table, with its id and name (audit #1)', () => {
    const table = sdkIdTable();
    expect(table.size).toBe(25);
    for (const [id, name] of table) {
      expect(findReportDefinitionById(id)?.name, `id ${id}`).toBe(name);
      expect(findReportDefinition(name)).toMatchObject({ id, idSource: 'table', verified: true });
    }
    expect(table.get(400)).toBe('DecisionManagerEventDetailClass');
    expect([...table.values()]).not.toContain('RiskDecisionEventDetailClass');
    // The seed's extra definition is kept, unverified, with no id.
    const unverified = REPORT_DEFINITIONS.filter((d) => !table.has(d.id ?? -1));
    expect(unverified.map((d) => [d.name, d.id, d.verified])).toEqual([
      ['RecurringBillingDetailClass', null, false],
    ]);
  });

  it('has a table per definition, named after the real definition', () => {
    expect(REPORT_DEFINITIONS).toHaveLength(26);
    expect(new Set(REPORT_DEFINITIONS.map((d) => d.table)).size).toBe(26);
    expect(REPORT_DEFINITIONS.map((d) => d.table)).toEqual([
      'transaction_request',
      'payment_batch_detail',
      'exception_detail',
      'processor_settlement_detail',
      'processor_events_detail',
      'funding_detail',
      'aging_detail',
      'chargeback_and_retrieval_detail',
      'deposit_detail',
      'fee_detail',
      'invoice_summary',
      'payer_auth_detail',
      'conversion_detail',
      'subscription_detail',
      'jp_transaction_detail',
      'service_fee_detail',
      'gateway_transaction_request',
      'decision_manager_event_detail',
      'recurring_billing_detail',
      'billable_transactions_detail',
      'decision_manager_detail',
      'fee_summary',
      'tax_calculation',
      'pos_terminal_exception',
      'standard_billing_data_package',
      'standard_monthly_fee',
    ]);
    expect(findReportDefinitionById('211')?.name).toBe('PaymentBatchDetailClass');
  });

  it("accepts the seed's name of the Decision Manager event report as an alias of the real one", () => {
    expect(normalizeReportDefinitionName('RiskDecisionEventDetailClass')).toBe(
      'DecisionManagerEventDetailClass',
    );
    expect(normalizeReportDefinitionName('TransactionRequestClass')).toBe('TransactionRequestClass');
    expect(findReportDefinition('RiskDecisionEventDetailClass')).toBe(
      findReportDefinition('DecisionManagerEventDetailClass'),
    );
    expect(PIPELINE_NAME_ALIASES).toEqual({ risk_decision_event_detail: 'decision_manager_event_detail' });
  });

  it('recognises a report from file metadata', () => {
    expect(guessReportDefinition('PaymentBatchDetailReport_Daily_Classic')?.name).toBe(
      'PaymentBatchDetailClass',
    );
    expect(guessReportDefinition('PaymentBatchDetail')?.name).toBe('PaymentBatchDetailClass');
    expect(guessReportDefinition('Payment Batch Detail Report')?.name).toBe('PaymentBatchDetailClass');
    expect(guessReportDefinition('Payment Batch Detail')?.name).toBe('PaymentBatchDetailClass');
    expect(guessReportDefinition('Something else')).toBeUndefined();
  });

  it('recognises the real Classic report names and the Transaction Detail XML name (audit #16)', () => {
    const guess = (name: string): string | undefined => guessReportDefinition(name)?.name;
    expect(guess('TransactionExceptionDetailReport_Daily_Classic')).toBe('ExceptionDetailClass');
    expect(guess('PaymentSubmissionDetailReport_Daily_Classic')).toBe('PaymentBatchDetailClass');
    expect(guess('TransactionDetailReport_Daily_Classic')).toBe('TransactionRequestClass');
    expect(guess('PaymentBatchDetailReport_Daily_Classic')).toBe('PaymentBatchDetailClass');
    expect(guess('Transaction Detail')).toBe('TransactionRequestClass');
    expect(guess('Transaction Exception Detail')).toBe('ExceptionDetailClass');
    expect(guess('RiskDecisionEventDetailClass')).toBe('DecisionManagerEventDetailClass');
  });
});

describe('field catalog', () => {
  it('has every group of the spec', () => {
    expect(FIELD_GROUPS.map((g) => g.id)).toEqual([
      'Application',
      'AuthorizationResults',
      'BankInfo',
      'Batch',
      'BillableTransactions',
      'BillTo',
      'ChargebackAndRetrieval',
      'Check',
      'Conversion',
      'Deposit',
      'Device',
      'Event',
      'Exception',
      'Fee',
      'FeeSummary',
      'Funding',
      'FundTransfer',
      'GiftCard',
      'Healthcare',
      'Invoice',
      'JP',
      'LineItems',
      'Merchant-DefinedDataFields',
      'LifeCycleManagementEvent',
      'NetworkToken',
      'TMSToken',
      'PaymentData',
      'PaymentMethod',
      'Request',
      'ShipTo',
    ]);
    const count = (g: string): number => FIELD_GROUPS.find((x) => x.id === g)!.fields.length;
    expect(count('Exception')).toBe(38);
    expect(count('Fee')).toBe(27);
    expect(count('BillTo')).toBe(20);
    expect(count('Merchant-DefinedDataFields')).toBe(20);
    expect(count('JP')).toBe(20);
    expect(count('ChargebackAndRetrieval')).toBe(24);
  });

  it('gives column names without collisions, deterministic, within the identifier limit', () => {
    const columns = CATALOG_FIELDS.map((f) => f.column);
    expect(new Set(columns).size).toBe(columns.length);
    for (const c of columns) {
      expect(c).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(c.length).toBeLessThanOrEqual(MAX_IDENTIFIER_LENGTH);
    }
    expect(new Set(CATALOG_FIELDS.map((f) => f.id)).size).toBe(CATALOG_FIELDS.length);
  });

  it('gives every field a type', () => {
    for (const f of CATALOG_FIELDS) expect(PG_TYPES).toContain(f.pgType);
  });

  it('names columns by the documented rule', () => {
    const col = (id: string): string => getField(id).column;
    expect(col('BillTo.FirstName')).toBe('bill_to_first_name');
    expect(col('GiftCard.CurrentBalance')).toBe('gift_card_current_balance');
    expect(col('Request.RequestID')).toBe('request_id');
    expect(col('Request.TransactionDate')).toBe('transaction_date');
    expect(col('PaymentData.Amount')).toBe('amount');
    expect(col('PaymentData.CurrencyCode')).toBe('currency_code');
    expect(col('Merchant-DefinedDataFields.MerchantDefinedData_field7')).toBe('merchant_defined_data_field7');
    expect(col('Funding.FundingAmount')).toBe('funding_amount');
    expect(col('Funding.FeeAmount')).toBe('funding_fee_amount');
    expect(col('ChargebackAndRetrieval.ChargebackAmount')).toBe('chargeback_amount');
    expect(col('Exception.ReasonCode')).toBe('exception_reason_code');
    expect(col('Exception.ExceptionReasonCode')).toBe('exception_exception_reason_code');
    expect(col('Exception.ExceptionAmount')).toBe('exception_amount');
    expect(col('LifeCycleManagementEvent.LCMEventType')).toBe('lcm_event_type');
    expect(col('Batch.BatchID')).toBe('batch_id');
    expect(col('AuthorizationResults.AVSResult')).toBe('authorization_results_avs_result');
  });

  it('types fields by the rules', () => {
    const t = (id: string): string => getField(id).pgType;
    expect(t('Deposit.ExchangeRate')).toBe('numeric');
    expect(t('GiftCard.CurrentBalance')).toBe('numeric');
    expect(t('Fee.ServiceFeeRate')).toBe('numeric');
    expect(t('Fee.ServiceFeeAmountCcy')).toBe('text');
    expect(t('ChargebackAndRetrieval.DocumentIndicator')).toBe('boolean');
    expect(t('ChargebackAndRetrieval.FinancialImpact')).toBe('boolean');
    expect(t('Deposit.MerchantBankCode')).toBe('text');
    expect(t('JP.CardSuffix')).toBe('text');
    expect(t('Invoice.Processed')).toBe('integer');
    expect(t('Batch.BatchDate')).toBe('timestamptz');
    expect(t('Request.TransactionDate')).toBe('timestamptz');
    expect(t('ChargebackAndRetrieval.RespondByDate')).toBe('date');
    expect(t('Request.RequestID')).toBe('text');
  });

  it('keeps the spec spellings, descriptions and lengths', () => {
    expect(findField('ChargebackAndRetrieval.ResolvedToIndicato')).toBeDefined();
    // The spec shows no definition; the Simple Order field reference (check_bankTransitNumber) does.
    expect(getField('Check.BankTransitNumber').description).toBe(
      'bank routing number, also called the transit number',
    );
    expect(getField('BillTo.Zip').description).toBe('postal code, five to nine digits');
    expect(getField('GiftCard.RedemptionType').length).toBe(26);
    expect(getField('Healthcare.AmountType').length).toBe(35);
    expect(getField('Deposit.Status').values).toEqual(['S', 'P', 'F']);
  });

  it('says where a field outside the documentation comes from', () => {
    for (const [id, type] of [
      ['PaymentData.PaymentMethod', 'text'],
      ['PaymentData.TransactionType', 'text'],
    ] as const) {
      const f = getField(id);
      expect(f.pgType).toBe(type);
      expect(f.provenance).toMatch(/facts §5/);
    }
    for (const id of [
      'PaymentData.GrandTotal',
      'PaymentData.PaymentProcessor',
      'Request.PredecessorRequestID',
    ])
      expect(getField(id).provenance).toMatch(/Transaction Detail XML/);
    expect(getField('Request.CompleteRoute').provenance).toMatch(/Classic/);
    for (const id of ['BillTo.FirstName', 'Request.RequestID', 'PaymentData.Amount', 'PaymentData.AVSResult'])
      expect(getField(id).provenance).toBeUndefined();
  });
});

/** The field id a header resolves to, or `unknown:<column>`. */
function headerId(header: string, report?: string): string {
  const r = resolveHeader(header, report === undefined ? {} : { report });
  return r.kind === 'catalog' ? r.id : `unknown:${r.column}`;
}

describe('field catalog as complete as the documentation (issue 25 point 3, audit #6/#7)', () => {
  it('has the documented Request and Payment Data fields, typed', () => {
    const t = (id: string): string | undefined => findField(id)?.pgType;
    for (const id of [
      'Request.RequestID',
      'Request.MerchantID',
      'Request.MerchantReferenceNumber',
      'Request.Source',
      'Request.SubscriptionID',
      'Request.User',
      'Request.Comments',
      'Request.PartnerSDKVersion',
      'Request.TerminalSerialNumber',
      'Request.PredecessorRequestID',
      'PaymentData.AuthorizationCode',
      'PaymentData.AuthorizationType',
      'PaymentData.AVSResult',
      'PaymentData.AVSResultMapped',
      'PaymentData.PaymentRequestID',
      'PaymentData.PaymentProcessor',
      'PaymentData.CVResult',
      'PaymentData.BinNumber',
      'PaymentMethod.AccountSuffix',
      'PaymentMethod.CardType',
      'PaymentMethod.ExpirationMonth',
      'PaymentMethod.ExpirationYear',
      'ShipTo.City',
      'ShipTo.Zip',
    ])
      expect(t(id), id).toBe('text');
    for (const id of [
      'PaymentData.Amount',
      'PaymentData.BalanceAmount',
      'PaymentData.TotalTaxAmount',
      'PaymentData.GrandTotal',
      'PaymentData.AuthReversalAmount',
      'LineItems.UnitPrice',
      'LineItems.TaxAmount',
    ])
      expect(t(id), id).toBe('numeric');
    expect(t('Request.TransactionDate')).toBe('timestamptz');
    expect(t('LineItems.Quantity')).toBe('integer');
    expect(FIELD_GROUPS.find((g) => g.id === 'Request')!.fields.length).toBeGreaterThanOrEqual(15);
    expect(FIELD_GROUPS.find((g) => g.id === 'PaymentData')!.fields.length).toBeGreaterThanOrEqual(30);
    // A SQL keyword is never a column name.
    expect(getField('Request.User').column).toBe('request_user');
  });

  it('maps the SCMP values of the Payment Data Fields page to their fields', () => {
    const id = (h: string): string => headerId(h);
    expect(id('grand_total_amount')).toBe('PaymentData.Amount');
    expect(id('auth_code')).toBe('PaymentData.AuthorizationCode');
    expect(id('auth_type')).toBe('PaymentData.AuthorizationType');
    expect(id('auth_avs_raw')).toBe('PaymentData.AVSResult');
    expect(id('auth_auth_avs')).toBe('PaymentData.AVSResultMapped');
    expect(id('account_balance')).toBe('PaymentData.BalanceAmount');
    expect(id('account_balance_currency')).toBe('PaymentData.BalanceCurrencyCode');
    expect(id('cavv')).toBe('PaymentData.AAV_CAVV');
    expect(id('ecp_debit_verification_code_raw')).toBe('PaymentData.ACHVerificationResult');
    expect(id('auth_cv_result')).toBe('PaymentData.CVResult');
    expect(id('bank_account_name')).toBe('PaymentData.BankAccountName');
    expect(id('bank_code')).toBe('PaymentData.BankCode');
    expect(getField('PaymentData.Amount').scmpName).toBe('grand_total_amount');
  });

  it('maps the SOAPI and SCMP values of the Request, Application, Bill To, Payment Method and MDD pages', () => {
    const id = (h: string): string => headerId(h);
    expect(id('RequestDate')).toBe('Request.TransactionDate');
    expect(id('subscription_id')).toBe('Request.SubscriptionID');
    expect(id('partner_sdk_version')).toBe('Request.PartnerSDKVersion');
    expect(id('e_commerce_indicator')).toBe('Request.eCommerceIndicator');
    expect(id('ics_rcode')).toBe('Application.Rcode');
    expect(id('ics_rflag')).toBe('Application.Rflag');
    expect(id('ics_rmsg')).toBe('Application.Rmsg');
    expect(id('billTo_street1')).toBe('BillTo.Address1');
    expect(id('bill_address1')).toBe('BillTo.Address1');
    expect(id('customer_firstname')).toBe('BillTo.FirstName');
    expect(id('customer_email')).toBe('BillTo.Email');
    expect(id('customer_account_id')).toBe('BillTo.CustomerID');
    expect(id('card_cardType')).toBe('PaymentMethod.CardType');
    expect(id('customer_cc_number')).toBe('PaymentMethod.AccountSuffix');
    expect(id('customer_cc_expmo')).toBe('PaymentMethod.ExpirationMonth');
    expect(id('merchantDefinedData_field3')).toBe('Merchant-DefinedDataFields.MerchantDefinedData_field3');
    expect(id('merchant_defined_data3')).toBe('Merchant-DefinedDataFields.MerchantDefinedData_field3');
    // The rule-derived names stay aliases.
    expect(id('paymentData_authorizationCode')).toBe('PaymentData.AuthorizationCode');
    expect(id('payment_data_authorization_code')).toBe('PaymentData.AuthorizationCode');
    expect(id('request_request_id')).toBe('Request.RequestID');
  });

  it('maps the Classic report headers, stray spaces included', () => {
    const id = (h: string): string => headerId(h, 'PaymentBatchDetailClass');
    expect(id(' merchant_data_2')).toBe('Merchant-DefinedDataFields.MerchantDefinedData_field2');
    expect(id('merchant_data_5 ')).toBe('Merchant-DefinedDataFields.MerchantDefinedData_field5');
    expect(id('merchant_data_1')).toBe('Merchant-DefinedDataFields.MerchantDefinedData_field1');
    expect(id('complete_route')).toBe('Request.CompleteRoute');
    expect(id('payment_processor')).toBe('PaymentData.PaymentProcessor');
    expect(id('transaction_type')).toBe('PaymentData.TransactionType');
    expect(id('status')).toBe('Batch.Status');
  });

  it('maps the documented headers of the Billable Transactions Detail report (225)', () => {
    const report = 'BillableTransactionsDetailClass';
    for (const [header, field] of [
      ['Currency', 'PaymentData.CurrencyCode'],
      ['Merchant Reference Number', 'Request.MerchantReferenceNumber'],
      ['Organization ID', 'BillableTransactions.OrganizationID'],
      ['Payment Processor', 'PaymentData.PaymentProcessor'],
      ['Product Code', 'BillableTransactions.ProductCode'],
      ['Product Description', 'BillableTransactions.ProductDescription'],
      ['Quantity', 'BillableTransactions.Quantity'],
      ['Requested Amount', 'BillableTransactions.RequestedAmount'],
      ['Request ID', 'Request.RequestID'],
      ['Service Name', 'BillableTransactions.ServiceName'],
      ['Transaction Date', 'Request.TransactionDate'],
    ])
      expect(headerId(header!, report), header).toBe(field);
    expect(getField('BillableTransactions.RequestedAmount').pgType).toBe('numeric');
  });

  it('lands every header of the real CSV files in a catalog field', () => {
    const files = readdirSync(SAMPLES).filter((f) => f.endsWith('.csv'));
    expect(files.length).toBeGreaterThanOrEqual(3);
    for (const file of files) {
      const lines = readFileSync(path.join(SAMPLES, file), 'utf8').split(/\r?\n/);
      const headerLine = lines.find((l) => /(^|,)\s*batch_id\s*,/.test(l))!;
      for (const header of headerLine.split(','))
        expect(resolveHeader(header, { report: 'PaymentBatchDetailClass' }).kind, `${file}: ${header}`).toBe(
          'catalog',
        );
    }
  });

  it('maps the Transaction Detail XML paths and offers a lookup by group and name', () => {
    const id = (h: string): string => headerId(h);
    expect(id('Request@RequestDate')).toBe('Request.TransactionDate');
    expect(id('Request@Source')).toBe('Request.Source');
    expect(id('Request@PredecessorRequestID')).toBe('Request.PredecessorRequestID');
    expect(id('PaymentMethod/Card/AccountSuffix')).toBe('PaymentMethod.AccountSuffix');
    expect(id('ApplicationReplies/ApplicationReply@Name')).toBe('Application.Name');
    expect(id('ApplicationReplies/ApplicationReply/RCode')).toBe('Application.Rcode');
    expect(id('LineItems/LineItem@Number')).toBe('LineItems.Number');
    expect(id('LineItems/LineItem/UnitPrice')).toBe('LineItems.UnitPrice');
    expect(id('MerchantDefinedData/field1')).toBe('Merchant-DefinedDataFields.MerchantDefinedData_field1');
    expect(id('PaymentData/GrandTotal')).toBe('PaymentData.GrandTotal');
    expect(findGroupField('application', 'RFlag')?.id).toBe('Application.Rflag');
    expect(findGroupField('PaymentMethod', 'accountsuffix')?.id).toBe('PaymentMethod.AccountSuffix');
    expect(findGroupField('PaymentMethod', 'NoSuch')).toBeUndefined();
  });

  it('knows documented names of a field besides its id, and which group prefixes are documented', () => {
    expect(findFieldByAnyName('Request.LocalizedDate')?.id).toBe('Request.LocalizedRequestDate');
    expect(findFieldByAnyName('Request.TransactionRefNumber')?.id).toBe('Request.TransactionReferenceNumber');
    expect(findFieldByAnyName('Request.NoSuchField')).toBeUndefined();
    for (const g of ['Request', 'PaymentData', 'Application', 'PaymentMethod', 'BillTo', 'LineItems'])
      expect(isDocumentedGroupPrefix(g), g).toBe(true);
    for (const g of [
      'AuthorizationResults',
      'ChargebackAndRetrieval',
      'Conversion',
      'Exception',
      'Fee',
      'NoSuch',
    ])
      expect(isDocumentedGroupPrefix(g), g).toBe(false);
  });
});

const specText = readFileSync(
  path.resolve(repoRoot, '..', 'shared', 'spec', 'reporting-api-spec.md'),
  'utf8',
);

describe('field catalog against the spec text', () => {
  it('has exactly the fields of each inline group list of the spec', () => {
    const lines = specText.split('\n').filter((l) => /^\*\*[^*]+\*\*( \(prefix [^)]*\))?: /.test(l));
    expect(lines.length).toBeGreaterThan(20);
    let checked = 0;
    for (const line of lines) {
      const m = /^\*\*([^*]+)\*\*(?: \(prefix ([^)]*)\))?: (.*)$/.exec(line)!;
      const [, title, prefix, list] = m;
      if (title === 'Merchant Defined Data' || title === 'Payment Data') continue;
      const names: string[] = [];
      let depth = 0;
      let current = '';
      for (const ch of list!) {
        if (ch === '(') depth++;
        if (ch === ')') depth--;
        if (ch === ';' && depth === 0) {
          names.push(current);
          current = '';
        } else current += ch;
      }
      names.push(current);
      const fieldNames = names.map((n) => n.trim().split(/[ (.]/)[0]!);
      const group = FIELD_GROUPS.find((g) => g.title === title)!;
      expect(group, title).toBeDefined();
      if (prefix !== undefined) expect(group.id).toBe(prefix);
      expect(group.fields.map((f) => f.name).sort(), title).toEqual(fieldNames.sort());
      checked++;
    }
    expect(checked).toBe(19);
  });

  it('has the network token table rows of the spec', () => {
    for (const groupId of ['LifeCycleManagementEvent', 'NetworkToken', 'TMSToken']) {
      const row = specText.split('\n').find((l) => l.startsWith(`| ${groupId} |`))!;
      const names = row
        .split('|')[2]!
        .split(';')
        .map((n) => n.trim().split(/[ (]/)[0]!);
      expect(
        FIELD_GROUPS.find((g) => g.id === groupId)!
          .fields.map((f) => f.name)
          .sort(),
      ).toEqual(names.sort());
    }
  });
});

describe('resolveHeader', () => {
  it('maps every name of every field back to it', () => {
    for (const f of CATALOG_FIELDS) {
      for (const name of [f.id, f.soapiName, f.scmpName, soapiName(f.id), scmpName(f.id), ...f.aliases]) {
        expect(resolveHeader(name), `${name} → ${f.id}`).toBe(f);
      }
    }
  });

  it('maps the headers of the real files', () => {
    const id = headerId;
    expect(id('batch_id')).toBe('Batch.BatchID');
    expect(id('merchant_id')).toBe('Request.MerchantID');
    expect(id('batch_date')).toBe('Batch.BatchDate');
    expect(id('request_id')).toBe('Request.RequestID');
    expect(id('merchant_ref_number')).toBe('Request.MerchantReferenceNumber');
    expect(id('trans_ref_no')).toBe('Request.TransactionReferenceNumber');
    expect(id('TransactionReferenceNumber')).toBe('Request.TransactionReferenceNumber');
    expect(id('payment_method')).toBe('PaymentData.PaymentMethod');
    expect(id('payment_type')).toBe('PaymentData.PaymentMethod');
    expect(id('currency')).toBe('PaymentData.CurrencyCode');
    expect(id('amount')).toBe('PaymentData.Amount');
    expect(id('transaction_type')).toBe('PaymentData.TransactionType');
    expect(id('ics_applications')).toBe('Application.Name');
    expect(id('transaction_date')).toBe('Request.TransactionDate');
    expect(id('status', 'PaymentBatchDetailClass')).toBe('Batch.Status');
    expect(id('status')).toBe('unknown:status');
    expect(id('Batch@BatchID')).toBe('Batch.BatchID');
    expect(id('Batch@BatchDate')).toBe('Batch.BatchDate');
    expect(id('Request@RequestID')).toBe('Request.RequestID');
    expect(id('Request@MerchantReferenceNumber')).toBe('Request.MerchantReferenceNumber');
    expect(id('Request/TransactionReferenceNumber')).toBe('Request.TransactionReferenceNumber');
    expect(id('Request/PaymentMethod')).toBe('PaymentData.PaymentMethod');
    expect(id('Request/CurrencyCode')).toBe('PaymentData.CurrencyCode');
    expect(id('Request/Amount')).toBe('PaymentData.Amount');
    expect(id('Request/Application')).toBe('Application.Name');
    expect(id('\uFEFF BillTo.FirstName ')).toBe('BillTo.FirstName');
    expect(id('billTo_firstName')).toBe('BillTo.FirstName');
    expect(id('bill_to_first_name')).toBe('BillTo.FirstName');
  });

  it('resolves the gift card names unambiguously', () => {
    const redemption = getField('GiftCard.RedemptionType');
    expect(redemption.documentedSoapiName).toBe('giftCard_previousBalance');
    expect(redemption.soapiName).toBe('giftCard_redemptionType');
    expect(resolveHeader('giftCard_previousBalance')).toBe(getField('GiftCard.PreviousBalance'));
    expect(resolveHeader('giftCard_redemptionType')).toBe(redemption);
    expect(resolveHeader('gift_card_redemption_type')).toBe(redemption);
    expect(resolveHeader('giftCard_currentBalance')).toBe(getField('GiftCard.CurrentBalance'));
  });

  it('keeps unknown headers as text columns', () => {
    expect(resolveHeader('PaymentData.CardBin')).toMatchObject({
      kind: 'unknown',
      column: 'payment_data_card_bin',
      pgType: 'text',
    });
    expect(resolveHeader('Some Header!')).toMatchObject({ kind: 'unknown', column: 'some_header' });
    const long = resolveHeader('x'.repeat(100));
    expect(long.column.length).toBeLessThanOrEqual(MAX_IDENTIFIER_LENGTH);
    expect(resolveHeader('x'.repeat(100)).column).toBe(long.column);
  });

  it('normalises lookup keys for XML paths', () => {
    expect(lookupKey('Request@RequestID')).toBe(lookupKey('Request.RequestID'));
  });
});

describe('on-demand sections', () => {
  it('describes every section with unique columns and tables', () => {
    expect(ON_DEMAND_SECTIONS.map((s) => s.table)).toEqual([
      'purchase_refund_request_details',
      'purchase_refund_settlements',
      'purchase_refund_authorizations',
      'purchase_refund_fee_funding',
      'purchase_refund_others',
      'purchase_refund_settlement_statuses',
      'net_funding_summaries',
      'net_funding_totals',
      'conversion_details',
      'conversion_detail_notes',
      'notification_of_changes',
      'payment_batch_summaries',
    ]);
    for (const s of ON_DEMAND_SECTIONS) {
      const cols = s.fields.map((f) => f.column);
      expect(new Set(cols).size, s.name).toBe(cols.length);
      for (const f of s.fields) expect(PG_TYPES).toContain(f.pgType);
    }
    const settlements = ON_DEMAND_SECTIONS.find((s) => s.name === 'settlements')!;
    expect(settlements.fields.find((f) => f.key === 'amount')).toMatchObject({
      column: 'amount',
      pgType: 'numeric',
    });
    expect(settlements.fields.find((f) => f.key === 'cybersourceBatchTime')?.column).toBe(
      'cybersource_batch_time',
    );
  });
});

describe('unknown header names', () => {
  it('never name a column like a PostgreSQL system column (the load would fail every time)', () => {
    // Regression: a report header "ctid" made ALTER TABLE fail, so its window could never load.
    for (const name of ['ctid', 'xmin', 'XMAX', 'cmin', 'cmax', 'tableoid', ' ctid ']) {
      expect(unknownColumnName(name)).toMatch(/_column$/);
    }
    expect(unknownColumnName('oid')).toBe('oid');
  });
});

describe('field descriptions (issue 25 point 3: every warehouse column documented)', () => {
  it('describes every field except those no source describes, and that list cannot grow', () => {
    // Neither the Reporting User Guide nor the REST field pages, the API field reference or the SDK
    // describe these, and their names leave the meaning open; describe one and remove it here.
    const undescribed = CATALOG_FIELDS.filter((f) => !f.description)
      .map((f) => f.id)
      .sort();
    expect(undescribed).toEqual([
      'BillTo.UserName',
      'Exception.SDKVersion',
      'Exception.StorageMechanism',
      'FeeSummary.Count',
      'PaymentData.BatchFilesID',
      'PaymentData.CustomerAccountID',
      'PaymentMethod.BankNumber',
      'Request.TransactionID',
    ]);
    for (const f of CATALOG_FIELDS)
      if (f.description !== undefined) expect(f.description.trim(), f.id).not.toBe('');
  });

  it("takes the definitions of CyberSource's field tables", () => {
    const d = (id: string): string | undefined => getField(id).description;
    expect(d('Batch.BatchID')).toBe('batch in which the transaction was sent');
    expect(d('BankInfo.City')).toBe('city in which the bank is located');
    expect(d('ChargebackAndRetrieval.ChargebackAmount')).toBe('amount of the chargeback');
    expect(d('Exception.ExceptionDeviceOS')).toBe('operating system of the device');
    expect(d('Fee.PerItemFeeCurrency')).toBe('currency of the single-item fee');
    expect(d('Funding.FundingDate')).toBe('funding date of the transaction');
    expect(d('JP.Gateway')).toBe('name of the gateway used to process the transaction');
    expect(d('NetworkToken.TokenUniqueID')).toBe('unique identifier of the network token');
    expect(d('TMSToken.InstrumentIdentifierState')).toBe('current state of the instrument identifier token');
    expect(d('PaymentMethod.BankTransitNumber')).toBe('bank routing number, also called the transit number');
    expect(d('Request.TerminalSerialNumber')).toBe(
      'terminal serial number assigned by the hardware manufacturer',
    );
    expect(d('Device.DeviceID')).toMatch(/uniquely identifies the POS device/);
  });
});
