/**
 * The simulator's report files against the real ones in ../shared/samples/cybersource and the
 * Reporting User Guide's field tables: the simulator is written from that evidence, so its files
 * must have the real layouts (metadata line, Classic header names, Transaction Detail XML
 * structure) and its SCMP/SOAPI names must be the documented ones.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { createDataset } from '../../src/data/dataset.js';
import { CLASSIC_HEADERS, DOCUMENTED_NAMES, headerName } from '../../src/render/header-names.js';
import { CLASSIC_REPORTS, classicReport, reportDefinition } from '../../src/render/report-layouts.js';
import { renderReport } from '../../src/render/report-writers.js';
import type { ReportFileSpec } from '../../src/render/report-writers.js';
import { reportSpec } from '../helpers/simulated-report.js';
import { SAMPLES } from '../helpers/samples.js';

const sample = (name: string): Promise<string> => readFile(join(SAMPLES, name), 'utf8');
const SUL_2023 = 'rest-v3-PaymentBatchDetailReport_Daily_Classic.sul-dlss-fixture.csv';
const SUL_2025 = 'rest-v3-PaymentBatchDetailReport_Daily_Classic.sul-dlss-2025.csv';
const KILLBILL = 'transaction-detail-tdr_1_6.killbill-excerpt.xml';

const dataset = createDataset({
  seed: 11,
  organizations: [{ id: 'm1', index: 0, name: 'M1', accountId: 'a1', accountName: 'A', groupName: 'g1' }],
  transactionsPerDay: 120,
  startDate: '2024-03-01',
  quietDayRate: 0,
});

async function render(s: ReportFileSpec): Promise<string> {
  // Settled rows are placed by batch time: read a wide enough range of request days.
  const rows = [...dataset.between('m1', s.start - 2 * 86_400_000, s.end)].filter(
    (tx) =>
      s.definition.source !== 'settled' || (tx.settled && tx.batchTime >= s.start && tx.batchTime < s.end),
  );
  let text = '';
  for await (const chunk of renderReport(s, rows)) text += chunk;
  return text;
}

/** The metadata line's shape: org, report name, type, version, `<ISO> to <ISO>`, then empty padding. */
function metadataShape(line: string): string[] {
  const fields = (parse(line) as string[][])[0]!;
  return fields.map((v, i) =>
    i === 0
      ? 'org'
      : i === 4
        ? v.replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/g, 'T')
        : i === 1 || i >= 5
          ? v && 'x'
          : v,
  );
}

