/**
 * Issue 26 #19: character references XML does not allow (`&#0;`, `&#xD800;`, `&#x110000;`) and
 * entities no one declared (`&nbsp;`, `&foo;`) are rejects of their record, with its text and the
 * reason, never dropped or kept as literal text; elements of another namespace than the report's
 * are not records (nor fields of one). Read on the real Transaction Detail layout (its default
 * namespace `…/tdr_1_6.dtd`) and on Payment Batch Detail's (`http://reports.ic3.com/reports/pbdr/1.0`).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openXmlReport } from '../../../../src/parse/xml/xml-report.js';
import { referenceProblem } from '../../../../src/parse/xml/xml-scanner.js';
import { CybsError } from '../../../../src/errors.js';
import { chunked, collect, rowsOf, samplesDir } from '../helpers.js';

const real = readFileSync(path.join(samplesDir, 'transaction-detail-tdr_1_6.killbill-excerpt.xml'), 'utf8');
const realRecord = /<Request [\s\S]*?<\/Request>/.exec(real)![0];

/** The real file with `records` (each `(id) => text`) in place of its one record. */
function withRecords(...records: ((id: string) => string)[]): string {
  return real.replace(realRecord, records.map((r, i) => r(`9${String(i).padStart(21, '0')}`)).join('\n'));
}
const plain = (id: string) => realRecord.replace(/RequestID="\d+"/, `RequestID="${id}"`);
const cityIs = (value: string) => (id: string) =>
  plain(id).replace('<City>Big City</City>', `<City>${value}</City>`);

async function read(text: string, chunk = 11) {
  const source = await openXmlReport(chunked(text, chunk), { fileName: 'tdr.xml' });
  const { records, rejects } = await collect(source);
  return { rows: rowsOf(source, records), rejects };
}

async function failure(text: string): Promise<CybsError> {
  try {
    await read(text);
  } catch (error) {
    expect(error).toBeInstanceOf(CybsError);
    return error as CybsError;
  }
  throw new Error('expected an error');
}

describe('XML character references and entities', () => {
  it('rejects a record with a reference XML does not allow or an undefined entity, with its text and reason', async () => {
    const bad = ['&#0;', '&#xD800;', '&#x110000;', '&#1114112;', '&nbsp;', '&foo;', 'a & b', '&#x1;'];
    const text = withRecords(plain, ...bad.map((b) => cityIs(`x${b}y`)), cityIs('&#65;&#x1F600;&amp;&lt;'));
    const { rows, rejects } = await read(text);
    expect(rows.map((r) => r.bill_to_city)).toEqual(['Big City', 'A😀&<']);
    expect(rejects.map((r) => r.recordNumber)).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
    for (const [i, reject] of rejects.entries()) {
      expect(reject.code).toBe('PARSE_XML_RECORD');
      expect(reject.raw).toContain(`<City>x${bad[i]!}y</City>`);
      expect(reject.raw).toMatch(/^<Request [\s\S]*<\/Request>$/);
      expect(reject.message).toMatch(/^tdr\.xml record \d+: /);
    }
    expect(rejects[0]!.message).toContain('&#0; is not a character XML allows');
    expect(rejects[1]!.message).toContain('&#xD800; is not a character XML allows');
    expect(rejects[2]!.message).toContain('&#x110000;');
    expect(rejects[4]!.message).toContain('the entity &nbsp; is not defined');
    expect(rejects[6]!.message).toContain('does not start a reference');
  });

  it('reads an & inside CDATA or a comment as text, and checks attributes of the record', async () => {
    const text = withRecords(
      cityIs('<![CDATA[&foo; &#0;]]>'),
      (id) => cityIs('<!-- &nbsp; -->c')(id),
      (id) => plain(id).replace('MerchantReferenceNumber="1234"', 'MerchantReferenceNumber="&#xFFFE;"'),
    );
    const { rows, rejects } = await read(text, 5);
    expect(rows.map((r) => r.bill_to_city)).toEqual(['&foo; &#0;', 'c']);
    expect(rejects).toHaveLength(1);
    expect(rejects[0]!.message).toContain('&#xFFFE;');
  });

  it('fails the file for such a reference in an element enclosing the records (no record to reject)', async () => {
    const error = await failure(real.replace('<Requests>', '<Requests Note="&#0;">'));
    expect(error.code).toBe('PARSE_XML_INVALID');
    expect(error.message).toMatch(/In <Requests>, the character reference &#0;/);
  });

  it('finds the first problem only outside CDATA sections and comments', () => {
    expect(referenceProblem('<a>&amp;&#9;&#xA;</a>')).toBeUndefined();
    expect(referenceProblem('<a><![CDATA[&x;]]><!-- &y; -->&z;</a>')).toContain('&z;');
    expect(referenceProblem('&#xD;&#13;&#x10FFFF;')).toBeUndefined();
    expect(referenceProblem('&#xFFFF;')).toContain('&#xFFFF;');
  });
});

describe('XML attributes twice', () => {
  it('a record with an attribute twice is a reject (not the last value silently); in an enclosing element, malformed', async () => {
    const twice = (id: string) => plain(id).replace(`RequestID="${id}"`, `RequestID="${id}" RequestID="1"`);
    const inLeaf = (id: string) =>
      plain(id).replace(/<ApplicationReply Name="([^"]*)"/, '<ApplicationReply Name="$1" Name="x"');
    const { rows, rejects } = await read(withRecords(plain, twice, inLeaf));
    expect(rows).toHaveLength(1);
    expect(rejects.map((r) => [r.recordNumber, r.message])).toEqual([
      [2, 'tdr.xml record 2: the attribute RequestID appears twice in <Request>; the record is not read.'],
      [
        3,
        'tdr.xml record 3: the attribute Name appears twice in <ApplicationReply>; the record is not read.',
      ],
    ]);
    const error = await failure(real.replace('<Requests>', '<Requests a="1" a="2">'));
    expect(error.code).toBe('PARSE_XML_INVALID');
    expect(error.message).toContain('the attribute a appears twice in <Requests>');
  });
});

