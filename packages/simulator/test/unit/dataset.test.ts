import { parse } from 'csv-parse/sync';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { createDataset } from '../../src/data/dataset.js';
import { headerName } from '../../src/render/header-names.js';
import type { SimOrganization } from '../../src/data/dataset.js';
import { MoneyTally, formatMoney, sumDecimals } from '../../src/data/money.js';
import { reportDefinition } from '../../src/render/report-layouts.js';
import { renderReport } from '../../src/render/report-writers.js';
import type { ReportFileSpec } from '../../src/render/report-writers.js';
import { reportSpec } from '../helpers/simulated-report.js';
import { isoInZone, localDate, parseIsoDateTime, zonedTime } from '../../src/data/time.js';

const orgs: SimOrganization[] = [
  { id: 'm1', index: 0, name: 'M1', accountId: 'a1', accountName: 'A', groupName: 'g1' },
  { id: 'm2', index: 1, name: 'M2', accountId: 'a2', accountName: 'A', groupName: 'g2' },
];

async function text(gen: AsyncIterable<string>): Promise<string> {
  let s = '';
  for await (const c of gen) s += c;
  return s;
}

function spec(
  definition: string,
  mimeType: ReportFileSpec['mimeType'],
  over: Partial<ReportFileSpec> = {},
): ReportFileSpec {
  return reportSpec(definition, { mimeType, ...over });
}

async function renderDay(seed: number, s: ReportFileSpec): Promise<string> {
  const ds = createDataset({
    seed,
    organizations: orgs,
    transactionsPerDay: 300,
    startDate: '2024-03-01',
    quietDayRate: 0,
  });
  return text(renderReport(s, ds.between('m1', s.start, s.end)));
}

describe('deterministic dataset', () => {
  it('same seed → same bytes; another seed → other bytes', async () => {
    const s = spec('TransactionRequestClass', 'text/csv', { fieldNameConvention: 'SOAPI' });
    const a = await renderDay(42, s);
    const b = await renderDay(42, s);
    const c = await renderDay(43, s);
    expect(a.length).toBeGreaterThan(10_000);
    expect(b).toBe(a);
    expect(c).not.toBe(a);
  });

  it('a transaction rebuilt on its own equals the one in the day stream', () => {
    const ds = createDataset({
      seed: 5,
      organizations: orgs,
      transactionsPerDay: 50,
      startDate: '2024-03-01',
    });
    const day = [...ds.day('m2', '2024-03-04')];
    expect(
      day.length === 0 ||
        JSON.stringify(ds.transaction(orgs[1]!, '2024-03-04', 7)) === JSON.stringify(day[7]),
    ).toBe(true);
  });

  it('has no data before startDate, 22-digit unique request ids, times in order', () => {
    const ds = createDataset({
      seed: 9,
      organizations: orgs,
      transactionsPerDay: 500,
      startDate: '2024-03-01',
      quietDayRate: 0,
    });
    expect([...ds.day('m1', '2024-02-29')]).toHaveLength(0);
    const day = [...ds.day('m1', '2024-03-02')];
    expect(day).toHaveLength(500);
    expect(new Set(day.map((t) => t.requestId)).size).toBe(500);
    for (const t of day) expect(t.requestId).toMatch(/^\d{22}$/);
    for (let i = 1; i < day.length; i++) expect(day[i]!.time).toBeGreaterThanOrEqual(day[i - 1]!.time);
    const kinds = new Set(day.map((t) => t.kind));
    for (const k of ['sale', 'auth', 'capture', 'refund', 'void', 'decline', 'echeck_debit'])
      expect(kinds).toContain(k);
    const currencies = new Set(day.map((t) => t.currency));
    for (const c of ['USD', 'EUR', 'GBP', 'JPY']) expect(currencies).toContain(c);
    for (const t of day) expect(Number.isInteger(t.amount)).toBe(true);
  });
});

