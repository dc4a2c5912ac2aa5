/**
 * What every kind of window shares: the executor's dependencies, and committing a window's load
 * with its state (etl.windows) in one transaction, an empty load for a report without data, the
 * spools of a window's data.
 */
import type { FileDigest } from '../../spool/file-digest.js';
import type { ReportingClient } from '../../api/reporting-client.js';
import type { OneTimeReports } from '../../extract/one-time-reports.js';
import { inWindowTransaction, loadWindowIn } from '../../load/window/load-window.js';
import type {
  LiveLoad,
  LoadedState,
  LoadWindowOptions,
  LoadWindowResult,
} from '../../load/window/load-window.js';
import type { LoadSource, TableDecl } from '../../load/table-spec.js';
import type { Db, Warehouse } from '../../warehouse/warehouse.js';
import type { Logger } from '../../observability/logger.js';
import type { Metrics } from '../../observability/metrics.js';
import { completeWindow } from '../../state/windows.js';
import { loaderId } from '../fingerprint.js';
import type { OnDemandPageDigests, WindowFingerprint } from '../fingerprint.js';
import type { ReportPipelineDef } from '../define-pipeline.js';
import { SpoolDir } from '../../spool/byte-spool.js';
import { declaredColumns } from '../../load/report-sources.js';
import type { WindowResult, WindowTask } from '../run-pipelines.js';

export interface ExecutorDeps {
  warehouse: Warehouse;
  client: ReportingClient;
  logger: Logger;
  metrics?: Metrics;
  /**
   * The organizationId query parameter for an organization: only a partner acting for a merchant
   * sends it; a merchant's own credential names its organization (undefined).
   */
  organizationParam: (organizationId: string) => string | undefined;
  /** Backfill only: one-time reports for windows that no subscription report covers. */
  oneTimeReports?: OneTimeReports;
}

/** The window a task loads, as the loader and the windows table name it. */
export function windowIdentity(task: WindowTask) {
  return {
    pipeline: task.pipeline.name,
    organizationId: task.window.organizationId,
    windowKey: task.window.windowKey,
  };
}

/** Load the given sources as the window, and mark the window loaded (or no_data) in the same transaction. */
export function commitWindow(
  deps: ExecutorDeps,
  task: WindowTask,
  targets: { table: TableDecl; source: LoadSource }[],
  sourceRef: string,
  noData: boolean,
  file?: FileLoad,
): Promise<WindowResult> {
  return commitLoad(deps, task, { targets, ...(file ? { file } : {}) }, () => ({ sourceRef, noData }));
}

/**
 * A window loaded from a report file (or from on-demand pages, whose spooled sections stand for
 * the file): its fingerprint (src/pipeline/fingerprint.ts) is kept with the window, and a load of
 * the very data the last one read (`same`) writes nothing when the tables hold what it left.
 */
export interface FileLoad {
  /** What the window's last load left (from its fingerprint). */
  previous: LoadedState | undefined;
  /** The file is the one the last load read (same digest, same loader and declaration). */
  same: boolean;
  /** The file's digest, once it is downloaded. */
  digest: () => Promise<FileDigest>;
  declaration: string;
  /** An on-demand window's pages as received (WindowFingerprint.pages), once read. */
  pages?: () => OnDemandPageDigests | undefined;
}

/**
 * commitWindow for any load: `outcome` (what etl.windows records) is read once the data is in,
 * so a fetch inside the load (`live`) can tell it.
 */
export async function commitLoad(
  deps: ExecutorDeps,
  task: WindowTask,
  data: {
    targets: { table: TableDecl; source: LoadSource }[];
    live?: LiveLoad;
    file?: FileLoad;
    fullTargets?: LoadWindowOptions['fullTargets'];
  },
  outcome: () => { sourceRef: string; noData: boolean },
): Promise<WindowResult> {
  const ref = windowIdentity(task);
  const file = data.file;
  const options: LoadWindowOptions = {
    window: ref,
    targets: data.targets,
    ...(data.live ? { live: data.live } : {}),
    ...(data.fullTargets ? { fullTargets: data.fullTargets } : {}),
    ...(file ? { state: { previous: file.previous, skipIfUnchanged: file.same } } : {}),
    runId: task.runId,
    rejectThreshold: task.pipeline.rejectThreshold,
    schemaChanges: task.pipeline.schemaChanges,
    logger: deps.logger,
  };
  // The load, then the window's state and the queue's job, in one transaction.
  const result = await inWindowTransaction(deps.warehouse, options, async (tx) => {
    const loaded = await loadWindowIn(tx, options);
    await recordLoad(tx.trx, task, loaded, outcome(), file);
    return loaded;
  });
  if (outcome().noData || result.rowsLoaded + result.rowsRejected === 0) return { kind: 'no_data' };
  return {
    kind: 'loaded',
    rowsLoaded: result.rowsLoaded,
    rowsRejected: result.rowsRejected,
    ...(result.unchanged ? { unchanged: true } : {}),
  };
}

/**
 * What a window's load records in its transaction: the window's row (completeWindow: status,
 * counts, fingerprint) and, through WindowTask.beforeCommit, the queue's job.
 */
async function recordLoad(
  trx: Db,
  task: WindowTask,
  r: LoadWindowResult,
  outcome: { sourceRef: string; noData: boolean },
  file: FileLoad | undefined,
): Promise<void> {
  const counts = { inserted: 0, updated: 0, unchanged: 0, deleted: 0 };
  for (const t of r.tables) {
    counts.inserted += t.inserted;
    counts.updated += t.updated;
    counts.unchanged += t.unchanged;
    counts.deleted += t.deleted;
  }
  const status = outcome.noData || r.rowsLoaded + r.rowsRejected === 0 ? 'no_data' : 'loaded';
  const pages = file?.pages?.();
  await completeWindow(trx, windowIdentity(task), task.claim, {
    status,
    rowsLoaded: r.rowsLoaded,
    rowsRejected: r.rowsRejected,
    counts,
    sourceRef: outcome.sourceRef,
    fingerprint:
      file && r.state
        ? ({
            version: 1,
            loader: loaderId(),
            declaration: file.declaration,
            file: await file.digest(),
            load: r.state,
            ...(pages ? { pages } : {}),
          } satisfies WindowFingerprint)
        : null,
  });
  await task.beforeCommit?.(
    trx,
    status === 'no_data'
      ? { kind: 'no_data' }
      : {
          kind: 'loaded',
          rowsLoaded: r.rowsLoaded,
          rowsRejected: r.rowsRejected,
          unchanged: r.unchanged === true,
        },
  );
}

async function* noBatches() {}

/**
 * A report window the service says has no data: commit an empty load of its source, which also
 * removes the rows an earlier version of that same report had written, and mark the window no_data.
 */
export function commitNoData(
  deps: ExecutorDeps,
  task: WindowTask,
  def: ReportPipelineDef,
  source: string,
  sourceRef: string,
): Promise<WindowResult> {
  const empty = {
    kind: 'records' as const,
    source,
    columns: declaredColumns(def.table),
    batches: noBatches(),
  };
  return commitWindow(deps, task, [{ table: def.table, source: empty }], sourceRef, true);
}

/**
 * Run `fn` with the window's spools (SpoolDir: held in memory while small; a temporary directory,
 * made at the first file, when large), given back and removed afterwards whatever happens.
 */
export async function withSpoolDir<T>(fn: (dir: SpoolDir) => Promise<T>): Promise<T> {
  const dir = new SpoolDir();
  try {
    return await fn(dir);
  } finally {
    await dir.remove();
  }
}
