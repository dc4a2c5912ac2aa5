/**
 * A re-load of the very source the window's last load read (LoadWindowOptions.state with
 * skipIfUnchanged) writes nothing when the tables still hold what that load left, and is otherwise
 * an ordinary load. Each case runs the same steps on two warehouses: the reference re-loads by
 * reading the source again, the other may recognise the source; their tables, rejects, results and
 * failures must be the same, whatever happened to the tables in between.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadWindow } from '../../src/load/window/load-window.js';
import type { LoadedState, LoadWindowResult } from '../../src/load/window/load-window.js';
import type { SourceColumn, TableDecl } from '../../src/load/table-spec.js';
import type { LoadValue } from '../../src/copy-text/bodies.js';
import type { Warehouse } from '../../src/warehouse/warehouse.js';
import { generatedSource, insertRuns, warehouseBackends } from '../helpers/load.js';
import type { SourceItem } from '../helpers/load.js';

const ORG = 'org_1';

function decl(name: string): TableDecl {
  return {
    schema: 'cybs',
    name,
    description: 'Test transactions.',
    columns: [
      { name: 'request_id', pgType: 'text', description: 'Request id.' },
      { name: 'amount', pgType: 'numeric(12,2)', description: 'Amount.' },
      { name: 'currency', pgType: 'text' },
    ],
    naturalKey: ['_organization_id', 'request_id'],
    keyDescription: 'A request id identifies one transaction.',
  };
}

const COLUMNS: SourceColumn[] = [
  { name: 'request_id', pgType: 'text' },
  { name: 'amount', pgType: 'numeric(12,2)' },
  { name: 'currency', pgType: 'text' },
];

const id = (i: number) => `80000000000000000000${String(i).padStart(4, '0')}`;

/** 60 records, two of them rejected by the parser, one key twice (the later record wins, the earlier one is a reject). */
function items(amountOf: (i: number) => string = (i) => `${i}.25`): (SourceItem | LoadValue[])[] {
  const out: (SourceItem | LoadValue[])[] = [];
  for (let i = 1; i <= 60; i++) {
    if (i === 7 || i === 31) {
      out.push({
        reject: { recordNumber: i, raw: `bad line ${i}`, code: 'PARSE_BAD_VALUE', message: `bad ${i}` },
      });
    } else {
      out.push([id(i === 44 ? 43 : i), amountOf(i), 'USD'] as LoadValue[]);
    }
  }
  return out;
}

interface Side {
  warehouse: Warehouse;
  cleanup: () => Promise<void>;
  runs: number[];
  /** The state each window's last load left. */
  states: Map<string, LoadedState>;
}

