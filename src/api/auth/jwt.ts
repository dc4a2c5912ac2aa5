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

// jose is loaded on the first token signed: most deployments sign HTTP signatures and never need it
// (it is about a tenth of the CLI's start-up time).

/** Sign claims with HS256 keyed by the base64-decoded shared secret; header kid = key id. */
export async function signJwtHs256(claims: JwtClaims, keyId: string, sharedSecret: string): Promise<string> {
  const { SignJWT } = await import('jose');
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: keyId })
    .sign(new Uint8Array(decodeSharedSecret(sharedSecret)));
}

/** Sign claims with RS256 and the P12 private key; header kid = certificate subject serialNumber. */
export async function signJwtRs256(claims: JwtClaims, kid: string, privateKey: KeyObject): Promise<string> {
  const { SignJWT } = await import('jose');
  return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid }).sign(privateKey);
}
