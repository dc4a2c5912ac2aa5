/**
 * One HTTP/1.1 GET whose response body is read into a few buffers reused from chunk to chunk
 * (Node's `net`/`tls` `onread`), for the bodies that carry a report's bytes. Through undici every
 * socket read is a new 64 KB buffer that lives on as garbage until V8's next mark-compact: tens of
 * MB at once while a report streams, more on Node 24 (test/bench/socket-buffers.ts measures it).
 *
 * The body's chunks are lent: a chunk is valid until the next one is asked for, and its consumer
 * copies what it keeps (or waits for its write to complete) before asking. A buffer goes back to
 * the pool once every chunk it held has been passed; the socket reads into another meanwhile, and
 * stops reading while chunks are waiting. The request is sent with `connection: close` on a
 * connection of its own: a report download is one long body, and nothing is pooled.
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
    private readonly socket: net.Socket,
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
      this.socket.destroy();
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
      if (this.socket.isPaused()) this.socket.resume();
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

/**
 * Send `request` (a GET) and resolve with its response once the head has arrived; the body is
 * read as its chunks are asked for. Rejects on a failure before the head (connection, timeout,
 * abort, a malformed head).
 */
export function requestLent(request: LentRequest): Promise<LentResponse> {
  const url = new URL(request.origin);
  const secure = url.protocol === 'https:';
  if (!secure && url.protocol !== 'http:') throw new Error(`unsupported origin ${request.origin}`);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port === '' ? (secure ? 443 : 80) : Number(url.port);

  return new Promise<LentResponse>((resolve, reject) => {
    let body: LentBody | undefined;
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const parser = new ResponseParser();

    const fail = (error: Error): void => {
      clearTimeout(timer);
      if (!settled) {
        settled = true;
        socket.destroy();
        reject(error);
      } else body?.fail(error);
      request.signal?.removeEventListener('abort', onAbort);
    };
    const onAbort = (): void => {
      const reason: unknown = request.signal?.reason;
      const error = reason instanceof Error ? reason : coded('the request was aborted', 'ABORT_ERR');
      if (body) body.destroy(error);
      fail(error);
    };

    const onread = {
      buffer: () => body?.nextReadBuffer() ?? Buffer.allocUnsafeSlow(READ_BUFFER_BYTES),
      callback: (n: number, read: Uint8Array): boolean => {
        const buffer = read as Buffer;
        body?.clearGap();
        try {
          const events = parser.feed(Buffer.from(buffer.buffer, buffer.byteOffset, n));
          for (const event of events) {
            if (event.kind === 'head') {
              clearTimeout(timer);
              body = new LentBody(socket, request.bodyTimeoutMs);
              settled = true;
              resolve({ statusCode: event.status, headers: event.headers, body });
            } else if (event.kind === 'data') body!.push(event.chunk, buffer);
            else {
              body!.end();
              request.signal?.removeEventListener('abort', onAbort);
              socket.destroy();
            }
          }
        } catch (error) {
          fail(error as Error);
          return false;
        }
        if (body) body.settle(buffer);
        // While chunks wait, the socket stops reading; the body resumes it when they are taken.
        if (body?.waiting !== true) return true;
        socket.pause();
        return false;
      },
    };

    const options = { host, port, onread, noDelay: true };
    const socket: net.Socket = secure
      ? tls.connect({
          ...options,
          servername: net.isIP(host) === 0 ? host : undefined,
          ALPNProtocols: ['http/1.1'],
          minVersion: request.minVersion ?? 'TLSv1.2',
          ...(request.ca === undefined ? {} : { ca: [...tls.rootCertificates, request.ca] }),
        })
      : net.connect(options);

    timer = setTimeout(
      () => fail(coded(`no connection after ${request.connectTimeoutMs} ms`, 'UND_ERR_CONNECT_TIMEOUT')),
      request.connectTimeoutMs,
    );
    socket.once(secure ? 'secureConnect' : 'connect', () => {
      clearTimeout(timer);
      timer = setTimeout(
        () => fail(coded(`no response head after ${request.headersTimeoutMs} ms`, 'UND_ERR_HEADERS_TIMEOUT')),
        request.headersTimeoutMs,
      );
      const lines = [`GET ${request.path} HTTP/1.1`, `host: ${url.host}`, 'connection: close'];
      for (const [name, value] of Object.entries(request.headers)) {
        if (/[\r\n]/.test(name) || /[\r\n]/.test(value)) {
          fail(new Error(`header ${name} holds a line break`));
          return;
        }
        if (name !== 'host' && name !== 'connection') lines.push(`${name}: ${value}`);
      }
      socket.write(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
    });
    // Flowing (no 'data' events come with onread), so that the peer's close is seen as 'end'.
    socket.resume();
    socket.on('error', (error) => fail(error));
    const closed = (): void => {
      if (parser.done) return;
      // A body read to the connection's close ends with it; any other is cut short.
      if (parser.close()) {
        body?.end();
        request.signal?.removeEventListener('abort', onAbort);
      } else fail(coded('the connection closed before the response was complete', 'UND_ERR_SOCKET'));
    };
    socket.on('end', closed);
    socket.on('close', closed);
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
    const status = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(statusLine ?? '');
    if (!status) throw coded(`a status line "${(statusLine ?? '').slice(0, 40)}"`, 'LENT_BODY_MALFORMED');
    const code = Number(status[1]);
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
