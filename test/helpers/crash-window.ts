import { sql } from 'kysely';
import type { LoadWindowOptions, LoadWindowResult } from '../../src/load/window/load-window.js';
import type { Db } from '../../src/warehouse/warehouse.js';
import type {
  LoadBatch,
  LoadRecord,
  LoadReject,
  SourceColumn,
  TableDecl,
} from '../../src/load/table-spec.js';

/** The window the crash test kills mid-load, shared by the test and its child process. */
export const CRASH_TABLE: TableDecl = {
  schema: 'cybs',
  name: 'crash_load',
  description: 'Rows of the crash test.',
  columns: [
    { name: 'request_id', pgType: 'text' },
    { name: 'merchant_ref', pgType: 'text' },
    { name: 'amount', pgType: 'numeric(12,2)' },
    { name: 'currency', pgType: 'text' },
    { name: 'submitted_at', pgType: 'timestamptz' },
    { name: 'card_suffix', pgType: 'text' },
    { name: 'approved', pgType: 'boolean' },
    { name: 'reason_code', pgType: 'integer' },
  ],
  naturalKey: ['_organization_id', 'request_id'],
  keyDescription: 'A request id identifies one transaction.',
};

const COLUMNS: SourceColumn[] = CRASH_TABLE.columns.map((c) => ({ name: c.name, pgType: c.pgType }));

/** Every REJECT_EVERY-th record is a parser reject (2%), so rejects are flushed during the load. */
export const REJECT_EVERY = 50;

export function expectedCrashRows(rows: number): { loaded: number; rejected: number } {
  const rejected = Math.floor(rows / REJECT_EVERY);
  return { loaded: rows - rejected, rejected };
}

/**
 * The window's load options: `rows` generated records in batches of 1000; `onProgress` is told how
 * many records were produced after each batch.
 */
export function crashWindowOptions(
  rows: number,
  runId: number | null,
  onProgress: (produced: number) => void = () => {},
): LoadWindowOptions {
  async function* batches(): AsyncGenerator<LoadBatch> {
    let records: LoadRecord[] = [];
    let rejects: LoadReject[] = [];
    for (let i = 1; i <= rows; i++) {
      if (i % REJECT_EVERY === 0) {
        rejects.push({
          recordNumber: i,
          raw: `broken line ${i}`,
          code: 'PARSE_CSV_INVALID',
          message: 'Bad quote.',
        });
      } else {
        const id = `7${String(i).padStart(21, '0')}`;
        const raw = `${id},ref-${i},${(i % 100000) / 100},USD,...`;
        records.push({
          recordNumber: i,
          raw,
          values: [
            id,
            `ref-${i}`,
            ((i % 100000) / 100).toFixed(2),
            i % 3 === 0 ? 'EUR' : 'USD',
            `2026-11-20T${String(i % 24).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}:00Z`,
            String(i % 10000).padStart(4, '0'),
            i % 7 !== 0,
            i % 7 === 0 ? 202 : 100,
          ],
        });
      }
      if (i % 1000 === 0 || i === rows) {
        yield { records, rejects };
        records = [];
        rejects = [];
        onProgress(i);
      }
    }
  }
  return {
    window: { pipeline: 'crash', organizationId: 'org_crash', windowKey: '2026-11-20' },
    targets: [
      {
        table: CRASH_TABLE,
        source: { kind: 'records', source: 'crash-report-2026-11-20', columns: COLUMNS, batches: batches() },
      },
    ],
    runId,
    rejectThreshold: 0.05,
  };
}

/** The crash window's row in etl.windows, written in its load's transaction (loadWindowThen). */
export function recordCrashWindow(runId: number | null) {
  return async (trx: Db, result: LoadWindowResult): Promise<void> => {
    await sql`insert into etl.windows (pipeline, organization_id, window_key, window_start, window_end, status,
                                         rows_loaded, rows_rejected, run_id)
                values ('crash', 'org_crash', '2026-11-20', '2026-11-20', '2026-11-21', 'loaded',
                        ${result.rowsLoaded}, ${result.rowsRejected}, ${runId})
                on conflict (pipeline, organization_id, window_key) do update
                   set status = 'loaded', rows_loaded = excluded.rows_loaded, rows_rejected = excluded.rows_rejected`.execute(
      trx,
    );
  };
}
