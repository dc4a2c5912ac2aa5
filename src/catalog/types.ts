/**
 * Type rules: how a report value (always text in CSV/XML, sometimes a JSON scalar) becomes a typed
 * warehouse value. Written once, used by every parser.
 *
 * | pgType        | accepted input                                                        | output            |
 * |---------------|-----------------------------------------------------------------------|-------------------|
 * | `numeric`     | `[+-]digits[.digits]` (also `.5`, `5.`); no exponent, no thousands     | canonical decimal |
 * |               | separator, no NaN/Infinity; surrounding blanks ignored                 | string, scale kept|
 * | `timestamptz` | ISO 8601 `YYYY-MM-DD[T ]HH:MM[:SS[.fff…]]` with `Z`, `±HH:MM`, `±HHMM`, | ISO UTC string    |
 * |               | `±HH` or no zone (= UTC); a bare `YYYY-MM-DD` = midnight UTC            | `…T…Z`            |
 * | `date`        | `YYYY-MM-DD`; a timestamp is accepted and its date *as written* is kept | `YYYY-MM-DD`      |
 * | `integer`     | `[+-]digits` within int32                                              | JS number         |
 * | `bigint`      | `[+-]digits` within int64                                              | canonical string  |
 * | `boolean`     | Y/N, yes/no, true/false, t/f, 1/0 (any case)                            | boolean           |
 * | `text`        | anything (codes, ids, card suffixes, routing numbers keep leading zeros)| the string as is  |
 *
 * An empty string (or only blanks, for non-text types) is `null`. A value that cannot be coerced is
 * `INVALID`; callers turn it into a `MAP_INVALID_VALUE` reject naming field, value and `expected`.
 *
 * Decisions:
 *  - A timestamp without a zone (`2003-05-01 10:00:00`) is taken as UTC: report files state their
 *    times in UTC (facts §5.1) and guessing the subscription's zone would be worse than being explicit.
 *  - A date-only value in a timestamptz column (legacy `batch_date` = `2003-05-01`) is midnight UTC, so
 *    one column can hold both the legacy date and the REST-era timestamp of the same field.
 *  - A timestamp in a date column keeps the calendar date written in the file (not the UTC date),
 *    because a report's dates are in the report's own time zone.
 */

export const PG_TYPES = ['text', 'numeric', 'integer', 'bigint', 'boolean', 'date', 'timestamptz'] as const;
export type PgType = (typeof PG_TYPES)[number];

export type TypedValue = string | number | boolean | null;

/** Marker returned by a coercer for a value it cannot accept (no exception on the hot path). */
export const INVALID: unique symbol = Symbol('INVALID');
export type Invalid = typeof INVALID;

export type Coercer = (value: string) => TypedValue | Invalid;

/** What a type expects, for error messages. */
export const EXPECTED_FORM: Record<PgType, string> = {
  text: 'text',
  numeric: 'a decimal number such as 123.45 or -0.0100 (no exponent, no thousands separator)',
  integer: 'a whole number between -2147483648 and 2147483647',
  bigint: 'a whole number within 64 bits',
  boolean: 'Y/N, true/false or 1/0',
  date: 'a date YYYY-MM-DD',
  timestamptz: 'an ISO 8601 timestamp such as 2023-10-11T04:15:21Z or 2019-05-01T00:00:00.000+0000',
};

const FAST_DECIMAL = /^-?(?:0|[1-9]\d*)(?:\.\d+)?$/;
const DECIMAL = /^([+-]?)(\d*)(?:\.(\d*))?$/;

/** PostgreSQL's numeric holds at most 131072 digits before the point and 16383 after it. */
function fitsNumeric(value: string): boolean {
  if (value.length <= 16383) return true;
  const point = value.indexOf('.');
  const int = (point < 0 ? value : value.slice(0, point)).replace(/^\s*[-+]?0*/, '');
  return int.length <= 131072 && (point < 0 || value.trimEnd().length - point - 1 <= 16383);
}

