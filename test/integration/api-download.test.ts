import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FileDigester } from '../../src/spool/file-digest.js';
import { isApiError } from '../../src/api/errors.js';
import { createReportingClient } from '../../src/api/reporting-client.js';
import type { ReportingClient } from '../../src/api/reporting-client.js';
import type { ApiEvent } from '../../src/api/transport.js';
import { configSchema } from '../../src/config/schema.js';
import { startLocalServer } from '../helpers/local-server.js';
import type { LocalServer } from '../helpers/local-server.js';

const ROWS = Array.from({ length: 2000 }, (_, i) => `${i},req-${i},${(i / 100).toFixed(2)}`).join('\n');
const CSV = `org,Daily,PaymentBatchDetail,1.10,x\nbatch_id,request_id,amount\n${ROWS}\n`;

describe('streamed downloads over a real socket', () => {
  let dir: string;
  let server: LocalServer;
  /** How many of the next download requests break after half the body. */
  let breaksLeft = 0;
  /** How many of the next requests answer 503 before any body. */
  let busyLeft = 0;
  let client: ReportingClient;
  let events: ApiEvent[];
  let sleeps: number[];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cybs-dl-'));
    server = await startLocalServer((req, res) => {
      if (req.url.includes('trickle')) {
        // A byte every 20 ms, far inside the gap timeout, never finishing: with a length for a
        // report download, chunked for a JSON page.
        const withLength = req.url.includes('report-downloads');
        res.writeHead(req.url.includes('status500') ? 500 : 200, {
          'content-type': withLength ? 'text/csv' : 'application/json',
          ...(withLength ? { 'content-length': '1000' } : {}),
        });
        const timer = setInterval(() => res.write(withLength ? 'x' : ' '), 20);
        res.on('close', () => clearInterval(timer));
        return;
      }
      if (busyLeft > 0) {
        busyLeft--;
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ code: 'SERVER_ERROR', message: 'busy' }));
        return;
      }
      if (req.url.includes('reportName=missing')) {
        res.writeHead(404, { 'content-type': 'application/xml' });
        res.end(
          '<errorBean><code>RESOURCE_NOTFOUND</code><message>Requested Resource Not Found</message></errorBean>',
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/csv' });
      if (breaksLeft > 0) {
        breaksLeft--;
        // Half the file, then the connection dies (chunked encoding never terminated).
        res.write(CSV.slice(0, CSV.length / 2), () => res.socket?.destroy());
        return;
      }
      res.end(CSV);
    });
  });
  afterAll(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });
  const makeClient = (api: { bodyTimeoutMs?: number } = {}) => {
    events = [];
    sleeps = [];
    const base = { ...configSchema.parse({}).api, ...api };
    client = createReportingClient(
      {
        credentials: {
          auth: 'jwt',
          merchantId: 'm1',
          keyId: 'k1',
          sharedSecret: 'yBJxy6LjM2TmcPGu+GaJrHtkke25fPpUX+UY6/L/1tE=',
        },
        target: { baseUrl: server.url },
        api: { ...base, retry: { attempts: 3, minDelayMs: 1, maxDelayMs: 2, maxTotalMs: 10_000 } },
      },
      {
        onEvent: (e) => events.push(e),
        sleep: (ms) => {
          sleeps.push(ms);
          return Promise.resolve();
        },
      },
    );
  };
  afterEach(async () => {
    breaksLeft = 0;
    busyLeft = 0;
    await client.close();
  });

  it('downloadReport streams the whole file; 503 before the body is retried', async () => {
    makeClient();
    busyLeft = 1;
    const download = await client.downloadReport({
      reportName: 'daily',
      reportDate: '2024-03-09',
      accept: 'text/csv',
    });
    expect(await text(download.body)).toBe(CSV);
    expect(events.filter((e) => e.type === 'retry').map((e) => e.status)).toEqual([503]);
  });

  it('downloadReport does not retry once the body is handed out: the consumer sees the break', async () => {
    makeClient();
    breaksLeft = 1;
    const download = await client.downloadReport({ reportName: 'daily', reportDate: '2024-03-09' });
    await expect(text(download.body)).rejects.toMatchObject({
      code: expect.stringMatching(/UND_ERR_SOCKET|ECONNRESET/),
    });
    expect(events.filter((e) => e.type === 'retry')).toHaveLength(0);
  });

  it('withDownload starts the whole download over with a fresh stream when the body breaks', async () => {
    makeClient();
    breaksLeft = 2;
    const seen: { attempt: number; bytes: number }[] = [];
    const result = await client.withDownload({ reportName: 'daily', reportDate: '2024-03-09' }, async (d) => {
      let bytes = 0;
      try {
        for await (const chunk of d.body) bytes += (chunk as Buffer).length;
      } finally {
        seen.push({ attempt: d.attempt, bytes });
      }
      return bytes;
    });
    expect(result).toBe(Buffer.byteLength(CSV));
    expect(seen.map((s) => s.attempt)).toEqual([1, 2, 3]);
    expect(seen[0]!.bytes).toBeLessThan(Buffer.byteLength(CSV));
    expect(events.filter((e) => e.type === 'retry')).toHaveLength(2);
    expect(server.received.filter((r) => r.url.includes('report-downloads')).length).toBeGreaterThanOrEqual(
      3,
    );
  });

  it('ends a download that trickles within its gap timeout, by a deadline scaled to its size, and starts it over', async () => {
    makeClient({ bodyTimeoutMs: 300 });
    const path = join(dir, 'trickle.csv');
    const error = await client
      .downloadReportToFile({ reportName: 'trickle', reportDate: '2024-03-09' }, path)
      .catch((e: unknown) => e);
    expect(isApiError(error) && error.code, String(error)).toBe('API_TIMEOUT');
    expect(isApiError(error) && error.retryable).toBe(true);
    expect((error as Error).message).toMatch(
      /report-downloads.* timed out waiting for the whole response body \(still arriving after \d+ s with \d+ bytes; at least 16384 bytes\/s expected/,
    );
    // Started over until the attempt cap, and nothing left behind.
    expect(events.filter((e) => e.type === 'retry').map((e) => e.errorCode)).toEqual([
      'API_TIMEOUT',
      'API_TIMEOUT',
    ]);
    expect(await readdir(dir)).not.toContain('trickle.csv.part');
  });

  it('ends a JSON page that trickles without a length by the same deadline', async () => {
    makeClient({ bodyTimeoutMs: 300 });
    const error = await client
      .getNetFundings({
        startTime: '2024-03-09T00:00:00Z',
        endTime: '2024-03-10T00:00:00Z',
        organizationId: 'trickle',
      })
      .catch((e: unknown) => e);
    expect(isApiError(error) && error.code, String(error)).toBe('API_TIMEOUT');
    expect(events.filter((e) => e.type === 'retry')).toHaveLength(2);
  });

  it('ends an error answer whose body trickles by the same deadline, with what arrived', async () => {
    makeClient({ bodyTimeoutMs: 300 });
    const error = await client
      .getNetFundings({
        startTime: '2024-03-09T00:00:00Z',
        endTime: '2024-03-10T00:00:00Z',
        organizationId: 'trickle-status500',
      })
      .catch((e: unknown) => e);
    expect(isApiError(error) && error.code, String(error)).toBe('API_HTTP_STATUS');
    expect(isApiError(error) && error.status).toBe(500);
  });

  it('withDownload gives up after the attempt cap and does not retry consumer errors', async () => {
    makeClient();
    breaksLeft = 5;
    const error = await client
      .withDownload({ reportName: 'daily', reportDate: '2024-03-09' }, (d) => text(d.body))
      .catch((e: unknown) => e);
    expect(isApiError(error) && error.code).toBe('API_NETWORK');
    breaksLeft = 0;
    let calls = 0;
    await expect(
      client.withDownload({ reportName: 'daily', reportDate: '2024-03-09' }, () => {
        calls++;
        return Promise.reject(new Error('consumer bug'));
      }),
    ).rejects.toThrow('consumer bug');
    expect(calls).toBe(1);
    // Even a transient-looking failure of the consumer's own (its database dropping) is not a download break.
    await expect(
      client.withDownload({ reportName: 'daily', reportDate: '2024-03-09' }, async (d) => {
        calls++;
        await text(d.body);
        throw Object.assign(new Error('warehouse connection reset'), { code: 'ECONNRESET' });
      }),
    ).rejects.toThrow('warehouse connection reset');
    expect(calls).toBe(2);
  });

  it('downloadReportToFile writes the complete file only (no .part left behind), restarting on breaks', async () => {
    makeClient();
    breaksLeft = 1;
    const file = join(dir, 'daily.csv');
    const result = await client.downloadReportToFile({ reportName: 'daily', reportDate: '2024-03-09' }, file);
    // The digest is of the attempt that completed, not of the broken one's bytes too.
    const digester = new FileDigester();
    digester.update(Buffer.from(CSV));
    expect(result).toEqual({
      bytes: Buffer.byteLength(CSV),
      contentType: 'text/csv',
      attempts: 2,
      digest: digester.digest(),
    });
    expect(await readFile(file, 'utf8')).toBe(CSV);
    expect((await readdir(dir)).filter((f) => f.endsWith('.part'))).toEqual([]);
  });

  it('a 404 download is "no data" and leaves no file', async () => {
    makeClient();
    const file = join(dir, 'missing.csv');
    const error = await client
      .downloadReportToFile({ reportName: 'missing', reportDate: '2024-03-09' }, file)
      .catch((e: unknown) => e);
    expect(isApiError(error) && [error.code, error.noData, error.body?.code]).toEqual([
      'API_NOT_FOUND',
      true,
      'RESOURCE_NOTFOUND',
    ]);
    expect((await readdir(dir)).filter((f) => f.startsWith('missing'))).toEqual([]);
  });

  it('a body timeout on a JSON endpoint is retried as API_TIMEOUT', async () => {
    const base = configSchema.parse({}).api;
    const slow = await startLocalServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (slow.received.length === 1) {
        res.write('{"subscriptions":'); // then stall until the body timeout fires
        return;
      }
      res.end('{"subscriptions":[]}');
    });
    events = [];
    client = createReportingClient(
      {
        credentials: { auth: 'jwt', merchantId: 'm1', keyId: 'k1', sharedSecret: 'c2VjcmV0LXNlY3JldA==' },
        target: { baseUrl: slow.url },
        api: {
          ...base,
          bodyTimeoutMs: 200,
          retry: { attempts: 2, minDelayMs: 1, maxDelayMs: 2, maxTotalMs: 10_000 },
        },
      },
      { onEvent: (e) => events.push(e) },
    );
    try {
      await expect(client.listSubscriptions()).resolves.toEqual({ subscriptions: [] });
      expect(events.find((e) => e.type === 'retry')?.errorCode).toBe('API_TIMEOUT');
    } finally {
      await client.close();
      await slow.close();
    }
  });
});
