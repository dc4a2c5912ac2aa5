/**
 * The two checks every step of a window's load makes the same way: a savepoint around what may be
 * rolled back while the window goes on (a first load straight into the table, a merge that may
 * meet a key twice, the copy while paging), and a COPY that must have stored exactly the rows sent.
 */
import { sql } from 'kysely';
import { CybsError } from '../../errors.js';
import { refuseFastPath } from '../../copy-text/fast-path-refusal.js';
import { LOAD_ERROR_CODES } from '../../warehouse/database-errors.js';
import type { Db } from '../../warehouse/warehouse.js';

/** The savepoints of a window's load (one name per step; none is nested in another). */
export type SavepointName = 'cybs_direct' | 'cybs_live' | 'cybs_merge' | 'cybs_touched';

/** An open savepoint, released or rolled back by its holder (the copy while paging holds one across pages). */
export interface Savepoint {
  release(): Promise<void>;
  rollback(): Promise<void>;
}

/**
 * Open a savepoint. `staging` is the window's set of staging tables made (WindowContext.stagingMade):
 * a rollback may take back tables made since, so it is emptied then (they are made again if need be).
 */
export async function openSavepoint(trx: Db, name: SavepointName, staging: Set<string>): Promise<Savepoint> {
  await sql`savepoint ${sql.id(name)}`.execute(trx);
  return {
    release: async () => void (await sql`release savepoint ${sql.id(name)}`.execute(trx)),
    rollback: async () => {
      await sql`rollback to savepoint ${sql.id(name)}`.execute(trx);
      staging.clear();
    },
  };
}

export type SavepointOutcome<T> = { done: true; value: T } | { done: false; error: unknown };

/**
 * Run `body` in a savepoint, released when it resolves. When it throws an error `rollBackOn`
 * accepts, everything since the savepoint is rolled back and the error returned (the caller goes
 * on another way); any other error is thrown as it is (the window's transaction fails whole).
 */
export async function withSavepoint<T>(
  trx: Db,
  name: SavepointName,
  staging: Set<string>,
  body: () => Promise<T>,
  rollBackOn: (error: unknown) => boolean,
): Promise<SavepointOutcome<T>> {
  const savepoint = await openSavepoint(trx, name, staging);
  let value: T;
  try {
    value = await body();
  } catch (error) {
    if (!rollBackOn(error)) throw error;
    await savepoint.rollback();
    return { done: false, error };
  }
  await savepoint.release();
  return { done: true, value };
}

/** Whether `error` (or, `wrapped`, the error a CybsError wraps) is a database error of this SQLSTATE. */
export function hasSqlState(error: unknown, state: string, wrapped = false): boolean {
  if ((error as { code?: unknown } | null)?.code === state) return true;
  return wrapped && error instanceof CybsError && hasSqlState(error.cause, state);
}

/**
 * Fail unless a COPY stored exactly the rows sent: `into` names where ("etl.rejects", "the staging
 * table of cybs.x"). A fast path's COPY (`refusal`) refuses the fast path instead: the caller then
 * loads the source record by record.
 */
export function expectCopied(
  copied: number,
  expected: number,
  into: string,
  context: Record<string, unknown>,
  refusal = false,
): void {
  if (copied === expected) return;
  if (refusal)
    throw refuseFastPath(`COPY into ${into} stored ${copied} rows where the source has ${expected}`);
  throw new CybsError(
    LOAD_ERROR_CODES.failed,
    `COPY into ${into} stored ${copied} rows instead of ${expected}; nothing of the window was committed.`,
    { stage: 'load', context },
  );
}
