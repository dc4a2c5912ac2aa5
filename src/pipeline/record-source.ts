import { createHash } from 'node:crypto';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import type { LoadValue } from '../copy-text/bodies.js';
import type { LoadBatch, LoadRecord, RecordsSource, SourceColumn } from '../load/table-spec.js';
import { toLoadRecord, toSourceColumn } from '../load/report-sources.js';
import type { ColumnSpec } from '../parse/records.js';
import type { FileDigester } from '../spool/file-digest.js';
import { ByteSpool } from '../spool/byte-spool.js';
import type { SpoolDir } from '../spool/byte-spool.js';

/**
 * A spool of typed records (ByteSpool: in memory, in a file beyond the window's budget), one JSON
 * array per line: lets several loader targets be fed from one pass over on-demand pages without
 * holding a large window in memory. Most spools (the records an on-demand section sets aside for
 * the per-row path) get no record.
 */
export class RecordSpool {
  private readonly spool: ByteSpool;
  private columns: ColumnSpec[] = [];
  /** Columns used when no page had records of this section (the table's declared ones). */
  private readonly fallback: SourceColumn[];
  private readonly rejects: LoadBatch['rejects'] = [];
  private count = 0;
  private readonly hash = createHash('sha256');

  constructor(dir: SpoolDir, name: string, fallbackColumns: readonly SourceColumn[]) {
    this.spool = new ByteSpool(dir, name);
    this.fallback = [...fallbackColumns];
  }

  setColumns(columns: readonly ColumnSpec[]): void {
    if (columns.length > this.columns.length) this.columns = [...columns];
  }

  async write(recordNumber: number, values: readonly LoadValue[]): Promise<void> {
    this.count++;
    const line = `${JSON.stringify([recordNumber, ...values])}\n`;
    this.hash.update(line, 'utf8');
    await this.spool.write(line);
  }

  addReject(reject: LoadBatch['rejects'][number]): void {
    this.rejects.push(reject);
  }

  get records(): number {
    return this.count;
  }

  /** Finish writing; safe to call more than once. */
  close(): Promise<void> {
    return this.spool.close();
  }

  /** The spool's columns, records (SHA-256 taken as they were written) and rejects, for a digest. */
  digestInto(digester: FileDigester): void {
    const about = { columns: this.columns, sha256: this.hash.digest('hex'), rejects: this.rejects };
    digester.update(Buffer.from(`${JSON.stringify(about)}\n`));
  }

  /** The spooled records as a loader source (call after close()). */
  toLoadSource(source: string, batchSize = 2000): RecordsSource {
    const spool = this.count > 0 ? this.spool : undefined;
    const rejects = this.rejects;
    return {
      kind: 'records',
      source,
      columns: this.columns.length > 0 ? this.columns.map(toSourceColumn) : this.fallback,
      batches: (async function* (): AsyncGenerator<LoadBatch> {
        let batch: LoadRecord[] = [];
        const lines =
          spool === undefined
            ? undefined
            : createInterface({ input: Readable.from(spool.read()), crlfDelay: Infinity });
        let first = true;
        for await (const line of lines ?? []) {
          if (line === '') continue;
          const [recordNumber, ...values] = JSON.parse(line) as [number, ...LoadValue[]];
          batch.push(toLoadRecord({ recordNumber, values }));
          if (batch.length >= batchSize) {
            yield { records: batch, rejects: first ? rejects : [] };
            first = false;
            batch = [];
          }
        }
        if (batch.length > 0 || first) yield { records: batch, rejects: first ? rejects : [] };
      })(),
    };
  }
}
