/**
 * COPY into a target's TEMP staging table: typed records encoded per row, pre-encoded COPY text,
 * and the CSV fast path's bytes; what PostgreSQL refuses, named by table, column and record.
 */
import { PG_TYPES } from '../../catalog/index.js';
import type { PgType } from '../../catalog/index.js';
import type { LoadValue, RawCsvBody, RawCsvChecks } from '../../copy-text/bodies.js';
import { escapeCopyText } from '../../copy-text/cell-encoders.js';
import { withCopyBuffers } from '../../copy-text/copy-buffers.js';
import { isFastPathRefusal, isSourceFailure, refuseFastPath } from '../../copy-text/fast-path-refusal.js';
import { CybsError, errorMessage } from '../../errors.js';
import { RAW_CSV_COPY_OPTIONS } from '../../parse/csv/raw-csv-report.js';
import { LOAD_ERROR_CODES, toLoadError } from '../../warehouse/database-errors.js';
import { KEY_LINEAGE_COLUMNS, quoteIdent } from '../ddl.js';
import { LineMap } from '../line-map.js';
import type { CsvBytesSource, LoadBatch, SpooledSource, TableDecl } from '../table-spec.js';
import type { StagedColumn, TargetCopy, WindowContext } from './context.js';
import { checkRejects } from './rejects.js';
import { ensureStaging } from './prepare-target.js';
import { expectCopied } from './savepoint.js';

/** Size of one COPY chunk, in UTF-16 code units (about a megabyte). */
export const CHUNK_CHARS = 1 << 20;

/**
 * A COPY segment also ends when its line → record map holds this many runs (record numbers that
 * jump, e.g. line numbers of multi-line CSV records), which keeps that map bounded.
 */
export const MAX_LINE_MAP_RUNS = 50_000;

export const VALUE_PREVIEW = 80;

/**
 * Stream typed records (of the source `source`) into the staging table, encoded and checked row by
 * row. The COPY is split into segments only when rejects must be written (between segments).
 */
export async function copySource(
  copy: TargetCopy,
  source: string,
  batches: AsyncIterable<LoadBatch>,
): Promise<number> {
  const { ctx, decl, staged, stagingName } = copy;
  const tableName = `${decl.schema}.${decl.name}`;
  const iterator = batches[Symbol.asyncIterator]();
  const n = staged.length;
  const encoders = staged.map((c) => c.encoder);
  const keyIndexes = decl.naturalKey
    .filter((k) => !KEY_LINEAGE_COLUMNS.has(k))
    .map((k) => staged.findIndex((c) => c.name === k));
  const statement = `COPY pg_temp.${quoteIdent(stagingName)} (${[...staged.map((c) => c.name), '_source_row']
    .map(quoteIdent)
    .join(', ')}) FROM STDIN`;
  const rejects = ctx.rejects;
  const cells: string[] = new Array<string>(n + 1);

  let done = false;
  let pending: LoadBatch | null = null;
  let position = 0;
  let total = 0;

  const reject = (recordNumber: number, raw: string, code: string, message: string) =>
    rejects.add(tableName, source, recordNumber, raw, code, message);

  /** The next batch, its rejects recorded; null, and `done`, at the end. */
  const nextBatch = async (): Promise<LoadBatch | null> => {
    let next: IteratorResult<LoadBatch>;
    try {
      next = await iterator.next();
    } catch (error) {
      ctx.abort = error;
      throw error;
    }
    if (next.done) {
      done = true;
      return null;
    }
    for (const r of next.value.rejects) reject(r.recordNumber, r.raw, r.code, r.message);
    return next.value;
  };

  try {
    // Up to the first record before anything is sent: a source without records (the usual records
    // beside a fast path) copies nothing and needs no staging table; its rejects still count.
    while (pending === null || position >= pending.records.length) {
      pending = await nextBatch();
      position = 0;
      if (pending === null) {
        await rejects.flush();
        return 0;
      }
    }
    await ensureStaging(copy);
    while (!done) {
      total += await copySegment();
    }
  } finally {
    // Let the parser close its file or HTTP stream when the load stops early.
    if (!done) await iterator.return?.().catch(() => undefined);
  }
  return total;

  async function copySegment(): Promise<number> {
    const lineMap = new LineMap();
    async function* segment(): AsyncGenerator<string> {
      let parts: string[] = [];
      let chars = 0;
      fill: for (;;) {
        if (pending === null) {
          if (rejects.full) break;
          pending = await nextBatch();
          position = 0;
          if (pending === null) break;
        }
        const records = pending.records;
        while (position < records.length) {
          const record = records[position++]!;
          const values = record.values;
          let missingKey = -1;
          for (const k of keyIndexes) {
            if (values[k] === null || values[k] === undefined) {
              missingKey = k;
              break;
            }
          }
          if (missingKey >= 0) {
            reject(
              record.recordNumber,
              record.raw,
              LOAD_ERROR_CODES.missingKey,
              `Natural key column "${staged[missingKey]!.name}" of ${tableName} is empty.`,
            );
            continue;
          }
          let bad = -1;
          for (let i = 0; i < n; i++) {
            const cell = encoders[i]!(values[i]);
            if (cell === undefined) {
              bad = i;
              break;
            }
            cells[i] = cell;
          }
          if (bad >= 0) {
            const [code, message] = describeBadValue(staged[bad]!, values[bad], tableName);
            reject(record.recordNumber, record.raw, code, message);
            continue;
          }
          cells[n] = String(record.recordNumber);
          const line = cells.join('\t') + '\n';
          parts.push(line);
          chars += line.length;
          lineMap.add(record.recordNumber);
          if (chars >= CHUNK_CHARS) {
            yield parts.join('');
            parts = [];
            chars = 0;
            if (lineMap.runs >= MAX_LINE_MAP_RUNS) break fill;
          }
        }
        pending = null;
        try {
          checkRejects(ctx, false);
        } catch (error) {
          ctx.abort = error;
          throw error;
        }
      }
      if (chars > 0) yield parts.join('');
    }

    let copied: number;
    try {
      copied = await ctx.session.copyFrom(statement, segment());
    } catch (error) {
      if (ctx.abort !== undefined) throw ctx.abort;
      throw copyError(error, tableName, source, lineMap);
    }
    expectCopied(copied, lineMap.lines, `the staging table of ${tableName}`, {
      table: tableName,
      source,
    });
    await rejects.flush();
    return copied;
  }
}

