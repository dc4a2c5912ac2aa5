/**
 * Cross-check of our signers against the official SDK (cybersource-rest-client, dev dependency
 * only): same inputs into the SDK's own signature / token generators, pointed at a fake host.
 */
import { createPublicKey } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildHttpSignatureHeaders, createAuthenticator } from '../../../src/api/auth/index.js';
import type { SignableRequest } from '../../../src/api/auth/index.js';
import { createTestP12 } from '../../helpers/p12.js';

const require = createRequire(import.meta.url);
type SdkConfig = {
  setRequestTarget(t: string): void;
  setRequestType(m: string): void;
  setRequestJsonData(d: string | undefined): void;
  getLogConfiguration(): unknown;
};
const MerchantConfig = require('cybersource-rest-client/src/authentication/core/MerchantConfig.js') as new (
  options: Record<string, unknown>,
) => SdkConfig;
const HTTPSigToken = require('cybersource-rest-client/src/authentication/http/HTTPSigToken.js') as {
  getToken(config: SdkConfig, logger: unknown, date: string): string;
};
const JWTSigToken = require('cybersource-rest-client/src/authentication/jwt/JWTSigToken.js') as {
  getToken(config: SdkConfig, isResponseMle: boolean, logger: unknown): string;
};
const silent = { info() {}, debug() {}, warn() {}, error() {} };

const HOST = 'sdk-crosscheck.invalid';
const SECRET = 'yBJxy6LjM2TmcPGu+GaJrHtkke25fPpUX+UY6/L/1tE=';
const KEY_ID = '08c94330-f618-42a3-b09d-e1e43be5efda';
const TARGET =
  '/reporting/v3/report-downloads?organizationId=merchant7&reportDate=2024-03-09&reportName=Daily%20TRR%20%26%20more';

function sdkConfig(
  options: Record<string, unknown>,
  method: string,
  target: string,
  body?: string,
): SdkConfig {
  const config = new MerchantConfig({
    runEnvironment: HOST,
    logConfiguration: { enableLog: false },
    ...options,
  });
  config.setRequestTarget(target);
  config.setRequestType(method);
  config.setRequestJsonData(body);
  return config;
}

describe('http-signature matches the SDK signer', () => {
  const date = new Date('2024-03-10T06:07:08Z');
  const cases: [string, string, string | undefined, Record<string, unknown>][] = [
    ['GET', TARGET, undefined, {}],
    ['DELETE', '/reporting/v3/report-subscriptions/My%20Report', undefined, {}],
    [
      'PUT',
      '/reporting/v3/report-subscriptions',
      '{"reportName":"x","reportFields":["Request.RequestID"]}',
      {},
    ],
    [
      'POST',
      '/reporting/v3/reports',
      '{"reportName":"once"}',
      { useMetaKey: true, portfolioID: 'portfolio1' },
    ],
    ['PATCH', '/tms/v2/customers/ABC', '{"email":"a@b.c"}', {}],
  ];
  for (const [method, target, body, extra] of cases) {
    it(`${method} ${target.split('?')[0]}${extra.useMetaKey ? ' (meta key)' : ''}`, () => {
      const config = sdkConfig(
        {
          authenticationType: 'http_signature',
          merchantID: 'merchant7',
          merchantKeyId: KEY_ID,
          merchantsecretKey: SECRET,
          ...extra,
        },
        method,
        target,
        body,
      );
      const sdkSignature = HTTPSigToken.getToken(config, silent, date.toUTCString());
      const request: SignableRequest = { method, host: HOST, target, ...(body ? { body } : {}) };
      const ours = buildHttpSignatureHeaders(
        {
          merchantId: 'merchant7',
          keyId: KEY_ID,
          sharedSecret: SECRET,
          ...(extra.portfolioID ? { portfolioId: extra.portfolioID as string } : {}),
        },
        request,
        date,
      );
      expect(ours.signature).toBe(sdkSignature);
    });
  }
});

