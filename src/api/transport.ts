import { setTimeout as delay } from 'node:timers/promises';
import pRetry from 'p-retry';
import { Agent } from 'undici';
import type { Dispatcher } from 'undici';
import type { Config } from '../config/schema.js';
import type { Logger } from '../observability/logger.js';
import type { Authenticator } from './auth/types.js';
import type { ResolvedTarget } from './deployments.js';
import { CybsError } from '../errors.js';
import { createHttpError, createTransportError, isApiError } from './errors.js';
import { requestLent } from './lent-body.js';
import type { LentAgent } from './lent-body.js';
import { decideRetry } from './retry.js';
import type { RetryConfig } from './retry.js';

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** One query parameter; undefined values are left out. Order is the order on the wire. */
export type QueryEntry = readonly [name: string, value: string | number | boolean | undefined];

/** Accept for JSON answers: the service produces application/hal+json (facts §1). */
export const JSON_ACCEPT = 'application/hal+json, application/json';

/** Most bytes of an error body that are read; the rest is discarded. */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

/** Emitted for every attempt, so that metrics can count requests and retries. */
export interface ApiEvent {
  type: 'request' | 'retry' | 'response';
  /** Logical operation (`searchReports`, `downloadReport`, `request`, …). */
  operation: string;
  method: HttpMethod;
  /** Path without the query string. */
  path: string;
  /** HTTP status (response, retry of an HTTP failure); absent for transport failures. */
  status?: number;
  /** Attempt number, starting at 1. */
  attempt: number;
  /** Time from sending to the response headers (response events). */
  durationMs?: number;
  /** Wait before the next attempt (retry events). */
  delayMs?: number;
  /** Error code of a failed attempt (API_TIMEOUT, API_NETWORK, API_HTTP_STATUS, …). */
  errorCode?: string;
}

/** A request before signing. */
export interface ApiRequest {
  method: HttpMethod;
  /** Path without query (already percent-encoded where needed), e.g. `/reporting/v3/reports`. */
  path: string;
  query?: readonly QueryEntry[];
  /** JSON body (serialised once; the digest covers exactly these bytes). */
  body?: unknown;
  accept?: string;
  operation?: string;
  /** A 404 on this endpoint means "no data / not available" (search, downloads, on-demand). */
  notFoundMeansNoData?: boolean;
  /** The merchant a meta key acts for in this request (SignableRequest.merchantId). */
  merchantId?: string;
  signal?: AbortSignal;
  /**
   * The caller reads the body's chunks in turn and is done with each (copied, or its write
   * complete) before it asks for the next: a GET the transport then reads through requestLent
   * (lent-body.ts) when it has `lentBodies`, its chunks in reused buffers. 'kept': on a connection
   * kept between requests (JSON answers; at most `api.connectionsPerHost` at once, as undici's);
   * 'alone': on a connection of its own, closed after it (a report download, one long body).
   */
  lentBody?: 'kept' | 'alone' | undefined;
}

/**
 * Content-Type of every request, with or without a body: the documentation lists it among the
 * headers a request must carry (JWT message elements: content-type, host, authorization). Neither
 * scheme signs it (HTTP signature: host, date, request-target, digest, v-c-merchant-id).
 */
export const REQUEST_CONTENT_TYPE = 'application/json';

/** A response body: undici's (a Node Readable) or a LentBody. Read it or call dump()/destroy(). */
export interface ResponseBody extends AsyncIterable<Buffer> {
  readonly destroyed: boolean;
  destroy(error?: Error): unknown;
  /** Drop the rest of the body. */
  dump(): Promise<unknown>;
  once(event: 'error', listener: (error: unknown) => void): unknown;
}

/** A successful answer whose body has not been read yet. */
export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  contentType: string | undefined;
  body: ResponseBody;
}

