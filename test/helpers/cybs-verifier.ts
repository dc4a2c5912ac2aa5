/**
 * An independent verifier of CyberSource request authentication, written from the published
 * algorithm (facts §4) for test servers. It deliberately shares no code with src/api/auth.
 */
import { createHash, createHmac, createVerify, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export interface VerifyInput {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface VerifyKeys {
  merchantId: string;
  keyId?: string;
  sharedSecret?: string;
  /** PEM of the RSA public key for RS256 tokens. */
  publicKeyPem?: string;
  /** Expected kid of RS256 tokens. */
  rsaKid?: string;
}

export type VerifyResult = { ok: true; scheme: string } | { ok: false; why: string };

const eq = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

const sha256b64 = (text: string) => createHash('sha256').update(Buffer.from(text, 'utf8')).digest('base64');
const hasBody = (method: string) => ['POST', 'PUT', 'PATCH'].includes(method.toUpperCase());

function verifyHttpSignature(input: VerifyInput, keys: VerifyKeys, header: string): VerifyResult {
  const params: Record<string, string> = {};
  for (const m of header.matchAll(/(\w+)="([^"]*)"/g)) params[m[1]!] = m[2]!;
  if (params.keyid !== keys.keyId) return { ok: false, why: 'unknown keyid' };
  if (params.algorithm !== 'HmacSHA256') return { ok: false, why: 'algorithm' };
  const names = (params.headers ?? '').split(' ');
  const expectedNames = hasBody(input.method)
    ? ['host', 'date', 'request-target', 'digest', 'v-c-merchant-id']
    : ['host', 'date', 'request-target', 'v-c-merchant-id'];
  if (names.join(' ') !== expectedNames.join(' '))
    return { ok: false, why: `headers list ${params.headers}` };
  if (hasBody(input.method) && input.headers.digest !== `SHA-256=${sha256b64(input.body)}`) {
    return { ok: false, why: 'digest does not match the body' };
  }
  if (input.headers['v-c-merchant-id'] !== keys.merchantId)
    return { ok: false, why: 'v-c-merchant-id header' };
  const lines = names.map((name) =>
    name === 'request-target'
      ? `request-target: ${input.method.toLowerCase()} ${input.url}`
      : `${name}: ${String(input.headers[name] ?? '')}`,
  );
  const expected = createHmac('sha256', Buffer.from(keys.sharedSecret ?? '', 'base64'))
    .update(lines.join('\n'), 'utf8')
    .digest('base64');
  if (!eq(expected, params.signature ?? '')) return { ok: false, why: 'signature mismatch' };
  const age = Math.abs(Date.now() - Date.parse(String(input.headers.date)));
  if (!(age < 5 * 60_000)) return { ok: false, why: 'stale date' };
  return { ok: true, scheme: 'http-signature' };
}

function verifyJwt(input: VerifyInput, keys: VerifyKeys, token: string): VerifyResult {
  const parts = token.split('.');
  if (parts.length !== 3) return { ok: false, why: 'not a compact JWS' };
  const [h, p, s] = parts as [string, string, string];
  const header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as Record<string, unknown>;
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Record<string, unknown>;
  if (header.typ !== 'JWT') return { ok: false, why: 'typ' };
  let scheme: string;
  if (header.alg === 'HS256') {
    if (header.kid !== keys.keyId) return { ok: false, why: 'kid' };
    const expected = createHmac('sha256', Buffer.from(keys.sharedSecret ?? '', 'base64'))
      .update(`${h}.${p}`)
      .digest('base64url');
    if (!eq(expected, s)) return { ok: false, why: 'HS256 signature mismatch' };
    scheme = 'jwt';
  } else if (header.alg === 'RS256') {
    if (header.kid !== keys.rsaKid) return { ok: false, why: 'kid' };
    const ok = createVerify('RSA-SHA256')
      .update(`${h}.${p}`)
      .verify(keys.publicKeyPem ?? '', Buffer.from(s, 'base64url'));
    if (!ok) return { ok: false, why: 'RS256 signature mismatch' };
    scheme = 'jwt-p12';
  } else {
    return { ok: false, why: `alg ${String(header.alg)}` };
  }
  const now = Math.floor(Date.now() / 1000);
  const iat = claims.iat as number;
  if (typeof iat !== 'number' || Math.abs(now - iat) > 300) return { ok: false, why: 'iat' };
  if (claims.exp !== iat + 120) return { ok: false, why: 'exp' };
  if (claims['request-resource-path'] !== input.url) return { ok: false, why: 'request-resource-path' };
  if (claims['request-method'] !== input.method.toLowerCase()) return { ok: false, why: 'request-method' };
  if (claims['request-host'] !== input.headers.host) return { ok: false, why: 'request-host' };
  if (claims['v-c-jwt-version'] !== '2') return { ok: false, why: 'v-c-jwt-version' };
  if (claims['v-c-merchant-id'] !== keys.merchantId || claims.iss !== keys.merchantId) {
    return { ok: false, why: 'merchant' };
  }
  if (typeof claims.jti !== 'string' || claims.jti.length < 8) return { ok: false, why: 'jti' };
  if (hasBody(input.method)) {
    if (claims.digest !== sha256b64(input.body) || claims['digest-algorithm'] !== 'SHA-256') {
      return { ok: false, why: 'digest claim' };
    }
  }
  return { ok: true, scheme };
}

/** Verify a request's HTTP Signature or Bearer JWT against the published algorithms. */
export function verifyCybsRequest(input: VerifyInput, keys: VerifyKeys): VerifyResult {
  const auth = input.headers.authorization;
  if (typeof auth === 'string' && auth.startsWith('Bearer ')) return verifyJwt(input, keys, auth.slice(7));
  const signature = input.headers.signature;
  if (typeof signature === 'string') return verifyHttpSignature(input, keys, signature);
  return { ok: false, why: 'no authentication header' };
}
