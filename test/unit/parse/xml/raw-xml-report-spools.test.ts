/**
 * The fast XML path's child-table spools when the file's read breaks off (a download that starts
 * over, src/extract/followed-download.ts): the reader of the records' lines gets the read's own
 * error, a spool write still in flight never surfaces as an unhandled stream error, and the
 * spools are closed before the error reaches the reader (their directory can go right away).
 */
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_PIPELINES } from '../../../../pipelines/index.js';
import { openRawXmlReport } from '../../../../src/parse/xml/raw-xml-report.js';
import type { FastXmlChildTable } from '../../../../src/parse/xml/raw-xml-report.js';
import { declaredColumns } from '../../../../src/load/report-sources.js';
import { samplesDir } from '../helpers.js';

const REPORT = 'TransactionRequestClass';
const pipeline = REPORT_PIPELINES.find((p) => p.reportDefinitionName === REPORT)!;

let dir = '';
let killbill = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cybs-xml-spools-'));
  killbill = await readFile(join(samplesDir, 'transaction-detail-tdr_1_6.killbill-excerpt.xml'), 'utf8');
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The killbill request `n` times under other request ids (each with its replies and line item). */
function manyRequests(n: number): string {
  const record = killbill.match(/<Request [\s\S]*<\/Request>/)![0];
  let body = '';
  for (let i = 0; i < n; i++) body += `${record.replace('2434465504100167904567', String(1e21 + i))}\n`;
  return killbill.replace(/<Request [\s\S]*<\/Request>/, body);
}

describe('fast XML path: child-table spools of a read that breaks off', () => {
  it('hands the reader the read’s own error, with every spool closed', async () => {
    const text = manyRequests(2000);
    const first = text.indexOf('<Request ', text.indexOf('</Request>'));
    const cut = text.lastIndexOf('<Request ', Math.floor(text.length / 2));
    const broken = new Error('the transfer broke');
    let reads = 0;
    const childTables = Object.entries(pipeline.childTables ?? {}).map(
      ([group, table]): FastXmlChildTable => ({
        group: group as FastXmlChildTable['group'],
        columns: declaredColumns(table),
        spoolPath: () => join(dir, `${group}-${++reads}.copy`),
      }),
    );
    expect(childTables.length).toBe(2);
    const report = await openRawXmlReport(
      async function* () {
        yield text.slice(0, first);
        // Once the spools are open, half the records in quick succession (their items written to
        // the spools as they come), and the break while those writes are under way.
        while ((await readdir(dir)).length < 2) await new Promise((resolve) => setImmediate(resolve));
        await new Promise((resolve) => setImmediate(resolve));
        for (let at = first; at < cut; at += 4096) yield text.slice(at, Math.min(at + 4096, cut));
        throw broken;
      },
      { fileName: 'k.xml', report: REPORT, childTables },
    );
    let lines = 0;
    const read = async () => {
      for await (const chunk of report.body.chunks)
        for (let lf = chunk.indexOf(10); lf >= 0; lf = chunk.indexOf(10, lf + 1)) lines++;
    };
    await expect(read()).rejects.toBe(broken);
    expect(lines).toBeGreaterThan(0);
    // The spools were not completed: their lines are never read.
    expect(() => report.children[0]!.body()).toThrow(/read before the records were/);
    expect((await readdir(dir)).sort()).toEqual(['application_reply-1.copy', 'line_item-2.copy']);
    // Closed: the directory can be removed and made again at once.
    await rm(dir, { recursive: true });
    dir = await mkdtemp(join(tmpdir(), 'cybs-xml-spools-'));
  });
});
