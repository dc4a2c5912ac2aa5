/**
 * How each kind of source (LoadSource) gets into its table: one strategy per kind, chosen here and
 * only here. A strategy first tries a first load straight into the table where its kind has one,
 * then, when that is not possible, copies the source into the staging table for the merge.
 */
import type {
  CopyLinesSource,
  CsvBytesSource,
  LoadSource,
  RecordsSource,
  SpooledSource,
} from '../table-spec.js';
import type { TargetCopy } from './context.js';
import { copyPreEncoded, copyRawCsv, copySource } from './copy-staging.js';
import { copyRawCsvIntoTable, copyRawTextIntoTable, copyTextIntoTable } from './first-load.js';
import { copyRawText } from './raw-text-copy.js';

/**
 * One target's copy, made for its source. The fast paths (`csv-bytes`, `copy-lines`) throw
 * LOAD_FAST_PATH_REFUSED from either step when the data needs the per-row path: the window rolls
 * back and the caller loads the file record by record.
 */
export interface SourceStrategy {
  /**
   * A first load straight into the table (no row of the table has the source yet, no column needs
   * checking): the rows copied, lineage included; undefined when the load goes through the
   * staging table (a re-load, a key already in the table or twice in the source, a kind with no
   * direct path), and then `intoStaging` follows.
   */
  intoTable(): Promise<number | undefined>;
  /** Copy the source into the staging table: the rows staged (those `intoTable` staged included). */
  intoStaging(): Promise<number>;
}

/** The strategy for `source`'s kind. */
export function strategyFor(copy: TargetCopy, source: LoadSource): SourceStrategy {
  switch (source.kind) {
    case 'records':
      return recordsStrategy(copy, source);
    case 'csv-bytes':
      return csvBytesStrategy(copy, source);
    case 'copy-lines':
      return copyLinesStrategy(copy, source);
    case 'spooled':
      return spooledStrategy(copy, source);
    default:
      return unknownKind(source);
  }
}

function unknownKind(source: never): never {
  const kind = JSON.stringify((source as { kind?: unknown }).kind);
  throw new Error(`A load source of kind ${kind}; expected records, csv-bytes, copy-lines or spooled.`);
}

/** Typed records: encoded row by row into the staging table (no direct path). */
function recordsStrategy(copy: TargetCopy, source: RecordsSource): SourceStrategy {
  return {
    intoTable: () => Promise.resolve(undefined),
    intoStaging: () => copySource(copy, source.source, source.batches),
  };
}

/** CSV bytes, checked by their scanner on their way into COPY. */
function csvBytesStrategy(copy: TargetCopy, source: CsvBytesSource): SourceStrategy {
  return fastPathStrategy(
    copy,
    source,
    (body) => copyRawCsvIntoTable(copy, source, body),
    (body) => copyRawCsv(copy, source, body),
  );
}

/** Ready COPY text lines, copied as they are. */
function copyLinesStrategy(copy: TargetCopy, source: CopyLinesSource): SourceStrategy {
  return fastPathStrategy(
    copy,
    source,
    (body) => copyRawTextIntoTable(copy, source, body),
    (body) => copyRawText(copy, body),
  );
}

/**
 * A fast path's body: straight into the table on a first load; staged as it is on a re-load, or
 * read again from the start when the first load met a key already there or twice.
 */
function fastPathStrategy<Body>(
  copy: TargetCopy,
  source: { body: Body; reopen: () => Promise<Body> },
  intoTable: (body: Body) => Promise<number | 'conflict' | 'staging'>,
  intoStaging: (body: Body) => Promise<number>,
): SourceStrategy {
  // Read once, as the loader reaches the table (an XML child table's body is made then).
  let body = source.body;
  return {
    async intoTable() {
      if (copy.drift) return undefined;
      const direct = await intoTable(body);
      if (typeof direct === 'number') return direct;
      if (direct === 'conflict') body = await source.reopen();
      return undefined;
    },
    intoStaging: () => intoStaging(body),
  };
}

/**
 * Pre-encoded segments: the records needing the per-row path are staged first (with their
 * rejects), then a first load puts them and the segments' lines straight into the table, or the
 * lines join them in the staging table. When a column needs checking, every record goes the
 * per-row way.
 */
function spooledStrategy(copy: TargetCopy, source: SpooledSource): SourceStrategy {
  let perRow = 0;
  return {
    async intoTable() {
      if (copy.drift) return undefined;
      perRow = await copySource(copy, source.source, source.perRowBatches);
      return copyTextIntoTable(copy, source, perRow);
    },
    async intoStaging() {
      if (copy.drift) return copySource(copy, source.source, source.allBatches);
      return perRow + (await copyPreEncoded(copy, source));
    },
  };
}
