import { createHmac, generateKeyPairSync } from 'node:crypto';
import forge from 'node-forge';
import { describe, expect, it } from 'vitest';
import { readP12Certificates, verifyRequest } from '../../src/server/auth.js';
import type { AuthRequest, SimulatorKey } from '../../src/server/auth.js';
import { httpSignatureHeaders, jwtHs256, jwtRs256 } from '../helpers/cybs-sign.js';

const HOST = '127.0.0.1:4444';
const NOW = Date.parse('2024-03-10T12:00:00Z');
const merchant = {
  merchantId: 'm1',
  keyId: 'key-m1',
  sharedSecret: Buffer.from('merchant-secret-32-bytes-long!!!').toString('base64'),
};
const portfolio = {
  merchantId: 'm2',
  portfolioId: 'p1',
  keyId: 'key-p1',
  sharedSecret: Buffer.from('portfolio-secret-32-bytes-long!!').toString('base64'),
};
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });

const keys: SimulatorKey[] = [
  {
    keyId: merchant.keyId,
    sharedSecret: merchant.sharedSecret,
    kind: 'merchant',
    ownerId: 'm1',
    merchants: ['m1'],
  },
  {
    keyId: portfolio.keyId,
    sharedSecret: portfolio.sharedSecret,
    kind: 'portfolio',
    ownerId: 'p1',
    merchants: ['m2', 'm3'],
  },
];
const rsaKeys: SimulatorKey[] = [
  { keyId: 'serial-123', publicKey: rsa.publicKey, kind: 'merchant', ownerId: 'm1', merchants: ['m1'] },
];
const lookup = {
  byKeyId: (k: string) => keys.find((x) => x.keyId === k),
  byRsaKid: (k: string) => rsaKeys.find((x) => x.keyId === k),
};

const TARGET =
  '/reporting/v3/reports?startTime=2024-03-01T00:00:00Z&endTime=2024-03-02T00:00:00Z&timeQueryType=executedTime';
const BODY = JSON.stringify({ reportName: 'x', reportDefinitionName: 'TransactionRequestClass' });

function req(method: string, url: string, headers: Record<string, string>, body = ''): AuthRequest {
  return { method, url, headers: { host: HOST, ...headers }, body: Buffer.from(body) };
}
const verify = (r: AuthRequest, now = NOW) => verifyRequest(r, lookup, { now });

