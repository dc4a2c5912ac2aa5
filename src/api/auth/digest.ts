import { createHash } from 'node:crypto';

/** Base64 (standard alphabet) SHA-256 of the UTF-8 body: the digest of facts §4.1/§4.2, without prefix. */
export function computeBodyDigest(body: string): string {
  return createHash('sha256').update(Buffer.from(body, 'utf8')).digest('base64');
}

/** Decode a base64 shared secret into the HMAC key bytes. */
export function decodeSharedSecret(sharedSecret: string): Buffer {
  return Buffer.from(sharedSecret, 'base64');
}
