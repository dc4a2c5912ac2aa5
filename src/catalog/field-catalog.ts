/**
 * The field catalog built from `FIELD_GROUPS`: every field with its warehouse column, type and the
 * names it has in report files, and the header lookup that maps any of those names to the field.
 *
 * Column-naming rule (deterministic, collision-checked when this module loads):
 *  1. prefix = the group's `columnPrefix` if set, else `snakeCase(groupId)`
 *     (set: `Request`, `PaymentData`, `Merchant-DefinedDataFields` → '' (bare names),
 *      `ChargebackAndRetrieval` → `chargeback`, `LifeCycleManagementEvent` → `lcm`);
 *  2. name = `snakeCase(fieldName)`;
 *  3. column = name when the prefix is '', else `prefix_name` — except that a name which already
 *     starts with the prefix word(s) is not repeated (`Funding.FundingAmount` → `funding_amount`,
 *     `ChargebackAndRetrieval.ChargebackAmount` → `chargeback_amount`), unless that shortened name
 *     is also another field's column, in which case the full `prefix_name` is kept
 *     (`Exception.ReasonCode` → `exception_reason_code`, so `Exception.ExceptionReasonCode` →
 *     `exception_exception_reason_code`).
 * Examples: `BillTo.FirstName` → `bill_to_first_name`, `GiftCard.CurrentBalance` →
 * `gift_card_current_balance`, `Request.RequestID` → `request_id`, `PaymentData.CurrencyCode` →
 * `currency_code`.
 *
 * Header names of a field (all resolve to it, compared with `headerKey`, where `@` and `/` of XML
 * paths count as separators too): its `Group.Field` id; the Simple Order API and SCMP names (documented
 * overrides, and always also the names the rules of `naming.ts` derive, so a writer that only knows
 * the rules is understood); its aliases (names seen in real files). Report-scoped aliases (e.g.
 * `status` → `Batch.Status` in Payment Batch Detail) apply only when the report is given.
 */
import { headerKey, scmpName as ruleScmpName, snakeCase, soapiName as ruleSoapiName } from './naming.js';
import { FIELD_GROUPS } from './field-groups.js';
import type { FieldSpec, GroupSpec } from './field-groups.js';
import type { PgType } from './types.js';

export interface CatalogField {
  readonly kind: 'catalog';
  /** `Group.Field`, the name used in `reportFields`. */
  readonly id: string;
  readonly group: string;
  readonly groupTitle: string;
  /** The field name as the spec spells it. */
  readonly name: string;
  readonly description: string | undefined;
  readonly column: string;
  readonly pgType: PgType;
  readonly length: number | undefined;
  readonly values: readonly string[] | undefined;
  /** Simple Order API header (documented override, else the naming rule). */
  readonly soapiName: string;
  /** The Simple Order value exactly as the spec lists it, when it differs from `soapiName`. */
  readonly documentedSoapiName: string | undefined;
  /** SCMP header (documented override, else the naming rule). */
  readonly scmpName: string;
  /** The SCMP value exactly as the documentation lists it, when it differs from `scmpName`. */
  readonly documentedScmpName: string | undefined;
  readonly aliases: readonly string[];
  /** Where a field outside the spec's catalog comes from (undefined = the spec). */
  readonly provenance: string | undefined;
}

/** A header the catalog does not know: kept as a text column and reported so the loader adds it. */
export interface UnknownField {
  readonly kind: 'unknown';
  readonly header: string;
  readonly column: string;
  readonly pgType: 'text';
  readonly description: undefined;
}

export type ResolvedField = CatalogField | UnknownField;

/** PostgreSQL's identifier limit. */
export const MAX_IDENTIFIER_LENGTH = 63;

function groupPrefix(group: GroupSpec): string {
  return group.columnPrefix ?? snakeCase(group.id);
}

