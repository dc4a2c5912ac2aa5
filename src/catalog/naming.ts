/**
 * How a catalog field is named in report files and in the warehouse. Shared by the catalog, the
 * parsers (header → field) and the simulator (field → header), so the two sides cannot drift.
 *
 * A field is identified by its `Group.Field` id (the form used in `reportFields`), e.g.
 * `BillTo.FirstName`. In CSV reports the header depends on the subscription's
 * `reportPreferences.fieldNameConvention`:
 *  - SOAPI (Simple Order API): lower-camel group + `_` + lower-camel field: `billTo_firstName`
 *    (the documented Gift Card names follow exactly this rule: `giftCard_currentBalance`);
 *  - SCMP: snake_case group + `_` + snake_case field: `bill_to_first_name`
 *    (documented: `gift_card_current_balance`);
 *  - no convention (and XML): the `Group.Field` id itself.
 * Documented names that do not follow the rule (the classic report columns seen in real files,
 * facts §5 and the sample files) are given as overrides by the catalog.
 */

export const FIELD_NAME_CONVENTIONS = ['SOAPI', 'SCMP'] as const;
export type FieldNameConvention = (typeof FIELD_NAME_CONVENTIONS)[number];

/** `RequestID` → `requestID`, `BillTo` → `billTo`. */
export function lowerFirst(name: string): string {
  return name.length === 0 ? name : name[0]!.toLowerCase() + name.slice(1);
}

/**
 * snake_case that keeps acronyms together: `FirstName` → `first_name`, `RequestID` → `request_id`,
 * `AVSResult` → `avs_result`, `MerchantDefinedData_field1` → `merchant_defined_data_field1`,
 * `Merchant-DefinedDataFields` → `merchant_defined_data_fields`, `LCMEventType` → `lcm_event_type`.
 */
export function snakeCase(name: string): string {
  return name
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/_+/g, '_')
    .replace(/^_|_$/g, '')
    .toLowerCase();
}

export function splitFieldId(id: string): { group: string; field: string } {
  const dot = id.indexOf('.');
  if (dot <= 0 || dot === id.length - 1) throw new Error(`Not a Group.Field id: ${id}`);
  return { group: id.slice(0, dot), field: id.slice(dot + 1) };
}

/** The rule-derived Simple Order API header of a field id. */
export function soapiName(id: string): string {
  const { group, field } = splitFieldId(id);
  return `${lowerFirst(group.replace(/[^A-Za-z0-9]/g, ''))}_${lowerFirst(field)}`;
}

/** The rule-derived SCMP header of a field id. */
export function scmpName(id: string): string {
  const { group, field } = splitFieldId(id);
  return `${snakeCase(group)}_${snakeCase(field)}`;
}

/** Normalise a header for lookups: case, spaces, dots, dashes and underscores do not matter. */
export function headerKey(header: string): string {
  return header
    .replace(/^\uFEFF/, '')
    .trim()
    .toLowerCase()
    .replace(/[\s._-]+/g, '');
}
