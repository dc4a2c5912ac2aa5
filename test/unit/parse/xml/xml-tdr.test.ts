/**
 * The Transaction Detail XML layout (audit #8), read from the real killbill `tdr_1_6` file
 * (samples/cybersource) and a file in the `tdr_1_3` layout of the same source: DOCTYPE, Request
 * attributes (RequestDate is the transaction date), nested groups in typed columns, the items of
 * ApplicationReplies and LineItems as child rows, and every timestamp form these files use.
 */
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CATALOG_FIELDS, coerceValue, findField } from '../../../../src/catalog/index.js';
import { XML_REPEATED_GROUPS } from '../../../../src/catalog/child-tables.js';
import { PERIOD_FIELDS, filterToWindow } from '../../../../src/extract/one-time-reports.js';
import { canonicalCopyValue } from '../../../../src/copy-text/canonical.js';
import { openXmlReport } from '../../../../src/parse/xml/xml-report.js';
import type { OpenXmlReportOptions } from '../../../../src/parse/xml/xml-report.js';
import { chunked, collect, rowsOf, samplesDir } from '../helpers.js';

const KILLBILL = 'transaction-detail-tdr_1_6.killbill-excerpt.xml';
const REPORT = 'TransactionRequestClass';

/** Both repeated groups go to child tables, as for the Transaction Request table. */
const CHILD_TABLES = XML_REPEATED_GROUPS.map((g) => g.name);

const openSample = (options: Partial<OpenXmlReportOptions> = {}) =>
  openXmlReport(createReadStream(join(samplesDir, KILLBILL), { highWaterMark: 64 }), {
    fileName: KILLBILL,
    report: REPORT,
    childTables: CHILD_TABLES,
    ...options,
  });

/** The `tdr_1_3` layout (killbill's other fixture): a space-separated ReportStartDate with milliseconds, PredecessorRequestID. */
const TDR_1_3 = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE Report SYSTEM "https://ebctest.cybersource.com/ebctest/reports/dtd/tdr_1_3.dtd">
<Report xmlns="https://ebctest.cybersource.com/ebctest/reports/dtd/tdr_1_3.dtd" Name="Transaction Detail" Version="1.3"
        MerchantID="m13" ReportStartDate="2008-09-10 21:46:41.765-08:00" ReportEndDate="2008-09-11 21:46:41.765-08:00">
  <Requests>
    <Request MerchantReferenceNumber="ref-13" RequestDate="2008-09-10T14:00:08-08:00" RequestID="1300000000000000000001"
             SubscriptionID="" Source="SCMP API" User="someone" TransactionReferenceNumber="0001094522"
             PredecessorRequestID="1200000000000000000009">
      <BillTo><FirstName>A</FirstName><Zip>06513</Zip></BillTo>
      <ShipTo><City>Mountain View</City><Zip>94043</Zip></ShipTo>
      <PaymentMethod><Card><AccountSuffix>1111</AccountSuffix><ExpirationMonth>11</ExpirationMonth><ExpirationYear>2011</ExpirationYear><CardType>Visa</CardType></Card></PaymentMethod>
      <LineItems>
        <LineItem Number="0"><FulfillmentType/><Quantity>1</Quantity><UnitPrice>1.56</UnitPrice><TaxAmount>0.25</TaxAmount><MerchantProductSKU>sku-1</MerchantProductSKU><ProductName>P1</ProductName><ProductCode>electronic_software</ProductCode></LineItem>
        <LineItem Number="1"><Quantity>2</Quantity><UnitPrice>3.00</UnitPrice></LineItem>
      </LineItems>
      <ApplicationReplies>
        <ApplicationReply Name="ics_bill"><RCode>1</RCode><RFlag>SOK</RFlag><RMsg>Request was processed successfully.</RMsg></ApplicationReply>
      </ApplicationReplies>
      <PaymentData><PaymentProcessor>vital</PaymentProcessor><Amount>1.81</Amount><CurrencyCode>eur</CurrencyCode><TotalTaxAmount>0.25</TotalTaxAmount></PaymentData>
    </Request>
  </Requests>
