import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { openXmlReport } from '../../../../src/parse/xml/xml-report.js';
import { CATALOG_FIELDS } from '../../../../src/catalog/index.js';
import { CybsError } from '../../../../src/errors.js';
import { chunked, collect, rowsOf } from '../helpers.js';

async function open(text: string, chunk = 5, report?: string) {
  return openXmlReport(chunked(text, chunk), {
    fileName: 'test.xml',
    ...(report === undefined ? {} : { report }),
  });
}

async function thrown(text: string): Promise<CybsError> {
  try {
    await collect(await open(text));
  } catch (error) {
    expect(error).toBeInstanceOf(CybsError);
    return error as CybsError;
  }
  throw new Error('expected an error');
}

const TDR = `<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE Report SYSTEM "https://ebc.cybersource.com/ebc/reports/dtd/tdr_1_1.dtd">
<Report xmlns="https://ebc.cybersource.com/ebc/reports/dtd/tdr_1_1.dtd" Name="Transaction Request" Version="1.1"
        MerchantID="m1" ReportStartDate="2024-01-01T00:00:00-08:00" ReportEndDate="2024-01-02T00:00:00-08:00">
  <Requests>
    <!-- a comment with <Request> inside -->
    <Request RequestID="1234567890123456789012" TransactionDate="2024-01-01T10:00:00-08:00"
             MerchantReferenceNumber="ref&amp;1">
      <BillTo><LastName>O'Neil</LastName><FirstName>Zoë &lt;Z&gt;</FirstName></BillTo>
      <LineItems>
        <LineItem Number="0"><UnitPrice>1.50</UnitPrice><Quantity>2</Quantity><ProductName>A</ProductName></LineItem>
        <LineItem Number="1"><UnitPrice>2.00</UnitPrice><Quantity>1</Quantity><ProductName>B</ProductName></LineItem>
      </LineItems>
      <Custom><Inner><Leaf>0004</Leaf></Inner></Custom>
      <Note><![CDATA[a </Request> & b]]></Note>
      <Empty/>
    </Request>
    <Request RequestID="2" TransactionDate="2024-01-02T00:00:00Z"/>
  </Requests>
</Report>
`;

