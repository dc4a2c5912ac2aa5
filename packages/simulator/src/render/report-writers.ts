/**
 * Report files as streams of text chunks (async generators of ~16 KB strings): a report of a
 * million rows is rendered row by row and never held in memory. The consumer (the HTTP layer)
 * awaits each chunk and honours backpressure.
 *
 * CSV (the sul-dlss Classic file): line 1 is the metadata record
 * `<organizationId>,<reportName>,<report type>,<version>,<start> to <end>` padded with empty
 * fields to the column count (a report of fewer than five columns keeps the five fields); line 2
 * the header row, named per `fieldNameConvention` or, without one, as the Classic files are
 * (`header-names.ts`); RFC 4180 quoting. Line endings: a Classic-style file ends its lines with LF
 * like the only REST-era real file, a SOAPI or SCMP file with CRLF as the Reporting guides say, so
 * that both reach the client.
 *
 * XML, per the definition's `xml.kind` (report-layouts.ts): `transactionDetail` is the real
 * Transaction Detail layout (DOCTYPE; `<Request RequestID RequestDate MerchantReferenceNumber
 * Source User SubscriptionID TransactionReferenceNumber>`; BillTo, ShipTo, PaymentMethod/Card,
 * LineItems/LineItem Number=, ApplicationReplies/ApplicationReply Name= (RCode, RFlag, RMsg),
 * PaymentData, MerchantDefinedData/fieldN name="mddN"); `batches` the legacy Payment Batch Detail
 * (Batches/Batch/Requests/Request); `generic` one child element per group
 * (`<BillTo><FirstName>…</FirstName></BillTo>`) under `<Request RequestID=…>`.
 */
import { headerName, splitFieldId } from './header-names.js';
import type { FieldNameConvention, HeaderStyle } from './header-names.js';
import type { SimTransaction } from '../data/dataset.js';
import { fieldGetter } from './report-fields.js';
import type { FieldContext } from './report-fields.js';
import { classicReport } from './report-layouts.js';
import type { ReportDefinitionLayout } from './report-layouts.js';
import { isoUtc } from '../data/time.js';

export interface ReportFileSpec {
  organizationId: string;
  reportName: string;
  definition: ReportDefinitionLayout;
  fields: readonly string[];
  mimeType: 'text/csv' | 'application/xml';
  fieldNameConvention?: FieldNameConvention | undefined;
  signedAmounts: boolean;
  start: number;
  end: number;
}

export interface MalformedRowFault {
  /** 1-based data row to break. */
  row: number;
  /** `columns`: a CSV row loses its last column (an XML request loses its closing group); `amount`: an unparseable amount. */
  mode: 'columns' | 'amount';
}

const CHUNK = 16 * 1024;

export function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

/** The header style of a CSV file: its convention, or the Classic names without one. */
export function headerStyleOf(spec: Pick<ReportFileSpec, 'fieldNameConvention'>): HeaderStyle {
  return spec.fieldNameConvention ?? 'Classic';
}

/** LF for a Classic-style file (as the REST-era real file), CRLF for SOAPI and SCMP files. */
export function csvLineEnding(spec: Pick<ReportFileSpec, 'fieldNameConvention'>): string {
  return headerStyleOf(spec) === 'Classic' ? '\n' : '\r\n';
}

/** The report type of the CSV metadata line: a predefined Classic report's own, else the definition's. */
export function metadataType(spec: Pick<ReportFileSpec, 'reportName' | 'definition'>): string {
  return classicReport(spec.reportName)?.type ?? spec.definition.type;
}

// eslint-disable-next-line no-control-regex
const XML_TEXT_SPECIAL = /[&<>\u0000-\u0008\u000B\u000C\u000E-\u001F]/;
// eslint-disable-next-line no-control-regex
const XML_ATTRIBUTE_SPECIAL = /[&<>"\r\n\t\u0000-\u0008\u000B\u000C\u000E-\u001F]/;

export function xmlEscape(value: string, attribute = false): string {
  // Most values need nothing: one test instead of five replaces (the writer's hottest call).
  if (!(attribute ? XML_ATTRIBUTE_SPECIAL : XML_TEXT_SPECIAL).test(value)) return value;
  let out = value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  if (attribute)
    out = out.replace(/"/g, '&quot;').replace(/\r/g, '&#13;').replace(/\n/g, '&#10;').replace(/\t/g, '&#9;');
  // Characters XML 1.0 cannot carry at all.
  // eslint-disable-next-line no-control-regex
  return out.replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F]/g, '');
}

function breakAmount(value: string): string {
  return value === '' ? 'N/A' : `${value.replace('.', ',')}.x`;
}

