/**
 * The operations of the Reporting API (and any other path, for the `api` command and the token
 * management API under /tms/v2/) as pure request builders: method, path, query in the order sent,
 * Accept, body, and for a JSON answer the schema it must match. Nothing here sends: the client
 * (reporting-client.ts) hands what these build to the transport. Paths, query names and required
 * parameters are the official SDK's (cybersource-rest-client src/api/*.js), which
 * test/unit/api/endpoints.test.ts holds each builder to.
 */
import type { z } from 'zod';
import type { ResolvedTarget } from './deployments.js';
import { downloadHrefQuery, REPORT_DOWNLOADS_PATH } from './download-href.js';
import { fastPageCheck } from './fast-page-check.js';
import { CybsError } from '../errors.js';
import { encodePathSegment, formatReportDate, formatTimeParam, requireText } from './params.js';
import type { ApiRequest, HttpMethod, QueryEntry } from './transport.js';
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
  NetFundingsResponse,
  NotificationOfChangesResponse,
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
  SearchReportsParams,
  TimeRangeParams,
} from './types.js';

/** Accept of a report download when the caller names no format: either file format. */
export const DOWNLOAD_ACCEPT = 'application/xml, text/csv';

/** An operation answered with JSON: its request, and the schema the answer must match. */
export interface JsonEndpoint<T> {
  request: ApiRequest;
  schema: z.ZodType<T>;
  /** Gives zod's answer without zod's per-record cost when it can tell (fast-page-check.ts). */
  fastCheck?: (data: unknown) => unknown;
}

