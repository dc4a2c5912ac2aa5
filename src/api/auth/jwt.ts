import { createHmac, sign } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { computeBodyDigest, decodeSharedSecret } from './digest.js';
import { hasSignedBody } from './types.js';
import type { SignableRequest } from './types.js';

/** Lifetime of a token: `exp` = `iat` + 120 s (facts §4.2). */
export const JWT_LIFETIME_SECONDS = 120;

/** The claims of a JWT v2 token (facts §4.2). */
export interface JwtClaims {
  [claim: string]: string | number;
  iat: number;
  exp: number;
  'request-host': string;
  'request-resource-path': string;
  'request-method': string;
  iss: string;
  jti: string;
  'v-c-jwt-version': '2';
  'v-c-merchant-id': string;
}

export interface JwtIdentity {
  /** Transacting merchant: the `v-c-merchant-id` claim. */
  merchantId: string;
  /** Meta key owner: the issuer when set. */
  portfolioId?: string;
}

/**
 * The JWT v2 claim set for one request (pure). The method is written lower-case, as the node SDK
 * does; bodies add `digest` (base64 SHA-256, no prefix) and `digest-algorithm`.
 */
export function buildJwtClaims(
  identity: JwtIdentity,
  request: SignableRequest,
  now: Date,
  jti: string,
): JwtClaims {
  const iat = Math.floor(now.getTime() / 1000);
  const claims: JwtClaims = {
    iat,
    exp: iat + JWT_LIFETIME_SECONDS,
    'request-host': request.host,
    'request-resource-path': request.target,
    'request-method': request.method.toLowerCase(),
    iss: identity.portfolioId ?? identity.merchantId,
    jti,
    'v-c-jwt-version': '2',
    'v-c-merchant-id': identity.merchantId,
  };
  if (hasSignedBody(request.method)) {
    claims.digest = computeBodyDigest(request.body ?? '');
    claims['digest-algorithm'] = 'SHA-256';
  }
  return claims;
}

/** A JWS in compact form (RFC 7515): the header and claims as base64url JSON, then the signature. */
function compactJws(
  header: Record<string, string>,
  claims: JwtClaims,
  sign: (input: Buffer) => Buffer,
): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
  const input = `${encode(header)}.${encode(claims)}`;
  return `${input}.${sign(Buffer.from(input, 'ascii')).toString('base64url')}`;
}

/**
 * Sign claims with HS256 keyed by the base64-decoded shared secret; header kid = key id. Signed with
 * node:crypto at once (a token per request: WebCrypto's asynchronous HMAC cost several times more).
 */
export function signJwtHs256(claims: JwtClaims, keyId: string, sharedSecret: string): string {
  const key = decodeSharedSecret(sharedSecret);
  return compactJws({ alg: 'HS256', typ: 'JWT', kid: keyId }, claims, (input) =>
    createHmac('sha256', key).update(input).digest(),
  );
}

/** Sign claims with RS256 (RSASSA-PKCS1-v1_5, SHA-256) and the P12 private key; header kid = certificate subject serialNumber. */
export function signJwtRs256(claims: JwtClaims, kid: string, privateKey: KeyObject): string {
  return compactJws({ alg: 'RS256', typ: 'JWT', kid }, claims, (input) => sign('sha256', input, privateKey));
}
