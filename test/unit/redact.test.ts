import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/observability/logger.js';
import { redactObject, redactUrlPasswords, scrubSecrets } from '../../src/observability/redact.js';

describe('redaction', () => {
  it('removes URL passwords, bearer tokens, signatures and known secret values', () => {
    expect(redactUrlPasswords('postgres://user:hunter22@db:5432/x')).toBe(
      'postgres://user:[redacted]@db:5432/x',
    );
    const text = 'Authorization: Bearer eyJabc.def.ghi signature="AbC+/=" secret=topsecret123';
    const out = scrubSecrets(text, ['topsecret123']);
    expect(out).not.toMatch(/eyJabc|AbC\+|topsecret123/);
  });

  it('redacts secret keys in config dumps', () => {
    expect(redactObject({ a: { password: 'x', keep: 'y' }, token: 'z' })).toEqual({
      a: { password: '[redacted]', keep: 'y' },
      token: '[redacted]',
    });
  });

  it('logger never writes a secret, whatever field it hides in', () => {
    let captured = '';
    const destination = new Writable({
      write(chunk, _enc, cb) {
        captured += String(chunk);
        cb();
      },
    });
    const logger = createLogger({ secrets: ['c2hhcmVkc2VjcmV0'], destination: destination as never });
    logger.info({ headers: { authorization: 'Bearer abc.def.ghi' }, password: 'pw' }, 'request');
    logger.info({ detail: 'the key c2hhcmVkc2VjcmV0 leaked' }, 'oops c2hhcmVkc2VjcmV0');
    expect(captured).not.toContain('c2hhcmVkc2VjcmV0');
    expect(captured).not.toContain('abc.def.ghi');
    expect(captured).toContain('[redacted]');
  });
});
