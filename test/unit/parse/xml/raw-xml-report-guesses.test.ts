/**
 * The fast XML path reads each record's names by guessing that it repeats the layout of the record
 * before (its attributes, children, the leaves of groups one level down, the attributes and
 * leaves of repeated items), checking each guess: records whose layout changes from one to the
 * next read to the same values as when each is read first, and a guess never lets through what
 * the scanner refuses when it looks the name up.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_PIPELINES } from '../../../../pipelines/index.js';
import { isFastPathRefusal } from '../../../../src/copy-text/fast-path-refusal.js';
import { openRawXmlReport } from '../../../../src/parse/xml/raw-xml-report.js';
import type { FastXmlChildTable } from '../../../../src/parse/xml/raw-xml-report.js';
import { declaredColumns } from '../../../../src/load/report-sources.js';
import { samplesDir } from '../helpers.js';

const REPORT = 'TransactionRequestClass';
const pipeline = REPORT_PIPELINES.find((p) => p.reportDefinitionName === REPORT)!;

let dir = '';
let killbill = '';
let record = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cybs-xml-guesses-'));
  killbill = await readFile(join(samplesDir, 'transaction-detail-tdr_1_6.killbill-excerpt.xml'), 'utf8');
  record = killbill.match(/<Request [\s\S]*<\/Request>/)![0];
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The sample with `records` in place of its one record. */
const withRecords = (...records: string[]): string =>
  killbill.replace(/<Request [\s\S]*<\/Request>/, records.join('\n    '));

/** The sample's record in another layout: attributes, leaves and items' leaves in other orders, other values. */
function reordered(): string {
  return record
    .replace('RequestID="2434465504100167904567"', 'RequestID="2434465504100167900001"')
    .replace(/(MerchantReferenceNumber="1234")\s+(Source="SCMP API")/, '$2 $1')
    .replace(
      /<FirstName>sample<\/FirstName>\s*<LastName>merchant<\/LastName>/,
      '<LastName>other</LastName><FirstName>an</FirstName>',
    )
    .replace(
      /<AccountSuffix>7392<\/AccountSuffix>\s*<ExpirationMonth>12<\/ExpirationMonth>/,
      '<ExpirationMonth>11</ExpirationMonth><AccountSuffix>1111</AccountSuffix>',
    )
    .replace(/<RCode>1<\/RCode>\s*<RFlag>SOK<\/RFlag>/, '<RFlag>SOK</RFlag><RCode>1</RCode>')
    .replace(
      '<field1 name="mdd1">ca</field1>',
      '<field2 name="mdd2">x</field2><field1 name="mdd1">cb</field1>',
    );
}

interface Read {
  /** Each record's values by column name (NULL left out). */
  records: Map<string, string>[];
  /** Each child table's lines' values by column name. */
  items: Map<string, Map<string, string>[]>;
}

async function read(text: string): Promise<Read> {
  let reads = 0;
  const childTables = Object.entries(pipeline.childTables ?? {}).map(([group, table]): FastXmlChildTable => ({
    group: group as FastXmlChildTable['group'],
    columns: declaredColumns(table),
    spoolPath: () => join(dir, `${group}-${++reads}-${Math.random()}.copy`),
  }));
  const report = await openRawXmlReport(
    async function* () {
      yield text;
    },
    { fileName: 'guesses.xml', report: REPORT, childTables },
  );
  const byName = (names: string[], body: string): Map<string, string>[] =>
    body
      .split('\n')
      .filter((l) => l !== '')
      .map((line) => {
        const fields = line.split('\t');
        return new Map(names.flatMap((n, i) => (fields[i] === '\\N' ? [] : [[n, fields[i]!] as const])));
      });
  let body = '';
  for await (const chunk of report.body.chunks) body += chunk.toString('utf8');
  const records = byName(
    report.columns.map((c) => c.column),
    body,
  );
  const items = new Map<string, Map<string, string>[]>();
  for (const child of report.children) {
    let lines = '';
    for await (const chunk of child.body().chunks) lines += chunk.toString('utf8');
    items.set(
      child.group,
      byName(
        child.columns().map((c) => c.name),
        lines,
      ),
    );
  }
  return { records, items };
}

describe('fast XML path: a record read by the layout of the one before', () => {
  it('reads a record whose layout changed to the values it has when read first', async () => {
    const other = reordered();
    const after = await read(withRecords(record, other));
    const first = await read(withRecords(other, record));
    expect(after.records).toHaveLength(2);
    expect(after.records[1]).toEqual(first.records[0]);
    expect(after.records[0]).toEqual(first.records[1]);
    expect([...after.records[1]!.values()]).toEqual(
      expect.arrayContaining(['an', 'other', '1111', '11', 'cb', 'x']),
    );
    // The items, keyed by request id (the record numbers differ between the two files).
    const sorted = (r: Read, group: string) =>
      r.items
        .get(group)!
        .map((m) => JSON.stringify([...m].filter(([k]) => !k.includes('record')).sort()))
        .sort();
    for (const group of after.items.keys()) expect(sorted(after, group)).toEqual(sorted(first, group));
  });

  it('refuses an item leaf named as the attribute the item before had (no guess takes one for the other)', async () => {
    const withLeaf = record.replace('<LineItem Number="0">', '<LineItem><Number>0</Number>');
    const error = await read(withRecords(record, withLeaf)).catch((e: unknown) => e);
    expect(isFastPathRefusal(error)).toBe(true);
    const alone = await read(withRecords(withLeaf)).catch((e: unknown) => e);
    expect(isFastPathRefusal(alone)).toBe(true);
  });
});
