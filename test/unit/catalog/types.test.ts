import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  INVALID,
  coerceBoolean,
  coerceDate,
  coerceInteger,
  coerceBigint,
  coerceNumeric,
  coerceTimestamptz,
  coerceValue,
  truncateForMessage,
} from '../../../src/catalog/types.js';

describe('numeric', () => {
  it('keeps the value exact and its scale', () => {
    expect(coerceNumeric('23.00')).toBe('23.00');
    expect(coerceNumeric('-3.7500')).toBe('-3.7500');
    expect(coerceNumeric('+100.00')).toBe('100.00');
    expect(coerceNumeric('0.429')).toBe('0.429');
    expect(coerceNumeric('007.10')).toBe('7.10');
    expect(coerceNumeric('.5')).toBe('0.5');
    expect(coerceNumeric('5.')).toBe('5');
    expect(coerceNumeric(' 12.5 ')).toBe('12.5');
    expect(coerceNumeric('-0.00')).toBe('0.00');
    expect(coerceNumeric('12345678901234567890.123456789')).toBe('12345678901234567890.123456789');
  });
  it('refuses what PostgreSQL numeric cannot hold: over 131072 digits before the point or 16383 after', () => {
    expect(coerceNumeric(`1${'0'.repeat(131071)}`)).not.toBe(INVALID);
    expect(coerceNumeric(`1${'0'.repeat(131072)}`)).toBe(INVALID);
    expect(coerceNumeric(`-${'0'.repeat(20000)}1.5`)).toBe('-1.5');
    expect(coerceNumeric(`0.${'1'.repeat(16383)}`)).not.toBe(INVALID);
    expect(coerceNumeric(`0.${'1'.repeat(16384)}`)).toBe(INVALID);
  });
  it('rejects exponents, separators and non-numbers', () => {
    for (const bad of ['1e5', '12,34', 'NaN', 'Infinity', '1.2.3', '--1', '.', '+', 'abc', '1 000', '0x10'])
      expect(coerceNumeric(bad), bad).toBe(INVALID);
  });
  it('maps empty to null', () => {
    expect(coerceValue('numeric', '')).toBeNull();
    expect(coerceNumeric('  ')).toBeNull();
  });
  it('round-trips any decimal string exactly (property)', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), fc.nat({ max: 12 }), (n, scale) => {
        const abs = (n < 0n ? -n : n).toString().padStart(scale + 1, '0');
        const text = `${n < 0n ? '-' : ''}${scale === 0 ? abs : `${abs.slice(0, -scale)}.${abs.slice(-scale)}`}`;
        const out = coerceNumeric(text);
        const isZero = /^-?[0.]+$/.test(text);
        expect(out).toBe(isZero ? text.replace(/^-/, '') : text);
      }),
    );
  });
});

