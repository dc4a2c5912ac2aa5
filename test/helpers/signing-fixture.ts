/**
 * One merchant's credentials for every signing scheme, a local server that verifies each request
 * with cybs-verifier before answering it, and the environment that makes the CLI sign with a scheme.
 * For tests of the CLI's `api` command (from source or as bundled).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { verifyCybsRequest } from './cybs-verifier.js';
import type { VerifyResult } from './cybs-verifier.js';
import { startLocalServer } from './local-server.js';
import type { LocalServer, ReceivedRequest } from './local-server.js';
import { createTestP12 } from './p12.js';

export const SIGNING_SCHEMES = ['http-signature', 'jwt', 'jwt-p12'] as const;

export interface SigningFixture {
  /** The verdict on every request received, in order. */
  verdicts: VerifyResult[];
  server: LocalServer;
  /** The CLI's environment to sign with `auth` against the server. */
  env(auth: string): Record<string, string>;
}

/**
 * Write the merchant's PKCS#12 file into `dir` and start the server: a request that fails
 * verification gets 401, every other one is answered by `handler`.
 */
export async function startSigningFixture(
  dir: string,
  handler: (req: ReceivedRequest, res: ServerResponse) => void,
): Promise<SigningFixture> {
  const merchantId = 'testrest';
  const keyId = '08c94330-f618-42a3-b09d-e1e43be5efda';
  const sharedSecret = 'yBJxy6LjM2TmcPGu+GaJrHtkke25fPpUX+UY6/L/1tE=';
  const p12Password = 'p12-pass-Xy7';
  const p12 = createTestP12({ alias: merchantId, password: p12Password });
  await writeFile(join(dir, 'key.p12'), p12.der);
  const verdicts: VerifyResult[] = [];
  const server = await startLocalServer((req, res) => {
    const verdict = verifyCybsRequest(req, {
      merchantId,
      keyId,
      sharedSecret,
      publicKeyPem: p12.publicKeyPem,
      rsaKid: p12.serialNumber,
    });
    verdicts.push(verdict);
    if (!verdict.ok) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ response: { rmsg: 'Authentication Failed' } }));
      return;
    }
    handler(req, res);
  });
  return {
    verdicts,
    server,
    env: (auth) => ({
      CYBS_BASE_URL: server.url,
      CYBS_AUTH: auth,
      CYBS_MERCHANT_ID: merchantId,
      ...(auth === 'jwt-p12'
        ? { CYBS_P12_PATH: join(dir, 'key.p12'), CYBS_P12_PASSWORD: p12Password }
        : { CYBS_KEY_ID: keyId, CYBS_SHARED_SECRET: sharedSecret }),
    }),
  };
}
