/**
 * The fast XML path (one hand-written pass → COPY text lines of raw values → set-wise casts)
 * against the per-row reference path (openXmlReport read twice → toLoadSource): the same table
 * contents, etl.rejects, etl.schema_changes and load result, on the XML sample and on simulator
 * data with bad records and unusual XML mixed in. The fast path either loads a file itself (reading
 * it a second time when a column first appears after the first records) or refuses it, and then the
 * per-row path loads it (as the executor does); each case also says which of the two it expects.
 */
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_PIPELINES } from '../../pipelines/index.js';
import { createReportingClient } from '../../src/api/reporting-client.js';
import { parseConfig } from '../../src/config/load-config.js';
import { isFastPathRefusal } from '../../src/load/fast-csv.js';
import { loadWindow } from '../../src/load/load-window.js';
import type { LoadWindowResult } from '../../src/load/load-window.js';
import { migrateToLatest } from '../../src/load/migrate.js';
import { openWarehouse } from '../../src/load/warehouse.js';
import type { Warehouse } from '../../src/load/warehouse.js';
import { NEW_COLUMN_REASON, openRawXmlReport } from '../../src/parse/xml-fast.js';
import { openXmlReport } from '../../src/parse/xml-report.js';
import { collectColumns, toLoadSource, toRawXmlLoadSource } from '../../src/pipeline/record-source.js';
import { startSimulator } from '../../src/simulator/start-simulator.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { dropTables, expectDeclaredIndexes } from '../helpers/indexes.js';

const SAMPLES = '/work/shared/samples/cybersource';
const DAY_MS = 86_400_000;

type Outcome = { result: LoadWindowResult } | { error: string };

interface Side {
  db: TestDatabase;
  warehouse: Warehouse;
}

let reference: Side;
let fast: Side;
/** A simulated Transaction Request report as XML, and a Payment Batch Detail one. */
let simulated = '';
let simulatedPbd = '';

async function openSide(prefix: string): Promise<Side> {
  const db = await createTestDatabase(prefix);
  const warehouse = await openWarehouse({ url: db.url, path: '' });
  await migrateToLatest(warehouse.db);
  return { db, warehouse };
}

beforeAll(async () => {
  reference = await openSide('fastxml_ref');
  fast = await openSide('fastxml_fast');
  const day = new Date(Date.now() - 5 * DAY_MS).toISOString().slice(0, 10);
  const sim = await startSimulator({
    seed: 5,
    organizations: 1,
    transactionsPerDay: 300,
    quietDayRate: 0,
    startDate: new Date(Date.now() - 20 * DAY_MS).toISOString().slice(0, 10),
  });
  const org = sim.organizations[0]!;
  const client = createReportingClient({
    credentials: { auth: 'http-signature', ...sim.credentials },
    target: { baseUrl: sim.baseUrl },
    api: parseConfig('').api,
  });
  const fetchXml = async (reportName: string): Promise<string> => {
    sim.store.findSubscription(org, reportName)!.reportMimeType = 'application/xml';
    const download = await client.downloadReport({ reportName, reportDate: day, accept: 'application/xml' });
    const parts: Buffer[] = [];
    for await (const chunk of download.body) parts.push(chunk as Buffer);
    return Buffer.concat(parts).toString('utf8');
  };
  try {
    simulated = await fetchXml('TransactionRequestReport_Daily');
    simulatedPbd = await fetchXml('PaymentBatchDetailReport_Daily_Classic');
  } finally {
    await client.close();
    await sim.close();
  }
}, 60_000);

afterAll(async () => {
  for (const side of [reference, fast]) {
    await side?.warehouse.close();
    await side?.db.drop();
  }
});

function chunksOf(text: string, size: number): Readable {
  const bytes = Buffer.from(text, 'utf8');
  const parts: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) parts.push(bytes.subarray(i, i + size));
  return Readable.from(parts);
}

interface LoadCase {
  text: string;
  report: string;
  table: string;
  windowKey: string;
  rejectThreshold?: number;
}

