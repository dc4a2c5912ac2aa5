/**
 * Whether a downloaded body is the report a window asked for, judged from its head (its first
 * bytes) before any row of it is read:
 *  - it is a report at all: a CSV file starts with a metadata line or a header that names at least
 *    one field of its report; an XML file's root element is `<Report>`. A gateway's HTML page, an
 *    error document or any other body fails here, with what it starts with.
 *  - it is this window's report: the organization, the subscription's report name (CSV) and the
 *    period its metadata names are the window's. A file without a metadata line (as a subscription
 *    report never is) and the legacy metadata line without an organization are judged on what they
 *    say.
 *  - it is a report of the definition asked for, when its metadata names one (namedReportDefinition).
 * The first two failures are EXTRACT_NOT_THE_REPORT, the third EXTRACT_OTHER_REPORT (with the
 * definition the file names in its context, for `import` to say which one to import it as): the
 * window fails, nothing of it is loaded, and a later run retries it.
 */
import { open } from 'node:fs/promises';
import { parse } from 'csv-parse/sync';
import {
  findReportDefinition,
  guessReportDefinition,
  isSharedReportName,
  resolveHeader,
} from '../catalog/index.js';
import type { ReportDefinition } from '../catalog/index.js';
import { CybsError } from '../errors.js';
import { parseCsvMetadataLine, plainCsvFields } from '../parse/csv/csv-report.js';
import type { ReportMetadata } from '../parse/records.js';
import { sniffEncoding } from '../parse/text-encoding.js';
import { xmlReportMetadata } from '../parse/xml/xml-report.js';
import { localDate } from '../time/time-zones.js';
import type { ReportFormat } from './find-report.js';

/** The most of a file's start that is examined: a metadata line, a header and a root tag fit easily. */
export const REPORT_HEAD_BYTES = 1024 * 1024;

/** What a file must look like to be read as a report of a definition. */
export interface ReportShape {
  format: ReportFormat;
  /** For messages: the file's name. */
  fileName: string;
  /**
   * The report definition (its header names are the known ones), which the metadata must not
   * contradict; undefined: any report (`import` without --report-definition).
   */
  reportDefinition: string | undefined;
}

export interface ExpectedReport extends ReportShape {
  reportDefinition: string;
  organizationId: string;
  /** The subscription's report name. */
  reportName: string;
  /** The report period. */
  start: Date;
  end: Date;
  /** The zone a date-only period is written in (the subscription's). */
  timeZone: string;
}

/**
 * Legacy report files write their period to the minute, e.g. 00:01 to 23:59 of the day; any other
 * report's period is whole hours or days away.
 */
const SAME_BOUND_MS = 60_000;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

function notTheReport(expected: ReportShape, why: string): CybsError {
  return new CybsError('EXTRACT_NOT_THE_REPORT', `${expected.fileName}: ${why}; nothing of it is loaded.`, {
    stage: 'extract',
    retryable: true,
    context: { file: expected.fileName },
  });
}

/** Whether `head` holds enough of the file to judge it (see checkReportHead), or all of it (`ended`). */
export function reportHeadComplete(head: Buffer, format: ReportFormat, ended: boolean): boolean {
  if (ended || head.length >= REPORT_HEAD_BYTES) return true;
  if (format === 'xml') {
    try {
      return rootStartTag(reportHeadText(head, 'the report')) !== undefined;
    } catch {
      // An encoding no reader takes: enough is known to judge (checkReportShape says why).
      return true;
    }
  }
  // The metadata line, blank lines after it, and the header.
  let breaks = 0;
  for (const byte of head) if (byte === 0x0a && ++breaks >= 4) return true;
  return false;
}

/** Throw EXTRACT_NOT_THE_REPORT unless `head` (the file's first bytes, or all of it) is `expected`. */
export function checkReportHead(head: Buffer, expected: ExpectedReport): void {
  const metadata = checkReportShape(head, expected);
  if (metadata !== undefined) checkIdentity(metadata, expected);
}

/**
 * Throw EXTRACT_NOT_THE_REPORT unless `head` is a report of `shape` at all (whichever report it
 * is); its metadata, when it has any.
 */
