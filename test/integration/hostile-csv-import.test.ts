/**
 * Hostile CSV files through `cybs-etl import`, on PostgreSQL (fast path first) and on the embedded
 * warehouse (per-row path): a timestamp in year 0000 is one reject, a CRLF file with LF-ended rows
 * loads every row, and an unclosed quote is reported at the line where it opens.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { warehouseTempDir } from '../helpers/temp-dir.js';

const META =
  'org1,PaymentBatchDetailReport_Daily_Classic,PaymentBatchDetail,1.10,2023-10-10T07:00:00Z to 2023-10-11T07:00:00Z,,,,,,,';
const HEADER =
  'batch_id,merchant_id,batch_date,request_id,merchant_ref_number,TransactionReferenceNumber,payment_type,currency,amount,ics_applications,status,transaction_date';

/** `count` data rows of the REST-era Payment Batch Detail layout; `edit` may change row i (0-based). */
function rows(count: number, first: bigint, edit: (i: number, row: string[]) => void = () => {}): string[] {
  return Array.from({ length: count }, (_, i) => {
    const row = [
      '21265991580',
      'org1',
      '2023-10-11T04:15:21Z',
      String(first + BigInt(i)),
      `ref-${i}`,
      String(93211601 + i),
      'MasterCard',
      'USD',
      '35.00',
      '"ics_bill,ics_auth"',
      'BATCHED',
      '2023-10-10T09:33:55Z',
    ];
    edit(i, row);
    return row.join(',');
  });
}

