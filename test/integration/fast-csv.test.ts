/**
 * The fast CSV path (raw bytes → COPY → set-wise casts) against the per-row reference path
 * (openCsvReport → toLoadSource): the same table contents, etl.rejects, etl.schema_changes and
 * load result, on the sample files and on simulator data with bad rows mixed in. The fast path
 * either loads a file itself or refuses it, and then the per-row path loads it (as the executor
 * does); each case also says which of the two it expects.
 */
import { readFile } from 'node:fs/promises';
import { chunksInTurn, chunksOf } from '../helpers/load.js';
import { buffer } from 'node:stream/consumers';
import { parse } from 'csv-parse/sync';
import pino from 'pino';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_PIPELINES } from '../../pipelines/index.js';
import { createReportingClient } from '../../src/api/reporting-client.js';
import { resolveHeader } from '../../src/catalog/index.js';
import { parseConfig } from '../../src/config/load-config.js';
import { openRawCsvReport } from '../../src/parse/csv/raw-csv-report.js';
import { isFastPathRefusal } from '../../src/copy-text/fast-path-refusal.js';
import { loadWindow } from '../../src/load/window/load-window.js';
import { loadWindowThen } from '../helpers/load-then.js';
import type { LoadedState, LoadWindowResult } from '../../src/load/window/load-window.js';
import { migrateToLatest } from '../../src/warehouse/migrate.js';
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import type { Warehouse } from '../../src/warehouse/warehouse.js';
import { openCsvReport, serialiseCsvRow } from '../../src/parse/csv/csv-report.js';
import { toLoadSource, toRawLoadSource } from '../../src/load/report-sources.js';
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
let simulated = '';
/** A Funding Detail report: its funding dates are written as UTC timestamps. */
let funding = '';

async function openSide(prefix: string): Promise<Side> {
  const db = await createTestDatabase(prefix);
  const warehouse = await openWarehouse({ url: db.url, path: '' });
  await migrateToLatest(warehouse.db);
  return { db, warehouse };
}

