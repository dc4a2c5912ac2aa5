/**
 * The Reporting API client: one method per operation, each the operation's request
 * (endpoints.ts) sent through the signed, retried transport (transport.ts) and its answer read as
 * JSON checked against its schema (json-body.ts), as a status, or as a stream (download.ts).
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Dispatcher } from 'undici';
import type { ApiTarget, Credentials } from '../config/env.js';
import type { Config } from '../config/schema.js';
import type { Logger } from '../observability/logger.js';
import { packageVersion } from '../paths.js';
import { createAuthenticator } from './auth/index.js';
import type { Authenticator, AuthenticatorDeps } from './auth/index.js';
import { resolveTarget } from './deployments.js';
import type { ResolvedTarget } from './deployments.js';
import { downloadToFile, streamReportDownload, streamResponse, withDownload } from './download.js';
import type {
  DownloadDeps,
  DownloadSink,
  DownloadToFileOptions,
  DownloadToFileResult,
  ReportDownload,
  StreamedResponse,
} from './download.js';
import * as endpoints from './endpoints.js';
import type { GenericRequest, JsonEndpoint } from './endpoints.js';
import { fetchGenericResponse, fetchJsonPage } from './json-body.js';
import { LentAgent } from './lent-body.js';
import type { BodyBuffer, GenericResponse, JsonPage } from './json-body.js';
import { createApiDispatcher, createTransport } from './transport.js';
import type { ApiEvent, ApiRequest } from './transport.js';
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
   * Download to `filePath` (through `filePath.part`, renamed when complete), or into a sink (a
   * spool), restarting on breaks. `onAttempt` and `onChunk` let a reader follow the bytes as they
   * arrive (followDownload).
   */
  downloadReportToFile(
    params: DownloadReportParams,
    filePath: string | DownloadSink,
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
   * `json()` gives what getPurchaseRefundDetails gives, or throws what it throws. With `into`, the
   * bytes are read into that buffer, kept from page to page (BodyBuffer).
   */
  getPurchaseRefundDetailsPage(
    params: PurchaseRefundDetailsParams,
    options?: RequestOptions & { into?: BodyBuffer },
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
      'CYBS_AUTH=http-signature: CyberSource announced the end of HTTP Signature authentication for September 2026, so the service may refuse it; set CYBS_AUTH=jwt, which signs with the same key id and shared secret.',
    );
  }
  const ownsDispatcher = deps.dispatcher === undefined;
  let closed = false;
  const dispatcher = deps.dispatcher ?? createApiDispatcher(config.api);
  const lentAgent = ownsDispatcher ? new LentAgent(config.api.connectionsPerHost) : undefined;
  const transport = createTransport(
    {
      target,
      retry: config.api.retry,
      headersTimeoutMs: config.api.headersTimeoutMs,
      bodyTimeoutMs: config.api.bodyTimeoutMs,
      userAgent: config.userAgent ?? defaultUserAgent(),
      // A dispatcher given by the caller (a mock, a proxy) carries every request.
      ...(lentAgent
        ? { lentBodies: { connectTimeoutMs: config.api.connectTimeoutMs, agent: lentAgent } }
        : {}),
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
  const downloads: DownloadDeps = {
    transport,
    retry: config.api.retry,
    bodyTimeoutMs: config.api.bodyTimeoutMs,
    now,
    random,
    sleep,
    logger: deps.logger,
    onEvent: deps.onEvent,
  };

  let actingAnnounced = false;
  /**
   * The request with the caller's abort signal. The first request made for another merchant
   * (only notification-of-changes does: it takes no organizationId) is announced once.
   */
  function prepare(request: ApiRequest, options?: RequestOptions): ApiRequest {
    if (request.merchantId !== undefined && !actingAnnounced) {
      actingAnnounced = true;
      deps.logger?.info(
        { portfolioId: authenticator.portfolioId },
        `notification-of-changes takes no organizationId: the meta key of portfolio ${authenticator.portfolioId} reads each organization's changes by acting as that merchant (v-c-merchant-id)`,
      );
    }
    return options?.signal ? { ...request, signal: options.signal } : request;
  }

  const page = <T>(
    endpoint: JsonEndpoint<T>,
    options?: RequestOptions & { into?: BodyBuffer },
  ): Promise<JsonPage<T>> =>
    fetchJsonPage(
      transport,
      { ...endpoint, request: prepare(endpoint.request, options) },
      config.api.bodyTimeoutMs,
      options?.into,
    );

  const json = async <T>(endpoint: JsonEndpoint<T>, options?: RequestOptions): Promise<T> =>
    (await page(endpoint, options)).json();

  /** Send a request whose answer is its status (the body is discarded). */
  const status = (request: ApiRequest, options?: RequestOptions): Promise<number> =>
    transport.execute(prepare(request, options), async (response) => {
      await response.body.dump();
      return response.status;
    });

  /** Send a request and hand out its body unread, as a download's first (and only) attempt. */
  const stream = async (request: ApiRequest, options?: RequestOptions): Promise<ReportDownload> => ({
    ...(await streamResponse(transport, prepare(request, options))),
    attempt: 1,
  });

  const reportDownload = (params: DownloadReportParams, options?: RequestOptions): ApiRequest =>
    prepare(endpoints.downloadReport(params, target), options);

  const client: ReportingClient = {
    target,
    authScheme: authenticator.scheme,
    async listReportDefinitions(params, options) {
      return json(endpoints.listReportDefinitions(params), options);
    },
    async getReportDefinition(params, options) {
      return json(endpoints.getReportDefinition(params), options);
    },
    async listSubscriptions(params, options) {
      return json(endpoints.listSubscriptions(params), options);
    },
    async getSubscription(reportName, params, options) {
      return json(endpoints.getSubscription(reportName, params), options);
    },
    async putSubscription(subscription, params, options) {
      return (await status(endpoints.putSubscription(subscription, params), options)) === 304
        ? 'not-modified'
        : 'updated';
    },
    async deleteSubscription(reportName, params, options) {
      await status(endpoints.deleteSubscription(reportName, params), options);
    },
    async searchReports(params, options) {
      return json(endpoints.searchReports(params), options);
    },
    async getReport(reportId, params, options) {
      return json(endpoints.getReport(reportId, params), options);
    },
    async createReport(report, params, options) {
      return (await status(endpoints.createReport(report, params), options)) === 304
        ? 'not-modified'
        : 'created';
    },
    async downloadReport(params, options) {
      return { ...(await streamReportDownload(transport, reportDownload(params, options))), attempt: 1 };
    },
    async withDownload(params, consumer, options) {
      return withDownload(downloads, reportDownload(params, options), consumer);
    },
    async downloadReportToFile(params, filePath, options) {
      return downloadToFile(downloads, reportDownload(params, options), filePath, options);
    },
    async downloadOnDemandReport(report, params, accept, options) {
      return stream(endpoints.downloadOnDemandReport(report, params, accept, authenticator), options);
    },
    async getConversionDetails(params, options) {
      return json(endpoints.getConversionDetails(params), options);
    },
    async getNotificationOfChanges(params, options) {
      return json(endpoints.getNotificationOfChanges(params, authenticator), options);
    },
    async getPurchaseRefundDetails(params, options) {
      return json(endpoints.getPurchaseRefundDetails(params), options);
    },
    async getPurchaseRefundDetailsPage(params, options) {
      return page(endpoints.getPurchaseRefundDetails(params), options);
    },
    async getNetFundings(params, options) {
      return json(endpoints.getNetFundings(params), options);
    },
    async getPaymentBatchSummaries(params, options) {
      return json(endpoints.getPaymentBatchSummaries(params), options);
    },
    async request(request, options) {
      return fetchGenericResponse(transport, prepare(endpoints.request(request), options));
    },
    requestStream(request, options) {
      return streamResponse(transport, prepare(endpoints.request(request), options));
    },
    async close() {
      if (!ownsDispatcher || closed) return;
      closed = true;
      lentAgent?.close();
      await dispatcher.close();
    },
  };
  return client;
}
