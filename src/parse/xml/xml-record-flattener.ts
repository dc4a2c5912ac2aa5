/**
 * One parsed XML record (fast-xml-parser's tree, createRecordParser in xml-report.ts) as the texts
 * of a row, by the mapping rules written at the top of xml-report.ts:
 *  - `XmlColumns`: which column each path of leaves fills, resolved through the catalog once per
 *    path and kept (the columns grow as new paths appear);
 *  - `XmlRecordFlattener`: the record flattened into one row, or, for a child table, the items of
 *    one repeated group flattened into one row each.
 * Typing the texts is the reader's step (xml-report.ts), not this one's.
 */
import { resolveHeader } from '../../catalog/index.js';
import type { ResolvedField } from '../../catalog/index.js';
import {
  XML_LABEL_ATTRIBUTES,
  XML_RECORD_ATTRIBUTE_FIELDS,
  repeatedGroupOf,
} from '../../catalog/child-tables.js';
import type { XmlRepeatedGroup, XmlRepeatedGroupName } from '../../catalog/child-tables.js';
import type { ColumnSet } from '../records.js';
import type { ScannedRecord } from './xml-scanner.js';

/** An element as fast-xml-parser gives it: text, or its attributes and children by name. */
export type XmlNode = string | { [key: string]: unknown };

/** The keys under which fast-xml-parser puts an element's attributes and its text. */
export const ATTRS = '@';
export const TEXT = '#text';

/** The record key that rows of a repeated group carry. */
export const REQUEST_ID_FIELD = 'Request.RequestID';

/** A row's texts by column index (undefined: no value), and their length in characters. */
export interface FlatRow {
  texts: (string | undefined)[];
  chars: number;
}

type ResolveOptions = Parameters<typeof resolveHeader>[1];

function isBlank(value: unknown): boolean {
  return typeof value !== 'string' || value.trim() === '';
}

/** A row's text for a column; the first value met wins (the first of a repeated element). */
function put(row: FlatRow, index: number, value: string): void {
  if (row.texts[index] === undefined) {
    row.texts[index] = value;
    row.chars += value.length;
  }
}

/** A parsed element as plain JSON (for repeated groups kept as JSON text). */
function plain(node: unknown): unknown {
  if (!Array.isArray(node)) return node;
  const items = node.map((item: XmlNode) => {
    if (typeof item === 'string') return item;
    const out: Record<string, unknown> = {};
    const attrs = item[ATTRS] as Record<string, string> | undefined;
    if (attrs !== undefined) for (const [k, v] of Object.entries(attrs)) out[`@${k}`] = v;
    for (const [k, v] of Object.entries(item)) {
      if (k === ATTRS) continue;
      if (k === TEXT) {
        if (!isBlank(v)) out[TEXT] = v;
        continue;
      }
      out[k] = plain(v);
    }
    return out;
  });
  return items.length === 1 ? items[0] : items;
}

/**
 * The field and source name of an XML leaf: the first candidate (`Group.Field` names, or a path
 * the catalog knows, such as `PaymentMethod/Card/AccountSuffix`, named then by its field id) the
 * catalog resolves, else `fallback` as it resolves (an unknown column under its full path). Shared
 * by both XML readers, so they name every column alike.
 */
export function resolveXmlColumn(
  candidates: readonly string[],
  fallback: string,
  options: ResolveOptions,
): { field: ResolvedField; name: string } {
  for (const candidate of candidates) {
    const resolved = resolveHeader(candidate, options);
    if (resolved.kind === 'catalog')
      return { field: resolved, name: candidate.includes('/') ? resolved.id : candidate };
  }
  return { field: resolveHeader(fallback, options), name: fallback };
}

/** The record's key as the child rows carry it: its `RequestID` attribute or leaf. */
function requestIdOf(root: { [key: string]: unknown }): string | undefined {
  const attr = (root[ATTRS] as Record<string, string> | undefined)?.RequestID;
  if (attr !== undefined) return attr;
  const node = (root.RequestID as XmlNode[] | undefined)?.[0];
  if (typeof node === 'string') return node;
  const text = node?.[TEXT];
  return typeof text === 'string' ? text : undefined;
}

/** The column of each path of leaves in a record, added to the report's columns when first met. */
export class XmlColumns {
  /** Column index by path key: `/Amount`, `/BillTo/FirstName`, `/Tags/Tag[]`, `^Batch.BatchID`. */
  private readonly byPath = new Map<string, number>();
  /** The report definition's naming; set once the root element has told which report this is. */
  private resolveOptions: ResolveOptions = {};

