import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Readable } from 'node:stream';
import { sameDigest } from '../spool/file-digest.js';
import type { FileDigest } from '../spool/file-digest.js';
import type { ReportingClient } from '../api/reporting-client.js';
import type { DownloadReportParams } from '../api/types.js';
import { CybsError } from '../errors.js';
import { findReport } from '../extract/find-report.js';
import { followDownload, isDownloadRestarted } from '../extract/followed-download.js';
import { fetchOnDemandBodies } from '../extract/on-demand-pages.js';
import { checkReportHead, readReportHead, reportHeadComplete } from '../extract/report-identity.js';
import type { ExpectedReport } from '../extract/report-identity.js';
import { PERIOD_FIELDS, filterToWindow } from '../extract/one-time-reports.js';
import type { OneTimeReports } from '../extract/one-time-reports.js';
import { loadWindow, tablesUnchangedSinceLoad } from '../load/window/load-window.js';
import type { LiveLoad, LoadedState, LoadWindowResult } from '../load/window/load-window.js';
import type { LoadSource, TableDecl } from '../load/table-spec.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { openCsvReport } from '../parse/csv/csv-report.js';
import type { RecordSource } from '../parse/records.js';
import { completeWindow } from '../state/windows.js';
import { midnightDaily } from '../time/report-periods.js';
import { declarationDigest, lastLoad, loaderId } from './fingerprint.js';
import type { WindowFingerprint } from './fingerprint.js';
import type { OnDemandPipelineDef, ReportPipelineDef } from './define-pipeline.js';
import { OnDemandSpools } from './on-demand-spools.js';
import { makeSpoolDir, spoolFilePath } from '../spool/spool-dirs.js';
import { declaredColumns, toLoadSource } from './record-source.js';
import type { WindowExecutor, WindowResult, WindowTask } from './run-pipelines.js';
import { openXmlFileTargets, xmlTableSources } from './xml-load-targets.js';
import { loadReportFile } from './window/report-file.js';

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

/** extract → parse → load of one window; rows and window state commit in one transaction. */
export function createWindowExecutor(deps: ExecutorDeps): WindowExecutor {
  return async (task) => {
    const started = performance.now();
    let outcome = 'failed';
    try {
      const result =
        task.pipeline.def.kind === 'report'
          ? await executeReportWindow(deps, task, task.pipeline.def)
          : await executeOnDemandWindow(deps, task, task.pipeline.def);
      outcome = result.kind;
      if (result.kind === 'loaded') {
        deps.metrics?.rowsLoaded.inc({ pipeline: task.pipeline.name }, result.rowsLoaded);
        deps.metrics?.rowsRejected.inc({ pipeline: task.pipeline.name }, result.rowsRejected);
      }
      return result;
    } finally {
      deps.metrics?.windows.inc({ pipeline: task.pipeline.name, outcome });
      deps.metrics?.windowDuration.observe(
        { pipeline: task.pipeline.name, outcome },
        (performance.now() - started) / 1000,
      );
    }
  };
}

/** The window a task loads, as the loader and the windows table name it. */
function windowIdentity(task: WindowTask) {
  return {
    pipeline: task.pipeline.name,
    organizationId: task.window.organizationId,
    windowKey: task.window.windowKey,
  };
}