function buildFields(): CatalogField[] {
  interface Draft {
    group: GroupSpec;
    spec: FieldSpec;
    full: string;
    short: string | undefined;
  }
  const drafts: Draft[] = [];
  for (const group of FIELD_GROUPS) {
    const prefix = groupPrefix(group);
    for (const spec of group.fields) {
      const name = snakeCase(spec.name);
      if (spec.column !== undefined) {
        drafts.push({ group, spec, full: spec.column, short: undefined });
      } else if (prefix === '') {
        drafts.push({ group, spec, full: name, short: undefined });
      } else {
        const full = `${prefix}_${name}`;
        const short = name === prefix || name.startsWith(`${prefix}_`) ? name : undefined;
        drafts.push({ group, spec, full, short });
      }
    }
  }
  const fullNames = new Set(drafts.map((d) => d.full));
  const shortCounts = new Map<string, number>();
  for (const d of drafts)
    if (d.short !== undefined) shortCounts.set(d.short, (shortCounts.get(d.short) ?? 0) + 1);

  const fields: CatalogField[] = [];
  const columns = new Map<string, string>();
  for (const d of drafts) {
    const usable = d.short !== undefined && !fullNames.has(d.short) && shortCounts.get(d.short) === 1;
    const column = usable ? d.short! : d.full;
    const id = `${d.group.id}.${d.spec.name}`;
    const clash = columns.get(column);
    if (clash !== undefined) throw new Error(`Catalog column ${column} used by ${clash} and ${id}`);
    if (column.length > MAX_IDENTIFIER_LENGTH) throw new Error(`Catalog column ${column} is too long`);
    columns.set(column, id);
    fields.push(
      Object.freeze({
        kind: 'catalog' as const,
        id,
        group: d.group.id,
        groupTitle: d.group.title,
        name: d.spec.name,
        description: d.spec.description,
        column,
        pgType: d.spec.type,
        length: d.spec.length,
        values: d.spec.values,
        soapiName: d.spec.soapi ?? ruleSoapiName(id),
        documentedSoapiName: d.spec.documentedSoapi,
        scmpName: d.spec.scmp ?? ruleScmpName(id),
        documentedScmpName: d.spec.documentedScmp,
        aliases: d.spec.aliases ?? [],
        provenance: d.spec.provenance ?? d.group.provenance,
      }),
    );
  }
  return fields;
}

/** Every field of the catalog, in the spec's group order. */
export const CATALOG_FIELDS: readonly CatalogField[] = Object.freeze(buildFields());

const BY_ID = new Map(CATALOG_FIELDS.map((field) => [field.id, field]));

/** The normalised lookup key of a header or XML path (`Request@RequestID`, `Request/Amount`). */
export function lookupKey(header: string): string {
  return headerKey(header.replace(/[@/]/g, '.'));
}

/** Report-scoped aliases: headers whose meaning depends on the report definition. */
export const REPORT_SCOPED_ALIASES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  // The classic Payment Batch Detail file's `status` column (value BATCHED) is the batch status.
  PaymentBatchDetailClass: { status: 'Batch.Status' },
  // Display-name headers of the Billable Transactions Detail report (Reporting User Guide).
  BillableTransactionsDetailClass: {
    'Organization ID': 'BillableTransactions.OrganizationID',
    'Product Code': 'BillableTransactions.ProductCode',
    'Product Description': 'BillableTransactions.ProductDescription',
    Quantity: 'BillableTransactions.Quantity',
    'Requested Amount': 'BillableTransactions.RequestedAmount',
    'Service Name': 'BillableTransactions.ServiceName',
  },
};

function buildIndex(): Map<string, CatalogField> {
  const index = new Map<string, CatalogField>();
  const level = new Map<string, number>();
  const add = (name: string, field: CatalogField, rank: number): void => {
    const key = lookupKey(name);
    const existing = index.get(key);
    if (existing === undefined) {
      index.set(key, field);
      level.set(key, rank);
      return;
    }
    if (existing === field) return;
    const existingRank = level.get(key)!;
    if (existingRank === rank)
      throw new Error(`Header ${name} would name both ${existing.id} and ${field.id}`);
    if (rank < existingRank) {
      index.set(key, field);
      level.set(key, rank);
    }
  };
  for (const field of CATALOG_FIELDS) add(field.id, field, 0);
  for (const field of CATALOG_FIELDS) {
    add(field.soapiName, field, 1);
    add(field.scmpName, field, 1);
  }
  for (const field of CATALOG_FIELDS) {
    add(ruleSoapiName(field.id), field, 2);
    add(ruleScmpName(field.id), field, 2);
  }
  for (const field of CATALOG_FIELDS) for (const alias of field.aliases) add(alias, field, 3);
  return index;
}

