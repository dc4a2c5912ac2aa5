/**
 * The simulator for the benchmark, in its own process (its memory is not the loader's):
 *   node --import tsx test/bench/sim.ts '<json>'
 * JSON: { transactionsPerDay, startDate, xml?: boolean, organizations?: number }. With `xml`, the Transaction Request
 * subscription delivers XML instead of CSV (the same rows as an XML report).
 * Prints `export CYBS_BASE_URL=… CYBS_MERCHANT_ID=… CYBS_KEY_ID=… CYBS_SHARED_SECRET=…`, then
 * "Press Ctrl+C to stop." and runs until SIGTERM.
 */
import { startSimulator } from '../../packages/simulator/src/server/start-simulator.js';

interface BenchSimOptions {
  transactionsPerDay: number;
  startDate: string;
  xml?: boolean;
  /** Organizations (default 1); with more than one, the portfolio (meta) key that acts for all of them. */
  organizations?: number;
}

const options = JSON.parse(process.argv[2] ?? '{}') as BenchSimOptions;
const sim = await startSimulator({
  seed: 9,
  organizations: options.organizations ?? 1,
  transactionsPerDay: options.transactionsPerDay,
  startDate: options.startDate,
  quietDayRate: 0,
  // Report files and on-demand pages of complete windows are served from disk once rendered, as
  // the real service serves stored data: the bench measures the loader, not the simulator's renderer.
  cacheReports: true,
});
const org = sim.organizations[0]!;
if (options.xml) {
  const sub = sim.store.findSubscription(org, 'TransactionRequestReport_Daily')!;
  sub.reportMimeType = 'application/xml';
}
const c = (options.organizations ?? 1) > 1 ? sim.portfolioCredentials : sim.credentials;
const portfolio = 'portfolioId' in c && c.portfolioId ? ` CYBS_PORTFOLIO_ID=${c.portfolioId}` : '';
process.stdout.write(
  `export CYBS_BASE_URL=${sim.baseUrl} CYBS_MERCHANT_ID=${c.merchantId} CYBS_KEY_ID=${c.keyId} CYBS_SHARED_SECRET=${c.sharedSecret}${portfolio} BENCH_ORGANIZATIONS=${sim.organizations.join(',')}\nPress Ctrl+C to stop.\n`,
);
const stop = (): void => {
  void sim.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