/** Load the given sources as the window, and mark the window loaded (or no_data) in the same transaction. */
function commitWindow(
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
interface FileLoad {
  /** What the window's last load left (from its fingerprint). */
  previous: LoadedState | undefined;
  /** The file is the one the last load read (same digest, same loader and declaration). */
  same: boolean;
  /** The file's digest, once it is downloaded. */
  digest: () => Promise<FileDigest>;
  declaration: string;
}

/**
 * commitWindow for any load: `outcome` (what etl.windows records) is read once the data is in,
 * so a fetch inside the load (`live`) can tell it.
 */
async function commitLoad(
  deps: ExecutorDeps,
  task: WindowTask,
  data: { targets: { table: TableDecl; source: LoadSource }[]; live?: LiveLoad; file?: FileLoad },
  outcome: () => { sourceRef: string; noData: boolean },
): Promise<WindowResult> {
  const ref = windowIdentity(task);
  const file = data.file;
  const result: LoadWindowResult = await loadWindow(deps.warehouse, {
    window: ref,
    targets: data.targets,
    ...(data.live ? { live: data.live } : {}),
    ...(file ? { state: { previous: file.previous, skipIfUnchanged: file.same } } : {}),
    runId: task.runId,
    rejectThreshold: task.pipeline.rejectThreshold,
    schemaChanges: task.pipeline.schemaChanges,
    logger: deps.logger,
    beforeCommit: async (trx, r) => {
      const counts = { inserted: 0, updated: 0, unchanged: 0, deleted: 0 };
      for (const t of r.tables) {
        counts.inserted += t.inserted;
        counts.updated += t.updated;
        counts.unchanged += t.unchanged;
        counts.deleted += t.deleted;
      }
      const { sourceRef, noData } = outcome();
      const status = noData || r.rowsLoaded + r.rowsRejected === 0 ? 'no_data' : 'loaded';
      await completeWindow(trx, ref, task.claim, {
        status,
        rowsLoaded: r.rowsLoaded,
        rowsRejected: r.rowsRejected,
        counts,
        sourceRef,
        fingerprint:
          file && r.state
            ? ({
                version: 1,
                loader: loaderId(),
                declaration: file.declaration,
                file: await file.digest(),
                load: r.state,
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
    },
  });
  if (outcome().noData || result.rowsLoaded + result.rowsRejected === 0) return { kind: 'no_data' };
  return {
    kind: 'loaded',
    rowsLoaded: result.rowsLoaded,
    rowsRejected: result.rowsRejected,
    ...(result.unchanged ? { unchanged: true } : {}),
  };
}

async function* noBatches() {}

/**
 * A report window the service says has no data: commit an empty load of its source, which also
 * removes the rows an earlier version of that same report had written, and mark the window no_data.
 */
function commitNoData(
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

async function executeReportWindow(
  deps: ExecutorDeps,
  task: WindowTask,
  def: ReportPipelineDef,
): Promise<WindowResult> {
  const reportName = task.pipeline.reportName ?? def.defaultReportName;
  const organizationId = deps.organizationParam(task.window.organizationId);
  const found = await findReport(deps.client, {
    reportName,
    ...(organizationId ? { organizationId } : {}),
    window: {
      start: task.window.start,
      end: task.window.end,
      reportDate: task.window.reportRef.slice(0, 10),
    },
    signal: task.signal,
  });
  if (found.kind === 'not_ready') {
    if (found.status === 'NOT_FOUND' && oneTimeApplies(deps, task, def)) {
      return executeOneTimeWindow(deps, task, def, reportName, organizationId);
    }
    return { kind: 'not_ready', message: found.message };
  }
  if (found.kind === 'error') {
    throw new CybsError('EXTRACT_REPORT_ERROR', found.message, { stage: 'extract', context: { reportName } });
  }
  // The same source for a report with data and without: a NO_DATA answer must clear this report's
  // rows (if an earlier version had some), never those of the previous period's report.
  const source = `${reportName}/${task.window.reportRef}`;
  if (found.kind === 'no_data') {
    return commitNoData(deps, task, def, source, source);
  }
  const params = {
    reportName,
    reportDate: found.reportDate,
    // The search result's link names this very report (its reportTime among several a day).
    ...(found.href ? { href: found.href } : {}),
    accept: found.format === 'xml' ? ('application/xml' as const) : ('text/csv' as const),
    ...(organizationId ? { organizationId } : {}),
  };
  const fileName = `${reportName}_${task.window.reportRef.replace(/:/g, '')}.${found.format}`;
  const sourceRef = `${source} (report ${found.report.reportId})`;
  // The CSV scanner reads 256 KiB at a time best; the XML scanner slows down with more than the
  // default 64 KiB.
  const readSize = found.format === 'csv' ? 256 * 1024 : 64 * 1024;
  const declaration = declarationDigest(def);
  const { previous, expected } = lastLoad(task.state.fingerprint, declaration);
  // Whether the table still holds what the last load left, asked while the file downloads: when it
  // does not, a re-load of even the same file cannot be recognised, and need not wait for its end.
  const tables = found.format === 'xml' ? xmlTableSources(def, source) : [{ table: def.table, source }];
  const tablesUnchanged =
    expected && previous
      ? tablesUnchangedSinceLoad(deps.warehouse, windowIdentity(task), tables, previous).catch(() => true)
      : undefined;
  const expectation = expected ? { digest: expected, tablesUnchanged } : undefined;
  // The body must be this window's report: its organization, report name and period.
  const report: ExpectedReport = {
    format: found.format,
    fileName,
    reportDefinition: def.reportDefinitionName,
    organizationId: task.window.organizationId,
    reportName,
    start: task.window.start,
    end: task.window.end,
    timeZone: task.pipeline.timeZone,
  };
  return withDownloadedBytes(deps, task, params, report, readSize, expectation, async (bytes) => {
    const file: FileLoad = { previous, same: bytes.same, digest: bytes.digest, declaration };
    return loadReportFile(
      def,
      {
        format: found.format,
        fileName,
        source,
        requireFinalLineBreak: true,
        read: () => bytes.read(),
        complete: () => bytes.complete(),
      },
      (targets) => commitWindow(deps, task, targets, sourceRef, false, file),
      deps.logger.child({ pipeline: task.pipeline.name, windowKey: task.window.windowKey }),
    );
  });
}

/** A report file is read while it downloads once this much of it has arrived (see withDownloadedBytes). */
const FOLLOW_AFTER_BYTES = 32 * 1024 * 1024;

/** A report file's bytes, for each reader that needs them (see withDownloadedBytes). */
interface DownloadedBytes {
  /** The bytes from the start: as they arrive for the first reader, from the complete file after. */
  read(): AsyncIterable<Buffer>;
  /** The complete file from its start, once downloaded. */
  complete(): Promise<Readable>;
  /** Whether the file is of the bytes expected (see withDownloadedBytes); known before `use` runs. */
  same: boolean;
  /** The complete file's digest, once downloaded. */
  digest(): Promise<FileDigest>;
}

/**
 * Download a report file once, so that the fast path and, if it refuses the file, the per-row path
 * read exactly the same bytes. The first reader of a large file (FOLLOW_AFTER_BYTES) starts on the
 * bytes as they arrive: a fast-path load copies while the file downloads, so a window takes about
 * as long as the longer of the two instead of their sum (from a distant service, the whole parse
 * and COPY hide behind the transfer). When the transfer breaks and starts over, the load that was
 * reading it is rolled back (its error) and `use` runs again on the complete file.
 */
async function withDownloadedBytes(
  deps: ExecutorDeps,
  task: WindowTask,
  params: DownloadReportParams,
  report: ExpectedReport,
  readSize: number,
  expected: { digest: FileDigest; tablesUnchanged: Promise<boolean> | undefined } | undefined,
  use: (bytes: DownloadedBytes) => Promise<WindowResult>,
): Promise<WindowResult> {
  return withTempDir(async (dir) => {
    const path = spoolFilePath(dir, report.fileName);
    // Only a large file is read while it downloads: a small one gains nothing measurable, and
    // overlapping the small files of several windows at once raises the process's peak RSS.
    const download = followDownload(deps.client, params, path, {
      signal: task.signal,
      readSize,
      startAfter: FOLLOW_AFTER_BYTES,
      expected: expected?.digest,
    });
    // Every reader gets the bytes once their head is known to be the window's report (checkReportHead).
    let headChecked: Promise<void> | undefined;
    const checkFileHead = () =>
      (headChecked ??= readReportHead(path).then((head) => checkReportHead(head, report)));
    const complete = async () => {
      await download.done;
      await checkFileHead();
      return createReadStream(path, { highWaterMark: readSize });
    };
    async function* fromFile(): AsyncGenerator<Buffer> {
      for await (const chunk of await complete()) yield chunk as Buffer;
    }
    async function* followed(): AsyncGenerator<Buffer> {
      const held: Buffer[] = [];
      let checked = headChecked !== undefined;
      for await (const chunk of download.chunks()) {
        if (checked) {
          yield chunk;
          continue;
        }
        held.push(chunk);
        const head = Buffer.concat(held);
        if (!reportHeadComplete(head, report.format, false)) continue;
        checkReportHead(head, report);
        checked = true;
        yield* held.splice(0);
      }
      if (!checked) {
        checkReportHead(Buffer.concat(held), report);
        yield* held;
      }
    }
    const digest = async () => (await download.done).digest;
    try {
      // A file expected to be the one the window was last loaded from is not read before that is
      // known: at its first block that differs, or once complete and the same (then the load may
      // write nothing at all), unless the tables no longer hold what that load left.
      const same =
        expected !== undefined &&
        (await sameFileUnlessTablesChanged(download.same, expected.tablesUnchanged));
      let following = false;
      try {
        return await use({
          read: () => (following ? fromFile() : ((following = true), followed())),
          complete,
          same,
          digest,
        });
      } catch (error) {
        if (!isDownloadRestarted(error)) throw error;
        return await use({ read: fromFile, complete, same, digest });
      }
    } finally {
      await download.stop();
      await expected?.tablesUnchanged;
    }
  });
}

/** Whether the file is the same (`same`), or false as soon as `tablesUnchanged` says false. */
function sameFileUnlessTablesChanged(
  same: Promise<boolean>,
  tablesUnchanged: Promise<boolean> | undefined,
): Promise<boolean> {
  if (tablesUnchanged === undefined) return same;
  return new Promise<boolean>((resolve) => {
    void tablesUnchanged.then((unchanged) => {
      if (!unchanged) resolve(false);
    });
    void same.then(resolve);
  });
}

/** Run `fn` with a fresh temporary directory, removed afterwards whatever happens. */
async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await makeSpoolDir();
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The one-time fallback rule: during a backfill, a window of a report definition whose rows can be
 * cut into windows, for which the search finds no subscription report although the window ended
 * longer ago than the not-ready horizon (the report will not come: the subscription did not exist
 * yet, or the service never generated it).
 */
function oneTimeApplies(deps: ExecutorDeps, task: WindowTask, def: ReportPipelineDef): boolean {
  const oneTime = deps.oneTimeReports;
  if (!oneTime || !oneTime.supports(def.reportDefinitionName)) return false;
  const horizonMs = task.pipeline.notReadyHorizonHours * 3_600_000;
  return task.window.end.getTime() + horizonMs <= oneTime.now().getTime();
}

/**
 * Load a window from the one-time report of its chunk: only the rows whose period field lies in
 * the window, under the same `_source` a subscription report of the window would have, so that a
 * later load from a subscription report replaces these rows instead of adding to them.
 */
async function executeOneTimeWindow(
  deps: ExecutorDeps,
  task: WindowTask,
  def: ReportPipelineDef,
  reportName: string,
  organizationId: string | undefined,
): Promise<WindowResult> {
  const result = await deps.oneTimeReports!.reportFor({
    pipeline: task.pipeline.name,
    reportDefinitionName: def.reportDefinitionName,
    subscriptionName: reportName,
    window: task.window,
    schedule: task.pipeline.reportSchedule ?? midnightDaily(task.pipeline.timeZone),
    timeZone: task.pipeline.timeZone,
    organizationParam: organizationId,
    signal: task.signal,
  });
  const source = `${reportName}/${task.window.reportRef}`;
  const sourceRef = `${source} (one-time report ${result.reportName}, ${result.reportId})`;
  if (result.kind === 'no_data') {
    return commitNoData(deps, task, def, source, sourceRef);
  }
  const options = { fileName: basename(result.path), report: def.reportDefinitionName };
  // The file must be the one-time report asked for: its organization, name and period.
  checkReportHead(await readReportHead(result.path), {
    format: result.format,
    fileName: options.fileName,
    reportDefinition: def.reportDefinitionName,
    organizationId: task.window.organizationId,
    reportName: result.reportName,
    start: result.start,
    end: result.end,
    timeZone: task.pipeline.timeZone,
  });
  const field = PERIOD_FIELDS[def.reportDefinitionName]!;
  const keepRejects = result.start.getTime() === task.window.start.getTime();
  const inWindow = (records: RecordSource) => filterToWindow(records, field, task.window, keepRejects);
  if (result.format === 'xml') {
    // The window's records, and the items of those records in the child tables.
    const open = () => Promise.resolve(createReadStream(result.path));
    const xml = await openXmlFileTargets(def, open, options, { records: inWindow, rejects: keepRejects });
    return commitWindow(deps, task, xml.targets(source), sourceRef, false);
  }
  const records = inWindow(await openCsvReport(createReadStream(result.path), options));
  return commitWindow(
    deps,
    task,
    [{ table: def.table, source: toLoadSource(records, source) }],
    sourceRef,
    false,
  );
}

async function executeOnDemandWindow(
  deps: ExecutorDeps,
  task: WindowTask,
  def: OnDemandPipelineDef,
): Promise<WindowResult> {
  const organizationId = deps.organizationParam(task.window.organizationId);
  const source = `${def.endpoint}/${task.window.start.toISOString()}..${task.window.end.toISOString()}`;
  return withTempDir((dir) => spoolAndLoadOnDemand(deps, task, def, organizationId, source, dir));
}

/**
 * All pages of an on-demand window, read once (purchase-refund-details pages from their bytes by
 * OnDemandPageScanner when it answers, others parsed) and spooled per section as COPY text (the
 * next page is fetched while the current one is read), fetched inside the window's load transaction:
 * on a first load, each page's lines are copied into the tables while the next page is fetched
 * and parsed (LoadWindowOptions.live); otherwise the spooled sections are loaded once complete.
 */
async function spoolAndLoadOnDemand(
  deps: ExecutorDeps,
  task: WindowTask,
  def: OnDemandPipelineDef,
  organizationId: string | undefined,
  source: string,
  dir: string,
): Promise<WindowResult> {
  const names = Object.keys(def.tables);
  const spools = new OnDemandSpools(dir, def, source);
  const fetchAll = async (pageDone: () => void) => {
    for await (const page of fetchOnDemandBodies(deps.client, def.endpoint, {
      window: task.window,
      ...(organizationId ? { organizationId } : {}),
      pageLimit: task.pipeline.pageLimit,
      signal: task.signal,
      scan: spools.scan,
    })) {
      await spools.write(page);
      pageDone();
    }
    await spools.close();
    return () => spools.targets();
  };
  // The spooled sections stand for the window's file: equal pages give equal spools.
  let digest: Promise<FileDigest> | undefined;
  const spoolDigest = () => (digest ??= Promise.resolve().then(() => spools.digest()));
  const declaration = declarationDigest(def);
  const outcome = () => ({
    sourceRef: `${source} (${spools.pages} page${spools.pages === 1 ? '' : 's'})`,
    noData: spools.pages === 0,
  });
  try {
    const { previous, expected } = lastLoad(task.state.fingerprint, declaration);
    if (previous !== undefined) {
      // A re-load (which copies nothing while paging): the pages are fetched and spooled before its
      // load transaction, so that the very pages of its last load can be recognised.
      const targets = await fetchAll(() => undefined);
      const spooled = await spoolDigest();
      const same = expected !== undefined && sameDigest(spooled, expected);
      const file: FileLoad = { previous, same, digest: spoolDigest, declaration };
      return await commitLoad(deps, task, { targets: targets(), file }, outcome);
    }
    const live: LiveLoad = {
      tables: names.map((name) => ({
        table: def.tables[name]!,
        columns: declaredColumns(def.tables[name]!),
        feed: spools.spools.get(name)!.feed,
      })),
      source,
      produce: fetchAll,
    };
    const file: FileLoad = { previous: undefined, same: false, digest: spoolDigest, declaration };
    return await commitLoad(deps, task, { targets: [], live, file }, outcome);
  } finally {
    await spools.close().catch(() => {});
  }
}
