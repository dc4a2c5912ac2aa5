import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as delay } from 'node:timers/promises';
import type { Dispatcher } from 'undici';
import type { z } from 'zod';
import type { ApiTarget, Credentials } from '../config/env.js';
import type { Config } from '../config/schema.js';
import type { Logger } from '../observability/logger.js';
import { packageVersion } from '../paths.js';
import { createAuthenticator } from './auth/index.js';
import type { Authenticator, AuthenticatorDeps } from './auth/index.js';
import { resolveTarget } from './deployments.js';
import { downloadHrefQuery } from './download-href.js';
import type { ResolvedTarget } from './deployments.js';
import { CybsError } from '../errors.js';
import { ApiError, createTransportError, isApiError, isTransientTransportError } from './errors.js';
import { encodePathSegment, formatReportDate, formatTimeParam, requireText } from './params.js';
import { fastPageCheck } from './fast-page-check.js';
import { FileDigester } from './file-digest.js';
import { JsonBodyLimits } from './json-body-limits.js';
import type { FileDigest } from './file-digest.js';
import { decideRetry } from './retry.js';
import {
  buildRequestTarget,
  chunksWithinDeadline,
  contentLengthOf,
  createApiDispatcher,
  createTransport,
  JSON_ACCEPT,
} from './transport.js';
import type { ApiEvent, ApiRequest, HttpMethod, QueryEntry, RawResponse, Transport } from './transport.js';
import {
  conversionDetailsResponseSchema,
  netFundingsResponseSchema,
  notificationOfChangesResponseSchema,
  ON_DEMAND_REPORTS,
  paymentBatchSummariesResponseSchema,
  purchaseRefundDetailsResponseSchema,
  reportDefinitionDetailSchema,
  reportDefinitionsResponseSchema,
  reportDetailSchema,
  reportSearchResponseSchema,
  reportSubscriptionSchema,
  reportSubscriptionsResponseSchema,
} from './types.js';
import type {
  ConversionDetailsResponse,
  CreateReportRequest,
  DownloadReportParams,
  GetReportDefinitionParams,
  ListReportDefinitionsParams,
  NetFundingsParams,
  NotificationOfChangesResponse,
  NetFundingsResponse,
  OnDemandReport,
  OnDemandReportParams,
  OrganizationOptions,
  PaymentBatchSummariesParams,
  PaymentBatchSummariesResponse,
  PurchaseRefundDetailsParams,
  PurchaseRefundDetailsResponse,
  ReportDefinitionDetail,
  ReportDefinitionsResponse,
  ReportDetail,
  ReportMimeType,
  ReportSearchResponse,
  ReportSubscription,
  ReportSubscriptionRequest,
  ReportSubscriptionsResponse,
  RequestOptions,
  SearchReportsParams,
  TimeRangeParams,
} from './types.js';

/** Accept of a report download when the caller names no format: either file format. */
export const DOWNLOAD_ACCEPT = 'application/xml, text/csv';

export interface ReportingClientConfig {
  credentials: Credentials;
  /** From the environment: CYBS_BASE_URL or CYBS_ENVIRONMENT; `api.environment` otherwise. */
  target?: ApiTarget;
  /** The config's `api` section: deployment, timeouts, connections, retry policy. */
  api: Config['api'];
  /** Defaults to `cybs-etl/<version> (+https://github.com/cybs-etl)`. */
  userAgent?: string;
}

export interface ReportingClientDeps {
  /** An undici dispatcher (Agent, Pool, MockAgent); the client creates and owns one when absent. */
  dispatcher?: Dispatcher;
  /** Replaces the authenticator built from the credentials. */
  authenticator?: Authenticator;
  logger?: Logger;
  /** Milliseconds since the epoch: signing date / iat, retry budget. */
  now?: () => number;
  /** JWT id source. */
  uuid?: () => string;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
  onEvent?: (event: ApiEvent) => void;
  readKeyFile?: AuthenticatorDeps['readKeyFile'];
}

/** A report file being downloaded: the body is a Node Readable that must be consumed or destroyed. */
export interface ReportDownload {
  status: number;
  contentType: string | undefined;
  headers: Record<string, string | string[] | undefined>;
  body: Readable;
  /** 1 for the first download, 2 for the first restart, … (withDownload). */
  attempt: number;
}

