/**
 * Time fetching every Purchase and Refund Detail page of one day, without loading (is the
 * simulator or the loader the slow stage?):
 *   node --import tsx test/bench/fetch-prd.ts <day> [limit] [raw]
 * Credentials and base URL from CYBS_* (the simulator's, as printed by test/bench/sim.ts).
 * `raw` reads the bodies as text only (no JSON.parse, no validation).
 */
import { createReportingClient } from '../../src/api/reporting-client.js';
import { parseConfig } from '../../src/config/load-config.js';
import { fetchOnDemandPages } from '../../src/extract/on-demand-pages.js';

const [day, limitArg, mode] = process.argv.slice(2) as [string, string | undefined, string | undefined];
const limit = Number(limitArg ?? '2000');
const client = createReportingClient({
  credentials: {
    auth: 'http-signature',
    merchantId: process.env['CYBS_MERCHANT_ID']!,
    keyId: process.env['CYBS_KEY_ID']!,
    sharedSecret: process.env['CYBS_SHARED_SECRET']!,
  },
  target: { baseUrl: process.env['CYBS_BASE_URL']! },
  api: parseConfig('').api,
});
const start = new Date(`${day}T00:00:00Z`);
const end = new Date(start.getTime() + 86_400_000);
const started = performance.now();
let pages = 0;
let records = 0;
let bytes = 0;
if (mode === 'raw') {
  for (let offset = 0; ; offset += limit) {
    const r = await client.request({
      method: 'GET',
      path: '/reporting/v3/purchase-refund-details',
      query: {
        startTime: start.toISOString(),
        endTime: end.toISOString(),
        offset: String(offset),
        limit: String(limit),
      },
    });
    pages++;
    bytes += r.text.length;
    const n = ((r as { json?: { requestDetails?: unknown[] } }).json?.requestDetails ?? []).length;
    records += n;
    if (n < limit) break;
  }
} else {
  for await (const body of fetchOnDemandPages(client, 'purchase-refund-details', {
    window: { start, end },
    pageLimit: limit,
  })) {
    pages++;
    records += (body as { requestDetails?: unknown[] }).requestDetails?.length ?? 0;
  }
}
const seconds = (performance.now() - started) / 1000;
process.stdout.write(
  `${JSON.stringify({ pages, records, bytes, seconds: +seconds.toFixed(2), recordsPerSecond: Math.round(records / seconds) })}\n`,
);
await client.close();
