/**
 * HTTP/1.1 GETs whose response bodies are read into a few buffers reused from chunk to chunk
 * (Node's `net`/`tls` `onread`): report downloads and JSON answers (on-demand pages of a few MB).
 * Through undici every socket read is a new 64 KB buffer that lives on as garbage until V8's next
 * mark-compact: tens of MB at once while a body streams, more on Node 24
 * (test/bench/socket-buffers.ts measures it).
 *
 * The body's chunks are lent: a chunk is valid until the next one is asked for, and its consumer
 * copies what it keeps (or waits for its write to complete) before asking. A buffer goes back to
 * the body's pool once every chunk it held has been passed; the socket reads into another
 * meanwhile, and stops reading while chunks are waiting. Every answer is read into buffers of its
 * own, so a connection kept for the next request (LentAgent) never reads into a buffer that the
 * body before still lends.
 *
 * Failures carry the codes the transport classifies (src/api/errors.ts): the socket's own
 * (ECONNRESET, …), UND_ERR_CONNECT_TIMEOUT, UND_ERR_HEADERS_TIMEOUT, UND_ERR_BODY_TIMEOUT,
 * UND_ERR_SOCKET (the connection closed before the body's end) and LENT_BODY_MALFORMED (an answer
 * that is not HTTP/1.1 as sent).
 */
import { EventEmitter } from 'node:events';
import net from 'node:net';
import tls from 'node:tls';

/** The size of each read buffer. */
const READ_BUFFER_BYTES = 64 * 1024;
/** The most bytes a response head (status line and headers) may have. */
const MAX_HEAD_BYTES = 64 * 1024;
/** The most bytes of a chunk-size line (with extensions) or of the trailers. */
const MAX_CHUNK_LINE_BYTES = 4 * 1024;

export interface LentRequest {
  /** `https://host[:port]` or `http://host[:port]`. */
  origin: string;
  /** The request target, `path?query`, as sent and signed. */
  path: string;
  /** Header names in lower case; host and connection are added. */
  headers: Readonly<Record<string, string>>;
  connectTimeoutMs: number;
  /** From the request sent to the response head received. */
  headersTimeoutMs: number;
  /** The longest wait for the body's next bytes. */
  bodyTimeoutMs: number;
  minVersion?: tls.SecureVersion;
  /** Certificates trusted besides Node's own (PEM), as tls.connect's `ca` adds them. */
  ca?: string | undefined;
  signal?: AbortSignal | undefined;
}

export interface LentResponse {
  statusCode: number;
  /** Names in lower case; a header sent more than once is an array. */
  headers: Record<string, string | string[]>;
  body: LentBody;
}

/** An error with the code the transport classifies it by. */
function coded(message: string, code: string, cause?: unknown): Error & { code: string } {
  return Object.assign(new Error(message, cause === undefined ? undefined : { cause }), { code });
}

type Framing = { kind: 'none' } | { kind: 'length'; left: number } | { kind: 'chunked' } | { kind: 'close' };

/**
 * The body of a LentResponse: an async iterable of lent chunks (see above), read once. It emits
 * 'error' when the connection fails while it is read (the iteration throws the same error), as
 * undici's body does.
 */
export class LentBody extends EventEmitter implements AsyncIterable<Buffer> {
  /** Body bytes parsed and not yet passed, in order; each a view of a read buffer. */
  private readonly pending: Buffer[] = [];
  /** The read buffer of each pending chunk, and how many pending chunks each buffer holds. */
  private readonly pendingBuffers: Buffer[] = [];
  private readonly lent = new Map<Buffer, number>();
  /** The buffer of the chunk passed last (returned to the pool when the next is asked for). */
  private passed: Buffer | undefined;
  private readonly free: Buffer[] = [];
  private complete = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;
  private gapTimer: NodeJS.Timeout | undefined;
  private iterating = false;
  destroyed = false;