/** A raw request to any path (the `api` command, the token management API under /tms/v2/). */
export interface GenericRequest {
  method: HttpMethod;
  /** Path, optionally with a query string (kept in its order, re-encoded canonically). */
  path: string;
  query?: readonly QueryEntry[] | Record<string, string | number | boolean | undefined>;
  body?: unknown;
  accept?: string;
  organizationId?: string;
}

export interface GenericResponse {
  status: number;
  contentType: string | undefined;
  headers: Record<string, string | string[] | undefined>;
  /** The whole body as text ('' for none). */
  text: string;
  /** The parsed body when it is JSON. */
  json?: unknown;
}

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

export interface StreamedResponse {
  status: number;
  contentType: string | undefined;
  headers: Record<string, string | string[] | undefined>;
  body: Readable;
}

export interface DownloadToFileResult {
  bytes: number;
  contentType: string | undefined;
  attempts: number;
  /** The complete file's digest (of the attempt that completed). */
  digest: FileDigest;
}

/** downloadReportToFile's options: for a reader that follows the file while it is written. */
export interface DownloadToFileOptions extends RequestOptions {
  /** Called as an attempt starts, before the part file is (re)created and truncated. */
  onAttempt?: (attempt: number) => void;
  /**
   * Called after each body chunk is handed to the file, with the bytes of this attempt written to
   * the file so far (the chunk itself may not be among them yet).
   */
  onChunk?: (written: number) => void;
  /** Called as each block of the file's digest (FileDigest.blocks) completes, in this attempt. */
  onDigestBlock?: (index: number, block: string) => void;
}