describe('CSV report files', () => {
  it('are valid RFC 4180 with quoted commas, quotes and line breaks, CRLF, the metadata line and SOAPI headers', async () => {
    const s = spec('TransactionRequestClass', 'text/csv', { fieldNameConvention: 'SOAPI' });
    const csv = await renderDay(7, s);
    expect(csv.endsWith('\r\n')).toBe(true);
    expect(csv).toContain('"Smith, Jones & Co."');
    expect(csv).toContain('"The ""Best"" Widgets Ltd"');
    expect(csv).toMatch(/"Suite 500\nOne Market Plaza"/);
    expect(csv.replace(/"[^"]*"/g, '').replace(/\r\n/g, '')).not.toContain('\n');
    const rows = parse(csv, { relax_column_count: false }) as string[][];
    const width = s.fields.length;
    for (const r of rows) expect(r).toHaveLength(width);
    const [meta, header, ...data] = rows;
    expect(meta!.slice(0, 5)).toEqual([
      'm1',
      'R1',
      'TransactionRequest',
      '1.10',
      '2024-03-05T00:00:00Z to 2024-03-06T00:00:00Z',
    ]);
    expect(meta!.slice(5).every((v) => v === '')).toBe(true);
    expect(header).toEqual(s.fields.map((f) => headerName(f, 'SOAPI')));
    expect(data.length).toBeGreaterThan(250);
    const amountIndex = s.fields.indexOf('PaymentData.Amount');
    const currencyIndex = s.fields.indexOf('PaymentData.CurrencyCode');
    for (const r of data) {
      const amount = r[amountIndex]!;
      const currency = r[currencyIndex]!;
      const decimals = currency === 'JPY' ? 0 : currency === 'KWD' ? 3 : 2;
      expect(amount).toMatch(decimals === 0 ? /^\d+$/ : new RegExp(`^\\d+\\.\\d{${decimals}}$`));
      expect(r[1]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    }
  });

  it('uses the Classic names (LF) without a convention and the documented SCMP names with SCMP', async () => {
    const plain = await renderDay(7, spec('FundingDetailClass', 'text/csv'));
    expect(plain).not.toContain('\r\n');
    expect(
      plain.split('\n')[1]!.startsWith('request_id,merchant_id,merchant_ref_number,amount,currency,'),
    ).toBe(true);
    const scmp = await renderDay(7, spec('FundingDetailClass', 'text/csv', { fieldNameConvention: 'SCMP' }));
    expect(
      scmp
        .split('\r\n')[1]!
        .startsWith('request_id,request_merchant_id,merchant_ref_number,grand_total_amount,currency,'),
    ).toBe(true);
  });

  it('writes refunds negative with signedAmounts', async () => {
    const csv = await renderDay(7, spec('TransactionRequestClass', 'text/csv', { signedAmounts: true }));
    const rows = parse(csv) as string[][];
    const f = reportDefinition('TransactionRequestClass')!.fields;
    const refunds = rows.slice(2).filter((r) => r[f.indexOf('Application.Name')] === 'ics_credit');
    expect(refunds.length).toBeGreaterThan(0);
    for (const r of refunds) expect(r[f.indexOf('PaymentData.Amount')]).toMatch(/^-/);
  });
});

describe('XML report files', () => {
  const parser = new XMLParser({
    ignoreAttributes: false,
    parseTagValue: false,
    parseAttributeValue: false,
    isArray: (n) => ['Batch', 'Request'].includes(n),
  });

  it('Payment Batch Detail is well-formed and nested like the legacy sample', async () => {
    const xml = await renderDay(3, spec('PaymentBatchDetailClass', 'application/xml'));
    expect(XMLValidator.validate(xml)).toBe(true);
    const doc = parser.parse(xml) as { Report: Record<string, unknown> };
    const report = doc.Report as Record<string, string> & {
      Batches: { Batch: { Requests: { Request: Record<string, string>[] } }[] };
    };
    expect(report['@_Name']).toBe('Payment Batch Detail');
    expect(report['@_Version']).toBe('1.0');
    expect(report['@_xmlns']).toBe('http://reports.ic3.com/reports/pbdr/1.0');
    expect(report['@_MerchantID']).toBe('m1');
    const req = report.Batches.Batch[0]!.Requests.Request[0]!;
    expect(req['@_RequestID']).toMatch(/^\d{22}$/);
    for (const k of ['TransactionReferenceNumber', 'PaymentMethod', 'CurrencyCode', 'Amount', 'Application'])
      expect(req).toHaveProperty(k);
  });

  it('Transaction Request is well-formed Transaction Detail XML, properly escaped', async () => {
    const xml = await renderDay(7, spec('TransactionRequestClass', 'application/xml'));
    expect(XMLValidator.validate(xml)).toBe(true);
    expect(xml).toContain('Smith, Jones &amp; Co.');
    expect(xml).toContain('Globex &lt;Intl&gt;');
    const doc = parser.parse(xml) as {
      Report: { Requests: { Request: Record<string, Record<string, unknown>>[] } };
    };
    const r = doc.Report.Requests.Request[0]!;
    expect(r['@_RequestDate']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(r['BillTo']).toHaveProperty('FirstName');
    expect(r['PaymentData']).toHaveProperty('Amount');
    expect(r['ApplicationReplies']).toHaveProperty('ApplicationReply');
    expect(r['MerchantDefinedData']).toHaveProperty('field1');
  });

  it('other definitions: one element per group, one per field', async () => {
    const xml = await renderDay(7, spec('ConversionDetailClass', 'application/xml'));
    expect(XMLValidator.validate(xml)).toBe(true);
    const doc = parser.parse(xml) as {
      Report: { Requests: { Request: Record<string, Record<string, string>>[] } };
    };
    const r = doc.Report.Requests.Request[0]!;
    expect(r['@_RequestID']).toMatch(/^\d{22}$/);
    expect(r['Conversion']).toHaveProperty('NewDecision');
    expect(r['PaymentData']).toHaveProperty('Amount');
  });
});

describe('money and time', () => {
  it('formats minor units exactly', () => {
    expect(formatMoney(1234, 'USD')).toBe('12.34');
    expect(formatMoney(-5, 'USD')).toBe('-0.05');
    expect(formatMoney(1500, 'JPY')).toBe('1500');
    expect(formatMoney(1, 'KWD')).toBe('0.001');
    expect(sumDecimals(['0.10', '0.20', '-0.05'])).toBe('0.25');
    const t = new MoneyTally();
    t.add(10, 'USD');
    t.add(3, 'JPY');
    expect(t.currencies()).toEqual({ JPY: '3', USD: '0.10' });
    expect(t.total()).toBe('3.100');
  });

  it('converts zoned wall clock, with daylight saving', () => {
    expect(new Date(zonedTime('2024-03-10', 0, 0, 'America/Los_Angeles')).toISOString()).toBe(
      '2024-03-10T08:00:00.000Z',
    );
    expect(new Date(zonedTime('2024-03-11', 0, 0, 'America/Los_Angeles')).toISOString()).toBe(
      '2024-03-11T07:00:00.000Z',
    );
    expect(isoInZone(Date.parse('2024-03-11T07:00:00Z'), 'America/Los_Angeles')).toBe(
      '2024-03-11T00:00:00-07:00',
    );
    expect(localDate(Date.parse('2024-03-11T06:59:59Z'), 'America/Los_Angeles')).toBe('2024-03-10');
    expect(parseIsoDateTime('2024-03-01T17:30:00.000+05:30')).toBe(Date.parse('2024-03-01T12:00:00Z'));
    expect(parseIsoDateTime('2024-03-01T00:00:00.000-0700')).toBe(Date.parse('2024-03-01T07:00:00Z'));
    expect(parseIsoDateTime('2024-03-01')).toBeUndefined();
    expect(parseIsoDateTime('2024-02-30T00:00:00Z')).toBeUndefined();
  });
});
