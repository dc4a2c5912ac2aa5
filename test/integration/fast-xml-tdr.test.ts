/**
 * The fast XML path on the real Transaction Detail layout (DOCTYPE, Request attributes, groups
 * two levels deep, labelled merchant-defined fields, application replies and line items in child
 * tables) against the per-row reference: the same records' table, child tables, etl.rejects and
 * etl.schema_changes, on the real killbill `tdr_1_6` file and on files built from it. What the
 * fast path cannot vouch for, it refuses, and the per-row path loads (as the executor does).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_PIPELINES } from '../../pipelines/index.js';
import { isFastPathRefusal } from '../../src/copy-text/fast-path-refusal.js';
import { loadWindow } from '../../src/load/window/load-window.js';
import type { LoadWindowResult } from '../../src/load/window/load-window.js';
import { NEW_COLUMN_REASON, openRawXmlReport } from '../../src/parse/xml/raw-xml-report.js';
import { openRawXmlTargets, openXmlFileTargets } from '../../src/pipeline/xml-load-targets.js';
import { warehouseBackends } from '../helpers/load.js';
import type { OpenedWarehouse } from '../helpers/load.js';

const SAMPLE = '/work/shared/samples/cybersource/transaction-detail-tdr_1_6.killbill-excerpt.xml';
const REPORT = 'TransactionRequestClass';
const pipeline = REPORT_PIPELINES.find((p) => p.reportDefinitionName === REPORT)!;
const TABLES = [pipeline.table, ...Object.values(pipeline.childTables ?? {})].map((t) => t.name);

type Side = OpenedWarehouse;
type Outcome = { result: LoadWindowResult } | { error: string };
type Path = 'fast' | 'per-row';

let reference: Side;
let fast: Side;
let killbill = '';
let spoolDir = '';

/** A migrated PostgreSQL database (the fast path is PostgreSQL's). */
const openSide = (prefix: string): Promise<Side> => warehouseBackends(prefix)[0]![1]();

beforeAll(async () => {
  reference = await openSide('fasttdr_ref');
  fast = await openSide('fasttdr_fast');
  killbill = await readFile(SAMPLE, 'utf8');
  spoolDir = await mkdtemp(join(tmpdir(), 'cybs-fast-tdr-'));
});

afterAll(async () => {
  for (const side of [reference, fast]) await side?.cleanup();
  if (spoolDir) await rm(spoolDir, { recursive: true, force: true });
});

/** The text in small chunks (boundaries fall inside tags and values). */
const chunksOf = (text: string, size: number) => {
  const bytes = Buffer.from(text, 'utf8');
  const parts: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) parts.push(bytes.subarray(i, i + size));
  return Readable.from(parts);
};

const windowOf = (windowKey: string, rejectThreshold?: number) => ({
  window: { pipeline: pipeline.name, organizationId: 'ok_go', windowKey },
  runId: null,
  ...(rejectThreshold === undefined ? {} : { rejectThreshold }),
});

const describeError = (error: unknown): Outcome => ({
  error: `${(error as { code?: string }).code}: ${(error as Error).message}`,
});

async function perRow(side: Side, text: string, windowKey: string, threshold?: number): Promise<Outcome> {
  try {
    const xml = await openXmlFileTargets(pipeline, () => Promise.resolve(chunksOf(text, 1000)), {
      fileName: 'k.xml',
      report: REPORT,
    });
    return {
      result: await loadWindow(side.warehouse, {
        ...windowOf(windowKey, threshold),
        targets: xml.targets(`src:${windowKey}`),
      }),
    };
  } catch (error) {
    return describeError(error);
  }
}

/** The executor's order: the fast path (again with column discovery if needed), else per-row. */
async function fastFirst(
  side: Side,
  text: string,
  windowKey: string,
  threshold?: number,
): Promise<{ outcome: Outcome; path: Path; reason?: string }> {
  let reason = '';
  for (const discoverColumns of [false, true]) {
    try {
      const targets = await openRawXmlTargets(
        pipeline,
        (childTables) =>
          openRawXmlReport(() => chunksOf(text, 997), {
            fileName: 'k.xml',
            report: REPORT,
            discoverColumns,
            childTables,
          }),
        spoolDir,
      );
      const result = await loadWindow(side.warehouse, {
        ...windowOf(windowKey, threshold),
        targets: targets(`src:${windowKey}`),
      });
      return { outcome: { result }, path: 'fast' };
    } catch (error) {
      if (!isFastPathRefusal(error)) return { outcome: describeError(error), path: 'fast' };
      reason = (error as Error).message;
      if (!discoverColumns && reason.includes(NEW_COLUMN_REASON)) continue;
      break;
    }
  }
  return { outcome: await perRow(side, text, windowKey, threshold), path: 'per-row', reason };
}

