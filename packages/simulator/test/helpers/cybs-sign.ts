/**
 * Request signing for tests, written from the algorithms in facts §4 (independently of the
 * simulator's verifier and of the product's API client): HTTP Signature and JWT v2 (HS256/RS256).
 */
import { createHash, createHmac, createSign, randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';

export interface SignCredentials {
  merchantId: string;
  keyId: string;
  sharedSecret: string;
  portfolioId?: string;
}

export interface SignInput {
  method: string;
  /** path + query exactly as sent */
  target: string;
  host: string;
  body?: string;
  date?: Date;
}

export function digestOf(body: string): string {
  return createHash('sha256').update(body, 'utf8').digest('base64');
}

export function httpSignatureHeaders(c: SignCredentials, input: SignInput): Record<string, string> {
  const method = input.method.toLowerCase();
  const date = (input.date ?? new Date()).toUTCString();
  const withBody = ['post', 'put', 'patch'].includes(method);
  const digest = withBody ? `SHA-256=${digestOf(input.body ?? '')}` : undefined;
  const lines = [`host: ${input.host}`, `date: ${date}`, `request-target: ${method} ${input.target}`];
  if (digest) lines.push(`digest: ${digest}`);
  lines.push(`v-c-merchant-id: ${c.portfolioId ?? c.merchantId}`);
  const signature = createHmac('sha256', Buffer.from(c.sharedSecret, 'base64'))
    .update(lines.join('\n'))
    .digest('base64');
  const names = digest
    ? 'host date request-target digest v-c-merchant-id'
    : 'host date request-target v-c-merchant-id';
  const headers: Record<string, string> = {
    host: input.host,
    date,
    'v-c-merchant-id': c.merchantId,
    signature: `keyid="${c.keyId}", algorithm="HmacSHA256", headers="${names}", signature="${signature}"`,
  };
  if (digest) headers['digest'] = digest;
  return headers;
}

const b64url = (data: Buffer | string): string => Buffer.from(data).toString('base64url');

export interface JwtInput extends SignInput {
  /** seconds since epoch; default now */
  iat?: number;
  expiresIn?: number;
  claims?: Record<string, unknown>;
}

function jwtClaims(c: SignCredentials, input: JwtInput): Record<string, unknown> {
  const iat = input.iat ?? Math.floor((input.date ?? new Date()).getTime() / 1000);
  const method = input.method.toLowerCase();
  const claims: Record<string, unknown> = {
    iat,
    exp: iat + (input.expiresIn ?? 120),
    'request-host': input.host,
    'request-resource-path': input.target,
    'request-method': method,
    iss: c.portfolioId ?? c.merchantId,
    jti: randomUUID(),
    'v-c-jwt-version': '2',
    'v-c-merchant-id': c.merchantId,
  };
  if (['post', 'put', 'patch'].includes(method)) {
    claims['digest'] = digestOf(input.body ?? '');
    claims['digest-algorithm'] = 'SHA-256';
  }
  return { ...claims, ...input.claims };
}

export function jwtHs256(c: SignCredentials, input: JwtInput): string {
  const header = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT', kid: c.keyId }));
  const payload = b64url(JSON.stringify(jwtClaims(c, input)));
  const sig = createHmac('sha256', Buffer.from(c.sharedSecret, 'base64'))
    .update(`${header}.${payload}`)
    .digest();
  return `${header}.${payload}.${b64url(sig)}`;
}

export function jwtRs256(
  c: Omit<SignCredentials, 'sharedSecret' | 'keyId'>,
  kid: string,
  key: KeyObject,
  input: JwtInput,
): string {
  const header = b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid }));
  const payload = b64url(JSON.stringify(jwtClaims({ ...c, keyId: kid, sharedSecret: '' }, input)));
  const sig = createSign('RSA-SHA256').update(`${header}.${payload}`).sign(key);
  return `${header}.${payload}.${b64url(sig)}`;
}

/** fetch() a simulator URL signed with HTTP Signature (default) or JWT HS256. */
export async function signedFetch(
  baseUrl: string,
  c: SignCredentials,
  target: string,
  init: { method?: string; body?: string; accept?: string; scheme?: 'http-signature' | 'jwt' } = {},
): Promise<Response> {
  const url = new URL(target, baseUrl);
  const method = init.method ?? 'GET';
  const host = url.host;
  const pathAndQuery = `${url.pathname}${url.search}`;
  const headers: Record<string, string> =
    init.scheme === 'jwt'
      ? {
          authorization: `Bearer ${jwtHs256(c, { method, target: pathAndQuery, host, ...(init.body !== undefined ? { body: init.body } : {}) })}`,
        }
      : httpSignatureHeaders(c, {
          method,
          target: pathAndQuery,
          host,
          ...(init.body !== undefined ? { body: init.body } : {}),
        });
  delete headers['host'];
  if (init.accept) headers['accept'] = init.accept;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  return fetch(url, { method, headers, ...(init.body !== undefined ? { body: init.body } : {}) });
}