describe.each(['postgres', 'embedded'] as const)('hostile CSV files through import (%s)', (kind) => {
  let dir: string;
  let database: TestDatabase | undefined;
  let config: string;
  const env = () => (database ? { DATABASE_URL: database.url } : {});
  const run = (args: string[]) => cli(['--config', config, ...args], { env: env() });
  const importFile = (file: string) =>
    run(['import', join(dir, file), '--report-definition', 'PaymentBatchDetailClass']);
  const count = async (where: string) => {
    const r = await run([
      'sql',
      '--json',
      `select count(*)::int as n from cybs.payment_batch_detail ${where}`,
    ]);
    expect(r.code, r.stderr).toBe(0);
    return (JSON.parse(r.stdout) as { n: number }[])[0]!.n;
  };

  beforeAll(async () => {
    dir = await warehouseTempDir('cybs-hostile-csv-');
    if (kind === 'postgres') database = await createTestDatabase('hostile_csv');
    config = join(dir, 'config.yaml');
    await writeFile(config, `log:\n  level: silent\nwarehouse:\n  path: ${join(dir, 'wh')}\n`);
  }, 60_000);
  afterAll(async () => {
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('rejects the one row whose timestamp is in year 0000 and loads the other 3,000', async () => {
    const data = rows(3001, 6969304358566698703248n, (i, row) => {
      if (i === 1500) row[11] = '0000-01-01T00:00:00Z';
    });
    await writeFile(join(dir, 'year0.csv'), [META, HEADER, ...data].join('\n') + '\n');
    const r = await importFile('year0.csv');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/: 3000 rows loaded \(3000 new.*\), 1 rejected/);
    expect(await count('')).toBe(3000);
    const rejects = await run([
      'sql',
      '--json',
      'select record_number::int as line, message from etl.rejects',
    ]);
    const [reject] = JSON.parse(rejects.stdout) as { line: number; message: string }[];
    expect(reject).toMatchObject({
      line: 1503,
      message: expect.stringMatching(/0000-01-01T00:00:00Z/) as unknown,
    });
  });

  it('loads every row of a CRLF file in which some rows end with LF alone', async () => {
    const data = rows(312, 7969304358566698703248n, (i, row) => void (row[4] = `mixed-${i}`));
    const text = [META, HEADER, ...data].map((line, i) => line + (i > 2 && i % 3 === 0 ? '\n' : '\r\n'));
    await writeFile(join(dir, 'mixed.csv'), text.join(''));
    const r = await importFile('mixed.csv');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/: 312 rows loaded \(312 new.*\), 0 rejected/);
    expect(await count("where merchant_reference_number like 'mixed-%'")).toBe(312);
  });

  it('keeps a record whose request id a later line repeats as a reject, and counts what is loaded', async () => {
    const data = rows(501, 9969304358566698703248n, (i, row) => {
      if (i === 300) row[3] = String(9969304358566698703248n + 100n);
    });
    await writeFile(join(dir, 'dup.csv'), [META, HEADER, ...data].join('\n') + '\n');
    const r = await importFile('dup.csv');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/: 500 rows loaded \(500 new.*\), 1 rejected/);
    expect(await count("where request_id like '99693043585666987%'")).toBe(500);
    expect(
      await count("where merchant_reference_number = 'ref-300' and request_id = '9969304358566698703348'"),
    ).toBe(1);
    const rejects = await run([
      'sql',
      '--json',
      "select record_number::int as line, error_code as code, raw_text as raw, message from etl.rejects where error_code = 'LOAD_DUPLICATE_KEY'",
    ]);
    expect(JSON.parse(rejects.stdout)).toEqual([
      {
        line: 103,
        code: 'LOAD_DUPLICATE_KEY',
        raw: expect.stringMatching(
          /^\{.*"request_id": "9969304358566698703348".*"merchant_reference_number": "ref-100".*\}$/,
        ) as unknown,
        message: expect.stringMatching(
          /record 103: .*request_id=9969304358566698703348.* repeated by record 303/,
        ) as unknown,
      },
    ]);
  });

  it('rejects the rows whose request ids are not UTF-8, with their bytes, instead of merging them', async () => {
    const data = rows(416, 10969304358566698703248n, (i, row) => {
      if (i === 200 || i === 201) row[3] = `u8_key${i === 200 ? '\u00ff' : '\u00fe'}`;
    });
    // The two request ids as bytes 0xFF and 0xFE (latin1 writes each of those characters as one byte).
    const text = [META, HEADER, ...data].join('\n') + '\n';
    await writeFile(join(dir, 'utf8.csv'), Buffer.from(text, 'latin1'));
    const r = await importFile('utf8.csv');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/: 414 rows loaded \(414 new.*\), 2 rejected/);
    expect(await count("where request_id like '10969304358566698703%'")).toBe(414);
    expect(await count("where request_id like 'u8_key%'")).toBe(0);
    const rejects = await run([
      'sql',
      '--json',
      "select record_number::int as line, raw_text as raw, message from etl.rejects where error_code = 'PARSE_INVALID_UTF8' order by 1",
    ]);
    expect(JSON.parse(rejects.stdout)).toEqual(
      [
        [203, 'FF'],
        [204, 'FE'],
      ].map(([line, hex]) => ({
        line,
        raw: expect.stringContaining(`,u8_key\\x${hex},ref-${Number(line) - 3},`) as unknown,
        message: expect.stringMatching(
          new RegExp(
            `^utf8\\.csv line ${line}: request_id holds bytes that are not UTF-8 \\(u8_key\\\\x${hex}\\)`,
          ),
        ) as unknown,
      })),
    );
  });

  it('refuses a record larger than 32 Mi characters with the same sentence on either path', async () => {
    const data = rows(20, 11969304358566698703248n, (i, row) => {
      if (i === 10) row[4] = 'x'.repeat(33 * 1024 * 1024);
    });
    await writeFile(join(dir, 'huge.csv'), [META, HEADER, ...data].join('\n') + '\n');
    const r = await importFile('huge.csv');
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(
      /huge\.csv: invalid CSV at line 13: a record starting in this line exceeds 32 Mi characters \(a value that large, or a quote that is never closed\)/,
    );
  });

  it('reads a UTF-16 file by its byte order mark, either byte order', async () => {
    const data = rows(40, 12969304358566698703248n, (i, row) => void (row[4] = `Zoë-${i}`));
    const le = Buffer.from('\uFEFF' + [META, HEADER, ...data].join('\r\n') + '\r\n', 'utf16le');
    await writeFile(join(dir, 'utf16le.csv'), le);
    const r = await importFile('utf16le.csv');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/: 40 rows loaded \(40 new.*\), 0 rejected/);
    expect(await count("where merchant_reference_number like 'Zoë-%'")).toBe(40);
    const be = Buffer.from(
      '\uFEFF' + [META, HEADER, ...data.map((line) => line.replace('Zoë', 'Zoé'))].join('\n') + '\n',
      'utf16le',
    ).swap16();
    await writeFile(join(dir, 'utf16be.csv'), be);
    const again = await importFile('utf16be.csv');
    expect(again.code, again.stderr).toBe(0);
    expect(await count("where merchant_reference_number like 'Zoé-%'")).toBe(40);
  });

  it('says in one sentence that a UTF-32 file is not supported', async () => {
    const text = Buffer.from([0xff, 0xfe, 0, 0, ...Buffer.from([META, HEADER].join('\n'), 'utf16le')]);
    await writeFile(join(dir, 'utf32.csv'), text);
    const r = await importFile('utf32.csv');
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(
      /utf32\.csv: the file is UTF-32 \(its byte order mark says so\), which is not supported/,
    );
  });

  it('says at which line an unclosed quote opens', async () => {
    const data = rows(1000, 8969304358566698703248n, (i, row) => {
      row[9] = 'ics_bill';
      if (i === 500) row[4] = '"never closed';
    });
    await writeFile(join(dir, 'quote.csv'), [META, HEADER, ...data].join('\n') + '\n');
    const r = await importFile('quote.csv');
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(
      /quote\.csv: invalid CSV at line 503: a quote opened in this line is never closed/,
    );
  });
});
