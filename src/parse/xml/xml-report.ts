/**
 * XML report files (facts §5.2), read record by record with bounded memory: `XmlRecordScanner` finds
 * each record element in the byte stream and fast-xml-parser parses the records (in groups of ≤ 50
 * records / 64 Ki characters, to amortise its per-call set-up; never the document), with tag and
 * attribute value parsing off (22-digit ids stay text) and no DOCTYPE ever reaching it (so no
 * entity expansion; the five XML entities and character references are decoded, any other
 * reference makes its record a reject).
 *
 * Mapping of one record (`<Request>` by default, or the report definition's `xmlRecordElement`):
 *  - the root element's attributes are report metadata (`Name`, `Version`, `MerchantID`,
 *    `ReportStartDate`, `ReportEndDate`, …), not columns;
 *  - attributes of the other enclosing elements apply to every record inside them, named
 *    `Element.Attribute` (`<Batch BatchID BatchDate>` → `Batch.BatchID`, `Batch.BatchDate`);
 *  - the record's attributes and direct leaf children are `Request.<Name>`, resolved through the
 *    catalog (so `Request/Amount` → `PaymentData.Amount`, `Request@RequestID` → `Request.RequestID`),
 *    except the ones the Transaction Detail layout names otherwise (src/catalog/child-tables.ts:
 *    `Request@RequestDate` → `Request.TransactionDate`);
 *  - nested groups flatten to `Group.Field` (`<BillTo><FirstName>` → `BillTo.FirstName`); deeper
 *    leaves try their path as the catalog names it (`PaymentMethod/Card/AccountSuffix` →
 *    `PaymentMethod.AccountSuffix`), then `<parent>.<Leaf>`, else stay unknown under their full path
 *    (so `PaymentMethod/Check/AccountSuffix` never lands in the card's column); attributes of a group element
 *    are `<Group>.<Attr>`, except labels (`<MerchantDefinedData><field1 name="mdd1">`: left out);
 *  - element order does not matter;
 *  - the items of a repeated group (`<ApplicationReplies><ApplicationReply>`, `<LineItems><LineItem>`,
 *    src/catalog/child-tables.ts) that has a child table (`childTables`) are not columns of the
 *    record: with `repeatedGroup` the reader yields them instead, one row per item (the record's
 *    request id, the item's number, its fields), numbered as their record;
 *  - other repeated elements (`<Tags><Tag>a</Tag><Tag>b</Tag>`): the FIRST occurrence fills the
 *    typed columns, and all occurrences are also kept, as a JSON array, in an unknown text column
 *    named after the path + `_json` (`tags_tag_json`), so nothing is lost;
 *  - a record's own values win over inherited ones.
 * Columns are discovered while reading: `columns` grows, and each batch lists its `newColumns`. The
 * first batch is read when the report is opened, so `columns` is already populated then.
 * Rejects (`PARSE_XML_RECORD`, the record's text kept): a record that refers to an entity other than
 * the five XML ones or to a character XML does not allow (`&#0;`, `&#xD800;`), or that holds an
 * element or attribute of another namespace than the root element's. Elements of another namespace
 * outside records (and what they enclose) are not records.
 * Errors: malformed XML → thrown `PARSE_XML_INVALID` with the record number; a document without any
 * element → `PARSE_EMPTY`.
 */
import { XMLParser } from 'fast-xml-parser';
import {
  INVALID,
  coerceTimestamptz,
  findReportDefinition,
  guessReportDefinition,
  resolveHeader,
} from '../../catalog/index.js';
import type { ResolvedField, TypedValue } from '../../catalog/index.js';
import {
  XML_LABEL_ATTRIBUTES,
  XML_RECORD_ATTRIBUTE_FIELDS,
  XML_REPEATED_GROUPS,
  repeatedGroupOf,
} from '../../catalog/child-tables.js';
import type { XmlRepeatedGroup, XmlRepeatedGroupName } from '../../catalog/child-tables.js';
import { toReadable } from '../records.js';
import {
  BatchBuilder,
  ColumnSet,
  DEFAULT_BATCH_SIZE,
  DEFAULT_MAX_BATCH_CHARS,
  emptyMetadata,
  invalidValueReject,
  parseError,
  summaryOf,
} from '../records.js';
import type {
  OpenReportOptions,
  RecordBatch,
  RecordSource,
  ReportInput,
  ReportMetadata,
} from '../records.js';
import { XmlRecordScanner, XmlScanError } from './xml-scanner.js';
import type { ScannedRecord } from './xml-scanner.js';
import { ReportDecoder } from '../text-encoding.js';

