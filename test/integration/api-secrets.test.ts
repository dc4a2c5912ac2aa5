import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReportingClient } from '../../src/api/reporting-client.js';
import type { Credentials } from '../../src/config/env.js';
import type { CybsError } from '../../src/errors.js';
import { configSchema } from '../../src/config/schema.js';
import { cli } from '../helpers/cli.js';
import { startLocalServer } from '../helpers/local-server.js';
import type { LocalServer } from '../helpers/local-server.js';
import { createTestP12 } from '../helpers/p12.js';

// A secret whose decoded form is readable text, so that a leak of the HMAC key would be visible too.
const DECODED_SECRET = 'cybs-test-shared-secret-0123456789';
const SECRET = Buffer.from(DECODED_SECRET).toString('base64');
const P12_PASSWORD = 'Pa55-p12-unique-7731';
const p12 = createTestP12({ alias: 'merchant7', password: P12_PASSWORD });

describe('no secret reaches logs, events or error messages', () => {
  let dir: string;
  let server: LocalServer;
  const wireSecrets = new Set<string>();

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cybs-secrets-'));
    await writeFile(join(dir, 'key.p12'), p12.der);
    await writeFile(
      join(dir, 'config.yaml'),
      'log:\n  level: silent\napi:\n  retry:\n    attempts: 3\n    minDelayMs: 1\n    maxDelayMs: 2\n',
    );
    let n = 0;
    server = await startLocalServer((req, res) => {
      // Remember every credential-bearing value that went over the wire.
      const auth = req.headers.authorization;
      if (typeof auth === 'string') {
        const token = auth.replace(/^Bearer /, '');
        wireSecrets.add(token);
        wireSecrets.add(token.split('.')[2]!);
      }
      const signature = req.headers.signature;
      if (typeof signature === 'string') wireSecrets.add(/signature="([^"]+)"/.exec(signature)![1]!);
      n++;
      if (n % 3 === 0) {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end('{"response":{"rmsg":"Authentication Failed"}}');
      } else if (n % 3 === 1) {
        res.writeHead(503, { 'retry-after': '0' });
        res.end('try later');
      } else {
        res.socket?.destroy(); // a socket error mid-request
      }
    });
  });
  afterAll(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  const forbidden = () => [
    SECRET,
    DECODED_SECRET,
    Buffer.from(DECODED_SECRET).toString('hex'),
    Buffer.from(DECODED_SECRET).toString('base64url'),
    P12_PASSWORD,
    ...wireSecrets,
  ];

  const credentialsFor = (auth: Credentials['auth']): Credentials =>
    auth === 'jwt-p12'
      ? { auth, merchantId: 'merchant7', p12Path: join(dir, 'key.p12'), p12Password: P12_PASSWORD }
      : { auth, merchantId: 'merchant7', keyId: 'key-1', sharedSecret: SECRET };

  for (const auth of ['http-signature', 'jwt', 'jwt-p12'] as const) {
    it(`${auth}: a retried then refused run leaks nothing`, async () => {
      const lines: string[] = [];
      const logger = pino({ level: 'trace' }, { write: (line: string) => lines.push(line) });
      const events: unknown[] = [];
      const base = configSchema.parse({}).api;
      const client = createReportingClient(
        {
          credentials: credentialsFor(auth),
          target: { baseUrl: server.url },
          api: { ...base, retry: { attempts: 3, minDelayMs: 1, maxDelayMs: 2, maxTotalMs: 10_000 } },
        },
        { logger, onEvent: (e) => events.push(e) },
      );
      const error = (await client
        .searchReports({
          startTime: '2024-01-01T00:00:00Z',
          endTime: '2024-01-02T00:00:00Z',
          timeQueryType: 'executedTime',
        })
        .catch((e: unknown) => e)) as CybsError;
      await client.close();
      expect(error).toMatchObject({ code: 'API_UNAUTHORIZED' });
      expect(lines.some((l) => l.includes('retrying'))).toBe(true);
      expect(lines.some((l) => l.includes('/reporting/v3/reports'))).toBe(true);

      const output = [
        ...lines,
        error.message,
        String(error.stack),
        JSON.stringify(error.toJSON()),
        JSON.stringify(events),
        String(error.cause ?? ''),
      ].join('\n');
      expect(wireSecrets.size).toBeGreaterThan(0);
      for (const secret of forbidden()) expect(output).not.toContain(secret);
    });
  }

  it('the CLI error output (with --verbose stack traces) leaks nothing either', async () => {
    for (const auth of ['http-signature', 'jwt', 'jwt-p12'] as const) {
      const c = credentialsFor(auth);
      const r = await cli(
        ['--config', join(dir, 'config.yaml'), '--verbose', 'api', 'GET', '/reporting/v3/report-definitions'],
        {
          env: {
            CYBS_BASE_URL: server.url,
            CYBS_AUTH: auth,
            CYBS_MERCHANT_ID: c.merchantId,
            CYBS_KEY_ID: c.keyId,
            CYBS_SHARED_SECRET: c.sharedSecret,
            CYBS_P12_PATH: c.p12Path,
            CYBS_P12_PASSWORD: c.p12Password,
          },
        },
      );
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('cybs-etl: ');
      for (const secret of forbidden()) {
        expect(r.stderr).not.toContain(secret);
        expect(r.stdout).not.toContain(secret);
      }
    }
  });

  it('a wrong P12 password is reported without echoing it', async () => {
    const r = await cli(
      ['--config', join(dir, 'config.yaml'), 'api', 'GET', '/reporting/v3/report-definitions'],
      {
        env: {
          CYBS_BASE_URL: server.url,
          CYBS_AUTH: 'jwt-p12',
          CYBS_MERCHANT_ID: 'merchant7',
          CYBS_P12_PATH: join(dir, 'key.p12'),
          CYBS_P12_PASSWORD: 'Wrong-password-4409',
        },
      },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/PKCS#12 key file cannot be opened/);
    expect(r.stderr).not.toContain('Wrong-password-4409');
  });
});