export function coerceNumeric(value: string): string | null | Invalid {
  if (!fitsNumeric(value)) return INVALID;
  if (FAST_DECIMAL.test(value)) return value === '-0' || /^-0\.0+$/.test(value) ? value.slice(1) : value;
  const s = value.trim();
  if (s === '') return null;
  const m = DECIMAL.exec(s);
  if (m === null) return INVALID;
  const sign = m[1] === '-' ? '-' : '';
  let int = m[2] ?? '';
  const frac = m[3];
  if (int === '' && (frac === undefined || frac === '')) return INVALID;
  int = int.replace(/^0+(?=\d)/, '');
  if (int === '') int = '0';
  const out = frac === undefined || frac === '' ? int : `${int}.${frac}`;
  if (sign === '-' && /^[0.]*$/.test(out)) return out; // -0.00 is 0.00 (PostgreSQL has no negative zero)
  return sign + out;
}

const INTEGER = /^[+-]?\d+$/;
const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;

export function coerceInteger(value: string): number | null | Invalid {
  const s = value.trim();
  if (s === '') return null;
  if (!INTEGER.test(s)) return INVALID;
  const n = Number(s);
  if (n > 2147483647 || n < -2147483648) return INVALID;
  return n === 0 ? 0 : n;
}

export function coerceBigint(value: string): string | null | Invalid {
  const s = value.trim();
  if (s === '') return null;
  if (!INTEGER.test(s)) return INVALID;
  const n = BigInt(s);
  if (n > INT64_MAX || n < INT64_MIN) return INVALID;
  return n.toString();
}

/** The words coerceBoolean reads as true and false (after trimming, in lower case). */
export const BOOLEAN_TRUE_WORDS: ReadonlySet<string> = new Set(['y', 'yes', 'true', 't', '1']);
export const BOOLEAN_FALSE_WORDS: ReadonlySet<string> = new Set(['n', 'no', 'false', 'f', '0']);

export function coerceBoolean(value: string): boolean | null | Invalid {
  const s = value.trim().toLowerCase();
  if (s === '') return null;
  if (BOOLEAN_TRUE_WORDS.has(s)) return true;
  if (BOOLEAN_FALSE_WORDS.has(s)) return false;
  return INVALID;
}

const TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?|\s?(?:UTC|GMT))?$/;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function validDate(y: number, mo: number, d: number): boolean {
  // Year 0000 does not exist for PostgreSQL (1 BC precedes AD 1): it refuses such a date.
  if (y < 1 || mo < 1 || mo > 12 || d < 1) return false;
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const max = mo === 2 && leap ? 29 : (DAYS_IN_MONTH[mo - 1] ?? 0);
  return d <= max;
}

function digits(s: string, from: number, count: number): number {
  let n = 0;
  for (let i = from; i < from + count; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    n = n * 10 + c;
  }
  return n;
}

/**
 * Fast path for the common UTC forms `YYYY-MM-DDTHH:MM:SSZ` and `YYYY-MM-DDTHH:MM:SS.sssZ` (no Date,
 * no regex); undefined when the value has another form.
 */
function fastUtcTimestamp(s: string): string | Invalid | undefined {
  const len = s.length;
  if ((len !== 20 && len !== 24) || s.charCodeAt(len - 1) !== 90 /* Z */) return undefined;
  if (s[4] !== '-' || s[7] !== '-' || s[10] !== 'T' || s[13] !== ':' || s[16] !== ':') return undefined;
  if (len === 24 && (s[19] !== '.' || digits(s, 20, 3) < 0)) return undefined;
  const y = digits(s, 0, 4);
  const mo = digits(s, 5, 2);
  const d = digits(s, 8, 2);
  const h = digits(s, 11, 2);
  const mi = digits(s, 14, 2);
  const sec = digits(s, 17, 2);
  if (y < 0 || mo < 0 || d < 0 || h < 0 || mi < 0 || sec < 0) return undefined;
  if (!validDate(y, mo, d) || h > 23 || mi > 59 || sec > 59) return INVALID;
  return len === 24 ? s : `${s.slice(0, 19)}.000Z`;
}

