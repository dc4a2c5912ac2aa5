import type { OnDemandEndpoint } from '../catalog/on-demand-sections.js';
import type { TableDecl } from '../load/table-spec.js';

/** Report files fed by a subscription (searched, downloaded, parsed as CSV or XML). */
export interface ReportPipelineDef {
  kind: 'report';
  name: string;
  description: string;
  /** reportDefinitionName, e.g. TransactionRequestClass. */
  reportDefinitionName: string;
  /** Subscription report name used when config.yaml does not set one. */
  defaultReportName: string;
  /** Format the subscription usually delivers; the actual format comes from the report's MIME type. */
  defaultFormat: 'csv' | 'xml';
  table: TableDecl;
  /**
   * Child tables of `table`, by repeated group (src/catalog/child-tables.ts): the items of an XML
   * report's records (application replies, line items), loaded with the records.
   */
  childTables?: Readonly<Record<string, TableDecl>>;
  defaultSchedule: { cron: string; timezone: string };
  /** Windows re-loaded on each nightly run unless config says otherwise. */
  defaultLookbackDays: number;
  /** Loaded without being named in config.yaml. */
  enabledByDefault: boolean;
}

export type { OnDemandEndpoint } from '../catalog/on-demand-sections.js';

/** On-demand JSON endpoints: one call (or offset/limit pages) per window, one table per section. */
export interface OnDemandPipelineDef {
  kind: 'on-demand';
  name: string;
  description: string;
  endpoint: OnDemandEndpoint;
  /** Section name (as the parser names it) → table. */
  tables: Record<string, TableDecl>;
  /** Walks offset/limit pages (purchase-refund-details). */
  paged: boolean;
  defaultSchedule: { cron: string; timezone: string };
  defaultLookbackDays: number;
  enabledByDefault: boolean;
}

export type PipelineDef = ReportPipelineDef | OnDemandPipelineDef;

export function definePipeline<T extends PipelineDef>(def: T): T {
  return Object.freeze(def);
}

/** Every table a pipeline writes. */
export function pipelineTables(def: PipelineDef): TableDecl[] {
  return def.kind === 'report'
    ? [def.table, ...Object.values(def.childTables ?? {})]
    : Object.values(def.tables);
}
