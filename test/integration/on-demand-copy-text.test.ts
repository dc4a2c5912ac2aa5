/**
 * The on-demand load path (pages → COPY text spooled per section → one COPY of the bytes, records
 * the loader must judge kept apart) against the previous one (pages → typed values spooled as
 * JSON lines → parsed again → encoded per row): the same table contents, etl.rejects and load
 * result, on pages with bad rows mixed in (values the parser rejects, an empty natural key, a NUL
 * character, escapes, an unknown key), and when a column's table type has drifted (the loader then
 * reads the decoded records one by one). A first load of a source goes straight into the tables;
 * when a key is in a table already (another source's row) or twice in the source, it falls back
 * to the staging table and the merge: both are compared with the reference too. The COPY-text
 * side is handed each page's bytes as pipeline/window/on-demand.ts is (OnDemandSpools): pages without bad rows
 * are read by OnDemandPageScanner, the others parsed.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ON_DEMAND_PIPELINES } from '../../pipelines/index.js';
import { fastPageCheck } from '../../src/api/fast-page-check.js';
import { purchaseRefundDetailsResponseSchema } from '../../src/api/types.js';
import { ensureTable } from '../../src/load/ddl.js';
import { loadWindow } from '../../src/load/window/load-window.js';
import type { LoadWindowOptions, LoadWindowResult } from '../../src/load/window/load-window.js';
import type { LoadBatch, LoadSource } from '../../src/load/table-spec.js';
import { createLogger } from '../../src/observability/logger.js';
import { CybsError } from '../../src/errors.js';
import { migrateToLatest } from '../../src/warehouse/migrate.js';
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import type { Warehouse } from '../../src/warehouse/warehouse.js';
import { parseOnDemandResponse } from '../../src/parse/json/on-demand.js';
import type { CopyTextSpool } from '../../src/pipeline/copy-text-spool.js';
import { OnDemandSpools } from '../../src/pipeline/on-demand-spools.js';
import { declaredColumns } from '../../src/load/report-sources.js';
import { SpoolDir } from '../../src/spool/byte-spool.js';
import { RecordSpool } from '../../src/pipeline/record-source.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { declaredIndexes, indexOidsOf, indexesOf } from '../helpers/indexes.js';

const def = ON_DEMAND_PIPELINES.find((p) => p.name === 'purchase_refund_details')!;
const SOURCE = 'purchase-refund-details/2026-11-16T00:00:00.000Z..2026-11-17T00:00:00.000Z';

function page(offset: number, n: number, clean = false, extraKey = true): Record<string, unknown> {
  const id = (i: number) => `7000000000000000${String(offset + i).padStart(6, '0')}`;
  const rows = Array.from({ length: n }, (_, i) => i);
  const bad = (i: number) => (clean ? 0 : (offset + i) % 7);
  return {
    offset,
    limit: n,
    pageResults: n,
    requestDetails: rows.map((i) => ({
      requestId: bad(i) === 3 ? null : id(i),
      cybersourceMerchantId: 'm1',
      processorMerchantId: bad(i) === 4 ? 'tab\there\\back\nline' : 'p1',
      groupName: bad(i) === 5 ? 'nul\u0000char' : 'g',
      transactionReferenceNumber: `t${i}`,
      merchantReferenceNumber: '',
      ...(extraKey ? { extraKey: `x${i}` } : {}),
    })),
    settlements: rows.map((i) => ({
      requestId: id(i),
      transactionType: 'Purchases',
      submissionTime: '2026-11-16T10:00:00Z',
      amount: bad(i) === 1 ? 'abc' : `${i}.25`,
      currencyCode: 'USD',
      cybersourceBatchTime: bad(i) === 2 ? 'not a time' : '2026-11-16T23:00:00Z',
    })),
    authorizations: rows
      .filter((i) => i % 2 === 0)
      .map((i) => ({ requestId: id(i), time: '2026-11-16T09:00:00Z', amount: `${i}`, code: 'A1' })),
    others: [],
  };
}

const PAGES = [page(0, 40), page(40, 40), page(80, 13)];

/** Pages of another source whose request ids overlap PAGES's last page (without bad rows). */
const OVERLAPPING = [page(80, 20, true)];
/**
 * Pages without bad rows whose second page holds a request id twice, with other values. (The same
 * request id with other values on two pages fails the window: see 'records repeated across pages'.)
 */
const TWICE = (() => {
  const first = page(500, 10, true);
  const second = page(510, 10, true);
  const details = second['requestDetails'] as Record<string, unknown>[];
  details[4] = { ...details[2], groupName: 'second' };
  return [first, second];
})();

