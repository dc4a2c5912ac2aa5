/**
 * The window's rejects: buffered and copied into etl.rejects, the cap and threshold that fail the
 * window, and the window's rows there (replaced by each load, counted, restamped).
 */
import { sql } from 'kysely';
import type { ExpressionBuilder } from 'kysely';
import { escapeCopyTextLossy } from '../../copy-text/cell-encoders.js';
import { CybsError } from '../../errors.js';
import type { Database, EtlDb } from '../../warehouse/database.js';
import { LOAD_ERROR_CODES } from '../../warehouse/database-errors.js';
import type { WarehouseSession } from '../../warehouse/warehouse.js';
import { DEFAULT_REJECT_THRESHOLD } from './types.js';
import { expectCopied } from './savepoint.js';
import type { LoadWindowOptions } from './types.js';

/** Rejects are buffered up to this many (or REJECT_FLUSH_CHARS) before being copied to etl.rejects. */
export const REJECT_FLUSH_COUNT = 2000;

export const REJECT_FLUSH_CHARS = 1 << 20;

export const REJECT_SAMPLES = 5;

export const REJECT_COPY =
  'COPY etl.rejects (pipeline, organization_id, window_key, source, record_number, raw_text, error_code, message, run_id) FROM STDIN';

export interface RejectSample {
  table: string;
  recordNumber: number;
  code: string;
  message: string;
}

/** Rejects of the window, buffered in bounded slices and copied into etl.rejects between COPY segments. */
export class RejectWriter {
  count = 0;
  readonly samples: RejectSample[] = [];
  private lines: string[] = [];
  private chars = 0;
  private readonly prefix: string;
  private readonly suffix: string;

  constructor(
    private readonly session: WarehouseSession,
    options: LoadWindowOptions,
  ) {
    const w = options.window;
    this.prefix = [w.pipeline, w.organizationId, w.windowKey].map(escapeCopyTextLossy).join('\t') + '\t';
    this.suffix = `\t${options.runId === null ? '\\N' : String(options.runId)}\n`;
  }

  add(table: string, source: string, recordNumber: number, raw: string, code: string, message: string): void {
    const line =
      this.prefix +
      `${escapeCopyTextLossy(source)}\t${Number.isFinite(recordNumber) ? Math.trunc(recordNumber) : '\\N'}\t` +
      `${escapeCopyTextLossy(raw)}\t${escapeCopyTextLossy(code)}\t${escapeCopyTextLossy(message)}` +
      this.suffix;
    this.lines.push(line);
    this.chars += line.length;
    this.count++;
    if (this.samples.length < REJECT_SAMPLES) this.samples.push({ table, recordNumber, code, message });
  }

  get full(): boolean {
    return this.lines.length >= REJECT_FLUSH_COUNT || this.chars >= REJECT_FLUSH_CHARS;
  }

  /** The state to go back to when what follows is rolled back (call right after flush()). */
  mark(): { count: number; samples: number } {
    return { count: this.count, samples: this.samples.length };
  }

  /** Forget the rejects added since `mark` (their rows were rolled back). */
  reset(mark: { count: number; samples: number }): void {
    this.count = mark.count;
    this.samples.length = mark.samples;
    this.lines = [];
    this.chars = 0;
  }

  async flush(): Promise<void> {
    if (this.lines.length === 0) return;
    const text = this.lines.join('');
    const expected = this.lines.length;
    this.lines = [];
    this.chars = 0;
    const copied = await this.session.copyFrom(REJECT_COPY, [text]);
    expectCopied(copied, expected, 'etl.rejects', {});
  }
}

type WindowId = LoadWindowOptions['window'];

/** The window's rows of etl.rejects. */
function ofWindow(window: WindowId) {
  return (eb: ExpressionBuilder<Database, 'etl.rejects'>) =>
    eb.and({
      pipeline: window.pipeline,
      organization_id: window.organizationId,
      window_key: window.windowKey,
    });
}

/** Delete the window's rejects: a load replaces them with its own (a re-run must not double them). */
export async function deleteWindowRejects(db: EtlDb, window: WindowId): Promise<void> {
  await db.deleteFrom('etl.rejects').where(ofWindow(window)).execute();
}

/** How many rejects the window has. */
export async function countWindowRejects(db: EtlDb, window: WindowId): Promise<number> {
  const row = await db
    .selectFrom('etl.rejects')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where(ofWindow(window))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The window's rejects, as if written again by run `runId` now (a load that found nothing to write). */
export async function restampWindowRejects(db: EtlDb, window: WindowId, runId: number | null): Promise<void> {
  await db
    .updateTable('etl.rejects')
    .set({ run_id: runId, created_at: sql<Date>`now()` })
    .where(ofWindow(window))
    .execute();
}

/**
 * Fail the window when rejects exceed the cap (checked while streaming) or the threshold (checked
 * once every record is counted, `final`).
 */
export function checkRejects(
  ctx: { options: LoadWindowOptions; rejects: RejectWriter; rowsLoaded: number },
  final: boolean,
): void {
  const { maxRejects } = ctx.options;
  const threshold = ctx.options.rejectThreshold ?? DEFAULT_REJECT_THRESHOLD;
  const rejected = ctx.rejects.count;
  const total = ctx.rowsLoaded + rejected;
  const overCap = maxRejects !== undefined && rejected > maxRejects;
  const overThreshold = final && rejected > 0 && rejected / total > threshold;
  if (!overCap && !overThreshold) return;
  const samples = ctx.rejects.samples
    .map((s) => `${s.table} record ${s.recordNumber}: ${s.code} ${s.message}`)
    .join('; ');
  const limit = overCap
    ? `more than the cap of ${maxRejects}`
    : `${((rejected / total) * 100).toFixed(2)}% of ${total} records, over the threshold of ${threshold * 100}%`;
  throw new CybsError(
    LOAD_ERROR_CODES.rejectThreshold,
    `Window ${ctx.options.window.pipeline}/${ctx.options.window.organizationId}/${ctx.options.window.windowKey}: ` +
      `${rejected} records rejected (${limit}${final ? '' : ', so far'}); nothing of the window was committed. ` +
      `First rejects: ${samples}`,
    {
      stage: 'load',
      context: { rejected, loaded: ctx.rowsLoaded, threshold, maxRejects, samples: ctx.rejects.samples },
    },
  );
}