export interface ReportingClient {
  readonly target: ResolvedTarget;
  readonly authScheme: Authenticator['scheme'];
  /** GET /reporting/v3/report-definitions */
  listReportDefinitions(
    params?: ListReportDefinitionsParams,
    options?: RequestOptions,
  ): Promise<ReportDefinitionsResponse>;
  /** GET /reporting/v3/report-definitions/{reportDefinitionName} (with attributes) */
  getReportDefinition(
    params: GetReportDefinitionParams,
    options?: RequestOptions,
  ): Promise<ReportDefinitionDetail>;
  /** GET /reporting/v3/report-subscriptions */
  listSubscriptions(
    params?: OrganizationOptions,
    options?: RequestOptions,
  ): Promise<ReportSubscriptionsResponse>;
  /** GET /reporting/v3/report-subscriptions/{reportName} */
  getSubscription(
    reportName: string,
    params?: OrganizationOptions,
    options?: RequestOptions,
  ): Promise<ReportSubscription>;
  /** PUT /reporting/v3/report-subscriptions: create or update; 304 → 'not-modified'. */
  putSubscription(
    subscription: ReportSubscriptionRequest,
    params?: OrganizationOptions,
    options?: RequestOptions,
  ): Promise<'updated' | 'not-modified'>;
  /** DELETE /reporting/v3/report-subscriptions/{reportName} */
  deleteSubscription(
    reportName: string,
    params?: OrganizationOptions,
    options?: RequestOptions,
  ): Promise<void>;
  /** GET /reporting/v3/reports (404 → ApiError with noData). */
  searchReports(params: SearchReportsParams, options?: RequestOptions): Promise<ReportSearchResponse>;
  /** GET /reporting/v3/reports/{reportId}: report metadata. */
  getReport(reportId: string, params?: OrganizationOptions, options?: RequestOptions): Promise<ReportDetail>;
  /** POST /reporting/v3/reports: one-time report; 304 → 'not-modified'. */
  createReport(
    report: CreateReportRequest,
    params?: OrganizationOptions,
    options?: RequestOptions,
  ): Promise<'created' | 'not-modified'>;
  /**
   * GET /reporting/v3/report-downloads, streamed. Retries happen only before the body is handed
   * out; if the stream breaks later, use withDownload / downloadReportToFile to start over.
   */
  downloadReport(params: DownloadReportParams, options?: RequestOptions): Promise<ReportDownload>;
  /**
   * Download and hand the stream to `consumer`; when the body breaks mid-way (socket error, body
   * timeout) the whole download is restarted and `consumer` is called again with a fresh stream.
   * The consumer MUST start over on every call (write to a temp file it truncates, or a staging
   * table it empties): rows of a broken attempt must not survive.
   */
  withDownload<T>(
    params: DownloadReportParams,
    consumer: (download: ReportDownload) => Promise<T>,
    options?: RequestOptions,
  ): Promise<T>;
  /**
   * Download to `filePath` (through `filePath.part`, renamed when complete), restarting on breaks.
   * `onAttempt` and `onChunk` let a reader follow the part file as it grows (followDownload).
   */
  downloadReportToFile(
    params: DownloadReportParams,
    filePath: string,
    options?: DownloadToFileOptions,
  ): Promise<DownloadToFileResult>;
  /** An on-demand report as CSV or XML, streamed (same retry rule as downloadReport). */
  downloadOnDemandReport(
    report: OnDemandReport,
    params: OnDemandReportParams,
    accept: ReportMimeType,
    options?: RequestOptions,
  ): Promise<ReportDownload>;
  /** GET /reporting/v3/conversion-details */
  getConversionDetails(params: TimeRangeParams, options?: RequestOptions): Promise<ConversionDetailsResponse>;
  /** GET /reporting/v3/notification-of-changes */
  getNotificationOfChanges(
    params: TimeRangeParams,
    options?: RequestOptions,
  ): Promise<NotificationOfChangesResponse>;
  /** GET /reporting/v3/purchase-refund-details (one page: offset/limit) */
  getPurchaseRefundDetails(
    params: PurchaseRefundDetailsParams,
    options?: RequestOptions,
  ): Promise<PurchaseRefundDetailsResponse>;
  /**
   * The same page as its bytes, for a reader that can take them without parsing (OnDemandPageScanner);
   * `json()` gives what getPurchaseRefundDetails gives, or throws what it throws.
   */
  getPurchaseRefundDetailsPage(
    params: PurchaseRefundDetailsParams,
    options?: RequestOptions,
  ): Promise<JsonPage<PurchaseRefundDetailsResponse>>;
  /** GET /reporting/v3/net-fundings */
  getNetFundings(params: NetFundingsParams, options?: RequestOptions): Promise<NetFundingsResponse>;
  /** GET /reporting/v3/payment-batch-summaries */
  getPaymentBatchSummaries(
    params: PaymentBatchSummariesParams,
    options?: RequestOptions,
  ): Promise<PaymentBatchSummariesResponse>;
  /** A signed request to any path; the body is read whole (JSON parsed when JSON). */
  request(request: GenericRequest, options?: RequestOptions): Promise<GenericResponse>;
  /** A signed request to any path with the body streamed. */
  requestStream(request: GenericRequest, options?: RequestOptions): Promise<StreamedResponse>;
  /** Close the dispatcher when the client created it. */
  close(): Promise<void>;
}

/** `cybs-etl/<version> (+https://github.com/cybs-etl)` */
export function defaultUserAgent(): string {
  return `cybs-etl/${packageVersion()} (+https://github.com/cybs-etl)`;
}

/** True for JSON media types (application/json, application/hal+json, …+json). */
export function isJsonContentType(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/([\w.-]+\+)?json\b/i.test(contentType.trim());
}

/**
 * What a report download's Content-Type says it is when that is not the report asked for (`accept`):
 * an HTML page, a JSON document, or the other report format. Undefined when it may be the report
 * (no Content-Type, a CSV or XML type as asked, a generic type such as text/plain): the body's own
 * head is checked after (src/extract/report-identity.ts).
 */
export function downloadContentTypeProblem(
  contentType: string | undefined,
  accept: string,
): string | undefined {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === '') return undefined;
  if (type.includes('html')) return `an HTML page (Content-Type ${type})`;
  if (isJsonContentType(type)) return `a JSON document (Content-Type ${type})`;
  const asked = accept.toLowerCase();
  if (/[/+]xml$/.test(type) && !asked.includes('xml')) return `an XML document (Content-Type ${type})`;
  if (type.includes('csv') && !asked.includes('csv')) return `a CSV file (Content-Type ${type})`;
  return undefined;
}

