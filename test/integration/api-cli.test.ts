import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import { verifyCybsRequest } from '../helpers/cybs-verifier.js';
import type { VerifyResult } from '../helpers/cybs-verifier.js';
import { startLocalServer } from '../helpers/local-server.js';
import type { LocalServer } from '../helpers/local-server.js';
import { createTestP12 } from '../helpers/p12.js';

const MERCHANT = 'testrest';
const KEY_ID = '08c94330-f618-42a3-b09d-e1e43be5efda';
const SECRET = 'yBJxy6LjM2TmcPGu+GaJrHtkke25fPpUX+UY6/L/1tE=';
const P12_PASSWORD = 'p12-pass-Xy7';
const p12 = createTestP12({ alias: MERCHANT, password: P12_PASSWORD });

const DEFINITIONS = {
  reportDefinitions: [{ reportDefinitionId: 210, reportDefintionName: 'TransactionRequestClass' }],
};

describe('cybs-etl api against a local server that verifies the signature', () => {
  let dir: string;
  let config: string;
  let server: LocalServer;
  const verdicts: VerifyResult[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cybs-api-cli-'));
    config = join(dir, 'config.yaml');
    await writeFile(
      config,
      'log:\n  level: silent\napi:\n  retry:\n    attempts: 2\n    minDelayMs: 1\n    maxDelayMs: 5\n',
    );
    await writeFile(join(dir, 'key.p12'), p12.der);
    await writeFile(
      join(dir, 'body.json'),
      '{ "reportName": "once",\n  "reportFields": ["Request.RequestID"] }\n',
    );
    server = await startLocalServer((req, res) => {
      const verdict = verifyCybsRequest(req, {
        merchantId: MERCHANT,
        keyId: KEY_ID,
        sharedSecret: SECRET,
        publicKeyPem: p12.publicKeyPem,
        rsaKid: p12.serialNumber,
      });
      verdicts.push(verdict);
      if (!verdict.ok) {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ response: { rmsg: 'Authentication Failed' } }));
        return;
      }
      if (req.url.startsWith('/reporting/v3/report-definitions')) {
        res.writeHead(200, { 'content-type': 'application/hal+json' });
        res.end(JSON.stringify(DEFINITIONS));
      } else if (req.url.startsWith('/reporting/v3/report-downloads')) {
        res.writeHead(200, { 'content-type': 'text/csv' });
        res.end('h1,h2\n1,2\n');
      } else if (req.method === 'POST' && req.url.startsWith('/reporting/v3/reports')) {
        res.writeHead(201);
        res.end();
      } else if (req.url.startsWith('/reporting/v3/reports')) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            submitTimeUtc: '2024-01-01T00:00:00Z',
            reason: 'INVALID_DATA',
            message: 'One or more fields contains invalid data',
            details: [{ field: 'startTime', reason: 'MISSING_FIELD' }],
          }),
        );
      } else {
        res.writeHead(404);
        res.end();
      }
    });
  });
  afterAll(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  const envFor = (auth: string): Record<string, string> => ({
    CYBS_BASE_URL: server.url,
    CYBS_AUTH: auth,
    CYBS_MERCHANT_ID: MERCHANT,
    ...(auth === 'jwt-p12'
      ? { CYBS_P12_PATH: join(dir, 'key.p12'), CYBS_P12_PASSWORD: P12_PASSWORD }
      : { CYBS_KEY_ID: KEY_ID, CYBS_SHARED_SECRET: SECRET }),
  });

  for (const auth of ['http-signature', 'jwt', 'jwt-p12']) {
    it(`${auth}: GET /reporting/v3/report-definitions is signed validly and printed as pretty JSON`, async () => {
      const before = server.received.length;
      const r = await cli(['--config', config, 'api', 'GET', '/reporting/v3/report-definitions'], {
        env: envFor(auth),
      });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(`${JSON.stringify(DEFINITIONS, null, 2)}\n`);
      expect(server.received.length).toBe(before + 1);
      expect(verdicts.at(-1)).toEqual({ ok: true, scheme: auth });
      const ua = server.received.at(-1)!.headers['user-agent'];
      expect(ua).toMatch(/^cybs-etl\/\d+\.\d+\.\d+/);
    });
  }

  it('POST with --data @file: the digest covers the body as sent', async () => {
    for (const auth of ['http-signature', 'jwt']) {
      const r = await cli(
        [
          '--config',
          config,
          'api',
          'post',
          '/reporting/v3/reports',
          '--data',
          '@body.json',
          '--organization-id',
          'org_1',
        ],
        { env: envFor(auth), cwd: dir },
      );
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('cybs-etl: HTTP 201 (no body)\n');
      const req = server.received.at(-1)!;
      expect(req.url).toBe('/reporting/v3/reports?organizationId=org_1');
      expect(JSON.parse(req.body)).toEqual({ reportName: 'once', reportFields: ['Request.RequestID'] });
      expect(verdicts.at(-1)).toEqual({ ok: true, scheme: auth });
    }
  });

  it('streams a CSV answer with --accept text/csv', async () => {
    const r = await cli(
      [
        '--config',
        config,
        'api',
        'GET',
        '/reporting/v3/report-downloads?reportName=daily&reportDate=2024-03-09',
        '--accept',
        'text/csv',
      ],
      { env: envFor('jwt') },
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('h1,h2\n1,2\n');
    expect(server.received.at(-1)!.headers.accept).toBe('text/csv');
    expect(verdicts.at(-1)?.ok).toBe(true);
  });

  it('prints the decoded error as one sentence and exits 1', async () => {
    const r = await cli(['--config', config, 'api', 'GET', '/reporting/v3/reports?endTime=x'], {
      env: envFor('jwt'),
    });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      'cybs-etl: CyberSource answered HTTP 400 to GET /reporting/v3/reports?endTime=x: INVALID_DATA: One or more fields contains invalid data (startTime: MISSING_FIELD); the request was rejected as invalid.\n',
    );
  });

  it('a wrong secret is refused with a message naming scheme and merchant, never the secret', async () => {
    const wrong = 'd3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldC13cm9uZw==';
    const r = await cli(['--config', config, 'api', 'GET', '/reporting/v3/report-definitions'], {
      env: { ...envFor('http-signature'), CYBS_SHARED_SECRET: wrong },
    });
    expect(r.code).toBe(1);
    expect(verdicts.at(-1)).toEqual({ ok: false, why: 'signature mismatch' });
    expect(r.stderr).toMatch(/refused the credentials \(auth scheme http-signature, merchant id testrest\)/);
    expect(r.stderr).not.toContain(wrong);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('exits 2 without credentials, on plain http to a non-loopback host, and on bad usage', async () => {
    const none = await cli(['--config', config, 'api', 'GET', '/reporting/v3/report-definitions'], {
      env: { CYBS_BASE_URL: server.url },
    });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(
      /^cybs-etl: no CyberSource credentials in the environment: set CYBS_MERCHANT_ID/,
    );

    const insecure = await cli(['--config', config, 'api', 'GET', '/reporting/v3/report-definitions'], {
      env: { ...envFor('jwt'), CYBS_BASE_URL: 'http://example.com:8080' },
    });
    expect(insecure.code).toBe(2);
    expect(insecure.stderr).toMatch(/plain http to a host that is not loopback/);

    const method = await cli(['--config', config, 'api', 'FETCH', '/x'], { env: envFor('jwt') });
    expect(method.code).toBe(2);
    const data = await cli(['--config', config, 'api', 'POST', '/x', '--data', '{nope'], {
      env: envFor('jwt'),
    });
    expect(data.code).toBe(2);
    expect(data.stderr).toMatch(/--data is not valid JSON/);
  });
});
