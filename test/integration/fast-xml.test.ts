/**
 * The fast XML path (one hand-written pass → COPY text lines of raw values → set-wise casts)
 * against the per-row reference path (openXmlReport read twice → toLoadSource), both loading the
 * tables the window executor loads from an XML file (src/pipeline/xml-load-targets.ts: the
 * records' table and the child tables of their application replies and line items): the same
 * contents of every table, etl.rejects, etl.schema_changes and load result, on the XML sample and
 * on simulator data (the Transaction Detail layout) with bad records and unusual XML mixed in. The
 * fast path either loads a file itself (reading it a second time when a column first appears
 * after the first records) or refuses it, and then the per-row path loads it (as the executor
 * does); each case also says which of the two it expects.
 */
import { readFile } from 'node:fs/promises';
import { chunksOf } from '../helpers/load.js';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_PIPELINES } from '../../pipelines/index.js';
import { createReportingClient } from '../../src/api/reporting-client.js';
import { parseConfig } from '../../src/config/load-config.js';
import { loadWindow } from '../../src/load/window/load-window.js';
import type { LoadWindowResult } from '../../src/load/window/load-window.js';
import { migrateToLatest } from '../../src/warehouse/migrate.js';
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import type { Warehouse } from '../../src/warehouse/warehouse.js';
import type { TableDecl } from '../../src/load/table-spec.js';
import { openRawXmlReport } from '../../src/parse/xml/raw-xml-report.js';
import { loadXmlFast, openXmlFileTargets } from '../../src/pipeline/xml-load-targets.js';
import { startSimulator } from '../../packages/simulator/src/server/start-simulator.js';
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

