/**
 * Reading JSON answers. The body is read whole inside the transport's attempt, so that a body that
 * breaks is retried like a failed request, and within its bounds (json-body-limits.ts); it is
 * parsed and checked against the endpoint's schema only when asked, outside the attempt, so that
 * a malformed 200 is not retried.
 */
import type { JsonEndpoint } from './endpoints.js';
import { ApiError } from './errors.js';
import { JsonBodyLimits } from './json-body-limits.js';
import { releaseBuffer } from '../spool/release-buffer.js';
import { buildRequestTarget, chunksWithinDeadline, contentLengthOf } from './transport.js';
import type { ApiRequest, RawResponse, ResponseBody, Transport } from './transport.js';

/** A JSON response body as bytes, parsed and checked only when asked. */
export interface JsonPage<T> {
  /**
   * The body as received, in one buffer: a view of the caller's BodyBuffer when it gave one (valid
   * until the next body is read into it), else a buffer of its own.
   */
  bytes: Buffer;
  /**
   * The body parsed and checked, as the client's JSON methods return it (their errors included);
   * from a BodyBuffer, only before the next body is read into it.
   */
  json(): T;
}

/**
 * One buffer that response bodies are read into, one body after the other, kept from body to body.
 * Each socket chunk is copied in as it arrives and dropped: the chunks die young, freed by the next
 * minor collection, instead of being held until the whole page is read (a page of 2.9 MB is ≈ 45
 * chunks), which let them outlive minor collections and wait for a full one; and a page costs no
 * buffer of its own. A body read into it replaces the one before: its reader must be done with a
 * page before the next is read (fetchOnDemandBodies reads a page before it requests the next).
 */
export class BodyBuffer {
  private buffer: Buffer = Buffer.alloc(0);
  private length = 0;

  /** Start a body of `expected` bytes (its content-length, when announced). */
  reset(expected = 0): void {
    this.length = 0;
    this.reserve(expected);
  }

  append(chunk: Buffer): void {
    this.reserve(this.length + chunk.length);
    this.length += chunk.copy(this.buffer, this.length);
  }

  /** The body read since reset(), a view of the buffer. */
  bytes(): Buffer {
    return this.buffer.subarray(0, this.length);
  }

  /**
   * Give the buffer's memory back now (releaseBuffer): the reader is done with the last body. A
   * body read after starts a new buffer.
   */
  release(): void {
    releaseBuffer(this.buffer);
    this.buffer = Buffer.alloc(0);
    this.length = 0;
  }

  private reserve(size: number): void {
    if (size <= this.buffer.length) return;
    // Unpooled and uninitialised: every byte read is written before it is read.
    const grown = Buffer.allocUnsafeSlow(Math.max(size, this.buffer.length * 2));
    this.buffer.copy(grown, 0, 0, this.length);
    // The body before (its reader was done with it) or this one's start, copied: free it now.
    releaseBuffer(this.buffer);
    this.buffer = grown;
  }
}

/** The answer to a request to any path, read whole. */
export interface GenericResponse {
  status: number;
  contentType: string | undefined;
  headers: Record<string, string | string[] | undefined>;
  /** The whole body as text ('' for none). */
  text: string;
  /** The parsed body when it is JSON. */
  json?: unknown;
}

/** True for JSON media types (application/json, application/hal+json, …+json). */
export function isJsonContentType(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/([\w.-]+\+)?json\b/i.test(contentType.trim());
}

/**
 * Send the endpoint's request and read the answer's bytes within their bounds; `json()` parses
 * them and checks them against the endpoint's schema. `graceMs` starts the body's deadline
 * (transport.ts chunksWithinDeadline). The body is read into `into` when given (see BodyBuffer),
 * else into a buffer of its own.
 */
