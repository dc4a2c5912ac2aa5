/**
 * The tables an XML report file loads into, in one window: the records' table, then one child
 * table per repeated group of the records (src/catalog/child-tables.ts: application replies, line
 * items), all under the same `_source`. Used by the window executor and by `import`, so both load
 * the same tables from a file.
 */
import { XML_REPEATED_GROUPS } from '../catalog/child-tables.js';
import type { XmlRepeatedGroupName } from '../catalog/child-tables.js';
import type { LoadWindowTarget } from '../load/window/load-window.js';
import type { LoadBatch, RecordsSource, TableDecl } from '../load/table-spec.js';
import type { RecordBatch, RecordSource, ReportInput, ReportMetadata } from '../parse/records.js';
import { openXmlReport } from '../parse/xml/xml-report.js';
import { REQUEST_ID_FIELD } from '../parse/xml/xml-record-flattener.js';
import { NEW_COLUMN_REASON } from '../parse/xml/raw-xml-report.js';
import type { FastXmlChildTable, RawXmlReport } from '../parse/xml/raw-xml-report.js';
import { isFastPathRefusal } from '../copy-text/fast-path-refusal.js';
import { makeSpoolDir } from '../spool/spool-dirs.js';
import { rm } from 'node:fs/promises';
import type { OpenXmlReportOptions } from '../parse/xml/xml-report.js';
import { join } from 'node:path';
import { collectColumns } from '../parse/records.js';
import { declaredColumns, toLoadSource, toRawXmlLoadSource, toSourceColumn } from '../load/report-sources.js';

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
function childTablesOf(def: XmlReportTables): { name: XmlRepeatedGroupName; table: TableDecl }[] {
  return XML_REPEATED_GROUPS.flatMap((group) => {
    const table = def.childTables?.[group.name];
    return table === undefined ? [] : [{ name: group.name, table }];
  });
}

/**
 * The per-row targets of an XML file: each reader first reads the file once to learn its
 * columns (XML columns are discovered while reading), then once to load; a child table's reader
 * opens the file only when the loader reaches that table, and only when the records' first read
 * met items of its group. `open` gives the file from its start.
 *
 * With `keep` (a one-time report's share of one window), the records are the ones `keep.records`
 * lets through, and the items the ones of those records (by request id, collected while the
 * records load, which comes first: one id per kept record is held); the items' rejects are kept
 * when `keep.rejects` says so.
 */
export async function openXmlFileTargets(
  def: XmlReportTables,
  open: () => Promise<ReportInput>,
  options: OpenXmlReportOptions,
  keep?: { records: (records: RecordSource) => RecordSource; rejects: boolean },
): Promise<XmlFileTargets> {
  const tables = childTablesOf(def);
  options = { ...options, childTables: tables.map((t) => t.name) };
  const scan = await openXmlReport(await open(), options);
  const columns = await collectColumns(scan);
  const seen = scan.repeatedGroupsSeen();
  const opened = await openXmlReport(await open(), options);
  const keptIds = new Set<string>();
  const records = keep === undefined ? opened : collectRequestIds(keep.records(opened), keptIds);
  const children: ((source: string) => LoadWindowTarget)[] = [];
  for (const { name, table } of tables) {
    // A group the file has no items of: an empty source (no more reading of the file).
    if (!seen.has(name)) {
      children.push((source) => emptyTarget(table, source));
      continue;
    }
    const childOptions = { ...options, repeatedGroup: name };
    const childColumns = await collectColumns(await openXmlReport(await open(), childOptions));
    children.push((source) => ({
      table,
      source: {
        kind: 'records',
        source,
        columns: childColumns.map(toSourceColumn),
        batches: (async function* (): AsyncGenerator<LoadBatch> {
          const items = await openXmlReport(await open(), childOptions);
          for await (const batch of toLoadSource(items, source, childColumns).batches) {
            if (keep === undefined) yield batch;
            else
              yield {
                // The request id is an item's first value.
                records: batch.records.filter((r) => keptIds.has(String(r.values[0]))),
                rejects: keep.rejects ? batch.rejects : [],
              };
          }
        })(),
      },
    }));
  }
  return {
    metadata: records.metadata,
    targets: (source) => [
      { table: def.table, source: toLoadSource(records, source, columns) },
      ...children.map((child) => child(source)),
    ],
  };
}

