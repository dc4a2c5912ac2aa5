/**
 * The loader users write today, for the benchmark's baseline: download the report with a plain
 * signed request, parse it with csv-parse, and send one INSERT … ON CONFLICT per row (autocommit).
 *   node --import tsx test/bench/naive.ts <reportName> <reportDate>
 * CYBS_* and DATABASE_URL from the environment. Prints {"rows": N}.
 */
import { parse } from 'csv-parse';
import pg from 'pg';
import { createReportingClient } from '../../src/api/reporting-client.js';
import { resolveHeader } from '../../src/catalog/index.js';
import { parseConfig } from '../../src/config/load-config.js';

const [reportName, reportDate] = process.argv.slice(2) as [string, string];
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
const db = new pg.Client({ connectionString: process.env['DATABASE_URL']! });
await db.connect();
const download = await client.downloadReport({ reportName, reportDate, accept: 'text/csv' });
const parser = download.body.pipe(parse({ relax_column_count: true, from_line: 2 }));
let insert = '';
let rows = 0;
for await (const record of parser as AsyncIterable<string[]>) {
  if (insert === '') {
    const columns = record.map((h) => resolveHeader(h, { report: 'TransactionRequestClass' }));
    const names = columns.map((c) => `"${c.column}"`);
    await db.query(
      `create table if not exists naive_load (${columns.map((c) => `"${c.column}" ${c.pgType}`).join(', ')}, primary key (request_id))`,
    );
    insert =
      `insert into naive_load (${names.join(', ')}) values (${names.map((_, i) => `$${i + 1}`).join(', ')}) ` +
      `on conflict (request_id) do update set ${names.map((n) => `${n} = excluded.${n}`).join(', ')}`;
    continue;
  }
  await db.query(
    insert,
    record.map((v) => (v === '' ? null : v)),
  );
  rows++;
}
await db.end();
await client.close();
process.stdout.write(`${JSON.stringify({ rows })}\n`);