/**
 * Records already encoded as COPY text for these very column types (a `spooled` source's
 * segments): the lines are copied into the staging table as they are (the records that need the
 * per-row path went through `copySource` before).
 */
export async function copyPreEncoded(copy: TargetCopy, source: SpooledSource): Promise<number> {
  const { ctx, decl, staged, stagingName } = copy;
  const tableName = `${decl.schema}.${decl.name}`;
  let total = 0;
  for (const segment of source.segments) {
    if (segment.lines === 0) continue;
    await ensureStaging(copy);
    const statement = `COPY pg_temp.${quoteIdent(stagingName)} (${[
      ...staged.slice(0, segment.columns).map((c) => c.name),
      '_source_row',
    ]
      .map(quoteIdent)
      .join(', ')}) FROM STDIN`;
    let copied: number;
    try {
      copied = await withCopyBuffers(1, ([into]) =>
        ctx.session.copyFrom(statement, segment.chunks(into), { inTurn: true }),
      );
    } catch (error) {
      throw copyError(error, tableName, source.source, segment);
    }
    expectCopied(copied, segment.lines, `the staging table of ${tableName}`, {
      table: tableName,
      source: source.source,
    });
    total += copied;
  }
  return total;
}

/**
 * The fast path (src/parse/csv/raw-csv-report.ts): the file's data records go to one COPY (as COPY text with
 * a comma delimiter, most of them unchanged) into the typed staging table, so PostgreSQL splits
 * and casts them in C,
 * while the scanner checks every record on its way (a value of a non-text column must be in the
 * canonical form that PostgreSQL and the catalog's coercers read identically, a key must not be
 * empty) and gets its line number appended for `_source_row`. A record that fails a check is set
 * aside and typed or rejected by the per-row path beside the COPY (more than the scanner's limit,
 * or bytes PostgreSQL refuses, refuse the window: the caller then loads the whole file through
 * the per-row path).
 */
