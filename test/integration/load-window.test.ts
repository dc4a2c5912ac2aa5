import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CybsError } from '../../src/errors.js';
import { loadWindowThen } from '../helpers/load-then.js';
import type { LoadWindowOptions, LoadWindowResult } from '../../src/load/window/load-window.js';
import type { SourceColumn, TableDecl } from '../../src/load/table-spec.js';
import type { LoadValue } from '../../src/copy-text/bodies.js';
import type { Db, Warehouse } from '../../src/warehouse/warehouse.js';
import { count, generatedSource, warehouseBackends } from '../helpers/load.js';
import { declaredIndexes, indexOidsOf, indexesOf } from '../helpers/indexes.js';
import { ensureTable } from '../../src/load/ddl.js';
import type { SourceItem } from '../helpers/load.js';

const ORG = 'org_1';

function txnDecl(name: string): TableDecl {
  return {
    schema: 'cybs',
    name,
    description: 'Test transactions.',
    columns: [
      { name: 'request_id', pgType: 'text', description: 'Request id (22–26 digits).' },
      { name: 'amount', pgType: 'numeric(12,2)', description: 'Amount.' },
      { name: 'currency', pgType: 'text' },
      { name: 'happened_at', pgType: 'timestamptz' },
      { name: 'ok', pgType: 'boolean' },
    ],
    naturalKey: ['_organization_id', 'request_id'],
    keyDescription: 'A request id identifies one transaction.',
  };
}

const TXN_COLUMNS: SourceColumn[] = [
  { name: 'request_id', pgType: 'text' },
  { name: 'amount', pgType: 'numeric(12,2)' },
  { name: 'currency', pgType: 'text' },
  { name: 'happened_at', pgType: 'timestamptz' },
  { name: 'ok', pgType: 'boolean' },
];

function requestId(i: number): string {
  return `70000000000000000000${String(i).padStart(4, '0')}`;
}

function txnRow(i: number, amount = `${i}.50`): LoadValue[] {
  return [requestId(i), amount, 'USD', `2026-11-20T10:${String(i % 60).padStart(2, '0')}:00Z`, i % 2 === 0];
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, k) => from + k);
}

interface Snapshot {
  request_id: string;
  amount: string | null;
  currency: string | null;
  happened_at: string | null;
  ok: boolean | null;
  _organization_id: string;
  _source: string;
  _source_row: number;
  _run_id: number | null;
  _loaded_at: string;
}

async function snapshot(db: Db, table: string): Promise<Snapshot[]> {
  const r = await sql<Snapshot>`
    select request_id, amount::text as amount, currency,
           to_char(happened_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as happened_at, ok,
           _organization_id, _source, _source_row::int as _source_row, _run_id::int as _run_id,
           _loaded_at::text as _loaded_at
      from ${sql.id('cybs', table)} order by request_id`.execute(db);
  return r.rows;
}

function tableResult(result: LoadWindowResult, name: string) {
  const t = result.tables.find((x) => x.table === `cybs.${name}`);
  if (!t) throw new Error(`no result for ${name}`);
  return t;
}

