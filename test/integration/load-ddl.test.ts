import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTable, readTableColumns, tableDdl, tableIndexDdl } from '../../src/load/ddl.js';
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
});
