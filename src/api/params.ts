import { CybsError } from '../errors.js';
import type { TimeParam } from './types.js';

function invalid(message: string): CybsError {
  return new CybsError('API_INVALID_PARAMS', message, { stage: 'api', exitCode: 2 });
}

/**
 * A time query value as the spec's `format: date-time` (RFC 3339) wants it, for every endpoint
 * (payment-batch-summaries included: the SDK's example and CyberSource's sample send `…Z`):
 * Dates become ISO-8601 UTC with milliseconds (`toISOString()`); strings are sent as given, except
 * that a numeric offset without its colon (`+0000`, not RFC 3339) gets one (`+00:00`).
 */
export function formatTimeParam(value: TimeParam | undefined, name: string): string {
  if (value === undefined || value === null) throw invalid(`${name} is required.`);
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw invalid(`${name} is an invalid date.`);
    return value.toISOString();
  }
  if (value.trim() === '') throw invalid(`${name} is empty; give an ISO-8601 timestamp.`);
  return value.replace(/(T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?[+-]\d{2})(\d{2})$/, '$1:$2');
}

/** A report date `yyyy-MM-dd`; a Date gives its UTC calendar date. */
export function formatReportDate(value: string | Date | undefined): string {
  if (value === undefined || value === null) throw invalid('reportDate is required.');
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
