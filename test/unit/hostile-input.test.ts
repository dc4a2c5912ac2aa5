/**
 * Hostile and broken input: random bytes, huge fields, deep or billion-laughs XML, 10,000 columns,
 * invalid UTF-8, JSON pages with wrong types, offsets that never end. Each gives a clear error
 * (a CybsError with a stable code) or a reject — never another exception, never unbounded memory.
 * The heavy inputs run in a child process (test/helpers/hostile-child.ts) whose peak RSS must stay
 * under 300 MB. (SQL-breaking header names are loaded into PostgreSQL in
 * test/integration/hostile-headers.test.ts.)
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { ReportingClient } from '../../src/api/reporting-client.js';
import { ON_DEMAND_ENDPOINTS } from '../../src/catalog/index.js';
import { isCybsError } from '../../src/errors.js';
import { fetchOnDemandPages } from '../../src/extract/on-demand-pages.js';
import { openCsvReport } from '../../src/parse/csv/csv-report.js';
import { parseOnDemandResponse } from '../../src/parse/json/on-demand.js';
import type { RecordSource } from '../../src/parse/records.js';
import { openXmlReport } from '../../src/parse/xml/xml-report.js';
import { XmlRecordScanner } from '../../src/parse/xml/xml-scanner.js';
import { repoRoot } from '../helpers/simulator-process.js';
import { NODE_RUNTIME_ENV, NODE_RUNTIME_FLAGS } from '../../src/runtime-flags.js';

const run = promisify(execFile);
const META = 'org1,Hostile,TransactionRequest,1.0,2024-01-01T00:00:00Z to 2024-01-02T00:00:00Z\n';

/** Drain a source; the outcome as a string (records/rejects, or the error code). Non-Cybs errors throw. */
async function outcomeOf(open: () => Promise<RecordSource>): Promise<string> {
  try {
    const source = await open();
    let records = 0;
    let rejects = 0;
    for await (const b of source.batches) {
      records += b.records.length;
      rejects += b.rejects.length;
    }
    return `ok:${records}:${rejects}`;
  } catch (error) {
    if (isCybsError(error) && /^PARSE_/.test(error.code) && error.message.length > 10) return error.code;
    throw error;
  }
}

async function* bytes(b: Uint8Array, chunk = 97): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < b.length; i += chunk) yield b.subarray(i, i + chunk);
}

const tried: string[] = [];
afterAll(() => console.log(`hostile inputs tried: ${tried.length}\n${tried.join('\n')}`));

