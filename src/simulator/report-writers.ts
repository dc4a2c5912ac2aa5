/**
 * Report files as streams of text chunks (async generators of ~64 KB strings): a report of a
 * million rows is rendered row by row and never held in memory. The consumer (the HTTP layer)
 * awaits each chunk and honours backpressure.
 *
 * CSV (facts §5.1, the sul-dlss fixture): line 1 is the metadata record
 * `<organizationId>,<reportName>,<report type>,<version>,<start> to <end>` padded with empty
 * fields to the column count (a report of fewer than five columns keeps the five fields); line 2 the header row named per fieldNameConvention
 * (`src/catalog/naming.ts`); RFC 4180 quoting; CRLF line endings.
 *
 * XML (facts §5.2): root `<Report Name Version xmlns MerchantID ReportStartDate ReportEndDate>`;
 * Payment Batch Detail nested like the legacy sample (Batches/Batch/Requests/Request); every other
 * definition `<Requests><Request RequestID=…>` with one child element per catalog group and one
 * grandchild per field (`<BillTo><FirstName>…</FirstName></BillTo>`).
 */
import { scmpName, soapiName, splitFieldId } from '../catalog/naming.js';
import type { FieldNameConvention } from '../catalog/naming.js';
import type { SimTransaction } from './dataset.js';
import { fieldGetter } from './report-fields.js';
import type { FieldContext } from './report-fields.js';
import type { ReportDefinitionLayout } from './report-layouts.js';
import { isoUtc } from './time.js';

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

export function csvHeader(id: string, convention: FieldNameConvention | undefined): string {
  try {
    if (convention === 'SOAPI') return soapiName(id);
    if (convention === 'SCMP') return scmpName(id);
  } catch {
    return id;
  }
  return id;
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
  const meta = [
    spec.organizationId,
    spec.reportName,
    spec.definition.type,
    spec.definition.version,
    `${isoUtc(spec.start)} to ${isoUtc(spec.end)}`,
  ].map(csvField);
  while (meta.length < fields.length) meta.push('');
  let buffer = `${meta.join(',')}\r\n${fields.map((f) => csvField(csvHeader(f, spec.fieldNameConvention))).join(',')}\r\n`;
  let n = 0;
  for (const tx of rows) {
    n++;
    const values = getters.map((g) => csvField(g(tx, ctx)));
    if (options.malformed && options.malformed.row === n) {
      if (options.malformed.mode === 'columns' || amountIndex < 0) values.pop();
      else values[amountIndex] = csvField(breakAmount(getters[amountIndex]!(tx, ctx)));
    }
    buffer += `${values.join(',')}\r\n`;
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
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n` +
    `<Report Name="${xmlEscape(spec.definition.title, true)}" Version="1.0" xmlns="${xmlEscape(spec.definition.xmlNamespace, true)}"` +
    ` MerchantID="${xmlEscape(spec.organizationId, true)}" ReportStartDate="${isoUtc(spec.start)}" ReportEndDate="${isoUtc(spec.end)}">\n`
  );
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

  if (spec.definition.name === 'PaymentBatchDetailClass') {
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

  // Generic layout: Request.* fields are attributes of <Request>, every other group a child element.
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
  const attrGetters = attributes.map((f) => ({ name: splitFieldId(f).field, get: fieldGetter(f) }));
  const groupGetters = [...groups.entries()].map(([group, list]) => ({
    group,
    fields: list.map((x) => ({ ...x, get: fieldGetter(x.id) })),
  }));
  // Tags written once, not per record.
  const attrParts = attrGetters.map((a) => ({ prefix: ` ${a.name}="`, get: a.get }));
  const groupParts = groupGetters.map((g) => ({
    open: `      <${g.group}>\n`,
    close: `      </${g.group}>\n`,
    fields: g.fields.map((f) => ({
      open: `        <${f.tag}>`,
      close: `</${f.tag}>\n`,
      get: f.get,
      isAmount: f.id === spec.definition.amountField,
    })),
  }));
  buffer += `  <Requests>\n`;
  for (const tx of rows) {
    n++;
    const broken = options.malformed?.row === n ? options.malformed.mode : undefined;
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
    buffer += record;
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
