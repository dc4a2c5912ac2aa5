/**
 * On-demand JSON responses (facts §2.9–§2.13) → one `RecordSource` per section, typed by the section
 * catalog (`on-demand-sections.ts`) with the same type rules as report files.
 *
 * Structure checks: the body must be an object and each section key an array (or absent/null = no
 * rows), else a thrown `PARSE_JSON_INVALID` naming the path. An item that is not an object is a reject
 * `PARSE_JSON_INVALID`; a value that does not fit its column (an object where a scalar is expected,
 * `"abc"` for an amount) is a reject `MAP_INVALID_VALUE` whose message names the path
 * (`settlements[3].amount`), the value and the expected form.
 * JSON scalars: strings are coerced like file values; numbers and booleans are taken through their
 * decimal/text form (a JSON number for an amount is accepted; money in these responses is a string).
 * Keys the catalog does not list become unknown text columns (`snakeCase(key)`; objects as JSON text).
 * Record numbers are 1-based positions in the section's array (for nested notes: in the flattened list).
 */
import {
  EXPECTED_FORM,
  INVALID,
  coerceTimestamptz,
  sectionsOf,
  truncateForMessage,
  unknownField,
  ON_DEMAND_METADATA_KEYS,
} from '../../catalog/index.js';
import type { OnDemandEndpoint, OnDemandField, OnDemandSection, TypedValue } from '../../catalog/index.js';
import {
  BatchBuilder,
  ColumnSet,
  DEFAULT_BATCH_SIZE,
  emptyMetadata,
  parseError,
  summaryOf,
} from '../records.js';
import type {
  ColumnSpec,
  RecordBatch,
  RecordSource,
  RejectedRecord,
  ReportMetadata,
  TypedRecord,
} from '../records.js';

export interface OnDemandOptions {
  /** Name of the request or window, for messages (default: the endpoint). */
  source?: string;
  batchSize?: number;
}

export interface OnDemandResult {
  endpoint: OnDemandEndpoint;
  metadata: ReportMetadata;
  /** One record source per section name (`settlements`, `totals`, `conversionDetailNotes`, …). */
  sections: Record<string, RecordSource>;
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function rawOf(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function arrayAt(body: Json, key: string, path: string, source: string): unknown[] {
  const value = body[key];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value))
    throw parseError(
      'PARSE_JSON_INVALID',
      `${source}: ${path} should be an array, got ${typeof value}. The response does not have the documented shape.`,
      { file: source, path },
    );
  return value;
}

interface Row {
  path: string;
  item: unknown;
  /** Values of parent/index fields, by key. */
  extra?: Json;
}

function addSectionFields(
  set: ColumnSet,
  section: OnDemandSection,
  fieldColumns?: { field: OnDemandField; index: number }[],
): void {
  for (const field of section.fields) {
    const index = set.add(field, field.key, false);
    fieldColumns?.push({ field, index });
  }
}

/** The columns of a section's records when its items have no keys but the declared ones. */
export function sectionColumns(section: OnDemandSection): ColumnSpec[] {
  const set = new ColumnSet();
  addSectionFields(set, section);
  return set.columns;
}

