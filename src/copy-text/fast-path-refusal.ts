/**
 * The refusal of a fast load path: the file is outside what it can load exactly as the per-row
 * path does, and the caller loads it record by record instead.
 */
import { CybsError } from '../errors.js';

export const FAST_PATH_REFUSED = 'LOAD_FAST_PATH_REFUSED';

export function refuseFastPath(reason: string, cause?: unknown): CybsError {
  return new CybsError(FAST_PATH_REFUSED, `The fast load path cannot load this file: ${reason}.`, {
    stage: 'load',
    context: { reason },
    ...(cause !== undefined ? { cause } : {}),
  });
}

export function isFastPathRefusal(error: unknown): boolean {
  return error instanceof CybsError && error.code === FAST_PATH_REFUSED;
}

/**
 * A failure of the bytes fed to a fast-path COPY rather than of PostgreSQL: a structural error of
 * the file (e.g. PARSE_CSV_TRUNCATED) or of its download (the bytes are read as they arrive). It
 * fails the window as on the per-row path, or restarts it; it never sends the file to the per-row
 * path, which only what PostgreSQL refuses does.
 */
export function isSourceFailure(error: unknown): boolean {
  return error instanceof CybsError && (['parse', 'extract', 'api'] as string[]).includes(error.stage);
}