function pipelineOf(report: string) {
  return REPORT_PIPELINES.find((p) => p.reportDefinitionName === report)!;
}

function windowOptions(c: LoadCase) {
  const p = pipelineOf(c.report);
  return {
    window: { pipeline: p.name, organizationId: 'org_1', windowKey: c.windowKey },
    runId: null,
    ...(c.rejectThreshold !== undefined ? { rejectThreshold: c.rejectThreshold } : {}),
  };
}

const describeError = (error: unknown): Outcome => ({
  error: `${(error as { code?: string }).code}: ${(error as Error).message}`,
});

/** The reference: the per-row path, the file read twice (columns first). */
async function perRow(side: Side, c: LoadCase): Promise<Outcome> {
  const p = pipelineOf(c.report);
  try {
    const options = { fileName: 'f.xml', report: c.report };
    const columns = await collectColumns(await openXmlReport(chunksOf(c.text, 1000), options));
    const records = await openXmlReport(chunksOf(c.text, 1000), options);
    const result = await loadWindow(side.warehouse, {
      ...windowOptions(c),
      targets: [{ table: p.table, source: toLoadSource(records, `src:${c.windowKey}`, columns) }],
    });
    return { result };
  } catch (error) {
    return describeError(error);
  }
}

type Path = 'fast' | 'fast-after-discovery' | 'per-row';

/** The executor's order: the fast path (again with column discovery if needed), else per-row. */
async function fastFirst(side: Side, c: LoadCase): Promise<{ outcome: Outcome; path: Path }> {
  const p = pipelineOf(c.report);
  for (const discoverColumns of [false, true]) {
    try {
      const open = () =>
        openRawXmlReport(() => chunksOf(c.text, 997), {
          fileName: 'f.xml',
          report: c.report,
          discoverColumns,
        });
      const report = await open();
      const result = await loadWindow(side.warehouse, {
        ...windowOptions(c),
        targets: [{ table: p.table, source: toRawXmlLoadSource(report, `src:${c.windowKey}`, open) }],
      });
      return { outcome: { result }, path: discoverColumns ? 'fast-after-discovery' : 'fast' };
    } catch (error) {
      if (!isFastPathRefusal(error)) return { outcome: describeError(error), path: 'fast' };
      if (!discoverColumns && (error as Error).message.includes(NEW_COLUMN_REASON)) continue;
      break;
    }
  }
  return { outcome: await perRow(side, c), path: 'per-row' };
}

async function snapshot(side: Side, table: string): Promise<unknown> {
  const run = async (text: string) => (await sql.raw(text).execute(side.warehouse.db)).rows;
  const rows = await run(
    // `_source_key` as the organization and source it numbers (the numbers themselves depend on the
    // order in which each side's database first met its sources).
    `select to_jsonb(t) - '_loaded_at' - '_run_id' - '_source_key'
              || jsonb_build_object('_source_key', (select jsonb_build_array(k.organization_id, k.source)
                                                      from etl.sources k where k.source_key = t._source_key)) as row
       from cybs.${table} t order by _organization_id, _source, _source_row`,
  );
  const rejects = await run(
    `select pipeline, organization_id, window_key, source, record_number, raw_text, error_code, message, run_id
       from etl.rejects order by window_key, record_number, error_code, message`,
  );
  const changes = await run(
    `select table_schema, table_name, column_name, column_type, change, source, pipeline
       from etl.schema_changes order by table_name, column_name`,
  );
  const columns = await run(
    `select column_name, data_type, ordinal_position from information_schema.columns
      where table_schema = 'cybs' and table_name = '${table}' order by ordinal_position`,
  );
  return { rows, rejects, changes, columns };
}

async function expectSame(c: LoadCase, expected: Path): Promise<void> {
  const ref = await perRow(reference, c);
  const got = await fastFirst(fast, c);
  expect(got.path).toBe(expected);
  expect(got.outcome).toEqual(ref);
  expect(await snapshot(fast, c.table)).toEqual(await snapshot(reference, c.table));
}