/** The items of `body` (a page) whose request id is the n-th, for n in [from, to). */
function slicePage(
  body: Record<string, unknown>,
  offset: number,
  from: number,
  to: number,
): Record<string, unknown> {
  const ids = new Set(
    Array.from(
      { length: to - from },
      (_, i) => `7000000000000000${String(offset + from + i).padStart(6, '0')}`,
    ),
  );
  const out: Record<string, unknown> = { ...body, offset: from, limit: to - from, pageResults: to - from };
  for (const key of ['requestDetails', 'settlements', 'authorizations', 'others']) {
    const items = body[key] as Record<string, unknown>[];
    // A detail without a request id (a bad row) goes with the place it has among the details.
    out[key] = items.filter((item, n) =>
      typeof item['requestId'] === 'string'
        ? ids.has(item['requestId'])
        : key === 'requestDetails' && n >= from && n < to,
    );
  }
  return out;
}

type Kind = 'json' | 'copy' | 'live';

interface Spools {
  json: Map<string, RecordSpool>;
  /** The COPY-text path's spools (as pipeline/window/on-demand.ts writes them). */
  pages?: OnDemandSpools;
  copy: Map<string, CopyTextSpool>;
}

function makeSpools(kind: Kind, dir: string, source = SOURCE): Spools {
  const json = new Map<string, RecordSpool>();
  const spoolDir = new SpoolDir({ path: dir });
  if (kind === 'json') {
    for (const name of Object.keys(def.tables)) {
      json.set(name, new RecordSpool(spoolDir, `${name}.jsonl`, declaredColumns(def.tables[name]!)));
    }
    return { json, copy: new Map() };
  }
  const pages = new OnDemandSpools(spoolDir, def, source);
  return { json, pages, copy: pages.spools };
}

/** A page as the client's JSON path hands it over (fastPageCheck, else zod). */
function checkedPage(body: Record<string, unknown>): unknown {
  return checkPage(body) ?? purchaseRefundDetailsResponseSchema.parse(body);
}
const checkPage = fastPageCheck(purchaseRefundDetailsResponseSchema)!;

/**
 * Write the pages into the spools, then close them; the targets. The COPY-text path is handed
 * each page's bytes as pipeline/window/on-demand.ts is: read by the scanner when it answers, parsed otherwise.
 */
async function spoolPages(kind: Kind, spools: Spools, pagesOf = PAGES, source = SOURCE) {
  for await (const _page of pageSteps(spools, pagesOf, source));
  return targetsOf(spools, source);
}