  /** @internal */
  constructor(
    /** The exchange's hold on its connection: read on, or close it (no-ops once it is over). */
    private readonly connection: { resume(): void; destroy(): void },
    private readonly bodyTimeoutMs: number,
  ) {
    super();
  }

  /** @internal A buffer for the socket's next read: a free one, or a new one while all are lent. */
  nextReadBuffer(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(READ_BUFFER_BYTES);
  }

  /** @internal A piece of the body, a view of `buffer` (the socket stops reading while any waits). */
  push(chunk: Buffer, buffer: Buffer): void {
    if (chunk.length === 0) return;
    this.pending.push(chunk);
    this.pendingBuffers.push(buffer);
    this.lent.set(buffer, (this.lent.get(buffer) ?? 0) + 1);
    this.notify();
  }

  /** @internal A read buffer the parser is done with: free unless chunks of it are lent. */
  settle(buffer: Buffer): void {
    if (!this.lent.has(buffer) && buffer !== this.passed && !this.free.includes(buffer))
      this.free.push(buffer);
  }

  /** @internal Whether chunks are waiting (the socket then stops reading). */
  get waiting(): boolean {
    return this.pending.length > 0;
  }

  /** @internal The body is complete. */
  end(): void {
    this.complete = true;
    this.clearGap();
    this.notify();
  }

  /** @internal The connection failed while the body was read. */
  fail(error: Error): void {
    if (this.complete || this.failure) return;
    this.failure = error;
    this.clearGap();
    if (this.listenerCount('error') > 0) this.emit('error', error);
    this.notify();
  }

  /** Stop reading: the connection is closed; an iteration in progress ends with `error` (if any). */
  destroy(error?: Error): this {
    if (!this.destroyed) {
      this.destroyed = true;
      if (error) this.fail(error);
      else if (!this.complete)
        this.failure ??= coded('the body was destroyed before its end', 'UND_ERR_ABORTED');
      this.clearGap();
      this.connection.destroy();
      this.notify();
    }
    return this;
  }

  /** Read and drop the rest of the body (or close the connection): the answer is not wanted. */
  dump(): Promise<void> {
    this.destroy();
    return Promise.resolve();
  }

  [Symbol.asyncIterator](): AsyncIterator<Buffer> {
    if (this.iterating) throw new Error('a lent body is read once');
    this.iterating = true;
    return {
      next: () => this.next(),
      return: () => {
        this.release();
        if (!this.complete) this.destroy();
        return Promise.resolve({ done: true, value: undefined });
      },
    };
  }

