import { createHmac } from 'node:crypto';
import { computeBodyDigest, decodeSharedSecret } from './digest.js';
import { hasSignedBody } from './types.js';
import type { SignableRequest } from './types.js';

/** Key material of the HTTP Signature scheme (facts §4.1). */
export interface HttpSignatureKey {
  /** Transacting merchant: the `v-c-merchant-id` header. */
  merchantId: string;
  /** Meta key owner: replaces the merchant id in the signing string when set. */
  portfolioId?: string;
  keyId: string;
  /** Base64 shared secret as issued. */
  sharedSecret: string;
}

/** The signing string and the header list it covers, for one request at one date. */
export function buildSigningString(
  key: Pick<HttpSignatureKey, 'merchantId' | 'portfolioId'>,
  request: SignableRequest,
  date: string,
): { signingString: string; headerList: string; digest?: string } {
  const lines = [
    `host: ${request.host}`,
    `date: ${date}`,
    `request-target: ${request.method.toLowerCase()} ${request.target}`,
  ];
  let digest: string | undefined;
  if (hasSignedBody(request.method)) {
    digest = `SHA-256=${computeBodyDigest(request.body ?? '')}`;
    lines.push(`digest: ${digest}`);
  }
  lines.push(`v-c-merchant-id: ${key.portfolioId ?? key.merchantId}`);
  const headerList = digest
    ? 'host date request-target digest v-c-merchant-id'
    : 'host date request-target v-c-merchant-id';
  return digest === undefined
    ? { signingString: lines.join('\n'), headerList }
    : { signingString: lines.join('\n'), headerList, digest };
}

/**
 * The headers of the HTTP Signature scheme for one request at one instant (pure): `v-c-merchant-id`,
 * `date` (RFC 1123), `host`, `digest` for bodies, and `signature` (HMAC-SHA256 keyed with the
 * base64-decoded shared secret over the signing string).
 */
export function buildHttpSignatureHeaders(
  key: HttpSignatureKey,
  request: SignableRequest,
  now: Date,
): Record<string, string> {
  const date = now.toUTCString();
  const { signingString, headerList, digest } = buildSigningString(key, request, date);
  const signature = createHmac('sha256', decodeSharedSecret(key.sharedSecret))
    .update(Buffer.from(signingString, 'utf8'))
    .digest('base64');
  const headers: Record<string, string> = {
    'v-c-merchant-id': key.merchantId,
    date,
    host: request.host,
  };
  if (digest) headers.digest = digest;
  headers.signature = `keyid="${key.keyId}", algorithm="HmacSHA256", headers="${headerList}", signature="${signature}"`;
  return headers;
}
