/**
 * What a window load is given and what it returns.
 */
import type { Logger } from '../../observability/logger.js';
import type { LoadSource, SourceColumn, TableDecl } from '../table-spec.js';

export interface LoadWindowTarget {
  table: TableDecl;
  source: LoadSource;
}

export interface LoadWindowOptions {
  window: { pipeline: string; organizationId: string; windowKey: string };
  /** One or more tables, all committed together. Each table appears at most once. */
  targets: LoadWindowTarget[];
  runId: number | null;
  /** Fraction of the window's records (loaded + rejected) that may be rejected; default 0.01. */
  rejectThreshold?: number;
  /** Absolute cap on rejected records; the load stops as soon as it is exceeded. */
  maxRejects?: number;
  /**
   * Data that arrives page by page (an on-demand window): fetched inside the load transaction and,
   * on a first load, copied into the tables while the next page is fetched (see LiveLoad). The
   * window's targets are then `live.targets()`, and `targets` is ignored.
   */
  live?: LiveLoad;
  /**
   * Keep what this load leaves in its tables (LoadWindowResult.state), for recognising a re-load
   * that would change nothing. `previous` is what the window's last load left; with
   * `skipIfUnchanged` (the caller knows the sources are the very bytes that load read) and tables
   * that still hold exactly what it left (unchangedSince), nothing is read or written but the
   * window's state: the result is the one the load would have had.
   */
  state?: { previous?: LoadedState | undefined; skipIfUnchanged: boolean };
  /**
   * The targets with every record, for a load that finds `targets` (which then serve only to
   * recognise an unchanged or touched re-load, `state`) not enough: read when it needs them.
   */
  fullTargets?: () => Promise<LoadWindowTarget[]>;
  /**
   * A source column the table lacks: `evolve` (default) adds it; `freeze` fails the window with
   * LOAD_SCHEMA_FROZEN naming the columns (the pipeline's `schemaChanges`).
   */
  schemaChanges?: 'evolve' | 'freeze';
  logger?: Logger;
}

/**
 * A window whose records arrive in pages, each encoded as COPY text per table by the caller
 * (src/pipeline/copy-text-spool.ts), which also keeps every page (the complete sources).
 */
export interface LiveLoad {
  /** The tables, each with the columns of its lines (then `_source_row`) and their feed. */
  tables: { table: TableDecl; columns: SourceColumn[]; feed: LiveFeed }[];
  /** The lineage source of the window (the same for every table). */
  source: string;
  /**
   * The window's pages, fetched as the loader iterates: each step writes one page's lines (the
   * tables' feeds may then be taken). The loader stops iterating, which ends the fetch, when the
   * load has failed.
   */
  pages: AsyncIterable<unknown>;
  /**
   * The window's complete targets, in `tables` order, once `pages` is exhausted (the loader asks
   * again when it falls back to loading them from the start).
   */
  targets(): LoadWindowTarget[];
}

/** The lines a table's pages gave since the previous take. */
export interface LiveFeed {
  /**
   * Undefined once the lines are no longer in the declared columns' order (then the load stops
   * copying).
   */
  take(): LiveLines | undefined;
}

export interface LiveLines {
  lines: number;
  /** The lines' bytes (whole lines); `into` as in CopyTextSegment.chunks. */
  chunks: (into?: Buffer) => AsyncIterable<Uint8Array>;
}

export interface TableLoadResult {
  /** `schema.name` */
  table: string;
  inserted: number;
  updated: number;
  unchanged: number;
  deleted: number;
  rejected: number;
  /** Records loaded into this table: one per natural key of the source (duplicates are rejects). */
  staged: number;
  /**
   * Records of the source whose natural key a later record of it repeats: each is a reject
   * (LOAD_DUPLICATE_KEY, counted in `rejected`), the later record is the one loaded.
   */
  duplicates: number;
  columnsAdded: string[];
}

export interface LoadWindowResult {
  tables: TableLoadResult[];
  /** Records accepted into the tables (staged), over all targets. */
  rowsLoaded: number;
  /** Records written to etl.rejects (parser rejects and loader rejects). */
  rowsRejected: number;
  /**
   * With LoadWindowOptions.state: what the load left in its tables (none when rows written beside
   * the load make that uncertain).
   */
  state?: LoadedState;
  /** True when the tables held exactly what this load would leave, so it wrote nothing (see `state`). */
  unchanged?: boolean;
}

/**
 * What a window's load left in its tables, to tell later that they still hold exactly that: a
 * re-load of the same bytes would then write nothing (unchangedSince).
 */
export interface LoadedState {
  tables: {
    /** `schema.name` */
    table: string;
    source: string;
    /** The table's columns after the load, `name type` in order. */
    columns: string[];
    /** Rows of the table whose `_source` is the source (after the load). */
    owned: number;
    /** Records staged for the table, duplicates of a key included. */
    staged: number;
    rejected: number;
  }[];
  /** The window's rows in etl.rejects. */
  rejected: number;
  /**
   * The transactions and subtransactions (xid8, in decimal) whose writes the sources' rows are,
   * as the load left them: every row version carries its writer's id (`xmin`), so a row written
   * or changed by anything since carries another. A re-load that leaves a row as it was keeps
   * that row's earlier writer.
   */
  writers: string[];
}

export const DEFAULT_REJECT_THRESHOLD = 0.01;
