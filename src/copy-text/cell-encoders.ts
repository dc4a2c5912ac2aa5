import type { LoadValue } from './bodies.js';

/**
 * COPY text-format encoding (https://www.postgresql.org/docs/current/sql-copy.html, "Text Format"):
 * columns separated by a tab, rows by a newline, `\N` for NULL, and backslash, tab, newline and
 * carriage return escaped. One encoder per column is chosen up front so the hot loop is one
 * function call per cell.
 *
 * An encoder returns `undefined` when the value cannot go into the column: the record is rejected
 * instead of making PostgreSQL refuse the whole COPY.
 */
export type CellEncoder = (value: LoadValue | undefined) => string | undefined;

export const COPY_NULL = '\\N';

const NEEDS_ESCAPE = /[\\\t\n\r\0]/;
const ESCAPABLE = /[\\\t\n\r]/g;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
const escapeOne = (c: string): string => ESCAPES[c]!;

/** Escape text for a COPY text cell; `undefined` when it holds a NUL character (PostgreSQL text cannot). */
export function escapeCopyText(text: string): string | undefined {
  if (!NEEDS_ESCAPE.test(text)) return text;
  if (text.includes('\0')) return undefined;
  return text.replace(ESCAPABLE, escapeOne);
}

/**
 * A typed value as a COPY text cell, as the parsers type it (numbers and canonical strings from the
 * coercers); `undefined` for text holding a NUL character.
 */
export function encodeCopyValue(value: LoadValue | undefined): string | undefined {
  if (value === null || value === undefined) return COPY_NULL;
  if (typeof value === 'string') return escapeCopyText(value);
  if (typeof value === 'number') return Number.isNaN(value) ? 'NaN' : String(value);
  return value ? 't' : 'f';
}

/** Escape text that must be stored whatever it holds (raw text of rejects): NUL becomes U+FFFD. */
export function escapeCopyTextLossy(text: string): string {
  return escapeCopyText(text) ?? escapeCopyText(text.replace(/\0/g, '\uFFFD'))!;
}

/**
 * Families of PostgreSQL types, enough to tell whether a source column's values fit an existing
 * column. `numeric(12,2)` and `decimal` are both `numeric`; `varchar(20)` is `text`.
 */
export type TypeFamily =
  'text' | 'numeric' | 'integer' | 'float' | 'boolean' | 'date' | 'timestamp' | 'json' | 'uuid' | 'other';

export function typeFamily(pgType: string): TypeFamily {
  const t = pgType
    .trim()
    .toLowerCase()
    .replace(/\s*\([^)]*\)/g, '')
    .replace(/\s+/g, ' ');
  if (t.endsWith('[]')) return 'other';
  switch (t) {
    case 'text':
    case 'varchar':
    case 'character varying':
    case 'char':
    case 'character':
    case 'bpchar':
    case 'name':
    case 'citext':
      return 'text';
    case 'numeric':
    case 'decimal':
    case 'money':
      return 'numeric';
    case 'smallint':
    case 'int2':
    case 'integer':
    case 'int':
    case 'int4':
    case 'bigint':
    case 'int8':
      return 'integer';
    case 'real':
    case 'float4':
    case 'double precision':
    case 'float8':
    case 'float':
      return 'float';
    case 'boolean':
    case 'bool':
      return 'boolean';
    case 'date':
      return 'date';
    case 'timestamptz':
    case 'timestamp':
    case 'timestamp with time zone':
    case 'timestamp without time zone':
      return 'timestamp';
    case 'json':
    case 'jsonb':
      return 'json';
    case 'uuid':
      return 'uuid';
    default:
      return 'other';
  }
}

function integerRange(pgType: string): [bigint, bigint] {
  const t = pgType.trim().toLowerCase();
  if (t === 'smallint' || t === 'int2') return [-32768n, 32767n];
  if (t === 'integer' || t === 'int' || t === 'int4') return [-2147483648n, 2147483647n];
  return [-9223372036854775808n, 9223372036854775807n];
}

/**
 * The encoder for values that a parser typed for this very column type: strings are escaped,
 * numbers printed, booleans `t`/`f`. No validation: the parser already did it.
 */
export const trustedEncoder: CellEncoder = (value) => {
  if (value === null || value === undefined) return COPY_NULL;
  if (typeof value === 'string') return escapeCopyText(value);
  if (typeof value === 'number') return Number.isNaN(value) ? 'NaN' : String(value);
  return value ? 't' : 'f';
};

