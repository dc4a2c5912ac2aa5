/**
 * A loader source given as ready COPY text lines (the fast XML path, src/parse/xml/raw-xml-report.ts): each
 * line holds the source's columns, `\N` for an empty value, and the record number as its last
 * field. Every non-text value must already be in the one form that the catalog's coercer and
 * PostgreSQL's input function read identically — the producer checks each with
 * {@link canonicalCopyValue} (the same conditions as the fast CSV path's CANONICAL) and
 * refuses otherwise. So the lines go with one `COPY … FROM STDIN` into the typed staging table, or
 * on a first load into the table itself (PostgreSQL casts while copying), in one pass.
 * A value PostgreSQL still refuses (`2023-02-30`), or an empty natural key, refuses the window
 * (`LOAD_FAST_PATH_REFUSED`, rolled back) and the caller loads the file through the per-row path,
 * which rejects such records with its own messages.
 */
import { sql } from 'kysely';
import { PG_TYPES } from '../../catalog/index.js';
import type { RawCopyTextBody } from '../../copy-text/bodies.js';
import { isFastPathRefusal, isSourceFailure, refuseFastPath } from '../../copy-text/fast-path-refusal.js';
import { errorMessage } from '../../errors.js';
import { KEY_LINEAGE_COLUMNS, quoteIdent } from '../ddl.js';
import type { TargetCopy } from './context.js';
import { expectCopied } from './savepoint.js';
import type { WarehouseSession } from '../../warehouse/warehouse.js';
import { ensureStaging } from './prepare-target.js';

/** COPY `body` into the target's typed staging table; the rows staged. */
export async function copyRawText(copy: TargetCopy, body: RawCopyTextBody): Promise<number> {
  const { ctx, trx, decl, staged, stagingName } = copy;
  assertRawTextCopyable(staged, copy.drift);
  await ensureStaging(copy);
  await copyRawTextLines(
    ctx.session,
    `COPY pg_temp.${quoteIdent(stagingName)} (${[...staged.map((c) => c.name), '_source_row']
      .map(quoteIdent)
      .join(', ')}) FROM STDIN`,
    body,
    body.chunks,
    // The chunks are valid only until the next is asked for (RawCopyTextBody).
    { inTurn: true },
  );
  const copied = body.records();
  const keys = decl.naturalKey.filter((k) => !KEY_LINEAGE_COLUMNS.has(k));
  if (keys.length > 0) {
    const { rows } = await sql
      .raw<{ n: string }>(
        `select count(*) as n from pg_temp.${quoteIdent(stagingName)} where ` +
          keys.map((k) => `${quoteIdent(k)} is null`).join(' or '),
      )
      .execute(trx);
    const missing = Number(rows[0]?.n ?? 0);
    if (missing > 0) throw refuseFastPath(`${missing} records have an empty natural key`);
  }
  return copied;
}

/** Refuses what the raw COPY text path cannot load (the caller loads the file record by record). */
export function assertRawTextCopyable(
  staged: readonly { name: string; sourceType: string }[],
  drift: boolean,
): void {
  if (drift) throw refuseFastPath('column types differ from the table (values need checking one by one)');
  for (const c of staged) {
    if (!(PG_TYPES as readonly string[]).includes(c.sourceType)) {
      throw refuseFastPath(`column ${c.name} has type ${c.sourceType}`);
    }
  }
}

/**
 * One COPY of the lines of `body` (as `chunks`, which may add to each line); a refusal when
 * PostgreSQL refuses them or stores another number of rows. A duplicate key (23505) is thrown as
 * it is: a first load straight into the table goes through the staging table then.
 */
export async function copyRawTextLines(
  session: WarehouseSession,
  statement: string,
  body: RawCopyTextBody,
  chunks: AsyncIterable<Uint8Array>,
  options?: { inTurn?: boolean },
): Promise<void> {
  let copied: number;
  try {
    copied = await session.copyFrom(statement, chunks, options);
  } catch (error) {
    if (isFastPathRefusal(error)) throw error;
    if (isSourceFailure(error)) throw error;
    if ((error as { code?: unknown } | null)?.code === '23505') throw error;
    throw refuseFastPath(`PostgreSQL's COPY refused the data (${errorMessage(error)})`);
  }
  expectCopied(copied, body.records(), 'the table', {}, true);
}
