/**
 * XML report files (facts §5.2), read record by record with bounded memory: `XmlRecordScanner` finds
 * each record element in the byte stream and fast-xml-parser parses the records (in groups of ≤ 50
 * records / 64 Ki characters, to amortise its per-call set-up; never the document), with tag and
 * attribute value parsing off (22-digit ids stay text) and no DOCTYPE ever reaching it (so no
 * entity expansion; the five XML entities and character references are decoded — and, leniently,
 * HTML named entities).
 *
 * Mapping of one record (`<Request>` by default, or the report definition's `xmlRecordElement`):
 *  - the root element's attributes are report metadata (`Name`, `Version`, `MerchantID`,
 *    `ReportStartDate`, `ReportEndDate`, …), not columns;
 *  - attributes of the other enclosing elements apply to every record inside them, named
 *    `Element.Attribute` (`<Batch BatchID BatchDate>` → `Batch.BatchID`, `Batch.BatchDate`);
 *  - the record's attributes and direct leaf children are `Request.<Name>`, resolved through the
 *    catalog (so `Request/Amount` → `PaymentData.Amount`, `Request@RequestID` → `Request.RequestID`);
 *  - nested groups flatten to `Group.Field` (`<BillTo><FirstName>` → `BillTo.FirstName`); deeper
 *    leaves try `<parent>.<Leaf>`, then `<top group>.<Leaf>`, else stay unknown under their full
 *    path (`PaymentMethod.Card.AccountSuffix`); attributes of a group element are `<Group>.<Attr>`;
 *  - element order does not matter;
 *  - repeated elements (`<LineItems><LineItem>…</LineItem><LineItem>…`): the FIRST occurrence fills
 *    the typed columns, and all occurrences are also kept, as a JSON array, in an unknown text column
 *    named after the path + `_json` (`line_items_line_item_json`), so nothing is lost;
 *  - a record's own values win over inherited ones.
 * Columns are discovered while reading: `columns` grows, and each batch lists its `newColumns`. The
 * first batch is read when the report is opened, so `columns` is already populated then.
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
} from '../catalog/index.js';
import type { ResolvedField, TypedValue } from '../catalog/index.js';
import { toReadable } from './csv-report.js';
import {
  BatchBuilder,
  ColumnSet,
  DEFAULT_BATCH_SIZE,
  DEFAULT_MAX_BATCH_CHARS,
  emptyMetadata,
  invalidValueReject,
  parseError,
  summaryOf,
} from './records.js';
import type { OpenReportOptions, RecordBatch, RecordSource, ReportInput, ReportMetadata } from './records.js';
import { XmlRecordScanner, XmlScanError, localName } from './xml-scanner.js';
import type { ScannedRecord } from './xml-scanner.js';

export interface OpenXmlReportOptions extends OpenReportOptions {
  /** Local name of the record element; default: the report definition's, else `Request`. */
  recordElement?: string;
}

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
  const get = (name: string): string | undefined => {
    const hit = rootAttributes.find(([k]) => localName(k) === name);
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
export async function openXmlReport(
  input: ReportInput,
  options: OpenXmlReportOptions,
): Promise<RecordSource> {
  const fileName = options.fileName;
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const maxChars = options.maxBatchChars ?? DEFAULT_MAX_BATCH_CHARS;
  const givenDefinition = options.report === undefined ? undefined : findReportDefinition(options.report);
  const recordElement = options.recordElement ?? givenDefinition?.xmlRecordElement ?? 'Request';
  const scanner = new XmlRecordScanner(recordElement);
  const source = toReadable(input);
  const decoder = new TextDecoder('utf-8');
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
    let field: ResolvedField | undefined;
    let name = fallback;
    for (const candidate of candidates) {
      const resolved = resolveHeader(candidate, resolveOptions);
      if (resolved.kind === 'catalog') {
        field = resolved;
        name = candidate;
        break;
      }
    }
    field ??= resolveHeader(fallback, resolveOptions);
    index = set.add(field, name, true);
    pathColumns.set(pathKey, index);
    return index;
  };

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

  function flattenRecord(
    record: ScannedRecord,
    root: XmlNode,
  ): { texts: (string | undefined)[]; chars: number } {
    const texts: (string | undefined)[] = [];
    let chars = 0;
    const put = (index: number, value: string): void => {
      if (texts[index] === undefined) {
        texts[index] = value;
        chars += value.length;
      }
    };
    const recordName = recordElement;
    const leaf = (prefix: string, groups: readonly string[], name: string, value: string): void => {
      const pathKey = `${prefix}/${name}`;
      let index = pathColumns.get(pathKey);
      if (index === undefined) {
        const candidates =
          groups.length === 0
            ? [`${recordName}.${name}`]
            : [`${groups[groups.length - 1]}.${name}`, `${groups[0]}.${name}`];
        const fallback = groups.length === 0 ? `${recordName}.${name}` : `${groups.join('.')}.${name}`;
        index = columnOf(pathKey, candidates, fallback);
      }
      put(index, value);
    };
    const visit = (prefix: string, groups: readonly string[], name: string, nodes: XmlNode[]): void => {
      if (nodes.length > 1) {
        const path = [...groups, name].join('.');
        const index = columnOf(`${prefix}/${name}[]`, [], `${path}_json`);
        put(index, JSON.stringify(plain(nodes)));
      }
      const first = nodes[0];
      if (first === undefined) return;
      if (typeof first === 'string') {
        leaf(prefix, groups, name, first);
        return;
      }
      const attrs = first[ATTRS] as Record<string, string> | undefined;
      const children = Object.keys(first).filter((k) => k !== ATTRS && k !== TEXT);
      if (children.length === 0) {
        const text = first[TEXT];
        leaf(prefix, groups, name, typeof text === 'string' ? text : '');
        if (attrs !== undefined) {
          const inner = [...groups, name];
          for (const [k, v] of Object.entries(attrs)) leaf(`${prefix}/${name}`, inner, k, v);
        }
        return;
      }
      const inner = [...groups, name];
      const innerPrefix = `${prefix}/${name}`;
      if (attrs !== undefined) for (const [k, v] of Object.entries(attrs)) leaf(innerPrefix, inner, k, v);
      for (const child of children) visit(innerPrefix, inner, child, first[child] as XmlNode[]);
    };
    if (typeof root !== 'string') {
      const attrs = root[ATTRS] as Record<string, string> | undefined;
      if (attrs !== undefined) for (const [k, v] of Object.entries(attrs)) leaf('', [], k, v);
      for (const child of Object.keys(root)) {
        if (child === ATTRS || child === TEXT) continue;
        visit('', [], child, root[child] as XmlNode[]);
      }
    }
    for (const [name, value] of record.inherited) {
      const dot = name.indexOf('.');
      const index = columnOf(`^${name}`, [name], name);
      if (dot > 0) put(index, value);
    }
    return { texts, chars };
  }

  const scanned = scan();

  async function* produce(): AsyncGenerator<RecordBatch> {
    let group: ScannedRecord[] = [];
    let groupChars = 0;
    for await (const record of scanned) {
      if (metadata === undefined) startMetadata();
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
      const flat = flattenRecord(record, nodes[g]!);
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
      if (builder.full) yield builder.take();
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
  };
}