</Report>
`;

const openText = (text: string, options: Partial<OpenXmlReportOptions> = {}) =>
  openXmlReport(chunked(text, 13), {
    fileName: 't.xml',
    report: REPORT,
    childTables: CHILD_TABLES,
    ...options,
  });

/**
 * Every value of the killbill file outside its repeated groups, by the catalog field that
 * documents it (Reporting User Guide field groups; PaymentProcessor, TotalTaxAmount and
 * GrandTotal from the real file).
 */
const KILLBILL_FIELDS: Record<string, string | null> = {
  'Request.RequestID': '2434465504100167904567',
  'Request.TransactionDate': '2009-05-27T17:49:10+05:30',
  'Request.MerchantReferenceNumber': '1234',
  'Request.Source': 'SCMP API',
  'Request.User': null,
  'Request.SubscriptionID': null,
  'Request.TransactionReferenceNumber': '00013791KV8BZF3P',
  'BillTo.FirstName': 'sample',
  'BillTo.LastName': 'merchant',
  'BillTo.Address1': '11 Lico Ave',
  'BillTo.City': 'Big City',
  'BillTo.State': 'CA',
  'BillTo.Zip': '99999',
  'BillTo.Email': 'smerchant@example.com',
  'BillTo.Country': 'US',
  'BillTo.Phone': null,
  'ShipTo.City': 'xyz',
  'ShipTo.Zip': '95117',
  'PaymentMethod.AccountSuffix': '7392',
  'PaymentMethod.ExpirationMonth': '12',
  'PaymentMethod.ExpirationYear': '2009',
  'PaymentMethod.CardType': 'Visa',
  'PaymentData.PaymentRequestID': '2434465504100167904567',
  'PaymentData.PaymentProcessor': 'smartpay',
  'PaymentData.Amount': '2.00',
  'PaymentData.CurrencyCode': 'USD',
  'PaymentData.TotalTaxAmount': '0.00',
  'PaymentData.AuthorizationType': 'O',
  'PaymentData.AuthorizationCode': '888888',
  'PaymentData.AVSResult': 'I1',
  'PaymentData.AVSResultMapped': 'X',
  'PaymentData.GrandTotal': '2.00',
  'Merchant-DefinedDataFields.MerchantDefinedData_field1': 'ca',
};

/** Fields the `tdr_1_3` layout adds to the ones above. */
const TDR_1_3_FIELDS = ['Request.PredecessorRequestID'];

describe('Transaction Detail XML (tdr_1_6, killbill)', () => {
  it('reads the DOCTYPE’d file: report metadata, RequestDate as the transaction date, typed values', async () => {
    const source = await openSample();
    expect(source.metadata).toMatchObject({
      reportName: 'Transaction Detail',
      version: '1.6',
      organizationId: 'ok_go',
      startTime: '2009-05-27T02:30:00.000Z',
      endTime: '2009-05-28T02:30:00.000Z',
      reportDefinition: REPORT,
    });
    const { records, rejects } = await collect(source);
    expect(rejects).toEqual([]);
    expect(records.map((r) => r.recordNumber)).toEqual([1]);
    const [row] = rowsOf(source, records);
    expect(row).toMatchObject({
      request_id: '2434465504100167904567',
      transaction_date: '2009-05-27T12:19:10.000Z',
      merchant_reference_number: '1234',
      transaction_reference_number: '00013791KV8BZF3P',
      bill_to_first_name: 'sample',
      bill_to_phone: null,
      amount: '2.00',
      currency_code: 'USD',
      merchant_defined_data_field1: 'ca',
    });
    const transactionDate = source.columns.find((c) => c.column === 'transaction_date')!;
    expect(transactionDate.field).toMatchObject({ kind: 'catalog', id: 'Request.TransactionDate' });
    expect(transactionDate.sourceName).toBe('Request.TransactionDate');
    // The repeated groups are not columns of the records, not even as JSON; the label of a
    // merchant-defined field (name="mdd1") is not a value.
    const names = source.columns.map((c) => `${c.column} ${c.sourceName}`).join('\n');
    expect(names).not.toMatch(/json|application|line_item|ApplicationRepl|LineItem|\.name\b/i);
    expect([...source.repeatedGroupsSeen()].sort()).toEqual(['application_reply', 'line_item']);
  });

  it('lands every documented value in its catalog column: no text column for a documented field', async () => {
    const source = await openSample();
    const { records, rejects } = await collect(source);
    expect(rejects).toEqual([]);
    expect(source.unknownColumns.map((c) => c.sourceName)).toEqual([]);
    const [row] = rowsOf(source, records);
    for (const [id, raw] of Object.entries(KILLBILL_FIELDS)) {
      const field = findField(id)!;
      expect({ id, value: row![field.column] }).toEqual({
        id,
        value: raw === null ? null : coerceValue(field.pgType, raw),
      });
    }
    const layout13 = await openText(TDR_1_3);
    await collect(layout13);
    expect(layout13.unknownColumns.map((c) => c.sourceName)).toEqual([]);
  });

  it('reads the application replies and line items as child rows keyed by request id and number', async () => {
    const replies = await openSample({ repeatedGroup: 'application_reply' });
    const got = await collect(replies);
    expect(got.rejects).toEqual([]);
    expect(got.records.map((r) => r.recordNumber)).toEqual([1, 1, 1]);
    expect(rowsOf(replies, got.records)).toEqual([
      {
        request_id: '2434465504100167904567',
        reply_number: 1,
        application_name: 'ics_auth',
        application_rcode: '1',
        application_rflag: 'SOK',
        application_rmsg: 'Request was processed successfully.',
      },
      {
        request_id: '2434465504100167904567',
        reply_number: 2,
        application_name: 'ics_decision',
        application_rcode: '0',
        application_rflag: 'DREVIEW',
        application_rmsg: 'Decision is REVIEW.',
      },
      {
        request_id: '2434465504100167904567',
        reply_number: 3,
        application_name: 'ics_score',
        application_rcode: '1',
        application_rflag: 'DSCORE',
        application_rmsg: 'Score exceeds threshold. Score = 84',
      },
    ]);
    expect(replies.unknownColumns).toEqual([]);
    expect(replies.columns[1]!.field).toMatchObject({ kind: 'derived', pgType: 'integer' });

    const items = await openSample({ repeatedGroup: 'line_item' });
    const lines = await collect(items);
    expect(lines.rejects).toEqual([]);
    expect(rowsOf(items, lines.records)).toEqual([
      {
        request_id: '2434465504100167904567',
        line_items_number: 0,
        line_items_fulfillment_type: 'P',
        line_items_quantity: 1,
        line_items_unit_price: '2.00',
        line_items_tax_amount: '0.00',
        line_items_product_code: 'default',
      },
    ]);
    expect(items.unknownColumns).toEqual([]);
  });

  it('keeps the items in the records (first item typed, all as JSON) for a table without child tables', async () => {
    const source = await openSample({ childTables: [] });
    const { records } = await collect(source);
    const [row] = rowsOf(source, records);
    expect(row).toMatchObject({
      line_items_number: 0,
      line_items_unit_price: '2.00',
    });
    expect(JSON.parse(row!.application_replies_application_reply_json as string)).toHaveLength(3);
  });

  it('finds the period field of a one-time report in it (no EXTRACT_ONE_TIME_NO_PERIOD_FIELD)', async () => {
    const field = PERIOD_FIELDS[REPORT]!;
    const inside = filterToWindow(await openSample(), field, window('2009-05-27T00:00:00Z'), true);
    expect((await collect(inside)).records).toHaveLength(1);
    const outside = filterToWindow(await openSample(), field, window('2009-05-28T00:00:00Z'), true);
    expect((await collect(outside)).records).toHaveLength(0);
  });
});

function window(start: string): { start: Date; end: Date } {
  const s = new Date(start);
  return { start: s, end: new Date(s.getTime() + 86_400_000) };
}

describe('Transaction Detail XML (tdr_1_3 layout)', () => {
  it('reads its attributes, line items numbered by their Number, and the space-separated report time', async () => {
    const source = await openText(TDR_1_3);
    expect(source.metadata).toMatchObject({
      startTime: '2008-09-11T05:46:41.765Z',
      endTime: '2008-09-12T05:46:41.765Z',
      organizationId: 'm13',
    });
    const { records, rejects } = await collect(source);
    expect(rejects).toEqual([]);
    expect(rowsOf(source, records)[0]).toMatchObject({
      request_id: '1300000000000000000001',
      transaction_date: '2008-09-10T22:00:08.000Z',
      bill_to_zip: '06513',
      amount: '1.81',
    });
    // The attributes this layout adds are documented fields, each in its catalog column.
    for (const id of TDR_1_3_FIELDS) {
      const field = findField(id)!;
      expect(source.columns.find((c) => c.column === field.column)?.field).toMatchObject({ id });
    }
    const items = await openText(TDR_1_3, { repeatedGroup: 'line_item' });
    const lines = await collect(items);
    expect(rowsOf(items, lines.records)).toEqual([
      {
        request_id: '1300000000000000000001',
        line_items_number: 0,
        line_items_fulfillment_type: null,
        line_items_quantity: 1,
        line_items_unit_price: '1.56',
        line_items_tax_amount: '0.25',
        line_items_merchant_product_sku: 'sku-1',
        line_items_product_name: 'P1',
        line_items_product_code: 'electronic_software',
      },
      expect.objectContaining({
        line_items_number: 1,
        line_items_quantity: 2,
        line_items_unit_price: '3.00',
      }),
    ]);
  });
});

describe('Transaction Detail XML (tdr_1_5 layout, an eCheck)', () => {
  // The Magento module's mock: <PaymentMethod><Check> instead of <Card>.
  const CHECK = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE Report SYSTEM "https://ebctest.cybersource.com/ebctest/reports/dtd/tdr_1_5.dtd">
<Report xmlns="https://ebctest.cybersource.com/ebctest/reports/dtd/tdr_1_5.dtd" Name="Transaction Detail" Version="1.5" MerchantID="m15" ReportStartDate="2017-02-23 15:51:07.460+00:00" ReportEndDate="2017-02-23 15:51:07.460+00:00">
  <Requests>
    <Request MerchantReferenceNumber="15" RequestDate="2017-02-01T00:28:59+00:00" RequestID="1500000000000000000001" SubscriptionID="" Source="SOAP Toolkit API" TransactionReferenceNumber="T15">
      <PaymentMethod><Check><AccountSuffix>4100</AccountSuffix><CheckNumber /></Check></PaymentMethod>
      <ApplicationReplies><ApplicationReply Name="ics_ecp_debit"><RCode>1</RCode><RFlag>SOK</RFlag></ApplicationReply></ApplicationReplies>
      <PaymentData><Amount>37.00</Amount></PaymentData>
    </Request>
  </Requests>
</Report>`;

  it('never lands a check’s account suffix in a card column', async () => {
    const source = await openText(CHECK);
    const { records, rejects } = await collect(source);
    expect(rejects).toEqual([]);
    const suffix = source.columns.find((c) => c.sourceName.endsWith('AccountSuffix'))!;
    expect(suffix.field.kind === 'catalog' ? suffix.field.id : suffix.sourceName).toMatch(/Check/);
    expect(rowsOf(source, records)[0]).toMatchObject({
      [suffix.column]: '4100',
      transaction_date: '2017-02-01T00:28:59.000Z',
      amount: '37.00',
    });
  });
});

