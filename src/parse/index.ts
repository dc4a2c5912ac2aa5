export * from './records.js';
export { openCsvReport, parseCsvMetadataLine, serialiseCsvRow } from './csv/csv-report.js';
export { openXmlReport } from './xml/xml-report.js';
export type { OpenXmlReportOptions } from './xml/xml-report.js';
export { parseOnDemandResponse } from './json/on-demand.js';
export type { OnDemandOptions, OnDemandResult } from './json/on-demand.js';
