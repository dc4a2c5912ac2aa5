/**
 * JSON pages read into one BodyBuffer (json-body.ts): each page's bytes exactly, whatever the
 * size of the page before, and a body broken mid-way read again from its start by the retry.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BodyBuffer } from '../../../src/api/json-body.js';
import { createReportingClient } from '../../../src/api/reporting-client.js';
import type { ReportingClient } from '../../../src/api/reporting-client.js';
import { configSchema } from '../../../src/config/schema.js';
import { startLocalServer } from '../../helpers/local-server.js';
import type { LocalServer } from '../../helpers/local-server.js';

const SECRET = 'yBJxy6LjM2TmcPGu+GaJrHtkke25fPpUX+UY6/L/1tE=';

const params = { startTime: '2024-03-01T00:00:00Z', endTime: '2024-03-02T00:00:00Z', limit: 2000 };

/** A page of `n` request details, as text. */
const pageText = (offset: number, n: number): string =>
  JSON.stringify({
    offset,
    limit: 2000,
    pageResults: n,
    requestDetails: Array.from({ length: n }, (_, i) => ({ requestId: `r${offset + i}`, groupName: 'g' })),
  });

let server: LocalServer | undefined;
let client: ReportingClient | undefined;
afterEach(async () => {
  await client?.close();
  await server?.close();
  client = undefined;
  server = undefined;
});

function clientFor(baseUrl: string): ReportingClient {
  const base = configSchema.parse({}).api;
  return createReportingClient(
    {
      credentials: { auth: 'jwt', merchantId: 'm1', keyId: 'k1', sharedSecret: SECRET },
      target: { baseUrl },
      api: { ...base, retry: { attempts: 2, minDelayMs: 1, maxDelayMs: 2, maxTotalMs: 5000 } },
    },
    {},
  );
}

describe('BodyBuffer', () => {
  it('holds the body appended since its last reset, growing as it must', () => {
    const buffer = new BodyBuffer();
    buffer.reset(4);
    buffer.append(Buffer.from('abc'));
    buffer.append(Buffer.from('defgh'));
    expect(buffer.bytes().toString()).toBe('abcdefgh');
    buffer.reset();
    expect(buffer.bytes().length).toBe(0);
    buffer.append(Buffer.from('xy'));
    expect(buffer.bytes().toString()).toBe('xy');
  });

  it('takes page after page, and a body broken mid-way is read again from its start', async () => {
    const big = pageText(0, 3000);
    const small = pageText(3000, 2);
    let requests = 0;
    server = await startLocalServer((_req, res) => {
      requests++;
      if (requests === 1) {
        // Half the body, then the connection is cut: the attempt fails and is retried.
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(big.length) });
        res.write(big.slice(0, big.length >> 1), () => res.destroy());
        return;
      }
      const text = requests === 2 ? big : small;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(text.length) });
      res.end(text);
    });
    client = clientFor(server.url);
    const into = new BodyBuffer();
    const first = await client.getPurchaseRefundDetailsPage({ ...params, offset: 0 }, { into });
    expect(requests).toBe(2);
    expect(first.bytes.toString('utf8')).toBe(big);
    expect(first.json().requestDetails).toHaveLength(3000);
    const second = await client.getPurchaseRefundDetailsPage({ ...params, offset: 3000 }, { into });
    expect(second.bytes.toString('utf8')).toBe(small);
    expect(second.json().requestDetails.map((r) => r.requestId)).toEqual(['r3000', 'r3001']);
    // Without a buffer of the caller's, each page has its own bytes.
    const own = await client.getPurchaseRefundDetailsPage({ ...params, offset: 3000 });
    expect(own.bytes.buffer).not.toBe(second.bytes.buffer);
    expect(own.bytes.toString('utf8')).toBe(small);
  });
});