const NUMERIC = /^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$/;
const SPECIAL_NUMBER = /^\s*(?:[+-]?infinity|nan)\s*$/i;
const INTEGER = /^\s*[+-]?\d+\s*$/;
const BOOLEAN_TEXT = /^\s*(?:t|f|true|false|y|n|yes|no|on|off|1|0)\s*$/i;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIMESTAMP =
  /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)?\s*(?:Z|UTC|GMT|[+-]\d{2}(?::?\d{2})?)?$/i;
const UUID = /^\s*\{?[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\}?\s*$/i;

function validDate(text: string): boolean {
  const m = DATE.exec(text.trim());
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(Date.UTC(y, mo - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
}

/**
 * An encoder that checks each value against the existing column's type. Used only for source
 * columns whose declared type differs from the table column's type (a schema drift), so the usual
 * path stays the trusted one. An empty string in a non-text column is taken as NULL (an empty
 * cell), anything that does not parse as the column's type is refused (`undefined`).
 */
export function validatingEncoder(columnType: string): CellEncoder {
  const family = typeFamily(columnType);
  switch (family) {
    case 'text':
    case 'other':
      return (value) => {
        if (value === null || value === undefined) return COPY_NULL;
        if (typeof value === 'string') return escapeCopyText(value);
        if (typeof value === 'number') return Number.isNaN(value) ? 'NaN' : String(value);
        return value ? (family === 'text' ? 'true' : 't') : family === 'text' ? 'false' : 'f';
      };
    case 'numeric':
    case 'float':
      return (value) => {
        if (value === null || value === undefined || value === '') return COPY_NULL;
        if (typeof value === 'number') return Number.isNaN(value) ? 'NaN' : String(value);
        if (typeof value === 'string' && (NUMERIC.test(value) || SPECIAL_NUMBER.test(value)))
          return value.trim();
        return undefined;
      };
    case 'integer': {
      const [min, max] = integerRange(columnType);
      return (value) => {
        if (value === null || value === undefined || value === '') return COPY_NULL;
        let text: string;
        if (typeof value === 'number') {
          if (!Number.isSafeInteger(value)) return undefined;
          text = String(value);
        } else if (typeof value === 'string' && INTEGER.test(value)) {
          text = value.trim();
        } else {
          return undefined;
        }
        const n = BigInt(text);
        return n < min || n > max ? undefined : text;
      };
    }
    case 'boolean':
      return (value) => {
        if (value === null || value === undefined || value === '') return COPY_NULL;
        if (typeof value === 'boolean') return value ? 't' : 'f';
        if (typeof value === 'number') return value === 1 ? 't' : value === 0 ? 'f' : undefined;
        return BOOLEAN_TEXT.test(value) ? value.trim() : undefined;
      };
    case 'date':
      return (value) => {
        if (value === null || value === undefined || value === '') return COPY_NULL;
        return typeof value === 'string' && validDate(value) ? value.trim() : undefined;
      };
    case 'timestamp':
      return (value) => {
        if (value === null || value === undefined || value === '') return COPY_NULL;
        if (typeof value !== 'string') return undefined;
        const text = value.trim();
        return TIMESTAMP.test(text) && validDate(text.slice(0, 10)) ? text : undefined;
      };
    case 'json':
      return (value) => {
        if (value === null || value === undefined) return COPY_NULL;
        if (typeof value !== 'string') return String(value);
        try {
          JSON.parse(value);
        } catch {
          return undefined;
        }
        return escapeCopyText(value);
      };
    case 'uuid':
      return (value) => {
        if (value === null || value === undefined || value === '') return COPY_NULL;
        return typeof value === 'string' && UUID.test(value) ? value.trim() : undefined;
      };
  }
}

/**
 * Choose the encoder of a source column loading into a table column: trusted when both types
 * belong to one family, validating against the table column's type otherwise.
 */
export function encoderFor(sourceType: string, columnType: string): CellEncoder {
  const family = typeFamily(columnType);
  const sameType =
    typeFamily(sourceType) === family &&
    (family !== 'other' || sourceType.trim().toLowerCase() === columnType.trim().toLowerCase());
  return sameType ? trustedEncoder : validatingEncoder(columnType);
}
