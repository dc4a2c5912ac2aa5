/**
 * A measurement, not a timed assertion: a big CSV report streams from the simulator (in its own
 * process) while the simulator's resident memory stays under 150 MiB (157 MB). 200,000 rows by default;
 * CYBS_BIG_TESTS=1 runs the full 1,000,000 rows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signedFetch } from '../../packages/simulator/test/helpers/cybs-sign.js';
import { compileCli } from '../helpers/compiled-cli.js';
import { rssOf, spawnSimulator } from '../helpers/simulator-process.js';
import type { SimulatorProcess } from '../helpers/simulator-process.js';

const ROWS = process.env['CYBS_BIG_TESTS'] === '1' ? 1_000_000 : 200_000;

describe.skipIf(process.platform !== 'linux')('simulator memory while streaming a big report', () => {
  let sim: SimulatorProcess;

  beforeAll(async () => {
    // The product as shipped: the compiled CLI (`cybs-etl simulator`), without tsx in the process.
    const cli = compileCli('cybs-etl-test');
    sim = await spawnSimulator(
      [
        '--seed',
        '11',
        '--organizations',
        '1',
        '--transactions-per-day',
        String(ROWS),
        '--start-date',
        '2024-01-01',
        '--quiet-day-rate',
        '0',
      ],
      {},
      { compiledCli: cli },
    );
  }, 180_000);
  afterAll(async () => {
    expect(await sim.stop()).toBe(0);
  });

  it(`streams a ${ROWS.toLocaleString('en-US')}-row CSV with RSS under 150 MiB`, async () => {
    const creds = {
      merchantId: sim.env['CYBS_MERCHANT_ID']!,
      keyId: sim.env['CYBS_KEY_ID']!,
      sharedSecret: sim.env['CYBS_SHARED_SECRET']!,
    };
    let peak = 0;
    const pid = sim.child.pid!;
    const baseline = (await rssOf(pid)) ?? 0;
    const sampler = setInterval(() => {
      void rssOf(pid).then((v) => {
        if (v !== undefined && v > peak) peak = v;
      });
    }, 25);
    const started = performance.now();
    // The GMT daily Payment Batch Detail would need two days of data; the UTC FundingDetail report
    // is settled rows only. The Transaction Request report (one row per request) of a whole
    // America/Los_Angeles day holds ≈ ROWS rows.
    const res = await signedFetch(
      sim.baseUrl,
      creds,
      '/reporting/v3/report-downloads?reportName=TransactionRequestReport_Daily&reportDate=2024-01-11',
    );
    expect(res.status).toBe(200);
    let bytes = 0;
    let tail = '';
    let records = 0;
    let inQuotes = false;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.length;
      // Count CSV records (CRLF outside quotes), so that quoted line breaks do not count.
      const text = Buffer.from(chunk).toString('latin1');
      for (let i = 0; i < text.length; i++) {
        const ch = text.charCodeAt(i);
        if (ch === 34) inQuotes = !inQuotes;
        else if (ch === 10 && !inQuotes) records++;
      }
      tail = text.slice(-200);
    }
    const seconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    const final = (await rssOf(pid)) ?? 0;
    peak = Math.max(peak, final);
    const rows = records - 2;
    console.log(
      `[simulator-memory] rows=${rows} bytes=${bytes} seconds=${seconds.toFixed(1)} rows/s=${Math.round(rows / seconds)} ` +
        `rss baseline=${(baseline / 1e6).toFixed(0)}MB peak=${(peak / 1e6).toFixed(0)}MB`,
    );
    expect(tail.endsWith('\r\n')).toBe(true);
    expect(rows).toBeGreaterThan(ROWS * 0.95);
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThan(150 * 1024 * 1024);
  });
});
