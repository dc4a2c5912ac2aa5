import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import type { LocalServer } from '../helpers/local-server.js';
import { SIGNING_SCHEMES, startSigningFixture } from '../helpers/signing-fixture.js';
import type { SigningFixture } from '../helpers/signing-fixture.js';

const DEFINITIONS = {
  reportDefinitions: [{ reportDefinitionId: 210, reportDefintionName: 'TransactionRequestClass' }],
};

describe('cybs-etl api against a local server that verifies the signature', () => {
  let dir: string;
  let config: string;
  let fixture: SigningFixture;
  let server: LocalServer;
  let verdicts: SigningFixture['verdicts'];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cybs-api-cli-'));
    config = join(dir, 'config.yaml');
    await writeFile(
      config,
      'log:\n  level: silent\napi:\n  retry:\n    attempts: 2\n    minDelayMs: 1\n    maxDelayMs: 5\n',
    );
    await writeFile(
      join(dir, 'body.json'),
      '{ "reportName": "once",\n  "reportFields": ["Request.RequestID"] }\n',
    );
    fixture = await startSigningFixture(dir, (req, res) => {
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
    server = fixture.server;
    verdicts = fixture.verdicts;
  });
  afterAll(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  const envFor = (auth: string): Record<string, string> => fixture.env(auth);

  for (const auth of SIGNING_SCHEMES) {
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
