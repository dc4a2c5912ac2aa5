import { createHash, createHmac, createPublicKey } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import {
  buildHttpSignatureHeaders,
  buildJwtClaims,
  buildSigningString,
  computeBodyDigest,
  createAuthenticator,
  signJwtHs256,
} from '../../../src/api/auth/index.js';
import { readP12SigningKey } from '../../../src/api/auth/pkcs12.js';
import type { SignableRequest } from '../../../src/api/auth/index.js';
import { isCybsError } from '../../../src/errors.js';
import { createTestP12 } from '../../helpers/p12.js';

// Fixed vectors. The secret is 32 random bytes, base64 as CyberSource issues it.
const SECRET = 'yBJxy6LjM2TmcPGu+GaJrHtkke25fPpUX+UY6/L/1tE=';
const KEY_ID = '08c94330-f618-42a3-b09d-e1e43be5efda';
const NOW = new Date('2019-07-18T00:18:03Z');
const DATE = 'Thu, 18 Jul 2019 00:18:03 GMT';
const GET: SignableRequest = {
  method: 'GET',
  host: 'apitest.cybersource.com',
  target:
    '/reporting/v3/reports?startTime=2024-01-01T00%3A00%3A00Z&endTime=2024-01-02T00%3A00%3A00Z&timeQueryType=executedTime',
};
const BODY = '{"reportName":"daily"}';
const PUT: SignableRequest = {
  method: 'PUT',
  host: 'apitest.cybersource.com',
  target: '/reporting/v3/report-subscriptions',
  body: BODY,
};

/** HMAC-SHA256 with the base64-decoded secret, base64 — straight from facts §4.1. */
const hmac = (text: string) =>
  createHmac('sha256', Buffer.from(SECRET, 'base64')).update(text, 'utf8').digest('base64');

describe('http-signature (facts §4.1)', () => {
  it('signs a GET over host, date, request-target and v-c-merchant-id', () => {
    const headers = buildHttpSignatureHeaders(
      { merchantId: 'testrest', keyId: KEY_ID, sharedSecret: SECRET },
      GET,
      NOW,
    );
    const signingString = [
      'host: apitest.cybersource.com',
      `date: ${DATE}`,
      `request-target: get ${GET.target}`,
      'v-c-merchant-id: testrest',
    ].join('\n');
    expect(hmac(signingString)).toBe('dy7Vnf2wM6KTFLJcBjY+wNUjW2HnfK9dzLzXaG9uMPg=');
    expect(headers).toEqual({
      'v-c-merchant-id': 'testrest',
      date: DATE,
      host: 'apitest.cybersource.com',
      signature: `keyid="${KEY_ID}", algorithm="HmacSHA256", headers="host date request-target v-c-merchant-id", signature="dy7Vnf2wM6KTFLJcBjY+wNUjW2HnfK9dzLzXaG9uMPg="`,
    });
    expect(headers.digest).toBeUndefined();
  });

  it('adds the body digest for PUT and signs with the portfolio id for a meta key', () => {
    const key = { merchantId: 'merchant7', portfolioId: 'portfolio1', keyId: KEY_ID, sharedSecret: SECRET };
    const headers = buildHttpSignatureHeaders(key, PUT, NOW);
    const digest = createHash('sha256').update(BODY, 'utf8').digest('base64');
    expect(digest).toBe('lvFLWE/TXLhvjzYC3HWfnR8/NpWJXKy7nSiw3CXuqWA=');
    const signingString = [
      'host: apitest.cybersource.com',
      `date: ${DATE}`,
      'request-target: put /reporting/v3/report-subscriptions',
      `digest: SHA-256=${digest}`,
      'v-c-merchant-id: portfolio1',
    ].join('\n');
    expect(buildSigningString(key, PUT, DATE).signingString).toBe(signingString);
    expect(hmac(signingString)).toBe('o/omLyE+g6bMkq4k/8TeP/c9W9yplRqvINfTKXtVgqg=');
    expect(headers['v-c-merchant-id']).toBe('merchant7');
    expect(headers.digest).toBe(`SHA-256=${digest}`);
    expect(headers.signature).toBe(
      `keyid="${KEY_ID}", algorithm="HmacSHA256", headers="host date request-target digest v-c-merchant-id", signature="o/omLyE+g6bMkq4k/8TeP/c9W9yplRqvINfTKXtVgqg="`,
    );
  });

  it('signs the query exactly as given, including its order and encoding', () => {
    const a = buildSigningString({ merchantId: 'm' }, { ...GET, target: '/x?b=1&a=2' }, DATE).signingString;
    const b = buildSigningString({ merchantId: 'm' }, { ...GET, target: '/x?a=2&b=1' }, DATE).signingString;
    expect(a).toContain('request-target: get /x?b=1&a=2');
    expect(a).not.toBe(b);
  });
});

