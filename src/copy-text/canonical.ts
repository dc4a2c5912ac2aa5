/**
 * Canonical values: the forms of a non-text value that the catalog's coercer (per-row path) and
 * PostgreSQL's input function read identically, so the fast paths may send them to COPY as written.
 */
import { BOOLEAN_FALSE_WORDS, BOOLEAN_TRUE_WORDS, coerceTimestamptz } from '../catalog/index.js';
import type { PgType } from '../catalog/index.js';

/**
 * The canonical forms (unquoted, or quoted without quotes inside); empty values are NULL. Shared
 * with the fast XML path (canonicalCopyValue). A date may also be written as a canonical UTC
 * timestamp (Funding Detail reports write their funding date so): the catalog's coercer keeps the
 * date as written, and PostgreSQL's date input reads the same date whatever its TimeZone.
 */
export const CANONICAL: Record<PgType, RegExp | undefined> = {
  text: undefined,
  numeric: /^(?=.{1,16383}$)-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?$/,
  integer: /^-?[0-9]{1,9}$/,
  bigint: /^-?[0-9]{1,18}$/,
  boolean: new RegExp(`^(?:${[...BOOLEAN_TRUE_WORDS, ...BOOLEAN_FALSE_WORDS].join('|')})$`, 'i'),
  date: /^(?!0000)[0-9]{4}-[0-9]{2}-[0-9]{2}(?:T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,6})?Z)?$/,
  timestamptz:
    /^(?!0000)[0-9]{4}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,6})?Z$/,
};
/** -0 reads as 0 in PostgreSQL, and as an unusual form in the coercer. */
export const NEGATIVE_ZERO = /^-0(?:\.0+)?$/;

/**
 * A non-empty raw value of a column of type `pgType` as the COPY text field to send, or undefined
 * when the per-row path must judge it (it might type it otherwise, or reject it). Text is returned
 * as it is (the caller escapes it). A timestamp in another form than canonical UTC (an offset,
 * a space for `T`, no seconds, a bare date: `2008-09-10 21:46:41.765-08:00`) is sent as the UTC
 * instant the catalog's coercer makes of it, which is the value the per-row path loads.
 */
export function canonicalCopyValue(pgType: PgType, value: string): string | undefined {
  if (pgType === 'text') return value;
  if (pgType === 'boolean') {
    const lower = value.toLowerCase();
    return BOOLEAN_TRUE_WORDS.has(lower) ? 't' : BOOLEAN_FALSE_WORDS.has(lower) ? 'f' : undefined;
  }
  if (pgType === 'timestamptz' && !CANONICAL.timestamptz!.test(value)) {
    const utc = coerceTimestamptz(value);
    return typeof utc === 'string' ? utc : undefined;
  }
  if (!CANONICAL[pgType]!.test(value)) return undefined;
  if (pgType === 'numeric' && NEGATIVE_ZERO.test(value)) return undefined;
  return value;
}
