import { describe, expect, it } from 'vitest';
import { CybsError } from '../../../src/errors.js';
import { toLoadError } from '../../../src/warehouse/database-errors.js';

function pgError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

describe('toLoadError', () => {
  it('passes CybsErrors through', () => {
    const e = new CybsError('PARSE_CSV_TRUNCATED', 'truncated', { stage: 'parse' });
    expect(toLoadError(e)).toBe(e);
  });

  it('marks deadlocks and serialization failures retryable', () => {
    for (const code of ['40P01', '40001']) {
      const e = toLoadError(pgError(code, 'deadlock detected'), { table: 'cybs.t' });
      expect(e).toMatchObject({ code: 'LOAD_CONFLICT', stage: 'load', retryable: true });
      expect(e.context).toMatchObject({ sqlState: code, table: 'cybs.t' });
      expect(e.message).toContain('cybs.t');
    }
  });

  it('marks lost connections retryable', () => {
    expect(toLoadError(pgError('ECONNRESET', 'read ECONNRESET'))).toMatchObject({
      code: 'LOAD_CONNECTION',
      retryable: true,
    });
    expect(
      toLoadError(pgError('57P01', 'terminating connection due to administrator command')),
    ).toMatchObject({
      code: 'LOAD_CONNECTION',
      retryable: true,
    });
    expect(toLoadError(new Error('Connection terminated unexpectedly'))).toMatchObject({ retryable: true });
  });

  it('reports anything else as LOAD_FAILED, not retryable', () => {
    const e = toLoadError(pgError('42P01', 'relation "x" does not exist'));
    expect(e).toMatchObject({ code: 'LOAD_FAILED', retryable: false });
    expect(e.cause).toBeInstanceOf(Error);
  });
});
