/**
 * The repeated groups of Transaction Detail XML (application replies, line items) in their child
 * tables, loaded in the window's transaction with their records (the real killbill `tdr_1_6`
 * file): a re-run duplicates nothing, a re-load replaces the items of the records it writes (also
 * the ones another source had left for them), a load that fails half-way leaves everything as it
 * was, and the fast XML path leaves items without a child table to the per-row path. On
 * PostgreSQL and on the embedded warehouse.
 */
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_PIPELINES } from '../../pipelines/index.js';
import { isFastPathRefusal } from '../../src/copy-text/fast-path-refusal.js';
import { loadWindow } from '../../src/load/window/load-window.js';
import type { LoadWindowResult, LoadWindowTarget } from '../../src/load/window/load-window.js';
import type { Warehouse } from '../../src/warehouse/warehouse.js';
import { openRawXmlReport } from '../../src/parse/xml/raw-xml-report.js';
import { PERIOD_FIELDS, filterToWindow } from '../../src/extract/one-time-reports.js';
import { openXmlFileTargets } from '../../src/pipeline/xml-load-targets.js';
import { warehouseBackends } from '../helpers/load.js';
import type { OpenedWarehouse } from '../helpers/load.js';

const SAMPLE = '/work/shared/samples/cybersource/transaction-detail-tdr_1_6.killbill-excerpt.xml';
const REPORT = 'TransactionRequestClass';
const pipeline = REPORT_PIPELINES.find((p) => p.reportDefinitionName === REPORT)!;
const REQUEST_ID = '2434465504100167904567';

let warehouse: Warehouse;
let killbill = '';

const bytes = (text: string) => Readable.from([Buffer.from(text, 'utf8')]);

async function targetsOf(text: string, source: string): Promise<LoadWindowTarget[]> {
  const xml = await openXmlFileTargets(pipeline, () => Promise.resolve(bytes(text)), {
    fileName: 'k.xml',
    report: REPORT,
  });
  return xml.targets(source);
}

async function load(text: string, windowKey: string, source = `src:${windowKey}`): Promise<LoadWindowResult> {
  return loadWindow(warehouse, {
    window: { pipeline: pipeline.name, organizationId: 'ok_go', windowKey },
    targets: await targetsOf(text, source),
    runId: null,
  });
}

async function rows(table: string, columns: string): Promise<Record<string, unknown>[]> {
  return (
    await sql
      .raw<Record<string, unknown>>(`select ${columns} from cybs.${table} order by request_id, 2`)
      .execute(warehouse.db)
  ).rows;
}

const replies = () =>
  rows(
    'transaction_request_application_reply',
    'request_id, reply_number, application_name, application_rflag, _source',
  );
const lineItems = () =>
  rows(
    'transaction_request_line_item',
    'request_id, line_items_number, line_items_unit_price::text as price, _source',
  );

/** The killbill file without its `ics_decision` reply, and `ics_score`'s message changed. */
const fewerReplies = (text: string) =>
  text
    .replace(/<ApplicationReply Name="ics_decision">[\s\S]*?<\/ApplicationReply>/, '')
    .replace('Score = 84', 'Score = 85');

