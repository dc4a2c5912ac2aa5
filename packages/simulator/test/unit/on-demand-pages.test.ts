/**
 * Purchase and Refund Detail pages of the simulator are byte-identical to what they were before
 * the JSON body came to be written directly (purchaseRefundPageJson): the bodies of many pages
 * (whole windows walked page by page, part-day windows, submission-date view, payment subtypes, an
 * unfinished window, pages out of order and past the end, no data, a group name that needs JSON
 * escapes) hash to the value recorded from the previous renderer (JSON.stringify of the page
 * object), and the page objects' JSON, CSV and XML renderings are unchanged.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createDataset } from '../../src/data/dataset.js';
import type { Dataset, SimOrganization } from '../../src/data/dataset.js';
import {
  jsonToXml,
  purchaseRefundCsv,
  purchaseRefundPage,
  purchaseRefundPageJson,
  servePurchaseRefundPageJson,
} from '../../src/routes/on-demand.js';
import type { PaymentSubtype, Window } from '../../src/routes/on-demand.js';

const orgs: SimOrganization[] = [
  { id: 'm1', index: 0, name: 'M1', accountId: 'a1', accountName: 'A', groupName: 'g1' },
  {
    id: 'm2',
    index: 1,
    name: 'M "2"',
    accountId: 'a2',
    accountName: 'A',
    groupName: 'G "two" \\ \n\u0001é€😀',
  },
];

interface Case {
  org: string;
  start: string;
  end: string;
  now?: string;
  limit: number;
  offsets?: number[];
  viewBy?: 'requestDate' | 'submissionDate';
  paymentSubtype?: PaymentSubtype;
}

const CASES: Case[] = [
  { org: 'm1', start: '2024-03-05T00:00:00Z', end: '2024-03-06T00:00:00Z', limit: 2000 },
  { org: 'm2', start: '2024-03-05T00:00:00Z', end: '2024-03-06T00:00:00Z', limit: 700 },
  {
    org: 'm2',
    start: '2024-03-04T10:00:00Z',
    end: '2024-03-05T13:30:00Z',
    limit: 1000,
    viewBy: 'submissionDate',
  },
  { org: 'm1', start: '2024-03-05T00:00:00Z', end: '2024-03-07T00:00:00Z', limit: 500, paymentSubtype: 'VI' },
  { org: 'm1', start: '2024-03-05T00:00:00Z', end: '2024-03-07T00:00:00Z', limit: 900, paymentSubtype: 'MC' },
  {
    org: 'm2',
    start: '2024-03-06T00:00:00Z',
    end: '2024-03-07T00:00:00Z',
    now: '2024-03-06T15:00:00Z',
    limit: 400,
  },
  {
    org: 'm1',
    start: '2024-03-05T00:00:00Z',
    end: '2024-03-06T00:00:00Z',
    limit: 300,
    offsets: [900, 0, 600, 50_000],
  },
  { org: 'm1', start: '2023-01-01T00:00:00Z', end: '2023-01-02T00:00:00Z', limit: 100, offsets: [0] },
];

type Options = Parameters<typeof purchaseRefundPage>[2];
type Render = (dataset: Dataset, w: Window, options: Options) => string | undefined;

/** A fresh dataset (per case and renderer: pages walked in order reuse the page cursor). */
const datasetOf = () =>
  createDataset({
    seed: 11,
    organizations: orgs,
    transactionsPerDay: 2600,
    startDate: '2024-03-01',
    quietDayRate: 0,
  });

/**
 * The page requests of a case: the given offsets, or offset 0, limit, 2·limit, … until `last` says
 * a body was not a full page.
 */
function* walk(c: Case): Generator<{ w: Window; options: Options; last: (body: string) => boolean }> {
  const w: Window = {
    organizationId: c.org,
    start: Date.parse(c.start),
    end: Date.parse(c.end),
    now: Date.parse(c.now ?? '2024-03-20T00:00:00Z'),
  };
  const options = (offset: number) => ({
    offset,
    limit: c.limit,
    ...(c.viewBy ? { viewBy: c.viewBy } : {}),
    ...(c.paymentSubtype ? { paymentSubtype: c.paymentSubtype } : {}),
  });
  const fixed = c.offsets !== undefined;
  const last = (body: string) => fixed || !body.includes(`"pageResults":${c.limit},`);
  if (c.offsets) {
    for (const offset of c.offsets) yield { w, options: options(offset), last: () => false };
    return;
  }
  for (let offset = 0; ; offset += c.limit) yield { w, options: options(offset), last };
}

/** SHA-256 over the bodies of every case's pages, with `turn` awaited before each request. */
async function hashOf(render: Render, turn?: () => Promise<void>) {
  const hash = createHash('sha256');
  let pages = 0;
  for (const c of CASES) {
    const dataset = datasetOf();
    for (const { w, options, last } of walk(c)) {
      if (turn) await turn();
      const body = render(dataset, w, options) ?? '(no data)';
      hash.update(body);
      hash.update('\n--\n');
      pages++;
      if (last(body)) break;
    }
  }
  return { pages, sha256: hash.digest('hex') };
}

/**
 * Recorded from the object renderer (purchaseRefundPage, the one before purchaseRefundPageJson) on
 * the dataset of the consistent money chain (captures of real authorizations, refunds of real
 * purchases); every renderer must give these bytes.
 */
const RECORDED = {
  json: { pages: 24, sha256: '29253e1ab0bce690784bb4e165574c449818f7abea1020ff8a42adb14260828f' },
  csv: { pages: 11, sha256: '9a28710256bbfb9af296e6da368afd14e7bf272b6e8a394abd7a618c00264332' },
  xml: { pages: 11, sha256: 'cc0e97c5a883d281bce5d3da09179bee1b87600895979430be311176e5eb23ce' },
};

describe('simulator purchase-refund-details pages', () => {
  it('JSON bodies written directly are byte-identical to the previous renderer', async () => {
    expect(await hashOf((d, w, o) => purchaseRefundPageJson(d, w, o))).toEqual(RECORDED.json);
  });

  it('pages rendered ahead by the route are the same bytes, asked for after or before the render', async () => {
    const serve: Render = (d, w, o) => servePurchaseRefundPageJson(d, w, o);
    // With the event loop turning between requests, the next page is rendered ahead; without,
    // it is rendered when asked for.
    expect(await hashOf(serve, () => new Promise((resolve) => setImmediate(resolve)))).toEqual(RECORDED.json);
    expect(await hashOf(serve)).toEqual(RECORDED.json);
  });

  it('the page objects (CSV, XML, JSON.stringify) are unchanged', async () => {
    const page = (d: Dataset, w: Window, o: Options) => purchaseRefundPage(d, w, o);
    expect(
      await hashOf((d, w, o) => {
        const p = page(d, w, o);
        return p && JSON.stringify(p);
      }),
    ).toEqual(RECORDED.json);
    expect(
      await hashOf((d, w, o) => {
        const p = page(d, w, o);
        return p && purchaseRefundCsv(p);
      }),
    ).toEqual(RECORDED.csv);
    expect(
      await hashOf((d, w, o) => {
        const p = page(d, w, o);
        return p && jsonToXml('purchaseRefundDetails', p);
      }),
    ).toEqual(RECORDED.xml);
  });
});
