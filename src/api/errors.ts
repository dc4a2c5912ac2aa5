import { XMLParser } from 'fast-xml-parser';
import { CybsError } from '../errors.js';

/** Stable codes of the API stage. */
export const API_ERROR_CODES = [
  'API_HTTP_STATUS',
  'API_NOT_FOUND',
  'API_UNAUTHORIZED',
  'API_TIMEOUT',
  'API_NETWORK',
  'API_INVALID_RESPONSE',
] as const;
export type ApiErrorCode = (typeof API_ERROR_CODES)[number];

/** Most characters of a raw error body kept for messages and context. */
export const MAX_ERROR_TEXT = 500;

/**
 * A decoded error body. Three shapes exist: the reporting error
 * `{submitTimeUtc, reason, message, details:[{field, reason}]}` and the error bean
 * `{code, message, localizationKey, correlationId, detail, fields:[{path, message}]}`, in JSON or
 * XML (`<errorBean>`) (facts §3), and the gateway's answer to a refused authentication,
 * `{"response":{"rmsg":"Authentication Failed"}}`, whose `rmsg` may also be an object
 * `{error, error_description}` (DOCS OAuth "Submit API Requests": ACCESS_TOKEN_EXPIRED); anything
 * else is kept as truncated text.
 */
export interface ApiErrorBody {
  shape: 'reporting' | 'error-bean' | 'gateway' | 'text' | 'empty';
  reason?: string;
  message?: string;
  submitTimeUtc?: string;
  details?: { field?: string; reason?: string }[];
  code?: string;
  localizationKey?: string;
  correlationId?: string;
  detail?: string;
  fields?: { path?: string; message?: string; localizationKey?: string }[];
  /** Raw body text, truncated to MAX_ERROR_TEXT characters (shape `text`). */
  text?: string;
}

const str = (value: unknown): string | undefined =>
  typeof value === 'string' && value !== '' ? value : typeof value === 'number' ? String(value) : undefined;

const asArray = (value: unknown): unknown[] =>
  Array.isArray(value) ? value : value === undefined || value === null || value === '' ? [] : [value];

const record = (value: unknown): Record<string, unknown> | undefined =>
  value && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;

function truncate(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > MAX_ERROR_TEXT ? `${oneLine.slice(0, MAX_ERROR_TEXT)}…` : oneLine;
}

/** `{"response":{"rmsg": "…" | {error, error_description}}}`: the gateway's 401 (and some 400s). */
function fromGateway(obj: Record<string, unknown>): ApiErrorBody | undefined {
  const response = record(obj.response);
  if (!response || !('rmsg' in response)) return undefined;
  const rmsg = response.rmsg;
  const nested = record(rmsg);
  const out: ApiErrorBody = { shape: 'gateway' };
  const reason = str(nested?.error);
  const message = nested ? str(nested.error_description) : str(rmsg);
  if (reason !== undefined) out.reason = reason;
  if (message !== undefined && message !== reason) out.message = message;
  return out;
}

function fromObject(obj: Record<string, unknown>): ApiErrorBody | undefined {
  const gateway = fromGateway(obj);
  if (gateway) return gateway;
  const bean = record(obj.errorBean) ?? obj;
  if ('code' in bean || 'localizationKey' in bean || 'correlationId' in bean || 'fields' in bean) {
    const out: ApiErrorBody = { shape: 'error-bean' };
    const set = (key: 'code' | 'message' | 'localizationKey' | 'correlationId' | 'detail') => {
      const v = str(bean[key]);
      if (v !== undefined) out[key] = v;
    };
    set('code');
    set('message');
    set('localizationKey');
    set('correlationId');
    set('detail');
    const fieldsContainer = record(bean.fields);
    const fields = asArray(
      fieldsContainer && 'field' in fieldsContainer ? fieldsContainer.field : bean.fields,
    )
      .map(record)
      .filter((f): f is Record<string, unknown> => f !== undefined)
      .map((f) => {
        const item: { path?: string; message?: string; localizationKey?: string } = {};
        const path = str(f.path);
        const message = str(f.message);
        const key = str(f.localizationKey);
        if (path !== undefined) item.path = path;
        if (message !== undefined) item.message = message;
        if (key !== undefined) item.localizationKey = key;
        return item;
      });
    if (fields.length > 0) out.fields = fields;
    return out;
  }
  if ('reason' in obj || 'message' in obj || 'details' in obj || 'submitTimeUtc' in obj) {
    const out: ApiErrorBody = { shape: 'reporting' };
    const reason = str(obj.reason);
    const message = str(obj.message);
    const submitTimeUtc = str(obj.submitTimeUtc);
    if (reason !== undefined) out.reason = reason;
    if (message !== undefined) out.message = message;
    if (submitTimeUtc !== undefined) out.submitTimeUtc = submitTimeUtc;
    const detailsContainer = record(obj.details);
    const details = asArray(
      detailsContainer && 'detail' in detailsContainer ? detailsContainer.detail : obj.details,
    )
      .map(record)
      .filter((d): d is Record<string, unknown> => d !== undefined)
      .map((d) => {
        const item: { field?: string; reason?: string } = {};
        const field = str(d.field);
        const why = str(d.reason);
        if (field !== undefined) item.field = field;
        if (why !== undefined) item.reason = why;
        return item;
      });
    if (details.length > 0) out.details = details;
    return out;
  }
  return undefined;
}