const HEADER_INDEX = buildIndex();

const SCOPED_INDEX = new Map(
  Object.entries(REPORT_SCOPED_ALIASES).map(([report, aliases]) => [
    report,
    new Map(Object.entries(aliases).map(([alias, id]) => [lookupKey(alias), getField(id)])),
  ]),
);

/** A field by its `Group.Field` id, or undefined. */
export function findField(id: string): CatalogField | undefined {
  return BY_ID.get(id);
}

/** A field by its `Group.Field` id; throws on an unknown id (use for ids written in code). */
export function getField(id: string): CatalogField {
  const field = BY_ID.get(id);
  if (field === undefined) throw new Error(`Unknown catalog field ${id}`);
  return field;
}

const BY_GROUP_AND_NAME = new Map(
  CATALOG_FIELDS.map((field) => [`${field.group.toLowerCase()}.${field.name.toLowerCase()}`, field]),
);

/**
 * A field by its group id and field name, case-insensitively (`('PaymentMethod', 'AccountSuffix')`,
 * `('application', 'RCode')`), for parsers that know an element's group from the file's layout.
 */
export function findGroupField(groupId: string, name: string): CatalogField | undefined {
  return BY_GROUP_AND_NAME.get(`${groupId.toLowerCase()}.${name.toLowerCase()}`);
}

/**
 * A catalog field by its `Group.Field` id or by another documented name of it (e.g.
 * `Request.LocalizedDate`, `Request.TransactionRefNumber`), or undefined.
 */
export function findFieldByAnyName(name: string): CatalogField | undefined {
  const direct = BY_ID.get(name);
  if (direct !== undefined) return direct;
  const resolved = HEADER_INDEX.get(lookupKey(name));
  return resolved;
}

/** The fields of one group, by group id. */
export function fieldsOfGroup(groupId: string): CatalogField[] {
  return CATALOG_FIELDS.filter((field) => field.group === groupId);
}

export interface ResolveHeaderOptions {
  /** Report definition name (e.g. `PaymentBatchDetailClass`): enables report-scoped aliases. */
  report?: string;
}

/** PostgreSQL's system columns: a user column cannot have these names (ALTER TABLE fails). */
const SYSTEM_COLUMNS = new Set(['tableoid', 'xmin', 'cmin', 'xmax', 'cmax', 'ctid']);

/**
 * Column name of a header the catalog does not know: snake_case, within PostgreSQL's limit, never a
 * system column name (a report header "ctid" would otherwise fail every load of its table).
 */
export function unknownColumnName(header: string): string {
  let column = snakeCase(header);
  if (column === '') column = 'column';
  if (/^\d/.test(column)) column = `c_${column}`;
  if (SYSTEM_COLUMNS.has(column)) column = `${column}_column`;
  if (column.length > MAX_IDENTIFIER_LENGTH) {
    let hash = 0;
    for (let i = 0; i < column.length; i++) hash = (Math.imul(hash, 31) + column.charCodeAt(i)) >>> 0;
    column = `${column.slice(0, MAX_IDENTIFIER_LENGTH - 9)}_${hash.toString(16).padStart(8, '0')}`;
  }
  return column;
}

export function unknownField(header: string): UnknownField {
  return Object.freeze({
    kind: 'unknown' as const,
    header,
    column: unknownColumnName(header),
    pgType: 'text' as const,
    description: undefined,
  });
}

/**
 * Map a report header (CSV column, XML path, `Group.Field` id, SOAPI or SCMP name, alias) to its
 * catalog field; a header the catalog does not know becomes an `UnknownField` (text column).
 */
export function resolveHeader(header: string, options: ResolveHeaderOptions = {}): ResolvedField {
  const key = lookupKey(header);
  if (options.report !== undefined) {
    const scoped = SCOPED_INDEX.get(options.report)?.get(key);
    if (scoped !== undefined) return scoped;
  }
  return HEADER_INDEX.get(key) ?? unknownField(header.replace(/^\uFEFF/, '').trim());
}

/** Every lookup key the catalog answers (for tests and diagnostics). */
export function headerIndexSize(): number {
  return HEADER_INDEX.size;
}