/** The CSV file of a report, in chunks. */
export async function* renderCsvReport(
  spec: ReportFileSpec,
  rows: Iterable<SimTransaction>,
  options: { malformed?: MalformedRowFault } = {},
): AsyncGenerator<string> {
  const fields = spec.fields;
  const ctx: FieldContext = { signedAmounts: spec.signedAmounts };
  const getters = fields.map((f) => fieldGetter(f));
  const amountIndex = fields.indexOf(spec.definition.amountField);
  const style = headerStyleOf(spec);
  const eol = csvLineEnding(spec);
  const meta = [
    spec.organizationId,
    spec.reportName,
    metadataType(spec),
    spec.definition.version,
    `${isoUtc(spec.start)} to ${isoUtc(spec.end)}`,
  ].map(csvField);
  while (meta.length < fields.length) meta.push('');
  let buffer = `${meta.join(',')}${eol}${fields.map((f) => csvField(headerName(f, style))).join(',')}${eol}`;
  let n = 0;
  for (const tx of rows) {
    n++;
    const values = getters.map((g) => csvField(g(tx, ctx)));
    if (options.malformed && options.malformed.row === n) {
      if (options.malformed.mode === 'columns' || amountIndex < 0) values.pop();
      else values[amountIndex] = csvField(breakAmount(getters[amountIndex]!(tx, ctx)));
    }
    buffer += `${values.join(',')}${eol}`;
    if (buffer.length >= CHUNK) {
      yield buffer;
      buffer = '';
    }
  }
  if (buffer.length > 0) yield buffer;
}

const PBD_CHILDREN: Record<string, string> = {
  'Request.TransactionReferenceNumber': 'TransactionReferenceNumber',
  'PaymentData.PaymentMethod': 'PaymentMethod',
  'PaymentData.CurrencyCode': 'CurrencyCode',
  'PaymentData.Amount': 'Amount',
  'Application.Name': 'Application',
};
const PBD_SKIP = new Set([
  'Batch.BatchID',
  'Batch.BatchDate',
  'Request.RequestID',
  'Request.MerchantReferenceNumber',
  'Request.MerchantID',
]);