describe('HTTP signature verification', () => {
  const signed = (c = merchant, method = 'GET', target = TARGET, body?: string, date = new Date(NOW)) =>
    httpSignatureHeaders(c, { method, target, host: HOST, date, ...(body !== undefined ? { body } : {}) });

  it('accepts a GET signed by the algorithm, and a PUT with its digest', async () => {
    const r = await verify(req('GET', TARGET, signed()));
    expect(r).toMatchObject({ ok: true, scheme: 'http-signature', merchantId: 'm1' });
    const put = await verify(
      req(
        'PUT',
        '/reporting/v3/report-subscriptions',
        signed(merchant, 'PUT', '/reporting/v3/report-subscriptions', BODY),
        BODY,
      ),
    );
    expect(put.ok).toBe(true);
  });

  it('refuses (request-target) with parentheses even when the signature over it is right', async () => {
    // CyberSource developer blog "REST API Http Signature Authentication Critical Security Update":
    // requests signed over "(request-target)" fail since 22 April 2024; the header is request-target.
    const date = new Date(NOW).toUTCString();
    const signingString = [
      `host: ${HOST}`,
      `date: ${date}`,
      `(request-target): get ${TARGET}`,
      `v-c-merchant-id: ${merchant.merchantId}`,
    ].join('\n');
    const signature = createHmac('sha256', Buffer.from(merchant.sharedSecret, 'base64'))
      .update(signingString)
      .digest('base64');
    const headers = {
      'v-c-merchant-id': merchant.merchantId,
      date,
      signature: `keyid="${merchant.keyId}", algorithm="HmacSHA256", headers="host date (request-target) v-c-merchant-id", signature="${signature}"`,
    };
    expect(await verify(req('GET', TARGET, headers))).toEqual({
      ok: false,
      status: 401,
      reason: '(request-target) is not accepted; sign request-target',
    });
  });

  it('rejects a wrong secret', async () => {
    const h = signed({
      ...merchant,
      sharedSecret: Buffer.from('another secret entirely').toString('base64'),
    });
    expect(await verify(req('GET', TARGET, h))).toMatchObject({ ok: false, status: 401 });
  });

  it('rejects a tampered path and a tampered query', async () => {
    const h = signed();
    expect((await verify(req('GET', TARGET.replace('/reports', '/report-subscriptions'), h))).ok).toBe(false);
    expect((await verify(req('GET', TARGET.replace('executedTime', 'reportTimeFrame'), h))).ok).toBe(false);
  });

  it('rejects a body without digest, with a wrong digest, or a digest left out of the signed headers', async () => {
    const h = signed(merchant, 'PUT', '/reporting/v3/report-subscriptions', BODY);
    const noDigest = { ...h };
    delete noDigest['digest'];
    expect(await verify(req('PUT', '/reporting/v3/report-subscriptions', noDigest, BODY))).toMatchObject({
      ok: false,
      status: 401,
    });
    expect((await verify(req('PUT', '/reporting/v3/report-subscriptions', h, `${BODY} `))).ok).toBe(false);
    const unsignedDigest = {
      ...h,
      signature: h['signature']!.replace('request-target digest', 'request-target'),
    };
    expect((await verify(req('PUT', '/reporting/v3/report-subscriptions', unsignedDigest, BODY))).ok).toBe(
      false,
    );
  });

  it('rejects a date more than 5 minutes from the clock, and accepts 4 minutes', async () => {
    expect(
      (
        await verify(
          req('GET', TARGET, signed(merchant, 'GET', TARGET, undefined, new Date(NOW - 6 * 60_000))),
        )
      ).ok,
    ).toBe(false);
    expect(
      (
        await verify(
          req('GET', TARGET, signed(merchant, 'GET', TARGET, undefined, new Date(NOW + 6 * 60_000))),
        )
      ).ok,
    ).toBe(false);
    expect(
      (
        await verify(
          req('GET', TARGET, signed(merchant, 'GET', TARGET, undefined, new Date(NOW - 4 * 60_000))),
        )
      ).ok,
    ).toBe(true);
  });

  it('rejects an unknown key id, a missing signature and a wrong v-c-merchant-id', async () => {
    expect(
      (
        await verify(
          req('GET', TARGET, { ...signed(), signature: signed()['signature']!.replace('key-m1', 'nope') }),
        )
      ).ok,
    ).toBe(false);
    expect(await verify(req('GET', TARGET, {}))).toMatchObject({ ok: false, status: 401 });
    expect((await verify(req('GET', TARGET, { ...signed(), 'v-c-merchant-id': 'm9' }))).ok).toBe(false);
  });

  it('meta key: signs with the portfolio id, acts for a member merchant, 403 for a non-member', async () => {
    const ok = await verify(req('GET', TARGET, signed(portfolio)));
    expect(ok).toMatchObject({ ok: true, merchantId: 'm2' });
    // Signed with the merchant id instead of the portfolio id in the signing string: rejected.
    const wrongLine = signed({ ...portfolio, portfolioId: undefined } as unknown as typeof portfolio);
    expect((await verify(req('GET', TARGET, wrongLine))).ok).toBe(false);
    const outsider = signed({ ...portfolio, merchantId: 'm1' });
    expect(await verify(req('GET', TARGET, outsider))).toMatchObject({ ok: false, status: 403 });
  });
});

