/**
 * Subscriptions, one-time reports and the reports they generate, for every organization.
 *
 * A subscription generates one report per period (DAILY, WEEKLY on `startDay` 1 = Sunday,
 * MONTHLY on `startDay`, USER_DEFINED every `reportInterval`), periods starting at `startTime`
 * (HHMM) in the subscription's time zone, from the period that contains the moment the
 * subscription became active. USER_DEFINED reports are aligned at startTime every local day (the
 * service does not document it): one per interval, the day's last one ending at the next startTime. A period's report is queued 5 minutes after the period ends, RUNNING
 * from 5 hours after the end, and ready (COMPLETED, or NO_DATA when it has no row) 6 hours after
 * the end — the documented "available within six hours". `reportDate` (downloads) is the local date
 * of the period end in the subscription's zone: for a midnight-to-midnight daily report of
 * 2024-03-09, reportDate = 2024-03-10.
 *
 * A one-time report (POST /reports) is QUEUED when created, RUNNING 3 s later and ready 6 s after
 * creation, in simulated time; its reportDate is the local date of its end time in its zone.
 */
import type { FieldNameConvention } from '../render/header-names.js';
import type { Dataset, SimTransaction } from './dataset.js';
import type { FaultPlan } from '../server/faults.js';
import { hash32, stableUuid } from './prng.js';
import { fieldGetter } from '../render/report-fields.js';
import { FUNDING_LAG_DAYS } from './money-chain.js';
import { ROW_SOURCE_RULES, reportDefinition } from '../render/report-layouts.js';
import type { ReportDefinitionLayout } from '../render/report-layouts.js';
import type { ReportFileSpec } from '../render/report-writers.js';
import {
  DAY_MS,
  HOUR_MS,
  addDays,
  daysInMonth,
  isoInZone,
  localDate,
  parseIsoDateTime,
  weekday,
  zonedTime,
} from './time.js';

export const REPORT_FREQUENCIES = ['DAILY', 'WEEKLY', 'MONTHLY', 'USER_DEFINED'] as const;
export type ReportFrequency = (typeof REPORT_FREQUENCIES)[number];
export const REPORT_MIME_TYPES = ['text/csv', 'application/xml'] as const;
export type ReportMimeType = (typeof REPORT_MIME_TYPES)[number];
export type ReportStatus = 'QUEUED' | 'RUNNING' | 'COMPLETED' | 'NO_DATA' | 'ERROR';

export interface ReportPreferences {
  signedAmounts: boolean;
  fieldNameConvention?: FieldNameConvention;
}

/** A subscription as stored (the validated PUT body plus its life span). */
export interface SubscriptionRecord {
  organizationId: string;
  reportDefinitionName: string;
  reportMimeType: ReportMimeType;
  reportFrequency: ReportFrequency;
  reportInterval?: string;
  reportName: string;
  timezone: string;
  /** HHMM */
  startTime: string;
  startDay: number;
  reportFields: string[];
  reportFilters: Record<string, string[]>;
  reportPreferences: ReportPreferences;
  groupName?: string;
  activeFrom: number;
  activeUntil?: number;
  /** Canonical JSON of the settings, to answer an identical PUT with 304. */
  canonical: string;
}

export interface AdhocRecord {
  organizationId: string;
  reportName: string;
  reportDefinitionName: string;
  reportMimeType: ReportMimeType;
  reportFields: string[];
  reportFilters: Record<string, string[]>;
  reportPreferences: ReportPreferences;
  timezone: string;
  start: number;
  end: number;
  createdAt: number;
  reportId: string;
  canonical: string;
}

export interface ReportInstance {
  reportId: string;
  organizationId: string;
  reportName: string;
  definition: ReportDefinitionLayout;
  mimeType: ReportMimeType;
  frequency: ReportFrequency | 'ADHOC';
  start: number;
  end: number;
  timezone: string;
  fields: string[];
  filters: Record<string, string[]>;
  preferences: ReportPreferences;
  queuedTime: number;
  generatingTime: number;
  completedTime: number;
  reportDate: string;
  groupId: string;
}

export interface ReportStoreDeps {
  dataset: Dataset;
  faults: FaultPlan;
  seed: number;
  now(): number;
}