/**
 * A JSON body's chunks, within its bounds (src/api/json-body-limits.ts): `tooLarge` turns the
 * sentence saying which bound a body passes into the error thrown (the rest is not read).
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

function organizationEntry(params: OrganizationOptions | undefined): QueryEntry {
  return ['organizationId', params?.organizationId];
}

/**
 * A response body's chunks, pulled one at a time (backpressure through the async iterator), each
 * passed to `digester` on its way; `handed` is called once each chunk has been taken by the consumer.
 */
async function* bodyChunks(
  body: AsyncIterable<Buffer>,
  digester: FileDigester,
  handed?: () => void,
): AsyncGenerator<Buffer> {
  for await (const chunk of body) {
    digester.update(chunk);
    yield chunk;
    handed?.();
  }
}

/** Split `path?query` into the path and ordered query entries (pure). */
export function splitPathAndQuery(path: string): { path: string; query: QueryEntry[] } {
  const at = path.indexOf('?');
  if (at < 0) return { path, query: [] };
  const query: QueryEntry[] = [];
  for (const [name, value] of new URLSearchParams(path.slice(at + 1))) query.push([name, value]);
  return { path: path.slice(0, at), query };
}

function canonicalPath(path: string): string {
  // Re-encode each segment so that what is signed is what undici sends (no raw spaces, etc.).
  return path
    .split('/')
    .map((segment) => {
      try {
        return encodeURIComponent(decodeURIComponent(segment));
      } catch {
        return encodeURIComponent(segment);
      }
    })
    .join('/');
}

