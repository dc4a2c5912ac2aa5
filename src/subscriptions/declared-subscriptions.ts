/**
 * Declared and live subscriptions in one comparable shape (pure): a declaration becomes the PUT body
 * of facts §2.4, a live subscription (GET /report-subscriptions, facts §2.3) is normalised the same
 * way so that plan.ts can compare them attribute by attribute.
 */
import type { ReportSubscription, ReportSubscriptionRequest } from '../api/types.js';
import type { SubscriptionDecl } from '../config/subscriptions-schema.js';
import { isValidTimeZone } from '../time/time-zones.js';
import { startTimeInZone } from '../time/report-periods.js';

/** The settings of one subscription that `apply` manages, normalised. */
export interface SubscriptionSettings {
  reportName: string;
  reportDefinitionName: string;
  reportFields: string[];
  reportMimeType: string;
  reportFrequency: string;
  reportInterval: string | null;
  timezone: string;
  /** HHMM in `timezone`. */
  startTime: string;
  /** null for DAILY and USER_DEFINED (the service ignores it there). */
  startDay: number | null;
  reportFilters: Record<string, string[]>;
  signedAmounts: boolean;
  fieldNameConvention: string | null;
}

/** The attributes compared by plan, in display order. */
export const SETTING_KEYS = [
  'reportDefinitionName',
  'reportMimeType',
  'reportFrequency',
  'reportInterval',
  'timezone',
  'startTime',
  'startDay',
  'reportFields',
  'reportFilters',
  'signedAmounts',
  'fieldNameConvention',
] as const satisfies readonly (keyof SubscriptionSettings)[];
export type SettingKey = (typeof SETTING_KEYS)[number];

function usesStartDay(frequency: string): boolean {
  return frequency === 'WEEKLY' || frequency === 'MONTHLY';
}

function sortedFilters(filters: Record<string, string[]> | null | undefined): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const key of Object.keys(filters ?? {}).sort()) {
    const values = filters![key] ?? [];
    if (values.length > 0) out[key] = [...values].sort();
  }
  return out;
}

export function declaredSettings(decl: SubscriptionDecl): SubscriptionSettings {
  const frequency = decl.reportFrequency;
  return {
    reportName: decl.reportName,
    reportDefinitionName: decl.reportDefinitionName,
    reportFields: [...decl.reportFields],
    reportMimeType: decl.reportMimeType,
    reportFrequency: frequency,
    reportInterval: frequency === 'USER_DEFINED' ? (decl.reportInterval ?? null) : null,
    timezone: decl.timezone,
    startTime: decl.startTime,
    startDay: usesStartDay(frequency) ? (decl.startDay ?? 1) : null,
    reportFilters: sortedFilters(decl.reportFilters),
    signedAmounts: decl.reportPreferences.signedAmounts,
    fieldNameConvention: decl.reportPreferences.fieldNameConvention ?? null,
  };
}

/**
 * `startTime` comes back as a date-time in the subscription's zone ("2017-10-01T10:10:10+05:00",
 * facts §2.3) or as HHMM; either way the local HHMM is what was declared.
 */
export function startTimeOf(value: string | null | undefined, timeZone?: string | null): string {
  if (!value) return '0000';
  if (/^\d{4}$/.test(value)) return value;
  // The GET returns an instant; its HH:MM is read in the subscription's own zone, as the runtime
  // plans its periods, so a time written in UTC or another offset shows no drift.
  const zoned = timeZone && isValidTimeZone(timeZone) ? startTimeInZone(value, timeZone) : undefined;
  if (zoned) return zoned;
  const m = /T(\d{2}):(\d{2})/.exec(value) ?? /^(\d{2}):(\d{2})/.exec(value);
  return m ? `${m[1]}${m[2]}` : value;
}

function mimeTypeOf(value: string | null | undefined): string {
  if (!value) return 'text/csv';
  if (/xml/i.test(value)) return 'application/xml';
  if (/csv/i.test(value)) return 'text/csv';
  return value;
}

export function liveSettings(live: ReportSubscription): SubscriptionSettings {
  const frequency = String(live.reportFrequency ?? 'DAILY').toUpperCase();
  const convention = live.reportPreferences?.fieldNameConvention;
  return {
    reportName: live.reportName,
    reportDefinitionName: live.reportDefinitionName ?? '',
    reportFields: [...(live.reportFields ?? [])],
    reportMimeType: mimeTypeOf(live.reportMimeType),
    reportFrequency: frequency,
    reportInterval: frequency === 'USER_DEFINED' ? (live.reportInterval ?? null) : null,
    timezone: live.timezone ?? '',
    startTime: startTimeOf(live.startTime, live.timezone),
    startDay: usesStartDay(frequency) ? (live.startDay ?? 1) : null,
    reportFilters: sortedFilters(live.reportFilters as Record<string, string[]> | null | undefined),
    signedAmounts: live.reportPreferences?.signedAmounts === true,
    fieldNameConvention: convention === 'Simple Order API' ? 'SOAPI' : convention ? String(convention) : null,
  };
}

/** The PUT /report-subscriptions body of a declaration (organizationId goes in the query). */
export function subscriptionRequest(decl: SubscriptionDecl): ReportSubscriptionRequest {
  const s = declaredSettings(decl);
  return {
    reportDefinitionName: s.reportDefinitionName,
    reportFields: s.reportFields,
    reportMimeType: s.reportMimeType as ReportSubscriptionRequest['reportMimeType'],
    reportFrequency: s.reportFrequency,
    ...(s.reportInterval ? { reportInterval: s.reportInterval } : {}),
    reportName: s.reportName,
    timezone: s.timezone,
    startTime: s.startTime,
    ...(s.startDay !== null ? { startDay: s.startDay } : {}),
    reportFilters: s.reportFilters,
    reportPreferences: {
      signedAmounts: s.signedAmounts,
      ...(s.fieldNameConvention ? { fieldNameConvention: s.fieldNameConvention as 'SOAPI' | 'SCMP' } : {}),
    },
  };
}

/** The declarations that apply to an organization. */
export function declarationsFor(
  decls: readonly SubscriptionDecl[],
  organizationId: string,
): SubscriptionDecl[] {
  return decls.filter((d) => !d.organizations || d.organizations.includes(organizationId));
}

/** Every organization the declarations manage: the named ones plus `everywhere` for unscoped ones. */
export function managedOrganizations(
  decls: readonly SubscriptionDecl[],
  everywhere: readonly string[],
): string[] {
  const out = new Set<string>();
  if (decls.length === 0 || decls.some((d) => !d.organizations)) for (const o of everywhere) out.add(o);
  for (const d of decls) for (const o of d.organizations ?? []) out.add(o);
  return [...out];
}
