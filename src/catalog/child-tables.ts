/**
 * The Transaction Detail XML layout's rules that the field catalog alone cannot state (real files:
 * killbill `tdr_1_3`/`tdr_1_6`, PHP mocks `tdr_1_1`/`tdr_1_5`/`tdr_1_9`; samples/cybersource):
 *
 *  - record attributes that name a catalog field under another name: `<Request RequestDate=…>` is
 *    the transaction date (`Request.TransactionDate`, the period field of one-time reports);
 *  - repeated groups of a record (`<ApplicationReplies><ApplicationReply Name="ics_auth">…`,
 *    `<LineItems><LineItem Number="0">…`): one row per item in a child table named after the
 *    record's table (`transaction_request_application_reply`), keyed by the record's key and the
 *    item's number, its leaves and attributes typed by a catalog group;
 *  - attributes that only label an element: `<MerchantDefinedData><field1 name="mdd1">` (the
 *    merchant's name for the field, the same on every record; the column already says field1).
 */

/** Record attributes read as another catalog field than their own name says. */
export const XML_RECORD_ATTRIBUTE_FIELDS: Readonly<Record<string, string>> = {
  RequestDate: 'Request.TransactionDate',
};

/** Attributes that label an element inside this group, not a value: left out. */
export const XML_LABEL_ATTRIBUTES: Readonly<Record<string, string>> = {
  MerchantDefinedData: 'name',
};

export const XML_REPEATED_GROUP_NAMES = ['application_reply', 'line_item'] as const;
export type XmlRepeatedGroupName = (typeof XML_REPEATED_GROUP_NAMES)[number];

export interface XmlRepeatedGroup {
  /** Suffix of the child table (`<record table>_<name>`). */
  readonly name: XmlRepeatedGroupName;
  readonly title: string;
  /** The record's child element that holds the items, and the items' element. */
  readonly container: string;
  readonly item: string;
  /** Catalog group of the items' leaves and attributes (`RCode` → `Application.Rcode`). */
  readonly group: string;
  /**
   * The item's number: the catalog field read from the item's attribute `numberAttribute`
   * (`LineItem Number="0"`; an item without it is numbered by its position from 0), or, without
   * `numberAttribute`, the item's position from 1 in a column of its own.
   */
  readonly numberAttribute: string | undefined;
  readonly numberField: string | undefined;
  readonly numberColumn: string;
  readonly numberDescription: string;
}

export const XML_REPEATED_GROUPS: readonly XmlRepeatedGroup[] = Object.freeze([
  Object.freeze({
    name: 'application_reply' as const,
    title: 'Application replies (one row per ApplicationReply of a request)',
    container: 'ApplicationReplies',
    item: 'ApplicationReply',
    group: 'Application',
    numberAttribute: undefined,
    numberField: undefined,
    numberColumn: 'reply_number',
    numberDescription:
      'position of the reply among the request’s ApplicationReplies, from 1 (the file gives replies no number).',
  }),
  Object.freeze({
    name: 'line_item' as const,
    title: 'Line items (one row per LineItem of a request)',
    container: 'LineItems',
    item: 'LineItem',
    group: 'LineItems',
    numberAttribute: 'Number',
    numberField: 'LineItems.Number',
    numberColumn: 'line_items_number',
    numberDescription: 'line item number in the order (LineItem@Number).',
  }),
]);

/** The repeated group whose container is `container`, or undefined. */
export function repeatedGroupOf(container: string): XmlRepeatedGroup | undefined {
  return XML_REPEATED_GROUPS.find((g) => g.container === container);
}

/** The child table of a record table for a repeated group. */
export function childTableName(recordTable: string, group: XmlRepeatedGroup): string {
  return `${recordTable}_${group.name}`;
}
