/**
 * A loader source given as ready COPY text lines (the fast XML path, src/parse/xml-fast.ts): each
 * line holds the source's columns as raw (untyped) text, `\N` for an empty value, and the record
 * number as its last field. The lines go to `COPY … FROM STDIN` (text format) into a TEMP table of
 * `text` columns, and PostgreSQL checks and casts them set-wise into the typed staging table with
 * the same conditions as the fast CSV path (`rawColumnSql`): a row that the per-row path might type
 * or reject differently refuses the window (`LOAD_FAST_PATH_REFUSED`, rolled back) and the caller
 * loads the file through the per-row path.
 */
import { sql } from 'kysely';
import { PG_TYPES } from '../catalog/index.js';
import type { PgType } from '../catalog/index.js';
import { CybsError, errorMessage } from '../errors.js';
import { KEY_LINEAGE_COLUMNS, quoteIdent } from './ddl.js';
import { isFastPathRefusal, rawColumnSql, refuseFastPath } from './fast-csv.js';
import type { TableDecl } from './table-spec.js';
import type { Db, Warehouse, WarehouseSession } from './warehouse.js';

export interface RawCopyTextBody {
  /** COPY text lines, whole lines per chunk; the iterator throws a refusal on what it cannot judge. */
  chunks: AsyncIterable<string>;
  /** Lines produced (final once `chunks` is exhausted). */
  records(): number;
}

/** Load `body` into the typed staging table `stagingName`; the rows staged. */
export async function copyRawText(
  kind: Warehouse['kind'],
  session: WarehouseSession,
  trx: Db,
  decl: TableDecl,
  body: RawCopyTextBody,
  staged: readonly { name: string; sourceType: string }[],
  stagingName: string,
  drift: boolean,
): Promise<number> {
  if (kind !== 'postgres') throw refuseFastPath('the embedded warehouse has no streaming COPY');
  if (drift) throw refuseFastPath('column types differ from the table (values need checking one by one)');
  const raw = `${stagingName}_raw`;
  const rawColumns = staged.map((_, i) => `c${i}`);
  const casts = staged.map((c, i) => {
    if (!(PG_TYPES as readonly string[]).includes(c.sourceType)) {
      throw refuseFastPath(`column ${c.name} has type ${c.sourceType}`);
    }
    return rawColumnSql(`r.${rawColumns[i]}`, c.sourceType as PgType);
  });
  const keys = decl.naturalKey
    .filter((k) => !KEY_LINEAGE_COLUMNS.has(k))
    .map((k) => `r.${rawColumns[staged.findIndex((c) => c.name === k)]} is not null`);
  const valid = [...casts.map((c) => c.valid).filter((v) => v !== 'true'), ...keys];
  await sql
    .raw(
      `create temp table ${quoteIdent(raw)} (${rawColumns.map((c) => `${c} text`).join(', ')}, ` +
        `_row bigint) on commit drop`,
    )
    .execute(trx);
  let copied: number;
  try {
    copied = await session.copyFrom(
      `COPY pg_temp.${quoteIdent(raw)} (${[...rawColumns, '_row'].join(', ')}) FROM STDIN`,
      body.chunks,
    );
  } catch (error) {
    if (isFastPathRefusal(error)) throw error;
    if (error instanceof CybsError && error.stage === 'parse') throw error;
    throw refuseFastPath(`PostgreSQL's COPY refused the data (${errorMessage(error)})`);
  }
  if (copied !== body.records()) {
    throw refuseFastPath(`COPY read ${copied} rows where the source has ${body.records()} records`);
  }
  let inserted: number;
  try {
    const result = await sql
      .raw(
        `insert into pg_temp.${quoteIdent(stagingName)} (${[...staged.map((c) => c.name), '_source_row']
          .map(quoteIdent)
          .join(', ')}) ` +
          `select ${casts.map((c) => c.value).join(', ')}, r._row from pg_temp.${quoteIdent(raw)} as r` +
          (valid.length > 0 ? ` where ${valid.join(' and ')}` : ''),
      )
      .execute(trx);
    inserted = Number(result.numAffectedRows ?? 0n);
  } catch (error) {
    throw refuseFastPath(`a value did not cast (${errorMessage(error)})`);
  }
  if (inserted !== copied) {
    throw refuseFastPath(`${copied - inserted} rows hold values the per-row path must check or reject`);
  }
  await sql.raw(`drop table pg_temp.${quoteIdent(raw)}`).execute(trx);
  return inserted;
}
