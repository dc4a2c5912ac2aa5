import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deferIndexesOfEmptyTables,
  ensureTable,
  lockTableDdl,
  readTableColumns,
  tableDdl,
  tableIndexDdl,
} from '../../src/load/ddl.js';
import type { TableDecl } from '../../src/load/table-spec.js';
import type { Warehouse } from '../../src/warehouse/warehouse.js';
import { declaredIndexes, indexesOf } from '../helpers/indexes.js';
import { warehouseBackends } from '../helpers/load.js';

const decl: TableDecl = {
  schema: 'cybs',
  name: 'payment_batch_detail',
  description: 'One row per payment in a batch.',
  columns: [
    { name: 'request_id', pgType: 'text', description: 'Request id.' },
    { name: 'amount', pgType: 'numeric(12,2)', description: 'Amount in the currency.' },
    { name: 'batch_date', pgType: 'date' },
  ],
  naturalKey: ['_organization_id', 'request_id'],
  keyDescription: 'A request id appears once per organization.',
};

describe.each(warehouseBackends('ddl'))('table DDL on %s', (_backend, open) => {
  let warehouse: Warehouse;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ warehouse, cleanup } = await open());
  });
  afterAll(async () => cleanup());

  it('creates the table with lineage columns, key index and comments; a second run changes nothing', async () => {
    const first = await ensureTable(warehouse.db, decl);
    expect(first.created).toBe(true);
    expect(first.columns.map((c) => `${c.name} ${c.type}`)).toEqual([
      'request_id text',
      'amount numeric(12,2)',
      'batch_date date',
      '_organization_id text',
      '_source text',
      '_source_row bigint',
      '_run_id bigint',
      '_loaded_at timestamp with time zone',
      '_source_key bigint',
    ]);
    const second = await ensureTable(warehouse.db, decl);
    expect(second).toMatchObject({ created: false, columnsAdded: [] });
    // The generated statements themselves are idempotent too.
    for (const statement of tableDdl(decl)) await sql.raw(statement).execute(warehouse.db);

    const notNull = await sql<{ attname: string }>`
      select attname from pg_attribute where attrelid = 'cybs.payment_batch_detail'::regclass
         and attnotnull and attnum > 0 order by attnum`.execute(warehouse.db);
    expect(notNull.rows.map((r) => r.attname)).toEqual([
      'request_id',
      '_organization_id',
      '_source',
      '_source_row',
      '_loaded_at',
      '_source_key',
    ]);
    const index = await sql<{ def: string }>`
      select pg_get_indexdef(indexrelid) as def from pg_index
       where indrelid = 'cybs.payment_batch_detail'::regclass and indisunique`.execute(warehouse.db);
    expect(index.rows.map((r) => r.def)).toEqual([
      'CREATE UNIQUE INDEX payment_batch_detail_natural_key ON cybs.payment_batch_detail USING btree (request_id, _organization_id)',
    ]);
    const comments = await sql<{ name: string; comment: string | null }>`
      select attname as name, col_description(attrelid, attnum) as comment from pg_attribute
       where attrelid = 'cybs.payment_batch_detail'::regclass and attnum > 0 order by attnum`.execute(
      warehouse.db,
    );
    expect(comments.rows.every((r) => typeof r.comment === 'string' && r.comment.length > 0)).toBe(true);
    expect(comments.rows[1]).toEqual({ name: 'amount', comment: 'Amount in the currency.' });
    const table = await sql<{ c: string }>`
      select obj_description('cybs.payment_batch_detail'::regclass, 'pg_class') as c`.execute(warehouse.db);
    expect(table.rows[0]!.c).toBe(
      'One row per payment in a batch. Natural key (_organization_id, request_id): A request id appears once per organization.',
    );
  });

  it('adds declared columns an existing table lacks, and never drops or retypes one', async () => {
    const wider: TableDecl = {
      ...decl,
      columns: [
        { name: 'request_id', pgType: 'text' },
        { name: 'amount', pgType: 'text' },
        { name: 'Settlement "Currency"', pgType: 'char(3)', description: 'ISO 4217 code.' },
      ],
    };
    const result = await ensureTable(warehouse.db, wider);
    expect(result.columnsAdded.map((c) => c.name)).toEqual(['Settlement "Currency"']);
    const columns = await readTableColumns(warehouse.db, 'cybs', 'payment_batch_detail');
    expect(columns?.find((c) => c.name === 'amount')?.type).toBe('numeric(12,2)');
    expect(columns?.find((c) => c.name === 'batch_date')?.type).toBe('date');
    expect(columns?.at(-1)).toEqual({ name: 'Settlement "Currency"', type: 'character(3)' });
    expect(await readTableColumns(warehouse.db, 'cybs', 'no_such_table')).toBeNull();
  });

  it('with deferIndexes, creates the table without its indexes and returns their statements', async () => {
    const later: TableDecl = { ...decl, name: 'payment_batch_detail_later' };
    const rollback = new Error('rollback');
    const done = warehouse.db.transaction().execute(async (trx) => {
      const created = await ensureTable(trx, later, { deferIndexes: true });
      expect(created.created).toBe(true);
      expect(created.deferredIndexes).toEqual(tableIndexDdl(later));
      expect(await indexesOf(trx, later)).toEqual([]);
      for (const statement of created.deferredIndexes!) await sql.raw(statement).execute(trx);
      expect(await indexesOf(trx, later)).toEqual(declaredIndexes(later));
      expect(declaredIndexes(later).map((i) => i.columns)).toEqual([
        ['request_id', '_organization_id'],
        ['_source_key'],
      ]);
      // An existing table is never touched: nothing deferred.
      const again = await ensureTable(trx, later, { deferIndexes: true });
      expect(again).toMatchObject({ created: false });
      expect(again.deferredIndexes).toBeUndefined();
      throw rollback;
    });
    await expect(done).rejects.toBe(rollback);
    expect(await readTableColumns(warehouse.db, 'cybs', later.name)).toBeNull();
    expect(await indexesOf(warehouse.db, decl)).toEqual(declaredIndexes(decl));
  });

  it('deferIndexesOfEmptyTables drops the indexes of existing tables that hold no row and returns them: all or none', async () => {
    const empty: TableDecl = { ...decl, name: 'payment_batch_detail_empty' };
    const other: TableDecl = { ...decl, name: 'payment_batch_detail_other' };
    for (const t of [empty, other]) await ensureTable(warehouse.db, t);
    const both = [empty, other];
    const rollback = new Error('rollback');
    const deferred = warehouse.db.transaction().execute(async (trx) => {
      const result = await deferIndexesOfEmptyTables(trx, both);
      expect(result).toEqual(
        new Map([
          ['cybs.payment_batch_detail_empty', tableIndexDdl(empty)],
          ['cybs.payment_batch_detail_other', tableIndexDdl(other)],
        ]),
      );
      for (const t of both) expect(await indexesOf(trx, t)).toEqual([]);
      for (const statement of result!.get('cybs.payment_batch_detail_empty')!)
        await sql.raw(statement).execute(trx);
      expect(await indexesOf(trx, empty)).toEqual(declaredIndexes(empty));
      throw rollback;
    });
    await expect(deferred).rejects.toBe(rollback);
    for (const t of both) expect(await indexesOf(warehouse.db, t)).toEqual(declaredIndexes(t));

    // Another transaction reads one of them meanwhile: the indexes of both stay, the load does not
    // wait, and it holds no lock on either afterwards.
    let reading!: () => void;
    const read = new Promise<void>((resolve) => (reading = resolve));
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const reader = warehouse.db.transaction().execute(async (trx) => {
      await sql`select count(*) from cybs.payment_batch_detail_other`.execute(trx);
      reading();
      await finished;
    });
    await read;
    try {
      await warehouse.db.transaction().execute(async (trx) => {
        expect(await deferIndexesOfEmptyTables(trx, both)).toBeUndefined();
        for (const t of both) expect(await indexesOf(trx, t)).toEqual(declaredIndexes(t));
        const held = await sql<{ n: number }>`
          select count(*)::int as n from pg_locks
           where pid = pg_backend_pid() and locktype = 'relation'
             and relation in ('cybs.payment_batch_detail_empty'::regclass, 'cybs.payment_batch_detail_other'::regclass)
             and mode = 'AccessExclusiveLock'`.execute(trx);
        expect(held.rows[0]!.n).toBe(0);
      });
    } finally {
      finish();
      await reader;
    }

    // A row in one of them: the indexes of both stay, whether or not pg_class counts its pages yet.
    await insertRow(warehouse.db, other);
    for (const analyzed of [false, true]) {
      if (analyzed) await sql`analyze cybs.payment_batch_detail_other`.execute(warehouse.db);
      const withRows = await warehouse.db
        .transaction()
        .execute(async (trx) => deferIndexesOfEmptyTables(trx, both));
      expect(withRows).toBeUndefined();
      for (const t of both) expect(await indexesOf(warehouse.db, t)).toEqual(declaredIndexes(t));
    }
  });

  it('deferIndexesOfEmptyTables leaves the indexes of an empty table whose DDL lock another load holds, and the two loads go on', async () => {
    // A load adding a column holds the table's DDL lock, then waits for the table's own lock. A
    // load that took the table's lock first and then asked for the DDL lock would deadlock with it.
    const busy: TableDecl = { ...decl, name: 'payment_batch_detail_busy' };
    await ensureTable(warehouse.db, busy);
    let locked!: () => void;
    const ddlHeld = new Promise<void>((resolve) => (locked = resolve));
    let deferDone!: () => void;
    const deferred = new Promise<void>((resolve) => (deferDone = resolve));
    const adding = warehouse.db.transaction().execute(async (trx) => {
      await lockTableDdl(trx, 'cybs', busy.name);
      locked();
      await deferred;
      await sql`alter table cybs.payment_batch_detail_busy add column added_here text`.execute(trx);
    });
    await ddlHeld;
    const loading = warehouse.db.transaction().execute(async (trx) => {
      try {
        expect(await deferIndexesOfEmptyTables(trx, [busy])).toBeUndefined();
      } finally {
        deferDone();
      }
      // Then, as a load adding a column of its own: it waits for the first one, which goes on.
      await lockTableDdl(trx, 'cybs', busy.name);
      await insertRow(trx, busy);
    });
    await Promise.all([adding, loading]);
    expect(await indexesOf(warehouse.db, busy)).toEqual(declaredIndexes(busy));
    expect((await readTableColumns(warehouse.db, 'cybs', busy.name))?.at(-1)?.name).toBe('added_here');
  });
});

/** One row in `table` (its key columns and lineage set). */
async function insertRow(db: Parameters<typeof indexesOf>[0], table: TableDecl): Promise<void> {
  await sql
    .raw(
      `insert into cybs.${table.name} (request_id, _organization_id, _source, _source_row, _source_key) values ('1', 'org', 'test', 1, 1)`,
    )
    .execute(db);
}
