/**
 * Paging of purchase-refund-details. What the service documents: `limit` is "Results count per
 * page. Range(1-2000)" (SDK PurchaseAndRefundDetailsApi, the spec), offsets step by the page size
 * (DOCS reporting-ondemand-purchase-refund-download: 15 items, limit=5, offset=0, 5, 10), and "an
 * offset larger than the number of results returns no embedded object". What `limit` counts is not
 * documented, so a page with fewer records than `limit` is not taken for the last one: paging ends
 * at a page without records, or a 404.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/api/errors.js';
import { BodyBuffer } from '../../../src/api/json-body.js';
import type { ReportingClient } from '../../../src/api/reporting-client.js';
import { fetchOnDemandBodies, fetchOnDemandPages } from '../../../src/extract/on-demand-pages.js';
import type { ScannedPage } from '../../../src/parse/json/on-demand-page-scanner.js';

const window = { start: new Date('2024-03-01T00:00:00Z'), end: new Date('2024-03-02T00:00:00Z') };

const records = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ({ requestId: `r${from + i}` }));

/** A page as the service writes it; past the results, no embedded object (no sections). */
const page = (offset: number, limit: number, ids: { requestId: string }[]) =>
  ids.length === 0
    ? { offset, limit, pageResults: 0 }
    : { offset, limit, pageResults: ids.length, requestDetails: ids, settlements: ids };

const notFound = () =>
  new ApiError({
    code: 'API_NOT_FOUND',
    status: 404,
    method: 'GET',
    path: '/reporting/v3/purchase-refund-details',
    message: 'No data found for the given criteria.',
  });

/** A client answering each offset from `pages` (offset → records, or 'missing' for a 404). */
function clientOf(pages: Record<number, { requestId: string }[] | 'missing'>, asked: number[]) {
  const bodyOf = (p: { offset: number; limit: number }) => {
    asked.push(p.offset);
    const ids = pages[p.offset] ?? [];
    return ids === 'missing' ? undefined : page(p.offset, p.limit, ids);
  };
  const answer = (p: { offset: number; limit: number }) => {
    const body = bodyOf(p);
    return body === undefined ? Promise.reject(notFound()) : Promise.resolve(body);
  };
  return {
    getPurchaseRefundDetails: answer,
    // The bytes go into the caller's buffer as soon as the page is asked for: a page scanned after
    // the next one was asked for would be read over.
    getPurchaseRefundDetailsPage: (p: { offset: number; limit: number }, options?: { into?: BodyBuffer }) => {
      const body = bodyOf(p);
      if (body === undefined) return Promise.reject(notFound());
      const into = options?.into ?? new BodyBuffer();
      into.reset();
      into.append(Buffer.from(JSON.stringify(body)));
      return Promise.resolve({ bytes: into.bytes(), json: () => body });
    },
  } as unknown as ReportingClient;
}

async function collect(client: ReportingClient, pageLimit: number): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const body of fetchOnDemandPages(client, 'purchase-refund-details', { window, pageLimit })) {
    out.push(body);
  }
  return out;
}

const idsOf = (bodies: unknown[]) =>
  bodies.flatMap((b) =>
    ((b as { requestDetails?: { requestId: string }[] }).requestDetails ?? []).map((r) => r.requestId),
  );

describe('purchase-refund-details paging', () => {
  it('a short page is not the end: paging goes on until a page has no records', async () => {
    const asked: number[] = [];
    const client = clientOf({ 0: records(0, 2), 3: records(2, 3), 6: records(5, 1) }, asked);
    const bodies = await collect(client, 3);
    expect(idsOf(bodies)).toEqual(['r0', 'r1', 'r2', 'r3', 'r4', 'r5']);
    expect(asked).toEqual([0, 3, 6, 9]);
    // The page past the last record carries nothing and is not handed on.
    expect(bodies).toHaveLength(3);
  });

  it('a 404 after the last page ends paging; a 404 on the first page is no data', async () => {
    const asked: number[] = [];
    const bodies = await collect(clientOf({ 0: records(0, 3), 3: records(3, 1), 6: 'missing' }, asked), 3);
    expect(idsOf(bodies)).toEqual(['r0', 'r1', 'r2', 'r3']);
    expect(asked).toEqual([0, 3, 6]);
    const none: number[] = [];
    expect(await collect(clientOf({ 0: 'missing' }, none), 3)).toEqual([]);
    expect(none).toEqual([0]);
  });

  it('a first page without records is handed on once, and nothing more is asked', async () => {
    const asked: number[] = [];
    const bodies = await collect(clientOf({}, asked), 5);
    expect(bodies).toEqual([{ offset: 0, limit: 5, pageResults: 0 }]);
    expect(asked).toEqual([0]);
  });

  it('the same short page at every offset is a service that ignores offset', async () => {
    let calls = 0;
    const client = {
      getPurchaseRefundDetails: (p: { limit: number }) => {
        calls++;
        return Promise.resolve(page(0, p.limit, records(0, 2)));
      },
    } as unknown as ReportingClient;
    await expect(collect(client, 10)).rejects.toMatchObject({
      code: 'EXTRACT_PAGING_RUNAWAY',
      message: expect.stringMatching(/same page of 2 records at offset 10 as at offset 0.*ignores offset/),
    });
    expect(calls).toBeLessThanOrEqual(3);
  });

  it('pages read from their bytes (scan) end the same way', async () => {
    const asked: number[] = [];
    const client = clientOf({ 0: records(0, 1), 4: records(1, 4), 8: records(5, 2) }, asked);
    const scan = (bytes: Buffer): ScannedPage => {
      const body = JSON.parse(bytes.toString('utf8')) as {
        requestDetails?: { requestId: string }[];
      };
      const ids = body.requestDetails ?? [];
      return {
        lines: Buffer.alloc(0),
        sections: [],
        records: ids.length,
        firstId: ids[0]?.requestId,
        lastId: ids.at(-1)?.requestId,
      } as unknown as ScannedPage;
    };
    const scanned: number[] = [];
    for await (const p of fetchOnDemandBodies(client, 'purchase-refund-details', {
      window,
      pageLimit: 4,
      scan,
    })) {
      scanned.push(p.scanned!.records);
    }
    expect(scanned).toEqual([1, 4, 2]);
    expect(asked).toEqual([0, 4, 8, 12]);
  });
});
