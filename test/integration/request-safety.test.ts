/**
 * Requests cannot be bent by data or downgraded: report names and query values are encoded so that
 * the server sees exactly the one segment or value given; "." and ".." are refused; TLS below 1.2
 * is refused (plain http to a non-loopback host is refused by resolveBaseUrl: see
 * test/unit/api/deployments.test.ts and test/integration/api-cli.test.ts).
 */
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReportingClient } from '../../src/api/reporting-client.js';
import type { ReportingClient } from '../../src/api/reporting-client.js';
import { configSchema } from '../../src/config/schema.js';
import { startLocalServer } from '../helpers/local-server.js';
import { selfSignedCertificate } from '../helpers/tls.js';
import type { LocalServer } from '../helpers/local-server.js';

const SECRET = 'yBJxy6LjM2TmcPGu+GaJrHtkke25fPpUX+UY6/L/1tE=';

function clientFor(baseUrl: string): ReportingClient {
  const base = configSchema.parse({}).api;
  return createReportingClient(
    {
      credentials: { auth: 'jwt', merchantId: 'm1', keyId: 'k1', sharedSecret: SECRET },
      target: { baseUrl },
      api: {
        ...base,
        connectTimeoutMs: 2000,
        retry: { attempts: 1, minDelayMs: 1, maxDelayMs: 2, maxTotalMs: 2000 },
      },
    },
    {},
  );
}

describe('request paths and query values cannot be changed by names', () => {
  let server: LocalServer;
  let client: ReportingClient;
  beforeAll(async () => {
    server = await startLocalServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
    client = clientFor(server.url);
  });
  afterAll(async () => {
    await client.close();
    await server.close();
  });

  const HOSTILE = [
    '../../reports?x=1#frag',
    'a/b',
    '%2F..%2F',
    'name with spaces & = ?',
    'ünï/cødé',
    '..%2f',
    '\\..\\x',
  ];

  it('a report name is one encoded path segment, whatever it holds', async () => {
    for (const name of HOSTILE) {
      const n = server.received.length;
      await client.getSubscription(name).catch(() => {});
      await client.deleteSubscription(name).catch(() => {});
      for (const r of server.received.slice(n)) {
        const path = r.url.split('?')[0]!;
        expect(path.startsWith('/reporting/v3/report-subscriptions/'), r.url).toBe(true);
        const segment = path.slice('/reporting/v3/report-subscriptions/'.length);
        expect(segment).not.toContain('/');
        expect(segment).not.toMatch(/[?#]/);
        expect(decodeURIComponent(segment)).toBe(name);
      }
    }
  });

  it('"." and ".." are refused before any request (URL parsers resolve them, even as %2e%2e)', async () => {
    const n = server.received.length;
    for (const name of ['.', '..', '%2e%2E', '.%2e']) {
      await expect((async () => client.deleteSubscription(name))()).rejects.toMatchObject({
        code: 'API_INVALID_PARAMS',
      });
      // A rejected promise, not a synchronous throw (callers chain .catch on it).
      await expect(client.getSubscription(name)).rejects.toMatchObject({ code: 'API_INVALID_PARAMS' });
    }
    expect(server.received.length).toBe(n);
  });

  it('query values are encoded: a report name cannot add or replace a parameter', async () => {
    const n = server.received.length;
    const name = 'x&reportDate=1999-01-01&organizationId=other#';
    await client.downloadReport({ reportName: name, reportDate: '2024-03-01' }).catch(() => {});
    await client
      .searchReports({
        startTime: '2024-03-01T00:00:00Z',
        endTime: '2024-03-02T00:00:00Z',
        timeQueryType: 'reportTimeFrame',
        reportName: name,
      })
      .catch(() => {});
    const requests = server.received.slice(n);
    expect(requests.length).toBe(2);
    for (const r of requests) {
      const q = new URL(r.url, 'http://x').searchParams;
      expect(q.getAll('reportName')).toEqual([name]);
      expect(q.getAll('organizationId')).toEqual([]);
      expect(q.getAll('reportDate').length).toBeLessThanOrEqual(1);
      if (q.has('reportDate')) expect(q.get('reportDate')).toBe('2024-03-01');
    }
  });
});

describe('TLS below 1.2 is refused', () => {
  it('a server that speaks at most TLS 1.1 gets no request', { timeout: 60_000 }, async () => {
    const { key, cert } = selfSignedCertificate();
    let requests = 0;
    const server = createServer(
      { key, cert, minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' },
      (_req, res) => {
        requests++;
        res.end('{}');
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const client = clientFor(`https://127.0.0.1:${port}`);
    try {
      const error = await client.listReportDefinitions().then(
        () => undefined,
        (e: unknown) => e as Error & { code?: string; cause?: unknown },
      );
      expect(error).toBeDefined();
      // The handshake fails on the protocol version, before any certificate check or request.
      const text = `${error!.message} ${String((error!.cause as Error | undefined)?.message ?? '')} ${JSON.stringify(error)}`;
      expect(text).toMatch(/protocol|version|TLS|SSL/i);
      expect(text).not.toMatch(/self[- ]signed|certificate/i);
      expect(requests).toBe(0);
    } finally {
      await client.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
