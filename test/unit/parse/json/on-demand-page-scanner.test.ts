/**
 * OnDemandPageScanner against the path it stands in for (JSON.parse → the page check →
 * parseOnDemandResponse → CopyTextSpool.writePage): over the same pages, the spools it writes are
 * byte for byte the same files, with the same digest, columns and line → record maps; and a page
 * it does not answer for is left to that path whole.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ON_DEMAND_PIPELINES } from '../../../../pipelines/index.js';
import { fastPageCheck } from '../../../../src/api/fast-page-check.js';
import { purchaseRefundDetailsResponseSchema } from '../../../../src/api/types.js';
import { SpoolDir } from '../../../../src/spool/byte-spool.js';
import { OnDemandSpools } from '../../../../src/pipeline/on-demand-spools.js';

const def = ON_DEMAND_PIPELINES.find((p) => p.name === 'purchase_refund_details')!;
const SOURCE = 'purchase-refund-details/2026-11-16T00:00:00.000Z..2026-11-17T00:00:00.000Z';
const check = fastPageCheck(purchaseRefundDetailsResponseSchema)!;

/** The page as the client's JSON path gives it (what the parse path is handed). */
function checked(text: string): unknown {
  const data: unknown = JSON.parse(text);
  const fast = check(data);
  if (fast !== undefined) return fast;
  const parsed = purchaseRefundDetailsResponseSchema.safeParse(data);
  if (!parsed.success) throw new Error(`not a valid page: ${parsed.error.message}`);
  return parsed.data;
}

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

interface Spooled {
  files: Map<string, Buffer>;
  digest: string;
  columns: string[][];
  records: (number | undefined)[][];
  /** Whether each page was answered by the scanner. */
  answered: boolean[];
}

/** Spool the pages' bytes, scanning them (`scan`) or parsing each. */
async function spool(pages: readonly Buffer[], scan: boolean): Promise<Spooled> {
  const dir = await mkdtemp(join(tmpdir(), 'cybs-scan-'));
  dirs.push(dir);
  // Every spool in a file (no memory), so that the files can be compared.
  const spools = new OnDemandSpools(new SpoolDir({ path: dir, memoryBytes: 0 }), def, SOURCE);
  const answered: boolean[] = [];
  try {
    for (const [n, bytes] of pages.entries()) {
      // As the client hands them: in chunks as received (or whole).
      const size = [1000, 7, bytes.length][n % 3]!;
      const chunks = Array.from({ length: Math.ceil(bytes.length / size) }, (_, k) =>
        bytes.subarray(k * size, (k + 1) * size),
      );
      const scanned = scan ? spools.scan(chunks) : undefined;
      answered.push(scanned !== undefined);
      await spools.write(scanned ? { scanned } : { body: checked(bytes.toString('utf8')) });
    }
  } finally {
    // Also on a refused page, so that no file is still being opened when the directory goes.
    await spools.close();
  }
  const files = new Map<string, Buffer>();
  for (const name of (await readdir(dir)).sort()) files.set(name, await readFile(join(dir, name)));
  const targets = spools.targets();
  return {
    files,
    digest: spools.digest().sha256,
    columns: targets.map((t) => t.source.columns.map((c) => `${c.name}:${c.pgType}`)),
    records: targets.map((t) =>
      t.source.segments.flatMap((s) => Array.from({ length: s.lines }, (_, k) => s.recordAt(k + 1))),
    ),
    answered,
  };
}

/** Both ways; the same spools. Returns which pages the scanner answered. */
async function same(pages: readonly (Buffer | string | object)[]): Promise<boolean[]> {
  const bytes = pages.map((p) =>
    Buffer.isBuffer(p) ? p : Buffer.from(typeof p === 'string' ? p : JSON.stringify(p), 'utf8'),
  );
  const parsed = await spool(bytes, false).catch((error: unknown) => error as Error);
  const scanned = await spool(bytes, true).catch((error: unknown) => error as Error);
  if (parsed instanceof Error || scanned instanceof Error) {
    // A page the client would refuse: refused the same way (the scanner did not answer for it).
    expect(String(scanned)).toBe(String(parsed));
    return [];
  }
  expect([...scanned.files.keys()]).toEqual([...parsed.files.keys()]);
  for (const [name, content] of parsed.files) {
    expect(scanned.files.get(name)!.toString('utf8'), name).toBe(content.toString('utf8'));
  }
  expect(scanned.columns).toEqual(parsed.columns);
  expect(scanned.records).toEqual(parsed.records);
  expect(scanned.digest).toBe(parsed.digest);
  return scanned.answered;
}

const id = (n: number) => `79487360${String(n).padStart(14, '0')}`;

