/**
 * XML report files (facts §5.2), read record by record with bounded memory: `XmlRecordScanner` finds
 * each record element in the byte stream and fast-xml-parser parses the records (in groups of ≤ 50
 * records / 64 Ki characters, to amortise its per-call set-up; never the document), with tag and
 * attribute value parsing off (22-digit ids stay text) and no DOCTYPE ever reaching it (so no
 * entity expansion; the five XML entities and character references are decoded, any other
 * reference makes its record a reject).
 *
 * Mapping of one record (`<Request>` by default, or the report definition's `xmlRecordElement`;
 * the flattening is xml-record-flattener.ts, the typing and batching `XmlRecordReader` below):
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
import type { Readable } from 'node:stream';
import { XMLParser } from 'fast-xml-parser';
import {
  INVALID,
  coerceTimestamptz,
  findReportDefinition,
  guessReportDefinition,
} from '../../catalog/index.js';
import type { ReportDefinition, TypedValue } from '../../catalog/index.js';
import { XML_REPEATED_GROUPS } from '../../catalog/child-tables.js';
import type { XmlRepeatedGroupName } from '../../catalog/child-tables.js';
import {
  BatchBuilder,
  ColumnSet,
  DEFAULT_BATCH_SIZE,
  DEFAULT_MAX_BATCH_CHARS,
  emptyMetadata,
  invalidValueReject,
  parseError,
  summaryOf,
  toReadable,
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
import { ATTRS, TEXT, XmlColumns, XmlRecordFlattener } from './xml-record-flattener.js';
import type { FlatRow, XmlNode } from './xml-record-flattener.js';

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

/** The records of an XML report, and which repeated groups had items among the records read so far. */
export interface XmlRecordSource extends RecordSource {
  repeatedGroupsSeen(): ReadonlySet<XmlRepeatedGroupName>;
}

/** Records parsed per fast-xml-parser call (bounded by count and characters). */
const GROUP_RECORDS = 50;
const GROUP_CHARS = 64 * 1024;

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

/**
 * The record elements of a byte (or text) stream, as `scanner` finds them; the stream is destroyed
 * when they end. Malformed XML → `PARSE_XML_INVALID`; no root element → `PARSE_EMPTY`.
 */
async function* scanRecords(
  source: Readable,
  scanner: XmlRecordScanner,
  fileName: string,
): AsyncGenerator<ScannedRecord> {
  // UTF-8, or UTF-16 told by its first bytes (text-encoding.ts).
  const decoder = new ReportDecoder(fileName);
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
    if (!(error instanceof XmlScanError)) throw error;
    throw parseError(
      'PARSE_XML_INVALID',
      `${fileName}: malformed XML at record ${error.recordNumber}: ${error.message}. The file cannot be read.`,
      { file: fileName, record: error.recordNumber, offset: error.offset },
      error,
    );
  } finally {
    if (!source.destroyed) source.destroy();
  }
  if (!scanner.sawRoot)
    throw parseError('PARSE_EMPTY', `${fileName}: the XML document is empty (no root element).`, {
      file: fileName,
      record: 0,
    });
}

/**
 * Parse a group of records in one fast-xml-parser call (its per-call set-up dominates the cost of a
 * small record); a group that fails is parsed record by record to name the bad record.
 */