export function createReportingClient(
  config: ReportingClientConfig,
  deps: ReportingClientDeps = {},
): ReportingClient {
  const target = resolveTarget(config.target ?? {}, config.api.environment);
  const now = deps.now ?? Date.now;
  const sleep = deps.sleep ?? ((ms: number, signal?: AbortSignal) => delay(ms, undefined, { signal }));
  const random = deps.random ?? Math.random;
  const authenticator =
    deps.authenticator ??
    createAuthenticator(config.credentials, {
      now: () => new Date(now()),
      ...(deps.uuid ? { uuid: deps.uuid } : {}),
      ...(deps.readKeyFile ? { readKeyFile: deps.readKeyFile } : {}),
    });
  if (authenticator.scheme === 'http-signature') {
    deps.logger?.warn(
      'CYBS_AUTH=http-signature: CyberSource retires HTTP Signature authentication in September 2026; set CYBS_AUTH=jwt, which signs with the same key id and shared secret.',
    );
  }
  const ownsDispatcher = deps.dispatcher === undefined;
  let closed = false;
  const dispatcher = deps.dispatcher ?? createApiDispatcher(config.api);
  const transport: Transport = createTransport(
    {
      target,
      retry: config.api.retry,
      headersTimeoutMs: config.api.headersTimeoutMs,
      bodyTimeoutMs: config.api.bodyTimeoutMs,
      userAgent: config.userAgent ?? defaultUserAgent(),
    },
    {
      dispatcher,
      authenticator,
      now,
      sleep,
      random,
      ...(deps.logger ? { logger: deps.logger } : {}),
      ...(deps.onEvent ? { onEvent: deps.onEvent } : {}),
    },
  );

  const withSignal = (request: ApiRequest, options?: RequestOptions): ApiRequest =>
    options?.signal ? { ...request, signal: options.signal } : request;

  /** Send, read the body inside the attempt, validate outside (a malformed 200 is not retried). */
  async function getJson<S extends z.ZodType>(
    request: ApiRequest,
    schema: S,
    options?: RequestOptions,
    fastCheck?: (data: unknown) => unknown,
  ): Promise<z.output<S>> {
    return (await getJsonPage(request, schema, options, fastCheck)).json();
  }

  async function getJsonPage<S extends z.ZodType>(
    request: ApiRequest,
    schema: S,
    options?: RequestOptions,
    fastCheck?: (data: unknown) => unknown,
  ): Promise<JsonPage<z.output<S>>> {
    const req = withSignal(request, options);
    const path = buildRequestTarget(target.basePath, req.path, req.query);
    const tooLarge = (problem: string) =>
      new ApiError({
        code: 'API_INVALID_RESPONSE',
        method: req.method,
        path,
        message: `CyberSource answered ${req.method} ${path} with ${problem}.`,
      });
    const chunks = await transport.execute(req, (response) =>
      readChunks(response, config.api.bodyTimeoutMs, tooLarge),
    );
    return { chunks, json: () => checkedJson(req, decodeText(Buffer.concat(chunks)), schema, fastCheck) };
  }

  function purchaseRefundPage(
    params: PurchaseRefundDetailsParams,
    options?: RequestOptions,
  ): Promise<JsonPage<PurchaseRefundDetailsResponse>> {
    return getJsonPage(
      onDemandRequest('purchase-refund-details', params),
      purchaseRefundDetailsResponseSchema,
      options,
      checkPurchaseRefundPage,
    );
  }

  /** A JSON body parsed and checked against `schema` (`fastCheck` first), or API_INVALID_RESPONSE. */
  function checkedJson<S extends z.ZodType>(
    req: ApiRequest,
    text: string,
    schema: S,
    fastCheck?: (data: unknown) => unknown,
  ): z.output<S> {
    const where = `${req.method} ${buildRequestTarget(target.basePath, req.path, req.query)}`;
    let data: unknown;
    try {
      data = text.trim() === '' ? {} : JSON.parse(text);
    } catch (error) {
      throw new ApiError({
        code: 'API_INVALID_RESPONSE',
        method: req.method,
        path: buildRequestTarget(target.basePath, req.path, req.query),
        cause: error,
        message: `CyberSource answered ${where} with a body that is not JSON (${text.slice(0, 80).replace(/\s+/g, ' ')}…).`,
      });
    }
    const fast = fastCheck?.(data);
    if (fast !== undefined) return fast as z.output<S>;
    const parsed = schema.safeParse(data);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const at = issue?.path.map(String).join('.') || '(top level)';
      throw new ApiError({
        code: 'API_INVALID_RESPONSE',
        method: req.method,
        path: buildRequestTarget(target.basePath, req.path, req.query),
        message: `CyberSource answered ${where} with an unexpected body: at "${at}" ${issue?.message ?? 'invalid'}.`,
      });
    }
    return parsed.data as z.output<S>;
  }

  async function sendForStatus(request: ApiRequest, options?: RequestOptions): Promise<number> {
    return transport.execute(withSignal(request, options), async (response) => {
      await response.body.dump();
      return response.status;
    });
  }

  async function stream(request: ApiRequest, options?: RequestOptions): Promise<StreamedResponse> {
    // The handler returns the unread body: retries cover the request up to the response headers.
    return transport.execute(withSignal(request, options), (response) =>
      Promise.resolve({
        status: response.status,
        contentType: response.contentType,
        headers: response.headers,
        body: response.body,
      }),
    );
  }

  /**
   * A report download's response, with its body unread. A response whose media type says it is not
   * the report (a gateway's or proxy's HTML page served with 200, a JSON or XML error document) is
   * refused before its body is read, and retried as a transient failure.
   */
  async function streamDownload(request: ApiRequest, options?: RequestOptions): Promise<StreamedResponse> {
    return transport.execute(withSignal(request, options), async (response) => {
      const wrong = downloadContentTypeProblem(response.contentType, request.accept ?? DOWNLOAD_ACCEPT);
      if (wrong === undefined) {
        return {
          status: response.status,
          contentType: response.contentType,
          headers: response.headers,
          body: response.body,
        };
      }
      await response.body.dump().catch(() => {});
      const path = buildRequestTarget(target.basePath, request.path, request.query);
      throw new ApiError({
        code: 'API_INVALID_RESPONSE',
        method: request.method,
        path,
        status: response.status,
        retryable: true,
        message: `CyberSource answered ${request.method} ${path} with status ${response.status} and ${wrong} instead of the report file (asked for ${request.accept ?? DOWNLOAD_ACCEPT}).`,
      });
    });
  }

  function downloadRequest(params: DownloadReportParams): ApiRequest {
    // A search result's download link names the report itself (reportTime included).
    const linked = params.href !== undefined ? downloadHrefQuery(params.href, target) : undefined;
    return {
      method: 'GET',
      path: '/reporting/v3/report-downloads',
      query: linked
        ? [...(linked.some(([k]) => k === 'organizationId') ? [] : [organizationEntry(params)]), ...linked]
        : [
            organizationEntry(params),
            ['reportDate', formatReportDate(params.reportDate)],
            ['reportName', requireText(params.reportName, 'reportName')],
          ],
      accept: params.accept ?? DOWNLOAD_ACCEPT,
      operation: 'downloadReport',
      notFoundMeansNoData: true,
    };
  }

  function timeRange(params: TimeRangeParams): QueryEntry[] {
    return [
      ['startTime', formatTimeParam(params.startTime, 'startTime')],
      ['endTime', formatTimeParam(params.endTime, 'endTime')],
    ];
  }

  function onDemandQuery(report: OnDemandReport, params: OnDemandReportParams): QueryEntry[] {
    const org = organizationEntry(params);
    switch (report) {
      case 'conversion-details':
        return [org, ...timeRange(params)];
      case 'notification-of-changes':
        // The endpoint defines startTime and endTime only (SDK NotificationOfChangesApi, the spec):
        // no organizationId; the organization is the merchant the request acts for (nocMerchant).
        return timeRange(params);
      case 'purchase-refund-details':
        return [
          org,
          ...timeRange(params),
          ['paymentSubtype', params.paymentSubtype],
          ['viewBy', params.viewBy],
          ['groupName', params.groupName],
          ['offset', params.offset],
          ['limit', params.limit],
        ];
      case 'net-fundings':
        return [org, ...timeRange(params), ['groupName', params.groupName]];
      case 'payment-batch-summaries':
        return [
          org,
          ...timeRange(params),
          ['rollUp', params.rollUp],
          ['breakdown', params.breakdown],
          ['startDayOfWeek', params.startDayOfWeek],
        ];
    }
  }

  const operationNames: Record<OnDemandReport, string> = {
    'conversion-details': 'getConversionDetails',
    'notification-of-changes': 'getNotificationOfChanges',
    'purchase-refund-details': 'getPurchaseRefundDetails',
    'net-fundings': 'getNetFundings',
    'payment-batch-summaries': 'getPaymentBatchSummaries',
  };

  let nocAnnounced = false;
  /**
   * The merchant a notification-of-changes request acts for, as the endpoint takes no
   * organizationId: a meta key acts for the organization asked for (`v-c-merchant-id`, signed with
   * the portfolio); any other key reads its own merchant's changes, and only those.
   */
  function nocMerchant(organizationId: string | undefined): string | undefined {
    if (organizationId === undefined || organizationId === authenticator.merchantId) return undefined;
    if (authenticator.portfolioId === undefined) {
      throw new CybsError(
        'API_INVALID_PARAMS',
        `notification-of-changes takes no organizationId, so the key of merchant ${authenticator.merchantId} reads only that merchant's changes, not organization ${organizationId}'s; use that merchant's key or a meta key (CYBS_PORTFOLIO_ID).`,
        { stage: 'api', exitCode: 2, context: { field: 'organizationId' } },
      );
    }
    if (!nocAnnounced) {
      nocAnnounced = true;
      deps.logger?.info(
        { portfolioId: authenticator.portfolioId },
        `notification-of-changes takes no organizationId: the meta key of portfolio ${authenticator.portfolioId} reads each organization's changes by acting as that merchant (v-c-merchant-id)`,
      );
    }
    return organizationId;
  }

  function onDemandRequest(report: OnDemandReport, params: OnDemandReportParams): ApiRequest {
    const merchantId = report === 'notification-of-changes' ? nocMerchant(params.organizationId) : undefined;
    return {
      method: 'GET',
      path: ON_DEMAND_REPORTS[report],
      query: onDemandQuery(report, params),
      operation: operationNames[report],
      notFoundMeansNoData: true,
      ...(merchantId === undefined ? {} : { merchantId }),
    };
  }

  function genericRequest(request: GenericRequest): ApiRequest {
    const split = splitPathAndQuery(request.path.trim());
    const extra: QueryEntry[] = Array.isArray(request.query)
      ? [...(request.query as readonly QueryEntry[])]
      : Object.entries(request.query ?? {});
    const query: QueryEntry[] = [...split.query, ...extra];
    if (request.organizationId !== undefined && !query.some(([name]) => name === 'organizationId')) {
      query.push(['organizationId', request.organizationId]);
    }
    const path = canonicalPath(split.path.startsWith('/') ? split.path : `/${split.path}`);
    return {
      method: request.method,
      path,
      query,
      ...(request.body === undefined ? {} : { body: request.body }),
      ...(request.accept === undefined ? {} : { accept: request.accept }),
      operation: 'request',
    };
  }

  const client: ReportingClient = {
    target,
    authScheme: authenticator.scheme,

    async listReportDefinitions(params, options) {
      return getJson(
        {
          method: 'GET',
          path: '/reporting/v3/report-definitions',
          query: [organizationEntry(params), ['subscriptionType', params?.subscriptionType]],
          operation: 'listReportDefinitions',
        },
        reportDefinitionsResponseSchema,
        options,
      );
    },

    async getReportDefinition(params, options) {
      return getJson(
        {
          method: 'GET',
          path: `/reporting/v3/report-definitions/${encodePathSegment(params.reportDefinitionName, 'reportDefinitionName')}`,
          query: [
            organizationEntry(params),
            ['subscriptionType', params.subscriptionType],
            ['reportMimeType', params.reportMimeType],
          ],
          operation: 'getReportDefinition',
        },
        reportDefinitionDetailSchema,
        options,
      );
    },

    async listSubscriptions(params, options) {
      return getJson(
        {
          method: 'GET',
          path: '/reporting/v3/report-subscriptions',
          query: [organizationEntry(params)],
          operation: 'listSubscriptions',
        },
        reportSubscriptionsResponseSchema,
        options,
      );
    },

    async getSubscription(reportName, params, options) {
      return getJson(
        {
          method: 'GET',
          path: `/reporting/v3/report-subscriptions/${encodePathSegment(reportName, 'reportName')}`,
          query: [organizationEntry(params)],
          operation: 'getSubscription',
        },
        reportSubscriptionSchema,
        options,
      );
    },

    async putSubscription(subscription, params, options) {
      const status = await sendForStatus(
        {
          method: 'PUT',
          path: '/reporting/v3/report-subscriptions',
          query: [organizationEntry(params)],
          body: subscription,
          operation: 'putSubscription',
        },
        options,
      );
      return status === 304 ? 'not-modified' : 'updated';
    },

    async deleteSubscription(reportName, params, options) {
      await sendForStatus(
        {
          method: 'DELETE',
          path: `/reporting/v3/report-subscriptions/${encodePathSegment(reportName, 'reportName')}`,
          query: [organizationEntry(params)],
          operation: 'deleteSubscription',
        },
        options,
      );
    },

    async searchReports(params, options) {
      return getJson(
        {
          method: 'GET',
          path: '/reporting/v3/reports',
          query: [
            organizationEntry(params),
            ...timeRange(params),
            ['timeQueryType', requireText(params.timeQueryType, 'timeQueryType')],
            ['reportMimeType', params.reportMimeType],
            ['reportFrequency', params.reportFrequency],
            ['reportName', params.reportName],
            ['reportDefinitionId', params.reportDefinitionId],
            ['reportStatus', params.reportStatus],
          ],
          operation: 'searchReports',
          notFoundMeansNoData: true,
        },
        reportSearchResponseSchema,
        options,
      );
    },

    async getReport(reportId, params, options) {
      return getJson(
        {
          method: 'GET',
          path: `/reporting/v3/reports/${encodePathSegment(reportId, 'reportId')}`,
          query: [organizationEntry(params)],
          operation: 'getReport',
        },
        reportDetailSchema,
        options,
      );
    },

    async createReport(report, params, options) {
      const status = await sendForStatus(
        {
          method: 'POST',
          path: '/reporting/v3/reports',
          query: [organizationEntry(params)],
          body: report,
          operation: 'createReport',
        },
        options,
      );
      return status === 304 ? 'not-modified' : 'created';
    },

    async downloadReport(params, options) {
      const response = await streamDownload(downloadRequest(params), options);
      return { ...response, attempt: 1 };
    },

    async withDownload(params, consumer, options) {
      const request = withSignal(downloadRequest(params), options);
      const startedAt = now();
      for (let attempt = 1; ; attempt++) {
        const response = await streamDownload(request);
        let bodyError: unknown;
        response.body.once('error', (error: unknown) => (bodyError = error));
        try {
          return await consumer({ ...response, attempt });
        } catch (error) {
          // Only a break of the download stream itself restarts; the consumer's own failures
          // (including its database connection dropping) are its business and are rethrown.
          const broken = bodyError;
          if (broken === undefined || !isTransientTransportError(broken) || options?.signal?.aborted)
            throw error;
          const apiError = isApiError(broken)
            ? broken
            : createTransportError({
                method: 'GET',
                path: buildRequestTarget(target.basePath, request.path, request.query),
                host: target.host,
                error: broken,
              });
          const decision = decideRetry({
            error: apiError,
            attempt,
            elapsedMs: now() - startedAt,
            nowMs: now(),
            policy: config.api.retry,
            random,
          });
          if (!decision.retry) throw apiError;
          deps.onEvent?.({
            type: 'retry',
            operation: 'downloadReport',
            method: 'GET',
            path: request.path,
            attempt,
            delayMs: decision.delayMs,
            errorCode: apiError.code,
          });
          deps.logger?.info(
            { path: request.path, attempt, code: apiError.code, delayMs: decision.delayMs },
            'report download broke mid-stream; starting it over',
          );
          await sleep(decision.delayMs, options?.signal);
        } finally {
          if (!response.body.destroyed) response.body.destroy();
        }
      }
    },

    async downloadReportToFile(params, filePath, options) {
      const partPath = `${filePath}.part`;
      try {
        const result = await client.withDownload(
          params,
          async (download) => {
            options?.onAttempt?.(download.attempt);
            // flags 'w' truncates: a restarted download never appends to a broken one.
            const file = createWriteStream(partPath, { flags: 'w' });
            // Read the body as an async iterable, never `pipeline(body, file)`: that pipes, and
            // pipe's pause/resume of undici's body lets the socket's receive buffer grow towards the
            // whole report while each resume concatenates that buffer and copies it into the HTTP
            // parser again — quadratic (82 MB of XML: 45–70 s and 550 MB instead of ≈ 1.3 s, 155 MB).
            const onChunk = options?.onChunk;
            const digester = new FileDigester(options?.onDigestBlock);
            await pipeline(
              bodyChunks(
                chunksWithinDeadline(download.body, {
                  contentLength: contentLengthOf(download.headers),
                  graceMs: config.api.bodyTimeoutMs,
                }),
                digester,
                onChunk ? () => onChunk(file.bytesWritten) : undefined,
              ),
              file,
            );
            return {
              bytes: file.bytesWritten,
              contentType: download.contentType,
              attempts: download.attempt,
              digest: digester.digest(),
            };
          },
          options,
        );
        await rename(partPath, filePath);
        return result;
      } catch (error) {
        await rm(partPath, { force: true });
        throw error;
      }
    },

    async downloadOnDemandReport(report, params, accept, options) {
      const response = await stream({ ...onDemandRequest(report, params), accept }, options);
      return { ...response, attempt: 1 };
    },

    async getConversionDetails(params, options) {
      return getJson(onDemandRequest('conversion-details', params), conversionDetailsResponseSchema, options);
    },

    async getNotificationOfChanges(params, options) {
      return getJson(
        onDemandRequest('notification-of-changes', params),
        notificationOfChangesResponseSchema,
        options,
      );
    },

    async getPurchaseRefundDetails(params, options) {
      return (await purchaseRefundPage(params, options)).json();
    },

    getPurchaseRefundDetailsPage: purchaseRefundPage,

    async getNetFundings(params, options) {
      return getJson(onDemandRequest('net-fundings', params), netFundingsResponseSchema, options);
    },

    async getPaymentBatchSummaries(params, options) {
      return getJson(
        onDemandRequest('payment-batch-summaries', params as OnDemandReportParams),
        paymentBatchSummariesResponseSchema,
        options,
      );
    },

    async request(request, options) {
      const req = withSignal(genericRequest(request), options);
      const response = await transport.execute(req, async (raw) => ({
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
    },

    requestStream(request, options) {
      return stream(genericRequest(request), options);
    },

    async close() {
      if (!ownsDispatcher || closed) return;
      closed = true;
      await dispatcher.close();
    },
  };
  return client;
}

/** zod's answer on a purchase-refund-details page without zod's per-record cost (see fast-page-check.ts). */
const checkPurchaseRefundPage = fastPageCheck(purchaseRefundDetailsResponseSchema);

export { JSON_ACCEPT };
