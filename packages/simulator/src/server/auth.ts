/**
 * Request authentication checked the way CyberSource checks it (facts §4), written independently
 * of the product's API client so that the simulator really tests the client:
 *
 *  - HTTP Signature: `signature: keyid="…", algorithm="HmacSHA256", headers="host date request-target
 *    [digest] v-c-merchant-id", signature="<b64>"`. The signing string is rebuilt from the request
 *    as received (`request-target: <method> <path?query>`), HMAC-SHA256 with the base64-decoded
 *    shared secret, compared in constant time. `date` must be within 5 minutes of the clock; a body
 *    needs a `digest: SHA-256=<b64>` header that matches it and is signed. `(request-target)` (with
 *    parentheses, as in the signing drafts) is refused: CyberSource has refused it since April 2024
 *    (developer blog "REST API Http Signature Authentication Critical Security Update").
 *  - JWT (v2) in `Authorization: Bearer`: HS256 with the shared secret (header `kid` = key id) or
 *    RS256 with the public key of a P12 certificate (`kid` = the certificate subject's
 *    serialNumber). Claims checked: `exp`/`iat`, `request-host`, `request-resource-path` (path +
 *    query as received), `request-method`, `iss`, `v-c-merchant-id`, and `digest` for a body.
 *  - Meta keys: a portfolio key signs with the portfolio id (`v-c-merchant-id` line of the signing
 *    string, JWT `iss`) while the `v-c-merchant-id` header/claim carries the transacting merchant,
 *    which must be one of the portfolio's merchants.
 */
import { createHash, createHmac, createPublicKey, timingSafeEqual } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import forge from 'node-forge';

export interface SimulatorKey {
  keyId: string;
  /** Base64 shared secret (HTTP signature, JWT HS256). */
  sharedSecret?: string;
  /** RS256 verification key (from a P12 certificate or a PEM). */
  publicKey?: KeyObject;
  kind: 'merchant' | 'portfolio';
  /** The merchant id, or the portfolio id of a meta key. */
  ownerId: string;
  /** Merchants this key may act for (a merchant key: itself). */
  merchants: readonly string[];
}