beforeAll(async () => {
  reference = await openSide('fastcsv_ref');
  fast = await openSide('fastcsv_fast');
  const day = new Date(Date.now() - 5 * DAY_MS).toISOString().slice(0, 10);
  const sim = await startSimulator({
    seed: 3,
    organizations: 1,
    transactionsPerDay: 400,
    quietDayRate: 0,
    startDate: new Date(Date.now() - 20 * DAY_MS).toISOString().slice(0, 10),
  });
  const client = createReportingClient({
    credentials: { auth: 'http-signature', ...sim.credentials },
    target: { baseUrl: sim.baseUrl },
    api: parseConfig('').api,
  });
  const downloaded = async (reportName: string): Promise<string> => {
    const download = await client.downloadReport({ reportName, reportDate: day, accept: 'text/csv' });
    const parts: Buffer[] = [];
    for await (const chunk of download.body) parts.push(chunk as Buffer);
    return Buffer.concat(parts).toString('utf8');
  };
  try {
    simulated = await downloaded('TransactionRequestReport_Daily');
    funding = await downloaded('FundingDetailReport_Daily');
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

async function perRow(side: Side, c: LoadCase): Promise<Outcome> {
  const p = pipelineOf(c.report);
  try {
    const records = await openCsvReport(chunksOf(c.text, 1000), { fileName: 'f.csv', report: c.report });
    const result = await loadWindow(side.warehouse, {
      ...windowOptions(c),
      targets: [{ table: p.table, source: toLoadSource(records, `src:${c.windowKey}`) }],
    });
    return { result };
  } catch (error) {
    return { error: `${(error as { code?: string }).code}: ${(error as Error).message}` };
  }
}

/** The executor's order: the fast path, and the per-row path when it refuses. */
async function fastFirst(
  side: Side,
  c: LoadCase,
  chunkSize = 997,
): Promise<{ outcome: Outcome; refused: boolean }> {
  const p = pipelineOf(c.report);
  try {
    // As the executor does: the file can be read again (a first load that meets existing keys),
    // each read into one buffer (a download read in turn).
    const open = () =>
      openRawCsvReport(chunksInTurn(c.text, chunkSize), { fileName: 'f.csv', report: c.report });
    const report = await open();
    const result = await loadWindow(side.warehouse, {
      ...windowOptions(c),
      targets: [{ table: p.table, source: toRawLoadSource(report, `src:${c.windowKey}`, open) }],
    });
    return { outcome: { result }, refused: false };
  } catch (error) {
    if (!isFastPathRefusal(error)) {
      return {
        outcome: { error: `${(error as { code?: string }).code}: ${(error as Error).message}` },
        refused: false,
      };
    }
    return { outcome: await perRow(side, c), refused: true };
  }
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
    `select column_name, data_type from information_schema.columns
      where table_schema = 'cybs' and table_name = '${table}' order by column_name`,
  );
  return { rows, rejects, changes, columns };
}

/** Both paths load `c` the same way; the outcome. */
async function expectSame(c: LoadCase, expectFast: boolean, chunkSize?: number): Promise<Outcome> {
  const ref = await perRow(reference, c);
  const got = await fastFirst(fast, c, chunkSize);
  expect(got.refused, JSON.stringify(got.outcome).slice(0, 300)).toBe(!expectFast);
  expect(got.outcome).toEqual(ref);
  expect(await snapshot(fast, c.table)).toEqual(await snapshot(reference, c.table));
  return ref;
}

/** The simulated report with `edit` applied to its data rows (fields parsed, then re-serialised). */
function edited(
  edit: (rows: string[][], column: (name: string) => number, header: string[]) => void,
  text = simulated,
): string {
  const lines = text.split('\r\n');
  const metadata = lines[0]!;
  const table = parse(lines.slice(1).join('\n'), { relax_column_count: true }) as string[][];
  const header = table[0]!;
  const column = (name: string) =>
    header.findIndex((h) => resolveHeader(h, { report: 'TransactionRequestClass' }).column === name);
  const rows = table.slice(1);
  edit(rows, column, header);
  // Cells are re-quoted as needed; a cell written `RAW:…` goes into the file as it is.
  const cell = (v: string) => (v.startsWith('RAW:') ? v.slice(4) : serialiseCsvRow([v]));
  return [metadata, serialiseCsvRow(header), ...rows.map((r) => r.map(cell).join(','))].join('\r\n') + '\r\n';
}

/**
 * The line of an `edited` file on which each data row starts, from 0: rows end in CRLF, and a
 * quoted value of the simulated data may hold a line break of its own, so row k starts on line
 * k + 3 only when none of the rows before it holds one.
 */
function rowLines(text: string): number[] {
  const lines: number[] = [];
  let line = 1;
  for (const segment of text.split('\r\n').slice(0, -1)) {
    lines.push(line);
    line += 1 + (segment.match(/\n/g)?.length ?? 0);
  }
  return lines.slice(2);
}

const TR = { report: 'TransactionRequestClass', table: 'transaction_request' };

describe('fast CSV path ≡ per-row path', () => {
  it('loads a clean simulated report by itself, and an identical reload', async () => {
    expect(simulated.split('\n').length).toBeGreaterThan(300);
    await expectSame({ ...TR, text: simulated, windowKey: 'w1' }, true);
    await expectSame({ ...TR, text: simulated, windowKey: 'w1' }, true);
  });

  it('reloads a changed report: updated values, vanished rows, duplicate keys (last one wins)', async () => {
    const text = edited((rows, column) => {
      rows[3]![column('amount')] = '1.10';
      rows.splice(10, 5);
      rows.push([...rows[0]!]);
      rows[rows.length - 1]![column('merchant_id')] = 'changed';
    });
    await expectSame({ ...TR, text, windowKey: 'w1' }, true);
  });

  it('a first load whose keys are in the table already, or twice in the file, goes through staging', async () => {
    // w1's rows hold these keys under another source: the straight COPY meets them (23505),
    // rolls back, and the staging merge takes the rows over (as the per-row path does).
    await expectSame({ ...TR, text: simulated, windowKey: 'w1b' }, true);
    const twice = edited((rows) => {
      rows.push([...rows[0]!]);
    });
    await expectSame({ ...TR, text: twice, windowKey: 'w1c' }, true);
  });

  it('handles quoted values with commas and quotes, empty and quoted-empty values', async () => {
    const text = edited((rows, column) => {
      rows[1]![column('bill_to_city')] = 'Paris, "Île"';
      rows[2]![column('bill_to_city')] = 'RAW:""';
      rows[3]![column('bill_to_city')] = '';
      rows[4]![column('bill_to_city')] = '  spaced  ';
      rows[5]![column('amount')] = '';
    });
    await expectSame({ ...TR, text, windowKey: 'w2' }, true);
  });

  it('rewrites backslashes, and the commas, quotes and line breaks of quoted values, as COPY text', async () => {
    const text = edited((rows, column) => {
      rows[1]![column('bill_to_city')] = 'C:\\temp\\new'; // unquoted backslashes
      rows[2]![column('bill_to_city')] = 'a\\,b "q" \\N'; // quoted: comma, quotes, backslashes
      rows[3]![column('bill_to_city')] = '\\N'; // COPY text's default NULL marker
      rows[4]![column('bill_to_city')] = '\\.'; // COPY text's end-of-data marker
      rows[5]![column('bill_to_address1')] = 'tab\there, "x"\r\nline\\two';
      rows[6]![column('bill_to_city')] = 'RAW:"ends with a backslash\\"';
      rows[7]![column('bill_to_city')] = 'RAW:""""'; // one quote
      rows[8]![column('bill_to_city')] = '"'.repeat(40); // more quotes than the scanner keeps places of
      rows[rows.length - 1]![column('bill_to_city')] = 'last\\';
    });
    await expectSame({ ...TR, text, windowKey: 'w9' }, true);
    // Chunk boundaries anywhere, the backslashes of one record found again in the next chunk.
    for (const size of [1, 2, 5, 64]) await expectSame({ ...TR, text, windowKey: 'w9' }, true, size);
    // The last record without its line break.
    await expectSame({ ...TR, text: text.slice(0, -2), windowKey: 'w9' }, true);
  });

  it('refuses a quote inside a value, or a value going on after its closing quote, as the per-row parser fails the file', async () => {
    for (const raw of ['RAW:ab"c"d', 'RAW:"ab"c', 'RAW:"ab""c"d']) {
      const text = edited((rows, column) => {
        rows[2]![column('bill_to_city')] = raw;
      });
      await expectSame({ ...TR, text, windowKey: 'w10' }, false);
    }
  });

  it('adds unknown headers as text columns, recorded in etl.schema_changes', async () => {
    const text = edited((rows, _column, header) => {
      header.push('Brand New Field');
      rows.forEach((r, i) => r.push(`v${i}`));
    });
    await expectSame({ ...TR, text, windowKey: 'w3' }, true);
  });

  it('refuses bad values, and the per-row path rejects them the same way', async () => {
    const text = edited((rows, column) => {
      rows[2]![column('amount')] = 'abc';
      rows[7]![column('transaction_date')] = '2023-13-45T00:00:00Z';
      rows[9]![column('request_id')] = '';
    });
    await expectSame({ ...TR, text, windowKey: 'w4', rejectThreshold: 0.5 }, false);
  });

  it('loads multi-line values and mixed line ends; refuses a ragged row, non-canonical numbers', async () => {
    const ragged = edited((rows) => {
      rows[4]!.push('extra');
      rows[6]!.pop();
    });
    await expectSame({ ...TR, text: ragged, windowKey: 'w5', rejectThreshold: 0.5 }, false);
    const multiline = edited((rows, column) => {
      rows[4]![column('bill_to_address1')] = 'line one\r\nline two\rthree\nfour';
      rows[5]![column('bill_to_address1')] = 'a\n\nb';
    });
    await expectSame({ ...TR, text: multiline, windowKey: 'w6' }, true);
    // Chunk boundaries anywhere: inside values, quotes, and between the CR and LF of a line end.
    for (const size of [1, 2, 3, 64])
      await expectSame({ ...TR, text: multiline, windowKey: 'w6' }, true, size);
    const numbers = edited((rows, column) => {
      rows[1]![column('amount')] = '007.50';
      rows[2]![column('amount')] = '-0.00';
      rows[3]![column('transaction_date')] = '2023-10-11 04:15:21';
    });
    // Non-canonical values: those records are set aside and typed by the per-row path, the rest copied.
    await expectSame({ ...TR, text: numbers, windowKey: 'w7' }, true);
    const lines = simulated.replace(/\r\n/g, '\n').split('\n');
    await expectSame({ ...TR, text: lines.join('\n'), windowKey: 'w8' }, true);
    // Mixed line ends: each row ends at its own, on both paths.
    lines[5] = `${lines[5]!}\r`;
    await expectSame({ ...TR, text: lines.join('\n'), windowKey: 'w8' }, true);
  });

  it('sets records with bad or unusual values aside for the per-row path, the rest copied', async () => {
    const text = edited((rows, column) => {
      rows[0]![column('amount')] = 'abc'; // a reject, first record
      rows[3]![column('amount')] = '007.50'; // typed by the coercer, not canonical
      rows[4]![column('bill_to_address1')] = 'multi\r\nline'; // moves later line numbers
      rows[6]![column('request_id')] = ''; // empty key: the loader's reject
      rows[7]![column('transaction_date')] = '2023-10-11 04:15:21';
      rows[8]![column('amount')] = 'RAW:"12.5"'; // quoted: canonical inside the quotes
      rows[rows.length - 1]![column('amount')] = '-0.00'; // the last record
    });
    // A first load (straight COPY, handed over to staging) and a re-load, at any chunk size.
    for (const [key, size] of [
      ['w10', 997],
      ['w10', 1],
      ['w11', 7],
      ['w11', 64],
    ] as const)
      await expectSame({ ...TR, text, windowKey: key, rejectThreshold: 0.5 }, true, size);
    // Without its final line break (a local import accepts it): the last record is set aside too.
    await expectSame(
      { ...TR, text: text.replace(/\r\n$/, ''), windowKey: 'w12', rejectThreshold: 0.5 },
      true,
      5,
    );
    // New keys: the first load goes straight into the table, set-aside records inserted beside.
    const fresh = (suffix: string, more?: (rows: string[][], column: (name: string) => number) => void) =>
      edited((rows, column) => {
        for (const r of rows) r[column('request_id')] = `${r[column('request_id')]}${suffix}`;
        rows[2]![column('amount')] = 'abc';
        rows[5]![column('amount')] = '007.50';
        rows[9]![column('transaction_date')] = '2023-10-11 04:15:21';
        more?.(rows, column);
      });
    await expectSame({ ...TR, text: fresh('n'), windowKey: 'w14', rejectThreshold: 0.5 }, true, 64);
    // A set-aside record repeats a copied key (last one wins): the straight COPY is rolled back,
    // its rejects forgotten, and the staging path merges.
    const repeated = fresh('m', (rows, column) => {
      rows.push([...rows[0]!]);
      rows[rows.length - 1]![column('amount')] = '09.99';
    });
    await expectSame({ ...TR, text: repeated, windowKey: 'w15', rejectThreshold: 0.5 }, true, 64);
    // A record the per-row parser cannot read on its own fails the whole file there: refused.
    const unreadable = edited((rows, column) => {
      rows[8]![column('amount')] = 'RAW:"12.5"0';
    });
    await expectSame({ ...TR, text: unreadable, windowKey: 'w13', rejectThreshold: 0.5 }, false);
  });

  it('fails the window over the reject threshold exactly like the per-row path', async () => {
    const text = edited((rows, column) => {
      for (let i = 0; i < 20; i++) rows[i * 3]![column('amount')] = 'x';
    });
    await expectSame({ ...TR, text, windowKey: 'w9' }, true);
  });

  it('a first load straight into the table stamps _loaded_at with the transaction start, as the merge does', async () => {
    const p = pipelineOf(TR.report);
    const loadFresh = async (windowKey: string) => {
      const open = () => openRawCsvReport(chunksOf(simulated, 997), { fileName: 'f.csv', report: TR.report });
      const logs: string[] = [];
      let txNow = '';
      // An organization of its own: no key of the file is in the table yet.
      const options = windowOptions({ ...TR, text: simulated, windowKey });
      await loadWindowThen(
        fast.warehouse,
        {
          ...options,
          window: { ...options.window, organizationId: `org_${windowKey}` },
          targets: [{ table: p.table, source: toRawLoadSource(await open(), `src:${windowKey}`, open) }],
          logger: pino({ level: 'debug' }, { write: (line: string) => logs.push(line) }),
        },
        async (trx) => {
          txNow = (await sql<{ now: string }>`select now()::text as now`.execute(trx)).rows[0]!.now;
        },
      );
      const stamps = await sql<{ at: string }>`
        select distinct _loaded_at::text as at from cybs.transaction_request
         where _source = ${`src:${windowKey}`}`.execute(fast.warehouse.db);
      const straight = logs.some((l) => l.includes('first load, straight into the table'));
      return { stamps: stamps.rows.map((r) => r.at), txNow, straight };
    };
    // The direct COPYs leave _loaded_at to its default, now().
    const direct = await loadFresh('stamp1');
    expect(direct).toEqual({ stamps: [direct.txNow], txNow: direct.txNow, straight: true });
    // Without that default (a table altered by hand) the load goes through staging, stamped all the same.
    await sql`alter table cybs.transaction_request alter column _loaded_at drop default`.execute(
      fast.warehouse.db,
    );
    try {
      const staged = await loadFresh('stamp2');
      expect(staged).toEqual({ stamps: [staged.txNow], txNow: staged.txNow, straight: false });
    } finally {
      await sql`alter table cybs.transaction_request alter column _loaded_at set default now()`.execute(
        fast.warehouse.db,
      );
    }
  });

  it('loads dates written as UTC timestamps (Funding Detail) on the fast path, the date as written', async () => {
    const FD = { report: 'FundingDetailClass', table: 'funding_detail' };
    const stamp = /(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})Z/;
    const lines = funding.split('\r\n');
    expect(lines.length).toBeGreaterThan(100);
    expect(lines[2]).toMatch(stamp);
    // The scanner copies every record: none is set aside for the per-row path.
    const report = await openRawCsvReport(chunksOf(funding, 997), { fileName: 'f.csv', report: FD.report });
    expect(report.columns.find((c) => c.column === 'funding_date')?.pgType).toBe('date');
    await buffer(report.body.read({ types: report.columns.map((c) => c.pgType), required: [] }));
    expect(report.body.records()).toBe(lines.length - 3);
    expect(report.body.setAside()).toEqual([]);
    await expectSame({ ...FD, text: funding, windowKey: 'fd1' }, true);
    // Another offset, and a fraction: the first set aside for the per-row path, the second copied.
    lines[2] = lines[2]!.replace(stamp, '$1T23:30:00-08:00');
    lines[3] = lines[3]!.replace(stamp, '$1T$2.123456Z');
    await expectSame({ ...FD, text: lines.join('\r\n'), windowKey: 'fd2' }, true);
    // A day that does not exist: PostgreSQL refuses the COPY, the per-row path rejects the record.
    lines[4] = lines[4]!.replace(stamp, '2026-02-30T$2Z');
    await expectSame({ ...FD, text: lines.join('\r\n'), windowKey: 'fd3', rejectThreshold: 1 }, false);
    const written = await sql<{ d: string }>`
      select funding_date::text as d from cybs.funding_detail where _source = 'src:fd2' and _source_row = 3`.execute(
      fast.warehouse.db,
    );
    expect(written.rows[0]!.d).toBe(lines[2]!.match(/(\d{4}-\d{2}-\d{2})T23:30:00-08:00/)![1]);
  });

  it('a re-load of the file a first load copied straight into the table is recognised, until a row is touched', async () => {
    const p = pipelineOf(TR.report);
    // An organization of its own: no key of the other windows' rows, so the COPY goes straight in.
    const load = async (state: { previous?: LoadedState | undefined; skipIfUnchanged: boolean }) => {
      const open = () => openRawCsvReport(chunksOf(simulated, 997), { fileName: 'f.csv', report: TR.report });
      const report = await open();
      return loadWindow(fast.warehouse, {
        window: { pipeline: p.name, organizationId: 'org_unchanged', windowKey: 'w-unchanged' },
        runId: null,
        targets: [{ table: p.table, source: toRawLoadSource(report, 'src:w-unchanged', open) }],
        state,
      });
    };
    const first = await load({ skipIfUnchanged: false });
    const rows = first.rowsLoaded;
    expect(rows).toBeGreaterThan(300);
    expect(first.tables[0]).toMatchObject({ inserted: rows, updated: 0 });
    // One COPY, in one subtransaction, wrote every row.
    expect(first.state!.writers).toHaveLength(1);
    const again = await load({ previous: first.state, skipIfUnchanged: true });
    expect(again.unchanged).toBe(true);
    expect(again.tables[0]).toMatchObject({ inserted: 0, updated: 0, unchanged: rows, deleted: 0 });
    await sql`update cybs.transaction_request set amount = amount
               where _organization_id = 'org_unchanged' and _source_row = 5`.execute(fast.warehouse.db);
    const touched = await load({ previous: again.state, skipIfUnchanged: true });
    expect(touched.unchanged).toBeUndefined();
    expect(touched.tables[0]).toMatchObject({ inserted: 0, updated: 0, unchanged: rows, deleted: 0 });
    // The row the load compared and left is its writer's: recognised from then on.
    expect(touched.state!.writers).toHaveLength(2);
    const last = await load({ previous: touched.state, skipIfUnchanged: true });
    expect(last.unchanged).toBe(true);
  });

  it('a first load that creates the table builds its indexes after the rows; a key twice then goes through staging', async () => {
    const decl = pipelineOf(TR.report).table;
    const sides = [reference.warehouse.db, fast.warehouse.db];
    // The table has no index while the rows go in: the unique index's build refuses the key
    // twice (23505), and the file is read again into the staging table and merged.
    await dropTables(sides, decl);
    const twice = edited((rows) => {
      rows.push([...rows[0]!]);
    });
    await expectSame({ ...TR, text: twice, windowKey: 'n1' }, true);
    await expectDeclaredIndexes(sides, decl);
    await dropTables(sides, decl);
    await expectSame({ ...TR, text: simulated, windowKey: 'n2' }, true);
    await expectDeclaredIndexes(sides, decl);
  });

  it('loads the CSV sample files the same way', async () => {
    const sample = await readFile(
      `${SAMPLES}/rest-v3-PaymentBatchDetailReport_Daily_Classic.sul-dlss-fixture.csv`,
      'utf8',
    );
    await expectSame(
      {
        report: 'PaymentBatchDetailClass',
        table: 'payment_batch_detail',
        text: sample,
        windowKey: 's1',
        rejectThreshold: 1,
      },
      !sample.includes('\r'),
    );
    const legacy = await readFile(`${SAMPLES}/legacy-docs-PaymentBatchDetailReport.csv`, 'utf8');
    const ref = await perRow(reference, {
      report: 'PaymentBatchDetailClass',
      table: 'payment_batch_detail',
      text: legacy,
      windowKey: 's2',
      rejectThreshold: 1,
    });
    const got = await fastFirst(fast, {
      report: 'PaymentBatchDetailClass',
      table: 'payment_batch_detail',
      text: legacy,
      windowKey: 's2',
      rejectThreshold: 1,
    });
    expect(got.outcome).toEqual(ref);
    expect(await snapshot(fast, 'payment_batch_detail')).toEqual(
      await snapshot(reference, 'payment_batch_detail'),
    );
  });

  it('ends each row at its own line break in a CRLF file with some LF-ended rows', async () => {
    const lines = simulated.split('\r\n');
    expect(lines.length).toBeGreaterThan(300);
    const last = lines.pop();
    expect(last).toBe('');
    // Every third data row ends with a bare LF, the rest with CRLF (the first line break is CRLF).
    const text = lines.map((line, i) => line + (i > 2 && i % 3 === 0 ? '\n' : '\r\n')).join('');
    const outcome = await expectSame({ ...TR, text, windowKey: 'm1' }, true);
    expect(outcome).toMatchObject({ result: { rowsLoaded: lines.length - 2, rowsRejected: 0 } });
    // And an LF file with some CRLF-ended rows, the same way.
    const lf = lines.map((line, i) => line + (i > 2 && i % 3 === 0 ? '\r\n' : '\n')).join('');
    const again = await expectSame({ ...TR, text: lf, windowKey: 'm2' }, true);
    expect(again).toMatchObject({ result: { rowsLoaded: lines.length - 2, rowsRejected: 0 } });
  });

  it('names the line where an unclosed quote opens, on both paths', async () => {
    // Rows without quotes, one of which opens a quote that never closes.
    const rows = Array.from(
      { length: 1000 },
      (_, i) =>
        `21265991580,org_1,2023-10-11T04:15:21Z,${7000000000000000000000n + BigInt(i)},${i === 500 ? '"never closed' : `ref-${i}`},${i},Visa,USD,1.00,ics_bill,BATCHED,2023-10-10T09:33:55Z`,
    );
    const text =
      'org_1,PaymentBatchDetailReport_Daily_Classic,PaymentBatchDetail,1.10,2023-10-10T07:00:00Z to 2023-10-11T07:00:00Z,,,,,,,\n' +
      'batch_id,merchant_id,batch_date,request_id,merchant_ref_number,TransactionReferenceNumber,payment_type,currency,amount,ics_applications,status,transaction_date\n' +
      rows.join('\n') +
      '\n';
    const c = { report: 'PaymentBatchDetailClass', table: 'payment_batch_detail', text, windowKey: 'q1' };
    const outcome = await expectSame(c, false);
    expect(outcome).toEqual({
      error: expect.stringMatching(
        /^PARSE_CSV_INVALID: f\.csv: invalid CSV at line 503: a quote opened in this line is never closed/,
      ) as unknown,
    });
    const report = await openRawCsvReport(chunksOf(text, 997), { fileName: 'f.csv', report: c.report });
    const refusal = await (async () => {
      for await (const _ of report.body.read({ types: report.columns.map(() => 'text'), required: [] }));
    })().catch((e: unknown) => e as Error);
    expect(refusal).toMatchObject({ message: expect.stringContaining('opened on line 503') as unknown });
  });

  it('rejects a value PostgreSQL cannot store (year 0000, a number too wide) as its row, and loads the rest, on both paths', async () => {
    const text = edited((rows, column) => {
      rows[3]![column('transaction_date')] = '0000-01-01T00:00:00Z';
      rows[5]![column('transaction_date')] = '0000-12-31T23:59:59.5Z';
      // Nor a number wider than PostgreSQL's numeric.
      rows[9]![column('amount')] = `1${'0'.repeat(131072)}`;
    });
    const outcome = await expectSame({ ...TR, text, windowKey: 'y0', rejectThreshold: 0.5 }, true);
    expect(outcome).toMatchObject({ result: { rowsRejected: 3 } });
    const rejects = await sql<{ record_number: number; message: string }>`
      select record_number, message from etl.rejects where window_key = 'y0' order by record_number`.execute(
      reference.warehouse.db,
    );
    const lines = rowLines(text);
    expect(rejects.rows.map((r) => Number(r.record_number))).toEqual([lines[3], lines[5], lines[9]]);
    expect(rejects.rows[0]!.message).toMatch(/transaction_date.*0000-01-01T00:00:00Z/);
  });
});
