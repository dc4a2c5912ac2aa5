import type { ReportingClient } from '../api/reporting-client.js';
import { isApiError } from '../api/errors.js';
import { CybsError } from '../errors.js';
import type { OnDemandEndpoint } from '../pipeline/define-pipeline.js';

export interface OnDemandFetchOptions {
  window: { start: Date; end: Date };
  /** Sent only for a partner acting for a merchant. */
  organizationId?: string;
  /** Page size of purchase-refund-details (1–2000). */
  pageLimit: number;
  /** Stop a paging loop that never ends (a service that keeps returning full pages). */
  maxPages?: number;
  signal?: AbortSignal;
}

export const DEFAULT_MAX_PAGES = 50_000;

/**
 * The response bodies of one on-demand window: one body for most endpoints, every offset/limit page
 * for purchase-refund-details (the next page is requested while the caller loads the current one).
 * A 404 means "no data for this window": nothing is yielded.
 */
export async function* fetchOnDemandPages(
  client: ReportingClient,
  endpoint: OnDemandEndpoint,
  options: OnDemandFetchOptions,
): AsyncGenerator<unknown> {
  const base = {
    startTime: options.window.start,
    endTime: options.window.end,
    ...(options.organizationId ? { organizationId: options.organizationId } : {}),
  };
  const req = options.signal ? { signal: options.signal } : {};
  const noDataAs = async <T>(p: Promise<T>): Promise<T | undefined> => {
    try {
      return await p;
    } catch (error) {
      if (isApiError(error) && error.status === 404) return undefined;
      throw error;
    }
  };
  if (endpoint !== 'purchase-refund-details') {
    const body = await noDataAs<unknown>(
      endpoint === 'conversion-details'
        ? client.getConversionDetails(base, req)
        : endpoint === 'notification-of-changes'
          ? client.getNotificationOfChanges(base, req)
          : endpoint === 'net-fundings'
            ? client.getNetFundings(base, req)
            : client.getPaymentBatchSummaries(base, req),
    );
    if (body !== undefined) yield body;
    return;
  }
  const limit = options.pageLimit;
  const maxPages = options.maxPages ?? DEFAULT_MAX_PAGES;
  const fetchPage = (offset: number) =>
    noDataAs(client.getPurchaseRefundDetails({ ...base, offset, limit }, req));
  let offset = 0;
  let pending = fetchPage(offset);
  let previous: string | undefined;
  for (let page = 0; ; page++) {
    const body = await pending;
    if (body === undefined) return;
    const count = pageRecordCount(body);
    const more = count >= limit;
    // A service that ignores offset returns the same full page for ever: stop at the first repeat
    // instead of spooling maxPages copies of it.
    const signature = more ? pageSignature(body) : undefined;
    if (signature !== undefined && signature === previous) {
      throw new CybsError(
        'EXTRACT_PAGING_RUNAWAY',
        `purchase-refund-details returned the same page of ${limit} records at offset ${offset} as at offset ${offset - limit}; giving up (the service ignores offset)`,
        { stage: 'extract', context: { offset, limit } },
      );
    }
    previous = signature;
    if (more) {
      if (page + 1 >= maxPages) {
        throw new CybsError(
          'EXTRACT_PAGING_RUNAWAY',
          `purchase-refund-details returned ${maxPages} full pages of ${limit} records for one window; giving up (the service keeps returning full pages)`,
          { stage: 'extract', context: { offset, limit } },
        );
      }
      offset += limit;
      pending = fetchPage(offset);
      // An abandoned prefetch must not surface as an unhandled rejection.
      pending.catch(() => {});
    }
    yield body;
    if (!more) return;
  }
}

/** Records in one purchase-refund-details page: its requestDetails (pageResults is undocumented). */
export function pageRecordCount(body: unknown): number {
  if (!body || typeof body !== 'object') return 0;
  const details = (body as { requestDetails?: unknown }).requestDetails;
  return Array.isArray(details) ? details.length : 0;
}

/** The first and last request ids of a page (undefined when they are not strings). */
function pageSignature(body: unknown): string | undefined {
  const details = (body as { requestDetails?: unknown[] }).requestDetails;
  if (!Array.isArray(details) || details.length === 0) return undefined;
  const id = (item: unknown) =>
    item && typeof item === 'object' ? (item as { requestId?: unknown }).requestId : undefined;
  const first = id(details[0]);
  const last = id(details[details.length - 1]);
  return typeof first === 'string' && typeof last === 'string' ? `${first}|${last}` : undefined;
}