describe.each(warehouseBackends('lw'))('loadWindow on %s', (_backend, open) => {
  let warehouse: Warehouse;
  let cleanup: () => Promise<void>;
  let run1: number;
  let run2: number;
  let run3: number;

  /** A window load; `then` runs in its transaction after the data (as the window's state is written). */
  const load = (
    options: Partial<LoadWindowOptions> & Pick<LoadWindowOptions, 'targets'>,
    then?: (trx: Db, result: LoadWindowResult) => Promise<void>,
  ) =>
    loadWindowThen(
      warehouse,
      {
        window: { pipeline: 'test', organizationId: ORG, windowKey: '2026-11-20' },
        runId: run1,
        ...options,
      },
      then,
    );

  beforeAll(async () => {
    ({ warehouse, cleanup } = await open());
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await sql<{
        id: string;
      }>`insert into etl.runs (command) values ('test') returning id`.execute(warehouse.db);
      ids.push(Number(r.rows[0]!.id));
    }
    [run1, run2, run3] = ids as [number, number, number];
  });
  afterAll(async () => cleanup());

  it('loads a source, then an identical re-load writes nothing and keeps _run_id and _loaded_at', async () => {
    const decl = txnDecl('reload');
    const source = () =>
      generatedSource(
        'report-2026-11-20',
        TXN_COLUMNS,
        range(1, 100).map((i) => txnRow(i)),
        30,
      );
    const first = await load({ targets: [{ table: decl, source: source() }], runId: run1 });
    expect(tableResult(first, 'reload')).toMatchObject({
      inserted: 100,
      updated: 0,
      unchanged: 0,
      deleted: 0,
      rejected: 0,
      staged: 100,
      duplicates: 0,
    });
    expect(first.rowsLoaded).toBe(100);
    expect(first.rowsRejected).toBe(0);
    const before = await snapshot(warehouse.db, 'reload');
    expect(before).toHaveLength(100);
    expect(before[0]).toMatchObject({
      request_id: requestId(1),
      amount: '1.50',
      currency: 'USD',
      happened_at: '2026-11-20T10:01:00Z',
      ok: false,
      _organization_id: ORG,
      _source: 'report-2026-11-20',
      _source_row: 1,
      _run_id: run1,
    });

    const second = await load({ targets: [{ table: decl, source: source() }], runId: run2 });
    expect(tableResult(second, 'reload')).toMatchObject({
      inserted: 0,
      updated: 0,
      unchanged: 100,
      deleted: 0,
    });
    expect(await snapshot(warehouse.db, 'reload')).toEqual(before);
  });

  it('a first load into a table made beforehand (as migrate makes them) builds its indexes after its rows; a later load leaves them', async () => {
    const decl = txnDecl('made_before');
    await ensureTable(warehouse.db, decl);
    const indexOids = () => indexOidsOf(warehouse.db, decl);
    const made = await indexOids();
    expect(made.map((i) => i.name)).toEqual(declaredIndexes(decl).map((i) => i.name));
    const rows = (from: number, to: number) =>
      generatedSource(
        `report-made-before-${from}`,
        TXN_COLUMNS,
        range(from, to).map((i) => txnRow(i)),
        30,
      );
    const first = await load({ targets: [{ table: decl, source: rows(1, 100) }], runId: run1 });
    expect(tableResult(first, 'made_before')).toMatchObject({ inserted: 100, rejected: 0 });
    // Dropped and built again over the rows: new indexes of the same names and shape.
    const built = await indexOids();
    expect(built.map((i) => i.name)).toEqual(made.map((i) => i.name));
    for (const [k, index] of built.entries()) expect(index.oid).not.toBe(made[k]!.oid);
    expect(await indexesOf(warehouse.db, decl)).toEqual(declaredIndexes(decl));
    // Another window into the table, which now has rows: its indexes are the same ones.
    const later = await loadWindowThen(warehouse, {
      window: { pipeline: 'test', organizationId: ORG, windowKey: '2026-11-21' },
      runId: run2,
      targets: [{ table: decl, source: rows(101, 150) }],
    });
    expect(tableResult(later, 'made_before')).toMatchObject({ inserted: 50 });
    expect(await indexOids()).toEqual(built);
    expect(await count(warehouse.db, 'cybs.made_before')).toBe(150);
  });

  it('a first load of two tables made beforehand builds the indexes of both after the rows, or of neither when one has a row', async () => {
    const decls = [txnDecl('made_before_a'), txnDecl('made_before_b')];
    for (const decl of decls) await ensureTable(warehouse.db, decl);
    const oids = async () => Promise.all(decls.map((decl) => indexOidsOf(warehouse.db, decl)));
    const rows = (name: string, from: number) =>
      generatedSource(
        `report-${name}-${from}`,
        TXN_COLUMNS,
        range(from, from + 39).map((i) => txnRow(i)),
        30,
      );
    const loadBoth = async (from: number, windowKey: string) => {
      const result = await loadWindowThen(warehouse, {
        window: { pipeline: 'test', organizationId: ORG, windowKey },
        runId: run1,
        targets: decls.map((decl) => ({ table: decl, source: rows(decl.name, from) })),
      });
      for (const decl of decls)
        expect(tableResult(result, decl.name)).toMatchObject({ inserted: 40, rejected: 0 });
    };
    const made = await oids();
    await loadBoth(1, 'two-tables-1');
    const built = await oids();
    for (const [t, indexes] of built.entries()) {
      expect(indexes.map((i) => i.name)).toEqual(made[t]!.map((i) => i.name));
      for (const [k, index] of indexes.entries()) expect(index.oid).not.toBe(made[t]![k]!.oid);
      expect(await indexesOf(warehouse.db, decls[t]!)).toEqual(declaredIndexes(decls[t]!));
    }
    // Both emptied by hand but for one row of the second: neither table's indexes are dropped.
    await sql`delete from cybs.made_before_a`.execute(warehouse.db);
    await sql`delete from cybs.made_before_b where _source_row > 1`.execute(warehouse.db);
    await loadBoth(101, 'two-tables-2');
    expect(await oids()).toEqual(built);
  });

  it('a corrected source updates changed rows and deletes vanished ones', async () => {
    const decl = txnDecl('corrected');
    await load({
      targets: [
        {
          table: decl,
          source: generatedSource(
            'r1',
            TXN_COLUMNS,
            range(1, 100).map((i) => txnRow(i)),
          ),
        },
      ],
    });
    // Rows 1..5 change their amount, 91..100 vanish, 6..90 stay as they were (same lines).
    const corrected = range(1, 90).map((i) => (i <= 5 ? txnRow(i, `${i}.99`) : txnRow(i)));
    const result = await load({
      targets: [{ table: decl, source: generatedSource('r1', TXN_COLUMNS, corrected) }],
      runId: run2,
    });
    expect(tableResult(result, 'corrected')).toMatchObject({
      inserted: 0,
      updated: 5,
      unchanged: 85,
      deleted: 10,
    });
    const after = await snapshot(warehouse.db, 'corrected');
    expect(after).toHaveLength(90);
    expect(after[0]).toMatchObject({ amount: '1.99', _run_id: run2 });
    expect(after[10]).toMatchObject({ amount: '11.50', _run_id: run1 });
  });

  it('sources sharing keys: the last writer owns the row and only the own source’s rows vanish', async () => {
    const decl = txnDecl('shared');
    await load({
      targets: [
        {
          table: decl,
          source: generatedSource(
            'day-1',
            TXN_COLUMNS,
            range(1, 90).map((i) => txnRow(i)),
          ),
        },
      ],
    });
    const dayTwo = await load({
      window: { pipeline: 'test', organizationId: ORG, windowKey: '2026-11-21' },
      targets: [
        {
          table: decl,
          source: generatedSource(
            'day-2',
            TXN_COLUMNS,
            range(50, 120).map((i) => ({ values: txnRow(i), recordNumber: i })),
          ),
        },
      ],
    });
    // 50..90 existed (owned by day-1, same data, same line numbers): taken over, so rewritten.
    expect(tableResult(dayTwo, 'shared')).toMatchObject({
      inserted: 30,
      updated: 41,
      unchanged: 0,
      deleted: 0,
    });
    const owners = async () =>
      (
        await sql<{ _source: string; n: string }>`
          select _source, count(*)::bigint as n from cybs.shared group by 1 order by 1`.execute(warehouse.db)
      ).rows.map((r) => [r._source, Number(r.n)]);
    expect(await owners()).toEqual([
      ['day-1', 49],
      ['day-2', 71],
    ]);
    // Day 1 re-fetched without rows 41..90: only day-1's own rows 41..49 vanish; day-2's 50..90 stay.
    const reload = await load({
      targets: [
        {
          table: decl,
          source: generatedSource(
            'day-1',
            TXN_COLUMNS,
            range(1, 40).map((i) => txnRow(i)),
          ),
        },
      ],
    });
    expect(tableResult(reload, 'shared')).toMatchObject({
      inserted: 0,
      updated: 0,
      unchanged: 40,
      deleted: 9,
    });
    expect(await owners()).toEqual([
      ['day-1', 40],
      ['day-2', 71],
    ]);
    expect(await count(warehouse.db, 'cybs.shared')).toBe(111);
  });

  it('a source that comes back empty loses all its rows (and only its rows)', async () => {
    const decl = txnDecl('emptied');
    await load({
      targets: [
        {
          table: decl,
          source: generatedSource(
            'keep',
            TXN_COLUMNS,
            range(1, 5).map((i) => txnRow(i)),
          ),
        },
      ],
    });
    await load({
      window: { pipeline: 'test', organizationId: ORG, windowKey: 'emptied' },
      targets: [
        {
          table: decl,
          source: generatedSource(
            'gone',
            TXN_COLUMNS,
            range(6, 9).map((i) => txnRow(i)),
          ),
        },
      ],
    });
    let closed = false;
    const empty = {
      kind: 'records' as const,
      source: 'gone',
      columns: TXN_COLUMNS,
      batches: (async function* () {
        try {
          yield { records: [], rejects: [] };
        } finally {
          closed = true;
        }
      })(),
    };
    const result = await load({
      window: { pipeline: 'test', organizationId: ORG, windowKey: 'emptied' },
      targets: [{ table: decl, source: empty }],
    });
    expect(closed).toBe(true);
    expect(tableResult(result, 'emptied')).toMatchObject({
      inserted: 0,
      unchanged: 0,
      deleted: 4,
      staged: 0,
    });
    expect(await count(warehouse.db, 'cybs.emptied')).toBe(5);
  });

  it('duplicate keys within one source: the last occurrence wins, the earlier ones are rejects', async () => {
    const decl = txnDecl('dups');
    const items = [
      txnRow(1, '1.00'),
      txnRow(2, '2.00'),
      txnRow(1, '1.11'),
      txnRow(3, '3.00'),
      txnRow(1, '1.22'),
    ];
    const result = await load({
      window: { pipeline: 'test', organizationId: ORG, windowKey: 'dups' },
      targets: [{ table: decl, source: generatedSource('d', TXN_COLUMNS, items, 2) }],
      rejectThreshold: 1,
    });
    expect(tableResult(result, 'dups')).toMatchObject({ inserted: 3, staged: 3, duplicates: 2, rejected: 2 });
    expect(result).toMatchObject({ rowsLoaded: 3, rowsRejected: 2 });
    const rejects = await sql<Record<string, unknown>>`
      select source, record_number::int as record_number, raw_text, error_code, message
        from etl.rejects where window_key = 'dups' order by record_number`.execute(warehouse.db);
    expect(rejects.rows).toEqual(
      [
        [1, '1.00'],
        [3, '1.11'],
      ].map(([line, amount]) =>
        expect.objectContaining({
          source: 'd',
          record_number: line,
          // The staged values as a JSON object (a timestamp as PostgreSQL writes it).
          raw_text: expect.stringMatching(
            new RegExp(
              `^\\{.*"amount": ${String(amount).replace('.', '\\.')},.*"request_id": "${requestId(1)}".*\\}$`,
            ),
          ),
          error_code: 'LOAD_DUPLICATE_KEY',
          message: expect.stringContaining(
            `record ${line}: its natural key in cybs.dups (request_id=${requestId(1)}) is repeated by record 5`,
          ),
        }),
      ),
    );
    const rows = await snapshot(warehouse.db, 'dups');
    expect(rows.map((r) => [r.request_id, r.amount, r._source_row])).toEqual([
      [requestId(1), '1.22', 5],
      [requestId(2), '2.00', 2],
      [requestId(3), '3.00', 4],
    ]);
  });

  it('re-loads of a source with a key twice: the last occurrence still wins', async () => {
    const decl = txnDecl('dups_reload');
    const items = (first: string) => [
      txnRow(1, first),
      txnRow(2, '2.00'),
      txnRow(1, '1.22'),
      txnRow(3, '3.00'),
    ];
    const reload = (first: string, runId: number) =>
      load({
        targets: [{ table: decl, source: generatedSource('d', TXN_COLUMNS, items(first), 2) }],
        runId,
        rejectThreshold: 1,
      });
    const rows = async () =>
      (await snapshot(warehouse.db, 'dups_reload')).map((r) => [
        r.request_id,
        r.amount,
        r._source_row,
        r._run_id,
      ]);
    await reload('1.00', run1);
    const loaded = [
      [requestId(1), '1.22', 3, run1],
      [requestId(2), '2.00', 2, run1],
      [requestId(3), '3.00', 4, run1],
    ];
    expect(await rows()).toEqual(loaded);
    // Identical: the row of key 1 equals its last occurrence, not the first one.
    expect(tableResult(await reload('1.00', run2), 'dups_reload')).toMatchObject({
      inserted: 0,
      updated: 0,
      unchanged: 3,
      staged: 3,
      duplicates: 1,
      rejected: 1,
    });
    expect(await rows()).toEqual(loaded);
    // Only the overridden first occurrence changed: the table's row still equals the last one.
    expect(tableResult(await reload('1.11', run3), 'dups_reload')).toMatchObject({
      inserted: 0,
      updated: 0,
      unchanged: 3,
      staged: 3,
      duplicates: 1,
      rejected: 1,
    });
    expect(await rows()).toEqual(loaded);
  });

  it('a re-load that changes most rows, with a key twice: every change lands, the last occurrence wins', async () => {
    const decl = txnDecl('most_changed');
    const items = (amount: (i: number) => string) => [
      ...range(1, 10).map((i) => txnRow(i, amount(i))),
      txnRow(1, '1.99'),
    ];
    const reload = (amount: (i: number) => string, runId: number) =>
      load({
        targets: [{ table: decl, source: generatedSource('m', TXN_COLUMNS, items(amount), 3) }],
        runId,
        rejectThreshold: 1,
      });
    await reload((i) => `${i}.50`, run1);
    const result = await reload((i) => `${i}.75`, run2);
    expect(tableResult(result, 'most_changed')).toMatchObject({
      inserted: 0,
      updated: 9,
      unchanged: 1,
      staged: 10,
      duplicates: 1,
      rejected: 1,
    });
    const rows = await snapshot(warehouse.db, 'most_changed');
    expect(rows.map((r) => [r.request_id, r.amount, r._source_row])).toEqual([
      [requestId(1), '1.99', 11],
      ...range(2, 10).map((i) => [requestId(i), `${i}.75`, i]),
    ]);
  });

  it('a re-load that changes one row rewrites that row only', async () => {
    const decl = txnDecl('one_changed');
    const rows = (changed: string) => range(1, 50).map((i) => (i === 7 ? txnRow(i, changed) : txnRow(i)));
    await load({ targets: [{ table: decl, source: generatedSource('s', TXN_COLUMNS, rows('7.50'), 20) }] });
    const before = await snapshot(warehouse.db, 'one_changed');
    const result = await load({
      targets: [{ table: decl, source: generatedSource('s', TXN_COLUMNS, rows('7.77'), 20) }],
      runId: run2,
    });
    expect(tableResult(result, 'one_changed')).toMatchObject({
      inserted: 0,
      updated: 1,
      unchanged: 49,
      deleted: 0,
      duplicates: 0,
    });
    const after = await snapshot(warehouse.db, 'one_changed');
    expect(after[6]).toMatchObject({ request_id: requestId(7), amount: '7.77', _run_id: run2 });
    expect(after.filter((_, i) => i !== 6)).toEqual(before.filter((_, i) => i !== 6));
  });

  it('round-trips text that needs COPY escaping', async () => {
    const decl = txnDecl('escaping');
    const texts = [
      'tab\there',
      'new\nline',
      'cr\rhere',
      'back\\slash',
      '\\N',
      '\\.',
      'ünïcødé ✓ 🚀',
      '',
      'quote \' "',
    ];
    const items = texts.map((text, k) => [requestId(k), '1.00', text, null, null] as LoadValue[]);
    await load({ targets: [{ table: decl, source: generatedSource('e', TXN_COLUMNS, items) }] });
    const rows = await snapshot(warehouse.db, 'escaping');
    expect(rows.map((r) => r.currency)).toEqual(texts);
    expect(rows.every((r) => r.happened_at === null && r.ok === null)).toBe(true);
  });

  it('a new source column is added and recorded in etl.schema_changes, in the load transaction', async () => {
    const decl = txnDecl('evolve');
    await load({
      targets: [
        {
          table: decl,
          source: generatedSource(
            'v1',
            TXN_COLUMNS,
            range(1, 10).map((i) => txnRow(i)),
          ),
        },
      ],
    });
    const columns: SourceColumn[] = [
      ...TXN_COLUMNS,
      { name: 'Brand New Header', pgType: 'text', unknown: true },
      { name: 'fee', pgType: 'numeric', description: 'A fee from the catalog.' },
    ];
    const result = await load({
      window: { pipeline: 'test', organizationId: ORG, windowKey: '2026-11-21' },
      runId: run2,
      targets: [
        {
          table: decl,
          source: generatedSource(
            'v2',
            columns,
            range(11, 20).map((i) => [...txnRow(i), `x${i}`, `0.${i}`]),
          ),
        },
      ],
    });
    expect(tableResult(result, 'evolve').columnsAdded).toEqual(['Brand New Header', 'fee']);
    const changes = await sql<Record<string, unknown>>`
      select table_schema, table_name, column_name, column_type, change, source, pipeline, run_id::int as run_id
        from etl.schema_changes where table_name = 'evolve' order by id`.execute(warehouse.db);
    expect(changes.rows).toEqual([
      {
        table_schema: 'cybs',
        table_name: 'evolve',
        column_name: 'Brand New Header',
        column_type: 'text',
        change: 'add_column',
        source: 'v2',
        pipeline: 'test',
        run_id: run2,
      },
      expect.objectContaining({ column_name: 'fee', column_type: 'numeric' }),
    ]);
    const values = await sql<{ h: string | null; fee: string | null }>`
      select "Brand New Header" as h, fee::text as fee from cybs.evolve order by request_id`.execute(
      warehouse.db,
    );
    expect(values.rows.slice(9, 11)).toEqual([
      { h: null, fee: null },
      { h: 'x11', fee: '0.11' },
    ]);
    const comment = await sql<{ c: string }>`
      select col_description('cybs.evolve'::regclass, attnum) as c from pg_attribute
       where attrelid = 'cybs.evolve'::regclass and attname = 'fee'`.execute(warehouse.db);
    expect(comment.rows[0]!.c).toBe('A fee from the catalog.');
    // Loading v2 again adds nothing more.
    const again = await load({
      window: { pipeline: 'test', organizationId: ORG, windowKey: '2026-11-21' },
      targets: [
        {
          table: decl,
          source: generatedSource(
            'v2',
            columns,
            range(11, 20).map((i) => [...txnRow(i), `x${i}`, `0.${i}`]),
          ),
        },
      ],
    });
    expect(tableResult(again, 'evolve')).toMatchObject({ columnsAdded: [], unchanged: 10 });
    expect(await count(warehouse.db, 'etl.schema_changes', `table_name = 'evolve'`)).toBe(2);
  });

  it('a value that does not fit its existing column is a reject, not a schema change', async () => {
    const decl = txnDecl('mismatch');
    await load({
      targets: [
        {
          table: decl,
          source: generatedSource(
            'm1',
            TXN_COLUMNS,
            range(1, 10).map((i) => txnRow(i)),
          ),
        },
      ],
    });
    // A later file whose header for `amount` is not in the catalog: typed text by the parser.
    const columns = TXN_COLUMNS.map((c) =>
      c.name === 'amount' ? { ...c, pgType: 'text', unknown: true } : c,
    );
    const items = range(1, 200).map((i) =>
      i === 7 ? txnRow(i, 'n/a') : i === 8 ? txnRow(i, '') : txnRow(i),
    );
    const result = await load({
      window: { pipeline: 'test', organizationId: ORG, windowKey: 'mismatch' },
      targets: [{ table: decl, source: generatedSource('m2', columns, items) }],
    });
    expect(tableResult(result, 'mismatch')).toMatchObject({ rejected: 1, staged: 199, columnsAdded: [] });
    const rejects = await sql<Record<string, unknown>>`
      select source, record_number::int as record_number, raw_text, error_code, message
        from etl.rejects where window_key = 'mismatch'`.execute(warehouse.db);
    expect(rejects.rows).toEqual([
      expect.objectContaining({
        source: 'm2',
        record_number: 7,
        raw_text: txnRow(7, 'n/a').map(String).join(','),
        error_code: 'LOAD_TYPE_MISMATCH',
        message: expect.stringContaining('numeric(12,2)'),
      }),
    ]);
    const types = await sql<{ t: string }>`
      select format_type(atttypid, atttypmod) as t from pg_attribute
       where attrelid = 'cybs.mismatch'::regclass and attname = 'amount'`.execute(warehouse.db);
    expect(types.rows[0]!.t).toBe('numeric(12,2)');
    const row8 = await sql<{ amount: string | null }>`
      select amount::text as amount from cybs.mismatch where request_id = ${requestId(8)}`.execute(
      warehouse.db,
    );
    expect(row8.rows).toEqual([{ amount: null }]);
  });

  it('rejects under the threshold: the rest loads, rejects keep their raw text, a re-run does not double them', async () => {
    const decl = txnDecl('under');
    const items = (): (SourceItem | LoadValue[])[] => [
      ...range(1, 100).map((i) => txnRow(i)),
      {
        reject: {
          recordNumber: 101,
          raw: 'bad,"line',
          code: 'PARSE_CSV_INVALID',
          message: 'Unclosed quote.',
        },
      },
      [null, '1.00', 'USD', null, null],
      ...range(103, 200).map((i) => txnRow(i)),
    ];
    const windowState = async (trx: Db, result: LoadWindowResult) => {
      await sql`insert into etl.windows (pipeline, organization_id, window_key, window_start, window_end, status,
                                         rows_loaded, rows_rejected)
                values ('test', ${ORG}, 'under', '2026-11-20', '2026-11-21', 'loaded',
                        ${result.rowsLoaded}, ${result.rowsRejected})
                on conflict (pipeline, organization_id, window_key)
                do update set rows_loaded = excluded.rows_loaded, rows_rejected = excluded.rows_rejected`.execute(
        trx,
      );
    };
    for (let attempt = 0; attempt < 2; attempt++) {
      const result = await load(
        {
          window: { pipeline: 'test', organizationId: ORG, windowKey: 'under' },
          targets: [{ table: decl, source: generatedSource('u', TXN_COLUMNS, items(), 7) }],
        },
        windowState,
      );
      // 2 rejects of 200 records = 1%: not more than the threshold.
      expect(result).toMatchObject({ rowsLoaded: 198, rowsRejected: 2 });
    }
    const rejects = await sql<Record<string, unknown>>`
      select record_number::int as record_number, raw_text, error_code, run_id::int as run_id
        from etl.rejects where window_key = 'under' order by record_number`.execute(warehouse.db);
    expect(rejects.rows).toEqual([
      { record_number: 101, raw_text: 'bad,"line', error_code: 'PARSE_CSV_INVALID', run_id: run1 },
      {
        record_number: 102,
        raw_text: 'null,1.00,USD,null,null',
        error_code: 'LOAD_MISSING_KEY',
        run_id: run1,
      },
    ]);
    expect(await count(warehouse.db, 'cybs.under')).toBe(198);
    const state = await sql<{ rows_loaded: string; rows_rejected: string }>`
      select rows_loaded, rows_rejected from etl.windows where window_key = 'under'`.execute(warehouse.db);
    expect(state.rows.map((r) => [Number(r.rows_loaded), Number(r.rows_rejected)])).toEqual([[198, 2]]);
  });

  it('rejects over the threshold: nothing is committed, not the rows, the rejects, the columns or the window state', async () => {
    const decl = txnDecl('over');
    await load({
      window: { pipeline: 'test', organizationId: ORG, windowKey: 'over-0' },
      targets: [
        {
          table: decl,
          source: generatedSource(
            'o0',
            TXN_COLUMNS,
            range(1, 5).map((i) => txnRow(i)),
          ),
        },
      ],
    });
    const columns = [...TXN_COLUMNS, { name: 'extra', pgType: 'text' }];
    const items: (SourceItem | LoadValue[])[] = range(10, 110).map((i) =>
      i % 20 === 0
        ? { reject: { recordNumber: i, raw: `raw ${i}`, code: 'MAP_BAD_VALUE', message: 'Bad amount.' } }
        : [...txnRow(i), 'e'],
    );
    let thenCalled = false;
    const error = await load(
      {
        window: { pipeline: 'test', organizationId: ORG, windowKey: 'over' },
        targets: [{ table: decl, source: generatedSource('o', columns, items) }],
      },
      async (trx) => {
        thenCalled = true;
        await sql`insert into etl.windows (pipeline, organization_id, window_key, window_start, window_end)
                  values ('test', ${ORG}, 'over', '2026-11-20', '2026-11-21')`.execute(trx);
      },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CybsError);
    expect(error).toMatchObject({
      code: 'LOAD_REJECT_THRESHOLD',
      retryable: false,
      context: { rejected: 5, loaded: 96 },
    });
    expect(thenCalled).toBe(false);
    expect(await count(warehouse.db, 'cybs.over')).toBe(5);
    expect(await count(warehouse.db, 'etl.rejects', `window_key = 'over'`)).toBe(0);
    expect(await count(warehouse.db, 'etl.windows', `window_key = 'over'`)).toBe(0);
    expect(await count(warehouse.db, 'etl.schema_changes', `table_name = 'over'`)).toBe(0);
    const extra = await sql`select 1 from information_schema.columns
                             where table_name = 'over' and column_name = 'extra'`.execute(warehouse.db);
    expect(extra.rows).toHaveLength(0);

    // The same window with a higher threshold loads.
    const ok = await load({
      window: { pipeline: 'test', organizationId: ORG, windowKey: 'over' },
      targets: [{ table: decl, source: generatedSource('o', columns, items) }],
      rejectThreshold: 0.1,
    });
    expect(ok).toMatchObject({ rowsLoaded: 96, rowsRejected: 5 });
  });

  it('maxRejects stops the load as soon as the cap is passed', async () => {
    const decl = txnDecl('capped');
    let produced = 0;
    const source = {
      kind: 'records' as const,
      source: 'c',
      columns: TXN_COLUMNS,
      batches: (async function* () {
        for (let b = 0; b < 1000; b++) {
          produced++;
          yield {
            records: [{ recordNumber: b * 2, raw: 'r', values: txnRow(b) }],
            rejects: [{ recordNumber: b * 2 + 1, raw: 'x', code: 'PARSE_X', message: 'bad' }],
          };
        }
      })(),
    };
    const error = await load({ targets: [{ table: decl, source }], maxRejects: 3, rejectThreshold: 1 }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'LOAD_REJECT_THRESHOLD', context: { rejected: 4 } });
    expect(produced).toBe(4);
    const exists = await sql<{ t: unknown }>`select to_regclass('cybs.capped') as t`.execute(warehouse.db);
    expect(exists.rows[0]!.t).toBeNull();
  });

  it('a hostile header becomes a harmless quoted column', async () => {
    await sql`create table if not exists cybs.t (id int)`.execute(warehouse.db);
    await sql`create table if not exists public.t (id int)`.execute(warehouse.db);
    const hostile = 'x"; drop table t; --';
    const decl: TableDecl = {
      schema: 'cybs',
      name: `hostile"; drop table t; --`,
      description: `It's a "test" with a \\ backslash'); drop table t; --`,
      columns: [
        { name: 'id', pgType: 'text', description: `the id'); drop table t; --` },
        { name: hostile, pgType: 'text', description: "E'\\'; drop table t; --" },
      ],
      naturalKey: ['_organization_id', 'id'],
      keyDescription: "One row per id'.",
    };
    const columns: SourceColumn[] = [
      { name: 'id', pgType: 'text' },
      { name: hostile, pgType: 'text' },
      { name: `y"); drop table t; --`, pgType: 'text', unknown: true },
    ];
    const result = await load({
      targets: [
        { table: decl, source: generatedSource(`src'; drop table t; --`, columns, [['1', 'a', 'b']]) },
      ],
    });
    expect(result.tables[0]!.columnsAdded).toEqual([`y"); drop table t; --`]);
    const back = await sql<Record<string, string>>`
      select ${sql.id(hostile)} as h, ${sql.id(`y"); drop table t; --`)} as y, _source
        from ${sql.id('cybs', decl.name)}`.execute(warehouse.db);
    expect(back.rows).toEqual([{ h: 'a', y: 'b', _source: `src'; drop table t; --` }]);
    expect(await count(warehouse.db, 'cybs.t')).toBe(0);
    expect(await count(warehouse.db, 'public.t')).toBe(0);
    const comments = await sql<{ t: string; c: string }>`
      select obj_description(c.oid, 'pg_class') as t, col_description(c.oid, a.attnum) as c
        from pg_class c join pg_attribute a on a.attrelid = c.oid
       where c.relname = ${decl.name} and a.attname = ${hostile}`.execute(warehouse.db);
    expect(comments.rows).toEqual([
      {
        t: `It's a "test" with a \\ backslash'); drop table t; -- Natural key (_organization_id, id): One row per id'.`,
        c: "E'\\'; drop table t; --",
      },
    ]);
  });

  it('several targets commit together, or not at all', async () => {
    const a = txnDecl('multi_a');
    const b: TableDecl = {
      schema: 'cybs',
      name: 'multi_b',
      description: 'Fees without a natural key.',
      columns: [{ name: 'fee', pgType: 'numeric' }],
      naturalKey: ['_organization_id', '_source', '_source_row'],
      keyDescription: 'No natural key: one row per line of the source.',
    };
    const feeColumns: SourceColumn[] = [{ name: 'fee', pgType: 'numeric' }];
    const ok = await load({
      targets: [
        {
          table: a,
          source: generatedSource(
            'pr-1',
            TXN_COLUMNS,
            range(1, 20).map((i) => txnRow(i)),
          ),
        },
        {
          table: b,
          source: generatedSource(
            'pr-1',
            feeColumns,
            range(1, 30).map((i) => [`${i}.1`]),
          ),
        },
      ],
    });
    expect(ok.rowsLoaded).toBe(50);
    expect(ok.tables.map((t) => [t.table, t.inserted])).toEqual([
      ['cybs.multi_a', 20],
      ['cybs.multi_b', 30],
    ]);
    // Re-loading the keyless table identically changes nothing.
    const again = await load({
      targets: [
        {
          table: a,
          source: generatedSource(
            'pr-1',
            TXN_COLUMNS,
            range(1, 20).map((i) => txnRow(i)),
          ),
        },
        {
          table: b,
          source: generatedSource(
            'pr-1',
            feeColumns,
            range(1, 30).map((i) => [`${i}.1`]),
          ),
        },
      ],
    });
    expect(again.tables.map((t) => t.unchanged)).toEqual([20, 30]);

    // Second window: the first table loads fully, the second table's source breaks (a truncated file).
    const truncated = new CybsError('PARSE_CSV_TRUNCATED', 'The file ends inside a record.', {
      stage: 'parse',
    });
    const failed = await load({
      window: { pipeline: 'test', organizationId: ORG, windowKey: '2026-11-22' },
      targets: [
        {
          table: a,
          source: generatedSource(
            'pr-2',
            TXN_COLUMNS,
            range(101, 150).map((i) => txnRow(i)),
          ),
        },
        {
          table: b,
          source: generatedSource(
            'pr-2',
            feeColumns,
            [...range(1, 10).map((i) => [`${i}`]), { throw: truncated }],
            3,
          ),
        },
      ],
    }).catch((e: unknown) => e);
    expect(failed).toBe(truncated);
    expect(await count(warehouse.db, 'cybs.multi_a')).toBe(20);
    expect(await count(warehouse.db, 'cybs.multi_b')).toBe(30);

    // A source failing with a plain Error is reported as LOAD_SOURCE_FAILED; the session stays usable.
    const plain = await load({
      window: { pipeline: 'test', organizationId: ORG, windowKey: '2026-11-22' },
      targets: [
        {
          table: a,
          source: generatedSource('pr-2', TXN_COLUMNS, [txnRow(101), { throw: new Error('socket hang up') }]),
        },
      ],
    }).catch((e: unknown) => e);
    expect(plain).toMatchObject({
      code: 'LOAD_SOURCE_FAILED',
      message: expect.stringContaining('socket hang up'),
    });
    expect(await count(warehouse.db, 'cybs.multi_a')).toBe(20);
  });

  it("a failure of what the caller writes in the window's transaction rolls the whole window back; a success commits with it", async () => {
    const decl = txnDecl('before_commit');
    const items = range(1, 10).map((i) => txnRow(i));
    const failure = await load(
      {
        window: { pipeline: 'test', organizationId: ORG, windowKey: 'bc' },
        targets: [{ table: decl, source: generatedSource('bc', TXN_COLUMNS, items) }],
      },
      async () => {
        throw new CybsError('STATE_LEASE_LOST', 'lease lost', { stage: 'state' });
      },
    ).catch((e: unknown) => e);
    expect(failure).toMatchObject({ code: 'STATE_LEASE_LOST' });
    const exists = await sql<{ t: unknown }>`select to_regclass('cybs.before_commit') as t`.execute(
      warehouse.db,
    );
    expect(exists.rows[0]!.t).toBeNull();

    let seen: LoadWindowResult | undefined;
    await load(
      {
        window: { pipeline: 'test', organizationId: ORG, windowKey: 'bc' },
        runId: run3,
        targets: [{ table: decl, source: generatedSource('bc', TXN_COLUMNS, items) }],
      },
      async (trx, result) => {
        seen = result;
        await sql`insert into etl.windows (pipeline, organization_id, window_key, window_start, window_end,
                                           status, rows_loaded, counts, run_id)
                  values ('test', ${ORG}, 'bc', '2026-11-20', '2026-11-21', 'loaded', ${result.rowsLoaded},
                          ${JSON.stringify(result.tables[0])}::jsonb, ${run3})`.execute(trx);
      },
    );
    expect(seen).toMatchObject({ rowsLoaded: 10, rowsRejected: 0 });
    const w = await sql<{ status: string; inserted: number }>`
      select status, (counts->>'inserted')::int as inserted from etl.windows where window_key = 'bc'`.execute(
      warehouse.db,
    );
    expect(w.rows).toEqual([{ status: 'loaded', inserted: 10 }]);
  });

  it('a value PostgreSQL refuses fails the window naming table, column and record', async () => {
    const decl = txnDecl('refused');
    // A parser bug: `amount` declared numeric but one value is not (record 90000, in a late COPY segment).
    const items = function* () {
      for (let i = 1; i <= 100_000; i++) yield i === 90_000 ? txnRow(i, 'abc') : txnRow(i);
    };
    const error = await load({
      targets: [{ table: decl, source: generatedSource('refused', TXN_COLUMNS, items(), 5000) }],
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'LOAD_COPY_REJECTED',
      context: { table: 'cybs.refused', column: 'amount', recordNumber: 90_000 },
    });
    expect((error as Error).message).toContain('cybs.refused');
    // The warehouse is still usable, and the table was never committed.
    const exists = await sql<{ t: unknown }>`select to_regclass('cybs.refused') as t`.execute(warehouse.db);
    expect(exists.rows[0]!.t).toBeNull();
  });

  it('loads 100k rows over several COPY chunks and segments, with rejects between them', async () => {
    const decl = txnDecl('volume');
    const items = function* (): Generator<SourceItem | LoadValue[]> {
      for (let i = 1; i <= 100_000; i++) {
        if (i % 5000 === 0) {
          yield { reject: { recordNumber: i, raw: `r${i}`, code: 'PARSE_X', message: 'bad' } };
        } else {
          yield [
            requestId(i),
            `${i}.25`,
            `currency with some padding text ${i}`,
            '2026-11-20T00:00:00Z',
            true,
          ];
        }
      }
    };
    const result = await load({
      window: { pipeline: 'test', organizationId: ORG, windowKey: 'volume' },
      targets: [{ table: decl, source: generatedSource('volume', TXN_COLUMNS, items(), 2000) }],
    });
    expect(result).toMatchObject({ rowsLoaded: 99_980, rowsRejected: 20 });
    expect(await count(warehouse.db, 'cybs.volume')).toBe(99_980);
    expect(await count(warehouse.db, 'etl.rejects', `window_key = 'volume'`)).toBe(20);
    const check = await sql<{ n: string }>`
      select count(*)::bigint as n from cybs.volume
       where amount = (_source_row::numeric + 0.25)
         and right(request_id, length(_source_row::text)) = _source_row::text`.execute(warehouse.db);
    expect(Number(check.rows[0]!.n)).toBe(99_980);
  });

  it('two loads of the same window at once are serialised and both succeed', async () => {
    const decl = txnDecl('concurrent');
    await load({
      targets: [{ table: decl, source: generatedSource('c0', TXN_COLUMNS, [txnRow(0)]) }],
    });
    const results = await Promise.all(
      [1, 2].map(() =>
        load({
          window: { pipeline: 'test', organizationId: ORG, windowKey: 'concurrent' },
          targets: [
            {
              table: decl,
              source: generatedSource(
                'c',
                TXN_COLUMNS,
                range(1, 500).map((i) => txnRow(i)),
              ),
            },
          ],
        }),
      ),
    );
    const counts = results.map((r) => [r.tables[0]!.inserted, r.tables[0]!.unchanged]).sort();
    expect(counts).toEqual([
      [0, 500],
      [500, 0],
    ]);
    expect(await count(warehouse.db, 'cybs.concurrent')).toBe(501);
  });
});