function xmlRoot(spec: ReportFileSpec): string {
  const xml = spec.definition.xml;
  const a = (v: string): string => xmlEscape(v, true);
  const dates =
    ` MerchantID="${a(spec.organizationId)}"` +
    ` ReportStartDate="${isoUtc(spec.start)}" ReportEndDate="${isoUtc(spec.end)}">\n`;
  // Attribute order as in the real files: xmlns first in Transaction Detail, last in the legacy PBD.
  const identity =
    xml.kind === 'transactionDetail'
      ? `xmlns="${a(xml.namespace)}" Name="${a(xml.name)}" Version="${a(xml.version)}"`
      : `Name="${a(xml.name)}" Version="${a(xml.version)}" xmlns="${a(xml.namespace)}"`;
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n` +
    (xml.doctype === undefined ? '' : `<!DOCTYPE Report SYSTEM "${a(xml.doctype)}">\n`) +
    `<Report ${identity}${dates}`
  );
}

/** `<Request>` attributes of the Transaction Detail layout and the fields that fill them. */
export const TRANSACTION_DETAIL_ATTRIBUTES = [
  ['RequestID', 'Request.RequestID'],
  ['RequestDate', 'Request.TransactionDate'],
  ['MerchantReferenceNumber', 'Request.MerchantReferenceNumber'],
  ['Source', 'Request.Source'],
  ['User', 'Request.User'],
  ['SubscriptionID', 'Request.SubscriptionID'],
  ['TransactionReferenceNumber', 'Request.TransactionReferenceNumber'],
] as const;

/** Element names of ApplicationReply children (the report fields say `Rcode`, the file `RCode`). */
const APPLICATION_REPLY_ELEMENTS: Readonly<Record<string, string>> = {
  'Application.Rcode': 'RCode',
  'Application.Rflag': 'RFlag',
  'Application.Rmsg': 'RMsg',
};

/** Group order of a Transaction Detail `<Request>`, as in the real file; other groups follow. */
const TRANSACTION_DETAIL_GROUPS = [
  'BillTo',
  'ShipTo',
  'PaymentMethod',
  'LineItems',
  'Application',
  'PaymentData',
  'Merchant-DefinedDataFields',
];

/** One `<Request …>` record and its children, without the closing tag. */
type RecordWriter = (
  tx: SimTransaction,
  ctx: FieldContext,
  broken: MalformedRowFault['mode'] | undefined,
) => string;

type Leaf = { id: string; get: (tx: SimTransaction, ctx: FieldContext) => string; isAmount: boolean };

/**
 * One Transaction Detail record as a function of the transaction. Request.* fields other than
 * the attributes are not written (MerchantID is the root's); Application.ReasonCode has no element
 * in the real ApplicationReply and is left out; groups the real file does not show are written as
 * `<Group><Field>` children after the known ones.
 */
function transactionDetailRecord(spec: ReportFileSpec): RecordWriter {
  // PredecessorRequestID is an attribute of the real tdr_1_3 file, written when the report has it.
  const attributes = [
    ...TRANSACTION_DETAIL_ATTRIBUTES,
    ...(spec.fields.includes('Request.PredecessorRequestID')
      ? [['PredecessorRequestID', 'Request.PredecessorRequestID'] as const]
      : []),
  ].map(([name, id]) => ({
    prefix: ` ${name}="`,
    get: fieldGetter(id),
  }));
  const groups = new Map<string, Leaf[]>();
  for (const id of spec.fields) {
    if (!/^[^.]+\.[^.]/.test(id) || id.startsWith('Request.')) continue;
    const { group } = splitFieldId(id);
    const list = groups.get(group) ?? [];
    list.push({ id, get: fieldGetter(id), isAmount: id === spec.definition.amountField });
    groups.set(group, list);
  }
  const order = [
    ...TRANSACTION_DETAIL_GROUPS.filter((g) => groups.has(g)),
    ...[...groups.keys()].filter((g) => !TRANSACTION_DETAIL_GROUPS.includes(g)),
  ];
  const tag = (id: string): string => splitFieldId(id).field;
  const leaves = (list: Leaf[], indent: string, name: (id: string) => string = tag) =>
    list.map((l) => ({ ...l, open: `${indent}<${name(l.id)}>`, close: `</${name(l.id)}>\n` }));
  type Part = (tx: SimTransaction, ctx: FieldContext, broken: string | undefined) => string;
  const value = (l: Leaf, tx: SimTransaction, ctx: FieldContext, broken: string | undefined): string => {
    const v = l.get(tx, ctx);
    return xmlEscape(broken === 'amount' && l.isAmount ? breakAmount(v) : v);
  };
  const text = (items: ReturnType<typeof leaves>, tx: SimTransaction, ctx: FieldContext, broken?: string) => {
    let out = '';
    for (const l of items) out += `${l.open}${value(l, tx, ctx, broken)}${l.close}`;
    return out;
  };
  const plain =
    (open: string, items: ReturnType<typeof leaves>, close: string): Part =>
    (tx, ctx, broken) =>
      open + text(items, tx, ctx, broken) + close;
  const parts: Part[] = order.map((group): Part => {
    const list = groups.get(group)!;
    if (group === 'PaymentMethod')
      return plain(
        '      <PaymentMethod>\n        <Card>\n',
        leaves(list, '          '),
        '        </Card>\n      </PaymentMethod>\n',
      );
    if (group === 'LineItems') {
      // One line item per simulated order; its Number is an attribute, as in the real file.
      const number = fieldGetter('LineItems.Number');
      const items = leaves(
        list.filter((l) => l.id !== 'LineItems.Number'),
        '          ',
      );
      return (tx, ctx, broken) =>
        `      <LineItems>\n        <LineItem Number="${xmlEscape(number(tx, ctx), true)}">\n` +
        text(items, tx, ctx, broken) +
        '        </LineItem>\n      </LineItems>\n';
    }
    if (group === 'Application') {
      // One ApplicationReply per application of the request, each with the request's reply codes.
      const names = fieldGetter('Application.Name');
      const items = leaves(
        list.filter((l) => APPLICATION_REPLY_ELEMENTS[l.id] !== undefined),
        '          ',
        (id) => APPLICATION_REPLY_ELEMENTS[id]!,
      );
      return (tx, ctx, broken) => {
        let out = '      <ApplicationReplies>\n';
        for (const name of names(tx, ctx).split(',')) {
          if (name === '') continue;
          out += `        <ApplicationReply Name="${xmlEscape(name, true)}">\n`;
          out += `${text(items, tx, ctx, broken)}        </ApplicationReply>\n`;
        }
        return `${out}      </ApplicationReplies>\n`;
      };
    }
    if (group === 'Merchant-DefinedDataFields') {
      const items = list.map((l) => {
        const n = /(\d+)$/.exec(l.id)?.[1] ?? '';
        return { ...l, open: `        <field${n} name="mdd${n}">`, close: `</field${n}>\n` };
      });
      return plain('      <MerchantDefinedData>\n', items, '      </MerchantDefinedData>\n');
    }
    return plain(`      <${group}>\n`, leaves(list, '        '), `      </${group}>\n`);
  });
  return (tx, ctx, broken) => {
    let record = '    <Request';
    for (const a of attributes) record += `${a.prefix}${xmlEscape(a.get(tx, ctx), true)}"`;
    record += '>\n';
    for (const part of parts) record += part(tx, ctx, broken);
    return record;
  };
}