export interface TransportConfig {
  target: ResolvedTarget;
  retry: RetryConfig;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  userAgent: string;
  /**
   * Read ApiRequest.lentBody requests through requestLent, with this connect timeout, on the
   * agent's kept connections; absent (a dispatcher given by the caller, such as a mock), every
   * request goes through the dispatcher.
   */
  lentBodies?: { connectTimeoutMs: number; agent: LentAgent };
}

export interface TransportDeps {
  dispatcher: Dispatcher;
  authenticator: Authenticator;
  logger?: Logger;
  /** Milliseconds since the epoch (retry budget, Retry-After dates). */
  now?: () => number;
  /** Waits between attempts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** In [0, 1): full-jitter source. */
  random?: () => number;
  onEvent?: (event: ApiEvent) => void;
}

/** The least average speed a response body must keep once its grace period is over. */
export const MIN_BODY_BYTES_PER_SECOND = 16 * 1024;

/** The code of the error that ends a body past its deadline (a transient timeout: retried). */
export const BODY_DEADLINE_CODE = 'CYBS_BODY_DEADLINE';

/**
 * A response body's chunks under an overall deadline scaled to its size: `graceMs` plus the time
 * its bytes take at MIN_BODY_BYTES_PER_SECOND (its content-length, or the bytes received so far when
 * no length is announced). The gap timeout (bodyTimeoutMs) alone lets a body that trickles a byte
 * at a time run for ever. Past the deadline the body is destroyed with a BODY_DEADLINE_CODE error.
 */
export async function* chunksWithinDeadline(
  body: ResponseBody,
  options: { contentLength?: number | undefined; graceMs: number },
): AsyncGenerator<Buffer> {
  const started = Date.now();
  let received = 0;
  let timer: NodeJS.Timeout | undefined;
  const deadline = () =>
    started +
    options.graceMs +
    (Math.max(options.contentLength ?? 0, received) / MIN_BODY_BYTES_PER_SECOND) * 1000;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(
      () => {
        if (Date.now() < deadline()) return arm();
        const seconds = Math.round((Date.now() - started) / 1000);
        const error = Object.assign(
          new Error(
            `still arriving after ${seconds} s with ${received} bytes; at least ${MIN_BODY_BYTES_PER_SECOND} bytes/s expected after ${Math.round(options.graceMs / 1000)} s`,
          ),
          { code: BODY_DEADLINE_CODE },
        );
        body.destroy(error);
      },
      Math.max(0, deadline() - Date.now()),
    );
    timer.unref();
  };
  arm();
  try {
    for await (const chunk of body) {
      received += chunk.length;
      yield chunk;
    }
  } finally {
    clearTimeout(timer);
  }
}