export function checkReportShape(head: Buffer, shape: ReportShape): ReportMetadata | undefined {
  const text = reportHeadText(head.subarray(0, REPORT_HEAD_BYTES), shape.fileName);
  const metadata = shape.format === 'xml' ? xmlHeadMetadata(text, shape) : csvHeadMetadata(text, shape);
  const named = metadata === undefined ? undefined : namedReportDefinition(metadata);
  const expected =
    shape.reportDefinition === undefined ? undefined : findReportDefinition(shape.reportDefinition);
  if (named !== undefined && expected !== undefined && named.name !== expected.name) {
    const what = metadata!.reportType ?? metadata!.reportName;
    throw new CybsError(
      'EXTRACT_OTHER_REPORT',
      `${shape.fileName}: its ${shape.format === 'xml' ? 'root element' : 'metadata line'} names a "${what}" report (${named.name}), not ${expected.name}; nothing of it is loaded.`,
      {
        stage: 'extract',
        retryable: true,
        exitCode: 2,
        context: { file: shape.fileName, reportDefinition: named.name, named: what },
      },
    );
  }
  return metadata;
}

/**
 * The report definition a report's metadata names, if it names one the catalog knows: a CSV
 * metadata line's report type (the REST-era line: `PaymentBatchDetail`), else its title (the legacy
 * line: `Payment Batch Detail Report`); an XML root's `Name` (`Payment Batch Detail`), unless files
 * of several definitions carry it (`Transaction Detail`). A subscription's report name says
 * nothing: it is the merchant's choice.
 */
export function namedReportDefinition(metadata: ReportMetadata): ReportDefinition | undefined {
  if (
    metadata.format === 'csv' &&
    (metadata.reportType !== undefined || metadata.organizationId !== undefined)
  ) {
    // The REST-era line (organization, report name, type, version, period): its type.
    return metadata.reportType === undefined ? undefined : guessReportDefinition(metadata.reportType);
  }
  const name = metadata.reportName;
  return name === undefined || isSharedReportName(name) ? undefined : guessReportDefinition(name);
}

/**
 * A head's text in the encoding its first bytes say (src/parse/text-encoding.ts: UTF-16 by its byte
 * order mark, or an XML declaration written in UTF-16 without one; else UTF-8), without the mark.
 * UTF-32 throws the readers' own one-sentence error.
 */
export function reportHeadText(head: Buffer, fileName: string): string {
  const encoding = sniffEncoding(head, fileName);
  if (encoding === 'utf-8') return head.toString('utf8').replace(/^\uFEFF/, '');
  const start = head[0] === 0xff || head[0] === 0xfe ? 2 : 0;
  const units = Buffer.from(head.subarray(start, start + ((head.length - start) & ~1)));
  if (encoding === 'utf-16be') units.swap16();
  return units.toString('utf16le');
}