describe('jwt with shared secret (HS256, facts §4.3)', () => {
  it('builds v2 claims for a GET without digest', () => {
    expect(buildJwtClaims({ merchantId: 'testrest' }, GET, NOW, 'jti-1')).toEqual({
      iat: 1563409083,
      exp: 1563409083 + 120,
      'request-host': 'apitest.cybersource.com',
      'request-resource-path': GET.target,
      'request-method': 'get',
      iss: 'testrest',
      jti: 'jti-1',
      'v-c-jwt-version': '2',
      'v-c-merchant-id': 'testrest',
    });
  });

  it('adds digest and digest-algorithm for bodies; a meta key issues as the portfolio', () => {
    const claims = buildJwtClaims({ merchantId: 'merchant7', portfolioId: 'portfolio1' }, PUT, NOW, 'j');
    expect(claims.digest).toBe(computeBodyDigest(BODY));
    expect(claims.digest).toBe('lvFLWE/TXLhvjzYC3HWfnR8/NpWJXKy7nSiw3CXuqWA=');
    expect(claims['digest-algorithm']).toBe('SHA-256');
    expect(claims.iss).toBe('portfolio1');
    expect(claims['v-c-merchant-id']).toBe('merchant7');
    expect(claims['request-method']).toBe('put');
  });

  it('produces a compact HS256 token whose signature is HMAC over header.payload with the decoded secret', async () => {
    const claims = buildJwtClaims({ merchantId: 'testrest' }, GET, NOW, 'jti-1');
    const token = signJwtHs256(claims, KEY_ID, SECRET);
    const [h, p, sig] = token.split('.') as [string, string, string];
    expect(JSON.parse(Buffer.from(h, 'base64url').toString())).toEqual({
      alg: 'HS256',
      typ: 'JWT',
      kid: KEY_ID,
    });
    expect(JSON.parse(Buffer.from(p, 'base64url').toString())).toEqual(claims);
    const expected = createHmac('sha256', Buffer.from(SECRET, 'base64'))
      .update(`${h}.${p}`)
      .digest('base64url');
    expect(sig).toBe(expected);
  });

  it('authenticator sends Authorization: Bearer with a fresh jti per call', async () => {
    let n = 0;
    const auth = createAuthenticator(
      { auth: 'jwt', merchantId: 'testrest', keyId: KEY_ID, sharedSecret: SECRET },
      { now: () => NOW, uuid: () => `uuid-${++n}` },
    );
    const first = await auth.headersFor(GET);
    const second = await auth.headersFor(GET);
    expect(Object.keys(first)).toEqual(['authorization']);
    expect(first.authorization).toMatch(/^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
    expect(decodeJwt(first.authorization!.slice(7)).jti).toBe('uuid-1');
    expect(decodeJwt(second.authorization!.slice(7)).jti).toBe('uuid-2');
  });
});

describe('jwt-p12 (RS256, facts §4.2)', () => {
  const password = 'p12-pass-Xy7';
  const p12 = createTestP12({ alias: 'testrest', password, extraCert: true });

  it('reads the key and the kid (subject serialNumber) of the certificate named CN=<alias>', () => {
    const key = readP12SigningKey(p12.der, password, 'testrest');
    expect(key.kid).toBe(p12.serialNumber);
    expect(key.friendlyName).toContain('CN=testrest');
    expect(createPublicKey(key.privateKey).export({ type: 'spki', format: 'pem' })).toBe(p12.publicKeyPem);
  });

  it('falls back to the only certificate when no friendlyName matches', () => {
    const single = createTestP12({ alias: 'other', password, friendlyName: null, serialNumber: '42' });
    expect(readP12SigningKey(single.der, password, 'testrest').kid).toBe('42');
  });

  it('refuses a wrong password and a missing alias with clear errors that do not echo the password', () => {
    try {
      readP12SigningKey(p12.der, 'wrong', 'testrest');
      expect.unreachable();
    } catch (error) {
      expect(isCybsError(error) && error.code).toBe('API_P12_INVALID');
      expect((error as Error).message).not.toContain(password);
    }
    expect(() => readP12SigningKey(p12.der, password, 'nobody')).toThrow(
      /no certificate for the key alias "nobody"/,
    );
  });

  it('signs RS256 tokens with kid = serialNumber that verify with the certificate key', async () => {
    const auth = createAuthenticator(
      { auth: 'jwt-p12', merchantId: 'testrest', p12Path: '/keys/testrest.p12', p12Password: password },
      { now: () => NOW, uuid: () => 'u-1', readKeyFile: () => Promise.resolve(p12.der) },
    );
    const headers = await auth.headersFor(PUT);
    const token = headers.authorization!.slice('Bearer '.length);
    expect(decodeProtectedHeader(token)).toEqual({ alg: 'RS256', typ: 'JWT', kid: p12.serialNumber });
    const { payload } = await jwtVerify(token, createPublicKey(p12.publicKeyPem), {
      algorithms: ['RS256'],
      currentDate: NOW,
    });
    expect(payload).toEqual(buildJwtClaims({ merchantId: 'testrest' }, PUT, NOW, 'u-1'));
  });
});