describe('XML reports: mapping', () => {
  it('flattens groups, keeps the first repeated child and the whole set as JSON', async () => {
    const source = await open(TDR, 3);
    expect(source.metadata).toMatchObject({
      reportName: 'Transaction Request',
      version: '1.1',
      organizationId: 'm1',
      startTime: '2024-01-01T08:00:00.000Z',
      reportDefinition: 'TransactionRequestClass',
    });
    const { records, rejects } = await collect(source);
    expect(rejects).toEqual([]);
    const rows = rowsOf(source, records);
    expect(rows[0]).toEqual({
      request_id: '1234567890123456789012',
      transaction_date: '2024-01-01T18:00:00.000Z',
      merchant_reference_number: 'ref&1',
      bill_to_last_name: "O'Neil",
      bill_to_first_name: 'Zoë <Z>',
      line_items_line_item_json: JSON.stringify([
        { '@Number': '0', UnitPrice: '1.50', Quantity: '2', ProductName: 'A' },
        { '@Number': '1', UnitPrice: '2.00', Quantity: '1', ProductName: 'B' },
      ]),
      line_items_number: 0,
      line_items_unit_price: '1.50',
      line_items_quantity: 2,
      line_items_product_name: 'A',
      custom_inner_leaf: '0004',
      request_note: 'a </Request> & b',
      request_empty: null,
    });
    expect(rows[1]).toMatchObject({
      request_id: '2',
      transaction_date: '2024-01-02T00:00:00.000Z',
      bill_to_first_name: null,
    });
    expect(records.map((r) => r.recordNumber)).toEqual([1, 2]);
    expect(source.unknownColumns.map((c) => c.sourceName)).toEqual([
      'LineItems.LineItem_json',
      'Custom.Inner.Leaf',
      'Request.Note',
      'Request.Empty',
    ]);
  });

  it('leaves the items of a group with a child table out of the records', async () => {
    const source = await openXmlReport(chunked(TDR, 3), { fileName: 'test.xml', childTables: ['line_item'] });
    const { records } = await collect(source);
    expect(rowsOf(source, records)[0]).toEqual({
      request_id: '1234567890123456789012',
      transaction_date: '2024-01-01T18:00:00.000Z',
      merchant_reference_number: 'ref&1',
      bill_to_last_name: "O'Neil",
      bill_to_first_name: 'Zoë <Z>',
      custom_inner_leaf: '0004',
      request_note: 'a </Request> & b',
      request_empty: null,
    });
    expect([...source.repeatedGroupsSeen()]).toEqual(['line_item']);
  });

  it('applies enclosing attributes to records and lists columns found later as new', async () => {
    const xml = `<Report><Batches>
      <Batch BatchID="1" BatchDate="2023-10-11T04:15:21Z"><Requests><Request RequestID="a"><Amount>1.00</Amount></Request></Requests></Batch>
      <Batch BatchID="2" BatchDate="2023-10-12"><Requests><Request RequestID="b"><Amount>2.00</Amount><CurrencyCode>USD</CurrencyCode></Request></Requests></Batch>
    </Batches></Report>`;
    const source = await openXmlReport(chunked(xml, 4), { fileName: 't.xml', batchSize: 1 });
    const { records, batches } = await collect(source);
    expect(batches.map((b) => b.newColumns.map((c) => c.column))).toEqual([[], ['currency_code']]);
    expect(rowsOf(source, records)).toEqual([
      {
        request_id: 'a',
        amount: '1.00',
        batch_id: '1',
        batch_date: '2023-10-11T04:15:21.000Z',
        currency_code: null,
      },
      {
        request_id: 'b',
        amount: '2.00',
        batch_id: '2',
        batch_date: '2023-10-12T00:00:00.000Z',
        currency_code: 'USD',
      },
    ]);
  });

  it('does not expand entities declared in a DOCTYPE (billion laughs)', async () => {
    const lol = Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i};`.repeat(10)}">`).join(
      '',
    );
    const xml = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol0 "lol">${lol}]><Report><Request><Note>&lol9;</Note></Request></Report>`;
    const source = await open(xml, 64);
    const { records, rejects } = await collect(source);
    // Never expanded: the record that uses the entity is a reject, kept as written.
    expect(records).toEqual([]);
    expect(rejects).toHaveLength(1);
    expect(rejects[0]!.raw).toBe('<Request><Note>&lol9;</Note></Request>');
    expect(rejects[0]!.message).toContain('the entity &lol9; is not defined');
  });

  it('types values by the catalog and rejects bad ones with the record number', async () => {
    const xml = `<Report><Request RequestID="1"><Amount>12,50</Amount></Request><Request RequestID="2"><Amount>3</Amount></Request></Report>`;
    const { records, rejects } = await collect(await open(xml));
    expect(records.map((r) => r.recordNumber)).toEqual([2]);
    expect(rejects).toHaveLength(1);
    expect(rejects[0]).toMatchObject({
      recordNumber: 1,
      code: 'MAP_INVALID_VALUE',
      field: 'Request.Amount',
      value: '12,50',
    });
    expect(rejects[0]!.raw).toBe('<Request RequestID="1"><Amount>12,50</Amount></Request>');
    expect(rejects[0]!.message).toMatch(
      /^test\.xml record 1: field Request\.Amount \(column amount, numeric\)/,
    );
  });
});

describe('XML reports: bad input', () => {
  it('throws PARSE_XML_INVALID with the record number for mismatched tags', async () => {
    const error = await thrown('<Report><Request><A>1</A></Request><Request><A>1</B></Request></Report>');
    expect(error.code).toBe('PARSE_XML_INVALID');
    expect(error.stage).toBe('parse');
    expect(error.context).toMatchObject({ file: 'test.xml', record: 2 });
  });

  it('throws PARSE_XML_INVALID for a truncated document', async () => {
    const error = await thrown('<Report><Request><A>1</A></Request><Request><A>1</A>');
    expect(error.code).toBe('PARSE_XML_INVALID');
    expect(error.context).toMatchObject({ record: 2 });
    expect(error.message).toMatch(/end of document/);
    const unclosed = await thrown('<Report><Request><A>1</A></Request>');
    expect(unclosed.code).toBe('PARSE_XML_INVALID');
  });

  it('throws PARSE_XML_INVALID for text or a second element after the root', async () => {
    expect((await thrown('<Report/><Report/>')).code).toBe('PARSE_XML_INVALID');
    expect((await thrown('<Report/>junk')).code).toBe('PARSE_XML_INVALID');
    expect((await thrown('junk')).code).toBe('PARSE_XML_INVALID');
  });

  it('throws PARSE_EMPTY for an empty document', async () => {
    const error = await thrown('');
    expect(error.code).toBe('PARSE_EMPTY');
    expect((await thrown('<?xml version="1.0"?>\n')).code).toBe('PARSE_EMPTY');
  });
});

const XML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
  '\r': '&#13;',
};
const escapeXml = (s: string): string => s.replace(/[&<>"'\r]/g, (c) => XML_ESCAPES[c]!);

describe('XML reports: round trip (property)', () => {
  const textFields = CATALOG_FIELDS.filter(
    (f) => f.pgType === 'text' && f.group !== 'Request' && f.group !== 'PaymentData',
  );
  const byGroup = new Map<string, typeof textFields>();
  for (const f of textFields) byGroup.set(f.group, [...(byGroup.get(f.group) ?? []), f]);
  const groups = [...byGroup.keys()].filter((g) => /^[A-Za-z]+$/.test(g));
  // XML text cannot hold most C0 controls; everything else (unicode, quotes, markup) must survive.
  const value = fc
    .string({ unit: 'grapheme', minLength: 1, maxLength: 10 })
    // eslint-disable-next-line no-control-regex
    .map((s) => s.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, ''))
    .filter((s) => s !== '');

  it('parses any record set built from catalog fields back to the same records', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.tuple(
            fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 22, maxLength: 22 }),
            fc.array(fc.tuple(fc.constantFrom(...groups), fc.nat(), value), { maxLength: 6 }),
          ),
          { minLength: 1, maxLength: 8 },
        ),
        fc.integer({ min: 1, max: 40 }),
        async (specs, chunk) => {
          const expected: Map<string, string>[] = [];
          const body = specs
            .map(([requestId, entries]) => {
              const values = new Map<string, string>([['request_id', requestId]]);
              const elements = new Map<string, Map<string, string>>();
              for (const [group, n, v] of entries) {
                const fields = byGroup.get(group)!;
                const field = fields[n % fields.length]!;
                const children = elements.get(group) ?? new Map<string, string>();
                if (children.has(field.name)) continue;
                children.set(field.name, v);
                elements.set(group, children);
                values.set(field.column, v);
              }
              expected.push(values);
              const inner = [...elements]
                .map(
                  ([group, children]) =>
                    `<${group}>${[...children].map(([k, v]) => `<${k}>${escapeXml(v)}</${k}>`).join('')}</${group}>`,
                )
                .join('\n');
              return `<Request RequestID="${requestId}">${inner}</Request>`;
            })
            .join('\n');
          const xml = `<?xml version="1.0"?>\n<Report Name="Transaction Request"><Requests>\n${body}\n</Requests></Report>\n`;
          const source = await openXmlReport(chunked(xml, chunk), { fileName: 'prop.xml' });
          const { records, rejects } = await collect(source);
          expect(rejects).toEqual([]);
          expect(source.unknownColumns).toEqual([]);
          const rows = rowsOf(source, records);
          expect(rows).toHaveLength(expected.length);
          rows.forEach((row, i) => {
            const want = expected[i]!;
            for (const [column, v] of Object.entries(row)) expect(v, column).toBe(want.get(column) ?? null);
          });
        },
      ),
      { numRuns: 150 },
    );
  });
});
