import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { sql } from 'kysely';
import { migrateToLatest } from '../../src/warehouse/migrate.js';
import type {
  LoadBatch,
  LoadRecord,
  LoadReject,
  RecordsSource,
  SourceColumn,
} from '../../src/load/table-spec.js';
import type { LoadValue } from '../../src/copy-text/bodies.js';
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import type { Db, Warehouse } from '../../src/warehouse/warehouse.js';
import { createTestDatabase } from './db.js';
import { warehouseTempDir } from './temp-dir.js';

export interface OpenedWarehouse {
  warehouse: Warehouse;
  cleanup: () => Promise<void>;
}

/** Both back ends, migrated: a fresh PostgreSQL database, and the embedded server on a temp dir. */
export function warehouseBackends(prefix: string): [string, () => Promise<OpenedWarehouse>][] {
  return [
    [
      'postgres',
      async () => {
        const database = await createTestDatabase(prefix);
        const warehouse = await openWarehouse({ url: database.url, path: '' });
        await migrateToLatest(warehouse.db);
        return { warehouse, cleanup: async () => (await warehouse.close(), await database.drop()) };
      },
    ],
    [
      'embedded',
      async () => {
        const dir = await warehouseTempDir(`cybs-${prefix}-`);
        const warehouse = await openWarehouse({ path: join(dir, 'warehouse') });
        await migrateToLatest(warehouse.db);
        return {
          warehouse,
          cleanup: async () => (await warehouse.close(), await rm(dir, { recursive: true, force: true })),
        };
      },
    ],
  ];
}

/** A row of a generated source: its values (aligned with the columns) and optionally its record number. */
export interface GeneratedRow {
  values: LoadValue[];
  recordNumber?: number;
}

export type SourceItem = GeneratedRow | { reject: LoadReject } | { throw: Error };

/**
 * A records source over generated rows, delivered in batches of `batchSize` by an async generator (as a
 * parser would). Record numbers default to the 1-based position; raw text is the values joined by commas.
 */
export function generatedSource(
  name: string,
  columns: SourceColumn[],
  items: Iterable<SourceItem | LoadValue[]>,
  batchSize = 100,
): RecordsSource {
  return {
    kind: 'records',
    source: name,
    columns,
    batches: (async function* (): AsyncGenerator<LoadBatch> {
      let records: LoadRecord[] = [];
      let rejects: LoadReject[] = [];
      let position = 0;
      for (const item of items) {
        position++;
        if (Array.isArray(item)) {
          records.push({ recordNumber: position, raw: item.map(String).join(','), values: item });
        } else if ('reject' in item) {
          rejects.push(item.reject);
        } else if ('throw' in item) {
          if (records.length > 0 || rejects.length > 0) yield { records, rejects };
          throw item.throw;
        } else {
          const recordNumber = item.recordNumber ?? position;
          records.push({ recordNumber, raw: item.values.map(String).join(','), values: item.values });
        }
        if (records.length + rejects.length >= batchSize) {
          yield { records, rejects };
          records = [];
          rejects = [];
          await Promise.resolve();
        }
      }
      if (records.length > 0 || rejects.length > 0) yield { records, rejects };
    })(),
  };
}

export async function count(db: Db, table: string, where = 'true'): Promise<number> {
  const r = await sql<{
    n: string;
  }>`select count(*)::bigint as n from ${sql.raw(table)} where ${sql.raw(where)}`.execute(db);
  return Number(r.rows[0]!.n);
}

/** `n` rows of etl.runs, for loads to name as theirs: their ids. */
export async function insertRuns(db: Db, n: number): Promise<number[]> {
  const runs: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = await sql<{ id: string }>`insert into etl.runs (command) values ('test') returning id`.execute(
      db,
    );
    runs.push(Number(r.rows[0]!.id));
  }
  return runs;
}

/**
 * `text` as UTF-8 bytes in chunks of `size`, every chunk in the same buffer (a reader in turn, as a
 * download read into one buffer): before the next chunk is written there, the whole buffer is
 * overwritten with `#`, so that a reader still holding on to an earlier chunk reads other bytes.
 */
export async function* chunksInTurn(text: string, size: number): AsyncGenerator<Buffer> {
  const bytes = Buffer.from(text, 'utf8');
  const buffer = Buffer.alloc(size);
  for (let i = 0; i < bytes.length; i += size) {
    buffer.fill('#');
    const n = bytes.copy(buffer, 0, i, i + size);
    yield buffer.subarray(0, n);
  }
  buffer.fill('#');
}

/** `text` as UTF-8 bytes in chunks of `size` (a file read in pieces that cut lines and characters). */
export function chunksOf(text: string, size: number): Readable {
  const bytes = Buffer.from(text, 'utf8');
  const parts: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) parts.push(bytes.subarray(i, i + size));
  return Readable.from(parts);
}