describe('XML namespaces: only the report’s own elements are records', () => {
  it('the real Transaction Detail namespace is the report’s: its records load', async () => {
    expect(real).toContain('xmlns="https://ebctest.cybersource.com/ebctest/reports/dtd/tdr_1_6.dtd"');
    const { rows, rejects } = await read(real);
    expect(rows).toHaveLength(1);
    expect(rejects).toEqual([]);
  });

  it('an element of another namespace inside the report is not a record, however it is written', async () => {
    const foreign = (id: string) =>
      plain(id)
        .replace('<Request ', '<evil:Request xmlns:evil="urn:evil" ')
        .replace('</Request>', '</evil:Request>');
    const redeclared = (id: string) => plain(id).replace('<Request ', '<Request xmlns="urn:evil" ');
    const wrapped = (id: string) => `<Wrap xmlns="urn:evil">${plain(id)}</Wrap>`;
    const sameNamespace = (id: string) =>
      plain(id)
        .replace(
          '<Request ',
          '<t:Request xmlns:t="https://ebctest.cybersource.com/ebctest/reports/dtd/tdr_1_6.dtd" ',
        )
        .replace('</Request>', '</t:Request>');
    const { rows, rejects } = await read(withRecords(plain, foreign, redeclared, wrapped, sameNamespace));
    expect(rows.map((r) => r.request_id)).toEqual(['9000000000000000000000', '9000000000000000000004']);
    expect(rejects).toEqual([]);
  });

  it('a record holding an element or attribute of another namespace is a reject', async () => {
    const element = (id: string) =>
      plain(id).replace('<BillTo>', '<BillTo><x:City xmlns:x="urn:evil">Evil</x:City>');
    const attribute = (id: string) =>
      plain(id).replace('<Request ', '<Request xmlns:x="urn:evil" x:Source="evil" ');
    const { rows, rejects } = await read(withRecords(plain, element, attribute));
    expect(rows).toHaveLength(1);
    expect(rows[0]!.bill_to_city).toBe('Big City');
    expect(rejects.map((r) => r.recordNumber)).toEqual([2, 3]);
    expect(rejects[0]!.message).toContain('<x:City> is an element of the namespace "urn:evil"');
    expect(rejects[1]!.message).toContain('has an attribute of the namespace "urn:evil"');
    expect(rejects[0]!.raw).toContain('<x:City xmlns:x="urn:evil">Evil</x:City>');
  });

  it('the report metadata are the root element’s own attributes, not ones of another namespace', async () => {
    const injected = real.replace(
      'Name="Transaction Detail"',
      'xmlns:evil="urn:evil" evil:MerchantID="victim" Name="Transaction Detail"',
    );
    const source = await openXmlReport(chunked(injected, 64), { fileName: 'tdr.xml' });
    expect(source.metadata.organizationId).toBe('ok_go');
    expect(source.metadata.reportName).toBe('Transaction Detail');
  });

  it('a prefix no one declared makes the file malformed', async () => {
    const error = await failure(withRecords((id) => `<evil:Request RequestID="${id}"/>`));
    expect(error.code).toBe('PARSE_XML_INVALID');
    expect(error.message).toContain('The namespace prefix evil of <evil:Request> is not declared');
  });

  it('Payment Batch Detail: records of its namespace load, a foreign batch’s do not', async () => {
    const pbd = readFileSync(
      path.join(samplesDir, 'legacy-docs-PaymentBatchDetailReport.excerpt.xml'),
      'utf8',
    );
    expect(pbd).toContain('http://reports.ic3.com/reports/pbdr/1.0');
    const before = await read(pbd);
    const batch = /<Batch [\s\S]*?<\/Batch>/.exec(pbd)![0];
    const injected = pbd.replace(batch, `${batch}${batch.replace('<Batch ', '<Batch xmlns="urn:evil" ')}`);
    const after = await read(injected);
    expect(after.rows).toEqual(before.rows);
    expect(after.rejects).toEqual(before.rejects);
  });
});