export async function copyRawCsv(
  copy: TargetCopy,
  source: CsvBytesSource,
  body: RawCsvBody,
): Promise<number> {
  const { ctx, decl, staged, stagingName } = copy;
  if (copy.drift)
    throw refuseFastPath('column types differ from the table (values need checking one by one)');
  const columns = staged.map((c) => quoteIdent(c.name)).join(', ');
  await ensureStaging(copy);
  // The scanner appends each record's line number: the last column, `_source_row`.
  const copied = await copyRawBytes(
    ctx,
    `COPY pg_temp.${quoteIdent(stagingName)} (${columns}, "_source_row") FROM STDIN ${RAW_CSV_COPY_OPTIONS}`,
    body,
    rawCsvChecks(decl, staged),
  );
  // The records the scanner set aside are typed or rejected by the per-row path and staged beside.
  const aside = body.setAside();
  if (aside.length === 0) return copied;
  return copied + (await copySource(copy, source.source, source.perRowRecords(aside)));
}

/** What the scanner checks in every record: canonical non-text values, non-empty keys. */
export function rawCsvChecks(decl: TableDecl, staged: StagedColumn[]): RawCsvChecks {
  const types = staged.map((c) => {
    if (!(PG_TYPES as readonly string[]).includes(c.sourceType)) {
      throw refuseFastPath(`column ${c.name} has type ${c.sourceType}`);
    }
    return c.sourceType as PgType;
  });
  const required = decl.naturalKey
    .filter((k) => !KEY_LINEAGE_COLUMNS.has(k))
    .map((k) => staged.findIndex((c) => c.name === k));
  return { types, required };
}

/** One COPY of a CSV body (checked by its scanner); what PostgreSQL refuses is a refusal. */
export async function copyRawBytes(
  ctx: WindowContext,
  statement: string,
  body: RawCsvBody,
  checks: RawCsvChecks,
): Promise<number> {
  let copied: number;
  try {
    copied = await ctx.session.copyFrom(statement, body.read(checks, { inTurn: true }), { inTurn: true });
  } catch (error) {
    if (isFastPathRefusal(error)) throw error;
    if (isSourceFailure(error)) throw error;
    throw refuseFastPath(`PostgreSQL refused the data (${errorMessage(error)})`, error);
  }
  expectCopied(copied, body.records(), 'the table', {}, true);
  return copied;
}

export function describeBadValue(
  column: StagedColumn,
  value: LoadValue | undefined,
  table: string,
): [string, string] {
  if (typeof value === 'string' && escapeCopyText(value) === undefined) {
    return [
      LOAD_ERROR_CODES.invalidText,
      `Column "${column.name}" of ${table}: the value holds a NUL character, which PostgreSQL text cannot store.`,
    ];
  }
  const shown = typeof value === 'string' ? JSON.stringify(valuePreview(value)) : String(value);
  return [
    LOAD_ERROR_CODES.typeMismatch,
    `Column "${column.name}" of ${table} is ${column.tableType}; the value ${shown} (declared ${column.sourceType} by the source) does not fit it.`,
  ];
}

/** `text`, cut to VALUE_PREVIEW characters (and `…`) for an error message. */
export function valuePreview(text: string): string {
  return text.length > VALUE_PREVIEW ? `${text.slice(0, VALUE_PREVIEW)}…` : text;
}

/** A COPY refused by PostgreSQL: name the table, column and record when its error says so. */
export function copyError(
  error: unknown,
  table: string,
  source: string,
  lineMap: { recordAt(line: number): number | undefined },
): CybsError {
  const e = error as { code?: unknown; where?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  if (!code || !code.startsWith('22')) return toLoadError(error, { table, source });
  const where = typeof e?.where === 'string' ? e.where : '';
  const match = /line (\d+)(?:, column ([^:]+))?/.exec(where);
  const line = match ? Number(match[1]) : undefined;
  const column = match?.[2];
  const recordNumber = line === undefined ? undefined : lineMap.recordAt(line);
  const at = [
    column ? `column "${column}"` : undefined,
    recordNumber !== undefined ? `record ${recordNumber}` : undefined,
  ]
    .filter(Boolean)
    .join(', ');
  return new CybsError(
    LOAD_ERROR_CODES.copyRejected,
    `PostgreSQL refused a value for ${table}${at ? ` (${at})` : ''} from ${source}: ${errorMessage(error)}. ` +
      'The parser typed it for the column, so the catalog type or the parser is wrong; nothing of the window was committed.',
    { stage: 'load', cause: error, context: { table, source, column, recordNumber, sqlState: code, where } },
  );
}
