/**
 * A re-load of the very CSV file the window's last load read, after its rows were touched by hand:
 * the rows touched are read again from the file one by one (restoreTouched) when that is certain
 * to end as the full merge does, and the whole file is loaded otherwise. Each case runs the same
 * steps on two warehouses: the reference re-loads by reading the whole file (no state), the other
 * with the window's state; their tables, rejects, results and failures must be the same.
 */
import pino from 'pino';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_PIPELINES } from '../../pipelines/index.js';
import { openRawCsvReport } from '../../src/parse/csv/raw-csv-report.js';
import { loadWindow } from '../../src/load/window/load-window.js';
import type { LoadedState, LoadWindowResult } from '../../src/load/window/load-window.js';
import { recordsOnLines, toRawLoadSource } from '../../src/load/report-sources.js';
import type { Warehouse } from '../../src/warehouse/warehouse.js';
import { chunksOf, insertRuns, warehouseBackends } from '../helpers/load.js';

const ORG = 'org_1';
const REPORT = 'TransactionRequestClass';
const pipeline = REPORT_PIPELINES.find((p) => p.reportDefinitionName === REPORT)!;
const HEADER = 'RequestID,RequestDate,paymentData_amount,paymentData_currencyCode,Rmsg';

const id = (i: number) => `79524800000000${String(i).padStart(8, '0')}`;

/** 40 records (lines 3-42); line 10's amount is refused (a reject); line 20 quotes a comma. */
function csv(options: { amountOf?: (i: number) => string; multiLineAt?: number; eol?: string } = {}): string {
  const eol = options.eol ?? '\n';
  const lines = [
    `${ORG},TransactionRequestReport_Daily,TransactionRequest,1.0,2026-01-01T00:00:00Z to 2026-01-02T00:00:00Z`,
    HEADER,
  ];
  for (let i = 1; i <= 40; i++) {
    const amount = i === 8 ? 'ten' : (options.amountOf?.(i) ?? `${i}.25`);
    const message = i === 18 ? '"done, twice"' : i === options.multiLineAt ? `"two${eol}lines"` : 'ok';
    lines.push(`${id(i)},2026-01-01T08:00:00Z,${amount},USD,${message}`);
  }
  return lines.join(eol) + eol;
}

interface Side {
  warehouse: Warehouse;
  cleanup: () => Promise<void>;
  runs: number[];
  states: Map<string, LoadedState>;
  logs: string[];
}

type Outcome =
  { result: Omit<LoadWindowResult, 'state' | 'unchanged'>; unchanged: boolean } | { error: string };

