import { isUtf8 } from 'node:buffer';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { openCsvReport } from '../../../src/parse/csv/csv-report.js';
import {
  ReportDecoder,
  Utf8Guard,
  holdsInvalidUtf8,
  showInvalidUtf8,
  sniffEncoding,
} from '../../../src/parse/text-encoding.js';

/** The guard's output for `bytes` cut into chunks of `size` bytes. */
async function guarded(bytes: Buffer, size: number): Promise<{ text: string; invalid: boolean }> {
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
  const guard = new Utf8Guard('t.csv');
  const out: Buffer[] = [];
  for await (const chunk of Readable.from(chunks).pipe(guard)) out.push(chunk as Buffer);
  return { text: Buffer.concat(out).toString('utf8'), invalid: guard.invalid };
}

describe('text encoding of report files', () => {
  it('passes valid UTF-8 on as it is, whatever the chunk boundaries', async () => {
    const bytes = Buffer.from('\uFEFFid,name\n1,Zoë 日本 😀\n', 'utf8');
    for (const size of [1, 2, 3, 5, 64]) {
      expect(await guarded(bytes, size)).toEqual({ text: bytes.toString('utf8'), invalid: false });
    }
  });

  it('keeps each byte that is not UTF-8 apart, never as U+FFFD', async () => {
    const bytes = Buffer.concat([
      Buffer.from('k\xff,k\xfe,', 'latin1'),
      Buffer.from([0xe2, 0x82]), // a sequence cut short
      Buffer.from(',', 'latin1'),
      Buffer.from([0xed, 0xa0, 0x80]), // an encoded surrogate
      Buffer.from([0xc0, 0xaf]), // an overlong form
      Buffer.from(',ok\n', 'latin1'),
      Buffer.from([0xf0, 0x9f]), // cut short at the end of the file
    ]);
    for (const size of [1, 2, 7, 1024]) {
      const { text, invalid } = await guarded(bytes, size);
      expect(invalid).toBe(true);
      expect(text).not.toContain('\uFFFD');
      const values = text.split(/[,\n]/);
      expect(values.map(showInvalidUtf8)).toEqual([
        'k\\xFF',
        'k\\xFE',
        '\\xE2\\x82',
        '\\xED\\xA0\\x80\\xC0\\xAF',
        'ok',
        '\\xF0\\x9F',
      ]);
      expect(values.map(holdsInvalidUtf8)).toEqual([true, true, true, true, false, true]);
    }
  });

  it('decodes UTF-16 with a byte order mark, either byte order', async () => {
    const text = 'id,name\n1,Zoë 😀\n';
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    const be = Buffer.from(le.subarray(0)).swap16();
    for (const size of [1, 3, 1024]) {
      expect(await guarded(le, size)).toEqual({ text, invalid: false });
      expect(await guarded(be, size)).toEqual({ text, invalid: false });
    }
    const decoder = new ReportDecoder('t.xml');
    expect(decoder.decode(le.subarray(0, 3), { stream: true }) + decoder.decode(le.subarray(3))).toBe(text);
  });

  it('tells UTF-16 XML without a mark by its first characters, and refuses UTF-32 in one sentence', () => {
    expect(sniffEncoding(Buffer.from('<?xml', 'utf16le'), 'a.xml')).toBe('utf-16le');
    expect(sniffEncoding(Buffer.from('<?xml', 'utf16le').swap16(), 'a.xml')).toBe('utf-16be');
    expect(sniffEncoding(Buffer.from('<?xml', 'utf8'), 'a.xml')).toBe('utf-8');
    expect(() => sniffEncoding(Buffer.from([0xff, 0xfe, 0, 0, 0x3c, 0, 0, 0]), 'a.csv')).toThrow(
      /^a\.csv: the file is UTF-32 \(its byte order mark says so\), which is not supported; save it as UTF-8 or UTF-16\.$/,
    );
  });

  it('fails a UTF-16 file holding an unpaired surrogate, naming the file', () => {
    const decoder = new ReportDecoder('bad.xml');
    const bytes = Buffer.from([0xff, 0xfe, 0x3c, 0x00, 0x00, 0xd8, 0x3e, 0x00]);
    expect(() => decoder.decode(bytes)).toThrow(/^bad\.xml: the file is not valid UTF-16LE/);
  });

  it('never reads two different byte strings as the same text, and never as U+FFFD (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 24 }),
        fc.uint8Array({ maxLength: 24 }),
        fc.integer({ min: 1, max: 8 }),
        async (a, b, size) => {
          // U+10FF80..U+10FFFF written in a file read as an escaped byte does (such a value is a
          // reject either way: holdsInvalidUtf8).
          const privateUse = Buffer.from([0xf4, 0x8f]);
          fc.pre(!Buffer.from(a).includes(privateUse) && !Buffer.from(b).includes(privateUse));
          // A leading ASCII byte: a file is sniffed for its encoding by its first bytes.
          const one = await guarded(Buffer.from([0x41, ...a]), size);
          const two = await guarded(Buffer.from([0x41, ...b]), size);
          const replacement = Buffer.from([0xef, 0xbf, 0xbd]);
          expect(one.text.includes('\uFFFD')).toBe(Buffer.from(a).includes(replacement));
          expect(one.invalid).toBe(!isUtf8(Buffer.from(a)));
          expect(one.text === two.text).toBe(Buffer.from(a).equals(Buffer.from(b)));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('fails a CSV file whose metadata line or header is not UTF-8, naming the line', async () => {
    const meta =
      'org\xff,PaymentBatchDetailReport_Daily_Classic,PaymentBatchDetail,1.10,2023-10-10T07:00:00Z to 2023-10-11T07:00:00Z';
    for (const [text, line, what] of [
      [`${meta}\nrequest_id,amount\n1,1.00\n`, 1, 'the metadata line'],
      ['request_id,am\xfeount\n1,1.00\n', 1, 'the header'],
      [`${meta.replace('\xff', '')}\nrequest_id,am\xfeount\n1,1.00\n`, 2, 'the header'],
    ] as const) {
      await expect(
        openCsvReport(Readable.from([Buffer.from(text, 'latin1')]), { fileName: 'm.csv' }),
      ).rejects.toThrow(
        new RegExp(
          `^m\\.csv: line ${line} \\(${what}\\) holds bytes that are not UTF-8 \\(.*\\\\x(FF|FE).*\\)\\.$`,
        ),
      );
    }
  });
});
