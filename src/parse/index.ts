export * from './records.js';
export { openCsvReport, parseCsvMetadataLine, serialiseCsvRow } from './csv-report.js';
export { openXmlReport } from './xml-report.js';
export type { OpenXmlReportOptions } from './xml-report.js';
export { parseOnDemandResponse } from './on-demand.js';
export type { OnDemandOptions, OnDemandResult } from './on-demand.js';