export interface AuthRequest {
  method: string;
  /** Path and query exactly as received. */
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export type AuthResult =
  | {
      ok: true;
      scheme: 'http-signature' | 'jwt';
      key: SimulatorKey;
      /** The transacting merchant (v-c-merchant-id). */
      merchantId: string;
    }
  | { ok: false; status: 401 | 403; reason: string };

export interface AuthOptions {
  /** Now, epoch ms (the simulator's auth clock). */
  now: number;
  /** Largest accepted distance between `date` and now; 5 minutes by default. */
  maxSkewMs?: number;
}

const BODY_METHODS = new Set(['post', 'put', 'patch']);

export function sha256Base64(body: Buffer | string): string {
  return createHash('sha256').update(body).digest('base64');
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function fail(reason: string, status: 401 | 403 = 401): AuthResult {
  return { ok: false, status, reason };
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Parse `k="v", k2="v2"` (the signature header). */
export function parseSignatureHeader(value: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of value.matchAll(/([A-Za-z]+)\s*=\s*"([^"]*)"/g)) out[m[1]!.toLowerCase()] = m[2]!;
  return out;
}

function actingMerchant(key: SimulatorKey, merchantId: string | undefined): AuthResult | string {
  if (!merchantId) return fail('v-c-merchant-id is missing');
  if (key.kind === 'merchant') {
    return merchantId === key.ownerId ? merchantId : fail('v-c-merchant-id does not match the key');
  }
  return key.merchants.includes(merchantId)
    ? merchantId
    : fail(`merchant ${merchantId} is not in portfolio ${key.ownerId}`, 403);
}

export interface KeyLookup {
  (keyId: string): SimulatorKey | undefined;
}

export function verifyHttpSignature(req: AuthRequest, keys: KeyLookup, options: AuthOptions): AuthResult {
  const signature = header(req.headers, 'signature');
  if (!signature) return fail('no signature header');
  const params = parseSignatureHeader(signature);
  const keyId = params['keyid'];
  const key = keyId ? keys(keyId) : undefined;
  if (!key?.sharedSecret) return fail('unknown keyid');
  if ((params['algorithm'] ?? '').toLowerCase() !== 'hmacsha256') return fail('algorithm must be HmacSHA256');
  const signed = (params['headers'] ?? '').split(/\s+/).filter(Boolean);
  const method = req.method.toLowerCase();
  const hasBody = BODY_METHODS.has(method) || req.body.length > 0;
  if (signed.includes('(request-target)'))
    return fail('(request-target) is not accepted; sign request-target');
  const required = ['host', 'request-target', 'v-c-merchant-id', ...(hasBody ? ['digest'] : [])];
  for (const name of required) {
    if (!signed.includes(name)) return fail(`signed headers must include ${name}`);
  }
  const dateName = signed.includes('v-c-date') ? 'v-c-date' : 'date';
  if (!signed.includes(dateName)) return fail('signed headers must include date');
  const date = header(req.headers, dateName);
  const dateMs = date ? Date.parse(date) : NaN;
  if (!Number.isFinite(dateMs)) return fail('date header is missing or invalid');
  if (Math.abs(dateMs - options.now) > (options.maxSkewMs ?? 5 * 60_000))
    return fail('date is too far from now');
  if (hasBody) {
    const digest = header(req.headers, 'digest');
    if (!digest) return fail('digest header is missing');
    if (!safeEqual(digest, `SHA-256=${sha256Base64(req.body)}`))
      return fail('digest does not match the body');
  }
  const merchant = actingMerchant(key, header(req.headers, 'v-c-merchant-id'));
  if (typeof merchant !== 'string') return merchant;
  const lines: string[] = [];
  for (const name of signed) {
    if (name === 'request-target') {
      lines.push(`${name}: ${method} ${req.url}`);
    } else if (name === 'v-c-merchant-id') {
      lines.push(`v-c-merchant-id: ${key.kind === 'portfolio' ? key.ownerId : merchant}`);
    } else {
      const v = header(req.headers, name);
      if (v === undefined) return fail(`signed header ${name} is missing`);
      lines.push(`${name}: ${v}`);
    }
  }
  const expected = createHmac('sha256', Buffer.from(key.sharedSecret, 'base64'))
    .update(lines.join('\n'), 'utf8')
    .digest('base64');
  if (!safeEqual(expected, params['signature'] ?? '')) return fail('signature does not match');
  return { ok: true, scheme: 'http-signature', key, merchantId: merchant };
}

export async function verifyJwt(
  req: AuthRequest,
  keys: { byKeyId: KeyLookup; byRsaKid: KeyLookup },
  options: AuthOptions,
): Promise<AuthResult> {
  const authorization = header(req.headers, 'authorization') ?? '';
  const m = /^Bearer\s+(\S+)$/i.exec(authorization);
  if (!m) return fail('no bearer token');
  const token = m[1]!;
  let protectedHeader: ReturnType<typeof decodeProtectedHeader>;
  try {
    protectedHeader = decodeProtectedHeader(token);
  } catch {
    return fail('malformed token');
  }
  const kid = protectedHeader.kid;
  if (!kid) return fail('token header has no kid');
  let key: SimulatorKey | undefined;
  let verifyKey: Uint8Array | KeyObject;
  if (protectedHeader.alg === 'HS256') {
    key = keys.byKeyId(kid);
    if (!key?.sharedSecret) return fail('unknown kid');
    verifyKey = new Uint8Array(Buffer.from(key.sharedSecret, 'base64'));
  } else if (protectedHeader.alg === 'RS256') {
    key = keys.byRsaKid(kid);
    if (!key?.publicKey) return fail('unknown certificate kid');
    verifyKey = key.publicKey;
  } else {
    return fail(`unsupported alg ${String(protectedHeader.alg)}`);
  }
  let payload: Record<string, unknown>;
  try {
    const result = await jwtVerify(token, verifyKey, {
      algorithms: [protectedHeader.alg],
      currentDate: new Date(options.now),
      requiredClaims: ['iat', 'exp'],
    });
    payload = result.payload as Record<string, unknown>;
  } catch (error) {
    return fail(`token rejected: ${(error as Error).message}`);
  }
  const iat = payload['iat'];
  if (typeof iat !== 'number' || iat * 1000 > options.now + (options.maxSkewMs ?? 5 * 60_000)) {
    return fail('iat is in the future');
  }
  if (payload['request-host'] !== header(req.headers, 'host')) return fail('request-host does not match');
  if (payload['request-resource-path'] !== req.url) return fail('request-resource-path does not match');
  const claimedMethod = payload['request-method'];
  if (typeof claimedMethod !== 'string' || claimedMethod.toLowerCase() !== req.method.toLowerCase()) {
    return fail('request-method does not match');
  }
  if (payload['iss'] !== key.ownerId) return fail('iss does not match the key owner');
  const hasBody = BODY_METHODS.has(req.method.toLowerCase()) || req.body.length > 0;
  if (hasBody) {
    const digest = payload['digest'];
    if (typeof digest !== 'string' || !safeEqual(digest, sha256Base64(req.body))) {
      return fail('digest claim is missing or does not match the body');
    }
    const algorithm = payload['digest-algorithm'] ?? payload['digestAlgorithm'];
    if (algorithm !== undefined && algorithm !== 'SHA-256') return fail('digest algorithm must be SHA-256');
  }
  const claimedMerchant = payload['v-c-merchant-id'];
  const merchant = actingMerchant(
    key,
    typeof claimedMerchant === 'string' ? claimedMerchant : key.kind === 'merchant' ? key.ownerId : undefined,
  );
  if (typeof merchant !== 'string') return merchant;
  return { ok: true, scheme: 'jwt', key, merchantId: merchant };
}

/** Authenticate a request by whichever scheme it carries. */
export async function verifyRequest(
  req: AuthRequest,
  keys: { byKeyId: KeyLookup; byRsaKid: KeyLookup },
  options: AuthOptions,
): Promise<AuthResult> {
  if (header(req.headers, 'signature') !== undefined) return verifyHttpSignature(req, keys.byKeyId, options);
  if (header(req.headers, 'authorization') !== undefined) return verifyJwt(req, keys, options);
  return fail('no credentials (signature header or bearer token)');
}

export interface P12Certificate {
  /** The certificate subject's serialNumber attribute: the JWT `kid`. */
  kid: string;
  /** The subject's CN: the merchant (or portfolio) the key belongs to. */
  commonName: string;
  publicKey: KeyObject;
}

/** Read the certificates of a PKCS#12 file (DER bytes or base64) with node-forge. */
export function readP12Certificates(data: Buffer | string, password: string): P12Certificate[] {
  const der = typeof data === 'string' ? Buffer.from(data, 'base64') : data;
  const asn1 = forge.asn1.fromDer(forge.util.createBuffer(der.toString('binary')));
  const p12 = forge.pkcs12.pkcs12FromAsn1(asn1, false, password);
  const certBag = forge.pki.oids['certBag'] as string;
  const bags = p12.getBags({ bagType: certBag })[certBag] ?? [];
  const out: P12Certificate[] = [];
  for (const bag of bags) {
    const cert = bag.cert;
    if (!cert) continue;
    const attr = (name: string): string | undefined => {
      const a = cert.subject.attributes.find(
        (x: forge.pki.CertificateField) => x.name === name || x.shortName === name,
      );
      return typeof a?.value === 'string' ? a.value : undefined;
    };
    const kid = attr('serialNumber');
    const commonName = attr('commonName') ?? attr('CN');
    if (!kid || !commonName) continue;
    const pem = forge.pki.publicKeyToPem(cert.publicKey as forge.pki.rsa.PublicKey);
    out.push({ kid, commonName, publicKey: createPublicKey(pem) });
  }
  return out;
}
