/**
 * A report file (CSV or XML) into its tables: the ONE place that decides between the fast path
 * (the bytes checked on their way into COPY) and the row-by-row path (every record typed by the
 * parser), for `run` (a downloaded report) and `import` (a file on disk) alike. The fast path is
 * tried first; when it refuses the file, its transaction rolled back, the row-by-row path loads the
 * very same bytes.
 */
import type { Readable } from 'node:stream';
import { isFastPathRefusal } from '../../copy-text/fast-path-refusal.js';
import type { LoadWindowTarget } from '../../load/window/load-window.js';
import type { Logger } from '../../observability/logger.js';
import { openCsvReport } from '../../parse/csv/csv-report.js';
import { openRawCsvReport } from '../../parse/csv/raw-csv-report.js';
import { openRawXmlReport } from '../../parse/xml/raw-xml-report.js';
import type { ReportPipelineDef } from '../define-pipeline.js';
import { toLoadSource, toRawLoadSource } from '../../load/report-sources.js';
import { loadXmlFast, openXmlFileTargets } from '../xml-load-targets.js';

export interface ReportFile {
  format: 'csv' | 'xml';
  fileName: string;
  /** The lineage source of the file's rows. */
  source: string;
  /** Fail a CSV file whose last line has no line break (a download cut short). */
  requireFinalLineBreak: boolean;
  /**
   * The file's bytes from the start, read as they come (each call reads them again). `inTurn`: the
   * reader is done with each chunk before it asks for the next, so a chunk's buffer may be filled
   * again with a later one.
   */
  read(options?: { inTurn?: boolean }): AsyncIterable<Buffer>;
  /** The complete file from its start (the row-by-row path's reader). */
  complete(): Promise<Readable>;
}

/**
 * Load `file` through `load` (one window load of the given targets, in one transaction): by the
 * fast path, else, when that refuses the file, row by row. `logger` hears why a fast path refused.
 */
export async function loadReportFile<T>(
  def: ReportPipelineDef,
  file: ReportFile,
  load: (targets: LoadWindowTarget[]) => Promise<T>,
  logger: Logger,
): Promise<T> {
  const options = { fileName: file.fileName, report: def.reportDefinitionName };
  if (file.format === 'xml') {
    // Records and items straight to COPY, PostgreSQL casting and checking set-wise.
    const fast = await loadXmlFast(
      def,
      ({ discoverColumns, childTables }) =>
        // The scanner copies each chunk of the file (FastXmlScanner.push) before it reads the next.
        openRawXmlReport(() => file.read({ inTurn: true }), { ...options, discoverColumns, childTables }),
      (targets) => load(targets(file.source)),
      (reason) => logger.info({ reason }, 'XML fast path refused; loading the file record by record'),
    );
    if (fast !== undefined) return fast;
    // The records, and the items of their repeated groups in the child tables.
    const xml = await openXmlFileTargets(def, () => file.complete(), options);
    return load(xml.targets(file.source));
  }
  const csvOptions = { ...options, requireFinalLineBreak: file.requireFinalLineBreak };
  // The scanner is done with each chunk of the file before it reads the next.
  const open = () => openRawCsvReport(file.read({ inTurn: true }), csvOptions);
  try {
    const report = await open();
    return await load([
      { table: def.table, source: toRawLoadSource(report, file.source, open, () => file.read()) },
    ]);
  } catch (error) {
    if (!isFastPathRefusal(error)) throw error;
    logger.info({ reason: (error as Error).message }, 'CSV fast path refused; loading the file row by row');
  }
  const records = await openCsvReport(await file.complete(), csvOptions);
  return load([{ table: def.table, source: toLoadSource(records, file.source) }]);
}
