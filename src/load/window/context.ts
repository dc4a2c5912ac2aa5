/**
 * The state one window's load carries from table to table (WindowContext), what each table's
 * load knows of a source column (StagedColumn) and of its target once made ready (TargetCopy).
 */
import type { CellEncoder } from '../../copy-text/cell-encoders.js';
import { CybsError, errorMessage } from '../../errors.js';
import { LOAD_ERROR_CODES } from '../../warehouse/database-errors.js';
import type { Db, WarehouseSession } from '../../warehouse/warehouse.js';
import type { ExistingColumn } from '../ddl.js';
import type { TableDecl } from '../table-spec.js';
import type { RejectWriter } from './rejects.js';
import type { LoadWindowOptions } from './types.js';

export interface WindowContext {
  options: LoadWindowOptions;
  session: WarehouseSession;
  rejects: RejectWriter;
  rowsLoaded: number;
  /** An error raised while producing COPY data (source failure, reject cap): it wins over the database's. */
  abort: unknown;
  /** The 32-bit ids (decimal) of the (sub)transactions this load wrote rows with (see LoadedState.writers). */
  writers: Set<string>;
  /** With LoadWindowOptions.state: the snapshot taken as the load began (pg_snapshot text). */
  snapshot: string;
  /** With LoadWindowOptions.state: this transaction's id (xid8), taken with the snapshot. */
  xid?: bigint;
  /** Each source's number in etl.sources (decimal), taken as the load began (takeSourceKeys). */
  sourceKeys: Map<string, string>;
  /** The sources that had no number before this load took one: no table has rows of them yet. */
  newSources: ReadonlySet<string>;
  /**
   * For the tables that existed as the load began, by `schema.name`: whether their `_loaded_at`
   * defaults to now() (see isFirstLoad).
   */
  loadedAtNow: ReadonlyMap<string, boolean>;
  /**
   * The index statements of the tables this transaction created, or whose indexes it dropped while
   * they held no row (deferIndexesOfEmptyTables), deferred until their first rows are in
   * (buildDeferredIndexes), by `schema.name`.
   */
  deferredIndexes: Map<string, string[]>;
  /**
   * The columns of the tables this load writes, by `schema.name`: as read when the load began
   * (tables that existed then), and as the load found or made them once it has prepared a table.
   */
  tableColumns: Map<string, readonly ExistingColumn[]>;
  /**
   * The TEMP staging tables made in this transaction (ensureStaging), made only when rows go
   * through them; forgotten at a rollback to a savepoint, which may have taken them back.
   */
  stagingMade: Set<string>;
}

export interface StagedColumn {
  /** Source (and table) column name. */
  name: string;
  sourceType: string;
  tableType: string;
  encoder: CellEncoder;
}

/** A target made ready for its source (prepareTarget): where and how its rows are copied. */
export interface TargetCopy {
  ctx: WindowContext;
  trx: Db;
  decl: TableDecl;
  staged: StagedColumn[];
  /** The target's TEMP staging table (in pg_temp). */
  stagingName: string;
  /** Some source column's type is of another family than the table column's: values need checking. */
  drift: boolean;
}

export function sourceError(error: unknown, table: string, source: string): CybsError {
  if (error instanceof CybsError) return error;
  return new CybsError(
    LOAD_ERROR_CODES.sourceFailed,
    `Reading source ${source} for ${table} failed: ${errorMessage(error)}. Nothing of the window was committed.`,
    { stage: 'load', cause: error, context: { table, source } },
  );
}