export const SUBSCRIPTION_LIMIT = 20;
const QUEUE_DELAY = 5 * 60_000;
const RUNNING_AFTER = 5 * HOUR_MS;
const READY_AFTER = 6 * HOUR_MS;

export function parseInterval(text: string): number | undefined {
  const m = /^PT(?:(\d+)H)?(?:(\d+)M)?$/.exec(text);
  if (!m || (m[1] === undefined && m[2] === undefined)) return undefined;
  const ms = (Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0)) * 60_000;
  return ms >= 60 * 60_000 ? ms : undefined;
}

function hhmm(text: string): [number, number] {
  return [Number(text.slice(0, 2)), Number(text.slice(2, 4))];
}

function isPeriodStart(sub: SubscriptionRecord, date: string): boolean {
  switch (sub.reportFrequency) {
    case 'WEEKLY':
      return weekday(date) === sub.startDay;
    case 'MONTHLY':
      return Number(date.slice(8, 10)) === Math.min(sub.startDay, daysInMonth(date));
    default:
      return true;
  }
}

function nextPeriodDate(sub: SubscriptionRecord, date: string): string {
  switch (sub.reportFrequency) {
    case 'WEEKLY':
      return addDays(date, 7);
    case 'MONTHLY': {
      const [y, m] = date.split('-').map(Number) as [number, number];
      const next = m === 12 ? `${y + 1}-01-01` : `${y}-${String(m + 1).padStart(2, '0')}-01`;
      return `${next.slice(0, 8)}${String(Math.min(sub.startDay, daysInMonth(next))).padStart(2, '0')}`;
    }
    default:
      return addDays(date, 1);
  }
}

/** Periods [start, end) of a subscription whose start lies in [lo, hi], in order. */
export function subscriptionPeriods(sub: SubscriptionRecord, lo: number, hi: number): [number, number][] {
  const out: [number, number][] = [];
  const [h, m] = hhmm(sub.startTime);
  const keep = (start: number, end: number): void => {
    if (end <= sub.activeFrom) return;
    if (sub.activeUntil !== undefined && end > sub.activeUntil) return;
    if (start < lo || start > hi) return;
    out.push([start, end]);
  };
  let date = addDays(localDate(lo, sub.timezone), -1);
  const last = addDays(localDate(hi, sub.timezone), 1);
  while (date <= last) {
    if (sub.reportFrequency === 'USER_DEFINED') {
      // Undocumented by the service: assumed aligned at startTime every local day, one report per
      // interval, the day's last one ending at the next day's startTime.
      const interval = parseInterval(sub.reportInterval ?? '') ?? DAY_MS;
      const dayEnd = zonedTime(addDays(date, 1), h, m, sub.timezone);
      for (let t = zonedTime(date, h, m, sub.timezone); t < dayEnd; t += interval)
        keep(t, Math.min(t + interval, dayEnd));
    } else if (isPeriodStart(sub, date)) {
      const next = nextPeriodDate(sub, date);
      keep(zonedTime(date, h, m, sub.timezone), zonedTime(next, h, m, sub.timezone));
    }
    date = addDays(date, 1);
  }
  return out;
}

function filterPredicate(filters: Record<string, string[]>): (tx: SimTransaction) => boolean {
  const tests: ((tx: SimTransaction) => boolean)[] = [];
  for (const [key, values] of Object.entries(filters)) {
    if (values.length === 0) continue;
    if (key === 'Application.Name') {
      tests.push((tx) => tx.applications.split(',').some((a) => values.includes(a)));
      continue;
    }
    const id = (
      { firstName: 'BillTo.FirstName', lastName: 'BillTo.LastName', email: 'BillTo.Email' } as const
    )[key as 'firstName'];
    const get = fieldGetter(id ?? key);
    tests.push((tx) => values.includes(get(tx, { signedAmounts: false })));
  }
  return (tx) => tests.every((t) => t(tx));
}

