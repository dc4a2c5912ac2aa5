import { createHash } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { LentAgent, ResponseParser, requestLent } from '../../../src/api/lent-body.js';
import type { LentBody, LentRequest } from '../../../src/api/lent-body.js';
import { selfSignedCertificate } from '../../helpers/tls.js';

/** Bytes 0..n-1 of a pattern that tells any misplaced byte. */
function pattern(n: number): Buffer {
  const out = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) out[i] = (i * 31 + (i >> 11)) & 0xff;
  return out;
}

const servers: net.Server[] = [];
const sockets = new Set<net.Socket>();
afterEach(async () => {
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  for (const s of servers.splice(0)) await new Promise((resolve) => s.close(resolve));
});

async function listen<T extends net.Server>(server: T): Promise<number> {
  servers.push(server);
  server.on(server instanceof https.Server ? 'secureConnection' : 'connection', (socket: net.Socket) =>
    sockets.add(socket),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

const options = (origin: string, extra: Partial<LentRequest> = {}): LentRequest => ({
  origin,
  path: '/reporting/v3/report-downloads?reportDate=2026-11-20',
  headers: { accept: 'text/csv', 'v-c-merchant-id': 'm1' },
  connectTimeoutMs: 2000,
  headersTimeoutMs: 2000,
  bodyTimeoutMs: 2000,
  ...extra,
});

/**
 * Read a body as a consumer keeping the lending rule: each chunk is copied before the next is
 * asked for, after a turn of the event loop (the socket may read meanwhile), and checked unchanged.
 */
async function readAll(body: LentBody): Promise<{ bytes: Buffer; buffers: number }> {
  const parts: Buffer[] = [];
  const buffers = new Set<ArrayBufferLike>();
  for await (const chunk of body) {
    const copy = Buffer.from(chunk);
    buffers.add(chunk.buffer);
    await new Promise((resolve) => setImmediate(resolve));
    expect(chunk.equals(copy)).toBe(true);
    parts.push(copy);
  }
  return { bytes: Buffer.concat(parts), buffers: buffers.size };
}

describe('requestLent', () => {
  it('reads a content-length body whole, into a few reused buffers, and sends the request as given', async () => {
    const body = pattern(5 * 1024 * 1024 + 123);
    let seen: http.IncomingMessage | undefined;
    const port = await listen(
      http.createServer((req, res) => {
        seen = req;
        res.setHeader('content-type', 'text/csv');
        res.setHeader('content-length', body.length);
        res.end(body);
      }),
    );
    const response = await requestLent(options(`http://127.0.0.1:${port}`));
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/csv');
    const read = await readAll(response.body);
    expect(read.bytes.equals(body)).toBe(true);
    // 80 socket reads or more, into a handful of buffers.
    expect(read.buffers).toBeLessThanOrEqual(4);
    expect(seen!.method).toBe('GET');
    expect(seen!.url).toBe('/reporting/v3/report-downloads?reportDate=2026-11-20');
    expect(seen!.headers['host']).toBe(`127.0.0.1:${port}`);
    expect(seen!.headers['connection']).toBe('close');
    expect(seen!.headers['v-c-merchant-id']).toBe('m1');
  });

  it('reads a chunked body and one read to the close', async () => {
    const body = pattern(700_000);
    const chunked = await listen(
      http.createServer((_req, res) => {
        // No content-length: node sends it chunked, in these pieces.
        for (let at = 0; at < body.length; at += 9_999) res.write(body.subarray(at, at + 9_999));
        res.end();
      }),
    );
    const response = await requestLent(options(`http://127.0.0.1:${chunked}`));
    expect(response.headers['transfer-encoding']).toBe('chunked');
    expect((await readAll(response.body)).bytes.equals(body)).toBe(true);

    const toClose = await listen(
      net.createServer((socket) => {
        socket.once('data', () => {
          socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/csv\r\n\r\n');
          socket.end(body);
        });
      }),
    );
    const closed = await requestLent(options(`http://127.0.0.1:${toClose}`));
    expect((await readAll(closed.body)).bytes.equals(body)).toBe(true);
  });

  it('reads over TLS', async () => {
    const { key, cert } = selfSignedCertificate();
    const body = pattern(3 * 1024 * 1024);
    const port = await listen(
      https.createServer({ key, cert }, (_req, res) => {
        res.setHeader('content-length', body.length);
        res.end(body);
      }),
    );
    const response = await requestLent(options(`https://127.0.0.1:${port}`, { ca: cert }));
    const read = await readAll(response.body);
    expect(createHash('sha256').update(read.bytes).digest('hex')).toBe(
      createHash('sha256').update(body).digest('hex'),
    );
    expect(read.buffers).toBeLessThanOrEqual(8);
  });

  it('refuses a certificate it does not trust, and TLS below 1.2', async () => {
    const { key, cert } = selfSignedCertificate();
    const port = await listen(https.createServer({ key, cert }, (_req, res) => res.end('x')));
    await expect(requestLent(options(`https://127.0.0.1:${port}`))).rejects.toMatchObject({
      code: 'DEPTH_ZERO_SELF_SIGNED_CERT',
    });
    let requests = 0;
    const old = await listen(
      https.createServer(
        { key, cert, minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' },
        (_req, res) => {
          requests++;
          res.end('x');
        },
      ),
    );
    const error = await requestLent(options(`https://127.0.0.1:${old}`, { ca: cert })).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(/protocol|version/i);
    expect(requests).toBe(0);
  });

  it('fails a body cut short, with the error on the body too', async () => {
    const port = await listen(
      net.createServer((socket) => {
        socket.once('data', () => {
          socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n');
          socket.write(pattern(40_000), () => socket.destroy());
        });
      }),
    );
    const response = await requestLent(options(`http://127.0.0.1:${port}`));
    const emitted: unknown[] = [];
    response.body.once('error', (error) => emitted.push(error));
    await expect(readAll(response.body)).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
    expect(emitted).toHaveLength(1);
  });

  it('times out waiting for the head, and for the body', async () => {
    const silent = await listen(net.createServer(() => {}));
    await expect(
      requestLent(options(`http://127.0.0.1:${silent}`, { headersTimeoutMs: 200 })),
    ).rejects.toMatchObject({ code: 'UND_ERR_HEADERS_TIMEOUT' });

    const stalling = await listen(
      net.createServer((socket) => {
        socket.once('data', () => socket.write('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc'));
      }),
    );
    const response = await requestLent(options(`http://127.0.0.1:${stalling}`, { bodyTimeoutMs: 200 }));
    await expect(readAll(response.body)).rejects.toMatchObject({ code: 'UND_ERR_BODY_TIMEOUT' });
  });

  it('stops when aborted', async () => {
    const port = await listen(
      net.createServer((socket) => {
        socket.once('data', () => socket.write('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc'));
      }),
    );
    const controller = new AbortController();
    const response = await requestLent(options(`http://127.0.0.1:${port}`, { signal: controller.signal }));
    const reading = readAll(response.body);
    controller.abort(new Error('stop'));
    await expect(reading).rejects.toThrow('stop');
    expect(response.body.destroyed).toBe(true);
  });
});

describe('LentAgent', () => {
  const agents: LentAgent[] = [];
  afterEach(() => {
    for (const agent of agents.splice(0)) agent.close();
  });
  const newAgent = (): LentAgent => {
    const agent = new LentAgent();
    agents.push(agent);
    return agent;
  };

  /** A server answering each request with `bodyOf(its path)`, counting the connections it took. */
  async function counting(
    bodyOf: (path: string) => Buffer,
    headers: Record<string, string> = {},
  ): Promise<{ origin: string; connections: () => number; seen: http.IncomingMessage[] }> {
    let connections = 0;
    const seen: http.IncomingMessage[] = [];
    const server = http.createServer((req, res) => {
      seen.push(req);
      const body = bodyOf(req.url ?? '');
      res.writeHead(200, { 'content-length': body.length, ...headers });
      res.end(body);
    });
    server.on('connection', () => connections++);
    const port = await listen(server);
    return { origin: `http://127.0.0.1:${port}`, connections: () => connections, seen };
  }

  it('keeps the connection for the next request, and never reads an answer into a buffer the body before still lends', async () => {
    const first = pattern(300_000);
    const second = Buffer.alloc(300_000, 0x5a);
    const server = await counting((path) => (path.endsWith('2') ? second : first));
    const agent = newAgent();
    const a = await requestLent(options(server.origin, { path: '/p1' }), agent);
    // Read all but the last chunk of the first body, and hold on to that chunk (it stays lent).
    const iterator = a.body[Symbol.asyncIterator]();
    const parts: Buffer[] = [];
    let last: Buffer | undefined;
    for (let step = await iterator.next(); !step.done; step = await iterator.next()) {
      if (last) parts.push(Buffer.from(last));
      last = step.value;
      if (parts.reduce((n, p) => n + p.length, 0) + last.length === first.length) break;
    }
    const held = Buffer.from(last!);
    const b = await requestLent(options(server.origin, { path: '/p2' }), agent);
    expect((await readAll(b.body)).bytes.equals(second)).toBe(true);
    expect(last!.equals(held)).toBe(true);
    expect(Buffer.concat([...parts, last!]).equals(first)).toBe(true);
    expect((await iterator.next()).done).toBe(true);
    expect(server.connections()).toBe(1);
    expect(server.seen.map((req) => req.headers['connection'])).toEqual(['keep-alive', 'keep-alive']);
  });

  it('has at most its number of exchanges to an origin at once; the next waits for one to end', async () => {
    let open = 0;
    let most = 0;
    const server = http.createServer((_req, res) => {
      open++;
      most = Math.max(most, open);
      setTimeout(() => {
        open--;
        res.writeHead(200, { 'content-length': 4 });
        res.end('done');
      }, 30);
    });
    let connections = 0;
    server.on('connection', () => connections++);
    const port = await listen(server);
    const agent = new LentAgent(2);
    agents.push(agent);
    const read = async (): Promise<string> => {
      const response = await requestLent(options(`http://127.0.0.1:${port}`), agent);
      return (await readAll(response.body)).bytes.toString();
    };
    expect(await Promise.all([read(), read(), read(), read(), read()])).toEqual(Array(5).fill('done'));
    expect(most).toBe(2);
    expect(connections).toBe(2);

    // A request waiting for its turn stops when aborted.
    const slow = requestLent(options(`http://127.0.0.1:${port}`), agent);
    const slower = requestLent(options(`http://127.0.0.1:${port}`), agent);
    const controller = new AbortController();
    const waiting = requestLent(options(`http://127.0.0.1:${port}`, { signal: controller.signal }), agent);
    controller.abort(new Error('not waiting'));
    await expect(waiting).rejects.toThrow('not waiting');
    for (const response of await Promise.all([slow, slower])) await readAll(response.body);
  });

  it('closes after an answer that says connection: close', async () => {
    const server = await counting(() => pattern(1000), { connection: 'close' });
    const agent = newAgent();
    for (let i = 0; i < 3; i++) {
      const response = await requestLent(options(server.origin), agent);
      expect((await readAll(response.body)).bytes.equals(pattern(1000))).toBe(true);
    }
    expect(server.connections()).toBe(3);
  });

  it('sends a request again on a new connection when the server closed the kept one under it', async () => {
    let connections = 0;
    const port = await listen(
      net.createServer((socket) => {
        connections++;
        let answered = 0;
        socket.on('data', () => {
          // Each connection answers one request, and closes under the next without a word.
          if (answered++ > 0) return socket.destroy();
          socket.write('HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabc');
        });
      }),
    );
    const agent = newAgent();
    for (let i = 0; i < 3; i++) {
      const response = await requestLent(options(`http://127.0.0.1:${port}`), agent);
      expect((await readAll(response.body)).bytes.toString()).toBe('abc');
    }
    expect(connections).toBe(3);
  });

  it('leaves the connection to the next request when a finished body is destroyed late', async () => {
    const server = await counting((path) => (path.endsWith('2') ? pattern(200_000) : Buffer.from('first')));
    const agent = newAgent();
    const a = await requestLent(options(server.origin, { path: '/p1' }), agent);
    expect((await readAll(a.body)).bytes.toString()).toBe('first');
    const b = await requestLent(options(server.origin, { path: '/p2' }), agent);
    a.body.destroy();
    expect((await readAll(b.body)).bytes.equals(pattern(200_000))).toBe(true);
    expect(server.connections()).toBe(1);
  });

  it('closes its kept connections when closed', async () => {
    const server = await counting(() => Buffer.from('x'));
    const closed: Promise<void>[] = [];
    const port = new URL(server.origin).port;
    const agent = newAgent();
    const response = await requestLent(options(server.origin), agent);
    await readAll(response.body);
    for (const socket of sockets) {
      if (String(socket.localPort) === port)
        closed.push(new Promise((resolve) => socket.once('close', resolve)));
    }
    expect(closed).toHaveLength(1);
    agent.close();
    await Promise.all(closed);
  });
});

describe('ResponseParser', () => {
  const wire = Buffer.from(
    'HTTP/1.1 100 Continue\r\n\r\n' +
      'HTTP/1.1 200 OK\r\nContent-Type: text/csv\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n' +
      'Transfer-Encoding: chunked\r\n\r\n' +
      '5;ext=1\r\nhello\r\n1a\r\n, a body in three chunks: \r\n3\r\nend\r\n0\r\nx-trailer: t\r\n\r\n',
    'latin1',
  );

  it('gives the same head and body however the bytes are split', () => {
    for (const size of [1, 2, 3, 7, 64, wire.length]) {
      const parser = new ResponseParser();
      const events = [];
      for (let at = 0; at < wire.length; at += size)
        events.push(...parser.feed(wire.subarray(at, at + size)));
      const head = events.find((e) => e.kind === 'head');
      expect(head).toEqual({
        kind: 'head',
        status: 200,
        headers: { 'content-type': 'text/csv', 'set-cookie': ['a=1', 'b=2'], 'transfer-encoding': 'chunked' },
      });
      const data = events.flatMap((e) => (e.kind === 'data' ? [e.chunk] : []));
      expect(Buffer.concat(data).toString('latin1')).toBe('hello, a body in three chunks: end');
      expect(events.at(-1)).toEqual({ kind: 'end' });
      expect(parser.done).toBe(true);
    }
  });

  it('ends a 204 and a zero-length body at their head, and refuses what is not HTTP/1.1', () => {
    expect(new ResponseParser().feed(Buffer.from('HTTP/1.1 204 No Content\r\n\r\n')).at(-1)).toEqual({
      kind: 'end',
    });
    expect(
      new ResponseParser().feed(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n')).at(-1),
    ).toEqual({
      kind: 'end',
    });
    expect(() => new ResponseParser().feed(Buffer.from('HTTP/2 200\r\n\r\n'))).toThrow(
      expect.objectContaining({ code: 'LENT_BODY_MALFORMED' }) as Error,
    );
    expect(() =>
      new ResponseParser().feed(
        Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n'),
      ),
    ).toThrow(expect.objectContaining({ code: 'LENT_BODY_MALFORMED' }) as Error);
    expect(() =>
      new ResponseParser().feed(Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n')),
    ).toThrow(expect.objectContaining({ code: 'LENT_BODY_MALFORMED' }) as Error);
  });
});