interface LoadCase {
  text: string;
  report: string;
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

/** The reference: the executor's per-row path (records and child tables, each file read twice). */
async function perRow(side: Side, c: LoadCase): Promise<Outcome> {
  try {
    const xml = await openXmlFileTargets(
      pipelineOf(c.report),
      () => Promise.resolve(chunksOf(c.text, 1000)),
      { fileName: 'f.xml', report: c.report },
    );
    const result = await loadWindow(side.warehouse, {
      ...windowOptions(c),
      targets: xml.targets(`src:${c.windowKey}`),
    });
    return { result };
  } catch (error) {
    return describeError(error);
  }
}

type Path = 'fast' | 'fast-after-discovery' | 'per-row';

/**
 * The executor's order (loadXmlFast, as src/pipeline/window/report-file.ts calls it): the fast path
 * with the child tables' spools (again with column discovery if needed), else per-row.
 */
async function fastFirst(
  side: Side,
  c: LoadCase,
): Promise<{ outcome: Outcome; path: Path; reason?: string }> {
  let discovered = false;
  let reason: string | undefined;
  try {
    const result = await loadXmlFast(
      pipelineOf(c.report),
      ({ discoverColumns, childTables }) => {
        discovered = discoverColumns;
        return openRawXmlReport(() => chunksOf(c.text, 997), {
          fileName: 'f.xml',
          report: c.report,
          discoverColumns,
          childTables,
        });
      },
      (targets) =>
        loadWindow(side.warehouse, { ...windowOptions(c), targets: targets(`src:${c.windowKey}`) }),
      (why) => (reason = why),
    );
    if (result !== undefined)
      return { outcome: { result }, path: discovered ? 'fast-after-discovery' : 'fast' };
  } catch (error) {
    return { outcome: describeError(error), path: discovered ? 'fast-after-discovery' : 'fast' };
  }
  return { outcome: await perRow(side, c), path: 'per-row', reason };
}

/** The tables a window of the report loads: the records' table, then its child tables. */
const tablesOf = (report: string): TableDecl[] => {
  const p = pipelineOf(report);
  return [p.table, ...Object.values(p.childTables ?? {})];
};

async function snapshot(side: Side, report: string): Promise<unknown> {
  const run = async (text: string) => (await sql.raw(text).execute(side.warehouse.db)).rows;
  const tables: Record<string, unknown> = {};
  for (const { name: table } of tablesOf(report)) {
    const exists = await run(`select to_regclass('cybs.${table}') is not null as e`);
    if (!(exists[0] as { e: boolean }).e) continue;
    const rows = await run(
      // `_source_key` as the organization and source it numbers (the numbers themselves depend on
      // the order in which each side's database first met its sources).
      `select to_jsonb(t) - '_loaded_at' - '_run_id' - '_source_key'
                || jsonb_build_object('_source_key', (select jsonb_build_array(k.organization_id, k.source)
                                                        from etl.sources k where k.source_key = t._source_key)) as row
         from cybs.${table} t order by _organization_id, _source, _source_row, to_jsonb(t)::text`,
    );
    const columns = await run(
      `select column_name, data_type, ordinal_position from information_schema.columns
        where table_schema = 'cybs' and table_name = '${table}' order by ordinal_position`,
    );
    tables[table] = { rows, columns };
  }
  const rejects = await run(
    `select pipeline, organization_id, window_key, source, record_number, raw_text, error_code, message, run_id
       from etl.rejects order by window_key, record_number, error_code, message`,
  );
  const changes = await run(
    `select table_schema, table_name, column_name, column_type, change, source, pipeline
       from etl.schema_changes order by table_name, column_name`,
  );
  return { tables, rejects, changes };
}

async function expectSame(c: LoadCase, expected: Path): Promise<void> {
  const ref = await perRow(reference, c);
  const got = await fastFirst(fast, c);
  // The refusal's reason shows when the path is not the expected one.
  expect(got.path, got.reason).toBe(expected);
  expect(got.outcome).toEqual(ref);
  expect(await snapshot(fast, c.report)).toEqual(await snapshot(reference, c.report));
}

/** Rows of a table of the fast side. */
async function rowCount(table: string): Promise<number> {
  const result = await sql<{
    n: number;
  }>`select count(*)::int as n from ${sql.table(`cybs.${table}`)}`.execute(fast.warehouse.db);
  return result.rows[0]!.n;
}

/** The records of an XML text (`<Request …>…</Request>` blocks) edited one by one. */
function editRecords(text: string, edit: (record: string, i: number) => string): string {
  let i = 0;
  return text.replace(/<Request[\s>][\s\S]*?<\/Request>/g, (record) => edit(record, i++));
}

/** Replace the text of element `name` in a record. */
const setLeaf = (record: string, name: string, value: string): string =>
  record.replace(new RegExp(`<${name}>[^<]*</${name}>`), `<${name}>${value}</${name}>`);

/** The text with its first record once more at the end (another Source: the same keys, its items' too). */
function withFirstRecordAgain(text: string): string {
  let first = '';
  editRecords(text, (r, i) => {
    if (i === 0) first = r;
    return r;
  });
  return text.replace('</Requests>', `${first.replace(/Source="[^"]*"/, 'Source="again"')}\n</Requests>`);
}

const TR = { report: 'TransactionRequestClass' };
const PBD = { report: 'PaymentBatchDetailClass' };
const REPLIES = 'transaction_request_application_reply';
const LINE_ITEMS = 'transaction_request_line_item';

describe('fast XML path ≡ per-row path', () => {
  it('loads a clean simulated report by itself, and an identical reload', async () => {
    expect(simulated.match(/<Request /g)!.length).toBeGreaterThan(200);
    expect(simulated).toContain('<!DOCTYPE Report SYSTEM');
    await expectSame({ ...TR, text: simulated, windowKey: 'w1' }, 'fast');
    await expectSame({ ...TR, text: simulated, windowKey: 'w1' }, 'fast');
    // The items went to the child tables, one row per item.
    expect(await rowCount(REPLIES)).toBe(simulated.match(/<ApplicationReply /g)!.length);
    expect(await rowCount(LINE_ITEMS)).toBe(simulated.match(/<LineItem /g)!.length);
    expect(await rowCount(LINE_ITEMS)).toBeGreaterThan(200);
  });

  it('reloads a changed report: updated values, vanished records, a duplicate key (last one wins)', async () => {
    let first = '';
    let text = editRecords(simulated, (r, i) => {
      if (i === 0) first = r;
      if (i === 3) return setLeaf(r, 'Amount', '1.10');
      if (i === 4) return setLeaf(r, 'UnitPrice', '3.30');
      if (i === 5) return r.replace(/<ApplicationReplies>[\s\S]*?<\/ApplicationReplies>/, '');
      if (i >= 10 && i < 15) return '';
      return r;
    });
    text = text.replace('</Requests>', `${first.replace(/Source="[^"]*"/, 'Source="changed"')}\n</Requests>`);
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
      i === 250 ? r.replace('</PaymentData>', '<Late_Field>late</Late_Field></PaymentData>') : r,
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
          .replace(/<ShipTo>[\s\S]*?<\/ShipTo>/, '')
          .replace('<PaymentData>', '<ShipTo><City>d</City></ShipTo><PaymentData>');
      if (i === 5) return r.replace(/<City>[^<]*<\/City>/, '');
      // The repeated groups in the other order, an item's leaves reversed.
      if (i === 6) {
        const items = /<LineItems>[\s\S]*?<\/LineItems>/.exec(r)![0];
        return r.replace(items, '').replace('</ApplicationReplies>', `</ApplicationReplies>${items}`);
      }
      if (i === 7) {
        const item = /<LineItem [^>]*>([\s\S]*?)<\/LineItem>/.exec(r)![1]!;
        const leaves = item.match(/<[A-Za-z0-9_]+>[^<]*<\/[A-Za-z0-9_]+>/g)!.reverse();
        return r.replace(item, leaves.join(''));
      }
      return r;
    });
    await expectSame({ ...TR, text, windowKey: 'w8' }, 'fast');
  });

