/**
 * The on-demand load path (pages → COPY text spooled per section → one COPY of the bytes, records
 * the loader must judge kept apart) against the previous one (pages → typed values spooled as
 * JSON lines → parsed again → encoded per row): the same table contents, etl.rejects and load
 * result, on pages with bad rows mixed in (values the parser rejects, an empty natural key, a NUL
 * character, escapes, an unknown key), and when a column's table type has drifted (the loader then
 * reads the decoded records one by one).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ON_DEMAND_PIPELINES } from '../../pipelines/index.js';
import { fastPageCheck } from '../../src/api/fast-page-check.js';
import { purchaseRefundDetailsResponseSchema } from '../../src/api/types.js';
import { loadWindow } from '../../src/load/load-window.js';
import type { LoadWindowResult } from '../../src/load/load-window.js';
import type { LoadSource } from '../../src/load/table-spec.js';
import { migrateToLatest } from '../../src/load/migrate.js';
import { openWarehouse } from '../../src/load/warehouse.js';
import type { Warehouse } from '../../src/load/warehouse.js';
import { parseOnDemandResponse } from '../../src/parse/on-demand.js';
import { CopyTextSpool } from '../../src/pipeline/copy-text-spool.js';
import { RecordSpool, declaredColumns } from '../../src/pipeline/record-source.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';

const def = ON_DEMAND_PIPELINES.find((p) => p.name === 'purchase_refund_details')!;
const SOURCE = 'purchase-refund-details/2026-11-16T00:00:00.000Z..2026-11-17T00:00:00.000Z';

function page(offset: number, n: number): Record<string, unknown> {
  const id = (i: number) => `7000000000000000${String(offset + i).padStart(6, '0')}`;
  const rows = Array.from({ length: n }, (_, i) => i);
  const bad = (i: number) => (offset + i) % 7;
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
      extraKey: `x${i}`,
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

async function spooledTargets(kind: 'json' | 'copy', dir: string) {
  const offsets = new Map<string, number>();
  const json = new Map<string, RecordSpool>();
  const copy = new Map<string, CopyTextSpool>();
  for (const name of Object.keys(def.tables)) {
    const table = def.tables[name]!;
    if (kind === 'json') json.set(name, new RecordSpool(join(dir, `${name}.jsonl`), declaredColumns(table)));
    else copy.set(name, new CopyTextSpool(dir, name, table, declaredColumns(table)));
  }
  let pages = 0;
  for (const body of PAGES) {
    pages++;
    const parsed = parseOnDemandResponse(def.endpoint, body, { source: `${SOURCE}#page${pages}` });
    for (const [name, records] of Object.entries(parsed.sections)) {
      if (!def.tables[name]) continue;
      const base = offsets.get(name) ?? 0;
      let last = base;
      for await (const batch of records.batches) {
        if (kind === 'json') {
          // The previous path, as it was in execute-window.ts.
          const spool = json.get(name)!;
          spool.setColumns(records.columns);
          for (const r of batch.records) {
            last = base + r.recordNumber;
            await spool.write(last, r.values);
          }
          for (const r of batch.rejects) spool.addReject({ ...r, recordNumber: base + r.recordNumber });
        } else {
          const typed = batch.records.map((r) => {
            last = base + r.recordNumber;
            return { recordNumber: last, values: r.values };
          });
          const rejects = batch.rejects.map((r) => ({ ...r, recordNumber: base + r.recordNumber }));
          await copy.get(name)!.writePage(records.columns, typed, rejects);
        }
      }
      offsets.set(name, Math.max(last, base + records.summary().dataRows));
    }
  }
  const targets: { table: (typeof def.tables)[string]; source: LoadSource }[] = [];
  for (const name of Object.keys(def.tables)) {
    const spool = kind === 'json' ? json.get(name)! : copy.get(name)!;
    await spool.close();
    targets.push({ table: def.tables[name]!, source: spool.toLoadSource(SOURCE) });
  }
  return targets;
}

interface Side {
  db: TestDatabase;
  warehouse: Warehouse;
  kind: 'json' | 'copy';
}

async function load(side: Side): Promise<LoadWindowResult> {
  const dir = await mkdtemp(join(tmpdir(), 'cybs-odct-'));
  try {
    const targets = await spooledTargets(side.kind, dir);
    if (side.kind === 'copy') expect(targets.every((t) => t.source.copyText !== undefined)).toBe(true);
    return await loadWindow(side.warehouse, {
      window: { pipeline: def.name, organizationId: 'org_1', windowKey: '2026-11-16' },
      targets,
      runId: null,
      rejectThreshold: 1,
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
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
  beforeAll(async () => {
    const open = async (kind: 'json' | 'copy'): Promise<Side> => {
      const db = await createTestDatabase(`odct_${kind}`);
      const warehouse = await openWarehouse({ url: db.url, path: '' });
      await migrateToLatest(warehouse.db);
      return { db, warehouse, kind };
    };
    reference = await open('json');
    fast = await open('copy');
  });
  afterAll(async () => {
    for (const side of [reference, fast]) {
      await side?.warehouse.close();
      await side?.db.drop();
    }
  });

  it('loads the same rows and rejects, with bad rows mixed in', async () => {
    const a = await load(reference);
    const b = await load(fast);
    expect(b).toEqual(a);
    expect(a.rowsRejected).toBeGreaterThan(20);
    const ca = await contents(reference);
    expect(await contents(fast)).toEqual(ca);
    expect(ca['purchase_refund_request_details']!.length).toBeGreaterThan(50);
    expect(
      (ca['etl.rejects'] as { error_code: string }[])
        .map((r) => r.error_code)
        .sort((x, y) => (x < y ? -1 : 1)),
    ).toEqual(expect.arrayContaining(['LOAD_MISSING_KEY', 'MAP_INVALID_VALUE']));
  });

  it('loads the same when a column of the table has another type family (values checked per row)', async () => {
    for (const side of [reference, fast]) {
      await sql`alter table cybs.purchase_refund_settlements alter column amount type text`.execute(
        side.warehouse.db,
      );
      await sql`alter table cybs.purchase_refund_settlements alter column submission_time type date
        using submission_time::date`.execute(side.warehouse.db);
    }
    const a = await load(reference);
    const b = await load(fast);
    expect(b).toEqual(a);
    expect(await contents(fast)).toEqual(await contents(reference));
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