/** The key a request is signed with, as far as whom it may act for (Authenticator). */
export interface SigningKey {
  readonly merchantId: string;
  /** The portfolio of a meta key, which may act for any of its merchants. */
  readonly portfolioId?: string | undefined;
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

/** GET /reporting/v3/report-definitions */
export function listReportDefinitions(
  params?: ListReportDefinitionsParams,
): JsonEndpoint<ReportDefinitionsResponse> {
  return {
    request: {
      method: 'GET',
      path: '/reporting/v3/report-definitions',
      query: [organizationEntry(params), ['subscriptionType', params?.subscriptionType]],
      operation: 'listReportDefinitions',
    },
    schema: reportDefinitionsResponseSchema,
  };
}

/** GET /reporting/v3/report-definitions/{reportDefinitionName} (with attributes) */
export function getReportDefinition(params: GetReportDefinitionParams): JsonEndpoint<ReportDefinitionDetail> {
  return {
    request: {
      method: 'GET',
      path: `/reporting/v3/report-definitions/${encodePathSegment(params.reportDefinitionName, 'reportDefinitionName')}`,
      query: [
        organizationEntry(params),
        ['subscriptionType', params.subscriptionType],
        ['reportMimeType', params.reportMimeType],
      ],
      operation: 'getReportDefinition',
    },
    schema: reportDefinitionDetailSchema,
  };
}

/** GET /reporting/v3/report-subscriptions */
export function listSubscriptions(params?: OrganizationOptions): JsonEndpoint<ReportSubscriptionsResponse> {
  return {
    request: {
      method: 'GET',
      path: '/reporting/v3/report-subscriptions',
      query: [organizationEntry(params)],
      operation: 'listSubscriptions',
    },
    schema: reportSubscriptionsResponseSchema,
  };
}

/** GET /reporting/v3/report-subscriptions/{reportName} */
export function getSubscription(
  reportName: string,
  params?: OrganizationOptions,
): JsonEndpoint<ReportSubscription> {
  return {
    request: {
      method: 'GET',
      path: subscriptionPath(reportName),
      query: [organizationEntry(params)],
      operation: 'getSubscription',
    },
    schema: reportSubscriptionSchema,
  };
}

/** PUT /reporting/v3/report-subscriptions: create or update (answered with a status only). */
export function putSubscription(
  subscription: ReportSubscriptionRequest,
  params?: OrganizationOptions,
): ApiRequest {
  return {
    method: 'PUT',
    path: '/reporting/v3/report-subscriptions',
    query: [organizationEntry(params)],
    body: subscription,
    operation: 'putSubscription',
  };
}

/** DELETE /reporting/v3/report-subscriptions/{reportName} */
export function deleteSubscription(reportName: string, params?: OrganizationOptions): ApiRequest {
  return {
    method: 'DELETE',
    path: subscriptionPath(reportName),
    query: [organizationEntry(params)],
    operation: 'deleteSubscription',
  };
}

/** GET /reporting/v3/reports; a 404 means no report matched. */
export function searchReports(params: SearchReportsParams): JsonEndpoint<ReportSearchResponse> {
  return {
    request: {
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
    schema: reportSearchResponseSchema,
  };
}

/** GET /reporting/v3/reports/{reportId}: report metadata. */
export function getReport(reportId: string, params?: OrganizationOptions): JsonEndpoint<ReportDetail> {
  return {
    request: {
      method: 'GET',
      path: `/reporting/v3/reports/${encodePathSegment(reportId, 'reportId')}`,
      query: [organizationEntry(params)],
      operation: 'getReport',
    },
    schema: reportDetailSchema,
  };
}

/** POST /reporting/v3/reports: a one-time report (answered with a status only). */
export function createReport(report: CreateReportRequest, params?: OrganizationOptions): ApiRequest {
  return {
    method: 'POST',
    path: '/reporting/v3/reports',
    query: [organizationEntry(params)],
    body: report,
    operation: 'createReport',
  };
}

/**
 * GET /reporting/v3/report-downloads; a 404 means the file is not (yet) there. With `href` (a
 * search result's download link, which names the report itself, reportTime included) the link's
 * query is sent, to `target` only (download-href.ts).
 */
export function downloadReport(params: DownloadReportParams, target: ResolvedTarget): ApiRequest {
  const linked = params.href !== undefined ? downloadHrefQuery(params.href, target) : undefined;
  return {
    method: 'GET',
    path: REPORT_DOWNLOADS_PATH,
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

/** An on-demand report as CSV or XML (`accept`), streamed. */
export function downloadOnDemandReport(
  report: OnDemandReport,
  params: OnDemandReportParams,
  accept: ReportMimeType,
  key: SigningKey,
): ApiRequest {
  return { ...onDemandRequest(report, params, key), accept };
}

/** GET /reporting/v3/conversion-details */
export function getConversionDetails(params: TimeRangeParams): JsonEndpoint<ConversionDetailsResponse> {
  return {
    request: onDemandRequest('conversion-details', params),
    schema: conversionDetailsResponseSchema,
  };
}

/** GET /reporting/v3/notification-of-changes, acting for `params.organizationId` (nocMerchant). */
export function getNotificationOfChanges(
  params: TimeRangeParams,
  key: SigningKey,
): JsonEndpoint<NotificationOfChangesResponse> {
  return {
    request: onDemandRequest('notification-of-changes', params, key),
    schema: notificationOfChangesResponseSchema,
  };
}

/** zod's answer on a purchase-refund-details page without zod's per-record cost. */
const checkPurchaseRefundPage = fastPageCheck(purchaseRefundDetailsResponseSchema);

/** GET /reporting/v3/purchase-refund-details (one page: offset/limit) */
export function getPurchaseRefundDetails(
  params: PurchaseRefundDetailsParams,
): JsonEndpoint<PurchaseRefundDetailsResponse> {
  return {
    request: onDemandRequest('purchase-refund-details', params),
    schema: purchaseRefundDetailsResponseSchema,
    fastCheck: checkPurchaseRefundPage,
  };
}

/** GET /reporting/v3/net-fundings */
export function getNetFundings(params: NetFundingsParams): JsonEndpoint<NetFundingsResponse> {
  return { request: onDemandRequest('net-fundings', params), schema: netFundingsResponseSchema };
}

/** GET /reporting/v3/payment-batch-summaries */
export function getPaymentBatchSummaries(
  params: PaymentBatchSummariesParams,
): JsonEndpoint<PaymentBatchSummariesResponse> {
  return {
    request: onDemandRequest('payment-batch-summaries', params),
    schema: paymentBatchSummariesResponseSchema,
  };
}

/**
 * A request to any path: the path's own query first, in its order, then `query`, then
 * organizationId unless one is already there; the path re-encoded segment by segment so that what
 * is signed is what undici sends.
 */
export function request(generic: GenericRequest): ApiRequest {
  const split = splitPathAndQuery(generic.path.trim());
  const extra: QueryEntry[] = Array.isArray(generic.query)
    ? [...(generic.query as readonly QueryEntry[])]
    : Object.entries(generic.query ?? {});
  const query: QueryEntry[] = [...split.query, ...extra];
  if (generic.organizationId !== undefined && !query.some(([name]) => name === 'organizationId')) {
    query.push(['organizationId', generic.organizationId]);
  }
  const path = canonicalPath(split.path.startsWith('/') ? split.path : `/${split.path}`);
  return {
    method: generic.method,
    path,
    query,
    ...(generic.body === undefined ? {} : { body: generic.body }),
    ...(generic.accept === undefined ? {} : { accept: generic.accept }),
    operation: 'request',
  };
}

/** Split `path?query` into the path and ordered query entries (pure). */
export function splitPathAndQuery(path: string): { path: string; query: QueryEntry[] } {
  const at = path.indexOf('?');
  if (at < 0) return { path, query: [] };
  const query: QueryEntry[] = [];
  for (const [name, value] of new URLSearchParams(path.slice(at + 1))) query.push([name, value]);
  return { path: path.slice(0, at), query };
}

/** Each segment re-encoded (no raw spaces, etc.), already-encoded ones left as they mean. */
function canonicalPath(path: string): string {
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

function subscriptionPath(reportName: string): string {
  return `/reporting/v3/report-subscriptions/${encodePathSegment(reportName, 'reportName')}`;
}

function organizationEntry(params: OrganizationOptions | undefined): QueryEntry {
  return ['organizationId', params?.organizationId];
}

function timeRange(params: TimeRangeParams): QueryEntry[] {
  return [
    ['startTime', formatTimeParam(params.startTime, 'startTime')],
    ['endTime', formatTimeParam(params.endTime, 'endTime')],
  ];
}

const OPERATION_NAMES: Record<OnDemandReport, string> = {
  'conversion-details': 'getConversionDetails',
  'notification-of-changes': 'getNotificationOfChanges',
  'purchase-refund-details': 'getPurchaseRefundDetails',
  'net-fundings': 'getNetFundings',
  'payment-batch-summaries': 'getPaymentBatchSummaries',
};

/** An on-demand report's request; `key` matters only to notification-of-changes (nocMerchant). */
function onDemandRequest(report: OnDemandReport, params: OnDemandReportParams, key?: SigningKey): ApiRequest {
  const merchantId =
    report === 'notification-of-changes' && key ? nocMerchant(params.organizationId, key) : undefined;
  return {
    method: 'GET',
    path: ON_DEMAND_REPORTS[report],
    query: onDemandQuery(report, params),
    operation: OPERATION_NAMES[report],
    notFoundMeansNoData: true,
    ...(merchantId === undefined ? {} : { merchantId }),
  };
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

/**
 * The merchant a notification-of-changes request acts for, as the endpoint takes no
 * organizationId: a meta key acts for the organization asked for (`v-c-merchant-id`, signed with
 * the portfolio); any other key reads its own merchant's changes, and only those.
 */
function nocMerchant(organizationId: string | undefined, key: SigningKey): string | undefined {
  if (organizationId === undefined || organizationId === key.merchantId) return undefined;
  if (key.portfolioId === undefined) {
    throw new CybsError(
      'API_INVALID_PARAMS',
      `notification-of-changes takes no organizationId, so the key of merchant ${key.merchantId} reads only that merchant's changes, not organization ${organizationId}'s; use that merchant's key or a meta key (CYBS_PORTFOLIO_ID).`,
      { stage: 'api', exitCode: 2, context: { field: 'organizationId' } },
    );
  }
  return organizationId;
}
