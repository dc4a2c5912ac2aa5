/**
 * A subscription report's window: find the period's report, download it once (read while it
 * downloads when large), and load it through the one choice of fast path or row by row
 * (report-file.ts); a window no report covers during a backfill falls back to a one-time report.
 */
import { Readable } from 'node:stream';
import type { FileDigest } from '../../spool/file-digest.js';
import { ByteSpool } from '../../spool/byte-spool.js';
import { releaseBuffer } from '../../spool/release-buffer.js';
import type { DownloadReportParams } from '../../api/types.js';
import { CybsError } from '../../errors.js';
import { findReport } from '../../extract/find-report.js';
import { followDownload, isDownloadRestarted } from '../../extract/followed-download.js';
import { REPORT_HEAD_BYTES, checkReportHead, reportHeadComplete } from '../../extract/report-identity.js';
import type { ExpectedReport } from '../../extract/report-identity.js';
import { tablesUnchangedSinceLoad } from '../../load/window/load-window.js';
import { declarationDigest, lastLoad } from '../fingerprint.js';
import type { ReportPipelineDef } from '../define-pipeline.js';
import type { WindowResult, WindowTask } from '../run-pipelines.js';
import { xmlTableSources } from '../xml-load-targets.js';
import { loadReportFile } from './report-file.js';
import { windowIdentity, commitWindow, commitNoData, withSpoolDir } from './commit.js';
import type { ExecutorDeps, FileLoad } from './commit.js';
import { oneTimeApplies, executeOneTimeWindow } from './one-time.js';

export async function executeReportWindow(
  deps: ExecutorDeps,
  task: WindowTask,
  def: ReportPipelineDef,
): Promise<WindowResult> {
  const reportName = task.pipeline.reportName ?? def.defaultReportName;
  const organizationId = deps.organizationParam(task.window.organizationId);
  // Woken by the one-time report it waited for: the search found no subscription report before.
  if (task.oneTime?.waitingFor && oneTimeApplies(deps, task, def)) {
    return executeOneTimeWindow(deps, task, def, reportName, organizationId);
  }
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
  // Whether the table still holds what the last load left (for CSV: but for a few rows, which a
  // re-load of the same file reads again alone), asked while the file downloads: when it does not,
  // a re-load of even the same file reads it whole, and need not wait for its end.
  const tables = found.format === 'xml' ? xmlTableSources(def, source) : [{ table: def.table, source }];
  const tablesUnchanged =
    expected && previous
      ? tablesUnchangedSinceLoad(
          deps.warehouse,
          windowIdentity(task),
          tables,
          previous,
          found.format === 'csv',
        ).catch(() => true)
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
        read: (options) => bytes.read(options),
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
  /**
   * The bytes from the start: as they arrive for the first reader, from the complete file after.
   * `inTurn`: the reader is done with each chunk before it asks for the next (a chunk's buffer may
   * then hold the next one).
   */
  read(options?: { inTurn?: boolean }): AsyncIterable<Buffer>;
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
  return withSpoolDir(async (dir) => {
    // In memory while small (most windows' files), in a file of the window's directory beyond.
    const spool = new ByteSpool(dir, report.fileName);
    // Only a large file is read while it downloads: a small one gains nothing measurable, and
    // overlapping the small files of several windows at once raises the process's peak RSS.
    const download = followDownload(deps.client, params, spool, {
      signal: task.signal,
      readSize,
      startAfter: FOLLOW_AFTER_BYTES,
      expected: expected?.digest,
    });
    // Every reader gets the bytes once their head is known to be the window's report (checkReportHead).
    let headChecked: Promise<void> | undefined;
    const checkFileHead = () =>
      (headChecked ??= readHead(spool).then((head) => checkReportHead(head, report)));
    /** The download is complete and its head is the window's report. */
    const downloaded = async () => {
      await download.done;
      await checkFileHead();
    };
    const complete = async () => {
      await downloaded();
      return Readable.from(spool.read(0, spool.bytes, readSize), { objectMode: false });
    };
    async function* fromFile(options?: { inTurn?: boolean }): AsyncGenerator<Buffer> {
      await downloaded();
      // Read in turn, every read of a file goes into one buffer instead of a new one per read.
      const into = options?.inTurn === true && spool.spilled ? Buffer.allocUnsafeSlow(readSize) : undefined;
      yield* spool.read(0, spool.bytes, readSize, into);
      // Asked for more after the last chunk: the reader is done with the buffer.
      releaseBuffer(into);
    }
    async function* followed(options?: { inTurn?: boolean }): AsyncGenerator<Buffer> {
      const held: Buffer[] = [];
      let checked = headChecked !== undefined;
      for await (const chunk of download.chunks(options)) {
        if (checked) {
          yield chunk;
          continue;
        }
        // The head is most often whole in the first chunk, which is then checked as it is.
        const head = held.length === 0 ? chunk : Buffer.concat([...held, chunk]);
        if (!reportHeadComplete(head, report.format, false)) {
          // Copied when read in turn: the buffer of the next read overwrites this chunk.
          held.push(options?.inTurn === true ? Buffer.from(chunk) : chunk);
          continue;
        }
        checkReportHead(head, report);
        checked = true;
        yield* held.splice(0);
        yield chunk;
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
          read: (options) => (following ? fromFile(options) : ((following = true), followed(options))),
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

/** The first REPORT_HEAD_BYTES of a complete download (all of it when shorter). */
async function readHead(spool: ByteSpool): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of spool.read(0, Math.min(spool.bytes, REPORT_HEAD_BYTES))) parts.push(part);
  return Buffer.concat(parts);
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