describe('JWT verification', () => {
  const token = (
    over: Parameters<typeof jwtHs256>[1] extends infer T ? Partial<T> : never = {},
    c = merchant,
  ) => jwtHs256(c, { method: 'GET', target: TARGET, host: HOST, date: new Date(NOW), ...over });
  const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

  it('accepts HS256 with the v2 claims, and a PUT with its digest claim', async () => {
    expect(await verify(req('GET', TARGET, bearer(token())))).toMatchObject({
      ok: true,
      scheme: 'jwt',
      merchantId: 'm1',
    });
    const put = jwtHs256(merchant, {
      method: 'PUT',
      target: '/reporting/v3/report-subscriptions',
      host: HOST,
      body: BODY,
      date: new Date(NOW),
    });
    expect((await verify(req('PUT', '/reporting/v3/report-subscriptions', bearer(put), BODY))).ok).toBe(true);
    expect((await verify(req('PUT', '/reporting/v3/report-subscriptions', bearer(put), `${BODY}x`))).ok).toBe(
      false,
    );
  });

  it('rejects an expired token, a wrong host, path, method, issuer or secret', async () => {
    expect(
      (await verify(req('GET', TARGET, bearer(token({ iat: NOW / 1000 - 600, expiresIn: 120 }))))).ok,
    ).toBe(false);
    expect((await verify(req('GET', TARGET, bearer(token({ host: 'api.cybersource.com' }))))).ok).toBe(false);
    expect((await verify(req('GET', TARGET, bearer(token({ target: '/reporting/v3/reports' }))))).ok).toBe(
      false,
    );
    expect((await verify(req('GET', TARGET, bearer(token({ method: 'DELETE' }))))).ok).toBe(false);
    expect((await verify(req('GET', TARGET, bearer(token({ claims: { iss: 'someone' } }))))).ok).toBe(false);
    const wrongSecret = jwtHs256(
      { ...merchant, sharedSecret: Buffer.from('x'.repeat(32)).toString('base64') },
      { method: 'GET', target: TARGET, host: HOST, date: new Date(NOW) },
    );
    expect(await verify(req('GET', TARGET, bearer(wrongSecret)))).toMatchObject({ ok: false, status: 401 });
  });

  it('meta key JWT: iss = portfolio, v-c-merchant-id = member', async () => {
    expect(await verify(req('GET', TARGET, bearer(token({}, portfolio))))).toMatchObject({
      ok: true,
      merchantId: 'm2',
    });
    expect(
      await verify(req('GET', TARGET, bearer(token({}, { ...portfolio, merchantId: 'm1' })))),
    ).toMatchObject({ ok: false, status: 403 });
  });

  it('accepts RS256 by certificate kid and rejects another key', async () => {
    const t = jwtRs256({ merchantId: 'm1' }, 'serial-123', rsa.privateKey, {
      method: 'GET',
      target: TARGET,
      host: HOST,
      date: new Date(NOW),
    });
    expect(await verify(req('GET', TARGET, bearer(t)))).toMatchObject({ ok: true, merchantId: 'm1' });
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const forged = jwtRs256({ merchantId: 'm1' }, 'serial-123', other.privateKey, {
      method: 'GET',
      target: TARGET,
      host: HOST,
      date: new Date(NOW),
    });
    expect((await verify(req('GET', TARGET, bearer(forged)))).ok).toBe(false);
  });
});

describe('P12 certificates', () => {
  it('reads kid (subject serialNumber) and owner (CN) with node-forge', () => {
    const keys = forge.pki.rsa.generateKeyPair({ bits: 1024, e: 0x10001 });
    const cert = forge.pki.createCertificate();
    cert.publicKey = keys.publicKey;
    cert.serialNumber = '01';
    cert.validity.notBefore = new Date('2024-01-01T00:00:00Z');
    cert.validity.notAfter = new Date('2034-01-01T00:00:00Z');
    const attrs = [
      { name: 'commonName', value: 'm1' },
      { name: 'serialNumber', value: '7000123456' },
    ];
    cert.setSubject(attrs);
    cert.setIssuer(attrs);
    cert.sign(keys.privateKey, forge.md.sha256.create());
    const p12 = forge.pkcs12.toPkcs12Asn1(keys.privateKey, [cert], 'pw', {
      friendlyName: 'CN=m1',
      algorithm: '3des',
    });
    const der = Buffer.from(forge.asn1.toDer(p12).getBytes(), 'binary');
    const [c] = readP12Certificates(der, 'pw');
    expect(c).toMatchObject({ kid: '7000123456', commonName: 'm1' });
  });
});
