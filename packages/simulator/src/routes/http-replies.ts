/**
 * Building and sending simulator replies: the error bodies of the service (facts §3), content
 * negotiation by `Accept`, and the wire-level faults (slow headers, slow body, reset, truncate).
 */
import type { ServerResponse } from 'node:http';
import type { FaultRule } from '../server/faults.js';

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  /** A whole body (sent with its length), or chunks streamed with backpressure. */
  body?: string | Buffer | AsyncIterable<string | Buffer>;
}

const HAL = 'application/hal+json';

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Reply {
  return {
    status,
    headers: { 'content-type': `${HAL};charset=utf-8`, ...headers },
    body: JSON.stringify(body),
  };
}

/** Reporting error shape (facts §3.1): 400/404 of most reporting endpoints. */
export function reportingError(
  status: number,
  reason: string,
  message: string,
  details: { field: string; reason: string }[] = [],
): Reply {
  return json(status, {
    submitTimeUtc: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    reason,
    message,
    details,
  });
}

export function invalidParams(details: { field: string; reason: string }[]): Reply {
  return reportingError(400, 'INVALID_DATA', 'One or more fields contains invalid data', details);
}

export interface ErrorBean {
  code: string;
  message: string;
  localizationKey: string;
  correlationId: string | null;
  detail: string | null;
  fields: { path: string; message: string; localizationKey: string }[];
}