describe('Classic CSV against the real REST-era files', () => {
  it('writes the Payment Batch Detail metadata line and header of the 2023 file, with LF line ends', async () => {
    const real = await sample(SUL_2023);
    const [realMeta, realHeader] = real.split('\n');
    const simulated = await render(
      reportSpec('PaymentBatchDetailClass', { reportName: 'PaymentBatchDetailReport_Daily_Classic' }),
    );
    expect(real).not.toContain('\r');
    expect(simulated).not.toContain('\r\n');
    const [meta, header] = simulated.split('\n');
    expect(metadataShape(meta!)).toEqual(metadataShape(realMeta!));
    expect(meta!.split(',').slice(1, 4)).toEqual(realMeta!.split(',').slice(1, 4));
    expect(header).toBe(realHeader);
    expect(simulated.split('\n').length).toBeGreaterThan(10);
  });

  it('names the merchant-defined columns as the 2025 file does', async () => {
    const realHeader = (await sample(SUL_2025))
      .split('\n')[1]!
      .split(',')
      .map((h) => h.trim());
    const fields = [
      ...classicReport('PaymentBatchDetailReport_Daily_Classic')!.fields,
      ...[1, 2, 3, 4, 5].map((n) => `Merchant-DefinedDataFields.MerchantDefinedData_field${n}`),
    ];
    const simulated = await render(
      reportSpec('PaymentBatchDetailClass', { reportName: 'PaymentBatchDetailReport_Daily_Classic', fields }),
    );
    expect(simulated.split('\n')[1]!.split(',')).toEqual(realHeader);
  });

  it('writes PaymentSubmissionDetail as the PBD columns plus payment_processor, with the columns edX reads', async () => {
    const simulated = await render(
      reportSpec('PaymentBatchDetailClass', {
        reportName: 'PaymentSubmissionDetailReport_Daily_Classic',
        fields: classicReport('PaymentSubmissionDetailReport_Daily_Classic')!.fields,
      }),
    );
    const [meta, header] = simulated.split('\n');
    expect(meta!.split(',').slice(1, 4)).toEqual([
      'PaymentSubmissionDetailReport_Daily_Classic',
      'PaymentSubmissionDetail',
      '1.10',
    ]);
    const realHeader = (await sample(SUL_2023)).split('\n')[1]!;
    expect(header).toBe(`${realHeader},payment_processor`);
    const edx = ['batch_date', 'merchant_id', 'merchant_ref_number', 'currency', 'amount'];
    for (const column of [...edx, 'ics_applications', 'payment_type', 'request_id'])
      expect(header!.split(',')).toContain(column);
  });

  it('keeps CRLF for SOAPI and SCMP files, so both line ends reach the client', async () => {
    for (const convention of ['SOAPI', 'SCMP'] as const) {
      const csv = await render(reportSpec('TransactionRequestClass', { fieldNameConvention: convention }));
      expect(csv.endsWith('\r\n')).toBe(true);
      expect(csv.replace(/"[^"]*"/g, '').replace(/\r\n/g, '')).not.toContain('\n');
    }
  });

  it('gives every predefined Classic report its real name and a definition the simulator serves', () => {
    expect(CLASSIC_REPORTS.map((c) => c.reportName)).toEqual([
      'PaymentBatchDetailReport_Daily_Classic',
      'PaymentSubmissionDetailReport_Daily_Classic',
      'TransactionExceptionDetailReport_Daily_Classic',
      'TransactionDetailReport_Daily_Classic',
    ]);
    for (const c of CLASSIC_REPORTS) expect(reportDefinition(c.definitionName)).toBeDefined();
  });
});

/** Element paths and the attribute names of each, with `fieldN` (merchant-defined data) as one name. */
function structure(xml: string): {
  paths: Set<string>;
  attributes: Map<string, Set<string>>;
  leaves: Set<string>;
} {
  const paths = new Set<string>();
  const attributes = new Map<string, Set<string>>();
  const parents = new Set<string>();
  const stack: string[] = [];
  for (const m of xml.matchAll(/<(\/?)([A-Za-z_][\w.-]*)([^>]*?)(\/?)>/g)) {
    const [, closing, rawName, attrs, selfClosing] = m;
    const name = rawName!.replace(/^field\d+$/, 'field#');
    if (closing) {
      stack.pop();
      continue;
    }
    if (stack.length > 0) parents.add(stack.join('/'));
    const path = [...stack, name].join('/');
    paths.add(path);
    const set = attributes.get(path) ?? new Set<string>();
    for (const a of attrs!.matchAll(/([\w:-]+)="/g)) set.add(a[1]!);
    attributes.set(path, set);
    if (!selfClosing) stack.push(name);
  }
  return { paths, attributes, leaves: new Set([...paths].filter((p) => !parents.has(p))) };
}

describe('Transaction Detail XML against the killbill tdr_1_6 file', () => {
  it('has the DOCTYPE, root attributes, Request attributes and groups of the real file', async () => {
    const real = await sample(KILLBILL);
    const simulated = await render(reportSpec('TransactionRequestClass', { mimeType: 'application/xml' }));
    const doctype = (x: string) => /<!DOCTYPE Report SYSTEM "[^"]*\/(tdr_1_\d+)\.dtd">/.exec(x)?.[1];
    expect(doctype(simulated)).toBe(doctype(real));
    expect(simulated).toContain('Name="Transaction Detail"');

    const r = structure(real);
    const s = structure(simulated);
    // Every element of the real file is there, with the same attribute names.
    for (const path of r.paths) {
      expect(s.paths, path).toContain(path);
      expect([...s.attributes.get(path)!].sort(), path).toEqual([...r.attributes.get(path)!].sort());
    }
    // Anything more is a field (a leaf) of a group the real file has: no invented group or attribute.
    for (const path of s.paths) {
      if (r.paths.has(path)) continue;
      expect(s.leaves, path).toContain(path);
      expect(r.paths, path).toContain(path.slice(0, path.lastIndexOf('/')));
      expect(s.attributes.get(path)!.size, path).toBe(0);
    }
  });

  it('writes the Payment Batch Detail root as the legacy official sample', async () => {
    const real = await sample('legacy-docs-PaymentBatchDetailReport.excerpt.xml');
    const simulated = await render(reportSpec('PaymentBatchDetailClass', { mimeType: 'application/xml' }));
    const root = (x: string) => {
      const tag = /<Report\s([^>]*)>/.exec(x)![1]!;
      return Object.fromEntries(
        [...tag.matchAll(/([\w:-]+)="([^"]*)"/g)]
          .filter((a) => ['Name', 'Version', 'xmlns'].includes(a[1]!))
          .map((a) => [a[1], a[2]]),
      );
    };
    expect(root(simulated)).toEqual(root(real));
    const r = structure(real);
    const s = structure(simulated);
    for (const path of r.paths) expect(s.paths, path).toContain(path);
  });
});

describe('header names from the Reporting User Guide', () => {
  // The guide's tables (Payment Data, Bill To, Request, Application, Merchant Defined Data),
  // as quoted in the audit and the issue.
  const documented: [id: string, soapi: string | undefined, scmp: string | undefined][] = [
    ['PaymentData.Amount', undefined, 'grand_total_amount'],
    ['PaymentData.AuthorizationCode', undefined, 'auth_code'],
    ['PaymentData.AVSResult', undefined, 'auth_avs_raw'],
    ['PaymentData.AVSResultMapped', undefined, 'auth_auth_avs'],
    ['PaymentData.BalanceAmount', undefined, 'account_balance'],
    ['PaymentData.CurrencyCode', undefined, 'currency'],
    ['BillTo.FirstName', 'billTo_firstName', 'customer_firstname'],
    ['BillTo.Address1', 'billTo_street1', 'bill_address1'],
    ['BillTo.Email', 'billTo_email', 'customer_email'],
    ['Request.RequestID', 'RequestID', 'request_id'],
    ['Request.TransactionDate', 'RequestDate', 'transaction_date'],
    ['Request.MerchantReferenceNumber', 'MerchantReferenceNumber', 'merchant_ref_number'],
    ['Request.TransactionReferenceNumber', 'TransactionReferenceNumber', 'trans_ref_no'],
    ['Application.Name', 'Name', 'ics_applications'],
    ['Application.Rflag', 'Rflag', 'ics_rflag'],
    [
      'Merchant-DefinedDataFields.MerchantDefinedData_field1',
      'merchantDefinedData_field1',
      'merchant_defined_data1',
    ],
  ];

  it('writes the documented SOAPI and SCMP names, and the rule only where the guide gives none', () => {
    for (const [id, soapi, scmp] of documented) {
      expect(DOCUMENTED_NAMES[id]?.soapi, id).toBe(soapi);
      expect(DOCUMENTED_NAMES[id]?.scmp, id).toBe(scmp);
      if (scmp !== undefined) expect(headerName(id, 'SCMP')).toBe(scmp);
      if (soapi !== undefined) expect(headerName(id, 'SOAPI')).toBe(soapi);
    }
    expect(headerName('PaymentData.Amount', 'SOAPI')).toBe('paymentData_amount');
    expect(headerName('Request.MerchantID', 'SCMP')).toBe('request_merchant_id');
    expect(headerName('Fee.TotalFeeAmount', 'SCMP')).toBe('fee_total_fee_amount');
  });

  it('gives no two fields of a report the same header in any style', () => {
    for (const def of ['TransactionRequestClass', 'PaymentBatchDetailClass', 'FundingDetailClass']) {
      const fields = reportDefinition(def)!.fields;
      for (const style of ['SOAPI', 'SCMP', 'Classic'] as const) {
        const names = fields.map((f) => headerName(f, style));
        expect(new Set(names).size, `${def} ${style}`).toBe(names.length);
      }
    }
  });

  it('takes the Classic names from the real file, in its column order', async () => {
    const realHeader = (await sample(SUL_2023)).split('\n')[1]!.split(',');
    const pbd = classicReport('PaymentBatchDetailReport_Daily_Classic')!.fields;
    expect(pbd.map((f) => CLASSIC_HEADERS[f])).toEqual(realHeader);
  });
});