/** The first REPORT_HEAD_BYTES of a file (all of a smaller one). */
export async function readReportHead(path: string): Promise<Buffer> {
  const file = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(REPORT_HEAD_BYTES);
    const { bytesRead } = await file.read(buffer, 0, REPORT_HEAD_BYTES, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}

/** What a body starts with, for a message: its first 60 characters on one line. */
function startOf(text: string): string {
  const start = text.trimStart().slice(0, 60).replace(/\s+/g, ' ').trimEnd();
  return start === '' ? 'nothing (the body is empty)' : JSON.stringify(start);
}

function csvHeadMetadata(text: string, expected: ReportShape): ReportMetadata | undefined {
  // Whole lines only, unless the head is the whole file.
  const lastBreak = text.lastIndexOf('\n');
  const lines = lastBreak >= 0 && text.length >= REPORT_HEAD_BYTES ? text.slice(0, lastBreak + 1) : text;
  const lineFeed = text.indexOf('\n');
  let first = plainCsvFields((lineFeed < 0 ? text : text.slice(0, lineFeed)).replace(/\r$/, ''));
  if (first === undefined) {
    try {
      const records = parse(lines, {
        relax_column_count: true,
        relax_quotes: true,
        to_line: 4,
      }) as string[][];
      first = records[0];
    } catch {
      first = undefined;
    }
  }
  const metadata = first === undefined ? undefined : parseCsvMetadataLine(first, expected.fileName);
  if (metadata !== undefined) return metadata;
  const known = (first ?? []).some(
    (name) => resolveHeader(name, { report: expected.reportDefinition }).kind !== 'unknown',
  );
  if (!known) {
    throw notTheReport(
      expected,
      `the body is not a ${expected.reportDefinition === undefined ? '' : `${expected.reportDefinition} `}CSV report: it has no metadata line and no header naming a field of the report (it starts with ${startOf(text)})`,
    );
  }
  return undefined;
}

/** The root start tag's name and attributes, once the head holds all of it. */
function rootStartTag(text: string): { name: string; attributes: [string, string][] } | undefined {
  let at = 0;
  for (;;) {
    while (at < text.length && /\s/.test(text[at]!)) at++;
    if (text.startsWith('<?', at)) {
      const end = text.indexOf('?>', at);
      if (end < 0) return undefined;
      at = end + 2;
    } else if (text.startsWith('<!--', at)) {
      const end = text.indexOf('-->', at);
      if (end < 0) return undefined;
      at = end + 3;
    } else if (text.startsWith('<!', at)) {
      // A DOCTYPE, with its internal subset in brackets if any.
      let depth = 0;
      let i = at + 2;
      for (; i < text.length; i++) {
        const c = text[i];
        if (c === '[') depth++;
        else if (c === ']') depth--;
        else if (c === '>' && depth <= 0) break;
      }
      if (i >= text.length) return undefined;
      at = i + 1;
    } else {
      break;
    }
  }
  if (text[at] !== '<') return { name: '', attributes: [] };
  let quote: string | undefined;
  let end = at + 1;
  for (; end < text.length; end++) {
    const c = text[end];
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '>') {
      break;
    }
  }
  if (end >= text.length) return undefined;
  const tag = text.slice(at + 1, end);
  const name = /^[^\s/>]+/.exec(tag)?.[0] ?? '';
  const attributes: [string, string][] = [];
  for (const m of tag.slice(name.length).matchAll(/([^\s=/]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) {
    attributes.push([m[1]!, unescapeXml(m[2] ?? m[3] ?? '')]);
  }
  return { name, attributes };
}

function unescapeXml(value: string): string {
  return value.replace(/&(?:#x([0-9a-fA-F]+)|#(\d+)|(amp|lt|gt|quot|apos));/g, (all, hex, dec, named) => {
    if (named !== undefined) {
      return ({ amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" } as Record<string, string>)[
        named as string
      ]!;
    }
    const code = hex !== undefined ? parseInt(hex as string, 16) : Number(dec);
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : all;
  });
}

function xmlHeadMetadata(text: string, expected: ReportShape): ReportMetadata {
  const root = rootStartTag(text);
  const name = root?.name ?? '';
  if (name.replace(/^.*:/, '') !== 'Report') {
    throw notTheReport(
      expected,
      `the body is not an XML report: ${name === '' ? 'it has no root element' : `its root element is <${name}>, not <Report>`} (it starts with ${startOf(text)})`,
    );
  }
  return xmlReportMetadata(root!.attributes, expected.fileName);
}

function checkIdentity(metadata: ReportMetadata, expected: ExpectedReport): void {
  const differences: string[] = [];
  const org = metadata.organizationId;
  if (org !== undefined && org.toLowerCase() !== expected.organizationId.toLowerCase()) {
    differences.push(`organization "${org}" (the window's: "${expected.organizationId}")`);
  }
  // The report name of a subscription report's metadata line (its REST-era form, which has a type);
  // an XML report's Name is its definition's title, and the legacy line's first field a title.
  const name = metadata.reportName;
  if (
    expected.format === 'csv' &&
    metadata.reportType !== undefined &&
    name !== undefined &&
    name !== expected.reportName
  ) {
    differences.push(`report "${name}" (the window's: "${expected.reportName}")`);
  }
  if (metadata.rawStart !== undefined || metadata.rawEnd !== undefined) {
    const period = `${metadata.rawStart ?? ''} to ${metadata.rawEnd ?? ''}`;
    if (!samePeriod(metadata, expected)) {
      differences.push(
        `period "${period}" (the window's: ${expected.start.toISOString()} to ${expected.end.toISOString()})`,
      );
    }
  }
  if (differences.length > 0) {
    throw notTheReport(
      expected,
      `the report is not the window's: its metadata names ${differences.join(', ')}`,
    );
  }
}

function samePeriod(metadata: ReportMetadata, expected: ExpectedReport): boolean {
  const { rawStart, rawEnd } = metadata;
  if (rawStart !== undefined && DATE_ONLY.test(rawStart.trim())) {
    // A period written as dates: the local days of the period's first and last instant.
    const lastDay = localDate(new Date(expected.end.getTime() - 1), expected.timeZone);
    const endDay = rawEnd?.trim();
    return (
      rawStart.trim() === localDate(expected.start, expected.timeZone) &&
      (endDay === lastDay || endDay === localDate(expected.end, expected.timeZone))
    );
  }
  const near = (iso: string | undefined, want: Date) =>
    iso !== undefined && Math.abs(Date.parse(iso) - want.getTime()) <= SAME_BOUND_MS;
  return near(metadata.startTime, expected.start) && near(metadata.endTime, expected.end);
}
