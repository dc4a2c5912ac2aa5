import { expect } from 'vitest';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RecordBatch, RecordSource, RejectedRecord, TypedRecord } from '../../../src/parse/records.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const samplesDir = path.resolve(repoRoot, '..', 'shared', 'samples', 'cybersource');

/** The text split into chunks of `size` bytes, as a byte stream. */
export async function* chunked(text: string, size = 7): AsyncGenerator<Uint8Array> {
  const bytes = Buffer.from(text, 'utf8');
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

export interface Collected {
  records: TypedRecord[];
  rejects: RejectedRecord[];
  batches: RecordBatch[];
}

export async function collect(source: RecordSource): Promise<Collected> {
  const out: Collected = { records: [], rejects: [], batches: [] };
  for await (const batch of source.batches) {
    out.batches.push(batch);
    for (const r of batch.records) expect(r.values).toHaveLength(batch.columnCount);
    out.records.push(...batch.records);
    out.rejects.push(...batch.rejects);
  }
  return out;
}

/** Records as objects keyed by column (missing columns = null). */
export function rowsOf(source: RecordSource, records: TypedRecord[]): Record<string, unknown>[] {
  return records.map((r) =>
    Object.fromEntries(source.columns.map((c, i) => [c.column, r.values[i] ?? null])),
  );
}
