import { BodyBuffer } from '../api/json-body.js';
import type { JsonPage } from '../api/json-body.js';
import type { ReportingClient } from '../api/reporting-client.js';
import { isApiError } from '../api/errors.js';
import { CybsError } from '../errors.js';
import type { OnDemandEndpoint } from '../catalog/on-demand-sections.js';
import type { ScannedPage } from '../parse/json/on-demand-page-scanner.js';

export interface OnDemandFetchOptions {
  window: { start: Date; end: Date };
  /**
   * Sent only for a partner acting for a merchant (notification-of-changes takes none: the client
   * acts as that merchant instead, see ReportingClient.getNotificationOfChanges).
   */
  organizationId?: string;
  /** Page size of purchase-refund-details (1–2000). */
  pageLimit: number;
  /** Stop a paging loop that never ends (a service that keeps returning pages with records). */
  maxPages?: number;
  signal?: AbortSignal;
  /**
   * Reads a purchase-refund-details page from its bytes without parsing it (OnDemandPageScanner),
   * or answers undefined and the page is parsed and checked as usual. Called for each page when
   * the caller asks for it, so after the caller is done with the previous page. The bytes are
   * valid during the call only (the next page is read into the same buffer).
   */
  scan?: (bytes: Buffer) => ScannedPage | undefined;
  /**
   * Told each purchase-refund-details page's bytes (with `scan`, before it; valid during the call
   * only) and its number from 0: the record count of a page the caller recognises (the very page
   * an earlier load read), which is then handed on as `{ known }`, neither scanned nor parsed; or
   * undefined.
   */
  recognise?: (bytes: Buffer, page: number) => number | undefined;
}

/**
 * One response body: parsed and checked, read by OnDemandFetchOptions.scan, or recognised by
 * OnDemandFetchOptions.recognise (its record count).
 */
export type OnDemandPage =
  | { body: unknown; scanned?: undefined; known?: undefined }
  | { scanned: ScannedPage; body?: undefined; known?: undefined }
  | { known: number; body?: undefined; scanned?: undefined };

export const DEFAULT_MAX_PAGES = 50_000;

/**
 * The response bodies of one on-demand window: one body for most endpoints, every offset/limit page
 * for purchase-refund-details (the next page is requested while the caller loads the current one).
 * A 404 means "no data for this window": nothing is yielded.
 */
export async function* fetchOnDemandPages(
  client: ReportingClient,
  endpoint: OnDemandEndpoint,
  options: Omit<OnDemandFetchOptions, 'scan'>,
): AsyncGenerator<unknown> {
  for await (const page of fetchOnDemandBodies(client, endpoint, options)) yield page.body;
}

/**
 * As fetchOnDemandPages, each page read by `options.scan` when it answers (purchase-refund-details)
 * and parsed otherwise.
 */
export async function* fetchOnDemandBodies(
  client: ReportingClient,
  endpoint: OnDemandEndpoint,
  options: OnDemandFetchOptions,
): AsyncGenerator<OnDemandPage> {
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
    if (body !== undefined) yield { body };
    return;
  }
  const limit = options.pageLimit;
  const maxPages = options.maxPages ?? DEFAULT_MAX_PAGES;
  const scan = options.scan;
  const recognise = scan ? options.recognise : undefined;
  // Every page's bytes are read into this one buffer: a page is scanned or parsed before the next
  // is requested.
  const into = new BodyBuffer();
  // The bytes of a page (scan) or its checked body; the page is read when the caller asks for it.
  const fetchPage = (offset: number): Promise<JsonPage<unknown> | { body: unknown } | undefined> => {
    const params = { ...base, offset, limit };
    if (scan) return noDataAs(client.getPurchaseRefundDetailsPage(params, { ...req, into }));
    return noDataAs(client.getPurchaseRefundDetails(params, req)).then((body) => body && { body });
  };
  // Paging ends at a page without records or a 404, never at a short page: what `limit` counts is
  // not documented (the docs only say that an offset past the results returns no embedded
  // object), so a page with fewer records than `limit` may still have pages after it. Offsets step
  // by `limit`, as in the documented example (offset 0, 5, 10 with limit 5).
  let offset = 0;
  let pending = fetchPage(offset);
  let previous: string | undefined;
  for (let page = 0; ; page++) {
    const fetched = await pending;
    if (fetched === undefined) {
      into.release();
      return;
    }
    let body: OnDemandPage;
    if ('bytes' in fetched) {
      const known = recognise?.(fetched.bytes, page);
      const scanned = known === undefined ? scan?.(fetched.bytes) : undefined;
      body = known !== undefined ? { known } : scanned ? { scanned } : { body: fetched.json() };
    } else {
      body = fetched;
    }
    const count =
      body.known !== undefined
        ? body.known
        : body.scanned
          ? body.scanned.records
          : pageRecordCount(body.body);
    const more = count > 0;
    // A service that ignores offset returns the same page for ever: stop at the first repeat
    // instead of spooling maxPages copies of it. (A recognised page is one an earlier load read
    // after the checks passed.)
    const signature =
      !more || body.known !== undefined
        ? undefined
        : body.scanned
          ? signatureOf(body.scanned.firstId, body.scanned.lastId)
          : pageSignature(body.body);
    if (signature !== undefined && signature === previous) {
      throw new CybsError(
        'EXTRACT_PAGING_RUNAWAY',
        `purchase-refund-details returned the same page of ${count} records at offset ${offset} as at offset ${offset - limit}; giving up (the service ignores offset)`,
        { stage: 'extract', context: { offset, limit } },
      );
    }
    previous = signature;
    if (more) {
      if (page + 1 >= maxPages) {
        throw new CybsError(
          'EXTRACT_PAGING_RUNAWAY',
          `purchase-refund-details returned ${maxPages} pages with records (limit ${limit}) for one window; giving up (the service keeps returning records)`,
          { stage: 'extract', context: { offset, limit } },
        );
      }
      offset += limit;
      pending = fetchPage(offset);
      // An abandoned prefetch must not surface as an unhandled rejection.
      pending.catch(() => {});
    }
    // The page past the last record carries nothing: only a first page is handed on empty (a
    // window whose first page has no records), as it was received.
    if (more || page === 0) yield body;
    if (!more) {
      // The last page is read (its caller asked for what comes next): its buffer is of no more use.
      into.release();
      return;
    }
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
  return signatureOf(id(details[0]), id(details[details.length - 1]));
}

function signatureOf(first: unknown, last: unknown): string | undefined {
  return typeof first === 'string' && typeof last === 'string' ? `${first}|${last}` : undefined;
}
