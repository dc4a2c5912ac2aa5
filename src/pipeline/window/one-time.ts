/**
 * A window loaded from the one-time report of its backfill chunk (extract/one-time-reports.ts),
 * when no subscription report covers it.
 */
import { createReadStream } from 'node:fs';
import { basename } from 'node:path';
import { checkReportHead, readReportHead } from '../../extract/report-identity.js';
import { PERIOD_FIELDS, filterToWindow } from '../../extract/one-time-reports.js';
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
  if (!oneTime || !oneTime.supports(def.reportDefinitionName)) return false;
  const horizonMs = task.pipeline.notReadyHorizonHours * 3_600_000;
  return task.window.end.getTime() + horizonMs <= oneTime.now().getTime();
}

/**
 * Load a window from the one-time report of its chunk: only the rows whose period field lies in
 * the window, under the same `_source` a subscription report of the window would have, so that a
 * later load from a subscription report replaces these rows instead of adding to them.
 */
export async function executeOneTimeWindow(
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
