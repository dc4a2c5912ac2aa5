import { CybsError } from '../errors.js';
import type { TimeParam } from './types.js';

function invalid(message: string): CybsError {
  return new CybsError('API_INVALID_PARAMS', message, { stage: 'api', exitCode: 2 });
}

/** A time query value: Dates become ISO-8601 UTC with milliseconds; strings are sent as given. */
export function formatTimeParam(value: TimeParam, name: string): string {
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw invalid(`${name} is an invalid date.`);
    return value.toISOString();
  }
  if (value.trim() === '') throw invalid(`${name} is empty; give an ISO-8601 timestamp.`);
  return value;
}

/**
 * A payment-batch-summaries time: `yyyy-MM-dd'T'HH:mm:ss.SSSZ` with a numeric offset (`+0000`).
 * Dates are written in UTC; ISO strings ending in `Z` or `±hh:mm` are rewritten to `±hhmm`.
 */
export function formatBatchSummaryTime(value: TimeParam, name: string): string {
  const text = formatTimeParam(value, name);
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)(Z|[+-]\d{2}:?\d{2})$/.exec(text);
  if (!m) return text;
  let [, local, offset] = m as unknown as [string, string, string];
  if (!/:\d{2}:\d{2}/.test(local)) local = `${local}:00`;
  if (!/\.\d+$/.test(local)) local = `${local}.000`;
  offset = offset === 'Z' ? '+0000' : offset.replace(':', '');
  return `${local}${offset}`;
}

/** A report date `yyyy-MM-dd`; a Date gives its UTC calendar date. */
export function formatReportDate(value: string | Date): string {
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw invalid('reportDate is an invalid date.');
    return value.toISOString().slice(0, 10);
  }
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) {
    throw invalid(`reportDate must be written yyyy-MM-dd (got "${value}").`);
  }
  return value;
}

/** A required string parameter, refused when empty. */
export function requireText(value: string | undefined, name: string): string {
  if (value === undefined || value.trim() === '') throw invalid(`${name} is required.`);
  return value;
}

/**
 * Path segment: percent-encoded so that a name cannot change the path. `.` and `..` are refused:
 * encodeURIComponent leaves them as they are, and URL parsers (and proxies) resolve them — even
 * written `%2e%2e` — so `deleteSubscription('..')` would become DELETE /reporting/v3/.
 */
export function encodePathSegment(value: string, name: string): string {
  const text = requireText(value, name);
  if (/^(\.|%2e){1,2}$/i.test(text)) {
    throw invalid(`${name} "${text}" is not a usable name: "." and ".." would change the request path.`);
  }
  return encodeURIComponent(text);
}