describe('hostile input: random and broken bytes (property-based)', () => {
  it('random bytes as a CSV or XML report: a PARSE_* error or records/rejects, nothing else', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 4096 }),
        fc.integer({ min: 1, max: 300 }),
        async (b, chunk) => {
          await outcomeOf(() => openCsvReport(bytes(b, chunk), { fileName: 'r.csv' }));
          await outcomeOf(() => openXmlReport(bytes(b, chunk), { fileName: 'r.xml' }));
        },
      ),
      { numRuns: 300 },
    );
    tried.push('300 random byte strings (≤ 4 KiB) × CSV and XML parsers');
  });

  it('CSV-shaped noise (quotes, separators, CR/LF, invalid UTF-8) after a valid header', async () => {
    const piece = fc.constantFrom('"', ',', '\r', '\n', '""', 'a', '1.00', '\u0000', '\uFEFF', 'é', ' ');
    const invalidUtf8 = fc.constantFrom(
      Buffer.from([0xff]),
      Buffer.from([0xc3]),
      Buffer.from([0xed, 0xa0, 0x80]),
      Buffer.from([0xf4, 0x90, 0x80, 0x80]),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(piece, invalidUtf8), { maxLength: 200 }), async (parts) => {
        const body = Buffer.concat([
          Buffer.from(`${META}request_id,amount,currency_code\n`),
          ...parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)),
        ]);
        const o = await outcomeOf(() =>
          openCsvReport(bytes(body), { fileName: 'n.csv', requireFinalLineBreak: true }),
        );
        expect(o).toMatch(/^(ok:\d+:\d+|PARSE_CSV_INVALID|PARSE_CSV_TRUNCATED)$/);
      }),
      { numRuns: 300 },
    );
    tried.push('300 CSV bodies of quotes/separators/CR/LF/NUL/BOM and invalid UTF-8 sequences');
  });

  it('invalid UTF-8 in a value is a reject with its bytes (never U+FFFD, a crash or a merge), and a NUL byte is kept as text', async () => {
    const body = Buffer.concat([
      Buffer.from(`${META}request_id,amount,Note\n1,1.00,`),
      Buffer.from([0xff, 0xfe, 0x41]),
      Buffer.from('\n2,2.00,a\u0000b\n'),
    ]);
    const source = await openCsvReport(bytes(body, 5), { fileName: 'u.csv' });
    const values: unknown[][] = [];
    const rejects: unknown[] = [];
    for await (const b of source.batches) {
      for (const r of b.records) values.push(r.values);
      rejects.push(...b.rejects);
    }
    expect(rejects).toEqual([
      {
        recordNumber: 3,
        raw: '1,1.00,\\xFF\\xFEA',
        code: 'PARSE_INVALID_UTF8',
        message:
          'u.csv line 3: Note holds bytes that are not UTF-8 (\\xFF\\xFEA); row kept as a reject, those bytes written as \\xNN.',
      },
    ]);
    expect(values).toEqual([[expect.anything(), expect.anything(), 'a\u0000b']]);
    tried.push('invalid UTF-8 in a value; NUL in a value');
  });

  it('XML-shaped noise: a PARSE_XML_INVALID error or records/rejects', async () => {
    const piece = fc.constantFrom(
      '<Request>',
      '</Request>',
      '<Amount>',
      '</Amount>',
      '1.00',
      '<!--',
      '-->',
      '<![CDATA[',
      ']]>',
      '<!DOCTYPE x [<!ENTITY e "e">]>',
      '&e;',
      '&amp;',
      '&#0;',
      '&#x110000;',
      '"',
      "'",
      '<',
      '>',
      '/>',
      '<?pi?>',
    );
    await fc.assert(
      fc.asyncProperty(fc.array(piece, { maxLength: 80 }), async (parts) => {
        const text = `<?xml version="1.0"?><Report Name="x"><Requests>${parts.join('')}</Requests></Report>`;
        await outcomeOf(() => openXmlReport(bytes(Buffer.from(text), 13), { fileName: 'n.xml' }));
      }),
      { numRuns: 300 },
    );
    tried.push('300 XML bodies of tags/comments/CDATA/DOCTYPE/entities in random order');
  });
});

describe('hostile input: XML scanner bounds', () => {
  it('refuses a record larger than its limit and nesting deeper than 256 levels', () => {
    const scanner = new XmlRecordScanner('Request', 1000);
    scanner.push(`<Report><Requests><Request>${'x'.repeat(2000)}`);
    expect(() => scanner.next()).toThrow(/record larger than 1000 characters/);
    const comment = new XmlRecordScanner('Request', 1000);
    comment.push(`<Report><!--${'x'.repeat(2000)}`);
    expect(() => comment.next()).toThrow(/comment or declaration larger than 1000/);
    const deep = new XmlRecordScanner('Request');
    deep.push(`<Report><Requests><Request>${'<a>'.repeat(300)}`);
    expect(() => deep.next()).toThrow(/nested deeper than 256/);
    tried.push('XML record over the size limit; a 2,000-character comment; 300-deep nesting');
  });
});

