import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import type { WriteStream } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { LoadValue } from '../copy-text/bodies.js';
import type { LoadBatch, LoadRecord, RecordsSource, SourceColumn } from '../load/table-spec.js';
import { toLoadRecord, toSourceColumn } from '../load/report-sources.js';
import type { ColumnSpec } from '../parse/records.js';
import type { FileDigester } from '../spool/file-digest.js';

/**
 * A spool of typed records on disk, one JSON array per line: lets several loader targets be fed
 * from one pass over on-demand pages without holding them in memory. The file is made at the first
 * record: most spools (the records an on-demand section sets aside for the per-row path) get none.
 */
export class RecordSpool {
  private out: WriteStream | undefined;
  private columns: ColumnSpec[] = [];
  /** Columns used when no page had records of this section (the table's declared ones). */
  private readonly fallback: SourceColumn[];
  private readonly rejects: LoadBatch['rejects'] = [];
  private count = 0;
  private readonly hash = createHash('sha256');
  /** The file's first error (open or write): thrown by the next write and by close(). */
  private error?: Error;

  constructor(
    private readonly path: string,
    fallbackColumns: readonly SourceColumn[],
  ) {
    this.fallback = [...fallbackColumns];
  }

  private file(): WriteStream {
    if (this.out === undefined) {
      this.out = createWriteStream(this.path, { encoding: 'utf8' });
      // Never an unhandled 'error' event (a full disk, a removed directory): the spool's error.
      this.out.on('error', (error) => (this.error ??= error));
    }
    return this.out;
  }

  setColumns(columns: readonly ColumnSpec[]): void {
    if (columns.length > this.columns.length) this.columns = [...columns];
  }

  async write(recordNumber: number, values: readonly LoadValue[]): Promise<void> {
    if (this.error) throw this.error;
    this.count++;
    const line = `${JSON.stringify([recordNumber, ...values])}\n`;
    this.hash.update(line, 'utf8');
    const out = this.file();
    if (!out.write(line)) await once(out, 'drain');
  }

  addReject(reject: LoadBatch['rejects'][number]): void {
    this.rejects.push(reject);
  }

  get records(): number {
    return this.count;
  }

  private closing?: Promise<void>;

  /** Finish writing; safe to call more than once. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const out = this.out;
      if (out !== undefined && !out.closed) {
        const closed = once(out, 'close');
        out.end();
        await closed;
      }
      if (this.error) throw this.error;
    })();
    return this.closing;
  }

  /** The spool's columns, records (SHA-256 taken as they were written) and rejects, for a digest. */
  digestInto(digester: FileDigester): void {
    const about = { columns: this.columns, sha256: this.hash.digest('hex'), rejects: this.rejects };
    digester.update(Buffer.from(`${JSON.stringify(about)}\n`));
  }

  /** The spooled records as a loader source (call after close()). */
  toLoadSource(source: string, batchSize = 2000): RecordsSource {
    const path = this.count > 0 ? this.path : undefined;
    const rejects = this.rejects;
    return {
      kind: 'records',
      source,
      columns: this.columns.length > 0 ? this.columns.map(toSourceColumn) : this.fallback,
      batches: (async function* (): AsyncGenerator<LoadBatch> {
        let batch: LoadRecord[] = [];
        const lines =
          path === undefined
            ? undefined
            : createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
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