/** The records of an XML text (`<Request …>…</Request>` blocks) edited one by one. */
function editRecords(text: string, edit: (record: string, i: number) => string): string {
  let i = 0;
  return text.replace(/<Request[\s>][\s\S]*?<\/Request>/g, (record) => edit(record, i++));
}

/** Replace the text of element `name` in a record. */
const setLeaf = (record: string, name: string, value: string): string =>
  record.replace(new RegExp(`<${name}>[^<]*</${name}>`), `<${name}>${value}</${name}>`);

/** The text with its first record once more at the end (another MerchantID: the same key). */
function withFirstRecordAgain(text: string): string {
  let first = '';
  editRecords(text, (r, i) => {
    if (i === 0) first = r;
    return r;
  });
  return text.replace(
    '</Requests>',
    `${first.replace(/MerchantID="[^"]*"/, 'MerchantID="again"')}\n</Requests>`,
  );
}

const TR = { report: 'TransactionRequestClass', table: 'transaction_request' };
const PBD = { report: 'PaymentBatchDetailClass', table: 'payment_batch_detail' };

describe('fast XML path ≡ per-row path', () => {
  it('loads a clean simulated report by itself, and an identical reload', async () => {
    expect(simulated.match(/<Request /g)!.length).toBeGreaterThan(200);
    await expectSame({ ...TR, text: simulated, windowKey: 'w1' }, 'fast');
    await expectSame({ ...TR, text: simulated, windowKey: 'w1' }, 'fast');
  });

  it('reloads a changed report: updated values, vanished records, a duplicate key (last one wins)', async () => {
    let first = '';
    let text = editRecords(simulated, (r, i) => {
      if (i === 0) first = r;
      if (i === 3) return setLeaf(r, 'Amount', '1.10');
      if (i >= 10 && i < 15) return '';
      return r;
    });
    text = text.replace(
      '</Requests>',
      `${first.replace(/MerchantID="[^"]*"/, 'MerchantID="changed"')}\n</Requests>`,
    );
    await expectSame({ ...TR, text, windowKey: 'w1' }, 'fast');
  });

  it('takes a first load with a key twice in the file, or one another window loaded, through staging', async () => {
    // A first load copies straight into the table; these keys make PostgreSQL refuse that COPY
    // (23505), and the lines are read again into the staging table and merged.
    const twice = withFirstRecordAgain(simulated);
    await expectSame({ ...TR, text: twice, windowKey: 'w20' }, 'fast');
    const some = editRecords(simulated, (r, i) => (i < 40 ? setLeaf(r, 'Amount', '2.50') : ''));
    await expectSame({ ...TR, text: some, windowKey: 'w21' }, 'fast');
  });

  it('decodes entities and character references, keeps line breaks and escapes COPY specials', async () => {
    const text = editRecords(simulated, (r, i) => {
      if (i === 1) return setLeaf(r, 'City', 'Paris &amp; &lt;Île&gt; &#233;&#x41; back\\slash');
      if (i === 2) return setLeaf(r, 'Address1', 'line one\nline two');
      if (i === 3) return setLeaf(r, 'City', '');
      if (i === 4) return r.replace(/<City>[^<]*<\/City>/, '<City/>');
      if (i === 5)
        return r.replace(
          /MerchantReferenceNumber="[^"]*"/,
          'MerchantReferenceNumber="a&#10;b &quot;q&quot;"',
        );
      if (i === 6) return setLeaf(r, 'Amount', '');
      return r;
    });
    await expectSame({ ...TR, text, windowKey: 'w2' }, 'fast');
  });

  it('adds unknown elements as text columns; a column first seen late reads the file once more', async () => {
    const everywhere = editRecords(simulated, (r, i) =>
      r.replace('</BillTo>', `<Brand_New>v${i}</Brand_New></BillTo>`),
    );
    await expectSame({ ...TR, text: everywhere, windowKey: 'w3' }, 'fast');
    const late = editRecords(simulated, (r, i) =>
      i === 250 ? r.replace('</Device>', '<Late_Field>late</Late_Field></Device>') : r,
    );
    await expectSame({ ...TR, text: late, windowKey: 'w3b' }, 'fast-after-discovery');
  });

  it('reads records whose elements come in another order, or are missing', async () => {
    const text = editRecords(simulated, (r, i) => {
      if (i === 2) return r.replace(/<BillTo>[\s\S]*?<\/BillTo>/, '');
      if (i === 3) {
        const bill = /<BillTo>([\s\S]*?)<\/BillTo>/.exec(r)![1]!;
        const leaves = bill.match(/<[A-Za-z0-9_]+>[^<]*<\/[A-Za-z0-9_]+>/g)!.reverse();
        return r.replace(/<BillTo>[\s\S]*?<\/BillTo>/, `<BillTo>${leaves.join('')}</BillTo>`);
      }
      if (i === 4)
        return r
          .replace(/<Device>[\s\S]*?<\/Device>/, '')
          .replace('<PaymentData>', '<Device><DeviceID>d</DeviceID></Device><PaymentData>');
      if (i === 5) return r.replace(/<City>[^<]*<\/City>/, '');
      return r;
    });
    await expectSame({ ...TR, text, windowKey: 'w8' }, 'fast');
  });

  it('refuses bad values, and the per-row path rejects them the same way', async () => {
    const text = editRecords(simulated, (r, i) => {
      if (i === 2) return setLeaf(r, 'Amount', 'abc');
      if (i === 7) return r.replace(/TransactionDate="[^"]*"/, 'TransactionDate="2023-13-45T00:00:00Z"');
      if (i === 9) return r.replace(/RequestID="[^"]*"/, 'RequestID=""');
      return r;
    });
    await expectSame({ ...TR, text, windowKey: 'w4', rejectThreshold: 0.5 }, 'per-row');
    // In the canonical form, but not a date: PostgreSQL's COPY refuses it, the per-row path rejects it.
    const impossible = editRecords(simulated, (r, i) =>
      i === 4 ? r.replace(/TransactionDate="[^"]*"/, 'TransactionDate="2023-02-30T00:00:00Z"') : r,
    );
    await expectSame({ ...TR, text: impossible, windowKey: 'w4b', rejectThreshold: 0.5 }, 'per-row');
    // Only the key is missing: the values are fine, the loader's check refuses.
    const noKey = editRecords(simulated, (r, i) =>
      i === 6 ? r.replace(/RequestID="[^"]*"/, 'RequestID=""') : r,
    );
    await expectSame({ ...TR, text: noKey, windowKey: 'w4c', rejectThreshold: 0.5 }, 'per-row');
  });

  it('refuses unusual XML (repeated elements, CDATA, comments, whitespace values, HTML entities)', async () => {
    const cases: [string, (r: string) => string][] = [
      ['repeated', (r) => r.replace('</BillTo>', '<Email>second@example.com</Email></BillTo>')],
      ['cdata', (r) => setLeaf(r, 'City', '<![CDATA[a<b]]>')],
      ['comment', (r) => r.replace('<BillTo>', '<BillTo><!-- note -->')],
      ['spaces', (r) => setLeaf(r, 'City', '  padded  ')],
      ['html', (r) => setLeaf(r, 'City', 'a&nbsp;b')],
      ['attribute on a leaf', (r) => r.replace('<City>', '<City lang="fr">')],
      ['deeper', (r) => r.replace('<BillTo>', '<BillTo><Inner><Deeper><Name>x</Name></Deeper></Inner>')],
    ];
    let k = 0;
    for (const [, edit] of cases) {
      const text = editRecords(simulated, (r, i) => (i === 5 ? edit(r) : r));
      await expectSame({ ...TR, text, windowKey: `w5_${k++}`, rejectThreshold: 0.5 }, 'per-row');
    }
    // Groups two levels deep (`<PaymentMethod><Card><AccountSuffix>`) are the real layout's.
    const twoLevels = editRecords(simulated, (r, i) =>
      i === 5 ? r.replace('<BillTo>', '<BillTo><Inner><Name>x</Name></Inner>') : r,
    );
    await expectSame(
      { ...TR, text: twoLevels, windowKey: `w5_${k++}`, rejectThreshold: 0.5 },
      'fast-after-discovery',
    );
  });

  it('leaves malformed and truncated files to the per-row path, which fails them the same way', async () => {
    const truncated = simulated.slice(0, Math.floor(simulated.length / 2));
    await expectSame({ ...TR, text: truncated, windowKey: 'w6' }, 'per-row');
    const unclosed = editRecords(simulated, (r, i) => (i === 4 ? r.replace('</BillTo>', '') : r));
    await expectSame({ ...TR, text: unclosed, windowKey: 'w6b' }, 'per-row');
    const empty =
      '<?xml version="1.0"?>\n<Report Name="Transaction Request Report"><Requests></Requests></Report>\n';
    await expectSame({ ...TR, text: empty, windowKey: 'w6c' }, 'per-row');
  });

  it('fails the window over the reject threshold exactly like the per-row path', async () => {
    const text = editRecords(simulated, (r, i) => (i % 3 === 0 && i < 60 ? setLeaf(r, 'Amount', 'x') : r));
    await expectSame({ ...TR, text, windowKey: 'w7' }, 'per-row');
  });

  it('a first load that creates the table builds its indexes after the rows; a key twice then goes through staging', async () => {
    const decl = pipelineOf(TR.report).table;
    const sides = [reference.warehouse.db, fast.warehouse.db];
    // The table has no index while the lines go in: the unique index's build refuses the key
    // twice (23505), and the lines are read again into the staging table and merged.
    await dropTables(sides, decl);
    const twice = withFirstRecordAgain(simulated);
    await expectSame({ ...TR, text: twice, windowKey: 'n1' }, 'fast');
    await expectDeclaredIndexes(sides, decl);
    await dropTables(sides, decl);
    await expectSame({ ...TR, text: simulated, windowKey: 'n2' }, 'fast');
    await expectDeclaredIndexes(sides, decl);
  });

  it('loads Payment Batch Detail (nested batches) and the XML sample the same way', async () => {
    expect(simulatedPbd).toContain('<Batch ');
    await expectSame({ ...PBD, text: simulatedPbd, windowKey: 'p1' }, 'fast');
    const bad = editRecords(simulatedPbd, (r, i) => (i === 3 ? setLeaf(r, 'Amount', '12,5.x') : r));
    await expectSame({ ...PBD, text: bad, windowKey: 'p2', rejectThreshold: 0.5 }, 'per-row');
    const sample = await readFile(`${SAMPLES}/legacy-docs-PaymentBatchDetailReport.excerpt.xml`, 'utf8');
    // Its BatchDate is date-only: the fast path sends the instant the per-row path reads (midnight UTC).
    await expectSame({ ...PBD, text: sample, windowKey: 's1', rejectThreshold: 1 }, 'fast');
    const canonical = sample.replace('BatchDate="2001-08-16"', 'BatchDate="2001-08-16T00:00:00Z"');
    await expectSame({ ...PBD, text: canonical, windowKey: 's2', rejectThreshold: 1 }, 'fast');
  });

  it('reads the timestamp forms of real files (offsets, a space for T, milliseconds, no seconds, dates) as the per-row path does', async () => {
    const forms = [
      '2009-05-27T17:49:10+05:30',
      '2008-09-10 21:46:41.765-08:00',
      '2001-08-16T00:01-07:00',
      '2024-02-29',
      '2008-09-10T14:00:08-0800',
    ];
    const text = editRecords(simulated, (r, i) =>
      r.replace(/TransactionDate="[^"]*"/, `TransactionDate="${forms[i % forms.length]!}"`),
    );
    await expectSame({ ...TR, text, windowKey: 't1' }, 'fast');
    const bad = editRecords(text, (r, i) =>
      i === 7 ? r.replace(/TransactionDate="[^"]*"/, 'TransactionDate="2009-02-30 10:00:00+01:00"') : r,
    );
    await expectSame({ ...TR, text: bad, windowKey: 't2', rejectThreshold: 0.5 }, 'per-row');
  });
});