/** A page as the service writes it, records `from`…`from + n - 1`. */
function page(from: number, n: number): Record<string, unknown> {
  const rows = Array.from({ length: n }, (_, k) => from + k);
  return {
    offset: from,
    limit: n,
    pageResults: n,
    requestDetails: rows.map((r) => ({
      requestId: id(r),
      cybersourceMerchantId: 'sim_merchant_1',
      processorMerchantId: '4001922540',
      groupName: '996411990498708810001',
      transactionReferenceNumber: String(80142548 + r),
      merchantReferenceNumber: `1-20261117-${r}`,
    })),
    settlements: rows.map((r) => ({
      requestId: id(r),
      transactionType: r % 5 === 0 ? 'Refunds' : 'Purchases',
      submissionTime: '2026-11-18T04:01:17Z',
      amount: `${r}.${String(r % 100).padStart(2, '0')}`,
      currencyCode: 'GBP',
      paymentMethod: 'AMERICAN EXPRESS',
      walletType: '',
      paymentType: 'credit card',
      accountSuffix: '0333',
      cybersourceBatchTime: '2026-11-18T04:01:17.250Z',
      cybersourceBatchId: '01261117344',
      cardType: 'American Express',
      debitNetwork: '',
    })),
    authorizations: rows
      .filter((r) => r % 4 !== 0)
      .map((r) => ({
        requestId: id(r),
        transactionReferenceNumber: String(80142548 + r),
        time: '2026-11-17T00:00:00Z',
        authorizationRequestId: id(r),
        amount: `${r}.00`,
        currencyCode: 'GBP',
        code: '048989',
        rcode: '1',
      })),
    feeAndFundingDetails: rows.map((r) => ({
      requestId: id(r),
      interchangePerItemFee: '0.00',
      interchangeDescription: 'Amex OptBlue',
      interchangePercentage: '1.77',
      interchangePercentageAmount: '-7.64',
      discountPercentage: '2.24',
      discountAmount: '9.67',
      discountPerItemFee: '0.10',
      totalFee: '9.77',
      feeCurrency: 'GBP',
      duesAssessments: '0',
      fundingAmount: '422.11',
      fundingCurrency: 'GBP',
    })),
    others: rows.map((r) => ({
      requestId: id(r),
      merchantData1: 'promo-8',
      merchantData2: 'mobile',
      merchantData3: 'campaign, 2025',
      merchantData4: '',
      firstName: 'James',
      lastName: r % 3 === 0 ? 'García' : 'Nakamura 中村',
    })),
    settlementStatuses: rows.map((r) => ({
      requestId: id(r),
      status: 'SETTLED',
      settlementTime: '2026-11-18T04:01:17Z',
      reasonCode: '100',
      errorText: '',
    })),
  };
}

type Page = Record<string, unknown>;
const items = (p: Page, section: string) => p[section] as Record<string, unknown>[];
/** The page with `edit` applied to a copy. */
function edited(p: Page, edit: (copy: Page) => void): Page {
  const copy = structuredClone(p);
  edit(copy);
  return copy;
}