export interface OpenXmlReportOptions extends OpenReportOptions {
  /** Local name of the record element; default: the report definition's, else `Request`. */
  recordElement?: string;
  /**
   * Read the items of this repeated group (src/catalog/child-tables.ts) instead of the records:
   * one row per item, with the record's request id and the item's number first, numbered as its
   * record (the rows of a child table).
   */
  repeatedGroup?: XmlRepeatedGroupName;
  /**
   * The repeated groups whose items are loaded into child tables (read with `repeatedGroup`): they
   * are left out of the records. The items of other groups stay in the records (the first item's
   * fields and all items as JSON), so nothing is lost where a table has no child tables.
   */
  childTables?: readonly XmlRepeatedGroupName[];
}

/** The record key that rows of a repeated group carry. */
export const REQUEST_ID_FIELD = 'Request.RequestID';

type XmlNode = string | { [key: string]: unknown };

/** Records parsed per fast-xml-parser call (bounded by count and characters). */
const GROUP_RECORDS = 50;
const GROUP_CHARS = 64 * 1024;

const ATTRS = '@';
const TEXT = '#text';

export function createRecordParser(): XMLParser {
  return new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '',
    attributesGroupName: ATTRS,
    textNodeName: TEXT,
    parseTagValue: false,
    parseAttributeValue: false,
    processEntities: true,
    htmlEntities: true,
    trimValues: false,
    removeNSPrefix: true,
    jPath: false,
    ignoreDeclaration: true,
    ignorePiTags: true,
    isArray: (_name: string, _path: unknown, _leaf: boolean, isAttribute: boolean) => !isAttribute,
  });
}