/** The pages spooled one per step, as a live load's feed (LiveLoad.pages) is iterated. */
async function* pageSteps(spools: Spools, pagesOf = PAGES, source = SOURCE): AsyncGenerator<number> {
  const { json, pages: onDemand } = spools;
  const offsets = new Map<string, number>();
  let pages = 0;
  for (const body of pagesOf) {
    pages++;
    if (onDemand) {
      const scanned = onDemand.scan([Buffer.from(JSON.stringify(body), 'utf8')]);
      await onDemand.write(scanned ? { scanned } : { body: checkedPage(body) });
    } else {
      // The previous path, as it was in pipeline/window/on-demand.ts.
      const parsed = parseOnDemandResponse(def.endpoint, body, { source: `${source}#page${pages}` });
      for (const [name, records] of Object.entries(parsed.sections)) {
        if (!def.tables[name]) continue;
        const base = offsets.get(name) ?? 0;
        let last = base;
        for await (const batch of records.batches) {
          const spool = json.get(name)!;
          spool.setColumns(records.columns);
          for (const r of batch.records) {
            last = base + r.recordNumber;
            await spool.write(last, r.values);
          }
          for (const r of batch.rejects) spool.addReject({ ...r, recordNumber: base + r.recordNumber });
        }
        offsets.set(name, Math.max(last, base + records.summary().dataRows));
      }
    }
    yield pages;
    // As a fetch would, give the event loop to the copier between pages.
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  if (onDemand) await onDemand.close();
  else for (const spool of json.values()) await spool.close();
}

/** The complete targets of the spooled pages. */
function targetsOf(spools: Spools, source = SOURCE) {
  const { json, pages: onDemand } = spools;
  if (onDemand) return () => onDemand.targets();
  return () =>
    Object.keys(def.tables).map((name) => ({
      table: def.tables[name]!,
      source: json.get(name)!.toLoadSource(source),
    }));
}

/**
 * A valid record among those for the per-row path (the spool only puts records there that the
 * loader rejects, but a source may hand it any): on the reference side in `batches`, on the
 * COPY-text side in `perRowBatches`, ahead of the spool's own.
 */
function withPerRowRecord(
  kind: Kind,
  targets: { table: (typeof def.tables)[string]; source: LoadSource }[],
  section: string,
  recordNumber: number,
  values: (string | null)[],
) {
  const target = targets.find((t) => t.table === def.tables[section])!;
  async function* prepend(rest: AsyncIterable<LoadBatch>): AsyncGenerator<LoadBatch> {
    yield { records: [{ recordNumber, values, raw: values.join(',') }], rejects: [] };
    yield* rest;
  }
  const { source } = target;
  if (kind === 'json' && source.kind === 'records') {
    target.source = { ...source, batches: prepend(source.batches) };
  } else if (kind !== 'json' && source.kind === 'spooled') {
    target.source = { ...source, perRowBatches: prepend(source.perRowBatches) };
  } else throw new Error(`A ${kind} side gave a ${source.kind} source.`);
}

interface Side {
  db: TestDatabase;
  warehouse: Warehouse;
  kind: Kind;
  log: string[];
}

interface LoadCase {
  pages?: Record<string, unknown>[];
  source?: string;
  /** What the window's last load left, for a re-load of the same pages (LoadWindowOptions.state). */
  state?: LoadWindowOptions['state'];
  perRow?: { section: string; recordNumber: number; values: (string | null)[] };
}

/** Load a window; on the COPY-text side also the loader's debug lines (which path each table took). */
async function load(side: Side, load: LoadCase = {}): Promise<LoadWindowResult> {
  const dir = await mkdtemp(join(tmpdir(), 'cybs-odct-'));
  side.log = [];
  const lines = side.log;
  const logger = createLogger({ level: 'debug', destination: { write: (line: string) => lines.push(line) } });
  const spools = makeSpools(side.kind, dir, load.source);
  const withPerRow = (targets: ReturnType<Awaited<ReturnType<typeof spoolPages>>>) => {
    if (side.kind !== 'json') expect(targets.every((t) => t.source.kind === 'spooled')).toBe(true);
    if (load.perRow) {
      const { section, recordNumber, values } = load.perRow;
      withPerRowRecord(side.kind, targets, section, recordNumber, values);
    }
    return targets;
  };
  const options = {
    window: { pipeline: def.name, organizationId: 'org_1', windowKey: load.source ?? '2026-11-16' },
    runId: null,
    rejectThreshold: 1,
    logger,
    ...(load.state ? { state: load.state } : {}),
  };
  try {
    if (side.kind === 'live') {
      // The pages are written while the loader copies what they gave (LoadWindowOptions.live).
      return await loadWindow(side.warehouse, {
        ...options,
        targets: [],
        live: {
          tables: Object.keys(def.tables).map((name) => ({
            table: def.tables[name]!,
            columns: declaredColumns(def.tables[name]!),
            feed: spools.copy.get(name)!.feed,
          })),
          source: load.source ?? SOURCE,
          pages: pageSteps(spools, load.pages, load.source),
          targets: () => withPerRow(targetsOf(spools, load.source)()),
        },
      });
    }
    const targets = withPerRow((await spoolPages(side.kind, spools, load.pages, load.source))());
    return await loadWindow(side.warehouse, { ...options, targets });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The tables the last load of a side put straight into the table, and those whose first load fell back. */
function paths(side: Side): { direct: string[]; refused: string[] } {
  const of = (msg: string) =>
    side.log
      .map((l) => JSON.parse(l) as { msg: string; table?: string })
      .filter((l) => l.msg === msg)
      .map((l) => l.table!)
      .sort();
  return {
    direct: of('table load phases (first load, straight into the table)'),
    refused: of('first load refused by the table; loading through the staging table'),
  };
}

/** Whether the last load of a side copied while paging, and whether that was refused (then rolled back). */
function livePaths(side: Side): { live: string[]; refused: boolean } {
  const lines = side.log.map((l) => JSON.parse(l) as { msg: string; table?: string });
  return {
    live: lines
      .filter((l) => l.msg === 'table load phases (first load, while paging)')
      .map((l) => l.table!)
      .sort(),
    refused: lines.some((l) => l.msg.startsWith('first load while paging refused')),
  };
}

async function contents(side: Side): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const table of Object.values(def.tables)) {
    const rows = await sql<Record<string, unknown>>`select * from ${sql.id(table.schema, table.name)}
      order by _source_row`.execute(side.warehouse.db);
    out[table.name] = rows.rows.map(
      ({ _loaded_at, _run_id, ...rest }) => (void _loaded_at, void _run_id, rest),
    );
  }
  const rejects = await sql<
    Record<string, unknown>
  >`select source, record_number, raw_text, error_code, message
      from etl.rejects order by id`.execute(side.warehouse.db);
  out['etl.rejects'] = rejects.rows;
  return out;
}

describe('on-demand COPY-text path against the JSON-lines path (PostgreSQL)', () => {
  let reference: Side;
  let fast: Side;
  /** The COPY-text path fed while paging (LoadWindowOptions.live). */
  let live: Side;
  beforeAll(async () => {
    const open = async (kind: Kind): Promise<Side> => {
      const db = await createTestDatabase(`odct_${kind}`);
      const warehouse = await openWarehouse({ url: db.url, path: '' });
      await migrateToLatest(warehouse.db);
      return { db, warehouse, kind, log: [] };
    };
    reference = await open('json');
    fast = await open('copy');
    live = await open('live');
  });
  afterAll(async () => {
    for (const side of [reference, fast, live]) {
      await side?.warehouse.close();
      await side?.db.drop();
    }
  });

  it('loads the same rows and rejects, with bad rows mixed in', async () => {
    const tables = Object.values(def.tables);
    const oids = async (side: Side) => {
      const out: { name: string; oid: string }[][] = [];
      for (const t of tables) out.push(await indexOidsOf(side.warehouse.db, t));
      return out;
    };
    // Made beforehand, as `migrate` makes the report tables.
    for (const side of [reference, fast, live])
      for (const t of tables) await ensureTable(side.warehouse.db, t);
    const made = await Promise.all([reference, fast, live].map(oids));
    const a = await load(reference);
    const b = await load(fast);
    const c = await load(live);
    // The first loads into the empty tables built their indexes after the rows (new ones), but for
    // the load fetching its pages inside its transaction, which never drops them.
    const after = await Promise.all([reference, fast, live].map(oids));
    expect(after[2]).toEqual(made[2]);
    for (const side of [0, 1])
      for (const [t, indexes] of after[side]!.entries()) {
        expect(indexes.map((i) => i.name)).toEqual(made[side]![t]!.map((i) => i.name));
        expect(indexes).not.toEqual([]);
        for (const [k, index] of indexes.entries()) expect(index.oid).not.toBe(made[side]![t]![k]!.oid);
      }
    expect(c).toEqual(b);
    expect(b).toEqual(a);
    expect(a.rowsRejected).toBeGreaterThan(20);
    const ca = await contents(reference);
    expect(await contents(fast)).toEqual(ca);
    expect(await contents(live)).toEqual(ca);
    expect(ca['purchase_refund_request_details']!.length).toBeGreaterThan(50);
    expect(
      (ca['etl.rejects'] as { error_code: string }[])
        .map((r) => r.error_code)
        .sort((x, y) => (x < y ? -1 : 1)),
    ).toEqual(expect.arrayContaining(['LOAD_MISSING_KEY', 'MAP_INVALID_VALUE']));
  });

  const allTables = Object.values(def.tables)
    .map((t) => `${t.schema}.${t.name}`)
    .sort();

  it('a first load goes straight into the tables: the reference load, and a valid per-row record', async () => {
    // (The first test's load was a first load of every table.)
    const perRow = { section: 'others', recordNumber: 9_999, values: ['7000000000000000999999', 'a', 'b'] };
    const source = `${SOURCE}/per-row`;
    const pages = [page(300, 40), page(340, 20)];
    const a = await load(reference, { pages, source, perRow });
    const b = await load(fast, { pages, source, perRow });
    const c = await load(live, { pages, source, perRow });
    expect(c).toEqual(b);
    expect(paths(fast)).toEqual({ direct: allTables, refused: [] });
    expect(b).toEqual(a);
    const expected = await contents(reference);
    expect(await contents(fast)).toEqual(expected);
    expect(await contents(live)).toEqual(expected);
  });

  it('a first load whose key is in a table already (another source) falls back to the merge', async () => {
    const source = `${SOURCE}/overlapping`;
    const a = await load(reference, { pages: OVERLAPPING, source });
    const b = await load(fast, { pages: OVERLAPPING, source });
    const c = await load(live, { pages: OVERLAPPING, source });
    expect(c).toEqual(b);
    expect(paths(fast).refused).toEqual(['cybs.purchase_refund_request_details']);
    expect(paths(fast).direct).toHaveLength(allTables.length - 1);
    expect(b).toEqual(a);
    expect(a.tables.find((t) => t.table === 'cybs.purchase_refund_request_details')!.updated).toBe(9);
    const expected = await contents(reference);
    expect(await contents(fast)).toEqual(expected);
    expect(await contents(live)).toEqual(expected);
  });

  it('a first load holding a key twice falls back to the merge (the last record wins)', async () => {
    const source = `${SOURCE}/twice`;
    const a = await load(reference, { pages: TWICE, source });
    const b = await load(fast, { pages: TWICE, source });
    const c = await load(live, { pages: TWICE, source });
    expect(c).toEqual(b);
    expect(paths(fast).refused).toEqual(['cybs.purchase_refund_request_details']);
    expect(b).toEqual(a);
    expect(a.tables.find((t) => t.table === 'cybs.purchase_refund_request_details')!.duplicates).toBe(1);
    const expected = await contents(reference);
    expect(await contents(fast)).toEqual(expected);
    expect(await contents(live)).toEqual(expected);
  });

  it('a first load whose staged per-row record repeats a key of the lines falls back to the merge', async () => {
    const source = `${SOURCE}/per-row-twice`;
    const perRow = {
      section: 'requestDetails',
      recordNumber: 50_000,
      values: ['7000000000000000000700', 'm9', 'p9', 'g9', 't9', 'r9'],
    };
    const pages = [page(700, 5, true)];
    const a = await load(reference, { pages, source, perRow });
    const b = await load(fast, { pages, source, perRow });
    const c = await load(live, { pages, source, perRow });
    expect(c).toEqual(b);
    expect(paths(fast).refused).toEqual(['cybs.purchase_refund_request_details']);
    expect(b).toEqual(a);
    const expected = await contents(reference);
    expect(await contents(fast)).toEqual(expected);
    expect(await contents(live)).toEqual(expected);
  });

  it('a first load while paging copies each page into the tables: the reference load, bad rows mixed in', async () => {
    const source = `${SOURCE}/live`;
    const pages = [page(1000, 40, false, false), page(1040, 40, false, false), page(1080, 13, false, false)];
    const perRow = { section: 'others', recordNumber: 9_998, values: ['7000000000000000999998', 'a', 'b'] };
    const a = await load(reference, { pages, source, perRow });
    const c = await load(live, { pages, source, perRow });
    expect(livePaths(live)).toEqual({ live: allTables, refused: false });
    expect(c).toEqual(a);
    expect(a.rowsRejected).toBeGreaterThan(10);
    await load(fast, { pages, source, perRow });
    const expected = await contents(reference);
    expect(await contents(fast)).toEqual(expected);
    expect(await contents(live)).toEqual(expected);
  });

  it('a first load while paging that meets a key twice, or an unknown key, is rolled back and merged', async () => {
    const twice = TWICE.map((p) => ({
      ...p,
      requestDetails: (p['requestDetails'] as Record<string, unknown>[]).map(
        ({ extraKey, ...rest }) => (void extraKey, rest),
      ),
    }));
    const later = [page(1200, 10, true, false), page(1210, 10, true, false), page(1220, 10, true, true)];
    const perRow = {
      section: 'requestDetails',
      recordNumber: 50_001,
      values: ['7000000000000000001300', 'm9', 'p9', 'g9', 't9', 'r9'],
    };
    const cases: LoadCase[] = [
      { pages: twice, source: `${SOURCE}/live-twice` },
      { pages: later, source: `${SOURCE}/live-unknown-key` },
      { pages: [page(1300, 5, true, false)], source: `${SOURCE}/live-per-row-twice`, perRow },
    ];
    for (const loadCase of cases) {
      const a = await load(reference, loadCase);
      const c = await load(live, loadCase);
      expect(livePaths(live)).toEqual({ live: [], refused: true });
      expect(c).toEqual(a);
      await load(fast, loadCase);
    }
    const expected = await contents(reference);
    expect(await contents(fast)).toEqual(expected);
    expect(await contents(live)).toEqual(expected);
  });

  it('a first load while paging that fails otherwise than on the data ends the paging and commits nothing', async () => {
    const source = `${SOURCE}/live-broken`;
    const dir = await mkdtemp(join(tmpdir(), 'cybs-odct-'));
    const spools = makeSpools('live', dir, source);
    const pages = Array.from({ length: 12 }, (_, i) => page(2000 + i * 5, 5, true, false));
    let written = 0;
    try {
      const failed = loadWindow(live.warehouse, {
        window: { pipeline: def.name, organizationId: 'org_1', windowKey: 'broken' },
        targets: [],
        runId: null,
        live: {
          tables: Object.keys(def.tables).map((name) => {
            const feed = spools.copy.get(name)!.feed;
            return {
              table: def.tables[name]!,
              columns: declaredColumns(def.tables[name]!),
              // The spool file cannot be read back (a disk error): not something the staging path cures.
              feed: {
                take: () => {
                  const lines = feed.take();
                  if (!lines || lines.lines === 0) return lines;
                  return {
                    lines: lines.lines,
                    // eslint-disable-next-line require-yield
                    chunks: async function* (): AsyncGenerator<Uint8Array> {
                      throw new Error('spool read failed');
                    },
                  };
                },
              },
            };
          }),
          source,
          pages: (async function* () {
            for await (const page of pageSteps(spools, pages, source)) {
              written++;
              yield page;
            }
          })(),
          targets: () => targetsOf(spools, source)(),
        },
      });
      await expect(failed).rejects.toThrow(/spool read failed/);
    } finally {
      for (const spool of spools.copy.values()) await spool.close();
      await rm(dir, { recursive: true, force: true });
    }
    expect(written).toBeLessThan(pages.length);
    // Nothing of the window stayed (when the test runs alone, not even the tables it created).
    const exists = await sql<{ t: string | null }>`
      select to_regclass('cybs.purchase_refund_settlements')::text as t`.execute(live.warehouse.db);
    if (exists.rows[0]!.t !== null) {
      const rows = await sql<{ n: number }>`select count(*)::int as n from cybs.purchase_refund_settlements
        where _source = ${source}`.execute(live.warehouse.db);
      expect(rows.rows[0]!.n).toBe(0);
    }
  });

  it('a fetch that fails inside the load rolls it back and is thrown as it is, for the caller to report', async () => {
    const lines: string[] = [];
    const logger = createLogger({
      level: 'debug',
      destination: { write: (line: string) => lines.push(line) },
    });
    const refused = new CybsError('API_UNAUTHORIZED', 'CyberSource refused the credentials', {
      stage: 'api',
    });
    const failed = loadWindow(live.warehouse, {
      window: { pipeline: def.name, organizationId: 'org_1', windowKey: 'api-failure' },
      targets: [],
      runId: null,
      logger,
      live: {
        tables: Object.keys(def.tables).map((name) => ({
          table: def.tables[name]!,
          columns: declaredColumns(def.tables[name]!),
          feed: { take: () => ({ lines: 0, chunks: async function* () {} }) },
        })),
        source: `${SOURCE}/api-failure`,
        // eslint-disable-next-line require-yield
        pages: (async function* () {
          throw refused;
        })(),
        targets: () => [],
      },
    });
    await expect(failed).rejects.toBe(refused);
    const logged = lines.map((l) => JSON.parse(l) as { level: string; msg: string });
    expect(logged.filter((l) => l.msg === 'window load rolled back').map((l) => l.level)).toEqual(['debug']);
  });

  it('a re-load of a source goes through the staging table and the merge', async () => {
    const a = await load(reference);
    const b = await load(fast);
    const c = await load(live);
    expect(c).toEqual(b);
    // Only the tables the source has no row in (sections absent or empty in PAGES) are first loads.
    expect(paths(fast)).toEqual({
      direct: allTables.filter((t) => !/request_details|settlements|authorizations/.test(t)),
      refused: [],
    });
    expect(b).toEqual(a);
    const expected = await contents(reference);
    expect(await contents(fast)).toEqual(expected);
    expect(await contents(live)).toEqual(expected);
  });

  it('loads the same when a column of the table has another type family (values checked per row)', async () => {
    for (const side of [reference, fast, live]) {
      await sql`alter table cybs.purchase_refund_settlements alter column amount type text`.execute(
        side.warehouse.db,
      );
      await sql`alter table cybs.purchase_refund_settlements alter column submission_time type date
        using submission_time::date`.execute(side.warehouse.db);
    }
    const a = await load(reference);
    const b = await load(fast);
    const c = await load(live);
    expect(c).toEqual(b);
    expect(b).toEqual(a);
    const expected = await contents(reference);
    expect(await contents(fast)).toEqual(expected);
    expect(await contents(live)).toEqual(expected);
  });
  it('a first load that creates the tables builds their indexes after the rows; a key twice then falls back', async () => {
    const tables = Object.values(def.tables);
    const dropAll = async () => {
      for (const side of [reference, fast, live])
        for (const t of tables) await sql`drop table ${sql.id(t.schema, t.name)}`.execute(side.warehouse.db);
    };
    const expectIndexes = async () => {
      for (const side of [reference, fast, live])
        for (const t of tables) expect(await indexesOf(side.warehouse.db, t)).toEqual(declaredIndexes(t));
    };
    // The sides have numbered their sources differently by now (the live side alone took a number
    // for the broken load above): the rows are compared by `_source`.
    const sourceContents = async (side: Side) =>
      Object.fromEntries(
        Object.entries(await contents(side)).map(([name, rows]) => [
          name,
          rows.map((r) => {
            const { _source_key, ...rest } = r as Record<string, unknown>;
            return (void _source_key, rest);
          }),
        ]),
      );
    /** Why each first load of the side's last load was refused, as logged. */
    const reasons = (side: Side) =>
      side.log
        .map((l) => JSON.parse(l) as { msg: string; reason?: string })
        .filter((l) => l.msg.includes('refused'))
        .map((l) => l.reason);

    // A key twice: the tables have no index while the rows go in, so the unique index's build
    // refuses them (not the COPY), and the staging path loads them, the last record winning.
    await dropAll();
    const twice = TWICE.map((p) => ({
      ...p,
      requestDetails: (p['requestDetails'] as Record<string, unknown>[]).map(
        ({ extraKey, ...rest }) => (void extraKey, rest),
      ),
    }));
    const source = `${SOURCE}/new-tables-twice`;
    const a = await load(reference, { pages: twice, source });
    const b = await load(fast, { pages: twice, source });
    expect(paths(fast).refused).toEqual(['cybs.purchase_refund_request_details']);
    expect(reasons(fast)).toEqual([expect.stringMatching(/could not create unique index/)]);
    const c = await load(live, { pages: twice, source });
    expect(livePaths(live)).toEqual({ live: [], refused: true });
    // Refused while paging, then again by the direct COPY of the usual load that follows.
    expect(reasons(live)).toEqual([
      expect.stringMatching(/could not create unique index/),
      expect.stringMatching(/could not create unique index/),
    ]);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
    expect(a.tables.find((t) => t.table === 'cybs.purchase_refund_request_details')!.duplicates).toBe(1);
    let expected = await sourceContents(reference);
    expect(await sourceContents(fast)).toEqual(expected);
    expect(await sourceContents(live)).toEqual(expected);
    await expectIndexes();

    // Clean pages: straight into the new tables (while paging on the live side), indexes after.
    await dropAll();
    const pages = [page(3000, 30, true, false), page(3030, 7, true, false)];
    const clean = `${SOURCE}/new-tables`;
    const d = await load(reference, { pages, source: clean });
    const e = await load(fast, { pages, source: clean });
    expect(paths(fast)).toEqual({ direct: allTables, refused: [] });
    const f = await load(live, { pages, source: clean });
    expect(livePaths(live)).toEqual({ live: allTables, refused: false });
    expect(e).toEqual(d);
    expect(f).toEqual(d);
    expected = await sourceContents(reference);
    expect(await sourceContents(fast)).toEqual(expected);
    expect(await sourceContents(live)).toEqual(expected);
    await expectIndexes();
  });
  // Last: these loads leave the sides' sources numbered differently (a failed window takes a
  // number on the COPY-text sides only), which the comparisons of whole tables above would see.
  it('records repeated across pages (inserted while paging) are kept once, on every path (issue 26 #5)', async () => {
    // One page of 18 requests, and the same read as two pages whose second repeats two requests of
    // the first (two records inserted before them while paging), with all their items.
    const cases = [
      { whole: page(2000, 18, true, false), name: 'scanned' },
      { whole: page(2100, 18, false), name: 'parsed, bad rows mixed in' },
    ];
    for (const [k, { whole }] of cases.entries()) {
      const offset = whole['offset'] as number;
      const pages = [slicePage(whole, offset, 0, 10), slicePage(whole, offset, 8, 18)];
      expect((pages[1]!['settlements'] as unknown[]).length).toBe(10);
      const source = `${SOURCE}/repeated-${k}`;
      await load(reference, { pages: [whole], source });
      // This source's rows (their source's number aside: the sides number their sources apart).
      const rowsOf = async (side: Side) => {
        const all = await contents(side);
        const mine = (rows: unknown[]) =>
          (rows as Record<string, unknown>[])
            .filter((r) => (r['_source'] ?? r['source']) === source)
            .map(({ _source_key, ...rest }) => (void _source_key, rest));
        return Object.fromEntries(Object.entries(all).map(([k, rows]) => [k, mine(rows)]));
      };
      const expected = await rowsOf(reference);
      for (const side of [fast, live]) {
        const result = await load(side, { pages, source });
        expect(result.rowsRejected).toBe((await load(reference, { pages: [whole], source })).rowsRejected);
        const got = await rowsOf(side);
        for (const table of Object.values(def.tables))
          expect(got[table.name], `${side.kind} ${table.name}`).toEqual(expected[table.name]);
        expect((got['etl.rejects'] as unknown[]).length).toBe((expected['etl.rejects'] as unknown[]).length);
      }
    }
    // Settlements are keyed by source and line: 18 rows for 18 request ids, not 20.
    const settlements = await sql<{ n: number; ids: number }>`
      select count(*)::int as n, count(distinct request_id)::int as ids from cybs.purchase_refund_settlements
       where _source = ${`${SOURCE}/repeated-0`}`.execute(fast.warehouse.db);
    expect(settlements.rows[0]).toEqual({ n: 18, ids: 18 });
  });

  it('a first page read from its bytes and a second parsed: the repeated requests are recognised (issue 26 #5)', async () => {
    const whole = page(2200, 18, true, false);
    const pages = [slicePage(whole, 2200, 0, 10), slicePage(whole, 2200, 8, 18)];
    // An unknown key on a request of the second page only: that page is parsed.
    (pages[1]!['requestDetails'] as Record<string, unknown>[])[5]!['extraKey'] = 'x';
    const source = `${SOURCE}/repeated-mixed`;
    await load(fast, { pages, source });
    const rows = await sql<{ n: number }>`
      select count(*)::int as n from cybs.purchase_refund_request_details where _source = ${source}`.execute(
      fast.warehouse.db,
    );
    expect(rows.rows[0]!.n).toBe(18);
  });

  it('the same request id with other values on two pages fails the window, and nothing is loaded (issue 26 #5)', async () => {
    const whole = page(2300, 18, true, false);
    const pages = [slicePage(whole, 2300, 0, 10), slicePage(whole, 2300, 8, 18)];
    const settlement = (pages[1]!['settlements'] as Record<string, unknown>[])[1]!;
    pages[1]!['settlements'] = (pages[1]!['settlements'] as Record<string, unknown>[]).map((s) =>
      s === settlement ? { ...s, amount: '999.99' } : s,
    );
    const source = `${SOURCE}/unreconciled`;
    for (const side of [fast, live]) {
      const error = await load(side, { pages, source }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CybsError);
      expect((error as CybsError).code).toBe('EXTRACT_PAGES_INCONSISTENT');
      expect((error as CybsError).message).toBe(
        `${source}: request id 7000000000000000002309 is on page 1 and again on page 2 with other values; the pages changed while they were read and cannot be reconciled`,
      );
      const rows = await sql<{ n: number }>`
        select count(*)::int as n from cybs.purchase_refund_settlements where _source = ${source}`.execute(
        side.warehouse.db,
      );
      expect(rows.rows[0]!.n).toBe(0);
    }
  });

  // Last: it numbers a source of its own on two of the three sides (their _source_key would differ).
  it('a re-load of the same pages after rows were touched by hand reads those rows alone again', async () => {
    const source = `${SOURCE}/touched`;
    // Request ids of their own: a source loading the same ids would take the other cases' rows over.
    const pages = [page(500, 40), page(540, 40), page(580, 13)];
    /** The window's rows (but their sides' own source numbers) and rejects. */
    const ofWindow = async (side: Side) =>
      Object.fromEntries(
        Object.entries(await contents(side)).map(([table, rows]) => [
          table,
          (rows as Record<string, unknown>[])
            .filter((r) => r[table === 'etl.rejects' ? 'source' : '_source'] === source)
            .map(({ _source_key, ...rest }) => (void _source_key, rest)),
        ]),
      );
    /** The row `offset` places after the first of the source in `table`, as a `_source_row`. */
    const rowOf = (table: string, offset: number) =>
      sql`(select _source_row from ${sql.id('cybs', table)} where _source = ${source}
            order by _source_row limit 1 offset ${offset})`;
    const first = await load(fast, { pages, source, state: { skipIfUnchanged: false } });
    await load(reference, { pages, source });
    for (const side of [fast, reference]) {
      await sql`update cybs.purchase_refund_settlements set amount = amount + 1
                 where _source = ${source} and _source_row = ${rowOf('purchase_refund_settlements', 6)}`.execute(
        side.warehouse.db,
      );
      await sql`update cybs.purchase_refund_request_details set group_name = 'by hand'
                 where _source = ${source} and _source_row = ${rowOf('purchase_refund_request_details', 11)}`.execute(
        side.warehouse.db,
      );
    }
    const written = async () =>
      (
        await sql<{ x: string }>`select xmin::text as x from cybs.purchase_refund_settlements
          where _source = ${source} order by _source_row`.execute(fast.warehouse.db)
      ).rows.map((r) => r.x);
    const before = await written();
    const again = await load(fast, {
      pages,
      source,
      state: { previous: first.state, skipIfUnchanged: true },
    });
    expect(fast.log.some((l) => l.includes('only the rows touched since were read again'))).toBe(true);
    await load(reference, { pages, source });
    expect(await ofWindow(fast)).toEqual(await ofWindow(reference));
    // Only the touched settlement was written again.
    const after = await written();
    expect(after.filter((x, i) => x !== before[i])).toHaveLength(1);
    const third = await load(fast, {
      pages,
      source,
      state: { previous: again.state, skipIfUnchanged: true },
    });
    expect(third.unchanged).toBe(true);
    // A row deleted by hand: the whole window again (the sections' rejects share one numbering).
    for (const side of [fast, reference]) {
      await sql`delete from cybs.purchase_refund_request_details
                 where _source = ${source} and _source_row = ${rowOf('purchase_refund_request_details', 11)}`.execute(
        side.warehouse.db,
      );
    }
    await load(fast, { pages, source, state: { previous: third.state, skipIfUnchanged: true } });
    expect(fast.log.some((l) => l.includes('rows lost from a spooled source'))).toBe(true);
    await load(reference, { pages, source });
    expect(await ofWindow(fast)).toEqual(await ofWindow(reference));
  });
});

describe('fastPageCheck', () => {
  const check = fastPageCheck(purchaseRefundDetailsResponseSchema)!;
  const zod = (body: unknown) => purchaseRefundDetailsResponseSchema.parse(body);
  it('gives what zod gives, keys in the same order, or leaves the body to zod', () => {
    for (const body of [
      ...PAGES,
      { limit: 1, offset: 0, settlements: [{ requestId: 'x', zz: 1 }], more: 2 },
      {},
    ]) {
      const fast = check(body);
      expect(fast).toBeDefined();
      expect(JSON.stringify(fast)).toBe(JSON.stringify(zod(body)));
    }
    for (const body of [
      { settlements: [{ requestId: 'x', amount: 5 }] }, // zod turns the number into text
      { settlements: [{ amount: '1', requestId: 'x' }] }, // zod reorders the keys
      { settlements: [{ requestId: 'x', zz: 1, amount: '1' }] },
      { settlements: null },
      { settlements: [[1]] },
      { offset: '1' },
      [],
    ]) {
      expect(check(body)).toBeUndefined();
    }
  });
});
