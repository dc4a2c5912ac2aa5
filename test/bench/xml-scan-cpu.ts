/**
 * CPU time of the fast XML path's scan alone (src/parse/xml/raw-xml-report.ts): a file read from
 * disk, turned into COPY text lines (and child-table spools) that go nowhere, no database. The
 * machine is shared, so process CPU time (user + system) is the figure, not wall time.
 *
 *   node --import tsx test/bench/xml-scan-cpu.ts <dir> [--records 100000] [--runs 5] [--digest]
 *
 * Makes (once, in <dir>) three files of `--records` records each: the bench's XML case (the
 * simulator's Transaction Request report as XML), the documented Payment Batch Detail layout and
 * the Transaction Detail (tdr_1_6) layout, the latter two the samples' records repeated with
 * distinct request ids. Prints one JSON line per file and run: CPU ms per 100k records.
 * `--digest` also feeds the bytes to the file digest (src/spool/file-digest.ts), as a download does.
 */
import { createReadStream, existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { REPORT_PIPELINES } from '../../pipelines/index.js';
import { createReportingClient } from '../../src/api/reporting-client.js';
import { XML_REPEATED_GROUPS } from '../../src/catalog/child-tables.js';
import { parseConfig } from '../../src/config/load-config.js';
import { declaredColumns } from '../../src/load/report-sources.js';
import { openRawXmlReport } from '../../src/parse/xml/raw-xml-report.js';
import type { FastXmlChildTable } from '../../src/parse/xml/raw-xml-report.js';
import { applyV8RuntimeFlags } from '../../src/runtime-flags.js';
import { startSimulator } from '../../packages/simulator/src/server/start-simulator.js';
import { FileDigester } from '../../src/spool/file-digest.js';

applyV8RuntimeFlags();

/** CyberSource's sample files, beside the checkout as in CI (../shared/samples/cybersource). */
const SAMPLES = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  '..',
  'shared',
  'samples',
  'cybersource',
);
const dir = process.argv[2] ?? '/tmp/xml-scan-cpu';
const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const RECORDS = arg('records', 100_000);
const RUNS = arg('runs', 5);
const DIGEST = process.argv.includes('--digest');

/** `text` with its `<Request …>…</Request>` records repeated until there are `n` of them. */
function scaled(text: string, n: number): string {
  const first = text.indexOf('<Request ');
  const last = text.lastIndexOf('</Request>') + '</Request>'.length;
  const indent = text.slice(text.lastIndexOf('\n', first) + 1, first);
  const records = text
    .slice(first, last)
    .split(/(?<=<\/Request>)\s*/)
    .filter((r) => r !== '');
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = records[i % records.length]!;
    const id = String(1_000_000_000_000 + i).padStart(22, '0');
    out.push(
      r.replace(/RequestID="[^"]*"/, `RequestID="${id}"`).replaceAll(/(<PaymentRequestID>)[^<]*/g, `$1${id}`),
    );
  }
  return `${text.slice(0, first)}${out.join(`\n${indent}`)}${text.slice(last)}`;
}

async function simulated(n: number): Promise<string> {
  const day = '2024-03-10';
  const sim = await startSimulator({
    seed: 9,
    organizations: 1,
    transactionsPerDay: 2000,
    quietDayRate: 0,
    startDate: '2024-03-01',
  });
  const org = sim.organizations[0]!;
  const client = createReportingClient({
    credentials: { auth: 'http-signature', ...sim.credentials },
    target: { baseUrl: sim.baseUrl },
    api: parseConfig('').api,
  });
  try {
    const reportName = 'TransactionRequestReport_Daily';
    sim.store.findSubscription(org, reportName)!.reportMimeType = 'application/xml';
    const download = await client.downloadReport({ reportName, reportDate: day, accept: 'application/xml' });
    const parts: Buffer[] = [];
    for await (const chunk of download.body) parts.push(chunk as Buffer);
    return scaled(Buffer.concat(parts).toString('utf8'), n);
  } finally {
    await client.close();
    await sim.close();
  }
}

interface Case {
  name: string;
  file: string;
  report: string;
  make: () => Promise<string>;
}

const cases: Case[] = [
  {
    name: 'bench (simulated Transaction Request)',
    file: path.join(dir, `trr-${RECORDS}.xml`),
    report: 'TransactionRequestClass',
    make: () => simulated(RECORDS),
  },
  {
    name: 'Payment Batch Detail (documented layout)',
    file: path.join(dir, `pbd-${RECORDS}.xml`),
    report: 'PaymentBatchDetailClass',
    make: async () =>
      scaled(
        await readFile(path.join(SAMPLES, 'legacy-docs-PaymentBatchDetailReport.excerpt.xml'), 'utf8'),
        RECORDS,
      ),
  },
  {
    name: 'Transaction Detail (tdr_1_6)',
    file: path.join(dir, `tdr-${RECORDS}.xml`),
    report: 'TransactionRequestClass',
    make: async () =>
      scaled(
        await readFile(path.join(SAMPLES, 'transaction-detail-tdr_1_6.killbill-excerpt.xml'), 'utf8'),
        RECORDS,
      ),
  },
];

await mkdir(dir, { recursive: true });
for (const c of cases) if (!existsSync(c.file)) await writeFile(c.file, await c.make());

const only = process.env['XML_SCAN_CASES']?.split(',');
for (const c of cases) {
  if (only !== undefined && !only.some((o) => c.file.includes(o))) continue;
  const pipeline = REPORT_PIPELINES.find((p) => p.reportDefinitionName === c.report)!;
  for (let run = 0; run < RUNS; run++) {
    const spools = path.join(dir, `spools-${process.pid}`);
    await mkdir(spools, { recursive: true });
    const childTables = XML_REPEATED_GROUPS.flatMap((group): FastXmlChildTable[] => {
      const table = pipeline.childTables?.[group.name];
      return table === undefined
        ? []
        : [
            {
              group: group.name,
              columns: declaredColumns(table),
              spoolPath: () => path.join(spools, `${group.name}.copy`),
            },
          ];
    });
    const before = process.cpuUsage();
    const digester = DIGEST ? new FileDigester() : undefined;
    const report = await openRawXmlReport(
      () => {
        const stream = createReadStream(c.file, { highWaterMark: 64 * 1024 });
        if (digester !== undefined) stream.on('data', (chunk) => digester.update(chunk as Buffer));
        return stream;
      },
      { fileName: path.basename(c.file), report: c.report, childTables },
    );
    let bytes = 0;
    for await (const chunk of report.body.chunks) bytes += chunk.length;
    for (const child of report.children) for await (const chunk of child.body().chunks) bytes += chunk.length;
    digester?.digest();
    const used = process.cpuUsage(before);
    const records = report.body.records();
    const cpuMs = (used.user + used.system) / 1000;
    process.stdout.write(
      `${JSON.stringify({ case: c.name, run, records, columns: report.columns.length, bytes, cpuMs: Math.round(cpuMs), cpuMsPer100k: Math.round((cpuMs * 100_000) / records) })}\n`,
    );
    await rm(spools, { recursive: true, force: true });
  }
}