describe('repeated groups', () => {
  const XML = `<Report Name="Transaction Detail" MerchantID="m"><Requests>
    <Request RequestID="r1"><LineItems><LineItem><Quantity>1</Quantity></LineItem><LineItem><Quantity>x</Quantity></LineItem><LineItem><Quantity>3</Quantity></LineItem></LineItems></Request>
    <Request><RequestID>r2</RequestID><ApplicationReplies><ApplicationReply Name="ics_auth"><RCode>1</RCode></ApplicationReply></ApplicationReplies></Request>
    <Request RequestID="r3"/>
  </Requests></Report>`;

  it('numbers line items without a Number by position from 0, takes a RequestID leaf, rejects a bad item alone', async () => {
    const items = await openText(XML, { repeatedGroup: 'line_item' });
    const got = await collect(items);
    expect(rowsOf(items, got.records)).toEqual([
      { request_id: 'r1', line_items_number: 0, line_items_quantity: 1 },
      { request_id: 'r1', line_items_number: 2, line_items_quantity: 3 },
    ]);
    expect(got.rejects.map((r) => [r.recordNumber, r.code, r.field])).toEqual([
      [1, 'MAP_INVALID_VALUE', 'LineItems.Quantity'],
    ]);
    const replies = await openText(XML, { repeatedGroup: 'application_reply' });
    const answered = await collect(replies);
    expect(rowsOf(replies, answered.records)).toEqual([
      { request_id: 'r2', reply_number: 1, application_name: 'ics_auth', application_rcode: '1' },
    ]);
    expect(answered.records.map((r) => r.recordNumber)).toEqual([2]);
  });

  it('leaves no trace of the items in the records, and declares each group once', async () => {
    const source = await openText(XML);
    const { records } = await collect(source);
    expect([...source.repeatedGroupsSeen()].sort()).toEqual(['application_reply', 'line_item']);
    expect(source.columns.map((c) => c.column)).toEqual(['request_id']);
    expect(records).toHaveLength(3);
    expect(new Set(XML_REPEATED_GROUPS.map((g) => g.container)).size).toBe(XML_REPEATED_GROUPS.length);
    for (const group of XML_REPEATED_GROUPS) {
      expect(CATALOG_FIELDS.some((f) => f.group === group.group)).toBe(true);
      if (group.numberField !== undefined)
        expect(findField(group.numberField)!.column).toBe(group.numberColumn);
    }
  });

  it('reads an empty container (only whitespace, or none, inside) as a request without such items', async () => {
    const empty = `<Report Name="Transaction Detail" MerchantID="m"><Requests>
    <Request RequestID="e1"><LineItems>
      </LineItems><ApplicationReplies/></Request>
    <Request RequestID="e2"><LineItems></LineItems><ApplicationReplies>
      </ApplicationReplies></Request>
  </Requests></Report>`;
    const source = await openText(empty);
    const { records, rejects } = await collect(source);
    expect(rejects).toEqual([]);
    expect(records).toHaveLength(2);
    expect(source.columns.map((c) => c.column)).toEqual(['request_id']);
    expect([...source.repeatedGroupsSeen()]).toEqual([]);
    for (const group of XML_REPEATED_GROUPS)
      expect((await collect(await openText(empty, { repeatedGroup: group.name }))).records).toEqual([]);
  });
});