export function rowsOf(
  dataset: Dataset,
  r: Pick<ReportInstance, 'organizationId' | 'definition' | 'filters' | 'start' | 'end'>,
): Iterable<SimTransaction> {
  const rule = ROW_SOURCE_RULES[r.definition.source];
  const pass = filterPredicate(r.filters);
  const { expand, map } = rule;
  if (expand) {
    // Events come up to FUNDING_LAG_DAYS after their request: read the requests from that far back.
    return {
      *[Symbol.iterator]() {
        for (const tx of dataset.between(r.organizationId, r.start - FUNDING_LAG_DAYS * DAY_MS, r.end)) {
          if (!rule.select(tx)) continue;
          for (const row of expand(tx)) {
            const t = rule.at(row);
            if (t >= r.start && t < r.end && pass(row)) yield row;
          }
        }
      },
    };
  }
  return {
    *[Symbol.iterator]() {
      for (const tx of dataset.between(r.organizationId, r.start, r.end, {
        ...(rule.source === 'conversions' || rule.source === 'chargebacks' || rule.later
          ? { at: rule.at }
          : {}),
        lookBackDays: rule.later ? 2 : 0,
        ...(rule.later
          ? {
              skipDay: (day: string) => {
                const t = dataset.batchTime(r.organizationId, day);
                return t < r.start || t >= r.end;
              },
            }
          : {}),
      })) {
        if (!rule.select(tx)) continue;
        const row = map ? map(tx) : tx;
        if (pass(row)) yield row;
      }
    },
  };
}

export function fileSpecOf(r: ReportInstance): ReportFileSpec {
  return {
    organizationId: r.organizationId,
    reportName: r.reportName,
    definition: r.definition,
    fields: r.fields,
    mimeType: r.mimeType,
    fieldNameConvention: r.mimeType === 'text/csv' ? r.preferences.fieldNameConvention : undefined,
    signedAmounts: r.preferences.signedAmounts,
    start: r.start,
    end: r.end,
  };
}

export class ReportStore {
  private readonly subscriptions = new Map<string, SubscriptionRecord[]>();
  private readonly adhoc = new Map<string, AdhocRecord[]>();
  private readonly registry = new Map<string, ReportInstance>();
  private readonly rowsMemo = new Map<string, boolean>();

  constructor(private readonly deps: ReportStoreDeps) {}

  private subsOf(org: string): SubscriptionRecord[] {
    let list = this.subscriptions.get(org);
    if (!list) {
      list = [];
      this.subscriptions.set(org, list);
    }
    return list;
  }

  /** Active subscriptions of an organization. */
  activeSubscriptions(org: string): SubscriptionRecord[] {
    return this.subsOf(org).filter((s) => s.activeUntil === undefined);
  }

  findSubscription(org: string, reportName: string): SubscriptionRecord | undefined {
    return this.activeSubscriptions(org).find((s) => s.reportName === reportName);
  }

  /** Create or update; 'unchanged' for an identical PUT, 'limit' past 20 subscriptions. */
  putSubscription(
    record: Omit<SubscriptionRecord, 'activeFrom'>,
  ): 'created' | 'updated' | 'unchanged' | 'limit' {
    const existing = this.findSubscription(record.organizationId, record.reportName);
    if (existing) {
      if (existing.canonical === record.canonical) return 'unchanged';
      Object.assign(existing, record);
      return 'updated';
    }
    if (this.activeSubscriptions(record.organizationId).length >= SUBSCRIPTION_LIMIT) return 'limit';
    this.subsOf(record.organizationId).push({ ...record, activeFrom: this.deps.now() });
    return 'created';
  }

  /** Install a subscription active since `activeFrom` (the default subscriptions). */
  seedSubscription(record: SubscriptionRecord): void {
    this.subsOf(record.organizationId).push(record);
  }

  deleteSubscription(org: string, reportName: string): boolean {
    const s = this.findSubscription(org, reportName);
    if (!s) return false;
    s.activeUntil = this.deps.now();
    return true;
  }

  /** 'unchanged' when the same one-time report (same name and body) already exists. */
  createAdhoc(record: Omit<AdhocRecord, 'createdAt' | 'reportId'>): 'created' | 'unchanged' {
    const list = this.adhoc.get(record.organizationId) ?? [];
    if (list.some((a) => a.reportName === record.reportName && a.canonical === record.canonical))
      return 'unchanged';
    const createdAt = this.deps.now();
    const reportId = stableUuid(
      `${this.deps.seed}|adhoc|${record.organizationId}|${record.reportName}|${createdAt}|${list.length}`,
    );
    list.push({ ...record, createdAt, reportId });
    this.adhoc.set(record.organizationId, list);
    return 'created';
  }