function parseRecordGroup(parser: XMLParser, group: readonly ScannedRecord[], fileName: string): XmlNode[] {
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

/**
 * One XML report read into typed batches: scanned records are parsed in groups, flattened
 * (xml-record-flattener.ts), typed by their columns' coercers and gathered into batches.
 */
class XmlRecordReader {
  private readonly fileName: string;
  private readonly givenDefinition: ReportDefinition | undefined;
  private readonly scanner: XmlRecordScanner;
  private readonly parser = createRecordParser();
  private readonly set = new ColumnSet();
  private readonly builder: BatchBuilder;
  private readonly columns: XmlColumns;
  private readonly flattener: XmlRecordFlattener;
  private readonly records: AsyncGenerator<ScannedRecord>;
  /** Read from the root element when the first record (or the end) is met. */
  private metadata: ReportMetadata | undefined;

  constructor(input: ReportInput, options: OpenXmlReportOptions) {
    this.fileName = options.fileName;
    this.givenDefinition = options.report === undefined ? undefined : findReportDefinition(options.report);
    const recordElement = options.recordElement ?? this.givenDefinition?.xmlRecordElement ?? 'Request';
    this.scanner = new XmlRecordScanner(recordElement);
    const source = toReadable(input);
    this.builder = new BatchBuilder(
      this.set,
      options.batchSize ?? DEFAULT_BATCH_SIZE,
      options.maxBatchChars ?? DEFAULT_MAX_BATCH_CHARS,
    );
    this.columns = new XmlColumns(this.set, recordElement);
    const repeatedGroup =
      options.repeatedGroup === undefined
        ? undefined
        : XML_REPEATED_GROUPS.find((g) => g.name === options.repeatedGroup);
    this.flattener = new XmlRecordFlattener(this.columns, repeatedGroup, options.childTables ?? []);
    this.records = scanRecords(source, this.scanner, this.fileName);
  }

  /** Reads up to the first batch (so the metadata and first columns are known), then streams. */
  async open(): Promise<XmlRecordSource> {
    const produced = this.produce();
    const first = await produced.next();
    this.builder.markAnnounced();
    async function* batches(): AsyncGenerator<RecordBatch> {
      if (first.done !== true) {
        first.value.newColumns = [];
        yield first.value;
        yield* produced;
      }
    }
    const metadata = this.metadata ?? this.readMetadata();
    return {
      metadata,
      columns: this.set.columns,
      unknownColumns: this.set.unknownColumns,
      batches: batches(),
      summary: () => summaryOf(this.builder),
      repeatedGroupsSeen: () => this.flattener.groupsSeen,
    };
  }

  /** The batches: records gathered into parser groups, a record with a problem kept as a reject. */
  private async *produce(): AsyncGenerator<RecordBatch> {
    const { builder, fileName } = this;
    let group: ScannedRecord[] = [];
    let groupChars = 0;
    for await (const record of this.records) {
      if (this.metadata === undefined) this.readMetadata();
      if (record.problem !== undefined) {
        // Kept whole as a reject of the records (the items of a child table's read go with it).
        if (this.flattener.repeatedGroup === undefined) {
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
        yield* this.typeGroup(group);
        group = [];
        groupChars = 0;
      }
    }
    if (this.metadata === undefined) this.readMetadata();
    if (group.length > 0) yield* this.typeGroup(group);
    if (builder.size > 0) yield builder.take();
  }

  /** A group of records parsed, flattened into rows and typed; a batch whenever one is full. */
  private *typeGroup(group: readonly ScannedRecord[]): Generator<RecordBatch> {
    const nodes = parseRecordGroup(this.parser, group, this.fileName);
    const { builder, flattener } = this;
    for (let g = 0; g < group.length; g++) {
      const record = group[g]!;
      const rows =
        flattener.repeatedGroup === undefined
          ? [flattener.record(record, nodes[g]!)]
          : flattener.items(nodes[g]!);
      for (const row of rows) {
        this.typeRow(record, row);
        if (builder.full) yield builder.take();
      }
    }
  }

  /** A row's texts typed by their columns into a record, or the whole record a reject at the first invalid value. */
  private typeRow(record: ScannedRecord, row: FlatRow): void {
    const { set, builder } = this;
    const { texts } = row;
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
          this.fileName,
          'record',
          record.recordNumber,
          record.text,
          set.columns[bad]!,
          texts[bad]!,
        ),
      );
    } else {
      builder.records.push({ recordNumber: record.recordNumber, values });
      builder.chars += row.chars;
    }
  }

  /** The report's metadata from the root element, and the definition that names its columns. */
  private readMetadata(): ReportMetadata {
    const metadata = xmlReportMetadata(this.scanner.rootAttributes, this.fileName);
    const definition = this.givenDefinition?.name ?? guessReportDefinition(metadata.reportName)?.name;
    metadata.reportDefinition = definition;
    this.columns.nameFor(definition);
    this.metadata = metadata;
    return metadata;
  }
}

/** Open an XML report: reads up to the first batch, then streams typed batches record by record. */
export async function openXmlReport(
  input: ReportInput,
  options: OpenXmlReportOptions,
): Promise<XmlRecordSource> {
  return new XmlRecordReader(input, options).open();
}
