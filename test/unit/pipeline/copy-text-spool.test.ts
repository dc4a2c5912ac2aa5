import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ON_DEMAND_PIPELINES } from '../../../pipelines/index.js';
import { sectionsOf } from '../../../src/catalog/index.js';
import type { LoadBatch } from '../../../src/load/table-spec.js';
import { declaredColumns } from '../../../src/load/report-sources.js';
import { sectionColumns } from '../../../src/parse/json/on-demand.js';
import { CopyTextSpool } from '../../../src/pipeline/copy-text-spool.js';
import { SpoolDir } from '../../../src/spool/byte-spool.js';

const def = ON_DEMAND_PIPELINES.find((p) => p.name === 'purchase_refund_details')!;
const section = sectionsOf('purchase-refund-details').find((s) => s.name in def.tables)!;

async function records(batches: AsyncIterable<LoadBatch>): Promise<{ n: number; values: unknown[] }[]> {
  const out: { n: number; values: unknown[] }[] = [];
  for await (const batch of batches)
    for (const r of batch.records) out.push({ n: r.recordNumber, values: r.values });
  return out;
}

describe('CopyTextSpool read back from its file', () => {
  let parent: string;
  beforeEach(async () => {
    parent = await mkdtemp(join(tmpdir(), 'cybs-copy-text-spool-test-'));
  });
  afterEach(async () => {
    await rm(parent, { recursive: true, force: true });
  });

  it('decodes every line, and only the lines wanted, across the reads of a large file', async () => {
    const dir = new SpoolDir({ parent, memoryBytes: 1000 });
    const table = def.tables[section.name]!;
    const spool = new CopyTextSpool(dir, section.name, table, declaredColumns(table));
    const columns = sectionColumns(section);
    // Lines of ≈ 230 bytes or more, several hundred KB in all: reads end inside lines.
    const count = 4000;
    const cells = (n: number) => columns.map((_, i) => (i === 0 ? `id-${n}-${'x'.repeat(200)}` : '\\N'));
    const text = Array.from({ length: count }, (_, k) => `${cells(k + 1).join('\t')}\t${k + 1}\n`).join('');
    await spool.writeLines(columns, Buffer.from(text, 'utf8'), count, 1);
    await spool.close();
    const source = spool.toLoadSource('src');
    const all = await records(source.allBatches);
    expect(all.map((r) => r.n)).toEqual(Array.from({ length: count }, (_, k) => k + 1));
    expect(all[2999]!.values[0]).toBe(`id-3000-${'x'.repeat(200)}`);
    expect(all[2999]!.values.slice(1).every((v) => v === null)).toBe(true);
    const wanted = new Set([1, 1117, 2345, count]);
    const read = (await source.recordsOn!({ wants: (n) => wanted.has(n), through: Infinity }))!;
    expect(read.lines).toEqual([...wanted]);
    expect((await records(read.batches)).map((r) => r.values[0])).toEqual(
      [...wanted].map((n) => `id-${n}-${'x'.repeat(200)}`),
    );
    await dir.remove();
  });
});
