import { CybsError, errorMessage } from '../errors.js';

/** Stable codes of the errors and rejects the loader raises. */
export const LOAD_ERROR_CODES = {
  /** A record's natural-key value is null: the record goes to etl.rejects. */
  missingKey: 'LOAD_MISSING_KEY',
  /** A value does not fit its existing column's type: the record goes to etl.rejects. */
  typeMismatch: 'LOAD_TYPE_MISMATCH',
  /** A record whose natural key a later record of its source repeats: rejected, the later one loaded. */
  duplicateKey: 'LOAD_DUPLICATE_KEY',
  /** A text value holds a NUL character, which PostgreSQL text cannot store: rejected. */
  invalidText: 'LOAD_INVALID_TEXT',
  /** More rejects than the window allows: the window is rolled back. */
  rejectThreshold: 'LOAD_REJECT_THRESHOLD',
  /** PostgreSQL refused a staged value (COPY): the window is rolled back. */
  copyRejected: 'LOAD_COPY_REJECTED',
  /** The source iterator failed with something that is not a CybsError. */
  sourceFailed: 'LOAD_SOURCE_FAILED',
  /** A source's columns cannot be loaded (duplicates, lineage names, a missing key column). */
  invalidSource: 'LOAD_INVALID_SOURCE',
  /** A source column the table lacks, with the pipeline's schemaChanges: freeze. */
  schemaFrozen: 'LOAD_SCHEMA_FROZEN',
  /** Serialization failure or deadlock: retry the window transaction. */
  conflict: 'LOAD_CONFLICT',
  /** The connection was lost: retry the window transaction. */
  connection: 'LOAD_CONNECTION',
  /** Any other database error. */
  failed: 'LOAD_FAILED',
} as const;

const RETRYABLE_SQLSTATES = new Set(['40001', '40P01']);
const CONNECTION_CODES = new Set([
  'ECONNRESET',
  'EPIPE',
  'ECONNREFUSED',
  'ETIMEDOUT',
  '57P01',
  '57P02',
  '57P03',
]);

/** Statements PostgreSQL refused, by SQLSTATE or its class (two characters): what to do. */
const DATABASE_FIXES: Record<string, string> = {
  '42501': 'grant the role cybs-etl connects as the rights it needs (see sql/roles.sql)',
  '3F000': 'create the schemas with "cybs-etl migrate", then run the command again',
  '42P01': 'create the tables with "cybs-etl migrate", then run the command again',
  '53100': 'free disk space on the database server',
  '53200': 'give the database server more memory, or lower defaults.globalConcurrency',
  '57014': 'run the command again',
  '40': 'run the command again',
  '25': 'run the command again',
};

/** What to do about a statement PostgreSQL refused; undefined when nothing general helps. */
export function databaseErrorFix(code: string | undefined): string | undefined {
  return code ? (DATABASE_FIXES[code] ?? DATABASE_FIXES[code.slice(0, 2)]) : undefined;
}

interface PgErrorLike {
  code?: unknown;
  where?: unknown;
  detail?: unknown;
  column?: unknown;
  table?: unknown;
}

/** The SQLSTATE (or Node error code) of an error thrown by pg. */
export function sqlState(error: unknown): string | undefined {
  const code = (error as PgErrorLike | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * The database connection is gone (reset, terminated by the server, or pg's client unusable after
 * such an error), as opposed to a statement that failed on a live connection.
 */
export function isConnectionLost(error: unknown): boolean {
  const code = sqlState(error);
  return (
    (code !== undefined && (CONNECTION_CODES.has(code) || code.startsWith('08'))) ||
    /Connection terminated|connection.*(closed|ended)|not queryable/i.test(errorMessage(error))
  );
}

/**
 * Turn anything thrown during a window load into a CybsError: CybsErrors pass through; deadlocks
 * and serialization failures (40P01, 40001) and lost connections are retryable; the rest is
 * `LOAD_FAILED` with the database's message.
 */
export function toLoadError(error: unknown, context: Record<string, unknown> = {}): CybsError {
  if (error instanceof CybsError) return error;
  const code = sqlState(error);
  const where = context.table ? ` while loading ${String(context.table)}` : '';
  const pgContext: Record<string, unknown> = { ...context };
  if (code) pgContext.sqlState = code;
  const e = error as PgErrorLike | null;
  if (typeof e?.detail === 'string') pgContext.detail = e.detail;
  if (typeof e?.where === 'string') pgContext.where = e.where;
  if (code && RETRYABLE_SQLSTATES.has(code)) {
    return new CybsError(
      LOAD_ERROR_CODES.conflict,
      `${code === '40P01' ? 'Deadlock' : 'Serialization failure'}${where}: ${errorMessage(error)}. ` +
        'Nothing was committed; retry the window.',
      { stage: 'load', retryable: true, cause: error, context: pgContext },
    );
  }
  if (isConnectionLost(error)) {
    return new CybsError(
      LOAD_ERROR_CODES.connection,
      `Lost the database connection${where}: ${errorMessage(error)}. Nothing was committed; retry the window.`,
      { stage: 'load', retryable: true, cause: error, context: pgContext },
    );
  }
  return new CybsError(LOAD_ERROR_CODES.failed, `Load failed${where}: ${errorMessage(error)}`, {
    stage: 'load',
    cause: error,
    context: pgContext,
  });
}
