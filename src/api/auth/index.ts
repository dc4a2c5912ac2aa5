import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Credentials } from '../../config/env.js';
import { CybsError } from '../../errors.js';
import { buildHttpSignatureHeaders } from './http-signature.js';
import { buildJwtClaims, signJwtHs256, signJwtRs256 } from './jwt.js';
import type { P12SigningKey } from './pkcs12.js';
import type { Authenticator, SignableRequest } from './types.js';

export type { Authenticator, SignableRequest } from './types.js';
export { buildHttpSignatureHeaders, buildSigningString } from './http-signature.js';
export type { HttpSignatureKey } from './http-signature.js';
export { buildJwtClaims, signJwtHs256, signJwtRs256, JWT_LIFETIME_SECONDS } from './jwt.js';
export type { JwtClaims, JwtIdentity } from './jwt.js';
export type { P12SigningKey } from './pkcs12.js';
export { computeBodyDigest } from './digest.js';

export interface AuthenticatorDeps {
  /** Current time (fresh `date`/`iat` per attempt). */
  now?: () => Date;
  /** JWT id source. */
  uuid?: () => string;
  /** Reads the PKCS#12 file (jwt-p12), once, on first use. */
  readKeyFile?: (path: string) => Promise<Uint8Array>;
}

function missing(what: string, variable: string, scheme: string): CybsError {
  return new CybsError('API_CREDENTIALS_INCOMPLETE', `CYBS_AUTH=${scheme} needs ${what} (${variable}).`, {
    stage: 'api',
    exitCode: 2,
  });
}

/** The authenticator for the credentials' scheme: `jwt` (default), `http-signature` or `jwt-p12`. */
export function createAuthenticator(credentials: Credentials, deps: AuthenticatorDeps = {}): Authenticator {
  const now = deps.now ?? (() => new Date());
  const uuid = deps.uuid ?? randomUUID;
  const { merchantId, portfolioId } = credentials;
  const identity = portfolioId === undefined ? { merchantId } : { merchantId, portfolioId };
  const portfolio = portfolioId === undefined ? {} : { portfolioId };
  // A meta key signs as its portfolio for the merchant the request acts for.
  const identityFor = (request: SignableRequest) =>
    request.merchantId === undefined ? identity : { ...identity, merchantId: request.merchantId };

  switch (credentials.auth) {
    case 'http-signature': {
      const { keyId, sharedSecret } = credentials;
      if (!keyId) throw missing('a key id', 'CYBS_KEY_ID', credentials.auth);
      if (!sharedSecret) throw missing('a shared secret', 'CYBS_SHARED_SECRET', credentials.auth);
      return {
        scheme: 'http-signature',
        merchantId,
        ...portfolio,
        headersFor: (request: SignableRequest) =>
          Promise.resolve(
            buildHttpSignatureHeaders({ ...identityFor(request), keyId, sharedSecret }, request, now()),
          ),
      };
    }
    case 'jwt': {
      const { keyId, sharedSecret } = credentials;
      if (!keyId) throw missing('a key id', 'CYBS_KEY_ID', credentials.auth);
      if (!sharedSecret) throw missing('a shared secret', 'CYBS_SHARED_SECRET', credentials.auth);
      return {
        scheme: 'jwt',
        merchantId,
        ...portfolio,
        async headersFor(request: SignableRequest) {
          const token = signJwtHs256(
            buildJwtClaims(identityFor(request), request, now(), uuid()),
            keyId,
            sharedSecret,
          );
          return { authorization: `Bearer ${token}` };
        },
      };
    }
    case 'jwt-p12': {
      const { p12Path } = credentials;
      if (!p12Path) throw missing('the PKCS#12 key file', 'CYBS_P12_PATH', credentials.auth);
      const keyAlias = credentials.keyAlias ?? portfolioId ?? merchantId;
      // The SDKs default the P12 password to the merchant id.
      const password = credentials.p12Password ?? merchantId;
      const load = deps.readKeyFile ?? ((path: string) => readFile(path));
      let keyPromise: Promise<P12SigningKey> | undefined;
      const signingKey = (): Promise<P12SigningKey> => {
        keyPromise ??= load(p12Path).then(
          // The PKCS#12 reader (node-forge) is loaded only by deployments that use a P12 key.
          async (bytes) => (await import('./pkcs12.js')).readP12SigningKey(bytes, password, keyAlias),
          (error: unknown) => {
            throw new CybsError(
              'API_P12_UNREADABLE',
              `the PKCS#12 key file named by CYBS_P12_PATH cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}).`,
              { stage: 'api', exitCode: 2, context: { file: p12Path } },
            );
          },
        );
        // A failed load is not cached, so that a fixed file is picked up by the next attempt.
        keyPromise.catch(() => (keyPromise = undefined));
        return keyPromise;
      };
      return {
        scheme: 'jwt-p12',
        merchantId,
        ...portfolio,
        async headersFor(request: SignableRequest) {
          const key = await signingKey();
          const token = signJwtRs256(
            buildJwtClaims(identityFor(request), request, now(), uuid()),
            key.kid,
            key.privateKey,
          );
          return { authorization: `Bearer ${token}` };
        },
      };
    }
  }
}
