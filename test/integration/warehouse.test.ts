import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadWindow } from '../../src/load/window/load-window.js';
import { migrateToLatest } from '../../src/warehouse/migrate.js';
import type { TableDecl } from '../../src/load/table-spec.js';
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import type { Warehouse } from '../../src/warehouse/warehouse.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { generatedSource } from '../helpers/load.js';
import { warehouseTempDir } from '../helpers/temp-dir.js';

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
    'embedded',
    async () => {
      const dir = await warehouseTempDir('cybs-wh-');
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

  it('copies in turn: every chunk written out before the next, so one buffer can carry them all', async () => {
    await warehouse.session(async ({ db, copyFrom }) => {
      await sql`create table public.turn_probe (n int primary key, t text)`.execute(db);
      const rows = 20_000;
      const filler = 'x'.repeat(100);
      // Every chunk is the same buffer, filled again: a chunk still unsent would be overwritten.
      const out = Buffer.alloc(64 * 1024);
      async function* chunks(from: number): AsyncGenerator<Buffer> {
        let at = 0;
        for (let n = from; n < from + rows; n++) {
          const line = `${n}\t${filler}${n}\n`;
          if (at + line.length > out.length) {
            yield out.subarray(0, at);
            at = 0;
          }
          at += out.write(line, at, 'latin1');
        }
        yield out.subarray(0, at);
      }
      expect(await copyFrom('COPY public.turn_probe (n, t) FROM STDIN', chunks(0), { inTurn: true })).toBe(
        rows,
      );
      const wrong = await sql<{ n: number }>`
        select count(*)::int as n from public.turn_probe where t <> ${filler} || n::text`.execute(db);
      expect(wrong.rows[0]!.n).toBe(0);
      // The server's refusal (a key twice) and the producer's failure both reject, and the session
      // goes on.
      await expect(
        copyFrom('COPY public.turn_probe (n, t) FROM STDIN', chunks(rows - 5), { inTurn: true }),
      ).rejects.toMatchObject({ code: '23505' });
      async function* failing(): AsyncGenerator<Buffer> {
        yield Buffer.from(`${2 * rows}\tz\n`);
        throw new Error('the source failed');
      }
      await expect(
        copyFrom('COPY public.turn_probe (n, t) FROM STDIN', failing(), { inTurn: true }),
      ).rejects.toThrow('the source failed');
      const count = await sql<{ n: number }>`select count(*)::int as n from public.turn_probe`.execute(db);
      expect(count.rows[0]!.n).toBe(rows);
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

/** The lineage columns of a table as the DDL made it before migration 0004. */
const LINEAGE_BEFORE_0004 = `"_organization_id" text not null, "_source" text not null, "_source_row" bigint not null,
  "_run_id" bigint, "_loaded_at" timestamptz not null default now()`;

describe.each(backends)('migrations of tables made before them on %s', (_name, open) => {
  let warehouse: Warehouse;
  let cleanup: () => Promise<void>;

  // Each test starts from an empty warehouse of its own.
  beforeEach(async () => {
    ({ warehouse, cleanup } = await open());
  });
  afterEach(async () => cleanup());

  it('0002 drops the (organization, source) index a row-keyed table made before it had, and keeps the others', async () => {
    // Tables as the DDL made them before 0002: both kinds had the source index.
    await sql
      .raw(
        `create schema cybs;
         create table cybs.fee_detail (request_id text, ${LINEAGE_BEFORE_0004});
         create unique index fee_detail_natural_key on cybs.fee_detail ("_organization_id", "_source", "_source_row");
         create index fee_detail_source on cybs.fee_detail ("_organization_id", "_source");
         create table cybs.transaction_request (request_id text not null, ${LINEAGE_BEFORE_0004});
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
      '0004_source_keys',
      '0005_unavailable_no_data_to_pending',
      '0006_analytics',
      '0007_windows_claimed_by_jobs',
      '0008_window_retries',
      '0009_alert_incidents',
      '0010_one_time_reports',
      '0011_import_fingerprints',
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

  it('0004 numbers the sources of existing tables, fills _source_key, rebuilds the indexes on it; a re-load finds its rows', async () => {
    // Tables as the DDL made them before 0004, with rows of two organizations and three sources.
    await sql
      .raw(
        `create schema cybs;
         create table cybs.fee_detail (request_id text, ${LINEAGE_BEFORE_0004});
         create unique index fee_detail_natural_key on cybs.fee_detail ("_organization_id", "_source", "_source_row");
         create table cybs.transaction_request (request_id text not null, ${LINEAGE_BEFORE_0004});
         create unique index transaction_request_natural_key on cybs.transaction_request (request_id, "_organization_id");
         create index transaction_request_source on cybs.transaction_request ("_organization_id", "_source");
         create table public.not_ours ("_organization_id" text, "_source" text);
         create unique index not_ours_key on public.not_ours ("_organization_id", "_source");
         insert into cybs.fee_detail (request_id, "_organization_id", "_source", "_source_row")
           values ('r1', 'org_a', 'fees/2026-11-01', 1), ('r2', 'org_a', 'fees/2026-11-01', 2),
                  ('r3', 'org_a', 'fees/2026-11-02', 1), ('r1', 'org_b', 'fees/2026-11-01', 1);
         insert into cybs.transaction_request (request_id, "_organization_id", "_source", "_source_row")
           values ('t1', 'org_a', 'tr/2026-11-01', 1), ('t2', 'org_a', 'tr/2026-11-01', 2);`,
      )
      .execute(warehouse.db);
    const result = await migrateToLatest(warehouse.db);
    expect(result.applied).toContain('0004_source_keys');

    const sources = await sql<{ organization_id: string; source: string }>`
      select organization_id, source from etl.sources order by 1, 2`.execute(warehouse.db);
    expect(sources.rows).toEqual([
      { organization_id: 'org_a', source: 'fees/2026-11-01' },
      { organization_id: 'org_a', source: 'fees/2026-11-02' },
      { organization_id: 'org_a', source: 'tr/2026-11-01' },
      { organization_id: 'org_b', source: 'fees/2026-11-01' },
    ]);
    for (const table of ['fee_detail', 'transaction_request']) {
      const mismatched = await sql<{ n: number }>`
        select count(*)::int as n from ${sql.id('cybs', table)} as t
          left join etl.sources as k on k.source_key = t."_source_key"
         where k.organization_id is distinct from t."_organization_id" or k.source is distinct from t."_source"`.execute(
        warehouse.db,
      );
      expect(mismatched.rows[0]!.n, table).toBe(0);
    }
    const indexes = await sql<{ def: string }>`
      select pg_get_indexdef(i.indexrelid) as def from pg_index i join pg_class t on t.oid = i.indrelid
        join pg_namespace n on n.oid = t.relnamespace
       where n.nspname in ('cybs', 'public') order by 1`.execute(warehouse.db);
    expect(indexes.rows.map((r) => r.def)).toEqual([
      'CREATE INDEX transaction_request_source ON cybs.transaction_request USING btree (_source_key)',
      'CREATE UNIQUE INDEX fee_detail_natural_key ON cybs.fee_detail USING btree (_source_key, _source_row)',
      'CREATE UNIQUE INDEX not_ours_key ON public.not_ours USING btree (_organization_id, _source)',
      'CREATE UNIQUE INDEX transaction_request_natural_key ON cybs.transaction_request USING btree (request_id, _organization_id)',
    ]);

    // A re-load of one of those sources after the upgrade: its rows are found and replaced, not
    // added beside them; the other sources' rows are left alone.
    const decl: TableDecl = {
      schema: 'cybs',
      name: 'fee_detail',
      description: 'Fees.',
      columns: [{ name: 'request_id', pgType: 'text' }],
      naturalKey: ['_organization_id', '_source', '_source_row'],
      keyDescription: 'organization, source and line.',
    };
    const run = await sql<{
      id: string;
    }>`insert into etl.runs (command) values ('test') returning id`.execute(warehouse.db);
    const loaded = await loadWindow(warehouse, {
      window: { pipeline: 'fees', organizationId: 'org_a', windowKey: '2026-11-01' },
      runId: Number(run.rows[0]!.id),
      targets: [
        {
          table: decl,
          source: generatedSource(
            'fees/2026-11-01',
            [{ name: 'request_id', pgType: 'text' }],
            [['r1'], ['r2b']],
          ),
        },
      ],
    });
    expect(loaded.tables[0]).toMatchObject({ inserted: 0, updated: 1, unchanged: 1, deleted: 0 });
    const rows = await sql<{ org: string; source: string; row: number; request_id: string }>`
      select "_organization_id" as org, "_source" as source, "_source_row"::int as row, request_id
        from cybs.fee_detail order by 1, 2, 3`.execute(warehouse.db);
    expect(rows.rows).toEqual([
      { org: 'org_a', source: 'fees/2026-11-01', row: 1, request_id: 'r1' },
      { org: 'org_a', source: 'fees/2026-11-01', row: 2, request_id: 'r2b' },
      { org: 'org_a', source: 'fees/2026-11-02', row: 1, request_id: 'r3' },
      { org: 'org_b', source: 'fees/2026-11-01', row: 1, request_id: 'r1' },
    ]);
  });
});

describe('the embedded warehouse keeps its files to its owner', () => {
  /** Every path under `root` (itself included) whose permission bits are not `dir`/`file`. */
  async function openModes(root: string): Promise<string[]> {
    const found: string[] = [];
    const visit = async (path: string) => {
      const info = await stat(path);
      // The server's socket: its mode is unix_socket_permissions (0700), in the 0700 directory.
      if (info.isSocket()) return;
      const want = info.isDirectory() ? 0o700 : 0o600;
      if ((info.mode & 0o777) !== want) found.push(`${path} ${(info.mode & 0o777).toString(8)}`);
      if (info.isDirectory()) for (const name of await readdir(path)) await visit(join(path, name));
    };
    await visit(root);
    return found;
  }

  it('makes the data directory 0700 and its files 0600 whatever the umask', async () => {
    const dir = await warehouseTempDir('cybs-wh-mode-');
    const previous = process.umask(0);
    try {
      const path = join(dir, 'warehouse');
      const warehouse = await openWarehouse({ path });
      await migrateToLatest(warehouse.db);
      await warehouse.db.executeQuery(sql`create table public.t (x int)`.compile(warehouse.db));
      expect(await openModes(path)).toEqual([]);
      await warehouse.close();
      expect(await openModes(path)).toEqual([]);
    } finally {
      process.umask(previous);
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('the embedded warehouse refuses what it cannot open, in one sentence', () => {
  it('a data directory of an earlier cybs-etl (PGlite, PostgreSQL 17): says to move it away', async () => {
    const dir = await warehouseTempDir('cybs-wh-old-');
    try {
      const path = join(dir, 'warehouse');
      await mkdir(path, { mode: 0o700 });
      await writeFile(join(path, 'PG_VERSION'), '17\n');
      await expect(openWarehouse({ path })).rejects.toThrow(
        /^Cannot open the embedded warehouse at .*: its files are PostgreSQL 17's \(written by an earlier cybs-etl, whose embedded warehouse was PGlite\).*move the directory away/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a directory that holds other files: says to choose a new or empty one', async () => {
    const dir = await warehouseTempDir('cybs-wh-other-');
    try {
      const path = join(dir, 'warehouse');
      await mkdir(path, { mode: 0o700 });
      await writeFile(join(path, 'notes.txt'), 'mine');
      await expect(openWarehouse({ path })).rejects.toThrow(
        `Cannot open the embedded warehouse at ${path}: it holds files but no PostgreSQL data directory; set warehouse.path to a new or empty directory`,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it.runIf(process.getuid?.() === 0)(
    'as root, a directory above it that the server user cannot enter: names it and the fix',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'cybs-wh-closed-'));
      try {
        await expect(openWarehouse({ path: join(dir, 'warehouse') })).rejects.toThrow(
          `cybs-etl runs as root, so PostgreSQL runs as user postgres, who cannot enter ${dir}; give it search permission (chmod o+x ${dir})`,
        );
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});
