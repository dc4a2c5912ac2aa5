/**
 * Warehouse tables, declared from the catalog. Report-file tables start with their core columns
 * and grow by schema evolution (typed from the catalog) as reports bring more fields; on-demand
 * tables have every field of their section.
 */
import { fieldsOfGroup, findField, findReportDefinition, sectionsOf } from '../src/catalog/index.js';
import { XML_REPEATED_GROUPS, childTableName } from '../src/catalog/child-tables.js';
import type { OnDemandEndpoint, ReportDefinition } from '../src/catalog/index.js';
import type { ColumnDecl, TableDecl } from '../src/load/table-spec.js';

/** Core fields every report-file table declares up front (the rest are added as reports bring them). */
export const REPORT_CORE_FIELDS = [
  'Request.RequestID',
  'Request.TransactionDate',
  'Request.MerchantID',
  'PaymentData.Amount',
  'PaymentData.CurrencyCode',
] as const;

/**
 * Report definitions whose rows can repeat a request id within one report (several events, fees,
 * fundings, deposits or cases per request, or summary rows): their key is the report and the line.
 */
const ROW_KEYED_REPORTS = new Set([
  'ProcessorEventsDetailClass',
  'FeeDetailClass',
  'FundingDetailClass',
  'DepositDetailClass',
  'ServiceFeeDetailClass',
  'InvoiceSummaryClass',
  'ChargebackAndRetrievalDetailClass',
  'DecisionManagerEventDetailClass',
  // Definitions whose row shape no public sample shows: keyed by line, so no row is ever merged away.
  'BillableTransactionsDetailClass',
  'DecisionManagerDetailClass',
  'FeeSummaryClass',
  'TaxCalculationClass',
  'POSTerminalExceptionClass',
  'StandardBillingDataPackageClass',
  'StandardMonthlyFeeClass',
]);

const SOURCE_ROW_KEY = ['_organization_id', '_source', '_source_row'];
const SOURCE_ROW_KEY_DESCRIPTION =
  'the source (report name and date, or endpoint and window) and the line or record number within it, because rows of this data can repeat a request id';

function fieldColumn(id: string): ColumnDecl {
  const field = findField(id);
  if (!field) throw new Error(`pipelines: unknown catalog field ${id}`);
  return {
    name: field.column,
    pgType: field.pgType,
    ...(field.description ? { description: field.description } : {}),
  };
}

export function reportTable(definitionName: string): TableDecl {
  const def: ReportDefinition | undefined = findReportDefinition(definitionName);
  if (!def) throw new Error(`pipelines: unknown report definition ${definitionName}`);
  const columns = REPORT_CORE_FIELDS.map(fieldColumn);
  const requestKeyed = !ROW_KEYED_REPORTS.has(def.name);
  const requestId = columns[0]!.name;
  return {
    schema: 'cybs',
    name: def.table,
    description: `${def.title} (${def.name}${def.id === null ? '' : `, report definition ${def.id}`}), one row per report line, loaded by cybs-etl.`,
    columns,
    naturalKey: requestKeyed ? ['_organization_id', requestId] : SOURCE_ROW_KEY,
    keyDescription: requestKeyed
      ? `organization and request id: the report has one line per request, and a request belongs to one report day`
      : `organization, ${SOURCE_ROW_KEY_DESCRIPTION}`,
  };
}

/** Sections whose items are one per request id. */
const REQUEST_KEYED_SECTIONS = new Set(['requestDetails']);

export function onDemandTables(endpoint: OnDemandEndpoint): Record<string, TableDecl> {
  const out: Record<string, TableDecl> = {};
  for (const section of sectionsOf(endpoint)) {
    const columns: ColumnDecl[] = section.fields.map((f) => ({
      name: f.column,
      pgType: f.pgType,
      ...(f.description ? { description: f.description } : {}),
    }));
    const requestKeyed =
      REQUEST_KEYED_SECTIONS.has(section.name) && columns.some((c) => c.name === 'request_id');
    out[section.name] = {
      schema: 'cybs',
      name: section.table,
      description: `${section.description} (on-demand ${endpoint}, section ${section.name}), loaded by cybs-etl.`,
      columns,
      naturalKey: requestKeyed ? ['_organization_id', 'request_id'] : SOURCE_ROW_KEY,
      keyDescription: requestKeyed
        ? 'organization and request id: the section has one item per request'
        : `organization, ${SOURCE_ROW_KEY_DESCRIPTION}`,
    };
  }
  return out;
}

/**
 * The child tables of a report table whose rows are requests (keyed by request id): one per
 * repeated group of the XML records (src/catalog/child-tables.ts), with the request id, the
 * item's number and every field of the group's catalog group, keyed by the two. Reports whose
 * rows are events, fees or fundings (keyed by source and row) have no such groups.
 */
export function reportChildTables(parent: TableDecl): Record<string, TableDecl> {
  const out: Record<string, TableDecl> = {};
  const requestId = fieldColumn('Request.RequestID');
  if (parent.naturalKey.join() !== ['_organization_id', requestId.name].join()) return out;
  for (const group of XML_REPEATED_GROUPS) {
    const number: ColumnDecl =
      group.numberField === undefined
        ? { name: group.numberColumn, pgType: 'integer', description: group.numberDescription }
        : fieldColumn(group.numberField);
    const fields = fieldsOfGroup(group.group)
      .map((f) => fieldColumn(f.id))
      .filter((c) => c.name !== number.name && c.name !== requestId.name);
    out[group.name] = {
      schema: parent.schema,
      name: childTableName(parent.name, group),
      description: `${group.title} of cybs.${parent.name}, from the ${group.container}/${group.item} elements of XML reports, loaded by cybs-etl with their records.`,
      columns: [requestId, number, ...fields],
      naturalKey: ['_organization_id', requestId.name, number.name],
      keyDescription: `organization, request id and the item's number: one row per ${group.item} of a request`,
      parent: { table: parent.name, key: [requestId.name] },
    };
  }
  return out;
}