/** The "Error Bean" (facts §3.2) as JSON, or as XML (`<errorBean>`) when `xml` is set. */
export function errorBean(
  status: number,
  bean: Omit<ErrorBean, 'correlationId' | 'fields'> & Partial<Pick<ErrorBean, 'correlationId' | 'fields'>>,
  options: { xml?: boolean; headers?: Record<string, string> } = {},
): Reply {
  const full: ErrorBean = { correlationId: null, fields: [], ...bean };
  if (options.xml) {
    const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
    const body =
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<errorBean>\n` +
      `    <code>${esc(full.code)}</code>\n` +
      (full.detail ? `    <detail>${esc(full.detail)}</detail>\n` : '') +
      `    <localizationKey>${esc(full.localizationKey)}</localizationKey>\n` +
      `    <message>${esc(full.message)}</message>\n</errorBean>\n`;
    return { status, headers: { 'content-type': 'application/xml;charset=utf-8', ...options.headers }, body };
  }
  return json(status, full, options.headers);
}

export function notFoundBean(xml: boolean): Reply {
  return errorBean(
    404,
    {
      code: 'RESOURCE_NOTFOUND',
      message: 'Requested Resource Not Found',
      localizationKey: 'cybsapi.resource.notfound',
      detail: 'The requested resource is not found. Please try again later.',
    },
    { xml },
  );
}

/** The shapes of a 401 (SimulatorOptions.unauthorizedShape). */
export const UNAUTHORIZED_SHAPES = ['gateway', 'error-bean'] as const;
export type UnauthorizedShape = (typeof UNAUTHORIZED_SHAPES)[number];

/**
 * A 401. `gateway`: the API gateway's answer to a refused signature or token,
 * `{"response":{"rmsg":"Authentication Failed"}}` (seen in the wild; the OAuth guide shows the same
 * envelope with `rmsg: {error, error_description}`). `error-bean`: the Error Bean with
 * UNAUTHORIZED / cybsapi.authentication.failed, the reporting services' own error shape (facts
 * §3.2), for a client that must read both; the spec documents no 401 body.
 */
export function unauthorizedReply(shape: UnauthorizedShape, detail: string): Reply {
  if (shape === 'gateway') return json(401, { response: { rmsg: 'Authentication Failed' } });
  return errorBean(401, {
    code: 'UNAUTHORIZED',
    message: 'Authentication Failed',
    localizationKey: 'cybsapi.authentication.failed',
    detail,
  });
}

/**
 * A 5xx (Error Bean, facts §3.2), or a 429. The 429 is INVENTED: no 429, rate limit or body for it
 * is documented for the reporting API (not in the spec, the SDK or the docs); the simulator sends it
 * (with an invented TOO_MANY_REQUESTS bean and Retry-After) only to exercise a client's retries.
 */
/**
 * A gateway's or proxy's error page served with status 200, as one in front of the service can
 * send: not the service's answer at all (fault `html-page`).
 */
export function gatewayPageReply(): Reply {
  return {
    status: 200,
    headers: { 'content-type': 'text/html; charset=utf-8' },
    body:
      '<!DOCTYPE html>\n<html lang="en"><head><title>502 Bad Gateway</title></head>\n' +
      '<body><h1>Bad Gateway</h1><p>The upstream server did not answer in time.</p></body></html>\n',
  };
}

export function serverErrorReply(status: number, retryAfter?: string): Reply {
  if (status === 429) {
    return errorBean(
      429,
      {
        code: 'TOO_MANY_REQUESTS',
        message: 'Too many requests',
        localizationKey: 'cybsapi.too.many.requests',
        detail: 'Rate limit exceeded. Retry after the time given in Retry-After.',
      },
      { headers: { 'retry-after': retryAfter ?? '1' } },
    );
  }
  return errorBean(status, {
    code: 'SERVER_ERROR',
    message: 'Error encountered while processing request',
    localizationKey: 'cybsapi.server.error',
    detail: status === 500 ? 'Internal Server Error. Please contact the customer support.' : null,
  });
}

/**
 * The media types a client accepts, in the order given (q-values ignored, like the service
 * seems to); `json` stands for application/hal+json, application/json and wildcards.
 */
export function negotiate<T extends string>(accept: string | undefined, supported: readonly T[]): T | 'json' {
  if (!accept) return 'json';
  for (const part of accept.split(',')) {
    const type = part.split(';')[0]!.trim().toLowerCase();
    if (
      type === 'application/hal+json' ||
      type === 'application/json' ||
      type === '*/*' ||
      type === 'application/*'
    ) {
      return 'json';
    }
    const hit = supported.find((s) => s === type);
    if (hit) return hit;
  }
  return 'json';
}

export function acceptsXml(accept: string | undefined): boolean {
  return (accept ?? '').toLowerCase().includes('application/xml');
}

/** Wait for 'drain' (or 'close'), removing both listeners afterwards. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function* chunksOf(
  body: string | Buffer | AsyncIterable<string | Buffer>,
  split: boolean,
): AsyncGenerator<string | Buffer> {
  if (typeof body === 'string' || Buffer.isBuffer(body)) {
    if (!split || body.length < 2) {
      yield body;
      return;
    }
    const size = Math.max(1, Math.min(4096, Math.ceil(body.length / 2)));
    for (let i = 0; i < body.length; i += size)
      yield typeof body === 'string' ? body.slice(i, i + size) : body.subarray(i, i + size);
    return;
  }
  yield* body;
}

/** Send a reply, applying the wire faults that fired for this request. */
export async function sendReply(
  res: ServerResponse,
  reply: Reply,
  faults: readonly FaultRule[],
): Promise<void> {
  const fault = (kind: FaultRule['kind']): FaultRule | undefined => faults.find((f) => f.kind === kind);
  const slowHeaders = fault('slow-headers');
  if (slowHeaders) await sleep(Number(slowHeaders.param ?? 2000));
  const slowBody = fault('slow-body');
  const reset = fault('reset');
  const truncate = fault('truncate');
  const headers: Record<string, string> = { ...reply.headers };
  const body = reply.body;
  if (body === undefined || body === '' || (Buffer.isBuffer(body) && body.length === 0)) {
    res.writeHead(reply.status, headers);
    res.end();
    return;
  }
  if ((typeof body === 'string' || Buffer.isBuffer(body)) && !slowBody && !reset && !truncate) {
    headers['content-length'] = String(Buffer.byteLength(body));
    res.writeHead(reply.status, headers);
    res.end(body);
    return;
  }
  res.writeHead(reply.status, headers);
  const limitOf = (rule: FaultRule | undefined, first: string | Buffer): number | undefined =>
    rule
      ? rule.param !== undefined
        ? Number(rule.param)
        : Math.floor(Buffer.byteLength(first) / 2)
      : undefined;
  let sent = 0;
  let resetAt: number | undefined;
  let truncateAt: number | undefined;
  let firstChunk = true;
  for await (const chunk of chunksOf(body, slowBody !== undefined)) {
    if (res.destroyed) return;
    if (firstChunk) {
      resetAt = limitOf(reset, chunk);
      truncateAt = limitOf(truncate, chunk);
    } else if (slowBody) {
      await sleep(Number(slowBody.param ?? 200));
    }
    firstChunk = false;
    if (resetAt === undefined && truncateAt === undefined) {
      if (!res.write(chunk)) await drained(res);
      continue;
    }
    let data = Buffer.from(chunk);
    const stopAt = Math.min(resetAt ?? Infinity, truncateAt ?? Infinity);
    if (sent + data.length >= stopAt) {
      data = data.subarray(0, Math.max(0, stopAt - sent));
      if (resetAt !== undefined && stopAt === resetAt) {
        // Flush what we have, then cut the connection in the middle of the body.
        if (data.length > 0) await new Promise<void>((r) => res.write(data, () => r()));
        res.socket?.destroy();
        return;
      }
      if (data.length > 0) res.write(data);
      res.end();
      return;
    }
    sent += data.length;
    if (!res.write(data)) await drained(res);
  }
  res.end();
}