describe.each(warehouseBackends('xmlchild'))('XML child tables on %s', (_kind, open) => {
  let opened: OpenedWarehouse | undefined;
  beforeAll(async () => {
    opened = await open();
    warehouse = opened.warehouse;
    killbill = await readFile(SAMPLE, 'utf8');
  });
  afterAll(() => opened?.cleanup());

  it('loads the records and their items in one window; a re-run duplicates nothing', async () => {
    const first = await load(killbill, 'w1');
    expect(first.tables.map((t) => [t.table, t.inserted])).toEqual([
      ['cybs.transaction_request', 1],
      ['cybs.transaction_request_application_reply', 3],
      ['cybs.transaction_request_line_item', 1],
    ]);
    expect(await replies()).toEqual([
      {
        request_id: REQUEST_ID,
        reply_number: 1,
        application_name: 'ics_auth',
        application_rflag: 'SOK',
        _source: 'src:w1',
      },
      {
        request_id: REQUEST_ID,
        reply_number: 2,
        application_name: 'ics_decision',
        application_rflag: 'DREVIEW',
        _source: 'src:w1',
      },
      {
        request_id: REQUEST_ID,
        reply_number: 3,
        application_name: 'ics_score',
        application_rflag: 'DSCORE',
        _source: 'src:w1',
      },
    ]);
    expect(await lineItems()).toEqual([
      { request_id: REQUEST_ID, line_items_number: 0, price: '2.00', _source: 'src:w1' },
    ]);
    const again = await load(killbill, 'w1');
    expect(again.tables.map((t) => [t.inserted, t.updated, t.unchanged, t.deleted])).toEqual([
      [0, 0, 1, 0],
      [0, 0, 3, 0],
      [0, 0, 1, 0],
    ]);
    expect(await replies()).toHaveLength(3);
  });

  it('a re-load replaces the items of the records it writes', async () => {
    const result = await load(fewerReplies(killbill), 'w1');
    expect(result.tables[1]).toMatchObject({ inserted: 0, updated: 1, unchanged: 1, deleted: 1 });
    expect((await replies()).map((r) => [r.reply_number, r.application_name])).toEqual([
      [1, 'ics_auth'],
      [2, 'ics_score'],
    ]);
  });

  it('a record another source takes over brings its items; the ones the other source left are deleted', async () => {
    await load(killbill, 'w1');
    expect(await replies()).toHaveLength(3);
    const other = await load(fewerReplies(killbill), 'w2');
    expect(other.tables[1]).toMatchObject({
      table: 'cybs.transaction_request_application_reply',
      deleted: 1,
    });
    expect((await replies()).map((r) => [r.reply_number, r.application_name, r._source])).toEqual([
      [1, 'ics_auth', 'src:w2'],
      [2, 'ics_score', 'src:w2'],
    ]);
    expect((await lineItems()).map((r) => r._source)).toEqual(['src:w2']);
    // w1 re-loaded takes the record back with its three replies.
    await load(killbill, 'w1');
    expect((await replies()).map((r) => r._source)).toEqual(['src:w1', 'src:w1', 'src:w1']);
  });

  it('a load that fails in a child table leaves the records and their items as they were', async () => {
    const before = {
      records: await rows('transaction_request', 'request_id, transaction_date::text, _source'),
      replies: await replies(),
    };
    const targets = await targetsOf(fewerReplies(killbill), 'src:w3');
    const failing = targets.map((t, i) =>
      i < 2
        ? t
        : {
            ...t,
            source: {
              ...t.source,
              batches: (async function* () {
                yield* [];
                throw new Error('the disk went away');
              })(),
            },
          },
    );
    await expect(
      loadWindow(warehouse, {
        window: { pipeline: pipeline.name, organizationId: 'ok_go', windowKey: 'w3' },
        targets: failing,
        runId: null,
      }),
    ).rejects.toThrow(/the disk went away/);
    expect({
      records: await rows('transaction_request', 'request_id, transaction_date::text, _source'),
      replies: await replies(),
    }).toEqual(before);
  });

  it('a one-time report’s share of a window: the records of the window, and only their items', async () => {
    // Two requests a day apart, in one file (a one-time report covers several windows).
    const second = killbill
      .match(/<Request [\s\S]*<\/Request>/)![0]
      .replace(`RequestID="${REQUEST_ID}"`, 'RequestID="9999999999999999999999"')
      .replace('RequestDate="2009-05-27T17:49:10+05:30"', 'RequestDate="2009-05-28T17:49:10+05:30"')
      .replace('<Quantity>1</Quantity>', '<Quantity>one</Quantity>');
    const text = killbill.replace('</Requests>', `${second}\n</Requests>`);
    const day = { start: new Date('2009-05-27T00:00:00Z'), end: new Date('2009-05-28T00:00:00Z') };
    const xml = await openXmlFileTargets(
      pipeline,
      () => Promise.resolve(bytes(text)),
      { fileName: 'k.xml', report: REPORT },
      { records: (r) => filterToWindow(r, PERIOD_FIELDS[REPORT]!, day, false), rejects: false },
    );
    const result = await loadWindow(warehouse, {
      window: { pipeline: pipeline.name, organizationId: 'ok_go', windowKey: 'w4' },
      targets: xml.targets('src:w4'),
      runId: null,
    });
    expect(result.tables.map((t) => [t.table, t.staged, t.rejected])).toEqual([
      ['cybs.transaction_request', 1, 0],
      ['cybs.transaction_request_application_reply', 3, 0],
      ['cybs.transaction_request_line_item', 1, 0],
    ]);
    const ids = await sql<{ request_id: string }>`
      select distinct request_id from cybs.transaction_request_application_reply where _source = 'src:w4'`.execute(
      warehouse.db,
    );
    expect(ids.rows).toEqual([{ request_id: REQUEST_ID }]);
  });

  it('without child tables, the fast XML path refuses items (the per-row path keeps them in the records)', async () => {
    const refusal = async (text: string) => {
      try {
        const report = await openRawXmlReport(() => bytes(text), { fileName: 'k.xml', report: REPORT });
        for await (const chunk of report.body.chunks) void chunk;
        return 'loaded';
      } catch (error) {
        expect(isFastPathRefusal(error)).toBe(true);
        return (error as Error).message;
      }
    };
    expect(await refusal(killbill)).toMatch(/repeated group/);
    const noReplies = killbill.replace(/<ApplicationReplies>[\s\S]*?<\/ApplicationReplies>/, '');
    expect(await refusal(noReplies)).toMatch(/repeated group/);
    expect(await refusal(noReplies.replace(/<LineItems>[\s\S]*?<\/LineItems>/, ''))).toBe('loaded');
  });
});
