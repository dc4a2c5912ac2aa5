/** The CyberSource REST API client: deployments, auth, typed endpoints, errors, retries. */
export { createReportingClient, defaultUserAgent } from './reporting-client.js';
export type { ReportingClient, ReportingClientConfig, ReportingClientDeps } from './reporting-client.js';
export { DOWNLOAD_ACCEPT, splitPathAndQuery } from './endpoints.js';
export type { GenericRequest, JsonEndpoint } from './endpoints.js';
export { isJsonContentType } from './json-body.js';
export type { GenericResponse, JsonPage } from './json-body.js';
export type {
  DownloadSink,
  DownloadToFileOptions,
  DownloadToFileResult,
  ReportDownload,
  StreamedResponse,
} from './download.js';
export { DIGEST_BLOCK_BYTES, FileDigester, sameDigest } from '../spool/file-digest.js';
export type { FileDigest } from '../spool/file-digest.js';
export { DEPLOYMENT_BASE_URLS, isLoopbackHost, resolveTarget } from './deployments.js';
export type { ResolvedTarget } from './deployments.js';
export {
  API_ERROR_CODES,
  ApiError,
  createHttpError,
  decodeErrorBody,
  describeErrorBody,
  isApiError,
  RETRYABLE_STATUSES,
} from './errors.js';
export type { ApiErrorBody, ApiErrorCode } from './errors.js';
export { computeRetryDelay, decideRetry, isRetryableError, parseRetryAfter } from './retry.js';
export type { RetryConfig, RetryDecision } from './retry.js';
export { buildRequestTarget, createApiDispatcher, HTTP_METHODS, JSON_ACCEPT } from './transport.js';
export type { ApiEvent, HttpMethod, QueryEntry } from './transport.js';
export { formatReportDate, formatTimeParam } from './params.js';
export { createAuthenticator } from './auth/index.js';
export type { Authenticator, AuthenticatorDeps, SignableRequest } from './auth/index.js';
export * from './types.js';