describe.each(warehouseBackends('tchd').map(([name, open]) => [name, open] as const))(
  'a re-load of a touched window on %s',
  (_backend, open) => {
    let reference: Side;
    let restoring: Side;

    const openSide = async (): Promise<Side> => {
      const opened = await open();
      const runs = await insertRuns(opened.warehouse.db, 3);
      return { ...opened, runs, states: new Map(), logs: [] };
    };

    beforeAll(async () => {
      reference = await openSide();
      restoring = await openSide();
    });
    afterAll(async () => {
      await reference?.cleanup();
      await restoring?.cleanup();
    });

    /** One load of `window` from `text` (the executor's fast path), keeping its state on the restoring side. */
    async function load(side: Side, window: string, run: number, text: string, org = ORG): Promise<Outcome> {
      const previous = side.states.get(window);
      const open = () => openRawCsvReport(chunksOf(text, 61), { fileName: 'f.csv', report: REPORT });
      try {
        const report = await open();
        const source = toRawLoadSource(report, `report/${window}`, open, () => chunksOf(text, 61));
        const result = await loadWindow(side.warehouse, {
          window: { pipeline: pipeline.name, organizationId: org, windowKey: window },
          targets: [{ table: pipeline.table, source }],
          runId: side.runs[run]!,
          rejectThreshold: 0.1,
          ...(side === restoring ? { state: { previous, skipIfUnchanged: previous !== undefined } } : {}),
          logger: pino({ level: 'debug' }, { write: (line: string) => side.logs.push(line) }),
        });
        if (result.state) side.states.set(window, result.state);
        const { state: _state, unchanged, ...rest } = result;
        return { result: rest, unchanged: unchanged === true };
      } catch (error) {
        return { error: `${(error as { code?: string }).code}: ${(error as Error).message}` };
      }
    }

    async function both(window: string, run: number, text: string, org = ORG) {
      for (const side of [reference, restoring]) side.logs.length = 0;
      return {
        reference: await load(reference, window, run, text, org),
        restoring: await load(restoring, window, run, text, org),
      };
    }

    const restored = () =>
      restoring.logs.some((l) => l.includes('only the rows touched since were read again'));

    async function onBoth(statement: string): Promise<void> {
      for (const side of [reference, restoring]) await sql.raw(statement).execute(side.warehouse.db);
    }

    /** The rows (every column but `_loaded_at`) and the window's rejects. */
    async function contents(side: Side, window: string) {
      const rows = await sql<Record<string, unknown>>`
        select * from cybs.transaction_request where _source like ${`%${window}%`} order by request_id`.execute(
        side.warehouse.db,
      );
      const rejects = await sql<Record<string, unknown>>`
        select source, record_number::int as record_number, raw_text, error_code, message, run_id::int as run_id
          from etl.rejects where window_key = ${window} order by record_number`.execute(side.warehouse.db);
      return {
        rows: rows.rows.map(({ _loaded_at: _omit, ...rest }) => rest),
        loadedAt: rows.rows.map((r) => String(r['_loaded_at'])),
        rejects: rejects.rows,
      };
    }

    async function expectSame(window: string) {
      const r = await contents(reference, window);
      const s = await contents(restoring, window);
      expect(s.rows).toEqual(r.rows);
      expect(s.rejects).toEqual(r.rejects);
      return s;
    }

    const outcome = (o: Outcome) => ('error' in o ? o : o.result);

    /** First load, `tamper`, re-load: the same on both sides; then a third load is recognised. */
    async function touched(window: string, tamper: () => Promise<void>, text = csv()): Promise<boolean> {
      const first = await both(window, 0, text);
      expect(outcome(first.restoring)).toEqual(outcome(first.reference));
      expect(outcome(first.restoring)).toMatchObject({ rowsLoaded: 39, rowsRejected: 1 });
      const before = await contents(restoring, window);
      await tamper();
      const again = await both(window, 1, text);
      expect(again.restoring).toMatchObject({ unchanged: false });
      expect(outcome(again.restoring)).toEqual(outcome(again.reference));
      const wasRestored = restored();
      const after = await expectSame(window);
      // The rows the re-load left as they were keep when they were written, and by which run.
      for (const [i, row] of after.rows.entries()) {
        const earlier = before.rows.findIndex((b) => b['request_id'] === row['request_id']);
        if (String(row['_run_id']) === String(restoring.runs[0]) && earlier >= 0) {
          expect(after.loadedAt[i]).toBe(before.loadedAt[earlier]);
        }
      }
      const third = await both(window, 2, text);
      expect(third.restoring).toMatchObject({ unchanged: true });
      expect(outcome(third.restoring)).toEqual(outcome(third.reference));
      await expectSame(window);
      return wasRestored;
    }

    it('a value changed by hand: only that row is read again, and the result is the full merge’s', async () => {
      const wasRestored = await touched('w-value', () =>
        onBoth(
          `update cybs.transaction_request set amount = 999 where _source = 'report/w-value' and request_id in ('${id(5)}', '${id(18)}')`,
        ),
      );
      expect(wasRestored).toBe(true);
      const [t] = (await contents(restoring, 'w-value')).rows.filter((r) => r['request_id'] === id(5));
      expect(t).toMatchObject({ amount: '5.25', _run_id: String(restoring.runs[1]) });
    });

    it('a row rewritten by hand to the same values: read again, left as it is, and then recognised', async () => {
      const wasRestored = await touched('w-same', () =>
        onBoth(
          `update cybs.transaction_request set amount = amount where _source = 'report/w-same' and request_id = '${id(40)}'`,
        ),
      );
      expect(wasRestored).toBe(true);
    });

    it('lineage columns changed by hand: read again, and left as the full merge leaves them', async () => {
      const wasRestored = await touched('w-lineage', () =>
        onBoth(
          `update cybs.transaction_request set _source = 'report/w-lineage (edited)', _run_id = null
            where _source = 'report/w-lineage' and request_id = '${id(39)}'`,
        ),
      );
      expect(wasRestored).toBe(true);
    });

    /** An insert of a row under the window's source, by hand: request `i`, on `line`. */
    const addedUnder = (w: string, i: number, line: number) =>
      `insert into cybs.transaction_request (request_id, amount, _organization_id, _source, _source_row, _source_key)
       select '${id(i)}', 1, '${ORG}', 'report/${w}', ${line}, source_key
         from etl.sources where organization_id = '${ORG}' and source = 'report/${w}'`;

    /** Request 11's row deleted by hand, and request 901's added under the source on `line`. */
    const deletedThenAdded = (line: number) => (w: string) =>
      onBoth(
        `delete from cybs.transaction_request where _source = 'report/${w}' and request_id = '${id(11)}';
         ${addedUnder(w, 901, line)}`,
      );

    const tamperings: [string, boolean, (w: string) => Promise<void>][] = [
      [
        'a row deleted by hand',
        true,
        (w) =>
          onBoth(
            `delete from cybs.transaction_request where _source = 'report/${w}' and request_id in ('${id(1)}', '${id(9)}', '${id(40)}')`,
          ),
      ],
      ['a row of the source added by hand', false, (w) => onBoth(addedUnder(w, 900, 900))],
      ['a row deleted and another added under its line', false, deletedThenAdded(13)],
      ['a row deleted and another added under a line of its own', false, deletedThenAdded(43)],
      [
        'a key changed by hand',
        false,
        (w) =>
          onBoth(
            `update cybs.transaction_request set request_id = '${id(902)}' where _source = 'report/${w}' and request_id = '${id(12)}'`,
          ),
      ],
      [
        'a row taken over by another window’s source',
        true,
        async () => {
          const text = [...csv().split('\n').slice(0, 2), csv().split('\n')[20]].join('\n') + '\n';
          const other = await both('w-other', 0, text);
          expect(outcome(other.restoring)).toEqual(outcome(other.reference));
          expect(outcome(other.restoring)).toMatchObject({ rowsLoaded: 1 });
        },
      ],
    ];

    it.each(tamperings)(
      '%s, and a value changed beside it: loaded as by the full merge',
      async (name, restorable, tamper) => {
        const window = `w-f${tamperings.findIndex(([n]) => n === name)}`;
        const wasRestored = await touched(window, async () => {
          await tamper(window);
          await onBoth(
            `update cybs.transaction_request set amount = 7 where _source = 'report/${window}' and request_id = '${id(30)}'`,
          );
        });
        expect(wasRestored).toBe(restorable);
      },
    );

    it('values spanning lines before and after the touched and deleted rows: those rows alone', async () => {
      const change = (w: string) => () =>
        onBoth(
          `update cybs.transaction_request set amount = 1 where _source = 'report/${w}' and request_id = '${id(25)}';
           delete from cybs.transaction_request where _source = 'report/${w}' and request_id = '${id(33)}'`,
        );
      expect(await touched('w-span-before', change('w-span-before'), csv({ multiLineAt: 20 }))).toBe(true);
      expect(await touched('w-span-after', change('w-span-after'), csv({ multiLineAt: 36 }))).toBe(true);
      // The touched row's own value spans lines.
      expect(await touched('w-span-at', change('w-span-at'), csv({ multiLineAt: 25 }))).toBe(true);
    });

    it('CRLF line ends: the row alone', async () => {
      const w = 'w-crlf';
      const change = () =>
        onBoth(
          `update cybs.transaction_request set amount = 1 where _source = 'report/${w}' and request_id = '${id(2)}'`,
        );
      expect(await touched(w, change, csv({ eol: '\r\n', multiLineAt: 1 }))).toBe(true);
    });

    it('a touched row whose line now reads as a reject: the whole file', async () => {
      // The rejected line's number given to a row by hand: that line gives no record.
      const wasRestored = await touched('w-reject', () =>
        onBoth(
          `update cybs.transaction_request set _source_row = 10 where _source = 'report/w-reject' and request_id = '${id(9)}'`,
        ),
      );
      expect(wasRestored).toBe(false);
    });
  },
);

