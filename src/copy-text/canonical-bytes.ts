/**
 * Canonical forms checked, and decimal numbers written, on bytes, for scanners that must not make a
 * string of every value they pass (the strings, regular expressions and garbage would cost a
 * large share of a load's main thread). Each check answers exactly what
 * its regular expression in CANONICAL (canonical.ts) answers for the latin1 text of the same bytes
 * (test/unit/copy-text/canonical-bytes.test.ts compares them).
 */
import type { PgType } from '../catalog/index.js';

/** Whether bytes [s, e) are in a column type's canonical form. */
export type ByteCheck = (b: Buffer, s: number, e: number) => boolean;

const ZERO = 0x30;
const NINE = 0x39;
const MINUS = 0x2d;
const DOT = 0x2e;
const COLON = 0x3a;

const isDigit = (c: number | undefined): boolean => c !== undefined && c >= ZERO && c <= NINE;

/** The longest canonical decimal: any decimal this long fits PostgreSQL's numeric. */
export const MAX_CANONICAL_DECIMAL = 16383;

/**
 * `-?(0|[1-9][0-9]*)(\.[0-9]+)?` and not a negative zero (`-0`, `-0.00`), at most
 * MAX_CANONICAL_DECIMAL characters: CANONICAL.numeric less NEGATIVE_ZERO, which is also the form
 * the catalog's coerceNumeric returns unchanged.
 */
export function canonicalDecimal(b: Buffer, s: number, e: number): boolean {
  if (e - s > MAX_CANONICAL_DECIMAL) return false;
  let j = s;
  const negative = b[j] === MINUS;
  if (negative) j++;
  let nonZero = false;
  if (j < e && b[j] === ZERO) j++;
  else if (j < e && b[j]! > ZERO && b[j]! <= NINE) {
    nonZero = true;
    while (j < e && isDigit(b[j])) j++;
  } else return false;
  if (j < e) {
    if (b[j] !== DOT) return false;
    j++;
    if (j >= e) return false;
    for (; j < e; j++) {
      const c = b[j]!;
      if (c < ZERO || c > NINE) return false;
      if (c !== ZERO) nonZero = true;
    }
  }
  return !negative || nonZero;
}

/** `-?[0-9]{1,max}` */
function signedDigits(max: number): ByteCheck {
  return (b, s, e) => {
    const j = b[s] === MINUS ? s + 1 : s;
    if (e - j < 1 || e - j > max) return false;
    for (let k = j; k < e; k++) if (!isDigit(b[k])) return false;
    return true;
  };
}

/** `[0-9]{4}-[0-9]{2}-[0-9]{2}` at s, the year not 0000 (PostgreSQL has no year 0). */
function datePart(b: Buffer, s: number): boolean {
  return (
    !(b[s] === ZERO && b[s + 1] === ZERO && b[s + 2] === ZERO && b[s + 3] === ZERO) &&
    isDigit(b[s]) &&
    isDigit(b[s + 1]) &&
    isDigit(b[s + 2]) &&
    isDigit(b[s + 3]) &&
    b[s + 4] === MINUS &&
    isDigit(b[s + 5]) &&
    isDigit(b[s + 6]) &&
    b[s + 7] === MINUS &&
    isDigit(b[s + 8]) &&
    isDigit(b[s + 9])
  );
}

/** `T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?Z` exactly over [s, e). */
function timePart(b: Buffer, s: number, e: number): boolean {
  const len = e - s;
  // T HH:MM:SS Z = 10; with a fraction of 1–6 digits 12–17.
  if (len !== 10 && (len < 12 || len > 17)) return false;
  if (b[s] !== 0x54 /* T */ || b[e - 1] !== 0x5a /* Z */) return false;
  const h1 = b[s + 1]!;
  const h2 = b[s + 2]!;
  if (!isDigit(h1) || !isDigit(h2) || h1 > 0x32 || (h1 === 0x32 && h2 > 0x33)) return false;
  if (b[s + 3] !== COLON || b[s + 6] !== COLON) return false;
  if (!isDigit(b[s + 4]) || b[s + 4]! > 0x35 || !isDigit(b[s + 5])) return false;
  if (!isDigit(b[s + 7]) || b[s + 7]! > 0x35 || !isDigit(b[s + 8])) return false;
  if (len === 10) return true;
  if (b[s + 9] !== DOT) return false;
  for (let k = s + 10; k < e - 1; k++) if (!isDigit(b[k])) return false;
  return true;
}

/** CANONICAL.timestamptz */
export function canonicalTimestamp(b: Buffer, s: number, e: number): boolean {
  return e - s >= 20 && datePart(b, s) && timePart(b, s + 10, e);
}

/** CANONICAL.date: a date, or a canonical UTC timestamp. */
export function canonicalDate(b: Buffer, s: number, e: number): boolean {
  if (e - s < 10 || !datePart(b, s)) return false;
  return e - s === 10 || timePart(b, s + 10, e);
}

/** The byte checks of CANONICAL's types; boolean (rare, case-insensitive words) has none. */
export const CANONICAL_BYTES: Readonly<Record<PgType, ByteCheck | undefined>> = {
  text: undefined,
  numeric: canonicalDecimal,
  integer: signedDigits(9),
  bigint: signedDigits(18),
  boolean: undefined,
  date: canonicalDate,
  timestamptz: canonicalTimestamp,
};

/** A non-negative integer's decimal digits at `o`; the offset after them. */
export function writeDecimal(out: Buffer, o: number, n: number): number {
  if (n < 10) {
    out[o] = ZERO + n;
    return o + 1;
  }
  let digits = 0;
  for (let m = n; m > 0; m = Math.floor(m / 10)) digits++;
  let p = o + digits;
  for (let m = n; m > 0; m = Math.floor(m / 10)) out[--p] = ZERO + (m % 10);
  return o + digits;
}