describe.each(warehouseBackends('unch').map(([name, open]) => [name, open] as const))(
  'a re-load of an unchanged source on %s',
  (_backend, open) => {
    let reference: Side;
    let recognising: Side;

    const openSide = async (): Promise<Side> => {
      const opened = await open();
      const runs = await insertRuns(opened.warehouse.db, 3);
      return { ...opened, runs, states: new Map() };
    };

    beforeAll(async () => {
      reference = await openSide();
      recognising = await openSide();
    });
    afterAll(async () => {
      await reference?.cleanup();
      await recognising?.cleanup();
    });

    type Outcome =
      { result: Omit<LoadWindowResult, 'state' | 'unchanged'>; unchanged: boolean } | { error: string };

    /** One load of `window` from `source` into `table`, keeping its state; `skip` on the recognising side only. */
    async function load(
      side: Side,
      table: string,
      window: string,
      run: number,
      source: () => (SourceItem | LoadValue[])[],
      options: { skip?: boolean; sourceName?: string; rejectThreshold?: number } = {},
    ): Promise<Outcome> {
      const previous = side.states.get(window);
      try {
        const result = await loadWindow(side.warehouse, {
          window: { pipeline: 'test', organizationId: ORG, windowKey: window },
          targets: [
            {
              table: decl(table),
              source: generatedSource(options.sourceName ?? `report/${window}`, COLUMNS, source(), 16),
            },
          ],
          runId: side.runs[run]!,
          rejectThreshold: options.rejectThreshold ?? 0.1,
          state: { previous, skipIfUnchanged: options.skip === true && side === recognising },
        });
        side.states.set(window, result.state!);
        const { state: _state, unchanged, ...rest } = result;
        return { result: rest, unchanged: unchanged === true };
      } catch (error) {
        return { error: `${(error as { code?: string }).code}: ${(error as Error).message}` };
      }
    }

    /** The same load on both sides; the recognising side may recognise the source. */
    async function both(
      table: string,
      window: string,
      run: number,
      source: () => (SourceItem | LoadValue[])[],
      options: { skip?: boolean; sourceName?: string; rejectThreshold?: number } = {},
    ): Promise<{ reference: Outcome; recognising: Outcome }> {
      return {
        reference: await load(reference, table, window, run, source, options),
        recognising: await load(recognising, table, window, run, source, options),
      };
    }

    async function onBoth(statement: string): Promise<void> {
      for (const side of [reference, recognising]) await sql.raw(statement).execute(side.warehouse.db);
    }

    /** The table (every column but `_loaded_at`, compared on its own side) and the window's rejects. */
    async function contents(side: Side, table: string, window: string) {
      const rows = await sql<Record<string, unknown>>`
        select *, _loaded_at::text as _loaded_at from ${sql.id('cybs', table)}
         order by request_id`.execute(side.warehouse.db);
      const rejects = await sql<Record<string, unknown>>`
        select source, record_number::int as record_number, raw_text, error_code, message, run_id::int as run_id
          from etl.rejects where window_key = ${window} order by record_number`.execute(side.warehouse.db);
      return { rows: rows.rows, rejects: rejects.rows };
    }

    /** Both sides hold the same, apart from `_loaded_at`, which stays as each side had it before. */
    async function expectSameContents(table: string, window: string, loadedAtBefore?: Map<Side, unknown[]>) {
      const r = await contents(reference, table, window);
      const s = await contents(recognising, table, window);
      const withoutLoadedAt = (rows: Record<string, unknown>[]) =>
        rows.map(({ _loaded_at: _omit, ...rest }) => rest);
      expect(withoutLoadedAt(s.rows)).toEqual(withoutLoadedAt(r.rows));
      expect(s.rejects).toEqual(r.rejects);
      if (loadedAtBefore) {
        expect(r.rows.map((x) => x['_loaded_at'])).toEqual(loadedAtBefore.get(reference));
        expect(s.rows.map((x) => x['_loaded_at'])).toEqual(loadedAtBefore.get(recognising));
      }
    }

    async function loadedAt(table: string): Promise<Map<Side, unknown[]>> {
      const out = new Map<Side, unknown[]>();
      for (const side of [reference, recognising]) {
        out.set(
          side,
          (await contents(side, table, '')).rows.map((x) => x['_loaded_at']),
        );
      }
      return out;
    }

    function outcomeWithout(o: Outcome) {
      return 'error' in o ? o : o.result;
    }

    it('recognised: nothing written, and the same rows, rejects, result and window state as reading it again', async () => {
      const first = await both('same', 'w-same', 0, items);
      expect(first.recognising).toEqual(first.reference);
      const before = await loadedAt('same');
      const again = await both('same', 'w-same', 1, items, { skip: true });
      expect(again.reference).toMatchObject({ unchanged: false });
      expect(again.recognising).toMatchObject({ unchanged: true });
      expect(outcomeWithout(again.recognising)).toEqual(outcomeWithout(again.reference));
      expect(outcomeWithout(again.recognising)).toMatchObject({
        rowsLoaded: 57,
        rowsRejected: 3,
        tables: [
          { inserted: 0, updated: 0, unchanged: 57, deleted: 0, staged: 57, duplicates: 1, rejected: 3 },
        ],
      });
      // The rejects are this run's on both sides.
      await expectSameContents('same', 'w-same', before);
      expect((await contents(recognising, 'same', 'w-same')).rejects.map((r) => r['run_id'])).toEqual([
        recognising.runs[1],
        recognising.runs[1],
        recognising.runs[1],
      ]);
      // And again: a recognised load leaves the state it found.
      const third = await both('same', 'w-same', 2, items, { skip: true });
      expect(third.recognising).toMatchObject({ unchanged: true });
      expect(outcomeWithout(third.recognising)).toEqual(outcomeWithout(third.reference));
      await expectSameContents('same', 'w-same', before);
    });

    const tamperings: [string, (table: string, window: string) => Promise<void>][] = [
      [
        'a value changed by hand',
        (t) => onBoth(`update cybs.${t} set amount = 999 where request_id = '${id(5)}'`),
      ],
      [
        'a row rewritten by hand to the same values',
        (t) => onBoth(`update cybs.${t} set amount = amount where request_id = '${id(5)}'`),
      ],
      ['a row deleted by hand', (t) => onBoth(`delete from cybs.${t} where request_id = '${id(9)}'`)],
      [
        'a row of the source added by hand',
        (t, w) =>
          onBoth(
            `insert into cybs.${t} (request_id, amount, currency, _organization_id, _source, _source_row, _source_key)
             select '${id(900)}', 1, 'EUR', '${ORG}', 'report/${w}', 900, source_key
               from etl.sources where organization_id = '${ORG}' and source = 'report/${w}'`,
          ),
      ],
      [
        'a row taken over by another window’s source',
        async (t) => {
          const other = await both(t, `${t}-other`, 0, () => [[id(12), '12.99', 'EUR'] as LoadValue[]]);
          expect(other.recognising).toEqual(other.reference);
        },
      ],
      [
        'the window’s rejects deleted by hand',
        (_t, w) => onBoth(`delete from etl.rejects where window_key = '${w}'`),
      ],
      ['a column dropped by hand', (t) => onBoth(`alter table cybs.${t} drop column currency`)],
      ['a column added by hand', (t) => onBoth(`alter table cybs.${t} add column note text`)],
    ];

    it.each(tamperings)('not recognised after %s: loaded as by reading it again', async (_name, tamper) => {
      const table = `t_${tamperings.findIndex(([n]) => n === _name)}`;
      const window = `w-${table}`;
      const first = await both(table, window, 0, items);
      expect(first.recognising).toEqual(first.reference);
      await tamper(table, window);
      const again = await both(table, window, 1, items, { skip: true });
      expect(again.recognising).toMatchObject({ unchanged: false });
      expect(outcomeWithout(again.recognising)).toEqual(outcomeWithout(again.reference));
      await expectSameContents(table, window);
      // Then the tables hold what this load left: recognised again.
      const third = await both(table, window, 2, items, { skip: true });
      expect(third.recognising).toMatchObject({ unchanged: true });
      expect(outcomeWithout(third.recognising)).toEqual(outcomeWithout(third.reference));
      await expectSameContents(table, window);
    });

    it('not recognised for other targets than the last load’s (another source name)', async () => {
      await both('renamed', 'w-renamed', 0, items);
      const again = await both('renamed', 'w-renamed', 1, items, {
        skip: true,
        sourceName: 'report/elsewhere',
      });
      expect(again.recognising).toMatchObject({ unchanged: false });
      expect(outcomeWithout(again.recognising)).toEqual(outcomeWithout(again.reference));
      await expectSameContents('renamed', 'w-renamed');
    });

    it('rows frozen by VACUUM FREEZE are still the last load’s', async () => {
      await both('frozen', 'w-frozen', 0, items);
      await onBoth('vacuum (freeze) cybs.frozen');
      const again = await both('frozen', 'w-frozen', 1, items, { skip: true });
      expect(again.recognising).toMatchObject({ unchanged: true });
      expect(outcomeWithout(again.recognising)).toEqual(outcomeWithout(again.reference));
      await expectSameContents('frozen', 'w-frozen');
    });

    it('a reject threshold the window no longer meets fails it, as reading it again does', async () => {
      await both('strict', 'w-strict', 0, items);
      const again = await both('strict', 'w-strict', 1, items, { skip: true, rejectThreshold: 0.01 });
      expect(again.reference).toMatchObject({ error: expect.stringContaining('LOAD_REJECT_THRESHOLD') });
      expect(again.recognising).toEqual(again.reference);
      await expectSameContents('strict', 'w-strict');
    });

    it('re-loaded with changes many times: still recognised; its writers are the ones its rows carry', async () => {
      await both('often', 'w-often', 0, items);
      const round = (r: number) => () => items((i) => (i === (r % 50) + 1 ? `${r}.75` : `${i}.25`));
      for (let r = 1; r <= 12; r++) {
        const step = await both('often', 'w-often', r % 3, round(r));
        expect(outcomeWithout(step.recognising)).toEqual(outcomeWithout(step.reference));
        expect(step.recognising).toMatchObject({ unchanged: false });
      }
      const again = await both('often', 'w-often', 0, round(12), { skip: true });
      expect(again.recognising).toMatchObject({ unchanged: true });
      expect(outcomeWithout(again.recognising)).toEqual(outcomeWithout(again.reference));
      await expectSameContents('often', 'w-often');
      const present = await sql<{ x: string }>`
        select distinct xmin::text as x from cybs.often order by 1`.execute(recognising.warehouse.db);
      const writers = recognising.states.get('w-often')!.writers.map((w) => String(BigInt(w) % (1n << 32n)));
      expect(writers.sort()).toEqual(present.rows.map((r) => r.x).sort());
    });
  },
);