const xmlParser = new XMLParser({
  ignoreAttributes: true,
  ignoreDeclaration: true,
  parseTagValue: false,
  trimValues: true,
  processEntities: true,
});

/** Decode an error response body of either shape, JSON or XML; falls back to truncated text (pure). */
export function decodeErrorBody(text: string, contentType?: string): ApiErrorBody {
  const trimmed = text.trim();
  if (trimmed === '') return { shape: 'empty' };
  const looksJson = trimmed.startsWith('{') || /json/i.test(contentType ?? '');
  const looksXml = trimmed.startsWith('<') || /xml/i.test(contentType ?? '');
  if (looksJson) {
    try {
      const obj = record(JSON.parse(trimmed) as unknown);
      const decoded = obj && fromObject(obj);
      if (decoded) return decoded;
    } catch {
      // not JSON after all
    }
  }
  if (looksXml) {
    try {
      const parsed = record(xmlParser.parse(trimmed) as unknown);
      const rootKey = parsed && Object.keys(parsed).find((k) => !k.startsWith('?'));
      const root = parsed && rootKey ? record(parsed[rootKey]) : undefined;
      const decoded = root && fromObject(rootKey === 'errorBean' ? { errorBean: root } : root);
      if (decoded) return decoded;
    } catch {
      // not XML after all
    }
  }
  return { shape: 'text', text: truncate(trimmed) };
}

/** The error body as a short phrase: `INVALID_DATA: One or more fields … (startTime: INVALID_DATA)`. */
export function describeErrorBody(body: ApiErrorBody): string {
  if (body.shape === 'empty') return 'no error body';
  if (body.shape === 'text') return `body "${body.text ?? ''}"`;
  const clean = (text: string | undefined): string | undefined => text?.trim().replace(/\.+$/, '');
  const head = [body.reason ?? body.code, clean(body.message)].filter(Boolean).join(': ');
  const extras: string[] = [];
  if (body.detail && body.detail !== body.message) extras.push(clean(body.detail) ?? '');
  for (const d of body.details ?? []) extras.push([d.field, d.reason].filter(Boolean).join(': '));
  for (const f of body.fields ?? []) extras.push([f.path, f.message].filter(Boolean).join(': '));
  const tail = extras.filter(Boolean).slice(0, 5).join('; ');
  return tail ? `${head || 'error'} (${tail})` : head || 'an error without a message';
}

export interface ApiErrorInit {
  code: ApiErrorCode;
  message: string;
  method: string;
  /** Path and query as sent (no secrets are ever in a URL of this API). */
  path: string;
  status?: number;
  body?: ApiErrorBody;
  noData?: boolean;
  retryable?: boolean;
  /** The raw Retry-After header of a 429/503 answer. */
  retryAfter?: string;
  cause?: unknown;
  exitCode?: number;
}

/** Every failure of a CyberSource API call: HTTP status, timeout or network error. */
export class ApiError extends CybsError {
  readonly status: number | undefined;
  readonly method: string;
  readonly path: string;
  readonly body: ApiErrorBody | undefined;
  /** A 404 of search, downloads and on-demand reports: nothing to load (yet), not a failure. */
  readonly noData: boolean;
  readonly retryAfter: string | undefined;

  constructor(init: ApiErrorInit) {
    super(init.code, init.message, {
      stage: 'api',
      retryable: init.retryable ?? false,
      cause: init.cause,
      exitCode: init.exitCode ?? 1,
      context: {
        method: init.method,
        path: init.path,
        ...(init.status === undefined ? {} : { status: init.status }),
        ...(init.body === undefined ? {} : { body: init.body }),
        ...(init.noData ? { noData: true } : {}),
      },
    });
    this.name = 'ApiError';
    this.status = init.status;
    this.method = init.method;
    this.path = init.path;
    this.body = init.body;
    this.noData = init.noData ?? false;
    this.retryAfter = init.retryAfter;
  }
}