describe('OnDemandPageScanner', () => {
  it('writes what the parse path writes for pages as the service sends them, over several pages', async () => {
    const answered = await same([page(0, 40), page(40, 40), page(80, 7)]);
    expect(answered).toEqual([true, true, true]);
  });

  it('writes what the parse path writes for values it must decode and coerce', async () => {
    const values: Record<string, unknown>[] = [
      // numeric: not canonical, negative zeros, blanks; timestamps in other forms; escapes.
      { amount: '+5', submissionTime: '2026-11-16 10:00:00' },
      { amount: '05.50', submissionTime: '2026-11-16T10:00:00+02:00' },
      { amount: ' 7 ', submissionTime: '2026-11-16' },
      { amount: '5.', submissionTime: '2026-11-16T10:00:00.123456Z' },
      { amount: '.5', submissionTime: '2026-11-16T10:00Z' },
      { amount: '-0', submissionTime: '2024-02-29T23:59:59Z' },
      { amount: '-0.00', submissionTime: ' 2026-11-16T10:00:00Z' },
      { amount: '-0.10', submissionTime: null },
      { amount: '-12.000', walletType: 'tab\there', cardType: 'back\\slash' },
      { amount: '0', walletType: 'line\nbreak\r\n', cardType: 'quote " and \u00e9 and \ud83d\ude00' },
      { amount: null, walletType: 'a\u2028b', cardType: 'slash \\/ ' },
      { amount: '   ', walletType: ' spaced ' },
    ];
    const p = edited(page(0, values.length), (c) => {
      items(c, 'settlements').forEach((s, k) => Object.assign(s, values[k]));
      // Escapes written as JSON escapes (JSON.stringify writes é as it is).
      items(c, 'others')[1]!['firstName'] = 'Jos\u00e9';
    });
    const text = JSON.stringify(p).replace('Jos\u00e9', 'Jos\\u00e9').replace('"SETTLED"', '"SETT\\u004cED"');
    expect(await same([text])).toEqual([true]);
  });

  it('reads whitespace, keys in another order, absent keys and top-level keys it does not know', async () => {
    const p = edited(page(10, 5), (c) => {
      const s = items(c, 'settlements');
      s[0] = Object.fromEntries(Object.entries(s[0]!).reverse());
      delete s[1]!['amount'];
      delete items(c, 'others')[2]!['requestId'];
      items(c, 'others')[3] = {};
      delete c['authorizations'];
      c['settlementStatuses'] = [];
      c['_links'] = { self: { href: '/x?a=1', templated: false }, list: [1, -2.5e3, null, true, 'é\\"'] };
      c['pageResults'] = null;
    });
    const pretty = JSON.stringify(p, null, 2).replace(/\n/g, '\r\n');
    expect(await same([pretty, JSON.stringify(p, null, '\t')])).toEqual([true, true]);
  });

  it('leaves out requests repeated from an earlier page, numbering on, as the parse path does (issue 26 #5)', async () => {
    // Records 10…17 read as two pages of 5 whose second repeats 13 and 14 (inserted while paging).
    const pages = [page(10, 5), page(13, 5)];
    expect(await same(pages)).toEqual([true, true]);
    const { records } = await spool(
      pages.map((p) => Buffer.from(JSON.stringify(p))),
      true,
    );
    // Each section numbered 1… without a gap: request details 8, not 10.
    expect(records[0]).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // The same request id with other values on the later page: the same failure both ways.
    const changed = edited(page(13, 5), (c) => (items(c, 'settlements')[1]!['amount'] = '1.00'));
    const failed = await spool(
      [page(10, 5), changed].map((p) => Buffer.from(JSON.stringify(p))),
      true,
    ).catch((e: unknown) => e);
    expect(String(failed)).toContain(
      `request id ${id(14)} is on page 1 and again on page 2 with other values`,
    );
    expect(await same([page(10, 5), changed])).toEqual([]);
  });

  it('leaves to the parse path every page it does not answer for', async () => {
    const base = page(0, 6);
    const cases: [string, Page | string | Buffer][] = [
      [
        'an unknown item key (a new column)',
        edited(base, (c) => (items(c, 'others')[2]!['loyalty'] = 'gold')),
      ],
      [
        'an item key twice',
        JSON.stringify(base).replace('"currencyCode":"GBP"', '"currencyCode":"GBP","currencyCode":"EUR"'),
      ],
      ['a number for an amount', edited(base, (c) => (items(c, 'settlements')[1]!['amount'] = 12.5))],
      [
        'a value the column cannot take',
        edited(base, (c) => (items(c, 'settlements')[1]!['amount'] = 'abc')),
      ],
      [
        'an impossible date',
        edited(base, (c) => (items(c, 'settlements')[1]!['submissionTime'] = '2026-02-30T00:00:00Z')),
      ],
      ['an exponent', edited(base, (c) => (items(c, 'feeAndFundingDetails')[0]!['totalFee'] = '1e3'))],
      ['a NUL character', edited(base, (c) => (items(c, 'others')[0]!['merchantData1'] = 'a\u0000b'))],
      [
        'an empty request id in a request-keyed section',
        edited(base, (c) => (items(c, 'requestDetails')[3]!['requestId'] = '')),
      ],
      [
        'a null request id in a request-keyed section',
        edited(base, (c) => (items(c, 'requestDetails')[3]!['requestId'] = null)),
      ],
      ['an item that is not an object', edited(base, (c) => (items(c, 'others')[1] = 'x' as never))],
      ['an object for a value', edited(base, (c) => (items(c, 'others')[1]!['firstName'] = { a: 1 }))],
      ['a boolean for a value', edited(base, (c) => (items(c, 'others')[1]!['firstName'] = true))],
      [
        'a section twice',
        JSON.stringify(base).replace('"settlementStatuses":', '"others":[],"settlementStatuses":'),
      ],
    ];
    const refused = ['an item that is not an object', 'an object for a value', 'a boolean for a value'];
    for (const [what, p] of cases) {
      const answered = await same([page(100, 3), p, page(200, 3)]);
      // A page the client refuses fails both ways alike; the page after a page with a new column
      // is parsed too: the spool has that column now.
      const expected = refused.includes(what)
        ? []
        : what.startsWith('an unknown item key')
          ? [true, false, false]
          : [true, false, true];
      expect(answered, what).toEqual(expected);
    }
  });

  it('does not answer for bytes that are not one JSON object in UTF-8', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cybs-scan-'));
    dirs.push(dir);
    const spools = new OnDemandSpools(new SpoolDir({ path: dir }), def, SOURCE);
    const good = Buffer.from(JSON.stringify(page(0, 2)), 'utf8');
    expect(spools.scan(good)).toBeDefined();
    const variants = [
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), good]),
      Buffer.concat([good.subarray(0, 100), Buffer.from([0xc3, 0x28]), good.subarray(100)]),
      good.subarray(0, good.length - 1),
      Buffer.concat([good, Buffer.from(' x')]),
      Buffer.from(good.toString('utf8').replace('"offset":0', '"offset":"0"')),
      Buffer.from(good.toString('utf8').replace('"offset":0', '"offset":01')),
      Buffer.from(good.toString('utf8').replace('"_links', '"_links')).subarray(0, 0),
      Buffer.from('[]'),
      // A raw control character (JSON forbids them in strings) at every place in a 4-byte word.
      ...[0, 1, 2, 3, 4, 5].map((at) =>
        Buffer.from(
          good.toString('utf8').replace('"James"', `"${'James'.slice(0, at)}\t${'James'.slice(at)}"`),
        ),
      ),
      Buffer.from(good.toString('utf8').replace('"James"', '"Ja\u0001mes"')),
      // A key that is not a declared one but shares bytes with one (keys are compared 4 bytes at a time).
      ...['FirstName', 'firsTName', 'firstNamf', 'firstNam', 'firstNamee', 'first'].map((key) =>
        Buffer.from(good.toString('utf8').replace('"firstName"', `"${key}"`)),
      ),
      Buffer.from(good.toString('utf8').replace('"James"', '"Ja\\xmes"')),
    ];
    for (const bytes of variants) expect(spools.scan(bytes)).toBeUndefined();
    // The spools' files are opened asynchronously: closed here, before afterEach removes the
    // directory (else its rm can race an open and fail with ENOTEMPTY).
    await spools.close();
  });

  it('writes what the parse path writes over random pages (values from both sides of every rule)', async () => {
    let seed = 20261122;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const numerics = [
      '1.25',
      '0',
      '0.00',
      '-3.7500',
      '100',
      '+1',
      '01',
      '1.',
      '.5',
      '-0',
      '-0.0',
      ' 2 ',
      '',
      null,
      '2.7',
    ];
    const times = [
      '2026-11-18T04:01:17Z',
      '2026-11-18T04:01:17.123Z',
      '2026-11-18T04:01:17.1234567Z',
      '2026-11-18 04:01:17',
      '2026-11-18T04:01:17-05:00',
      '2026-11-18',
      '2028-02-29T00:00:00Z',
      '',
      null,
    ];
    const texts = [
      '',
      null,
      'plain',
      'García',
      '中村',
      'tab\tin',
      'back\\slash',
      'new\nline',
      'q"uote',
      ' ',
      '\u00a0',
      // A character the scanner must stop at (or step over) at every place in a 4-byte word.
      ...['"', '\\', '\t', '\u0001', '\u001f', '\u007f', 'é', '中', '😀'].flatMap((special) =>
        [0, 1, 2, 3, 4, 5, 6, 7].map(
          (at) => `${'abcdefgh'.slice(0, at)}${special}${'ijklmnop'.slice(0, 7 - at)}`,
        ),
      ),
    ];
    let answeredPages = 0;
    let offset = 0;
    const pages: string[] = [];
    for (let n = 0; n < 12; n++) {
      const p = page(offset, 1 + Math.floor(random() * 25));
      offset += 30;
      for (const [section, list] of Object.entries(p)) {
        if (!Array.isArray(list)) continue;
        for (const item of list as Record<string, unknown>[]) {
          for (const key of Object.keys(item)) {
            if (key === 'requestId' || random() < 0.6) continue;
            const field = def.tables[section]!.columns.find(
              (c) => c.name === key.replace(/[A-Z]/g, (m) => `_${m.toLowerCase()}`),
            );
            const type = field?.pgType ?? 'text';
            item[key] = pick(type === 'numeric' ? numerics : type === 'timestamptz' ? times : texts);
          }
        }
      }
      pages.push(random() < 0.3 ? JSON.stringify(p, null, 1) : JSON.stringify(p));
    }
    const answered = await same(pages);
    answeredPages = answered.filter(Boolean).length;
    expect(answeredPages).toBeGreaterThan(8);
  });
  it("reports a spool file it cannot write as the write's error, never as an unhandled event", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cybs-scan-'));
    await rm(dir, { recursive: true });
    // No memory: the first write goes to a file.
    const spools = new OnDemandSpools(new SpoolDir({ path: dir, memoryBytes: 0 }), def, SOURCE);
    const bytes = Buffer.from(JSON.stringify(page(0, 3)), 'utf8');
    const failed = await (async () => {
      await spools.write({ body: checked(bytes.toString('utf8')) });
      await spools.close();
    })().catch((error: unknown) => error as NodeJS.ErrnoException);
    expect(failed).toMatchObject({ code: 'ENOENT' });
  });
});
