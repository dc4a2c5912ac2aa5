/**
 * Download one subscription report to a file (for the benchmark's reference `\copy` and sizes):
 *   node --import tsx test/bench/fetch-report.ts <reportName> <reportDate> <csv|xml> <path>
 * Credentials and base URL from CYBS_* (the simulator's).
 */
import { createReportingClient } from '../../src/api/reporting-client.js';
import { parseConfig } from '../../src/config/load-config.js';

const [reportName, reportDate, format, path] = process.argv.slice(2) as [string, string, string, string];
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
const result = await client.downloadReportToFile(
  { reportName, reportDate, accept: format === 'xml' ? 'application/xml' : 'text/csv' },
  path,
);
process.stdout.write(`${JSON.stringify(result)}\n`);
await client.close();