/** The timestamp forms of the real files, and the UTC instant each one is. */
const TIMESTAMPS: [string, string][] = [
  ['2009-05-27T17:49:10+05:30', '2009-05-27T12:19:10.000Z'],
  ['2008-09-10 21:46:41.765-08:00', '2008-09-11T05:46:41.765Z'],
  ['2001-08-16T00:01-07:00', '2001-08-16T07:01:00.000Z'],
  ['2008-09-10T14:00:08-08:00', '2008-09-10T22:00:08.000Z'],
  ['2001-08-16', '2001-08-16T00:00:00.000Z'],
  ['2023-10-11T04:15:21Z', '2023-10-11T04:15:21.000Z'],
];

describe('DOCTYPE', () => {
  it('is never read for entities: nothing is fetched, a record that uses one is a reject as written', async () => {
    const xml = `<?xml version="1.0"?>
<!DOCTYPE Report SYSTEM "https://ebctest.cybersource.com/ebctest/reports/dtd/tdr_1_6.dtd" [
  <!ENTITY xxe SYSTEM "file:///etc/passwd">
  <!ENTITY remote SYSTEM "https://attacker.example/x">
]>
<Report Name="Transaction Detail"><Requests><Request RequestID="1" MerchantReferenceNumber="&xxe;"><BillTo><City>&remote;</City></BillTo></Request></Requests></Report>`;
    const source = await openText(xml);
    const { records, rejects } = await collect(source);
    expect(records).toEqual([]);
    expect(rejects.map((r) => [r.recordNumber, r.raw])).toEqual([
      [
        1,
        '<Request RequestID="1" MerchantReferenceNumber="&xxe;"><BillTo><City>&remote;</City></BillTo></Request>',
      ],
    ]);
    expect(rejects[0]!.message).toContain('the entity &xxe; is not defined');
  });
});

describe('timestamps in every form of the real files', () => {
  it('reads each into its UTC instant, and the fast path sends exactly that instant', async () => {
    const records = TIMESTAMPS.map(
      ([raw], i) =>
        `<Batch BatchDate="${raw}"><Requests><Request RequestID="t${i}" RequestDate="${raw}"/></Requests></Batch>`,
    ).join('');
    const source = await openText(`<Report><Batches>${records}</Batches></Report>`);
    const { records: got, rejects } = await collect(source);
    expect(rejects).toEqual([]);
    const rows = rowsOf(source, got);
    expect(rows.map((r) => [r.transaction_date, r.batch_date])).toEqual(
      TIMESTAMPS.map(([, utc]) => [utc, utc]),
    );
    // The fast path sends canonical UTC as it is and any other form as the coercer's instant.
    for (const [raw, utc] of TIMESTAMPS) {
      const sent = canonicalCopyValue('timestamptz', raw);
      expect(sent).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z$/);
      expect(new Date(sent!).toISOString()).toBe(utc);
    }
    expect(canonicalCopyValue('timestamptz', '2009-02-30T10:00:00+01:00')).toBeUndefined();
    expect(canonicalCopyValue('timestamptz', '27/05/2009')).toBeUndefined();
  });
});