function isBlank(value: unknown): boolean {
  return typeof value !== 'string' || value.trim() === '';
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

function metadataFrom(scanner: XmlRecordScanner, fileName: string): ReportMetadata {
  return xmlReportMetadata(scanner.rootAttributes, fileName);
}

/** The metadata of an XML report from its root element's attributes (shared by both XML readers). */
export function xmlReportMetadata(
  rootAttributes: readonly (readonly [string, string])[],
  fileName: string,
): ReportMetadata {
  const metadata = emptyMetadata('xml', fileName);
  for (const [k, v] of rootAttributes) metadata.attributes[k] = v;
  // Only the root's own (unprefixed) attributes: a prefixed one is of another namespace.
  const get = (name: string): string | undefined => {
    const hit = rootAttributes.find(([k]) => k === name);
    return hit === undefined || hit[1] === '' ? undefined : hit[1];
  };
  metadata.reportName = get('Name');
  metadata.version = get('Version');
  metadata.organizationId = get('MerchantID') ?? get('OrganizationID');
  metadata.rawStart = get('ReportStartDate');
  metadata.rawEnd = get('ReportEndDate');
  const start = metadata.rawStart === undefined ? undefined : coerceTimestamptz(metadata.rawStart);
  const end = metadata.rawEnd === undefined ? undefined : coerceTimestamptz(metadata.rawEnd);
  metadata.startTime = typeof start === 'string' ? start : undefined;
  metadata.endTime = typeof end === 'string' ? end : undefined;
  return metadata;
}

/** Open an XML report: reads up to the first batch, then streams typed batches record by record. */
/** The records of an XML report, and which repeated groups had items among the records read so far. */
export interface XmlRecordSource extends RecordSource {
  repeatedGroupsSeen(): ReadonlySet<XmlRepeatedGroupName>;
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
  options: Parameters<typeof resolveHeader>[1],
): { field: ResolvedField; name: string } {
  for (const candidate of candidates) {
    const resolved = resolveHeader(candidate, options);
    if (resolved.kind === 'catalog')
      return { field: resolved, name: candidate.includes('/') ? resolved.id : candidate };
  }
  return { field: resolveHeader(fallback, options), name: fallback };
}

export async function openXmlReport(
  input: ReportInput,
  options: OpenXmlReportOptions,
): Promise<XmlRecordSource> {
  const fileName = options.fileName;
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const maxChars = options.maxBatchChars ?? DEFAULT_MAX_BATCH_CHARS;
  const givenDefinition = options.report === undefined ? undefined : findReportDefinition(options.report);
  const recordElement = options.recordElement ?? givenDefinition?.xmlRecordElement ?? 'Request';
  const scanner = new XmlRecordScanner(recordElement);
  const source = toReadable(input);
  // UTF-8, or UTF-16 told by its first bytes (text-encoding.ts).
  const decoder = new ReportDecoder(fileName);
  const parser = createRecordParser();
  const set = new ColumnSet();
  const builder = new BatchBuilder(set, batchSize, maxChars);
  let metadata: ReportMetadata | undefined;
  let resolveOptions: { report?: string } = {};

  const scanError = (error: unknown): unknown =>
    error instanceof XmlScanError
      ? parseError(
          'PARSE_XML_INVALID',
          `${fileName}: malformed XML at record ${error.recordNumber}: ${error.message}. The file cannot be read.`,
          { file: fileName, record: error.recordNumber, offset: error.offset },
          error,
        )
      : error;

  async function* scan(): AsyncGenerator<ScannedRecord> {
    try {
      for await (const chunk of source as AsyncIterable<Uint8Array | string>) {
        scanner.push(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }));
        let record: ScannedRecord | undefined;
        while ((record = scanner.next()) !== undefined) yield record;
      }
      scanner.push(decoder.decode());
      scanner.end();
      let record: ScannedRecord | undefined;
      while ((record = scanner.next()) !== undefined) yield record;
    } catch (error) {
      throw scanError(error);
    } finally {
      if (!source.destroyed) source.destroy();
    }
    if (!scanner.sawRoot)
      throw parseError('PARSE_EMPTY', `${fileName}: the XML document is empty (no root element).`, {
        file: fileName,
        record: 0,
      });
  }

  // Column index of each flattened path (`Request/Amount`, `BillTo/FirstName`), per source.
  const pathColumns = new Map<string, number>();
  const columnOf = (pathKey: string, candidates: readonly string[], fallback: string): number => {
    let index = pathColumns.get(pathKey);
    if (index !== undefined) return index;
    const { field, name } = resolveXmlColumn(candidates, fallback, resolveOptions);
    index = set.add(field, name, true);
    pathColumns.set(pathKey, index);
    return index;
  };

  // A repeated group's rows start with the record's key and the item's number.
  const childGroup =
    options.repeatedGroup === undefined
      ? undefined
      : XML_REPEATED_GROUPS.find((g) => g.name === options.repeatedGroup);
  let keyIndex = -1;
  let numberIndex = -1;
  if (childGroup !== undefined) {
    keyIndex = columnOf('^key', [REQUEST_ID_FIELD], REQUEST_ID_FIELD);
    numberIndex =
      childGroup.numberField === undefined
        ? set.add(
            {
              kind: 'derived',
              column: childGroup.numberColumn,
              pgType: 'integer',
              description: childGroup.numberDescription,
            },
            childGroup.numberColumn,
            true,
          )
        : columnOf('^number', [childGroup.numberField], childGroup.numberField);
  }

  /**
   * Parse a group of records in one fast-xml-parser call (its per-call set-up dominates the cost of a
   * small record); a group that fails is parsed record by record to name the bad record.
   */
  function parseGroup(group: readonly ScannedRecord[]): XmlNode[] {
    if (group.length > 1) {
      try {
        const parsed = parser.parse(`<g>${group.map((r) => r.text).join('')}</g>`) as Record<string, unknown>;
        const inner = (parsed.g as { [key: string]: unknown }[] | undefined)?.[0];
        const keys = inner === undefined || typeof inner !== 'object' ? [] : Object.keys(inner);
        const nodes = keys.length === 1 ? (inner![keys[0]!] as XmlNode[]) : undefined;
        if (nodes !== undefined && nodes.length === group.length) return nodes;
      } catch {
        // fall through: find the record that fails
      }
    }
    return group.map((record) => {
      try {
        const parsed = parser.parse(record.text) as Record<string, XmlNode[]>;
        const key = Object.keys(parsed)[0];
        const node = key === undefined ? undefined : parsed[key]?.[0];
        if (node === undefined) throw new Error('no element');
        return node;
      } catch (error) {
        throw parseError(
          'PARSE_XML_INVALID',
          `${fileName}: malformed XML in record ${record.recordNumber}: ${(error as Error).message}`,
          { file: fileName, record: record.recordNumber },
          error,
        );
      }
    });
  }

  interface Flat {
    texts: (string | undefined)[];
    chars: number;
  }
  const put = (flat: Flat, index: number, value: string): void => {
    if (flat.texts[index] === undefined) {
      flat.texts[index] = value;
      flat.chars += value.length;
    }
  };
  const recordName = recordElement;
  const leaf = (flat: Flat, prefix: string, groups: readonly string[], name: string, value: string): void => {
    const pathKey = `${prefix}/${name}`;
    let index = pathColumns.get(pathKey);
    if (index === undefined) {
      const alias = groups.length === 0 ? XML_RECORD_ATTRIBUTE_FIELDS[name] : undefined;
      const candidates =
        groups.length === 0
          ? [...(alias === undefined ? [] : [alias]), `${recordName}.${name}`]
          : [`${groups.join('/')}/${name}`, `${groups[groups.length - 1]}.${name}`];
      const fallback = groups.length === 0 ? `${recordName}.${name}` : `${groups.join('.')}.${name}`;
      index = columnOf(pathKey, candidates, fallback);
    }
    put(flat, index, value);
  };
  const visit = (
    flat: Flat,
    prefix: string,
    groups: readonly string[],
    name: string,
    nodes: XmlNode[],
  ): void => {
    if (nodes.length > 1) {
      const path = [...groups, name].join('.');
      const index = columnOf(`${prefix}/${name}[]`, [], `${path}_json`);
      put(flat, index, JSON.stringify(plain(nodes)));
    }
    const first = nodes[0];
    if (first === undefined) return;
    if (typeof first === 'string') {
      leaf(flat, prefix, groups, name, first);
      return;
    }
    const attrs = first[ATTRS] as Record<string, string> | undefined;
    const children = Object.keys(first).filter((k) => k !== ATTRS && k !== TEXT);
    if (children.length === 0) {
      const text = first[TEXT];
      leaf(flat, prefix, groups, name, typeof text === 'string' ? text : '');
      if (attrs !== undefined) {
        const inner = [...groups, name];
        const label = XML_LABEL_ATTRIBUTES[groups[groups.length - 1] ?? ''];
        for (const [k, v] of Object.entries(attrs))
          if (k !== label) leaf(flat, `${prefix}/${name}`, inner, k, v);
      }
      return;
    }
    const inner = [...groups, name];
    const innerPrefix = `${prefix}/${name}`;
    if (attrs !== undefined) for (const [k, v] of Object.entries(attrs)) leaf(flat, innerPrefix, inner, k, v);
    for (const child of children) visit(flat, innerPrefix, inner, child, first[child] as XmlNode[]);
  };

  /** A record's own children, less the items of its repeated groups (they go to child tables). */
  const groupsSeen = new Set<XmlRepeatedGroupName>();
  const itemsElsewhere = new Set<XmlRepeatedGroupName>(options.childTables ?? []);
  const ownChildren = (root: { [key: string]: unknown }): [string, XmlNode[]][] => {
    const out: [string, XmlNode[]][] = [];
    for (const child of Object.keys(root)) {
      if (child === ATTRS || child === TEXT) continue;
      const nodes = root[child] as XmlNode[];
      const repeated = repeatedGroupOf(child);
      if (repeated !== undefined) {
        for (const node of nodes)
          if (typeof node !== 'string' && node[repeated.item] !== undefined) groupsSeen.add(repeated.name);
      }
      if (repeated === undefined || !itemsElsewhere.has(repeated.name)) {
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
  };

  function flattenRecord(record: ScannedRecord, root: XmlNode): Flat {
    const flat: Flat = { texts: [], chars: 0 };
    if (typeof root !== 'string') {
      const attrs = root[ATTRS] as Record<string, string> | undefined;
      if (attrs !== undefined) for (const [k, v] of Object.entries(attrs)) leaf(flat, '', [], k, v);
      for (const [child, nodes] of ownChildren(root)) visit(flat, '', [], child, nodes);
    }
    for (const [name, value] of record.inherited) {
      const dot = name.indexOf('.');
      const index = columnOf(`^${name}`, [name], name);
      if (dot > 0) put(flat, index, value);
    }
    return flat;
  }

  /** The record's key as the child rows carry it: its `RequestID` attribute or leaf. */
  const requestIdOf = (root: { [key: string]: unknown }): string | undefined => {
    const attr = (root[ATTRS] as Record<string, string> | undefined)?.RequestID;
    if (attr !== undefined) return attr;
    const node = (root.RequestID as XmlNode[] | undefined)?.[0];
    if (typeof node === 'string') return node;
    const text = node?.[TEXT];
    return typeof text === 'string' ? text : undefined;
  };

  /** One row per item of the record's repeated group `childGroup`, in document order. */
  function flattenItems(root: XmlNode, repeated: XmlRepeatedGroup): Flat[] {
    if (typeof root === 'string') return [];
    const requestId = requestIdOf(root);
    const flats: Flat[] = [];
    const prefix = `/${repeated.container}/${repeated.item}`;
    for (const container of (root[repeated.container] as XmlNode[] | undefined) ?? []) {
      if (typeof container === 'string') continue;
      const items = (container[repeated.item] as XmlNode[] | undefined) ?? [];
      for (const item of items) {
        const flat: Flat = { texts: [], chars: 0 };
        if (requestId !== undefined) put(flat, keyIndex, requestId);
        const attrs =
          typeof item === 'string' ? undefined : (item[ATTRS] as Record<string, string> | undefined);
        const numberText =
          repeated.numberAttribute === undefined
            ? String(flats.length + 1)
            : (attrs?.[repeated.numberAttribute] ?? String(flats.length));
        put(flat, numberIndex, numberText);
        if (typeof item === 'string') leaf(flat, prefix, [repeated.group], repeated.item, item);
        else {
          if (attrs !== undefined)
            for (const [k, v] of Object.entries(attrs))
              if (k !== repeated.numberAttribute) leaf(flat, prefix, [repeated.group], k, v);
          for (const child of Object.keys(item)) {
            if (child === ATTRS || child === TEXT) continue;
            visit(flat, prefix, [repeated.group], child, item[child] as XmlNode[]);
          }
        }
        flats.push(flat);
      }
    }
    return flats;
  }

  const scanned = scan();

  async function* produce(): AsyncGenerator<RecordBatch> {
    let group: ScannedRecord[] = [];
    let groupChars = 0;
    for await (const record of scanned) {
      if (metadata === undefined) startMetadata();
      if (record.problem !== undefined) {
        // Kept whole as a reject of the records (the items of a child table's read go with it).
        if (childGroup === undefined) {
          builder.rejects.push({
            recordNumber: record.recordNumber,
            raw: record.text,
            code: 'PARSE_XML_RECORD',
            message: `${fileName} record ${record.recordNumber}: ${record.problem}; the record is not read.`,
          });
          if (builder.full) yield builder.take();
        }
        continue;
      }
      group.push(record);
      groupChars += record.text.length;
      if (group.length >= GROUP_RECORDS || groupChars >= GROUP_CHARS) {
        yield* typeGroup(group);
        group = [];
        groupChars = 0;
      }
    }
    if (metadata === undefined) startMetadata();
    if (group.length > 0) yield* typeGroup(group);
    if (builder.size > 0) yield builder.take();
  }

  function* typeGroup(group: readonly ScannedRecord[]): Generator<RecordBatch> {
    const nodes = parseGroup(group);
    for (let g = 0; g < group.length; g++) {
      const record = group[g]!;
      const flats =
        childGroup === undefined ? [flattenRecord(record, nodes[g]!)] : flattenItems(nodes[g]!, childGroup);
      for (const flat of flats) {
        typeRow(record, flat);
        if (builder.full) yield builder.take();
      }
    }
  }

  function typeRow(record: ScannedRecord, flat: Flat): void {
    const { texts } = flat;
    const width = set.columns.length;
    const values: TypedValue[] = new Array<TypedValue>(width);
    let bad = -1;
    for (let i = 0; i < width; i++) {
      const text = texts[i];
      if (text === undefined) {
        values[i] = null;
        continue;
      }
      const typed = set.coercers[i]!(text);
      if (typed === INVALID) {
        bad = i;
        break;
      }
      values[i] = typed;
    }
    if (bad >= 0) {
      builder.rejects.push(
        invalidValueReject(
          fileName,
          'record',
          record.recordNumber,
          record.text,
          set.columns[bad]!,
          texts[bad]!,
        ),
      );
    } else {
      builder.records.push({ recordNumber: record.recordNumber, values });
      builder.chars += flat.chars;
    }
  }

  function startMetadata(): void {
    metadata = metadataFrom(scanner, fileName);
    const definition = givenDefinition?.name ?? guessReportDefinition(metadata.reportName)?.name;
    metadata.reportDefinition = definition;
    resolveOptions = definition === undefined ? {} : { report: definition };
  }

  const produced = produce();
  const first = await produced.next();
  builder.markAnnounced();
  async function* batches(): AsyncGenerator<RecordBatch> {
    if (first.done !== true) {
      first.value.newColumns = [];
      yield first.value;
      yield* produced;
    }
  }
  if (metadata === undefined) startMetadata();

  return {
    metadata: metadata!,
    columns: set.columns,
    unknownColumns: set.unknownColumns,
    batches: batches(),
    summary: () => summaryOf(builder),
    repeatedGroupsSeen: () => groupsSeen,
  };
}