describe('hostile input: JSON pages with wrong types', () => {
  it('any JSON value as any on-demand body: PARSE_JSON_INVALID or typed records/rejects', async () => {
    const bodyArb = fc.oneof(
      fc.anything(),
      fc.dictionary(
        fc.constantFrom(
          'requestDetails',
          'settlements',
          'authorizations',
          'netFundingSummaries',
          'totalPurchases',
          'conversionDetails',
          'notificationOfChanges',
          'paymentBatchSummaries',
          'offset',
          'limit',
        ),
        fc.oneof(
          fc.anything(),
          fc.array(
            fc.dictionary(
              fc.constantFrom('requestId', 'amount', 'currencyCode', 'time', 'notes', 'salesCount', 'value'),
              fc.anything(),
            ),
          ),
        ),
      ),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ON_DEMAND_ENDPOINTS), bodyArb, async (endpoint, body) => {
        try {
          const parsed = parseOnDemandResponse(endpoint, body);
          for (const section of Object.values(parsed.sections)) for await (const _ of section.batches) void _;
        } catch (error) {
          expect(isCybsError(error) && error.code === 'PARSE_JSON_INVALID', String(error)).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
    tried.push('500 JSON bodies of wrong types (anything, arrays of objects with anything) × 5 endpoints');
  });
});

describe('hostile input: offsets that never end', () => {
  const window = { start: new Date('2024-03-01T00:00:00Z'), end: new Date('2024-03-02T00:00:00Z') };
  const page = (from: number, n: number) => ({
    requestDetails: Array.from({ length: n }, (_, i) => ({ requestId: String(from + i) })),
  });

  it('stops at maxPages when the service returns new full pages for ever', async () => {
    let calls = 0;
    const client = {
      getPurchaseRefundDetails: (p: { offset: number; limit: number }) => {
        calls++;
        return Promise.resolve(page(p.offset, p.limit));
      },
    } as unknown as ReportingClient;
    const pages: unknown[] = [];
    await expect(
      (async () => {
        for await (const b of fetchOnDemandPages(client, 'purchase-refund-details', {
          window,
          pageLimit: 10,
          maxPages: 25,
        }))
          pages.push(b);
      })(),
    ).rejects.toMatchObject({ code: 'EXTRACT_PAGING_RUNAWAY' });
    expect(pages.length).toBeLessThanOrEqual(25);
    expect(calls).toBeLessThanOrEqual(26);
    tried.push('paging: new full pages for ever (stopped at maxPages)');
  });

  it('stops at the first repeated page when the service ignores offset', async () => {
    let calls = 0;
    const client = {
      getPurchaseRefundDetails: (p: { limit: number }) => {
        calls++;
        return Promise.resolve(page(0, p.limit));
      },
    } as unknown as ReportingClient;
    await expect(
      (async () => {
        for await (const _ of fetchOnDemandPages(client, 'purchase-refund-details', {
          window,
          pageLimit: 10,
        }))
          void _;
      })(),
    ).rejects.toMatchObject({
      code: 'EXTRACT_PAGING_RUNAWAY',
      message: expect.stringMatching(/ignores offset/),
    });
    expect(calls).toBeLessThanOrEqual(3);
    tried.push('paging: the same full page at every offset (stopped at the first repeat)');
  });
});

describe('hostile input: huge inputs in a child process (peak RSS)', () => {
  const cases: [string, RegExp][] = [
    ['csv-100mb-quoted-field', /^PARSE_CSV_INVALID$/],
    ['csv-100mb-unquoted-field', /^PARSE_CSV_INVALID$/],
    ['csv-10000-columns', /^ok:200:0$/],
    ['csv-random-bytes-20mb', /^PARSE_CSV_INVALID$/],
    ['xml-random-bytes-20mb', /^PARSE_XML_INVALID$/],
    ['xml-billion-laughs', /^ok:0:1$/],
    ['xml-1m-nesting', /^PARSE_XML_INVALID$/],
    ['xml-100mb-text', /^PARSE_XML_INVALID$/],
    ['xml-100mb-unclosed-record', /^PARSE_XML_INVALID$/],
    ['xml-100mb-doctype', /^PARSE_XML_INVALID$/],
    // JSON pages read through the reporting client from a loopback server (issue 26 #12).
    ['json-150mb-value', /^API_INVALID_RESPONSE$/],
    ['json-150mb-page', /^API_INVALID_RESPONSE$/],
    ['json-19mb-page', /^ok:\d{6}:0$/],
    ['json-15mb-value', /^ok:1:0$/],
  ];
  let peak = 0;
  afterAll(() => console.log(`hostile inputs: peak RSS ${peak} MB over ${cases.length} huge inputs`));

  for (const [name, expected] of cases) {
    it(`${name}: ${String(expected)} with peak RSS under 300 MB`, { timeout: 120_000 }, async () => {
      const { stdout } = await run(
        process.execPath,
        // With the flags and environment every cybs-etl process runs with (src/runtime-flags.ts).
        [...NODE_RUNTIME_FLAGS, '--import', 'tsx', path.join('test', 'helpers', 'hostile-child.ts'), name],
        { cwd: repoRoot, maxBuffer: 1024 * 1024, env: { ...process.env, ...NODE_RUNTIME_ENV } },
      );
      const r = JSON.parse(stdout.trim().split('\n').pop()!) as {
        outcome: string;
        code?: string;
        message?: string;
        records: number;
        rejects: number;
        peakRssMB: number;
      };
      const outcome = r.outcome === 'ok' ? `ok:${r.records}:${r.rejects}` : r.code!;
      expect(outcome, r.message).toMatch(expected);
      expect(r.peakRssMB).toBeLessThan(300);
      peak = Math.max(peak, r.peakRssMB);
      tried.push(`${name}: ${outcome}, peak RSS ${r.peakRssMB} MB`);
    });
  }
});
