/**
 * A window loaded from the one-time report of its backfill chunk (extract/one-time-reports.ts),
 * when no subscription report covers it; the report's job (src/queue/chunk-jobs.ts) creates and
 * follows the report while the window's job waits in the queue.
 */
import { createReadStream } from 'node:fs';
import { basename } from 'node:path';
import { checkReportHead, readReportHead } from '../../extract/report-identity.js';
import {
  PERIOD_FIELDS,
  chunkOfWindow,
  filterToWindow,
  oneTimeReportName,
} from '../../extract/one-time-reports.js';
import { CybsError } from '../../errors.js';
import {
  isFinalOneTimeStatus,
  oneTimeReportsCovering,
  requestOneTimeReport,
} from '../../state/one-time-reports.js';
import type { OneTimeReportRow } from '../../state/one-time-reports.js';
import { openCsvReport } from '../../parse/csv/csv-report.js';
import type { RecordSource } from '../../parse/records.js';
import { midnightDaily } from '../../time/report-periods.js';
import type { ReportPipelineDef } from '../define-pipeline.js';
import { toLoadSource } from '../../load/report-sources.js';
import type { WindowResult, WindowTask } from '../run-pipelines.js';
import { openXmlFileTargets } from '../xml-load-targets.js';
import { commitWindow, commitNoData } from './commit.js';
import type { ExecutorDeps } from './commit.js';

/**
 * The one-time fallback rule: during a backfill, a window of a report definition whose rows can be
 * cut into windows, for which the search finds no subscription report although the window ended
 * longer ago than the not-ready horizon (the report will not come: the subscription did not exist
 * yet, or the service never generated it).
 */
export function oneTimeApplies(deps: ExecutorDeps, task: WindowTask, def: ReportPipelineDef): boolean {
  const oneTime = deps.oneTimeReports;
  if (!oneTime || !task.oneTime || !oneTime.supports(def.reportDefinitionName)) return false;
  const horizonMs = task.pipeline.notReadyHorizonHours * 3_600_000;
  return task.window.end.getTime() + horizonMs <= oneTime.now().getTime();
}

/**
 * Load a window from the one-time report that covers it (etl.one_time_reports): only the rows whose
 * period field lies in the window, under the same `_source` a subscription report of the window
 * would have, so that a later load from a subscription report replaces these rows instead of adding
 * to them. While no covering report is ready, the window asks for its chunk's report (or waits for
 * the covering one on its way) and is `waiting`: its job waits in the queue, not in a worker.
 */
export async function executeOneTimeWindow(
  deps: ExecutorDeps,
  task: WindowTask,
  def: ReportPipelineDef,
  reportName: string,
  organizationId: string | undefined,
): Promise<WindowResult> {
  const reports = deps.oneTimeReports!;
  const oneTime = task.oneTime!;
  const db = deps.warehouse.db;
  const ref = { pipeline: task.pipeline.name, organizationId: task.window.organizationId };
  const covering = await oneTimeReportsCovering(db, ref, task.window);
  const ready = covering.find((r) => r.status === 'COMPLETED' || r.status === 'NO_DATA');
  if (!ready) {
    let pending = covering.find((r) => !isFinalOneTimeStatus(r.status));
    // A report the service failed, or one cybs-etl gave up on since this window's job was queued.
    const failed = covering.find(
      (r) => r.status === 'ERROR' || (r.status === 'FAILED' && r.updatedAt >= oneTime.queuedAt),
    );
    if (!pending && failed) throw oneTimeFailure(failed);
    if (!pending) {
      const schedule = task.pipeline.reportSchedule ?? midnightDaily(task.pipeline.timeZone);
      const chunk = chunkOfWindow(task.window, schedule, oneTime.range, reports.now());
      pending = await requestOneTimeReport(
        db,
        {
          ...ref,
          reportName: oneTimeReportName(task.pipeline.name, task.window.organizationId, chunk),
          start: chunk.start,
          end: chunk.end,
        },
        oneTime.queuedAt,
      );
    }
    return {
      kind: 'waiting',
      message: `waiting for one-time report ${pending.reportName} (${pending.status}); the window is loaded once the report is ready`,
      report: {
        pipeline: task.pipeline.name,
        organizationId: task.window.organizationId,
        reportDefinitionName: def.reportDefinitionName,
        subscriptionName: reportName,
        timeZone: task.pipeline.timeZone,
        ...(organizationId ? { organizationParam: organizationId } : {}),
        reportName: pending.reportName,
        start: pending.start.toISOString(),
        end: pending.end.toISOString(),
      },
    };
  }
  const source = `${reportName}/${task.window.reportRef}`;
  const sourceRef = `${source} (one-time report ${ready.reportName}, ${ready.reportId})`;
  if (ready.status === 'NO_DATA') {
    return commitNoData(deps, task, def, source, sourceRef);
  }
  const file = {
    reportName: ready.reportName,
    reportId: ready.reportId ?? '',
    start: ready.start,
    end: ready.end,
    mimeType: ready.mimeType,
    timeZone: ready.timeZone ?? task.pipeline.timeZone,
    organizationParam: organizationId,
  };
  return reports.withFile(file, task.signal, async (result) => {
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
  });
}

/** A covering one-time report that ended in ERROR at the service, or that cybs-etl gave up on. */
function oneTimeFailure(report: OneTimeReportRow): CybsError {
  const context = { reportName: report.reportName, reportId: report.reportId };
  if (report.status === 'ERROR') {
    return new CybsError(
      'EXTRACT_ONE_TIME_ERROR',
      `one-time report "${report.reportName}" (${report.reportId ?? 'no id'}) ended in ERROR at the service${report.message ? `: ${report.message}` : ''}; its windows are failed`,
      { stage: 'extract', context },
    );
  }
  return new CybsError(
    'EXTRACT_ONE_TIME_FAILED',
    `one-time report "${report.reportName}" was given up on: ${report.message ?? 'its job failed'}; run the backfill again to ask for it again`,
    { stage: 'extract', context },
  );
}