/** `records` as they are, the request id of each one passing into `ids`. */
function collectRequestIds(records: RecordSource, ids: Set<string>): RecordSource {
  return {
    ...records,
    batches: (async function* (): AsyncGenerator<RecordBatch> {
      for await (const batch of records.batches) {
        const index = records.columns.findIndex(
          (c) => c.field.kind === 'catalog' && c.field.id === REQUEST_ID_FIELD,
        );
        if (index >= 0) for (const r of batch.records) ids.add(String(r.values[index]));
        yield batch;
      }
    })(),
  };
}

/** An empty source for `table`: a load of it removes the rows an earlier load of the source left. */
function emptyTarget(table: TableDecl, source: string): LoadWindowTarget {
  const empty: RecordsSource = {
    kind: 'records',
    source,
    columns: declaredColumns(table),
    batches: (async function* (): AsyncGenerator<LoadBatch> {})(),
  };
  return { table, source: empty };
}

/**
 * The fast path's targets of an XML file (src/parse/xml/raw-xml-report.ts): the records' COPY text lines,
 * then each child table's, which the scanner spools (in `dir`) while the records load and which
 * are complete by the time the loader reaches the child tables. `open` reads the file again (a
 * first load that meets a key already there reads it twice): the child tables read the spools of
 * the last read.
 */
export async function openRawXmlTargets(
  def: XmlReportTables,
  open: (childTables: FastXmlChildTable[]) => Promise<RawXmlReport>,
  dir: string,
): Promise<(source: string) => LoadWindowTarget[]> {
  let reads = 0;
  const childTables = childTablesOf(def).map(({ name, table }): FastXmlChildTable => ({
    group: name,
    columns: declaredColumns(table),
    spoolPath: () => join(dir, `${name}-${++reads}.copy`),
  }));
  let latest = await open(childTables);
  const reopen = async () => (latest = await open(childTables));
  const first = latest;
  return (source) => [
    { table: def.table, source: toRawXmlLoadSource(first, source, reopen) },
    ...childTables.map((child, i): LoadWindowTarget => {
      const table = childTablesOf(def)[i]!.table;
      const current = () => latest.children.find((c) => c.group === child.group)!;
      return {
        table,
        // Getters: the child's spool is complete only once the loader reaches its table.
        source: {
          kind: 'copy-lines',
          source,
          get columns() {
            return current().columns();
          },
          get body() {
            return current().body();
          },
          reopen: () => Promise.resolve(current().body()),
        },
      };
    }),
  ];
}

/**
 * Load an XML file by the fast path (PostgreSQL): `load` gets the window's targets (records and
 * child tables, their spools in a temporary directory removed afterwards) and loads them. A
 * column first seen after the first records makes it read the file once more, collecting the
 * columns first. Undefined when the fast path refuses the file (the load rolled back; `refused`
 * hears why): the per-row path loads it then.
 */
export async function loadXmlFast<T>(
  def: XmlReportTables,
  open: (options: { discoverColumns: boolean; childTables: FastXmlChildTable[] }) => Promise<RawXmlReport>,
  load: (targets: (source: string) => LoadWindowTarget[]) => Promise<T>,
  refused: (reason: string) => void,
): Promise<T | undefined> {
  for (const discoverColumns of [false, true]) {
    const dir = await makeSpoolDir('xml');
    try {
      const targets = await openRawXmlTargets(
        def,
        (childTables) => open({ discoverColumns, childTables }),
        dir,
      );
      return await load(targets);
    } catch (error) {
      if (!isFastPathRefusal(error)) throw error;
      const reason = (error as Error).message;
      if (!discoverColumns && reason.includes(NEW_COLUMN_REASON)) continue;
      refused(reason);
      return undefined;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  return undefined;
}

/** The tables (and source) a window loads from an XML file, in the order the targets have them. */
export function xmlTableSources(
  def: XmlReportTables,
  source: string,
): { table: TableDecl; source: string }[] {
  return [def.table, ...childTablesOf(def).map((c) => c.table)].map((table) => ({ table, source }));
}