  adhocReports(org: string): AdhocRecord[] {
    return this.adhoc.get(org) ?? [];
  }

  allSubscriptions(): SubscriptionRecord[] {
    return [...this.subscriptions.values()].flat();
  }

  allAdhoc(): AdhocRecord[] {
    return [...this.adhoc.values()].flat();
  }

  private groupId(org: string, name: string): string {
    return String(10000 + (hash32(`${this.deps.seed}|group|${org}|${name}`) % 90000));
  }

  private instanceOfPeriod(sub: SubscriptionRecord, start: number, end: number): ReportInstance {
    const reportId = stableUuid(
      `${this.deps.seed}|report|${sub.organizationId}|${sub.reportName}|${sub.activeFrom}|${start}`,
    );
    const known = this.registry.get(reportId);
    if (known) return known;
    const definition = reportDefinition(sub.reportDefinitionName)!;
    const instance: ReportInstance = {
      reportId,
      organizationId: sub.organizationId,
      reportName: sub.reportName,
      definition,
      mimeType: sub.reportMimeType,
      frequency: sub.reportFrequency,
      start,
      end,
      timezone: sub.timezone,
      fields: sub.reportFields,
      filters: sub.reportFilters,
      preferences: sub.reportPreferences,
      queuedTime: end + QUEUE_DELAY,
      generatingTime: end + RUNNING_AFTER,
      completedTime: end + READY_AFTER,
      reportDate: localDate(end, sub.timezone),
      groupId: this.groupId(sub.organizationId, sub.reportName),
    };
    this.registry.set(reportId, instance);
    return instance;
  }

  private instanceOfAdhoc(a: AdhocRecord): ReportInstance {
    const known = this.registry.get(a.reportId);
    if (known) return known;
    const instance: ReportInstance = {
      reportId: a.reportId,
      organizationId: a.organizationId,
      reportName: a.reportName,
      definition: reportDefinition(a.reportDefinitionName)!,
      mimeType: a.reportMimeType,
      frequency: 'ADHOC',
      start: a.start,
      end: a.end,
      timezone: a.timezone,
      fields: a.reportFields,
      filters: a.reportFilters,
      preferences: a.reportPreferences,
      queuedTime: a.createdAt,
      generatingTime: a.createdAt + 3_000,
      completedTime: a.createdAt + 6_000,
      reportDate: localDate(a.end, a.timezone),
      groupId: this.groupId(a.organizationId, a.reportName),
    };
    this.registry.set(a.reportId, instance);
    return instance;
  }

  /** Reports of an organization (queued by now) whose period starts in [lo, hi]. */
  reports(org: string, lo: number, hi: number): ReportInstance[] {
    const now = this.deps.now();
    const out: ReportInstance[] = [];
    for (const sub of this.subsOf(org)) {
      for (const [start, end] of subscriptionPeriods(sub, lo, Math.min(hi, now))) {
        const r = this.instanceOfPeriod(sub, start, end);
        if (r.queuedTime <= now) out.push(r);
      }
    }
    for (const a of this.adhocReports(org)) {
      if (a.createdAt <= now && a.start >= lo && a.start <= hi) out.push(this.instanceOfAdhoc(a));
    }
    return out.sort((x, y) => x.queuedTime - y.queuedTime || x.reportName.localeCompare(y.reportName));
  }

  /** Every report queued by now, all organizations (for lookups by id after a restart of the registry). */
  byId(reportId: string): ReportInstance | undefined {
    const known = this.registry.get(reportId);
    if (known) return known;
    const now = this.deps.now();
    for (const sub of this.allSubscriptions()) {
      for (const [start, end] of subscriptionPeriods(sub, sub.activeFrom - 32 * DAY_MS, now)) {
        const r = this.instanceOfPeriod(sub, start, end);
        if (r.reportId === reportId) return r;
      }
    }
    for (const a of this.allAdhoc()) if (a.reportId === reportId) return this.instanceOfAdhoc(a);
    return undefined;
  }