/** A record of the generic layout: Request.* fields are attributes of <Request>, every other group a child element. */
function genericRecord(spec: ReportFileSpec): RecordWriter {
  const fields = spec.fields;
  const attributes = fields.filter((f) => f.startsWith('Request.'));
  const groups = new Map<string, { id: string; tag: string }[]>();
  for (const f of fields) {
    if (f.startsWith('Request.')) continue;
    let group: string;
    let field: string;
    try {
      ({ group, field } = splitFieldId(f));
    } catch {
      continue;
    }
    const list = groups.get(group) ?? [];
    list.push({ id: f, tag: field });
    groups.set(group, list);
  }
  // Tags written once, not per record.
  const attrParts = attributes.map((f) => ({ prefix: ` ${splitFieldId(f).field}="`, get: fieldGetter(f) }));
  const groupParts = [...groups.entries()].map(([group, list]) => ({
    open: `      <${group}>\n`,
    close: `      </${group}>\n`,
    fields: list.map((f) => ({
      open: `        <${f.tag}>`,
      close: `</${f.tag}>\n`,
      get: fieldGetter(f.id),
      isAmount: f.id === spec.definition.amountField,
    })),
  }));
  return (tx, ctx, broken) => {
    let record = '    <Request';
    for (const a of attrParts) record += `${a.prefix}${xmlEscape(a.get(tx, ctx), true)}"`;
    record += '>\n';
    for (const g of groupParts) {
      record += g.open;
      for (const f of g.fields) {
        let v = f.get(tx, ctx);
        if (broken === 'amount' && f.isAmount) v = breakAmount(v);
        record += `${f.open}${xmlEscape(v)}${f.close}`;
      }
      record += g.close;
    }
    return record;
  };
}

/** The XML file of a report, in chunks. */
export async function* renderXmlReport(
  spec: ReportFileSpec,
  rows: Iterable<SimTransaction>,
  options: { malformed?: MalformedRowFault } = {},
): AsyncGenerator<string> {
  const ctx: FieldContext = { signedAmounts: spec.signedAmounts };
  const fields = spec.fields;
  let buffer = xmlRoot(spec);
  let n = 0;

  if (spec.definition.xml.kind === 'batches') {
    const get = (id: string): ((tx: SimTransaction) => string) => {
      const g = fieldGetter(id);
      return (tx) => g(tx, ctx);
    };
    const children = fields
      .filter((f) => !PBD_SKIP.has(f))
      .map((f) => ({ id: f, tag: PBD_CHILDREN[f] ?? splitFieldId(f).field, get: get(f) }));
    const batchDate = get('Batch.BatchDate');
    buffer += `  <Batches>\n`;
    let openBatch: string | undefined;
    for (const tx of rows) {
      n++;
      if (tx.batchId !== openBatch) {
        if (openBatch !== undefined) buffer += `      </Requests>\n    </Batch>\n`;
        buffer += `    <Batch BatchID="${xmlEscape(tx.batchId, true)}" BatchDate="${xmlEscape(batchDate(tx), true)}">\n      <Requests>\n`;
        openBatch = tx.batchId;
      }
      buffer += `        <Request RequestID="${tx.requestId}" MerchantReferenceNumber="${xmlEscape(tx.merchantReferenceNumber, true)}">\n`;
      const broken = options.malformed?.row === n ? options.malformed.mode : undefined;
      for (const c of children) {
        let v = c.get(tx);
        if (broken === 'amount' && c.id === spec.definition.amountField) v = breakAmount(v);
        buffer += `          <${c.tag}>${xmlEscape(v)}</${c.tag}>\n`;
      }
      // A "columns" break leaves the request element unclosed: the file is no longer well-formed.
      if (broken !== 'columns') buffer += `        </Request>\n`;
      if (buffer.length >= CHUNK) {
        yield buffer;
        buffer = '';
      }
    }
    if (openBatch !== undefined) buffer += `      </Requests>\n    </Batch>\n`;
    buffer += `  </Batches>\n</Report>\n`;
    yield buffer;
    return;
  }

  const record =
    spec.definition.xml.kind === 'transactionDetail' ? transactionDetailRecord(spec) : genericRecord(spec);
  buffer += `  <Requests>\n`;
  for (const tx of rows) {
    n++;
    const broken = options.malformed?.row === n ? options.malformed.mode : undefined;
    buffer += record(tx, ctx, broken);
    // A "columns" break leaves the request element unclosed: the file is no longer well-formed.
    if (broken !== 'columns') buffer += `    </Request>\n`;
    if (buffer.length >= CHUNK) {
      yield buffer;
      buffer = '';
    }
  }
  buffer += `  </Requests>\n</Report>\n`;
  yield buffer;
}

export function renderReport(
  spec: ReportFileSpec,
  rows: Iterable<SimTransaction>,
  options: { malformed?: MalformedRowFault } = {},
): AsyncGenerator<string> {
  return spec.mimeType === 'text/csv'
    ? renderCsvReport(spec, rows, options)
    : renderXmlReport(spec, rows, options);
}
