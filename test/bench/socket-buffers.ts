/**
 * What reading a response body costs in dead socket buffers: 300 MB over HTTP/1.1 from a local
 * server, read (a) `undici`: as undici's body, as the transport reads every answer; (b) `slabs`:
 * the same, its socket reading into successive regions of 1 MB buffers (net's `onread` through
 * undici's connector) instead of a new 64 KB buffer per read, so that only the buffers' size
 * changes, not how long they live; (c) `onread`: a socket reading into one reused buffer. The
 * consumer copies each chunk out in all three.
 *   node --import tsx test/bench/socket-buffers.ts [reps]
 * Each reading runs in a process of its own with the runtime flags of src/runtime-flags.ts, the
 * server in another. Printed per run: wall time, the highest `arrayBuffers` sampled every 5 ms,
 * and peak RSS (/usr/bin/time). The (c) reader understands this server's content-length answer
 * only: it measures the lever, it is not a client, and its time is not a client's.
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { Agent, buildConnector, request } from 'undici';
import { NODE_RUNTIME_ENV, NODE_RUNTIME_FLAGS, applyV8RuntimeFlags } from '../../src/runtime-flags.js';

const MB = 1024 * 1024;
const BODY_MB = 300;
const self = fileURLToPath(import.meta.url);

async function serve(): Promise<void> {
  const block = Buffer.alloc(MB, 97);
  const server = http.createServer((_req, res) => {
    res.setHeader('content-length', BODY_MB * MB);
    let sent = 0;
    const more = (): void => {
      while (sent < BODY_MB) {
        sent++;
        if (!res.write(block)) return void res.once('drain', more);
      }
      res.end();
    };
    more();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.stdout.write(`PORT=${(server.address() as net.AddressInfo).port}\n`);
}

async function read(mode: string, port: number): Promise<void> {
  applyV8RuntimeFlags();
  let maxArrayBuffers = 0;
  const sampler = setInterval(() => {
    maxArrayBuffers = Math.max(maxArrayBuffers, process.memoryUsage().arrayBuffers);
  }, 5);
  // The consumer: every chunk copied into a 1 MB ring (as BodyBuffer or a spool copies it out).
  const ring = Buffer.allocUnsafeSlow(MB);
  let at = 0;
  let total = 0;
  const take = (chunk: Buffer): void => {
    for (let i = 0; i < chunk.length;) {
      const n = Math.min(chunk.length - i, ring.length - at);
      chunk.copy(ring, at, i, i + n);
      i += n;
      at = (at + n) % ring.length;
    }
    total += chunk.length;
  };
  const started = performance.now();
  if (mode === 'undici' || mode === 'slabs') {
    const dispatcher = new Agent(mode === 'slabs' ? { connect: slabConnector() } : {});
    const { body } = await request(`http://127.0.0.1:${port}/`, { dispatcher });
    for await (const chunk of body) take(chunk as Buffer);
  } else {
    await new Promise<void>((resolve, reject) => {
      let head = Buffer.alloc(0);
      let left = -1;
      const socket = net.connect({
        port,
        host: '127.0.0.1',
        onread: {
          buffer: Buffer.allocUnsafeSlow(64 * 1024),
          callback: (n: number, buf: Uint8Array) => {
            let chunk = Buffer.from(buf.buffer, buf.byteOffset, n);
            if (left < 0) {
              head = Buffer.concat([head, chunk]);
              const end = head.indexOf('\r\n\r\n');
              if (end < 0) return true;
              left = Number(/content-length: *(\d+)/i.exec(head.toString('latin1', 0, end))?.[1]);
              chunk = head.subarray(end + 4);
            }
            take(chunk);
            left -= chunk.length;
            if (left === 0) {
              socket.destroy();
              resolve();
            }
            return true;
          },
        },
      });
      socket.on('error', reject);
      socket.on('connect', () => socket.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`));
    });
  }
  clearInterval(sampler);
  if (total !== BODY_MB * MB) throw new Error(`read ${total} bytes, expected ${BODY_MB * MB}`);
  const seconds = (performance.now() - started) / 1000;
  process.stdout.write(
    `SECONDS=${seconds.toFixed(3)} ARRAY_BUFFERS_MB=${(maxArrayBuffers / MB).toFixed(1)}\n`,
  );
}

/** Undici's connector with each socket reading into 1 MB buffers, a region after the other. */
function slabConnector(): buildConnector.connector {
  return (options, callback) => {
    let slab = Buffer.allocUnsafeSlow(MB);
    let at = 0;
    const connect = buildConnector({
      onread: {
        buffer: () => {
          if (slab.length - at < 64 * 1024) [slab, at] = [Buffer.allocUnsafeSlow(MB), 0];
          return slab.subarray(at);
        },
        callback: (n: number, buf: Uint8Array) => {
          at += n;
          return socket.push(Buffer.from(buf.buffer, buf.byteOffset, n));
        },
      },
    } as buildConnector.BuildOptions);
    // undici's connector returns the socket it made (its type says void).
    const socket = connect(options, callback) as unknown as net.Socket;
    return socket;
  };
}

async function main(): Promise<void> {
  const reps = Number(process.argv[2] ?? '3');
  const server = spawn(process.execPath, ['--import', 'tsx', self, 'serve'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve) => {
    let out = '';
    server.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /PORT=(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
  });
  process.stdout.write(
    `reading ${BODY_MB} MB, node ${process.version}, runtime flags of src/runtime-flags.ts\n`,
  );
  try {
    for (let rep = 1; rep <= reps; rep++) {
      for (const mode of ['undici', 'slabs', 'onread']) {
        const child = spawn(
          '/usr/bin/time',
          [
            '-f',
            'MAXRSS_KB=%M',
            process.execPath,
            ...NODE_RUNTIME_FLAGS,
            '--import',
            'tsx',
            self,
            mode,
            String(port),
          ],
          { env: { ...process.env, ...NODE_RUNTIME_ENV }, stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let out = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr.on('data', (d: Buffer) => (out += d.toString()));
        const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
        if (code !== 0) throw new Error(`${mode} exited with ${code}: ${out}`);
        const seconds = /SECONDS=(\S+)/.exec(out)?.[1];
        const arrayBuffers = /ARRAY_BUFFERS_MB=(\S+)/.exec(out)?.[1];
        const rss = Number(/MAXRSS_KB=(\d+)/.exec(out)?.[1]) / 1024;
        process.stdout.write(
          `run ${rep} ${mode.padEnd(6)} ${seconds} s, arrayBuffers at most ${arrayBuffers} MB, peak RSS ${rss.toFixed(0)} MB\n`,
        );
      }
    }
  } finally {
    server.kill();
  }
}

const [role, port] = process.argv.slice(2);
if (role === 'serve') await serve();
else if (role === 'undici' || role === 'slabs' || role === 'onread') await read(role, Number(port));
else await main();