  /** The report of a subscription's period (whether queued yet or not). */
  reportOfPeriod(sub: SubscriptionRecord, start: number, end: number): ReportInstance {
    return this.instanceOfPeriod(sub, start, end);
  }

  /**
   * The report of a subscription or one-time report by name and reportDate (latest one-time wins),
   * and by `reportTime` (`hh:mm:ss±hh:mm`, the local end time the search's download link carries)
   * when given. Without reportTime on a day with several reports, the day's last report (the one
   * ending latest on that date) is served: an assumption, the service does not document it.
   */
  byNameAndDate(
    org: string,
    reportName: string,
    reportDate: string,
    reportTime?: string,
  ): ReportInstance | undefined {
    const endsAt = (r: ReportInstance): boolean => reportTime === undefined || endsAtTime(r, reportTime);
    const now = this.deps.now();
    const adhoc = this.adhocReports(org)
      .filter((a) => a.reportName === reportName && a.createdAt <= now)
      .map((a) => this.instanceOfAdhoc(a))
      .filter((r) => r.reportDate === reportDate && endsAt(r))
      .sort((x, y) => y.queuedTime - x.queuedTime);
    if (adhoc[0]) return adhoc[0];
    const around = Date.parse(`${reportDate}T00:00:00Z`);
    const subs = this.subsOf(org).filter((s) => s.reportName === reportName);
    for (const sub of subs.reverse()) {
      const periods = subscriptionPeriods(sub, around - 33 * DAY_MS, around + 2 * DAY_MS);
      for (const [start, end] of periods.reverse()) {
        const r = this.instanceOfPeriod(sub, start, end);
        if (r.reportDate === reportDate && r.queuedTime <= now && endsAt(r)) return r;
      }
    }
    return undefined;
  }

  hasRows(r: ReportInstance): boolean {
    const key = `${r.organizationId}|${r.definition.name}|${JSON.stringify(r.filters)}|${r.start}|${r.end}`;
    let v = this.rowsMemo.get(key);
    if (v === undefined) {
      v = false;
      for (const _ of rowsOf(this.deps.dataset, r)) {
        v = true;
        break;
      }
      this.rowsMemo.set(key, v);
    }
    return v;
  }

  status(r: ReportInstance): ReportStatus {
    const now = this.deps.now();
    if (now < r.generatingTime) return 'QUEUED';
    if (now < r.completedTime) return 'RUNNING';
    if (this.deps.faults.isStuck(r.reportId, r.reportName)) return 'RUNNING';
    if (this.deps.faults.isError(r.reportId, r.reportName)) return 'ERROR';
    return this.hasRows(r) ? 'COMPLETED' : 'NO_DATA';
  }

  rows(r: ReportInstance): Iterable<SimTransaction> {
    return rowsOf(this.deps.dataset, r);
  }

  /** `reportStartTime` etc. in the report's zone, like the service. */
  formatTime(ms: number, r: ReportInstance): string {
    return isoInZone(ms, r.timezone);
  }
}

/** `hh:mm:ss±hh:mm` of a report's end in its zone: the reportTime of its download link. */
export function reportTimeOf(r: Pick<ReportInstance, 'end' | 'timezone'>): string {
  return isoInZone(r.end, r.timezone).slice(11);
}

/**
 * Whether a report ends at a reportTime: `hh:mm:ss` with an offset (the instant on the reportDate)
 * or without one (the local time). A space stands for the offset's "+" (a link's literal plus,
 * read as a form value).
 */
function endsAtTime(r: ReportInstance, reportTime: string): boolean {
  const text = reportTime.replace(/ (\d{2}:?\d{2})$/, '+$1');
  const local = reportTimeOf(r);
  if (/^\d{2}:\d{2}:\d{2}$/.test(text)) return local.slice(0, 8) === text;
  const at = parseIsoDateTime(`${r.reportDate}T${text}`);
  return at === r.end;
}

export function firstRunStart(sub: SubscriptionRecord): number {
  const [h, m] = hhmm(sub.startTime);
  const day = localDate(sub.activeFrom, sub.timezone);
  const t = zonedTime(day, h, m, sub.timezone);
  return t >= sub.activeFrom - DAY_MS ? t : zonedTime(addDays(day, 1), h, m, sub.timezone);
}
