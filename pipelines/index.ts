/**
 * Every pipeline cybs-etl knows: one per report definition (report files fed by a subscription) and
 * one per on-demand endpoint. config.yaml enables them and sets their organizations, schedules and
 * windows; `cybs-etl pipelines` lists them.
 */
import { REPORT_DEFINITIONS, defaultReportName } from '../src/catalog/index.js';
import { definePipeline } from '../src/pipeline/define-pipeline.js';
import type { OnDemandPipelineDef, PipelineDef, ReportPipelineDef } from '../src/pipeline/define-pipeline.js';
import { onDemandTables, reportChildTables, reportTable } from './tables.js';

/** Report pipelines enabled without configuration; the others are enabled in config.yaml. */
export const ENABLED_BY_DEFAULT = new Set([
  'TransactionRequestClass',
  'PaymentBatchDetailClass',
  'FundingDetailClass',
  'ConversionDetailClass',
]);

export const REPORT_PIPELINES: readonly ReportPipelineDef[] = REPORT_DEFINITIONS.map((def) => {
  const table = reportTable(def.name);
  return definePipeline({
    kind: 'report',
    name: def.table,
    description: `${def.title}, from the daily subscription report${def.verified ? '' : ` (unverified: ${def.note ?? 'not in the SDK id table'})`}`,
    reportDefinitionName: def.name,
    defaultReportName: defaultReportName(def.name),
    defaultFormat: 'csv',
    table,
    childTables: reportChildTables(table),
    defaultSchedule: { cron: '0 7 * * *', timezone: 'UTC' },
    defaultLookbackDays: 0,
    enabledByDefault: ENABLED_BY_DEFAULT.has(def.name),
  });
});

const onDemand = (
  name: string,
  endpoint: OnDemandPipelineDef['endpoint'],
  description: string,
  paged = false,
): OnDemandPipelineDef =>
  definePipeline({
    kind: 'on-demand',
    name,
    description,
    endpoint,
    tables: onDemandTables(endpoint),
    paged,
    defaultSchedule: { cron: '30 7 * * *', timezone: 'UTC' },
    defaultLookbackDays: 3,
    enabledByDefault: true,
  });

export const ON_DEMAND_PIPELINES: readonly OnDemandPipelineDef[] = [
  onDemand(
    'purchase_refund_details',
    'purchase-refund-details',
    'Purchase and Refund Detail (offset/limit pages, six sections)',
    true,
  ),
  onDemand('net_fundings', 'net-fundings', 'Net Funding: summaries by type and currency, and totals'),
  onDemand('conversion_details', 'conversion-details', 'Conversion Detail: review decisions and their notes'),
  onDemand(
    'notification_of_changes',
    'notification-of-changes',
    'Notification of Change (eCheck account updates)',
  ),
  onDemand(
    'payment_batch_summaries',
    'payment-batch-summaries',
    'Payment Batch Summary: sales and credits by currency and payment type',
  ),
];

export const PIPELINES: readonly PipelineDef[] = [...REPORT_PIPELINES, ...ON_DEMAND_PIPELINES];