export function isApiError(value: unknown): value is ApiError {
  return value instanceof ApiError;
}

/** Statuses worth another attempt: rate limiting and transient server failures. */
export const RETRYABLE_STATUSES: readonly number[] = [429, 500, 502, 503, 504];

export interface HttpErrorInput {
  method: string;
  path: string;
  status: number;
  bodyText: string;
  contentType?: string;
  retryAfter?: string;
  /** 404 means "no data / not available" on this endpoint. */
  notFoundMeansNoData?: boolean;
  /** For the 401 message: the scheme and merchant id that were refused. */
  auth?: { scheme: string; merchantId: string };
}

/** The ApiError for a non-success HTTP answer (pure). */
export function createHttpError(input: HttpErrorInput): ApiError {
  const body = decodeErrorBody(input.bodyText, input.contentType);
  const described = describeErrorBody(body);
  const where = `${input.method} ${input.path}`;
  const base = {
    method: input.method,
    path: input.path,
    status: input.status,
    body,
    ...(input.retryAfter === undefined ? {} : { retryAfter: input.retryAfter }),
  };
  if (input.status === 401) {
    const who = input.auth ? ` (auth scheme ${input.auth.scheme}, merchant id ${input.auth.merchantId})` : '';
    return new ApiError({
      ...base,
      code: 'API_UNAUTHORIZED',
      message: `CyberSource refused the credentials${who} with HTTP 401 for ${where}: ${described}; check CYBS_AUTH, CYBS_MERCHANT_ID, CYBS_KEY_ID and the shared secret or key file.`,
    });
  }
  if (input.status === 404) {
    const noData = input.notFoundMeansNoData === true;
    return new ApiError({
      ...base,
      code: 'API_NOT_FOUND',
      noData,
      message: noData
        ? `CyberSource has no data for ${where} (HTTP 404, ${described}): the report is not generated yet or there are no transactions.`
        : `CyberSource found nothing at ${where} (HTTP 404, ${described}).`,
    });
  }
  const retryable = RETRYABLE_STATUSES.includes(input.status);
  const hint =
    input.status === 403
      ? '; the credentials lack permission for this resource or organization'
      : input.status === 400
        ? '; the request was rejected as invalid'
        : '';
  return new ApiError({
    ...base,
    code: 'API_HTTP_STATUS',
    retryable,
    message: `CyberSource answered HTTP ${input.status} to ${where}: ${described}${hint}.`,
  });
}

const TIMEOUT_CODES = new Set([
  // A body past its overall deadline (transport.ts chunksWithinDeadline).
  'CYBS_BODY_DEADLINE',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
]);

const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'ENOTFOUND',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH',
  'ERR_STREAM_PREMATURE_CLOSE',
]);

/** The error code of a thrown value or of the first error in its cause chain that has one. */
export function errorCodeOf(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && (TIMEOUT_CODES.has(code) || NETWORK_CODES.has(code))) return code;
    current = (current as { cause?: unknown }).cause;
  }
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** True for socket errors and timeouts (anywhere in the cause chain): the transient transport failures. */
export function isTransientTransportError(error: unknown): boolean {
  const code = errorCodeOf(error);
  return code !== undefined && (TIMEOUT_CODES.has(code) || NETWORK_CODES.has(code));
}

/** The ApiError for a transport failure (timeout, socket error) or anything else thrown by the request. */
export function createTransportError(input: {
  method: string;
  path: string;
  host: string;
  error: unknown;
}): ApiError {
  const code = errorCodeOf(input.error);
  const where = `${input.method} ${input.path}`;
  if (code && TIMEOUT_CODES.has(code)) {
    const what =
      code === 'CYBS_BODY_DEADLINE'
        ? `the whole response body (${(input.error as Error).message})`
        : code === 'UND_ERR_CONNECT_TIMEOUT'
          ? 'connecting'
          : code === 'UND_ERR_BODY_TIMEOUT'
            ? 'the response body'
            : 'the response headers';
    return new ApiError({
      code: 'API_TIMEOUT',
      method: input.method,
      path: input.path,
      retryable: true,
      cause: input.error,
      message: `${where} to ${input.host} timed out waiting for ${what} (${code}).`,
    });
  }
  return new ApiError({
    code: 'API_NETWORK',
    method: input.method,
    path: input.path,
    retryable: code !== undefined && NETWORK_CODES.has(code),
    cause: input.error,
    message: `${where} to ${input.host} failed: ${code ?? 'network error'} (${(input.error as Error)?.message ?? String(input.error)}).`,
  });
}
