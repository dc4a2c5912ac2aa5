import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/load/migrate.js';
import { openWarehouse } from '../../src/load/warehouse.js';
import type { Warehouse } from '../../src/load/warehouse.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';

const backends: [string, () => Promise<{ warehouse: Warehouse; cleanup: () => Promise<void> }>][] = [
  [
    'postgres',
    async () => {
      const database: TestDatabase = await createTestDatabase('wh');
      const warehouse = await openWarehouse({ url: database.url, path: '' });
      return { warehouse, cleanup: async () => (await warehouse.close(), await database.drop()) };
    },
  ],
  [
    'pglite',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'cybs-wh-'));
      const warehouse = await openWarehouse({ path: join(dir, 'warehouse') });
      return {
        warehouse,
        cleanup: async () => (await warehouse.close(), await rm(dir, { recursive: true })),
      };
    },
  ],
];

describe.each(backends)('warehouse on %s', (_name, open) => {
  let warehouse: Warehouse;
  let cleanup: () => Promise<void>;

  beforeAll(async () => {
    ({ warehouse, cleanup } = await open());
  });
  afterAll(async () => cleanup());

  it('migrates to the etl schema, and a second migrate changes nothing', async () => {
    const first = await migrateToLatest(warehouse.db);
    expect(first.applied).toContain('0001_etl_schema');
    const second = await migrateToLatest(warehouse.db);
    expect(second.applied).toEqual([]);
    const tables = await sql<{ table_name: string }>`
      select table_name from information_schema.tables where table_schema = 'etl' order by 1`.execute(
      warehouse.db,
    );
    expect(tables.rows.map((r) => r.table_name)).toEqual(
      expect.arrayContaining(['rejects', 'runs', 'schema_changes', 'windows']),
    );
    const schemas = await sql<{
      n: string;
    }>`select nspname as n from pg_namespace where nspname = 'cybs'`.execute(warehouse.db);
    expect(schemas.rows).toHaveLength(1);
  });

  it('copies row-aligned chunks inside a session transaction, and rolls back with it', async () => {
    await warehouse.session(async ({ db, copyFrom }) => {
      await sql`create table public.copy_probe (id text primary key, amount numeric(12,2), d date)`.execute(
        db,
      );
      await db.transaction().execute(async (trx) => {
        const n = await copyFrom('COPY public.copy_probe (id, amount, d) FROM STDIN', [
          '0001\t10.10\t2026-01-02\n',
          '0002\t-3.30\t\\N\n',
        ]);
        expect(n).toBe(2);
        const r = await sql<{ id: string; amount: string; d: string | null }>`
          select * from public.copy_probe order by id`.execute(trx);
        expect(r.rows).toEqual([
          { id: '0001', amount: '10.10', d: '2026-01-02' },
          { id: '0002', amount: '-3.30', d: null },
        ]);
      });
      await expect(
        db.transaction().execute(async () => {
          await copyFrom('COPY public.copy_probe (id, amount, d) FROM STDIN', ['0003\t1.00\t2026-01-03\n']);
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      const count = await sql<{ n: number }>`select count(*)::int as n from public.copy_probe`.execute(db);
      expect(count.rows[0]!.n).toBe(2);
    });
  });

  it('serialises concurrent sessions without interleaving transactions', async () => {
    await sql`create table if not exists public.seq_probe (n int)`.execute(warehouse.db);
    await Promise.all(
      [1, 2, 3].map((n) =>
        warehouse.session(({ db }) =>
          db.transaction().execute(async (trx) => {
            await sql`insert into public.seq_probe values (${n})`.execute(trx);
          }),
        ),
      ),
    );
    const r = await sql<{ n: number }>`select count(*)::int as n from public.seq_probe`.execute(warehouse.db);
    expect(r.rows[0]!.n).toBe(3);
  });
});

describe.each(backends)('migration 0002 on %s', (_name, open) => {
  let warehouse: Warehouse;
  let cleanup: () => Promise<void>;

  beforeAll(async () => {
    ({ warehouse, cleanup } = await open());
  });
  afterAll(async () => cleanup());

  it('drops the (organization, source) index a row-keyed table made before it had, and keeps the others', async () => {
    // Tables as the DDL made them before 0002: both kinds had the source index.
    const lineage = `"_organization_id" text not null, "_source" text not null, "_source_row" bigint not null,
      "_run_id" bigint, "_loaded_at" timestamptz not null default now()`;
    await sql
      .raw(
        `create schema cybs;
         create table cybs.fee_detail (request_id text, ${lineage});
         create unique index fee_detail_natural_key on cybs.fee_detail ("_organization_id", "_source", "_source_row");
         create index fee_detail_source on cybs.fee_detail ("_organization_id", "_source");
         create table cybs.transaction_request (request_id text not null, ${lineage});
         create unique index transaction_request_natural_key on cybs.transaction_request ("_organization_id", request_id);
         create index transaction_request_source on cybs.transaction_request ("_organization_id", "_source");
         create table public.not_ours ("_organization_id" text, "_source" text);
         create unique index not_ours_key on public.not_ours ("_organization_id", "_source");
         create index not_ours_source on public.not_ours ("_organization_id", "_source");`,
      )
      .execute(warehouse.db);
    const result = await migrateToLatest(warehouse.db);
    expect(result.applied).toEqual([
      '0001_etl_schema',
      '0002_drop_redundant_source_indexes',
      '0003_window_fingerprint',
    ]);
    const indexes = await sql<{ name: string }>`
      select indexrelid::regclass::text as name from pg_index i join pg_class t on t.oid = i.indrelid
        join pg_namespace n on n.oid = t.relnamespace
       where n.nspname in ('cybs', 'public') order by 1`.execute(warehouse.db);
    expect(indexes.rows.map((r) => r.name)).toEqual([
      'cybs.fee_detail_natural_key',
      'cybs.transaction_request_natural_key',
      'cybs.transaction_request_source',
      'not_ours_key',
      'not_ours_source',
    ]);
  });
});
