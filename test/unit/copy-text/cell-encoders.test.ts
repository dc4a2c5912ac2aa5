import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  encoderFor,
  escapeCopyText,
  escapeCopyTextLossy,
  trustedEncoder,
  typeFamily,
  validatingEncoder,
} from '../../../src/copy-text/cell-encoders.js';
import { copyTextField } from '../../../src/parse/csv/raw-csv-report.js';

/** What PostgreSQL's COPY text reader does with a cell (the subset of escapes we produce). */
function decode(cell: string): string | null {
  if (cell === '\\N') return null;
  return cell.replace(/\\(.)/g, (_m, c: string) => ({ t: '\t', n: '\n', r: '\r' })[c] ?? c);
}

describe("copyTextField (a value in the CSV fast path's comma-delimited COPY text)", () => {
  it('escapes the comma besides what escapeCopyText escapes', () => {
    expect(copyTextField('TransactionRequestReport_Daily/2026-11-18')).toBe(
      'TransactionRequestReport_Daily/2026-11-18',
    );
    expect(copyTextField('a,b\\c\td\ne\rf')).toBe('a\\,b\\\\c\\td\\ne\\rf');
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }).filter((t) => !t.includes('\0')),
        (text) => {
          const field = copyTextField(text)!;
          expect(field.replace(/\\./g, '')).not.toMatch(/[,\t\n\r\\]/);
          expect(decode(field)).toBe(text);
        },
      ),
    );
  });

  it('has no field for the empty string (NULL in that format) or a NUL character', () => {
    expect(copyTextField('')).toBeUndefined();
    expect(copyTextField('a\0b')).toBeUndefined();
  });
});

describe('escapeCopyText', () => {
  it('escapes backslash, tab, newline and carriage return', () => {
    expect(escapeCopyText('plain')).toBe('plain');
    expect(escapeCopyText('a\tb\nc\rd\\e')).toBe('a\\tb\\nc\\rd\\\\e');
    expect(escapeCopyText('\\N')).toBe('\\\\N');
  });

  it('refuses NUL characters, which PostgreSQL text cannot hold', () => {
    expect(escapeCopyText('a\0b')).toBeUndefined();
    expect(escapeCopyTextLossy('a\0b\t')).toBe('a\uFFFDb\\t');
  });

  it('round-trips any text without NUL, and never emits a raw separator', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (text) => {
        const clean = text.replace(/\0/g, '');
        const cell = escapeCopyText(clean)!;
        expect(cell).not.toMatch(/[\t\n\r]/);
        expect(decode(cell)).toBe(clean);
      }),
    );
  });
});

describe('trustedEncoder', () => {
  it('encodes null, strings, numbers and booleans', () => {
    expect(trustedEncoder(null)).toBe('\\N');
    expect(trustedEncoder(undefined)).toBe('\\N');
    expect(trustedEncoder('x\ty')).toBe('x\\ty');
    expect(trustedEncoder(12.5)).toBe('12.5');
    expect(trustedEncoder(Number.NaN)).toBe('NaN');
    expect(trustedEncoder(true)).toBe('t');
    expect(trustedEncoder(false)).toBe('f');
  });
});

describe('typeFamily and encoderFor', () => {
  it('groups type spellings', () => {
    expect(typeFamily('numeric(12,2)')).toBe('numeric');
    expect(typeFamily('timestamp with time zone')).toBe('timestamp');
    expect(typeFamily('timestamptz')).toBe('timestamp');
    expect(typeFamily('character varying(20)')).toBe('text');
    expect(typeFamily('BIGINT')).toBe('integer');
    expect(typeFamily('inet')).toBe('other');
  });

  it('trusts matching types and validates drifting ones', () => {
    expect(encoderFor('numeric', 'numeric(12,2)')).toBe(trustedEncoder);
    expect(encoderFor('timestamptz', 'timestamp with time zone')).toBe(trustedEncoder);
    expect(encoderFor('inet', 'inet')).toBe(trustedEncoder);
    expect(encoderFor('text', 'numeric(12,2)')('abc')).toBeUndefined();
    expect(encoderFor('text', 'inet')('10.0.0.1')).toBe('10.0.0.1');
  });
});

describe('validatingEncoder', () => {
  const cases: [string, unknown, string | undefined][] = [
    ['numeric(12,2)', '12.50', '12.50'],
    ['numeric', ' -1e3 ', '-1e3'],
    ['numeric', 'NaN', 'NaN'],
    ['numeric', '', '\\N'],
    ['numeric', 'n/a', undefined],
    ['numeric', '1,000.00', undefined],
    ['numeric', true, undefined],
    ['integer', '42', '42'],
    ['integer', '2147483648', undefined],
    ['bigint', '9223372036854775807', '9223372036854775807'],
    ['bigint', '9223372036854775808', undefined],
    ['smallint', 40000, undefined],
    ['integer', 1.5, undefined],
    ['boolean', 'Yes', 'Yes'],
    ['boolean', 'maybe', undefined],
    ['boolean', 1, 't'],
    ['date', '2026-02-28', '2026-02-28'],
    ['date', '2026-02-30', undefined],
    ['date', '11/20/2026', undefined],
    ['timestamptz', '2026-11-20T10:00:00.123Z', '2026-11-20T10:00:00.123Z'],
    ['timestamp with time zone', '2026-11-20 10:00:00+05:30', '2026-11-20 10:00:00+05:30'],
    ['timestamptz', 'yesterday', undefined],
    ['jsonb', '{"a":1}', '{"a":1}'],
    ['jsonb', '{a:1}', undefined],
    ['uuid', '123e4567-e89b-12d3-a456-426614174000', '123e4567-e89b-12d3-a456-426614174000'],
    ['uuid', 'nope', undefined],
    ['text', true, 'true'],
    ['text', 12, '12'],
    ['text', 'a\nb', 'a\\nb'],
  ];
  it.each(cases)('%s ← %j gives %j', (type, value, expected) => {
    expect(validatingEncoder(type)(value as never)).toBe(expected);
  });
});