  constructor(
    readonly set: ColumnSet,
    private readonly recordElement: string,
  ) {}

  /** Resolve the columns met from now on as `report`'s (undefined: by the catalog alone). */
  nameFor(report: string | undefined): void {
    this.resolveOptions = report === undefined ? {} : { report };
  }

  /** The column of `pathKey`, resolved from `candidates` then `fallback` when first met. */
  of(pathKey: string, candidates: readonly string[], fallback: string): number {
    let index = this.byPath.get(pathKey);
    if (index !== undefined) return index;
    const { field, name } = resolveXmlColumn(candidates, fallback, this.resolveOptions);
    index = this.set.add(field, name, true);
    this.byPath.set(pathKey, index);
    return index;
  }

  /**
   * The column of the leaf or attribute `name` under the element at `prefix`, within the groups
   * `groups` (none: the record's own): a record's own is `<record>.<name>` unless the Transaction
   * Detail layout names it otherwise; a group's is its catalog path, else `<group>.<name>`.
   */
  ofLeaf(prefix: string, groups: readonly string[], name: string): number {
    const pathKey = `${prefix}/${name}`;
    const index = this.byPath.get(pathKey);
    if (index !== undefined) return index;
    if (groups.length === 0) {
      const alias = XML_RECORD_ATTRIBUTE_FIELDS[name];
      const own = `${this.recordElement}.${name}`;
      return this.of(pathKey, [...(alias === undefined ? [] : [alias]), own], own);
    }
    const candidates = [`${groups.join('/')}/${name}`, `${groups[groups.length - 1]}.${name}`];
    return this.of(pathKey, candidates, `${groups.join('.')}.${name}`);
  }
}

/** Flattens parsed records into rows of texts by column (`XmlColumns`). */
export class XmlRecordFlattener {
  /** The repeated groups that had items among the records flattened so far. */
  readonly groupsSeen = new Set<XmlRepeatedGroupName>();
  /** The repeated groups whose items go to child tables: left out of the records. */
  private readonly itemsElsewhere: ReadonlySet<XmlRepeatedGroupName>;
  /** With a repeated group: the columns of the record's key and of the item's number. */
  private readonly keyIndex: number = -1;
  private readonly numberIndex: number = -1;

  /** With `repeatedGroup`, the rows are its items (`items`); else the records (`record`). */
  constructor(
    private readonly columns: XmlColumns,
    readonly repeatedGroup: XmlRepeatedGroup | undefined,
    childTables: readonly XmlRepeatedGroupName[],
  ) {
    this.itemsElsewhere = new Set(childTables);
    if (repeatedGroup === undefined) return;
    // A repeated group's rows start with the record's key and the item's number.
    this.keyIndex = columns.of('^key', [REQUEST_ID_FIELD], REQUEST_ID_FIELD);
    this.numberIndex =
      repeatedGroup.numberField === undefined
        ? columns.set.add(
            {
              kind: 'derived',
              column: repeatedGroup.numberColumn,
              pgType: 'integer',
              description: repeatedGroup.numberDescription,
            },
            repeatedGroup.numberColumn,
            true,
          )
        : columns.of('^number', [repeatedGroup.numberField], repeatedGroup.numberField);
  }

  /** The record as one row: its attributes, its leaves and groups, then what it inherits. */
  record(record: ScannedRecord, root: XmlNode): FlatRow {
    const row: FlatRow = { texts: [], chars: 0 };
    if (typeof root !== 'string') {
      const attrs = root[ATTRS] as Record<string, string> | undefined;
      if (attrs !== undefined) for (const [k, v] of Object.entries(attrs)) this.leaf(row, '', [], k, v);
      for (const [child, nodes] of this.ownChildren(root)) this.visit(row, '', [], child, nodes);
    }
    for (const [name, value] of record.inherited) {
      const dot = name.indexOf('.');
      const index = this.columns.of(`^${name}`, [name], name);
      if (dot > 0) put(row, index, value);
    }
    return row;
  }

