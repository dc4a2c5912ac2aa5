/**
 * Memory (and throughput) of the report parsers on large generated reports. The data is generated
 * as a stream, never held in memory: peak RSS measures the parser alone.
 *
 *   node --import tsx test/bench/parse-memory.ts [--format csv|xml|both] [--csv-rows 1000000] [--xml-records 200000]
 *
 * Prints one JSON line per format: { format, rows, rejects, seconds, rowsPerSecond, bytes, peakRssMB }.
 * peakRssMB is process.resourceUsage().maxRSS of this process (so run one format per process for
 * separate figures).
 */
import { Readable } from 'node:stream';
import { openCsvReport } from '../../src/parse/csv/csv-report.js';
import { openXmlReport } from '../../src/parse/xml/xml-report.js';
import type { RecordSource } from '../../src/parse/records.js';
import { applyV8RuntimeFlags } from '../../src/runtime-flags.js';

// As the CLI does at start-up (src/runtime-flags.ts).
applyV8RuntimeFlags();

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
}

const CSV_HEADER = [
  'request_id',
  'merchant_id',
  'transaction_date',
  'batch_id',
  'batch_date',
  'merchant_ref_number',
  'TransactionReferenceNumber',
  'payment_type',
  'currency',
  'amount',
  'ics_applications',
  'status',
  'BillTo.FirstName',
  'BillTo.LastName',
  'BillTo.Email',
  'BillTo.City',
  'BillTo.Country',
  'BillTo.IPAddress',
  'Custom Comment',
  'LineItems.Quantity',
];

function requestId(i: number): string {
  return `69693043585${String(i).padStart(11, '0')}`;
}

function timestamp(i: number): string {
  const seconds = i % 86_400;
  const hh = String(Math.floor(seconds / 3600)).padStart(2, '0');
  const mm = String(Math.floor((seconds % 3600) / 60)).padStart(2, '0');
  const ss = String(seconds % 60).padStart(2, '0');
  return `2023-10-10T${hh}:${mm}:${ss}Z`;
}

function csvRow(i: number): string {
  return [
    requestId(i),
    'wfgsulair',
    timestamp(i),
    String(21265991580 + Math.floor(i / 1000)),
    '2023-10-11T04:15:21Z',
    `f1cf56ef-5071-477f-b3ee-${String(i).padStart(12, '0')}`,
    String(93211601 + i),
    i % 3 === 0 ? 'Visa' : 'MasterCard',
    'USD',
    `${Math.floor(i / 7) % 100000}.${String(i % 100).padStart(2, '0')}`,
    '"ics_bill,ics_auth"',
    'BATCHED',
    'Jo',
    i % 5 === 0 ? '"Smith, Jr."' : 'Smith',
    `jo${i}@example.com`,
    'Palo Alto',
    'US',
    `10.0.${(i >> 8) & 255}.${i & 255}`,
    i % 10 === 0 ? '"multi\nline ""quoted"" comment"' : 'plain comment',
    String(1 + (i % 9)),
  ].join(',');
}

function csvStream(rows: number): Readable {
  const per = 1000;
  return Readable.from(
    (function* () {
      yield `wfgsulair,Bench_Daily,TransactionRequest,1.10,2023-10-10T07:00:00Z to 2023-10-11T07:00:00Z,,,,,,,,,,,,,,,\n${CSV_HEADER.join(',')}\n`;
      for (let i = 0; i < rows; i += per) {
        const lines: string[] = [];
        for (let j = i; j < Math.min(rows, i + per); j++) lines.push(csvRow(j));
        yield Buffer.from(`${lines.join('\n')}\n`);
      }
    })(),
    { objectMode: false },
  );
}

function xmlRecord(i: number): string {
  return (
    `<Request RequestID="${requestId(i)}" MerchantReferenceNumber="ref-${i}" TransactionDate="${timestamp(i)}">` +
    `<TransactionReferenceNumber>${93211601 + i}</TransactionReferenceNumber>` +
    `<PaymentMethod>Visa</PaymentMethod><CurrencyCode>USD</CurrencyCode>` +
    `<Amount>${i % 100000}.${String(i % 100).padStart(2, '0')}</Amount><Application>ics_bill</Application>` +
    `<BillTo><FirstName>Jo &amp; Al</FirstName><LastName>Smith</LastName><Email>jo${i}@example.com</Email><City>Palo Alto</City></BillTo>` +
    `<LineItems><LineItem Number="0"><ProductName>A</ProductName><UnitPrice>1.50</UnitPrice><Quantity>2</Quantity></LineItem>` +
    `<LineItem Number="1"><ProductName>B</ProductName><UnitPrice>2.00</UnitPrice><Quantity>1</Quantity></LineItem></LineItems>` +
    `<!-- note --><Comment><![CDATA[free <text>]]></Comment>` +
    `</Request>\n`
  );
}

function xmlStream(records: number): Readable {
  const perBatch = 5000;
  return Readable.from(
    (function* () {
      yield '<?xml version="1.0" encoding="UTF-8"?>\n<Report Name="Payment Batch Detail" Version="1.0" xmlns="http://reports.ic3.com/reports/pbdr/1.0" MerchantID="CyberSource" ReportStartDate="2001-08-16T00:01-07:00" ReportEndDate="2001-08-16T23:59-07:00">\n<Batches>\n';
      for (let i = 0; i < records; i += perBatch) {
        let chunk = `<Batch BatchID="${i / perBatch}" BatchDate="2001-08-16"><Requests>\n`;
        for (let j = i; j < Math.min(records, i + perBatch); j++) {
          chunk += xmlRecord(j);
          if (chunk.length > 64 * 1024) {
            yield Buffer.from(chunk);
            chunk = '';
          }
        }
        yield Buffer.from(`${chunk}</Requests></Batch>\n`);
      }
      yield '</Batches>\n</Report>\n';
    })(),
    { objectMode: false },
  );
}

/** Counts bytes flowing through without holding them. */
function counted(stream: Readable, counter: { bytes: number }): Readable {
  stream.on('data', (chunk: Buffer | string) => {
    counter.bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
  });
  stream.pause();
  return stream;
}

async function drain(source: RecordSource): Promise<{ rows: number; rejects: number }> {
  let rows = 0;
  let rejects = 0;
  for await (const batch of source.batches) {
    rows += batch.records.length;
    rejects += batch.rejects.length;
  }
  return { rows, rejects };
}

async function run(format: 'csv' | 'xml', size: number): Promise<void> {
  const counter = { bytes: 0 };
  const started = process.hrtime.bigint();
  const source =
    format === 'csv'
      ? await openCsvReport(counted(csvStream(size), counter), { fileName: `bench-${size}.csv` })
      : await openXmlReport(counted(xmlStream(size), counter), { fileName: `bench-${size}.xml` });
  const { rows, rejects } = await drain(source);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const peakRssMB = process.resourceUsage().maxRSS / 1024;
  console.log(
    JSON.stringify({
      format,
      rows,
      rejects,
      columns: source.columns.length,
      seconds: Math.round(seconds * 100) / 100,
      rowsPerSecond: Math.round(rows / seconds),
      bytes: counter.bytes,
      peakRssMB: Math.round(peakRssMB * 10) / 10,
    }),
  );
}

const format = arg('format', 'both');
if (format === 'csv' || format === 'both') await run('csv', Number(arg('csv-rows', '1000000')));
if (format === 'xml' || format === 'both') await run('xml', Number(arg('xml-records', '200000')));