describe('recordsOnLines', () => {
  const read = (text: string, size: number) => chunksOf(text, size) as AsyncIterable<Buffer>;
  const on = (text: string, size: number, lines: number[], through = Infinity) =>
    recordsOnLines(read(text, size), 3, { wants: (line) => lines.includes(line), through });
  const text = 'meta\nh1,h2\na,1\r\nb,"x,y"\nc,3\n"d\r\ne",4\n"g""h",""\nf,5';
  it.each([1, 2, 3, 7, 100])(
    'the records that start on given lines, whole, in chunks of %d',
    async (size) => {
      expect(await on(text, size, [5, 3, 4], 5)).toEqual([
        { line: 3, text: 'a,1' },
        { line: 4, text: 'b,"x,y"' },
        { line: 5, text: 'c,3' },
      ]);
      // A line break inside quotes is a line; a continuation line starts no record; no final LF.
      expect(await on(text, size, [6, 7, 8, 9])).toEqual([
        { line: 6, text: '"d\r\ne",4' },
        { line: 8, text: '"g""h",""' },
        { line: 9, text: 'f,5' },
      ]);
      // Only from the first data line on.
      expect(await on(text, size, [1, 2])).toEqual([]);
      // What readers may split differently: a quote inside a value, a bare CR, a blank line, an
      // unclosed quote, a quote closed before other text.
      for (const odd of ['a"b,1', 'a\r,1', '', '"a,1', '"a"b,1']) {
        expect(await on(`m\nh\nx,0\n${odd}\nb,2\n`, size, [5])).toBeUndefined();
      }
    },
  );
});
