/**
 * The fast XML path scans the file's bytes and copies each value's bytes into its COPY text line:
 * a value (multi-byte UTF-8, a reference, a backslash, a tab, a line feed) split across chunks at
 * any byte reads as it does in one chunk; a byte order mark split across chunks is skipped; a
 * UTF-16 file, and a file given as text with a surrogate pair split across chunks, read as the
 * same file in UTF-8; bytes that are not UTF-8 in a value refuse (the per-row path judges them).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_PIPELINES } from '../../../../pipelines/index.js';
import { isFastPathRefusal } from '../../../../src/copy-text/fast-path-refusal.js';
import { openRawXmlReport } from '../../../../src/parse/xml/raw-xml-report.js';
import type { FastXmlChildTable } from '../../../../src/parse/xml/raw-xml-report.js';
import { declaredColumns } from '../../../../src/load/report-sources.js';
import { samplesDir } from '../helpers.js';

const REPORT = 'TransactionRequestClass';
const pipeline = REPORT_PIPELINES.find((p) => p.reportDefinitionName === REPORT)!;

let dir = '';
let killbill = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cybs-xml-bytes-'));
  killbill = await readFile(join(samplesDir, 'transaction-detail-tdr_1_6.killbill-excerpt.xml'), 'utf8');
});

afterAll(async () => {
  // A refused scan's spool writes may still be closing as the last test ends.
  if (dir) await rm(dir, { recursive: true, force: true, maxRetries: 5 });
});

/** The sample with values that need care: multi-byte characters, references, escapes. */
function tricky(): string {
  return killbill
    .replace('<FirstName>sample</FirstName>', '<FirstName>Zoë 中文 😀</FirstName>')
    .replace('<LastName>merchant</LastName>', '<LastName>a&amp;b &#x1F600; &lt;x&gt; &#233;</LastName>')
    .replace('<Address1>11 Lico Ave</Address1>', '<Address1>back\\slash\ttab\nline</Address1>')
    .replace('<City>Big City</City>', '<City>Ça&#10;va</City>')
    .replace('MerchantReferenceNumber="1234"', 'MerchantReferenceNumber="r&quot;é"');
}

interface Lines {
  columns: string[];
  body: string;
  items: Map<string, string>;
}

/** The lines the fast path makes of `chunks` (records, and each child table's). */
async function lines(chunks: () => AsyncIterable<Uint8Array | string>): Promise<Lines> {
  let reads = 0;
  const childTables = Object.entries(pipeline.childTables ?? {}).map(([group, table]): FastXmlChildTable => ({
    group: group as FastXmlChildTable['group'],
    columns: declaredColumns(table),
    spoolPath: () => join(dir, `${group}-${++reads}-${Math.random()}.copy`),
  }));
  const report = await openRawXmlReport(chunks, { fileName: 'bytes.xml', report: REPORT, childTables });
  let body = '';
  for await (const chunk of report.body.chunks) body += chunk.toString('utf8');
  const items = new Map<string, string>();
  for (const child of report.children) {
    let text = '';
    for await (const chunk of child.body().chunks) text += chunk.toString('utf8');
    items.set(child.group, text);
  }
  return { columns: report.columns.map((c) => c.column), body, items };
}

/** `bytes` cut at each offset in `cuts` (sorted). */
function cutAt(bytes: Buffer, cuts: number[]): () => AsyncGenerator<Uint8Array> {
  return async function* () {
    let from = 0;
    for (const cut of cuts) {
      yield bytes.subarray(from, cut);
      from = cut;
    }
    yield bytes.subarray(from);
  };
}

const whole = (bytes: Buffer) => cutAt(bytes, []);

/** The value of column `column` in the first line of `read`. */
function field(read: Lines, column: string): string {
  return read.body.split('\n')[0]!.split('\t')[read.columns.indexOf(column)]!;
}

describe('fast XML path on bytes', () => {
  it('writes multi-byte characters, references and escapes as the values read', async () => {
    const read = await lines(whole(Buffer.from(tricky(), 'utf8')));
    expect(field(read, 'bill_to_first_name')).toBe('Zoë 中文 😀');
    expect(field(read, 'bill_to_last_name')).toBe('a&b 😀 <x> é');
    expect(field(read, 'bill_to_address1')).toBe('back\\\\slash\\ttab\\nline');
    expect(field(read, 'bill_to_city')).toBe('Ça\\nva');
    expect(field(read, 'merchant_reference_number')).toBe('r"é');
  });

  it('reads a value split across chunks at any byte as in one chunk', async () => {
    const bytes = Buffer.from(tricky(), 'utf8');
    const expected = await lines(whole(bytes));
    const from = bytes.indexOf('MerchantReferenceNumber');
    const to = bytes.indexOf('</BillTo>');
    for (let cut = from; cut <= to; cut++) {
      expect(await lines(cutAt(bytes, [cut])), `cut at byte ${cut}`).toEqual(expected);
    }
    // One byte a chunk.
    const everyByte = Array.from({ length: bytes.length - 1 }, (_, i) => i + 1);
    expect(await lines(cutAt(bytes, everyByte))).toEqual(expected);
  });

  it('skips a byte order mark split across chunks, and reads UTF-16 and text chunks as UTF-8', async () => {
    const text = tricky();
    const expected = await lines(whole(Buffer.from(text, 'utf8')));
    const bom = Buffer.from(`\uFEFF${text}`, 'utf8');
    for (const cut of [1, 2, 3, 4]) expect(await lines(cutAt(bom, [cut]))).toEqual(expected);
    const utf16 = Buffer.from(`\uFEFF${text}`, 'utf16le');
    expect(await lines(cutAt(utf16, [1, 2, 3, 4, 5, 301, 1001]))).toEqual(expected);
    // Text chunks of one UTF-16 code unit each: the emoji's surrogate pair arrives in two.
    expect(
      await lines(async function* () {
        for (const unit of text.split('')) yield unit;
      }),
    ).toEqual(expected);
  });

  it('refuses an element named as the record inside a record (the record would end at its end tag)', async () => {
    for (const inner of ['<Request>x</Request>', '<Request/>', '<BillTo><Request>x</Request></BillTo>']) {
      const text = killbill.replace('<ShipTo>', `${inner}<ShipTo>`);
      const error = await lines(whole(Buffer.from(text, 'utf8'))).catch((e: unknown) => e);
      expect(isFastPathRefusal(error), String(error)).toBe(true);
    }
  });

  it('refuses bytes that are not UTF-8 in a value, whatever its column', async () => {
    for (const [from, to] of [
      ['<FirstName>sample</FirstName>', '<FirstName>sa\u0000mple</FirstName>'],
      ['<ExpirationMonth>12</ExpirationMonth>', '<ExpirationMonth>1\u00002</ExpirationMonth>'],
      ['MerchantReferenceNumber="1234"', 'MerchantReferenceNumber="12\u000034"'],
    ] as const) {
      const bytes = Buffer.from(killbill.replace(from, to), 'utf8');
      // The NUL placeholder becomes a lone continuation byte.
      bytes[bytes.indexOf(0)] = 0x80;
      const error = await lines(whole(bytes)).catch((e: unknown) => e);
      expect(isFastPathRefusal(error), String(error)).toBe(true);
      expect(String((error as Error).message)).toMatch(/not UTF-8|canonical|type or reject/);
    }
  });
});