function buildSection(
  section: OnDemandSection,
  rows: Row[],
  source: string,
  batchSize: number,
): RecordSource {
  const set = new ColumnSet();
  const fieldColumns: { field: OnDemandField; index: number }[] = [];
  addSectionFields(set, section, fieldColumns);
  const known = new Set(section.fields.filter((f) => f.source === 'item').map((f) => f.key));
  const ignored = new Set(
    sectionsOf(section.endpoint)
      .filter((s) => s.kind === 'nested' && s.parentKey === section.key)
      .map((s) => s.key),
  );
  const unknownKeys = new Map<string, number>();
  for (const row of rows) {
    if (!isObject(row.item)) continue;
    for (const key of Object.keys(row.item)) {
      if (known.has(key) || ignored.has(key) || unknownKeys.has(key)) continue;
      unknownKeys.set(key, set.add(unknownField(key), key, false));
    }
  }
  const builder = new BatchBuilder(set, batchSize, Number.POSITIVE_INFINITY);
  const columns = set.columns;

  const coercers = set.coercers;
  const toValue = (index: number, value: unknown): TypedValue | typeof INVALID => {
    const column = columns[index]!;
    if (value === undefined || value === null) return null;
    if (typeof value === 'string') return coercers[index]!(value);
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) return INVALID;
      if (column.pgType === 'boolean') return value === 1 ? true : value === 0 ? false : INVALID;
      if (column.pgType === 'date' || column.pgType === 'timestamptz') return INVALID;
      return coercers[index]!(String(value));
    }
    if (typeof value === 'boolean') {
      if (column.pgType === 'boolean') return value;
      if (column.pgType === 'text') return String(value);
      return INVALID;
    }
    if (column.field.kind === 'unknown' && column.pgType === 'text') return rawOf(value);
    return INVALID;
  };

  const records: TypedRecord[] = [];
  const rejects: RejectedRecord[] = [];
  /** The reject of a record whose `key` has a value the column cannot take. */
  const invalidValue = (
    recordNumber: number,
    row: Row,
    item: Json,
    index: number,
    key: string,
    value: unknown,
  ): RejectedRecord => {
    const column = columns[index]!;
    const shown = truncateForMessage(typeof value === 'string' ? value : rawOf(value));
    return {
      recordNumber,
      raw: rawOf(item),
      code: 'MAP_INVALID_VALUE',
      field: key,
      value: shown,
      message:
        `${source} ${row.path}.${key}: field ${key} (column ${column.column}, ${column.pgType}) has ` +
        `${typeof value === 'string' ? JSON.stringify(shown) : `${shown} (${typeof value})`}; expected ${EXPECTED_FORM[column.pgType]}`,
    };
  };
  const unknownList = [...unknownKeys];
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    const recordNumber = i + 1;
    if (!isObject(row.item)) {
      rejects.push({
        recordNumber,
        raw: rawOf(row.item),
        code: 'PARSE_JSON_INVALID',
        message: `${source} ${row.path}: expected an object, got ${Array.isArray(row.item) ? 'an array' : typeof row.item}.`,
      });
      continue;
    }
    const item = row.item;
    const values: TypedValue[] = new Array<TypedValue>(columns.length).fill(null);
    // The first value a column cannot take rejects the record (no closure per record: a page has
    // thousands).
    let rejected: RejectedRecord | undefined;
    for (const { field, index } of fieldColumns) {
      const value = field.source === 'item' ? item[field.key] : row.extra?.[field.key];
      const typed = toValue(index, value);
      if (typed === INVALID) {
        rejected = invalidValue(recordNumber, row, item, index, field.key, value);
        break;
      }
      values[index] = typed;
    }
    if (rejected === undefined) {
      for (const [key, index] of unknownList) {
        if (!(key in item)) continue;
        const typed = toValue(index, item[key]);
        if (typed === INVALID) {
          rejected = invalidValue(recordNumber, row, item, index, key, item[key]);
          break;
        }
        values[index] = typed;
      }
    }
    if (rejected !== undefined) rejects.push(rejected);
    else records.push({ recordNumber, values });
  }

  async function* batches(): AsyncGenerator<RecordBatch> {
    let r = 0;
    let j = 0;
    // Records and rejects are cut in record-number order so each batch is a contiguous slice.
    while (r < records.length || j < rejects.length) {
      while (!builder.full && (r < records.length || j < rejects.length)) {
        const nextRecord = records[r];
        const nextReject = rejects[j];
        if (
          nextReject === undefined ||
          (nextRecord !== undefined && nextRecord.recordNumber < nextReject.recordNumber)
        ) {
          builder.records.push(nextRecord!);
          r++;
        } else {
          builder.rejects.push(nextReject);
          j++;
        }
      }
      yield builder.take();
    }
  }

  return {
    metadata: emptyMetadata('json', source),
    columns,
    unknownColumns: set.unknownColumns,
    batches: batches(),
    summary: () => summaryOf(builder),
  };
}

/** Split one on-demand response body into typed sections. */
export function parseOnDemandResponse(
  endpoint: OnDemandEndpoint,
  body: unknown,
  options: OnDemandOptions = {},
): OnDemandResult {
  const source = options.source ?? endpoint;
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  if (!isObject(body))
    throw parseError(
      'PARSE_JSON_INVALID',
      `${source}: the ${endpoint} response body should be a JSON object, got ${Array.isArray(body) ? 'an array' : typeof body}.`,
      { file: source, path: '$' },
    );
  const metadata = emptyMetadata('json', source);
  for (const key of ON_DEMAND_METADATA_KEYS[endpoint]) {
    const value = body[key];
    if (value !== undefined && value !== null && typeof value !== 'object')
      metadata.attributes[key] = String(value);
  }
  const startTime = metadata.attributes.startTime;
  const endTime = metadata.attributes.endTime;
  metadata.rawStart = startTime;
  metadata.rawEnd = endTime;
  if (startTime !== undefined) {
    const t = coerceTimestamptz(startTime);
    metadata.startTime = typeof t === 'string' ? t : undefined;
  }
  if (endTime !== undefined) {
    const t = coerceTimestamptz(endTime);
    metadata.endTime = typeof t === 'string' ? t : undefined;
  }
  metadata.organizationId = metadata.attributes.organizationId;
  metadata.reportName = endpoint;

  const sections: Record<string, RecordSource> = {};
  for (const section of sectionsOf(endpoint)) {
    let rows: Row[];
    if (section.kind === 'items') {
      rows = arrayAt(body, section.key, section.key, source).map((item, i) => ({
        path: `${section.key}[${i}]`,
        item,
      }));
    } else if (section.kind === 'totals') {
      rows = [];
      for (const key of section.totalKeys ?? []) {
        arrayAt(body, key, key, source).forEach((item, i) =>
          rows.push({ path: `${key}[${i}]`, item, extra: { totalType: key } }),
        );
      }
    } else {
      rows = [];
      const parentKey = section.parentKey!;
      arrayAt(body, parentKey, parentKey, source).forEach((parent, i) => {
        if (!isObject(parent)) return; // rejected in the parent section
        const path = `${parentKey}[${i}].${section.key}`;
        const nested = parent[section.key];
        if (nested === undefined || nested === null) return;
        if (!Array.isArray(nested)) {
          rows.push({ path, item: nested });
          return;
        }
        const parentValues: Json = {};
        for (const f of section.fields) if (f.source === 'parent') parentValues[f.key] = parent[f.key];
        nested.forEach((item, j) =>
          rows.push({ path: `${path}[${j}]`, item, extra: { ...parentValues, noteNumber: j + 1 } }),
        );
      });
    }
    const built = buildSection(section, rows, source, batchSize);
    built.metadata = { ...metadata, reportType: section.name };
    sections[section.name] = built;
  }
  return { endpoint, metadata, sections };
}