/** The content-length header as a number, when it is one. */
export function contentLengthOf(headers: RawResponse['headers']): number | undefined {
  const value = headerValue(headers['content-length']);
  const n = value === undefined ? NaN : Number(value);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** Percent-encode one query component so that no value can add or split a parameter. */
export function encodeQueryComponent(value: string): string {
  return encodeURIComponent(value);
}

/** Build `path?query` exactly as it is sent and signed (pure). */
export function buildRequestTarget(
  basePath: string,
  path: string,
  query: readonly QueryEntry[] = [],
): string {
  const pairs = query
    .filter((entry): entry is readonly [string, string | number | boolean] => entry[1] !== undefined)
    .map(([name, value]) => `${encodeQueryComponent(name)}=${encodeQueryComponent(String(value))}`);
  const fullPath = `${basePath}${path.startsWith('/') ? path : `/${path}`}`;
  return pairs.length > 0 ? `${fullPath}?${pairs.join('&')}` : fullPath;
}

/** The transport's dispatcher: one keep-alive pool per origin, TLS 1.2+, HTTP/1.1, config timeouts. */
export function createApiDispatcher(api: Config['api']): Agent {
  return new Agent({
    connections: api.connectionsPerHost,
    connect: { timeout: api.connectTimeoutMs, minVersion: 'TLSv1.2' },
    headersTimeout: api.headersTimeoutMs,
    bodyTimeout: api.bodyTimeoutMs,
    keepAliveTimeout: 4_000,
    allowH2: false,
  });
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Read at most `limit` bytes of a body as text, then discard the rest. Never throws. */
export async function readBodyCapped(
  body: ResponseBody,
  limit = MAX_ERROR_BODY_BYTES,
  graceMs?: number,
): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    // An error body that trickles ends by the same deadline as any other body.
    const source = graceMs === undefined ? body : chunksWithinDeadline(body, { graceMs });
    for await (const chunk of source) {
      // Copied: a lent body's chunk is reused for the next.
      chunks.push(Buffer.from(chunk));
      size += chunk.length;
      if (size >= limit) break;
    }
  } catch {
    // a broken error body still yields what arrived
  } finally {
    if (!body.destroyed) body.destroy();
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}

/** Signed, retried requests to one CyberSource target. */
export interface Transport {
  readonly target: ResolvedTarget;
  /**
   * Send a request (signed afresh for every attempt) and hand the successful response to `handle`
   * inside the attempt: an error thrown while handling (e.g. reading the body) is retried like a
   * failed request when it is transient. Non-success answers become ApiError.
   */
  execute<T>(request: ApiRequest, handle: (response: RawResponse) => Promise<T>): Promise<T>;
}

export function createTransport(config: TransportConfig, deps: TransportDeps): Transport {
  const now = deps.now ?? Date.now;
  const sleep = deps.sleep ?? ((ms: number, signal?: AbortSignal) => delay(ms, undefined, { signal }));
  const random = deps.random ?? Math.random;
  const { target } = config;
  const emit = (event: ApiEvent): void => {
    try {
      deps.onEvent?.(event);
    } catch (error) {
      deps.logger?.warn({ err: error }, 'an API event listener failed');
    }
  };

  async function attemptOnce<T>(
    request: ApiRequest,
    attempt: number,
    handle: (response: RawResponse) => Promise<T>,
  ): Promise<T> {
    const operation = request.operation ?? 'request';
    const requestTarget = buildRequestTarget(target.basePath, request.path, request.query);
    const bodyText = request.body === undefined ? undefined : JSON.stringify(request.body);
    const headers: Record<string, string> = {
      'user-agent': config.userAgent,
      accept: request.accept ?? JSON_ACCEPT,
      'content-type': REQUEST_CONTENT_TYPE,
    };
    const signed = await deps.authenticator.headersFor({
      method: request.method,
      host: target.host,
      target: requestTarget,
      ...(bodyText === undefined ? {} : { body: bodyText }),
      ...(request.merchantId === undefined ? {} : { merchantId: request.merchantId }),
    });
    Object.assign(headers, signed);

    emit({ type: 'request', operation, method: request.method, path: request.path, attempt });
    deps.logger?.debug({ method: request.method, path: requestTarget, attempt, operation }, 'API request');
    const started = now();
    let response: { statusCode: number; headers: RawResponse['headers']; body: ResponseBody };
    try {
      response =
        request.lentBody !== undefined &&
        config.lentBodies &&
        request.method === 'GET' &&
        bodyText === undefined
          ? await requestLent(
              {
                origin: target.origin,
                path: requestTarget,
                headers,
                connectTimeoutMs: config.lentBodies.connectTimeoutMs,
                headersTimeoutMs: config.headersTimeoutMs,
                bodyTimeoutMs: config.bodyTimeoutMs,
                signal: request.signal,
              },
              request.lentBody === 'kept' ? config.lentBodies.agent : undefined,
            )
          : await deps.dispatcher.request({
              origin: target.origin,
              path: requestTarget,
              method: request.method,
              headers,
              ...(bodyText === undefined ? {} : { body: bodyText }),
              headersTimeout: config.headersTimeoutMs,
              bodyTimeout: config.bodyTimeoutMs,
              ...(request.signal ? { signal: request.signal } : {}),
            });
    } catch (error) {
      const apiError = createTransportError({
        method: request.method,
        path: requestTarget,
        host: target.host,
        error,
      });
      emit({
        type: 'response',
        operation,
        method: request.method,
        path: request.path,
        attempt,
        durationMs: now() - started,
        errorCode: apiError.code,
      });
      throw apiError;
    }
    const durationMs = now() - started;
    const status = response.statusCode;
    emit({
      type: 'response',
      operation,
      method: request.method,
      path: request.path,
      status,
      attempt,
      durationMs,
    });
    deps.logger?.debug(
      { method: request.method, path: requestTarget, status, attempt, durationMs },
      'API response',
    );

    const contentType = headerValue(response.headers['content-type']);
    if ((status >= 200 && status < 300) || status === 304) {
      const raw: RawResponse = { status, headers: response.headers, contentType, body: response.body };
      try {
        return await handle(raw);
      } catch (error) {
        if (!response.body.destroyed) response.body.destroy();
        if (isApiError(error)) throw error;
        throw createTransportError({ method: request.method, path: requestTarget, host: target.host, error });
      }
    }
    const text = await readBodyCapped(response.body, MAX_ERROR_BODY_BYTES, config.bodyTimeoutMs);
    const retryAfter = headerValue(response.headers['retry-after']);
    throw createHttpError({
      method: request.method,
      path: requestTarget,
      status,
      bodyText: text,
      ...(contentType === undefined ? {} : { contentType }),
      ...(retryAfter === undefined ? {} : { retryAfter }),
      notFoundMeansNoData: request.notFoundMeansNoData === true,
      auth: { scheme: deps.authenticator.scheme, merchantId: deps.authenticator.merchantId },
    });
  }

  return {
    target,
    async execute<T>(request: ApiRequest, handle: (response: RawResponse) => Promise<T>): Promise<T> {
      const startedAt = now();
      const operation = request.operation ?? 'request';
      return pRetry(
        async (attempt: number) => {
          try {
            return await attemptOnce(request, attempt, handle);
          } catch (error) {
            // Our own errors (HTTP status, credentials, key file) keep their code and exit code.
            if (error instanceof CybsError) throw error;
            if (request.signal?.aborted) throw error;
            // Anything unexpected becomes an ApiError so that p-retry never treats it specially.
            throw createTransportError({
              method: request.method,
              path: buildRequestTarget(target.basePath, request.path, request.query),
              host: target.host,
              error,
            });
          }
        },
        {
          retries: Math.max(0, config.retry.attempts - 1),
          minTimeout: 0,
          maxTimeout: 0,
          factor: 1,
          randomize: false,
          ...(request.signal ? { signal: request.signal } : {}),
          shouldRetry: async ({ error, attemptNumber }) => {
            if (request.signal?.aborted) return false;
            const decision = decideRetry({
              error,
              attempt: attemptNumber,
              elapsedMs: now() - startedAt,
              nowMs: now(),
              policy: config.retry,
              random,
            });
            const apiError = isApiError(error) ? error : undefined;
            if (!decision.retry) {
              if (apiError?.retryable) {
                deps.logger?.debug(
                  { method: request.method, path: request.path, attempt: attemptNumber, code: apiError.code },
                  `API request not retried: ${decision.reason}`,
                );
              }
              return false;
            }
            emit({
              type: 'retry',
              operation,
              method: request.method,
              path: request.path,
              attempt: attemptNumber,
              delayMs: decision.delayMs,
              ...(apiError?.status === undefined ? {} : { status: apiError.status }),
              ...(apiError ? { errorCode: apiError.code } : {}),
            });
            deps.logger?.info(
              {
                method: request.method,
                path: request.path,
                attempt: attemptNumber,
                status: apiError?.status,
                code: apiError?.code,
                delayMs: decision.delayMs,
              },
              'API request failed; retrying',
            );
            await sleep(decision.delayMs, request.signal);
            return true;
          },
        },
      );
    },
  };
}
