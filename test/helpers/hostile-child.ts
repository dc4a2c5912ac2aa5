/**
 * Heavy hostile inputs, run in their own process so that its peak RSS is theirs:
 *   node --import tsx test/helpers/hostile-child.ts <case>
 * Prints one JSON line: { case, outcome: 'ok' | 'error', code, message, records, rejects, peakRssMB }.
 * Inputs are generated as streams, never held whole in memory by the generator.
 */
import { openCsvReport } from '../../src/parse/csv/csv-report.js';
import { openXmlReport } from '../../src/parse/xml/xml-report.js';
import type { RecordSource } from '../../src/parse/records.js';
import { isCybsError } from '../../src/errors.js';
import { applyV8RuntimeFlags } from '../../src/runtime-flags.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createReportingClient } from '../../src/api/reporting-client.js';
import { configSchema } from '../../src/config/schema.js';
import { parseOnDemandResponse } from '../../src/parse/json/on-demand.js';

// As the CLI does at start-up (src/runtime-flags.ts).
applyV8RuntimeFlags();

const MB = 1024 * 1024;
const META = 'org1,Hostile,TransactionRequest,1.0,2024-01-01T00:00:00Z to 2024-01-02T00:00:00Z\n';

async function* stream(head: string, fill: string, bytes: number, tail: string): AsyncGenerator<Buffer> {
  yield Buffer.from(head);
  const chunk = Buffer.from(fill.repeat(Math.ceil((64 * 1024) / fill.length)));
  for (let sent = 0; sent < bytes; sent += chunk.length) yield chunk;
  yield Buffer.from(tail);
}

async function* randomBytes(bytes: number, seed: number): AsyncGenerator<Buffer> {
  let a = seed;
  for (let sent = 0; sent < bytes; sent += 65536) {
    const b = Buffer.alloc(65536);
    for (let i = 0; i < b.length; i++) {
      a = (a * 1103515245 + 12345) >>> 0;
      b[i] = a >>> 24;
    }
    yield b;
  }
}

async function* repeated(parts: () => Iterable<string>): AsyncGenerator<Buffer> {
  let buf = '';
  for (const p of parts()) {
    buf += p;
    if (buf.length > 65536) {
      yield Buffer.from(buf);
      buf = '';
    }
  }
  yield Buffer.from(buf);
}

/**
 * A purchase-refund-details page served by a loopback server (chunked, no Content-Length) and read
 * through the reporting client as a run reads it; its request details as the records.
 */