async function snapshot(side: Side): Promise<unknown> {
  const run = async (text: string) => (await sql.raw(text).execute(side.warehouse.db)).rows;
  const tables: Record<string, unknown> = {};
  for (const table of TABLES) {
    const exists = await run(`select to_regclass('cybs.${table}') is not null as e`);
    if (!(exists[0] as { e: boolean }).e) continue;
    tables[table] = {
      rows: await run(
        `select to_jsonb(t) - '_loaded_at' - '_run_id' - '_source_key' as row from cybs.${table} t
          order by _organization_id, _source, _source_row, to_jsonb(t)::text`,
      ),
      columns: await run(
        `select column_name, data_type, ordinal_position from information_schema.columns
          where table_schema = 'cybs' and table_name = '${table}' order by ordinal_position`,
      ),
    };
  }
  const rejects = await run(
    `select window_key, source, record_number, raw_text, error_code, message from etl.rejects
      order by window_key, record_number, error_code, message`,
  );
  const changes = await run(
    `select table_name, column_name, column_type, change, source from etl.schema_changes order by table_name, column_name`,
  );
  return { tables, rejects, changes };
}

async function expectSame(
  text: string,
  windowKey: string,
  expected: Path,
  threshold?: number,
): Promise<string | undefined> {
  const ref = await perRow(reference, text, windowKey, threshold);
  const got = await fastFirst(fast, text, windowKey, threshold);
  expect({ path: got.path, reason: got.reason }).toMatchObject({ path: expected });
  expect(got.outcome).toEqual(ref);
  expect(await snapshot(fast)).toEqual(await snapshot(reference));
  return got.reason;
}

/** The killbill request `n` times, with other ids, dates, replies and line items. */
function manyRequests(n: number): string {
  const record = killbill.match(/<Request [\s\S]*<\/Request>/)![0];
  const replies = record.match(/<ApplicationReply [\s\S]*?<\/ApplicationReply>/g)!;
  let body = '';
  for (let i = 0; i < n; i++) {
    let r = record
      .replace('2434465504100167904567', String(1e21 + i))
      .replace('17:49:10+05:30', `${String(10 + (i % 10))}:49:10${i % 2 === 0 ? '+05:30' : '-08:00'}`)
      .replace('<Amount>2.00</Amount>', `<Amount>${i}.25</Amount>`);
    // Replies: 0 to 3 of them; line items: 1 to 3, one of them without a product code.
    r = r.replace(
      /<ApplicationReplies>[\s\S]*<\/ApplicationReplies>/,
      `<ApplicationReplies>${replies.slice(0, i % 4).join('')}</ApplicationReplies>`,
    );
    const items = Array.from(
      { length: 1 + (i % 3) },
      (_, k) =>
        `<LineItem Number="${k}"><Quantity>${k + 1}</Quantity><UnitPrice>${k}.50</UnitPrice>${k === 1 ? '' : '<ProductCode>p</ProductCode>'}</LineItem>`,
    ).join('');
    r = r.replace(/<LineItems>[\s\S]*<\/LineItems>/, `<LineItems>${items}</LineItems>`);
    body += `${r}\n`;
  }
  return killbill.replace(/<Request [\s\S]*<\/Request>/, body);
}

describe('fast XML path ≡ per-row path on the Transaction Detail layout', () => {
  it('loads the real killbill file by itself: the request, its replies and its line item; an identical reload writes nothing', async () => {
    await expectSame(killbill, 'k1', 'fast');
    await expectSame(killbill, 'k1', 'fast');
    const replies = await sql<{ n: number }>`
      select count(*)::int as n from cybs.transaction_request_application_reply`.execute(fast.warehouse.db);
    expect(replies.rows[0]!.n).toBe(3);
  });

  it('loads many requests with 0–3 replies and 1–3 line items, then a re-load with fewer', async () => {
    await expectSame(manyRequests(60), 'm1', 'fast');
    await expectSame(manyRequests(45), 'm1', 'fast');
  });

  it('refuses what it cannot vouch for, and the per-row path loads it', async () => {
    const subset = killbill.replace('tdr_1_6.dtd">', 'tdr_1_6.dtd" [<!ENTITY x "y">]>');
    expect(await expectSame(subset, 'r1', 'per-row')).toMatch(/internal subset/);
    const unknownLeaf = killbill.replace('<RFlag>SOK</RFlag>', '<RFlag>SOK</RFlag><Extra>1</Extra>');
    expect(await expectSame(unknownLeaf, 'r2', 'per-row')).toMatch(/does not declare/);
    const badQuantity = manyRequests(10).replace('<Quantity>1</Quantity>', '<Quantity>one</Quantity>');
    expect(await expectSame(badQuantity, 'r3', 'per-row', 0.5)).toMatch(/per-row path must type or reject/);
    const noRequestId = killbill.replace('RequestID="2434465504100167904567"', '');
    await expectSame(noRequestId, 'r4', 'per-row');
  });
});
