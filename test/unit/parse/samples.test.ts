import { createReadStream, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openCsvReport } from '../../../src/parse/csv/csv-report.js';
import { openXmlReport } from '../../../src/parse/xml/xml-report.js';
import { parseOnDemandResponse } from '../../../src/parse/json/on-demand.js';
import type { OnDemandEndpoint } from '../../../src/catalog/index.js';
import { collect, rowsOf, samplesDir } from './helpers.js';

const file = (name: string): string => path.join(samplesDir, name);

/** The one row of the sul-dlss Classic Payment Batch Detail files (both revisions). */
const SUL_DLSS_ROW = {
  batch_id: '21265991580',
  merchant_id: 'wfgsulair',
  batch_date: '2023-10-11T04:15:21.000Z',
  request_id: '6969304358566698703248',
  merchant_reference_number: 'f1cf56ef-5071-477f-b3ee-8779721a7f44',
  transaction_reference_number: '93211601',
  payment_method: 'MasterCard',
  currency_code: 'USD',
  amount: '35.00',
  application_name: 'ics_bill,ics_auth',
  batch_status: 'BATCHED',
  transaction_date: '2023-10-10T09:33:55.000Z',
};

describe('sample report files', () => {
  it('reads the real REST-era Payment Batch Detail CSV', async () => {
    const name = 'rest-v3-PaymentBatchDetailReport_Daily_Classic.sul-dlss-fixture.csv';
    const source = await openCsvReport(createReadStream(file(name)), { fileName: name });
    expect(source.metadata).toMatchObject({
      organizationId: 'wfgsulair',
      reportName: 'PaymentBatchDetailReport_Daily_Classic',
      reportType: 'PaymentBatchDetail',
      version: '1.10',
      startTime: '2023-10-10T07:00:00.000Z',
      endTime: '2023-10-11T07:00:00.000Z',
      reportDefinition: 'PaymentBatchDetailClass',
    });
    expect(source.unknownColumns).toEqual([]);
    const { records, rejects } = await collect(source);
    expect(rejects).toEqual([]);
    expect(records.map((r) => r.recordNumber)).toEqual([3]);
    expect(rowsOf(source, records)).toEqual([SUL_DLSS_ROW]);
    expect(source.summary()).toMatchObject({ records: 1, rejects: 0, dataRows: 1 });
  });

  it('reads the 2025 Classic CSV: spaces around header names, merchant_data_1..5 typed', async () => {
    const name = 'rest-v3-PaymentBatchDetailReport_Daily_Classic.sul-dlss-2025.csv';
    const source = await openCsvReport(createReadStream(file(name)), { fileName: name });
    expect(source.metadata).toMatchObject({
      organizationId: 'wfgsulair',
      reportName: 'PaymentBatchDetailReport_Daily_Classic',
      reportDefinition: 'PaymentBatchDetailClass',
    });
    expect(source.unknownColumns).toEqual([]);
    const { records, rejects } = await collect(source);
    expect(rejects).toEqual([]);
    expect(rowsOf(source, records)).toEqual([
      {
        ...SUL_DLSS_ROW,
        merchant_defined_data_field1: '7ff7f3c:cf238f9:66a1dfd',
        merchant_defined_data_field2: 'asdfasd:FSASFD:fsasdf',
        merchant_defined_data_field3: 'dasdfas:fghdfgh',
        merchant_defined_data_field4: 'sdfgsfg:brthbhy:5bbh5b7',
        merchant_defined_data_field5: '5bh5bh8',
      },
    ]);
  });

  it('reads the legacy CRLF CSV', async () => {
    const name = 'legacy-docs-PaymentBatchDetailReport.csv';
    expect(readFileSync(file(name), 'utf8')).toContain('\r\n');
    const source = await openCsvReport(createReadStream(file(name)), { fileName: name });
    expect(source.metadata).toMatchObject({
      reportName: 'Payment Batch Detail Report',
      version: '1.0',
      rawStart: '2003-05-01',
      startTime: '2003-05-01T00:00:00.000Z',
      reportDefinition: 'PaymentBatchDetailClass',
    });
    const { records, rejects } = await collect(source);
    expect(rejects).toEqual([]);
    const rows = rowsOf(source, records);
    expect(rows.map((r) => r.amount)).toEqual(['100.00', '-100.00', '100.00']);
    expect(rows[0]).toEqual({
      batch_id: '123456',
      merchant_id: 'CyberSource',
      batch_date: '2003-05-01T00:00:00.000Z',
      request_id: '0004172180000167905139',
      merchant_reference_number: '45CBBDE3378A553',
      transaction_reference_number: '5652882910',
      payment_method: 'Visa',
      currency_code: 'USD',
      amount: '100.00',
      transaction_type: 'ics_bill',
    });
    expect(records.map((r) => r.recordNumber)).toEqual([3, 4, 5]);
  });

  it('reads the legacy XML sample', async () => {
    const name = 'legacy-docs-PaymentBatchDetailReport.excerpt.xml';
    const source = await openXmlReport(createReadStream(file(name), { highWaterMark: 16 }), {
      fileName: name,
    });
    expect(source.metadata).toMatchObject({
      reportName: 'Payment Batch Detail',
      version: '1.0',
      organizationId: 'CyberSource',
      startTime: '2001-08-16T07:01:00.000Z',
      endTime: '2001-08-17T06:59:00.000Z',
      reportDefinition: 'PaymentBatchDetailClass',
    });
    const { records, rejects } = await collect(source);
    expect(rejects).toEqual([]);
    expect(source.unknownColumns).toEqual([]);
    expect(rowsOf(source, records)).toEqual([
      {
        request_id: '0004172180000167905139',
        merchant_reference_number: '45CBBDE3378A553',
        transaction_reference_number: '5652882910',
        payment_method: 'Visa',
        currency_code: 'USD',
        amount: '100.00',
        application_name: 'ics_bill',
        batch_id: '123456',
        batch_date: '2001-08-16T00:00:00.000Z',
      },
    ]);
  });

  it('reads the error XML body as a document without records', async () => {
    const name = 'error-404-resource-notfound.report-downloads.xml';
    const source = await openXmlReport(createReadStream(file(name)), { fileName: name });
    const { records, rejects } = await collect(source);
    expect(records).toEqual([]);
    expect(rejects).toEqual([]);
  });

  it('reads every on-demand JSON sample', async () => {
    const endpoints: Record<string, OnDemandEndpoint> = {
      'purchase-refund-details-200.spec-example.json': 'purchase-refund-details',
      'net-fundings-200.spec-example.json': 'net-fundings',
      'conversion-details-200.spec-example.json': 'conversion-details',
      'notification-of-changes-200.spec-example.json': 'notification-of-changes',
      'payment-batch-summaries-200.spec-example.json': 'payment-batch-summaries',
    };
    const rows: Record<string, Record<string, unknown>[]> = {};
    for (const [name, endpoint] of Object.entries(endpoints)) {
      const result = parseOnDemandResponse(endpoint, JSON.parse(readFileSync(file(name), 'utf8')), {
        source: name,
      });
      for (const [section, source] of Object.entries(result.sections)) {
        const { records, rejects } = await collect(source);
        expect(rejects, section).toEqual([]);
        expect(source.unknownColumns, section).toEqual([]);
        rows[section] = rowsOf(source, records);
      }
    }
    expect(rows.settlements![0]).toMatchObject({
      request_id: '12345678901234567890123456',
      amount: '23.00',
      submission_time: '2017-10-01T05:10:10.000Z',
      account_suffix: '0004',
      debit_network: null,
    });
    expect(rows.feeAndFundingDetails![0]).toMatchObject({
      interchange_percentage_amount: '-3.7500',
      discount_per_item_fee: '0.002',
      funding_amount: '2.50',
    });
    expect(rows.authorizations![0]).toMatchObject({ amount: '2.50', code: '160780' });
    expect(rows.netFundingSummaries![0]).toMatchObject({ conveyed_count: 10, conveyed_amount: '100.50' });
    expect(rows.totals!.map((r) => [r.total_type, r.currency, r.value])).toEqual([
      ['totalPurchases', 'USD', '10.01'],
      ['totalRefunds', 'USD', '10.01'],
      ['totalFees', 'USD', '10.01'],
      ['totalChargebacks', 'USD', '10.01'],
      ['netTotal', 'USD', '10.01'],
    ]);
    expect(rows.conversionDetailNotes).toEqual([
      {
        request_id: '1234567890123456789012',
        note_number: 1,
        time: '2017-10-01T05:10:10.000Z',
        added_by: 'testuserId',
        comments: 'Verified the order and accepted.',
      },
    ]);
    expect(rows.notificationOfChanges![0]).toMatchObject({
      routing_number: '123456789',
      account_number: '############1234',
    });
    expect(rows.paymentBatchSummaries![0]).toMatchObject({
      sales_count: 10,
      sales_amount: '5000.01',
      start_time: null,
    });
  });

  it('covers every sample file of the folder', () => {
    const covered = new Set([
      'rest-v3-PaymentBatchDetailReport_Daily_Classic.sul-dlss-fixture.csv',
      'rest-v3-PaymentBatchDetailReport_Daily_Classic.sul-dlss-2025.csv',
      'legacy-docs-PaymentBatchDetailReport.csv',
      'legacy-docs-PaymentBatchDetailReport.excerpt.xml',
      // Read in xml-tdr.test.ts.
      'transaction-detail-tdr_1_6.killbill-excerpt.xml',
      'error-404-resource-notfound.report-downloads.xml',
      'purchase-refund-details-200.spec-example.json',
      'net-fundings-200.spec-example.json',
      'conversion-details-200.spec-example.json',
      'notification-of-changes-200.spec-example.json',
      'payment-batch-summaries-200.spec-example.json',
    ]);
    // The rest are API responses (definitions, subscriptions, search, errors), not report data.
    const apiOnly = readdirSync(samplesDir).filter(
      (n) => !covered.has(n) && n !== 'README.txt' && !/^(report|reports|error)-/.test(n),
    );
    expect(apiOnly).toEqual([]);
  });
});
