/**
 * The tables an XML report file loads into, in one window: the records' table, then one child
 * table per repeated group of the records (src/catalog/child-tables.ts: application replies, line
 * items), all under the same `_source`. Used by the window executor and by `import`, so both load
 * the same tables from a file.
 */
import { XML_REPEATED_GROUPS } from '../catalog/child-tables.js';
import type { LoadWindowTarget } from '../load/load-window.js';
import type { LoadBatch, LoadSource, TableDecl } from '../load/table-spec.js';
import type { ColumnSpec, ReportInput, ReportMetadata } from '../parse/records.js';
import { openXmlReport } from '../parse/xml-report.js';
import type { OpenXmlReportOptions } from '../parse/xml-report.js';
import { collectColumns, declaredColumns, toLoadSource, toSourceColumn } from './record-source.js';

/** A report pipeline's tables, as far as an XML file is concerned. */
export interface XmlReportTables {
  table: TableDecl;
  childTables?: Readonly<Record<string, TableDecl>>;
}

export interface XmlFileTargets {
  /** What the file says about itself (the records' reader's metadata). */
  metadata: ReportMetadata;
  /** The window's targets, the records first, for the lineage source `source`. */
  targets(source: string): LoadWindowTarget[];
}

/** The child tables of `def` in the order of the repeated groups. */
function childTablesOf(def: XmlReportTables): { name: string; table: TableDecl }[] {
  return XML_REPEATED_GROUPS.flatMap((group) => {
    const table = def.childTables?.[group.name];
    return table === undefined ? [] : [{ name: group.name, table }];
  });
}

/**
 * The per-row targets of an XML file: each reader first reads the file once to learn its
 * columns (XML columns are discovered while reading), then once to load; a child table's reader
 * opens the file only when the loader reaches that table. `open` gives the file from its start.
 */
export async function openXmlFileTargets(
  def: XmlReportTables,
  open: () => Promise<ReportInput>,
  options: OpenXmlReportOptions,
): Promise<XmlFileTargets> {
  const columns = await collectColumns(await openXmlReport(await open(), options));
  const records = await openXmlReport(await open(), options);
  const children: { table: TableDecl; columns: ColumnSpec[]; options: OpenXmlReportOptions }[] = [];
  for (const { name, table } of childTablesOf(def)) {
    const childOptions = { ...options, repeatedGroup: name as OpenXmlReportOptions['repeatedGroup'] };
    children.push({
      table,
      columns: await collectColumns(await openXmlReport(await open(), childOptions)),
      options: childOptions,
    });
  }
  return {
    metadata: records.metadata,
    targets: (source) => [
      { table: def.table, source: toLoadSource(records, source, columns) },
      ...children.map((child): LoadWindowTarget => ({
        table: child.table,
        source: {
          source,
          columns: child.columns.map(toSourceColumn),
          batches: (async function* (): AsyncGenerator<LoadBatch> {
            const items = await openXmlReport(await open(), child.options);
            yield* toLoadSource(items, source, child.columns).batches;
          })(),
        },
      })),
    ],
  };
}

/**
 * The child tables' targets of a file that has no repeated items (one the fast XML path loads,
 * which refuses files with them): empty sources, so that the items an earlier load of the same
 * source left are removed as the records' are.
 */
export function emptyChildTargets(def: XmlReportTables, source: string): LoadWindowTarget[] {
  return childTablesOf(def).map(({ table }) => {
    const empty: LoadSource = {
      source,
      columns: declaredColumns(table),
      batches: (async function* (): AsyncGenerator<LoadBatch> {})(),
    };
    return { table, source: empty };
  });
}

/** The tables (and source) a window loads from an XML file, in the order the targets have them. */
export function xmlTableSources(
  def: XmlReportTables,
  source: string,
): { table: TableDecl; source: string }[] {
  return [def.table, ...childTablesOf(def).map((c) => c.table)].map((table) => ({ table, source }));
}