  /** One row per item of the record's `repeatedGroup`, in document order. */
  items(root: XmlNode): FlatRow[] {
    const repeated = this.repeatedGroup!;
    if (typeof root === 'string') return [];
    const requestId = requestIdOf(root);
    const rows: FlatRow[] = [];
    const prefix = `/${repeated.container}/${repeated.item}`;
    const groups = [repeated.group];
    for (const container of (root[repeated.container] as XmlNode[] | undefined) ?? []) {
      if (typeof container === 'string') continue;
      const items = (container[repeated.item] as XmlNode[] | undefined) ?? [];
      for (const item of items) {
        const row: FlatRow = { texts: [], chars: 0 };
        if (requestId !== undefined) put(row, this.keyIndex, requestId);
        const attrs =
          typeof item === 'string' ? undefined : (item[ATTRS] as Record<string, string> | undefined);
        const numberText =
          repeated.numberAttribute === undefined
            ? String(rows.length + 1)
            : (attrs?.[repeated.numberAttribute] ?? String(rows.length));
        put(row, this.numberIndex, numberText);
        if (typeof item === 'string') this.leaf(row, prefix, groups, repeated.item, item);
        else {
          if (attrs !== undefined)
            for (const [k, v] of Object.entries(attrs))
              if (k !== repeated.numberAttribute) this.leaf(row, prefix, groups, k, v);
          for (const child of Object.keys(item)) {
            if (child === ATTRS || child === TEXT) continue;
            this.visit(row, prefix, groups, child, item[child] as XmlNode[]);
          }
        }
        rows.push(row);
      }
    }
    return rows;
  }

  private leaf(row: FlatRow, prefix: string, groups: readonly string[], name: string, value: string): void {
    put(row, this.columns.ofLeaf(prefix, groups, name), value);
  }

  /**
   * The element `name` (all its occurrences, `nodes`) under `prefix`: repeated, all of them as JSON
   * in a `_json` column; the first one as a leaf, a leaf with attributes, or a group to walk.
   */
  private visit(
    row: FlatRow,
    prefix: string,
    groups: readonly string[],
    name: string,
    nodes: XmlNode[],
  ): void {
    if (nodes.length > 1) {
      const path = [...groups, name].join('.');
      const index = this.columns.of(`${prefix}/${name}[]`, [], `${path}_json`);
      put(row, index, JSON.stringify(plain(nodes)));
    }
    const first = nodes[0];
    if (first === undefined) return;
    if (typeof first === 'string') {
      this.leaf(row, prefix, groups, name, first);
      return;
    }
    const attrs = first[ATTRS] as Record<string, string> | undefined;
    const children = Object.keys(first).filter((k) => k !== ATTRS && k !== TEXT);
    if (children.length === 0) {
      const text = first[TEXT];
      this.leaf(row, prefix, groups, name, typeof text === 'string' ? text : '');
      if (attrs !== undefined) {
        const inner = [...groups, name];
        const label = XML_LABEL_ATTRIBUTES[groups[groups.length - 1] ?? ''];
        for (const [k, v] of Object.entries(attrs))
          if (k !== label) this.leaf(row, `${prefix}/${name}`, inner, k, v);
      }
      return;
    }
    const inner = [...groups, name];
    const innerPrefix = `${prefix}/${name}`;
    if (attrs !== undefined)
      for (const [k, v] of Object.entries(attrs)) this.leaf(row, innerPrefix, inner, k, v);
    for (const child of children) this.visit(row, innerPrefix, inner, child, first[child] as XmlNode[]);
  }

  /** A record's own children, less the items of its repeated groups that go to child tables. */
  private ownChildren(root: { [key: string]: unknown }): [string, XmlNode[]][] {
    const out: [string, XmlNode[]][] = [];
    for (const child of Object.keys(root)) {
      if (child === ATTRS || child === TEXT) continue;
      const nodes = root[child] as XmlNode[];
      const repeated = repeatedGroupOf(child);
      if (repeated !== undefined) {
        for (const node of nodes)
          if (typeof node !== 'string' && node[repeated.item] !== undefined)
            this.groupsSeen.add(repeated.name);
      }
      if (repeated === undefined || !this.itemsElsewhere.has(repeated.name)) {
        out.push([child, nodes]);
        continue;
      }
      // The container without its items; kept only when something else is left in it (an empty
      // container, `<LineItems/>` or only whitespace inside, is a record without such items).
      const rest = nodes.flatMap((node): XmlNode[] => {
        if (typeof node === 'string') return isBlank(node) ? [] : [node];
        const copy: { [key: string]: unknown } = { ...node };
        delete copy[repeated.item];
        const left = Object.keys(copy).some((k) => k !== TEXT || !isBlank(copy[k]));
        return left ? [copy] : [];
      });
      if (rest.length > 0) out.push([child, rest]);
    }
    return out;
  }
}