describe('JWT matches the SDK token generator', () => {
  const VOLATILE = ['iat', 'exp', 'jti'];
  const stable = (claims: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(claims).filter(([k]) => !VOLATILE.includes(k)));

  it('HS256 (shared secret): same header, same claims, both verify with the decoded secret', async () => {
    for (const [method, target, body] of [
      ['GET', TARGET, undefined],
      ['PUT', '/reporting/v3/report-subscriptions', '{"reportName":"x"}'],
    ] as const) {
      const config = sdkConfig(
        {
          authenticationType: 'jwt',
          jwtKeyType: 'SHARED_SECRET',
          merchantID: 'merchant7',
          merchantKeyId: KEY_ID,
          merchantsecretKey: SECRET,
        },
        method,
        target,
        body,
      );
      const sdkToken = JWTSigToken.getToken(config, false, silent);
      const auth = createAuthenticator({
        auth: 'jwt',
        merchantId: 'merchant7',
        keyId: KEY_ID,
        sharedSecret: SECRET,
      });
      const ours = (
        await auth.headersFor({ method, host: HOST, target, ...(body ? { body } : {}) })
      ).authorization!.slice('Bearer '.length);
      const key = new Uint8Array(Buffer.from(SECRET, 'base64'));
      const sdkVerified = await jwtVerify(sdkToken, key, { algorithms: ['HS256'] });
      const ourVerified = await jwtVerify(ours, key, { algorithms: ['HS256'] });
      expect(decodeProtectedHeader(ours).kid).toBe(decodeProtectedHeader(sdkToken).kid);
      expect(decodeProtectedHeader(ours).alg).toBe(decodeProtectedHeader(sdkToken).alg);
      expect(stable(ourVerified.payload)).toEqual(stable(sdkVerified.payload));
      expect(Object.keys(ourVerified.payload).sort()).toEqual(Object.keys(sdkVerified.payload).sort());
      for (const payload of [ourVerified.payload, sdkVerified.payload]) {
        expect((payload.exp as number) - (payload.iat as number)).toBe(120);
      }
    }
  });

  describe('RS256 (P12)', () => {
    let dir: string;
    const password = 'p12-pass-Xy7';
    const p12 = createTestP12({ alias: 'merchant7', password, extraCert: true });
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'cybs-p12-'));
      await writeFile(join(dir, 'merchant7.p12'), p12.der);
    });
    afterAll(() => rm(dir, { recursive: true, force: true }));

    it('same kid and claims; both tokens verify with the certificate public key', async () => {
      const body = '{"reportName":"once"}';
      const target = '/reporting/v3/reports';
      const config = sdkConfig(
        {
          authenticationType: 'jwt',
          merchantID: 'merchant7',
          keysDirectory: dir,
          keyFileName: 'merchant7',
          keyAlias: 'merchant7',
          keyPass: password,
        },
        'POST',
        target,
        body,
      );
      const sdkToken = JWTSigToken.getToken(config, false, silent);
      const auth = createAuthenticator({
        auth: 'jwt-p12',
        merchantId: 'merchant7',
        p12Path: join(dir, 'merchant7.p12'),
        p12Password: password,
      });
      const ours = (await auth.headersFor({ method: 'POST', host: HOST, target, body })).authorization!.slice(
        7,
      );
      const publicKey = createPublicKey(p12.publicKeyPem);
      const sdkVerified = await jwtVerify(sdkToken, publicKey, { algorithms: ['RS256'] });
      const ourVerified = await jwtVerify(ours, publicKey, { algorithms: ['RS256'] });
      expect(decodeProtectedHeader(sdkToken).kid).toBe(p12.serialNumber);
      expect(decodeProtectedHeader(ours).kid).toBe(p12.serialNumber);
      expect(stable(ourVerified.payload)).toEqual(stable(sdkVerified.payload));
      expect(decodeJwt(ours)['digest-algorithm']).toBe('SHA-256');
    });
  });
});