async function servedPage(head: string, fill: string, bytes: number, tail: string): Promise<RecordSource> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunks = stream(head, fill, bytes, tail);
    const pump = async () => {
      for await (const chunk of chunks) {
        if (res.destroyed) return;
        if (!res.write(chunk)) await new Promise((resolve) => res.once('drain', resolve));
      }
      res.end();
    };
    res.on('close', () => void chunks.return(undefined));
    void pump().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = createReportingClient({
    credentials: {
      auth: 'http-signature',
      merchantId: 'merchant7',
      keyId: '08c94330-f618-42a3-b09d-e1e43be5efda',
      sharedSecret: 'yBJxy6LjM2TmcPGu+GaJrHtkke25fPpUX+UY6/L/1tE=',
    },
    target: { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` },
    api: configSchema.parse({}).api,
    userAgent: 'cybs-etl/0.0.0-test',
  });
  try {
    const body = await client.getPurchaseRefundDetails({
      startTime: new Date('2024-01-01T00:00:00Z'),
      endTime: new Date('2024-01-02T00:00:00Z'),
      offset: 0,
      limit: 2000,
    });
    return parseOnDemandResponse('purchase-refund-details', body).sections['requestDetails']!;
  } finally {
    await client.close();
    server.closeAllConnections();
    server.close();
  }
}

const JSON_HEAD = '{"offset":0,"limit":2000,"pageResults":1,"requestDetails":[';

const XML_HEAD = '<?xml version="1.0" encoding="utf-8"?>\n<Report Name="Hostile" Version="1.0"><Requests>';

const CASES: Record<string, () => Promise<RecordSource>> = {
  'csv-100mb-quoted-field': () =>
    openCsvReport(stream(`${META}request_id,Note\n1,"`, 'a', 100 * MB, '"\n'), { fileName: 'h.csv' }),
  'csv-100mb-unquoted-field': () =>
    openCsvReport(stream(`${META}request_id,Note\n1,`, 'a', 100 * MB, '\n'), { fileName: 'h.csv' }),
  'csv-10000-columns': () =>
    openCsvReport(
      repeated(function* () {
        yield META;
        yield Array.from({ length: 10_000 }, (_, i) => `Col ${i}`).join(',') + '\n';
        for (let r = 0; r < 200; r++)
          yield Array.from({ length: 10_000 }, (_, i) => `${r}-${i}`).join(',') + '\n';
      }),
      { fileName: 'h.csv' },
    ),
  'csv-random-bytes-20mb': () => openCsvReport(randomBytes(20 * MB, 7), { fileName: 'h.csv' }),
  'xml-random-bytes-20mb': () => openXmlReport(randomBytes(20 * MB, 9), { fileName: 'h.xml' }),
  'xml-billion-laughs': () =>
    openXmlReport(
      repeated(function* () {
        yield '<?xml version="1.0"?>\n<!DOCTYPE lolz [\n<!ENTITY lol "lol">\n';
        for (let i = 1; i <= 9; i++)
          yield `<!ENTITY lol${i} "${`&lol${i === 1 ? '' : i - 1};`.repeat(10)}">\n`;
        yield ']>\n<Report Name="x"><Requests><Request RequestID="1"><Amount>&lol9;</Amount></Request></Requests></Report>\n';
      }),
      { fileName: 'h.xml' },
    ),
  'xml-1m-nesting': () =>
    openXmlReport(
      repeated(function* () {
        yield `${XML_HEAD}<Request RequestID="1">`;
        for (let i = 0; i < 1_000_000; i++) yield '<a>';
        for (let i = 0; i < 1_000_000; i++) yield '</a>';
        yield '</Request></Requests></Report>\n';
      }),
      { fileName: 'h.xml' },
    ),
  'xml-100mb-text': () =>
    openXmlReport(
      stream(
        `${XML_HEAD}<Request RequestID="1"><Note>`,
        'a',
        100 * MB,
        '</Note></Request></Requests></Report>\n',
      ),
      {
        fileName: 'h.xml',
      },
    ),
  'xml-100mb-doctype': () =>
    openXmlReport(stream('<?xml version="1.0"?>\n<!DOCTYPE x [<!-- ', 'a', 100 * MB, ' -->]><Report/>\n'), {
      fileName: 'h.xml',
    }),
  'json-150mb-value': () => servedPage(`${JSON_HEAD}{"requestId":"1","groupName":"`, 'g', 150 * MB, '"}]}'),
  'json-150mb-page': () =>
    servedPage(
      `${JSON_HEAD}{"requestId":"0","groupName":"g"}`,
      ',{"requestId":"7000000000000000000001","groupName":"g","merchantReferenceNumber":"ref"}',
      150 * MB,
      ']}',
    ),
  'json-19mb-page': () =>
    servedPage(
      `${JSON_HEAD}{"requestId":"0","groupName":"g"}`,
      ',{"requestId":"7000000000000000000001","groupName":"g","merchantReferenceNumber":"ref"}',
      19 * MB,
      ']}',
    ),
  'json-15mb-value': () => servedPage(`${JSON_HEAD}{"requestId":"1","groupName":"`, 'g', 15 * MB, '"}]}'),
  'xml-100mb-unclosed-record': () =>
    openXmlReport(stream(`${XML_HEAD}<Request RequestID="1">`, '<x>1</x>', 100 * MB, ''), {
      fileName: 'h.xml',
    }),
};

const name = process.argv[2] ?? '';
const make = CASES[name];
if (!make) {
  process.stdout.write(`${JSON.stringify({ error: `unknown case ${name}`, cases: Object.keys(CASES) })}\n`);
  process.exit(2);
}
let outcome: 'ok' | 'error' = 'ok';
let code: string | undefined;
let message: string | undefined;
let records = 0;
let rejects = 0;
try {
  const source = await make();
  for await (const batch of source.batches) {
    records += batch.records.length;
    rejects += batch.rejects.length;
  }
} catch (error) {
  outcome = 'error';
  code = isCybsError(error) ? error.code : `NOT_CYBS:${(error as Error)?.name}`;
  message = String((error as Error)?.message ?? error).slice(0, 300);
}
const peakRssMB = Math.round(process.resourceUsage().maxRSS / 1024);
process.stdout.write(
  `${JSON.stringify({ case: name, outcome, code, message, records, rejects, peakRssMB })}\n`,
);