export function coerceTimestamptz(value: string): string | null | Invalid {
  const fast = fastUtcTimestamp(value);
  if (fast !== undefined) return fast;
  const s = value.trim();
  if (s === '') return null;
  const m = TIMESTAMP.exec(s);
  if (m === null) return INVALID;
  const y = Number(m[1]);
  const mo = Number(m[2]);
  const d = Number(m[3]);
  if (!validDate(y, mo, d)) return INVALID;
  const h = m[4] === undefined ? 0 : Number(m[4]);
  const mi = m[5] === undefined ? 0 : Number(m[5]);
  const sec = m[6] === undefined ? 0 : Number(m[6]);
  if (h > 23 || mi > 59 || sec > 59) return INVALID;
  const fraction = m[7] ?? '';
  const ms = fraction === '' ? 0 : Number(fraction.slice(0, 3).padEnd(3, '0'));
  let offsetMinutes = 0;
  const zone = m[8];
  if (zone !== undefined && zone.length > 0 && /^[+-]/.test(zone)) {
    const digits = zone.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2));
    const om = digits.length > 2 ? Number(digits.slice(2, 4)) : 0;
    if (oh > 18 || om > 59) return INVALID;
    offsetMinutes = (zone[0] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  // Not Date.UTC: it reads years 0–99 as 1900–1999.
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  date.setUTCHours(h, mi, sec, ms);
  date.setTime(date.getTime() - offsetMinutes * 60_000);
  const year = date.getUTCFullYear();
  if (year < 1 || year > 9999) return INVALID;
  let iso = date.toISOString();
  // Keep sub-millisecond digits (PostgreSQL stores microseconds).
  const micro = fraction.slice(3, 6).replace(/0+$/, '');
  if (micro !== '') iso = `${iso.slice(0, -1)}${micro.padEnd(3, '0')}Z`;
  return iso;
}

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;

export function coerceDate(value: string): string | null | Invalid {
  const s = value.trim();
  if (s === '') return null;
  const m = DATE_ONLY.exec(s);
  if (m !== null) {
    return validDate(Number(m[1]), Number(m[2]), Number(m[3])) ? s : INVALID;
  }
  // A timestamp: validate it whole, keep the date as written.
  if (coerceTimestamptz(s) === INVALID) return INVALID;
  return `${s.slice(0, 4)}-${s.slice(5, 7)}-${s.slice(8, 10)}`;
}

export function coerceText(value: string): string | null {
  return value === '' ? null : value;
}

function nullOnEmpty<T>(fn: (v: string) => T | null | Invalid): Coercer {
  return (v: string) => (v === '' ? null : (fn(v) as TypedValue | Invalid));
}

const COERCERS: Record<PgType, Coercer> = {
  text: coerceText,
  numeric: nullOnEmpty(coerceNumeric),
  integer: nullOnEmpty(coerceInteger),
  bigint: nullOnEmpty(coerceBigint),
  boolean: nullOnEmpty(coerceBoolean),
  date: nullOnEmpty(coerceDate),
  timestamptz: nullOnEmpty(coerceTimestamptz),
};

/** The coercer of a PostgreSQL type (precomputed once per column by the parsers). */
export function coercerFor(pgType: PgType): Coercer {
  return COERCERS[pgType];
}

/** Coerce one value, `INVALID` if it does not fit. */
export function coerceValue(pgType: PgType, value: string): TypedValue | Invalid {
  return COERCERS[pgType](value);
}

/** A value cut to `max` characters for messages and reject logs. */
export function truncateForMessage(value: string, max = 80): string {
  return value.length <= max ? value : `${value.slice(0, max - 1)}…`;
}