export async function fetchJsonPage<T>(
  transport: Transport,
  endpoint: JsonEndpoint<T>,
  graceMs: number,
  into?: BodyBuffer,
): Promise<JsonPage<T>> {
  const { request } = endpoint;
  const path = buildRequestTarget(transport.target.basePath, request.path, request.query);
  const tooLarge = (problem: string) =>
    new ApiError({
      code: 'API_INVALID_RESPONSE',
      method: request.method,
      path,
      message: `CyberSource answered ${request.method} ${path} with ${problem}.`,
    });
  const body = into ?? new BodyBuffer();
  // Each chunk is copied into the BodyBuffer as it comes: the body may lend them (transport.ts).
  const bytes = await transport.execute({ ...request, lentBody: 'kept' }, (response) =>
    readBody(response, body, graceMs, tooLarge),
  );
  return { bytes, json: () => parseJson(endpoint, path, decodeText(bytes)) };
}

/** Send a request to any path and read the answer whole as text, parsed too when it is JSON. */
export async function fetchGenericResponse(
  transport: Transport,
  request: ApiRequest,
): Promise<GenericResponse> {
  const response = await transport.execute({ ...request, lentBody: 'kept' }, async (raw) => ({
    status: raw.status,
    contentType: raw.contentType,
    headers: raw.headers,
    text: decodeText(await readWhole(raw.body)),
  }));
  if (isJsonContentType(response.contentType) && response.text.trim() !== '') {
    try {
      return { ...response, json: JSON.parse(response.text) as unknown };
    } catch {
      return response;
    }
  }
  return response;
}

/**
 * A JSON body read into `into` (from its start: an attempt that failed mid-way leaves nothing),
 * within its bounds: `tooLarge` turns the sentence saying which bound a body passes into the error
 * thrown (the rest is not read).
 */
async function readBody(
  response: RawResponse,
  into: BodyBuffer,
  graceMs: number,
  tooLarge: (problem: string) => Error,
): Promise<Buffer> {
  const contentLength = contentLengthOf(response.headers);
  const limits = new JsonBodyLimits();
  const declared = limits.overLimit(contentLength);
  if (declared !== undefined) throw tooLarge(declared);
  into.reset(contentLength);
  for await (const chunk of chunksWithinDeadline(response.body, { contentLength, graceMs })) {
    const problem = limits.update(chunk);
    if (problem !== undefined) throw tooLarge(problem);
    into.append(chunk);
  }
  return into.bytes();
}

/** A whole body's bytes (each chunk copied: a lent body reuses its buffers). */
async function readWhole(body: ResponseBody): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of body) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts);
}

/** Bytes as text, as undici's body.text() decodes them (a UTF-8 byte order mark skipped). */
function decodeText(bytes: Buffer): string {
  const bom = bytes.length > 2 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
  return bytes.toString('utf8', bom ? 3 : 0);
}

/**
 * A JSON body parsed and checked against the endpoint's schema (its fast check first), or
 * API_INVALID_RESPONSE naming `path` (the request target as sent) and what is wrong.
 */
function parseJson<T>(endpoint: JsonEndpoint<T>, path: string, text: string): T {
  const { method } = endpoint.request;
  const where = `${method} ${path}`;
  let data: unknown;
  try {
    data = text.trim() === '' ? {} : JSON.parse(text);
  } catch (error) {
    throw new ApiError({
      code: 'API_INVALID_RESPONSE',
      method,
      path,
      cause: error,
      message: `CyberSource answered ${where} with a body that is not JSON (${text.slice(0, 80).replace(/\s+/g, ' ')}…).`,
    });
  }
  const fast = endpoint.fastCheck?.(data);
  if (fast !== undefined) return fast as T;
  const parsed = endpoint.schema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const at = issue?.path.map(String).join('.') || '(top level)';
    throw new ApiError({
      code: 'API_INVALID_RESPONSE',
      method,
      path,
      message: `CyberSource answered ${where} with an unexpected body: at "${at}" ${issue?.message ?? 'invalid'}.`,
    });
  }
  return parsed.data;
}
