/**
 * Reading JSON answers. The body is read whole inside the transport's attempt, so that a body that
 * breaks is retried like a failed request, and within its bounds (json-body-limits.ts); it is
 * parsed and checked against the endpoint's schema only when asked, outside the attempt, so that
 * a malformed 200 is not retried.
 */
import type { JsonEndpoint } from './endpoints.js';
import { ApiError } from './errors.js';
import { JsonBodyLimits } from './json-body-limits.js';
import { buildRequestTarget, chunksWithinDeadline, contentLengthOf } from './transport.js';
import type { ApiRequest, RawResponse, Transport } from './transport.js';

/** A JSON response body as bytes, parsed and checked only when asked. */
export interface JsonPage<T> {
  /**
   * The body as received, in chunks (not joined: a reader that copies them where it wants them
   * spares a 3 MB buffer per page, which V8 counts towards its old generation's limit).
   */
  chunks: readonly Buffer[];
  /** The body parsed and checked, as the client's JSON methods return it (their errors included). */
  json(): T;
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
 * (transport.ts chunksWithinDeadline).
 */
export async function fetchJsonPage<T>(
  transport: Transport,
  endpoint: JsonEndpoint<T>,
  graceMs: number,
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
  const chunks = await transport.execute(request, (response) => readChunks(response, graceMs, tooLarge));
  return { chunks, json: () => parseJson(endpoint, path, decodeText(Buffer.concat(chunks))) };
}

/** Send a request to any path and read the answer whole as text, parsed too when it is JSON. */
export async function fetchGenericResponse(
  transport: Transport,
  request: ApiRequest,
): Promise<GenericResponse> {
  const response = await transport.execute(request, async (raw) => ({
    status: raw.status,
    contentType: raw.contentType,
    headers: raw.headers,
    text: await raw.body.text(),
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
 * A JSON body's chunks, within its bounds: `tooLarge` turns the sentence saying which bound a body
 * passes into the error thrown (the rest is not read).
 */
async function readChunks(
  response: RawResponse,
  graceMs: number,
  tooLarge: (problem: string) => Error,
): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  const contentLength = contentLengthOf(response.headers);
  const limits = new JsonBodyLimits();
  const declared = limits.overLimit(contentLength);
  if (declared !== undefined) throw tooLarge(declared);
  for await (const chunk of chunksWithinDeadline(response.body, { contentLength, graceMs })) {
    const problem = limits.update(chunk);
    if (problem !== undefined) throw tooLarge(problem);
    chunks.push(chunk);
  }
  return chunks;
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