  private async next(): Promise<IteratorResult<Buffer>> {
    this.release();
    for (;;) {
      const chunk = this.pending.shift();
      if (chunk !== undefined) {
        const buffer = this.pendingBuffers.shift()!;
        const count = this.lent.get(buffer)! - 1;
        if (count === 0) this.lent.delete(buffer);
        else this.lent.set(buffer, count);
        this.passed = buffer;
        return { done: false, value: chunk };
      }
      if (this.failure) throw this.failure;
      if (this.complete) return { done: true, value: undefined };
      // Nothing waits: the socket reads on, and a body that stops arriving times out.
      this.armGap();
      this.connection.resume();
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /** The chunk passed last is done with: its buffer is free once no other chunk of it waits. */
  private release(): void {
    const buffer = this.passed;
    this.passed = undefined;
    if (buffer !== undefined && !this.lent.has(buffer)) this.free.push(buffer);
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  private armGap(): void {
    this.clearGap();
    this.gapTimer = setTimeout(() => {
      this.destroy(coded(`no body bytes for ${this.bodyTimeoutMs} ms`, 'UND_ERR_BODY_TIMEOUT'));
    }, this.bodyTimeoutMs);
    this.gapTimer.unref();
  }

  /** @internal Bytes arrived: the gap is over. */
  clearGap(): void {
    if (this.gapTimer !== undefined) clearTimeout(this.gapTimer);
    this.gapTimer = undefined;
  }
}

/** Where a connection goes: what a kept connection must match to be used again. */
interface Target {
  secure: boolean;
  host: string;
  port: number;
  /** `host[:port]` as the host header says it. */
  authority: string;
  key: string;
}

function targetOf(request: LentRequest): Target {
  const url = new URL(request.origin);
  const secure = url.protocol === 'https:';
  if (!secure && url.protocol !== 'http:') throw new Error(`unsupported origin ${request.origin}`);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port === '' ? (secure ? 443 : 80) : Number(url.port);
  const tlsKey = secure ? `|${request.minVersion ?? 'TLSv1.2'}|${request.ca ?? ''}` : '';
  return { secure, host, port, authority: url.host, key: `${url.protocol}//${url.host}${tlsKey}` };
}

/** What a connection's reads go to: the exchange on it, if any. */
interface Reader {
  /** The buffer the socket's next read goes into. */
  nextReadBuffer(): Buffer;
  /** `n` bytes read into `buffer`; false stops the socket reading. */
  read(n: number, buffer: Buffer): boolean;
  error(error: Error): void;
  closed(): void;
}

/**
 * One socket, used by one exchange at a time. Its reads go into the buffers of the exchange on it;
 * between exchanges (kept by a LentAgent) into a buffer of their own, so that no read lands in a
 * buffer a finished body still lends.
 */
class Connection {
  readonly socket: net.Socket;
  reader: Reader | undefined;
  connected = false;
  /** Called when the connection fails or closes while no exchange is on it (kept by a LentAgent). */
  onIdleEnd: (() => void) | undefined;
  /** Closes the connection once it has been kept unused for too long. */
  idleTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly target: Target,
    request: LentRequest,
  ) {
    const onread = {
      buffer: () => this.reader?.nextReadBuffer() ?? Buffer.allocUnsafeSlow(READ_BUFFER_BYTES),
      callback: (n: number, read: Uint8Array): boolean => {
        if (this.reader) return this.reader.read(n, read as Buffer);
        // Bytes nobody asked for: the connection cannot be trusted with another request.
        this.socket.destroy();
        return false;
      },
    };
    const options = { host: target.host, port: target.port, onread, noDelay: true };
    this.socket = target.secure
      ? tls.connect({
          ...options,
          servername: net.isIP(target.host) === 0 ? target.host : undefined,
          ALPNProtocols: ['http/1.1'],
          minVersion: request.minVersion ?? 'TLSv1.2',
          ...(request.ca === undefined ? {} : { ca: [...tls.rootCertificates, request.ca] }),
        })
      : net.connect(options);
    this.socket.once(target.secure ? 'secureConnect' : 'connect', () => (this.connected = true));
    // Flowing (no 'data' events come with onread), so that the peer's close is seen as 'end'.
    this.socket.resume();
    const ended = (): void => {
      if (this.reader) this.reader.closed();
      else this.onIdleEnd?.();
    };
    this.socket.on('error', (error) => {
      if (this.reader) this.reader.error(error);
      else this.socket.destroy();
    });
    this.socket.on('end', ended);
    this.socket.on('close', ended);
  }

  get usable(): boolean {
    return this.connected && !this.socket.destroyed && this.socket.readyState === 'open';
  }
}

/** The exchanges in flight to one origin, and the requests waiting for one of them to end. */
interface Slots {
  active: number;
  waiting: (() => void)[];
}

/**
 * Connections to each origin, at most `maxPerOrigin` exchanges at once (further requests wait
 * their turn, as on undici's pool), kept open between requests: a kept connection is taken by the
 * next request to the same origin, or closed after `idleMs` unused (the service's own idle limit
 * is not announced; 4 s is undici's default, and the free-socket timeout of agentkeepalive, with
 * which the official SDK keeps its connections). A request that finds its kept connection closed by
 * the server is sent again on a new one (a GET, before any byte of an answer arrived).
 */
export class LentAgent {
  private readonly idle = new Map<string, Connection[]>();
  private readonly slots = new Map<string, Slots>();
  private closed = false;

  constructor(
    private readonly maxPerOrigin = 4,
    private readonly idleMs = 4000,
  ) {}

  /**
   * @internal A turn to send a request to `target`: resolves with the function that ends it once
   * fewer than maxPerOrigin exchanges are in flight; rejects if `signal` aborts meanwhile.
   */
  acquire(target: Target, signal: AbortSignal | undefined): Promise<() => void> {
    const slots = this.slots.get(target.key) ?? { active: 0, waiting: [] };
    this.slots.set(target.key, slots);
    const turn = (): (() => void) => {
      slots.active++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        slots.active--;
        slots.waiting.shift()?.();
      };
    };
    if (slots.active < this.maxPerOrigin) return Promise.resolve(turn());
    return new Promise((resolve, reject) => {
      const grant = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve(turn());
      };
      const onAbort = (): void => {
        slots.waiting.splice(slots.waiting.indexOf(grant), 1);
        const reason: unknown = signal?.reason;
        reject(reason instanceof Error ? reason : coded('the request was aborted', 'ABORT_ERR'));
      };
      slots.waiting.push(grant);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** @internal A kept connection to `target`, if one is open. */
  take(target: Target): Connection | undefined {
    const kept = this.idle.get(target.key);
    for (let connection = kept?.pop(); connection !== undefined; connection = kept?.pop()) {
      this.unwatch(connection);
      if (connection.usable) {
        connection.socket.ref();
        return connection;
      }
      connection.socket.destroy();
    }
    return undefined;
  }

  /** @internal A connection whose exchange is over and may carry another. */
  keep(connection: Connection): void {
    const kept = this.idle.get(connection.target.key) ?? [];
    if (this.closed || !connection.usable || kept.length >= this.maxPerOrigin) {
      connection.socket.destroy();
      return;
    }
    kept.push(connection);
    this.idle.set(connection.target.key, kept);
    const drop = (): void => {
      this.unwatch(connection);
      const at = kept.indexOf(connection);
      if (at >= 0) kept.splice(at, 1);
      connection.socket.destroy();
    };
    connection.idleTimer = setTimeout(drop, this.idleMs).unref();
    connection.onIdleEnd = drop;
    // A kept connection does not keep the process alive.
    connection.socket.unref();
  }

  /** Close every kept connection; connections in use close when their exchange ends. */
  close(): void {
    this.closed = true;
    for (const kept of this.idle.values()) {
      for (const connection of kept.splice(0)) {
        this.unwatch(connection);
        connection.socket.destroy();
      }
    }
    this.idle.clear();
  }

  private unwatch(connection: Connection): void {
    clearTimeout(connection.idleTimer);
    connection.idleTimer = undefined;
    connection.onIdleEnd = undefined;
  }
}

/** Marks the failure of a request on a kept connection the server had closed meanwhile. */
const STALE = Symbol('stale connection');
/** The codes of a connection closed under a request. */
const CLOSED_CODES = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

/**
 * Send `request` (a GET) and resolve with its response once the head has arrived; the body is
 * read as its chunks are asked for. Rejects on a failure before the head (connection, timeout,
 * abort, a malformed head). Without `agent` the request goes on a connection of its own, sent
 * with `connection: close`; with one, on a kept connection when one is open, and the connection
 * is kept once the body has arrived whole (unless the answer says `connection: close`).
 */
export async function requestLent(request: LentRequest, agent?: LentAgent): Promise<LentResponse> {
  const target = targetOf(request);
  if (agent === undefined) return exchange(request, new Connection(target, request), undefined, () => {});
  const release = await agent.acquire(target, request.signal);
  try {
    const kept = agent.take(target);
    if (kept !== undefined) {
      try {
        return await exchange(request, kept, agent, release);
      } catch (error) {
        if ((error as { [STALE]?: boolean })[STALE] !== true) throw error;
      }
    }
    return await exchange(request, new Connection(target, request), agent, release);
  } catch (error) {
    release();
    throw error;
  }
}

/**
 * One request and its answer on `connection`; `ended` is called when an answer that arrived is
 * over (its body read whole, failed or destroyed). A failure before the answer only rejects.
 */
function exchange(
  request: LentRequest,
  connection: Connection,
  agent: LentAgent | undefined,
  ended: () => void,
): Promise<LentResponse> {
  const { socket, target } = connection;
  const reused = connection.connected;
  return new Promise<LentResponse>((resolve, reject) => {
    let body: LentBody | undefined;
    let settled = false;
    /** Whether any byte of the answer arrived. */
    let answered = false;
    let finished = false;
    let timer: NodeJS.Timeout | undefined;
    const parser = new ResponseParser();

    /** The exchange is over: the connection is kept for another, or closed. */
    const finish = (keep: boolean): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', onAbort);
      connection.reader = undefined;
      if (keep && agent !== undefined) agent.keep(connection);
      else socket.destroy();
      if (body !== undefined) ended();
    };
    const fail = (error: Error): void => {
      if (!settled) {
        settled = true;
        // Sent on a kept connection the server closed meanwhile: the request may go again.
        if (reused && !answered && CLOSED_CODES.has((error as { code?: string }).code ?? ''))
          Object.assign(error, { [STALE]: true });
        finish(false);
        reject(error);
      } else {
        finish(false);
        body?.fail(error);
      }
    };
    const onAbort = (): void => {
      const reason: unknown = request.signal?.reason;
      const error = reason instanceof Error ? reason : coded('the request was aborted', 'ABORT_ERR');
      if (body) body.destroy(error);
      fail(error);
    };

    connection.reader = {
      nextReadBuffer: () => body?.nextReadBuffer() ?? Buffer.allocUnsafeSlow(READ_BUFFER_BYTES),
      read: (n, buffer) => {
        answered = true;
        body?.clearGap();
        try {
          const events = parser.feed(Buffer.from(buffer.buffer, buffer.byteOffset, n));
          for (const event of events) {
            if (event.kind === 'head') {
              clearTimeout(timer);
              body = new LentBody(
                {
                  resume: () => {
                    if (!finished && socket.isPaused()) socket.resume();
                  },
                  destroy: () => finish(false),
                },
                request.bodyTimeoutMs,
              );
              settled = true;
              resolve({ statusCode: event.status, headers: event.headers, body });
            } else if (event.kind === 'data') body!.push(event.chunk, buffer);
            else {
              body!.end();
              finish(parser.keepAlive);
            }
          }
        } catch (error) {
          fail(error as Error);
          return false;
        }
        if (finished) return true;
        if (body) body.settle(buffer);
        // While chunks wait, the socket stops reading; the body resumes it when they are taken.
        if (body?.waiting !== true) return true;
        socket.pause();
        return false;
      },
      error: (error) => fail(error),
      closed: () => {
        if (parser.done || finished) return;
        // A body read to the connection's close ends with it; any other is cut short.
        if (parser.close()) {
          body?.end();
          finish(false);
        } else fail(coded('the connection closed before the response was complete', 'UND_ERR_SOCKET'));
      },
    };

    const send = (): void => {
      clearTimeout(timer);
      timer = setTimeout(
        () => fail(coded(`no response head after ${request.headersTimeoutMs} ms`, 'UND_ERR_HEADERS_TIMEOUT')),
        request.headersTimeoutMs,
      );
      const lines = [
        `GET ${request.path} HTTP/1.1`,
        `host: ${target.authority}`,
        agent === undefined ? 'connection: close' : 'connection: keep-alive',
      ];
      for (const [name, value] of Object.entries(request.headers)) {
        if (/[\r\n]/.test(name) || /[\r\n]/.test(value)) {
          fail(new Error(`header ${name} holds a line break`));
          return;
        }
        if (name !== 'host' && name !== 'connection') lines.push(`${name}: ${value}`);
      }
      socket.write(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
    };
    if (reused) send();
    else {
      timer = setTimeout(
        () => fail(coded(`no connection after ${request.connectTimeoutMs} ms`, 'UND_ERR_CONNECT_TIMEOUT')),
        request.connectTimeoutMs,
      );
      socket.once(target.secure ? 'secureConnect' : 'connect', send);
    }
    if (request.signal?.aborted) onAbort();
    else request.signal?.addEventListener('abort', onAbort, { once: true });
  });
}

type ParseEvent =
  | { kind: 'head'; status: number; headers: Record<string, string | string[]> }
  | { kind: 'data'; chunk: Buffer }
  | { kind: 'end' };

const CRLF = Buffer.from('\r\n');
const HEAD_END = Buffer.from('\r\n\r\n');

/**
 * The response's bytes as they arrive, into its head and the body's pieces (views of the bytes
 * fed): content-length, chunked or to the connection's close. Interim (1xx) answers are skipped.
 */
export class ResponseParser {
  private state: 'head' | 'body' | 'chunk-size' | 'chunk-data' | 'chunk-end' | 'trailers' | 'done' = 'head';
  /** Bytes of the head, or of a chunk-size line or the trailers, across reads (copied). */
  private held = Buffer.alloc(0);
  private framing: Framing = { kind: 'none' };
  private chunkLeft = 0;
  /** Whether the connection may carry another request after this answer (HTTP/1.1, not `connection: close`). */
  keepAlive = false;

  get done(): boolean {
    return this.state === 'done';
  }

  /** The connection closed: whether that ends the response (a body read to the close). */
  close(): boolean {
    if (this.state === 'done') return true;
    if (this.state === 'body' && this.framing.kind === 'close') {
      this.state = 'done';
      return true;
    }
    return false;
  }

  feed(bytes: Buffer): ParseEvent[] {
    const events: ParseEvent[] = [];
    let at = 0;
    while (at < bytes.length && this.state !== 'done') {
      switch (this.state) {
        case 'head': {
          const text = this.until(bytes, at, HEAD_END, MAX_HEAD_BYTES, 'a response head');
          if (text === undefined) {
            at = bytes.length;
            break;
          }
          at = text.next;
          const head = this.head(text.text);
          if (head === undefined) break; // an interim answer: the next head follows
          events.push(head);
          if (this.framing.kind === 'none' || (this.framing.kind === 'length' && this.framing.left === 0)) {
            this.state = 'done';
            events.push({ kind: 'end' });
          }
          break;
        }
        case 'body': {
          if (this.framing.kind === 'length') {
            const n = Math.min(this.framing.left, bytes.length - at);
            events.push({ kind: 'data', chunk: bytes.subarray(at, at + n) });
            at += n;
            this.framing.left -= n;
            if (this.framing.left === 0) {
              this.state = 'done';
              events.push({ kind: 'end' });
            }
          } else {
            events.push({ kind: 'data', chunk: bytes.subarray(at) });
            at = bytes.length;
          }
          break;
        }
        case 'chunk-size':
        case 'chunk-end':
        case 'trailers': {
          const line = this.until(bytes, at, CRLF, MAX_CHUNK_LINE_BYTES, 'a chunk line');
          if (line === undefined) {
            at = bytes.length;
            break;
          }
          at = line.next;
          if (this.state === 'chunk-end') {
            if (line.text !== '') throw coded('a chunk not followed by CRLF', 'LENT_BODY_MALFORMED');
            this.state = 'chunk-size';
          } else if (this.state === 'trailers') {
            if (line.text === '') {
              this.state = 'done';
              events.push({ kind: 'end' });
            }
          } else {
            const size = /^([0-9a-fA-F]{1,12})[ \t]*(;.*)?$/.exec(line.text);
            if (!size) throw coded(`a chunk size line "${line.text.slice(0, 40)}"`, 'LENT_BODY_MALFORMED');
            this.chunkLeft = parseInt(size[1]!, 16);
            this.state = this.chunkLeft === 0 ? 'trailers' : 'chunk-data';
          }
          break;
        }
        case 'chunk-data': {
          const n = Math.min(this.chunkLeft, bytes.length - at);
          events.push({ kind: 'data', chunk: bytes.subarray(at, at + n) });
          at += n;
          this.chunkLeft -= n;
          if (this.chunkLeft === 0) this.state = 'chunk-end';
          break;
        }
      }
    }
    if (at < bytes.length && this.state === 'done')
      throw coded('bytes after the end of the response', 'LENT_BODY_MALFORMED');
    return events;
  }

  /**
   * The text from bytes[at..] (after the bytes held from earlier reads) up to `terminator`, and
   * where in `bytes` what follows it starts; undefined while the terminator has not arrived (the
   * bytes are then held), an error past `max` bytes.
   */
  private until(
    bytes: Buffer,
    at: number,
    terminator: Buffer,
    max: number,
    what: string,
  ): { text: string; next: number } | undefined {
    const start = this.held.length;
    const joined = start === 0 ? bytes.subarray(at) : Buffer.concat([this.held, bytes.subarray(at)]);
    const end = joined.indexOf(terminator);
    if (end < 0) {
      if (joined.length > max) throw coded(`${what} over ${max} bytes`, 'LENT_BODY_MALFORMED');
      this.held = Buffer.from(joined);
      return undefined;
    }
    this.held = Buffer.alloc(0);
    return { text: joined.toString('latin1', 0, end), next: at + end + terminator.length - start };
  }

  /** The head's event, and the body's framing; undefined for an interim (1xx) answer. */
  private head(text: string): ParseEvent | undefined {
    const [statusLine, ...lines] = text.split('\r\n');
    const status = /^HTTP\/1\.([01]) (\d{3})(?: .*)?$/.exec(statusLine ?? '');
    if (!status) throw coded(`a status line "${(statusLine ?? '').slice(0, 40)}"`, 'LENT_BODY_MALFORMED');
    const code = Number(status[2]);
    if (code >= 100 && code < 200) return undefined;
    const headers: Record<string, string | string[]> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      if (colon <= 0) throw coded(`a header line "${line.slice(0, 40)}"`, 'LENT_BODY_MALFORMED');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      const earlier = headers[name];
      headers[name] =
        earlier === undefined ? value : [...(Array.isArray(earlier) ? earlier : [earlier]), value];
    }
    const connection = headers['connection'];
    this.keepAlive =
      status[1] === '1' &&
      !(Array.isArray(connection) ? connection : [connection ?? '']).some((v) =>
        /(^|,)\s*close\s*(,|$)/i.test(v),
      );
    const encoding = headers['transfer-encoding'];
    const length = headers['content-length'];
    if (code === 204 || code === 304) this.framing = { kind: 'none' };
    else if (encoding !== undefined) {
      const codings = (Array.isArray(encoding) ? encoding.join(',') : encoding).toLowerCase().split(',');
      if (codings.at(-1)!.trim() !== 'chunked')
        throw coded(`a body in transfer-encoding ${String(encoding)}`, 'LENT_BODY_MALFORMED');
      this.framing = { kind: 'chunked' };
    } else if (length !== undefined) {
      const values = new Set(
        (Array.isArray(length) ? length : [length]).flatMap((v) => v.split(',')).map((v) => v.trim()),
      );
      const only = [...values][0]!;
      if (values.size !== 1 || !/^\d{1,15}$/.test(only))
        throw coded(`a content-length of ${String(length)}`, 'LENT_BODY_MALFORMED');
      this.framing = { kind: 'length', left: Number(only) };
    } else this.framing = { kind: 'close' };
    this.state = this.framing.kind === 'chunked' ? 'chunk-size' : 'body';
    return { kind: 'head', status: code, headers };
  }
}