describe('timestamptz', () => {
  it('normalises the documented forms to UTC', () => {
    expect(coerceTimestamptz('2023-10-11T04:15:21Z')).toBe('2023-10-11T04:15:21.000Z');
    expect(coerceTimestamptz('2017-10-01T10:10:10+05:00')).toBe('2017-10-01T05:10:10.000Z');
    expect(coerceTimestamptz('2019-05-01T00:00:00.000+0000')).toBe('2019-05-01T00:00:00.000Z');
    expect(coerceTimestamptz('2001-08-16T00:01-07:00')).toBe('2001-08-16T07:01:00.000Z');
    expect(coerceTimestamptz('2003-05-01 10:00:00')).toBe('2003-05-01T10:00:00.000Z');
    expect(coerceTimestamptz('2018-04-12T23:20:50.52Z')).toBe('2018-04-12T23:20:50.520Z');
    expect(coerceTimestamptz('2024-03-01T17:30:00.000+05:30')).toBe('2024-03-01T12:00:00.000Z');
    expect(coerceTimestamptz('2020-01-01T00:00:00.123456Z')).toBe('2020-01-01T00:00:00.123456Z');
    expect(coerceTimestamptz('2003-05-01')).toBe('2003-05-01T00:00:00.000Z');
    expect(coerceTimestamptz('2020-01-01T00:30:00-01:00')).toBe('2020-01-01T01:30:00.000Z');
  });
  it('rejects impossible or foreign forms', () => {
    for (const bad of [
      '2023-02-30T00:00:00Z',
      '2023-13-01',
      '2023-10-11T25:00:00Z',
      '11/10/2023',
      'yesterday',
      '2023-10-11T04:15:21+2500',
      '1697000000',
    ])
      expect(coerceTimestamptz(bad), bad).toBe(INVALID);
  });
  it('refuses year 0000 and instants before AD 1 in UTC: PostgreSQL has no year 0 and refuses them', () => {
    for (const bad of [
      '0000-01-01T00:00:00Z',
      '0000-12-31T23:59:59.500Z',
      '0000-06-01',
      '0000-06-01 10:00:00',
      '0001-01-01T00:30:00+01:00',
    ])
      expect(coerceTimestamptz(bad), bad).toBe(INVALID);
    expect(coerceDate('0000-01-01')).toBe(INVALID);
    expect(coerceDate('0000-01-01T00:00:00Z')).toBe(INVALID);
    expect(coerceTimestamptz('0001-01-01T00:00:00Z')).toBe('0001-01-01T00:00:00.000Z');
    expect(coerceDate('0001-01-01')).toBe('0001-01-01');
    // Years below 100 are those years, not 1900 and after.
    expect(coerceTimestamptz('0099-06-01T12:00:00+02:00')).toBe('0099-06-01T10:00:00.000Z');
    expect(coerceTimestamptz('0001-01-01 01:00:00')).toBe('0001-01-01T01:00:00.000Z');
  });
  it('accepts leap days only in leap years', () => {
    expect(coerceTimestamptz('2024-02-29')).toBe('2024-02-29T00:00:00.000Z');
    expect(coerceTimestamptz('2023-02-29')).toBe(INVALID);
    expect(coerceTimestamptz('2000-02-29')).not.toBe(INVALID);
    expect(coerceTimestamptz('1900-02-29')).toBe(INVALID);
  });
  it('agrees with Date for any instant written with any offset (property)', () => {
    fc.assert(
      fc.property(
        fc.date({
          min: new Date('1990-01-01T00:00:00Z'),
          max: new Date('2090-01-01T00:00:00Z'),
          noInvalidDate: true,
        }),
        fc.integer({ min: -12 * 60, max: 14 * 60 }),
        (date, offset) => {
          const local = new Date(date.getTime() + offset * 60_000).toISOString().slice(0, 23);
          const sign = offset < 0 ? '-' : '+';
          const abs = Math.abs(offset);
          const zone = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
          expect(coerceTimestamptz(`${local}${zone}`)).toBe(date.toISOString());
          expect(coerceTimestamptz(`${local}${zone.replace(':', '')}`)).toBe(date.toISOString());
        },
      ),
    );
  });
});

describe('date', () => {
  it('accepts a date, and a timestamp by its date as written', () => {
    expect(coerceDate('2003-05-01')).toBe('2003-05-01');
    expect(coerceDate('2023-10-11T22:15:21-07:00')).toBe('2023-10-11');
    expect(coerceDate('2023-02-30')).toBe(INVALID);
    expect(coerceDate('20230101')).toBe(INVALID);
  });
});

describe('integer, bigint, boolean', () => {
  it('coerces counts', () => {
    expect(coerceInteger('10')).toBe(10);
    expect(coerceInteger('-0')).toBe(0);
    expect(coerceInteger('+7')).toBe(7);
    expect(coerceInteger('2147483648')).toBe(INVALID);
    expect(coerceInteger('1.5')).toBe(INVALID);
    expect(coerceBigint('9223372036854775807')).toBe('9223372036854775807');
    expect(coerceBigint('9223372036854775808')).toBe(INVALID);
    expect(coerceBigint('007')).toBe('7');
  });
  it('coerces Y/N flags', () => {
    expect(coerceBoolean('Y')).toBe(true);
    expect(coerceBoolean('n')).toBe(false);
    expect(coerceBoolean('true')).toBe(true);
    expect(coerceBoolean('0')).toBe(false);
    expect(coerceBoolean('maybe')).toBe(INVALID);
  });
  it('keeps text as is, empty as null', () => {
    expect(coerceValue('text', '0004172180000167905139')).toBe('0004172180000167905139');
    expect(coerceValue('text', ' x ')).toBe(' x ');
    expect(coerceValue('text', '')).toBeNull();
  });
  it('truncates long values for messages', () => {
    expect(truncateForMessage('x'.repeat(200))).toHaveLength(80);
  });
});
