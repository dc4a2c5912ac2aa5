/**
 * The byte checks of canonical forms answer what the CANONICAL expressions (canonical.ts) answer,
 * for the latin1 text of the same bytes: on hand-picked values at every edge and on random ones.
 */
import { describe, expect, it } from 'vitest';
import { CANONICAL_BYTES } from '../../../src/copy-text/canonical-bytes.js';
import { CANONICAL, NEGATIVE_ZERO } from '../../../src/copy-text/canonical.js';
import type { PgType } from '../../../src/catalog/index.js';

const TYPES = Object.keys(CANONICAL_BYTES).filter((t) => CANONICAL_BYTES[t as PgType]) as PgType[];

/** The regular expressions' answer (numeric less its negative zeros, as the CSV scanner checks). */
function expected(type: PgType, text: string): boolean {
  const ok = CANONICAL[type]!.test(text);
  return type === 'numeric' ? ok && !NEGATIVE_ZERO.test(text) : ok;
}

/** The byte check's answer for `text` placed inside other bytes (checks must keep to [s, e)). */
function actual(type: PgType, text: string): boolean {
  const inner = Buffer.from(text, 'latin1');
  const b = Buffer.concat([Buffer.from('9-T:'), inner, Buffer.from('0.Z5')]);
  return CANONICAL_BYTES[type]!(b, 4, 4 + inner.length);
}

const EDGES = [
  '',
  '0',
  '-0',
  '-0.0',
  '-0.01',
  '00',
  '01',
  '1',
  '-',
  '.',
  '1.',
  '.5',
  '-.5',
  '1.5',
  '-1.50',
  '+1',
  '1e5',
  ' 1',
  '1 ',
  '123456789',
  '1234567890',
  '-123456789',
  '123456789012345678',
  '1234567890123456789',
  '-123456789012345678',
  '2026-11-17',
  '2026-11-17T',
  '2026-11-17T10:00:00Z',
  '2026-11-17T23:59:59Z',
  '2026-11-17T24:00:00Z',
  '2026-11-17T29:00:00Z',
  '2026-11-17T30:00:00Z',
  '2026-11-17T09:00:00Z',
  '2026-11-17T19:00:00Z',
  '2026-11-17T00:59:59Z',
  '2026-11-17T00:69:00Z',
  '2026-11-17T00:00:69Z',
  '2026-11-17T0:00:00Z',
  '2026-11-17T00:00:00.000000Z',
  '2026-11-17T00:00:00.1234Z',
  '2026-11-17T00:00:00.12a4Z',
  '2026-11-17T00:00:00,1Z',
  '2026-11-17T00:00:00.1234567',
  '2026/11/17',
  '2026-11/17',
  'a026-11-17',
  '2026-11-17T19:59:59Z',
  '2026-11-17T20:60:00Z',
  '2026-11-17T20:00:60Z',
  '2026-11-17T10:00:00.Z',
  '2026-11-17T10:00:00.1Z',
  '2026-11-17T10:00:00.123456Z',
  '2026-11-17T10:00:00.1234567Z',
  '2026-11-17T10:00:00',
  '2026-11-17 10:00:00Z',
  '2026-11-17T10:00:00z',
  '2026-13-45T10:00:00Z',
  '2026-1-17',
  '20261117',
  '2026-11-17T10:00Z',
  '2026-11-17Z',
  '2026-11-17T10:00:00+00:00',
  '２０２６-11-17',
  '\u00b9',
];

describe('canonical forms on bytes', () => {
  it('answer as the regular expressions do at every edge', () => {
    for (const type of TYPES) {
      for (const text of EDGES)
        expect(actual(type, text), `${type} ${JSON.stringify(text)}`).toBe(expected(type, text));
    }
  });

  it('answer as the regular expressions do on random values', () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const alphabet = '0123456789-.:TZ +e\u00e9';
    let agreedTrue = 0;
    for (let n = 0; n < 40_000; n++) {
      // Mutations of canonical values, and random strings.
      const base = EDGES[Math.floor(random() * EDGES.length)]!;
      let text = base;
      const edits = Math.floor(random() * 3);
      for (let k = 0; k < edits; k++) {
        const at = Math.floor(random() * (text.length + 1));
        const c = alphabet[Math.floor(random() * alphabet.length)]!;
        const op = random();
        text =
          op < 0.4
            ? text.slice(0, at) + c + text.slice(at)
            : op < 0.8
              ? text.slice(0, at) + c + text.slice(at + 1)
              : text.slice(0, at) + text.slice(at + 1);
      }
      for (const type of TYPES) {
        const want = expected(type, text);
        if (actual(type, text) !== want) expect.fail(`${type} ${JSON.stringify(text)}: expected ${want}`);
        if (want) agreedTrue++;
      }
    }
    expect(agreedTrue).toBeGreaterThan(5_000);
  });
});