  it('reads an empty container of a repeated group as a request without such items, on both paths', async () => {
    // What a writer puts for a request without replies or line items: the container alone.
    const forms = ['<X>\n      </X>', '<X></X>', '<X/>'];
    let k = 0;
    for (const form of forms)
      for (const container of ['ApplicationReplies', 'LineItems']) {
        const block = new RegExp(`<${container}>[\\s\\S]*?</${container}>`);
        const text = editRecords(simulated, (r, i) =>
          i === 3 ? r.replace(block, form.replaceAll('X', container)) : r,
        );
        expect(text).toContain(form.replaceAll('X', container));
        await expectSame({ ...TR, text, windowKey: `e${k++}` }, 'fast');
      }
    // No column of the records' table stands for the containers.
    const columns = await sql<{ c: string }>`
      select column_name as c from information_schema.columns
       where table_schema = 'cybs' and table_name = 'transaction_request'`.execute(fast.warehouse.db);
    expect(columns.rows.map((r) => r.c).filter((c) => /replies|line_items/.test(c))).toEqual([]);
  });

  it('refuses bad values, and the per-row path rejects them the same way', async () => {
    const text = editRecords(simulated, (r, i) => {
      if (i === 2) return setLeaf(r, 'Amount', 'abc');
      if (i === 7) return r.replace(/RequestDate="[^"]*"/, 'RequestDate="2023-13-45T00:00:00Z"');
      if (i === 9) return r.replace(/RequestID="[^"]*"/, 'RequestID=""');
      return r;
    });
    await expectSame({ ...TR, text, windowKey: 'w4', rejectThreshold: 0.5 }, 'per-row');
    // In the canonical form, but not a date: PostgreSQL's COPY refuses it, the per-row path rejects it.
    const impossible = editRecords(simulated, (r, i) =>
      i === 4 ? r.replace(/RequestDate="[^"]*"/, 'RequestDate="2023-02-30T00:00:00Z"') : r,
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

  it('rejects records with references XML does not allow or undefined entities, on both paths (issue 26 #19)', async () => {
    const bad = ['&#0;', '&#xD800;', '&#x110000;', '&foo;', '&nbsp;', '&#xFFFE;', 'a & b'];
    const text = editRecords(simulated, (r, i) => (i < bad.length ? setLeaf(r, 'City', `x${bad[i]!}y`) : r));
    await expectSame({ ...TR, text, windowKey: 'r19a', rejectThreshold: 0.5 }, 'per-row');
    const rejects = await sql<{ record_number: number; raw_text: string; message: string }>`
      select record_number::int as record_number, raw_text, message from etl.rejects
       where window_key = 'r19a' order by record_number`.execute(fast.warehouse.db);
    expect(rejects.rows.map((r) => r.record_number)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    for (const [i, r] of rejects.rows.entries()) {
      expect(r.raw_text).toContain(`<City>x${bad[i]!}y</City>`);
      expect(r.message).toMatch(/record \d+: the (character reference|entity|& of)/);
    }
    // No row of the table holds the literal text or lost the character.
    const cities = await sql<{ n: number }>`
      select count(*)::int as n from cybs.transaction_request
       where _source = 'src:r19a' and (bill_to_city like 'x%y' or bill_to_city like '%&%')`.execute(
      fast.warehouse.db,
    );
    expect(cities.rows[0]!.n).toBe(0);
    // An attribute twice in a record: a reject, on both paths.
    const twice = editRecords(simulated, (r, i) =>
      i === 3 ? r.replace('<Request ', '<Request Source="x" ') : r,
    );
    await expectSame({ ...TR, text: twice, windowKey: 'r19e', rejectThreshold: 0.5 }, 'per-row');
    const twiceRejects = await sql<{ message: string }>`
      select message from etl.rejects where window_key = 'r19e'`.execute(fast.warehouse.db);
    expect(twiceRejects.rows.map((r) => r.message)).toEqual([
      expect.stringContaining('the attribute Source appears twice in <Request>'),
    ]);
    // In an attribute of an element enclosing the records: the file cannot be read, on both paths.
    const enclosing = simulated.replace('<Requests>', '<Requests Note="&#0;">');
    await expectSame({ ...TR, text: enclosing, windowKey: 'r19b' }, 'per-row');
  });

  it('reads only the elements of the report namespace as records, on both paths (issue 26 #19)', async () => {
    const root = /<Report[^>]*>/.exec(simulated)![0];
    const own = /xmlns="([^"]*)"/.exec(root)?.[1] ?? '';
    const text = editRecords(simulated, (r, i) => {
      if (i === 1)
        return r
          .replace('<Request ', '<evil:Request xmlns:evil="urn:evil" ')
          .replace('</Request>', '</evil:Request>');
      if (i === 2) return r.replace('<Request ', '<Request xmlns="urn:evil" ');
      if (i === 3) return `<Wrap xmlns="urn:evil">${r}</Wrap>`;
      if (i === 4) return r.replace('<BillTo>', '<BillTo><x:City xmlns:x="urn:evil">Evil</x:City>');
      if (i === 5)
        return r.replace('<Request ', `<t:Request xmlns:t="${own}" `).replace('</Request>', '</t:Request>');
      return r;
    });
    await expectSame({ ...TR, text, windowKey: 'r19c', rejectThreshold: 0.5 }, 'per-row');
    const records = simulated.match(/<Request /g)!.length;
    const loaded = await sql<{ n: number }>`
      select count(*)::int as n from cybs.transaction_request where _source = 'src:r19c'`.execute(
      fast.warehouse.db,
    );
    // Three records are not the report's, one is a reject (its City of another namespace).
    expect(loaded.rows[0]!.n).toBe(records - 4);
    const rejects = await sql<{ message: string }>`
      select message from etl.rejects where window_key = 'r19c'`.execute(fast.warehouse.db);
    expect(rejects.rows.map((r) => r.message)).toEqual([
      expect.stringContaining('<x:City> is an element of the namespace "urn:evil"'),
    ]);
    // A namespace declaration on an element enclosing records of the report's namespace: per-row, same rows.
    const declared = simulated.replace('<Requests>', `<Requests xmlns:x="urn:other">`);
    await expectSame({ ...TR, text: declared, windowKey: 'r19d' }, 'per-row');
    expect(
      (
        await sql<{ n: number }>`
      select count(*)::int as n from cybs.transaction_request where _source = 'src:r19d'`.execute(
          fast.warehouse.db,
        )
      ).rows[0]!.n,
    ).toBe(records);
  });

  it('leaves malformed and truncated files to the per-row path, which fails them the same way', async () => {
    const truncated = simulated.slice(0, Math.floor(simulated.length / 2));
    await expectSame({ ...TR, text: truncated, windowKey: 'w6' }, 'per-row');
    const unclosed = editRecords(simulated, (r, i) => (i === 4 ? r.replace('</BillTo>', '') : r));
    await expectSame({ ...TR, text: unclosed, windowKey: 'w6b' }, 'per-row');
    const empty = simulated.replace(/<Requests>[\s\S]*<\/Requests>/, '<Requests></Requests>');
    await expectSame({ ...TR, text: empty, windowKey: 'w6c' }, 'per-row');
  });

  it('fails the window over the reject threshold exactly like the per-row path', async () => {
    const text = editRecords(simulated, (r, i) => (i % 3 === 0 && i < 60 ? setLeaf(r, 'Amount', 'x') : r));
    await expectSame({ ...TR, text, windowKey: 'w7' }, 'per-row');
  });

  it('a first load that creates the table builds its indexes after the rows; a key twice then goes through staging', async () => {
    // The records' table and its child tables (children first: they name their parent).
    const decls = tablesOf(TR.report).reverse();
    expect(decls.length).toBe(3);
    const sides = [reference.warehouse.db, fast.warehouse.db];
    // The tables have no index while the lines go in: the unique index's build refuses the key
    // twice (23505), and the lines are read again into the staging tables and merged.
    for (const decl of decls) await dropTables(sides, decl);
    const twice = withFirstRecordAgain(simulated);
    await expectSame({ ...TR, text: twice, windowKey: 'n1' }, 'fast');
    for (const decl of decls) await expectDeclaredIndexes(sides, decl);
    for (const decl of decls) await dropTables(sides, decl);
    await expectSame({ ...TR, text: simulated, windowKey: 'n2' }, 'fast');
    for (const decl of decls) await expectDeclaredIndexes(sides, decl);
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
      r.replace(/RequestDate="[^"]*"/, `RequestDate="${forms[i % forms.length]!}"`),
    );
    await expectSame({ ...TR, text, windowKey: 't1' }, 'fast');
    const bad = editRecords(text, (r, i) =>
      i === 7 ? r.replace(/RequestDate="[^"]*"/, 'RequestDate="2009-02-30 10:00:00+01:00"') : r,
    );
    await expectSame({ ...TR, text: bad, windowKey: 't2', rejectThreshold: 0.5 }, 'per-row');
  });
});
