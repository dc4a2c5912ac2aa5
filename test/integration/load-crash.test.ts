import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { loadWindow } from '../../src/load/window/load-window.js';
import { migrateToLatest } from '../../src/warehouse/migrate.js';
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import type { Warehouse } from '../../src/warehouse/warehouse.js';
import { projectRoot } from '../../src/paths.js';
import {
  crashWindowOptions,
  CRASH_TABLE,
  expectedCrashRows,
  recordCrashWindow,
} from '../helpers/crash-window.js';
import { loadWindowThen } from '../helpers/load-then.js';
import { createTestDatabase } from '../helpers/db.js';
import { count, generatedSource } from '../helpers/load.js';
import { warehouseTempDir } from '../helpers/temp-dir.js';

/** Rows of the killed window: large enough that the kill lands mid-COPY. */
const ROWS = { postgres: 300_000, embedded: 150_000 } as const;

interface Backend {
  /** What the child gets on its command line. */
  target: string;
  open(): Promise<Warehouse>;
  cleanup(): Promise<void>;
}

const backends: [keyof typeof ROWS, () => Promise<Backend>][] = [
  [
    'postgres',
    async () => {
      const database = await createTestDatabase('crash');
      return {
        target: database.url,
        open: () => openWarehouse({ url: database.url, path: '' }),
        cleanup: () => database.drop(),
      };
    },
  ],
  [
    'embedded',
    async () => {
      const dir = await warehouseTempDir('cybs-crash-');
      const path = join(dir, 'warehouse');
      return {
        target: path,
        open: () => openWarehouse({ path }),
        cleanup: () => rm(dir, { recursive: true, force: true }),
      };
    },
  ],
];

/** Run the child loader and SIGKILL it as soon as it says its COPY is under way. */
async function loadAndKill(target: string, rows: number): Promise<{ killed: boolean; output: string }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'test/helpers/load-crash-child.ts', target, String(rows)],
    {
      cwd: projectRoot(),
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const lines = createInterface({ input: child.stdout });
  lines.on('line', (line) => {
    output += `${line}\n`;
    if (line === 'COPY_STARTED') child.kill('SIGKILL');
  });
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.on('exit', (c, s) => resolve([c, s])),
  );
  return { killed: signal === 'SIGKILL' && code === null, output };
}

describe.each(backends)('a loader killed mid-window on %s', (name, make) => {
  let backend: Backend | undefined;
  afterAll(async () => backend?.cleanup());

  it('commits nothing of the window, and a re-load gives exactly the expected rows', async () => {
    backend = await make();
    const rows = ROWS[name];
    // The table exists beforehand with another window's rows, which must survive untouched.
    const warehouse = await backend.open();
    await migrateToLatest(warehouse.db);
    const columns = CRASH_TABLE.columns.map((c) => ({ name: c.name, pgType: c.pgType }));
    await loadWindow(warehouse, {
      window: { pipeline: 'crash', organizationId: 'org_crash', windowKey: '2026-11-19' },
      runId: null,
      targets: [
        {
          table: CRASH_TABLE,
          source: generatedSource(
            'crash-report-2026-11-19',
            columns,
            Array.from({ length: 1000 }, (_, i) => [
              `9${String(i).padStart(21, '0')}`,
              'r',
              '1.00',
              'USD',
              null,
              null,
              true,
              100,
            ]),
          ),
        },
      ],
    });
    // The parent keeps its connection while the child loads: the embedded server is shared too.

    const { killed, output } = await loadAndKill(backend.target, rows);
    expect(output).toContain('COPY_STARTED');
    expect(output).not.toContain('COMMITTED');
    expect(killed).toBe(true);

    try {
      expect(await count(warehouse.db, 'cybs.crash_load')).toBe(1000);
      expect(await count(warehouse.db, 'cybs.crash_load', `_source = 'crash-report-2026-11-20'`)).toBe(0);
      expect(await count(warehouse.db, 'etl.windows', `window_key = '2026-11-20'`)).toBe(0);
      expect(await count(warehouse.db, 'etl.rejects', `window_key = '2026-11-20'`)).toBe(0);

      const started = performance.now();
      const result = await loadWindowThen(warehouse, crashWindowOptions(rows, null), recordCrashWindow(null));
      const seconds = (performance.now() - started) / 1000;
      console.log(
        `[load-crash] ${name}: re-load of ${rows} records (${result.rowsLoaded} rows, ${result.rowsRejected} rejects) ` +
          `in ${seconds.toFixed(2)} s = ${Math.round(rows / seconds)} records/s`,
      );
      const expected = expectedCrashRows(rows);
      expect(result).toMatchObject({ rowsLoaded: expected.loaded, rowsRejected: expected.rejected });
      expect(result.tables[0]).toMatchObject({ inserted: expected.loaded, updated: 0, deleted: 0 });
      expect(await count(warehouse.db, 'cybs.crash_load')).toBe(1000 + expected.loaded);
      expect(await count(warehouse.db, 'etl.rejects', `window_key = '2026-11-20'`)).toBe(expected.rejected);
      const state = await sql<{ status: string; rows_loaded: string }>`
        select status, rows_loaded from etl.windows where window_key = '2026-11-20'`.execute(warehouse.db);
      expect(state.rows.map((r) => [r.status, Number(r.rows_loaded)])).toEqual([['loaded', expected.loaded]]);
    } finally {
      await warehouse.close();
    }
  });
});
