import { readFileSync } from 'node:fs';
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
  lookupKey,
  resolveHeader,
  scmpName,
  soapiName,
  ON_DEMAND_SECTIONS,
} from '../../../src/catalog/index.js';

describe('report definitions', () => {
  it('has the 19 definitions of the spec with ids and tables', () => {
    expect(REPORT_DEFINITIONS).toHaveLength(19);
    expect(new Set(REPORT_DEFINITIONS.map((d) => d.table)).size).toBe(19);
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
      'risk_decision_event_detail',
      'recurring_billing_detail',
    ]);
    expect(findReportDefinition('TransactionRequestClass')?.id).toBe(210);
    expect(findReportDefinition('SubscriptionDetailClass')?.id).toBe(620);
    expect(findReportDefinition('GatewayTransactionRequestClass')?.id).toBe(310);
    expect(findReportDefinition('RiskDecisionEventDetailClass')).toMatchObject({
      id: 400,
      idSource: 'derived',
    });
    expect(findReportDefinition('RecurringBillingDetailClass')).toMatchObject({ id: null, idSource: 'none' });
    expect(findReportDefinitionById('211')?.name).toBe('PaymentBatchDetailClass');
    expect(new Set(REPORT_DEFINITIONS.filter((d) => d.id !== null).map((d) => d.id)).size).toBe(18);
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
});

describe('field catalog', () => {
  it('has every group of the spec', () => {
    expect(FIELD_GROUPS.map((g) => g.id)).toEqual([
      'Application',
      'AuthorizationResults',
      'BankInfo',
      'Batch',
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
      'Request',
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
    expect(findField('Check.BankTransitNumber')?.description).toBeUndefined();
    expect(getField('BillTo.Zip').description).toBe('postal code, five to nine digits');
    expect(getField('GiftCard.RedemptionType').length).toBe(26);
    expect(getField('Healthcare.AmountType').length).toBe(35);
    expect(getField('Deposit.Status').values).toEqual(['S', 'P', 'F']);
  });

  it('has the agreed extension fields with provenance', () => {
    for (const [id, type] of [
      ['Request.RequestID', 'text'],
      ['Request.TransactionDate', 'timestamptz'],
      ['Request.MerchantID', 'text'],
      ['Request.MerchantReferenceNumber', 'text'],
      ['Request.TransactionReferenceNumber', 'text'],
      ['PaymentData.Amount', 'numeric'],
      ['PaymentData.CurrencyCode', 'text'],
      ['PaymentData.PaymentMethod', 'text'],
      ['PaymentData.TransactionType', 'text'],
    ] as const) {
      const f = getField(id);
      expect(f.pgType).toBe(type);
      expect(f.provenance).toMatch(/facts §5/);
    }
    expect(getField('BillTo.FirstName').provenance).toBeUndefined();
  });
});

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
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
    const id = (h: string, report?: string): string => {
      const r = resolveHeader(h, report === undefined ? {} : { report });
      return r.kind === 'catalog' ? r.id : `unknown:${r.column}`;
    };
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
