/**
 * Handlers of the `/reporting/v3/*` endpoints (facts §1, §2): parameter validation, the response
 * shapes key for key (including the spec's misspelled `reportDefintionName` and `_link`), and the
 * error bodies of each endpoint.
 */
import { FIELD_NAME_CONVENTIONS } from '../render/header-names.js';
import type { FieldNameConvention } from '../render/header-names.js';
import type { Dataset, SimOrganization } from '../data/dataset.js';
import type { EndpointName, FaultPlan, FaultRule } from '../server/faults.js';
import {
  acceptsXml,
  errorBean,
  invalidParams,
  json,
  negotiate,
  notFoundBean,
  reportingError,
} from './http-replies.js';
import type { Reply } from './http-replies.js';
import {
  BREAKDOWNS,
  PAYMENT_SUBTYPES,
  ROLL_UPS,
  conversionDetails,
  jsonToXml,
  netFundings,
  notificationOfChanges,
  paymentBatchSummaries,
  purchaseRefundCsv,
  purchaseRefundPage,
  servePurchaseRefundPageJson,
  recordsToCsv,
} from './on-demand.js';
import type { PaymentSubtype, Window } from './on-demand.js';
import {
  APPLICATION_NAMES,
  REPORT_DEFINITIONS,
  classicReport,
  defaultClassicReport,
  reportDefinition,
} from '../render/report-layouts.js';
import type { ReportDefinitionLayout } from '../render/report-layouts.js';
import { knownFieldIds } from '../render/report-fields.js';
import {
  REPORT_FREQUENCIES,
  REPORT_MIME_TYPES,
  SUBSCRIPTION_LIMIT,
  fileSpecOf,
  firstRunStart,
  parseInterval,
  reportTimeOf,
} from '../data/report-store.js';
import type {
  ReportFrequency,
  ReportInstance,
  ReportMimeType,
  ReportPreferences,
  ReportStore,
  SubscriptionRecord,
} from '../data/report-store.js';
import type { ReportFileCache } from '../render/report-cache.js';
import { renderReport } from '../render/report-writers.js';
import type { MalformedRowFault } from '../render/report-writers.js';
import {
  DAY_MS,
  isValidDate,
  isValidTimeZone,
  isoInZone,
  parseIsoDateTime,
  zonedTime,
} from '../data/time.js';

export interface RouteContext {
  method: string;
  /** Path below /reporting/v3 (e.g. `/reports`). */
  path: string;
  query: URLSearchParams;
  body: Buffer;
  accept: string | undefined;
  now: number;
  /** The authenticated merchant (v-c-merchant-id). */
  merchantId: string;
  /** Organizations this credential may act for. */
  allowed: readonly string[];
  dataset: Dataset;
  store: ReportStore;
  faults: FaultPlan;
  seed: number;
  /** Faults drawn for this request (a route may read malformed-row). */
  drawn: readonly FaultRule[];
  /** Set when report files are kept once rendered (SimulatorOptions.cacheReports). */
  reportCache?: ReportFileCache | undefined;
}

export interface Route {
  endpoint: EndpointName;
  handle(ctx: RouteContext, params: string[]): Reply | Promise<Reply>;
}

const ORG_PATTERN = /^[a-zA-Z0-9-_]{1,32}$/;
/** reportName in a query (search, downloads): the names a PUT body may create, and `+`. */
const REPORT_NAME_PATH = /^[a-zA-Z0-9-_+ ]{1,128}$/;
/** reportName as the path of GET/DELETE /report-subscriptions/{reportName} (spec: [a-zA-Z0-9-_+]+, maxLength 80). */
const SUBSCRIPTION_NAME_PATH = /^[a-zA-Z0-9-_+]{1,80}$/;
/** A PUT body's reportName (spec: [a-zA-Z0-9-_ ]+, maxLength 128). */
const SUBSCRIPTION_NAME_BODY = /^[a-zA-Z0-9-_ ]{1,128}$/;
/** reportInterval of a USER_DEFINED subscription, the spec's pattern: PT1M … PT23H59M. */
const REPORT_INTERVAL =
  /^PT((([1-9]|1[0-9]|2[0-3])H(([1-9]|[1-4][0-9]|5[0-9])M)?)|((([1-9]|1[0-9]|2[0-3])H)?([1-9]|[1-4][0-9]|5[0-9])M))$/;

/** The organization a request acts for: `organizationId` (query or body) or the authenticated merchant. */
export function resolveOrganization(
  ctx: RouteContext,
  requested: unknown,
): { org: SimOrganization } | { reply: Reply } {
  let id = ctx.merchantId;
  if (requested !== undefined && requested !== null && requested !== '') {
    if (typeof requested !== 'string' || !ORG_PATTERN.test(requested)) {
      return { reply: invalidParams([{ field: 'organizationId', reason: 'INVALID_DATA' }]) };
    }
    id = requested;
  }
  const org = ctx.dataset.organization(id);
  if (!org) {
    return { reply: reportingError(404, 'NOT_FOUND', `Organization ${id} not found`) };
  }
  if (!ctx.allowed.includes(id)) {
    return {
      reply: errorBean(403, {
        code: 'FORBIDDEN',
        message: `Not authorized to access organization ${id}`,
        localizationKey: 'cybsapi.forbidden',
        detail: 'The credential may not act for this organization.',
      }),
    };
  }
  return { org };
}

function orgFromQuery(ctx: RouteContext): { org: SimOrganization } | { reply: Reply } {
  return resolveOrganization(ctx, ctx.query.get('organizationId') ?? undefined);
}

type Issue = { field: string; reason: string };

function requiredTime(q: URLSearchParams, name: string, issues: Issue[]): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') {
    issues.push({ field: name, reason: 'MISSING_FIELD' });
    return undefined;
  }
  const t = parseIsoDateTime(v);
  if (t === undefined) issues.push({ field: name, reason: 'INVALID_DATA' });
  return t;
}

function oneOf<T extends string>(
  q: URLSearchParams,
  name: string,
  values: readonly T[],
  issues: Issue[],
  normalise: (s: string) => string = (s) => s,
): T | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  const n = normalise(v);
  if ((values as readonly string[]).includes(n)) return n as T;
  issues.push({ field: name, reason: 'INVALID_DATA' });
  return undefined;
}

function windowParams(ctx: RouteContext, issues: Issue[]): { start?: number; end?: number } {
  const start = requiredTime(ctx.query, 'startTime', issues);
  const end = requiredTime(ctx.query, 'endTime', issues);
  if (start !== undefined && end !== undefined && end <= start)
    issues.push({ field: 'endTime', reason: 'INVALID_DATA' });
  return { start, end };
}

/* ------------------------------------------------------------------ report definitions */

function definitionSummary(def: ReportDefinitionLayout): Record<string, unknown> {
  return {
    type: def.type,
    reportDefinitionId: def.id,
    reportDefintionName: def.name,
    supportedFormats: ['application/xml', 'text/csv'],
    description: def.description,
    defaultSettings: {
      reportMimeType: 'text/csv',
      reportFrequency: 'DAILY',
      reportName: `${def.type}Report_Daily`,
      timezone: 'GMT',
      startTime: '0000',
      startDay: 1,
      reportFilters: def.source === 'requests' ? { 'Application.Name': ['ics_auth', 'ics_bill'] } : {},
      reportPreferences: { signedAmounts: false, fieldNameConvention: 'SOAPI' },
    },
    subscriptionType: def.subscriptionType,
  };
}

const SUBSCRIPTION_TYPES = ['CLASSIC', 'CUSTOM', 'STANDARD'] as const;

function definitionAttributes(def: ReportDefinitionLayout): Record<string, unknown>[] {
  const defaults = new Set(def.fields);
  const all = [...def.fields, ...knownFieldIds().filter((f) => !defaults.has(f))];
  return [
    {
      id: 'Application.Name',
      name: 'Application Name',
      description: 'Filter: the applications (services) of the request',
      filterType: 'MULTI',
      default: false,
      required: false,
      supportedType: [...APPLICATION_NAMES],
    },
    ...all.map((id) => ({
      id,
      name: id.split('.').slice(1).join('.'),
      description: `${id.split('.')[0]} field ${id.split('.').slice(1).join('.')}`,
      filterType: 'MULTI',
      default: defaults.has(id),
      required: id === 'Request.RequestID',
      supportedType: ['application/xml', 'text/csv'],
    })),
  ];
}

const listDefinitions: Route = {
  endpoint: 'report-definitions',
  handle(ctx) {
    const issues: Issue[] = [];
    const type = oneOf(ctx.query, 'subscriptionType', SUBSCRIPTION_TYPES, issues, (s) => s.toUpperCase());
    if (issues.length) return invalidParams(issues);
    const o = orgFromQuery(ctx);
    if ('reply' in o) return o.reply;
    return json(200, {
      reportDefinitions: REPORT_DEFINITIONS.filter((d) => !type || d.subscriptionType === type).map(
        definitionSummary,
      ),
    });
  },
};

const getDefinition: Route = {
  endpoint: 'report-definitions',
  handle(ctx, [name]) {
    const issues: Issue[] = [];
    oneOf(ctx.query, 'subscriptionType', SUBSCRIPTION_TYPES, issues, (s) => s.toUpperCase());
    oneOf(ctx.query, 'reportMimeType', [...REPORT_MIME_TYPES, 'CSV', 'XML'], issues);
    if (issues.length) return invalidParams(issues);
    const o = orgFromQuery(ctx);
    if ('reply' in o) return o.reply;
    const def = reportDefinition(name ?? '');
    if (!def) return reportingError(404, 'NOT_FOUND', 'Report not found');
    const summary = definitionSummary(def);
    return json(200, { ...summary, attributes: definitionAttributes(def) });
  },
};

/* ------------------------------------------------------------------ subscriptions */

function subscriptionBody(s: SubscriptionRecord, groupId: string): Record<string, unknown> {
  return {
    organizationId: s.organizationId,
    reportDefinitionId: String(reportDefinition(s.reportDefinitionName)?.id ?? ''),
    reportDefinitionName: s.reportDefinitionName,
    reportMimeType: s.reportMimeType,
    reportFrequency: s.reportFrequency,
    reportInterval: s.reportInterval ?? null,
    reportName: s.reportName,
    timezone: s.timezone,
    startTime: isoInZone(firstRunStart(s), s.timezone),
    startDay: s.startDay,
    reportFields: s.reportFields,
    reportFilters: s.reportFilters,
    reportPreferences: {
      signedAmounts: s.reportPreferences.signedAmounts,
      fieldNameConvention: s.reportPreferences.fieldNameConvention ?? null,
    },
    groupId,
  };
}

function groupIdOf(ctx: RouteContext, s: { organizationId: string; groupName?: string }): string {
  let h = 0;
  for (const c of `${ctx.seed}|${s.organizationId}|${s.groupName ?? ''}`)
    h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return String(10000 + (h % 90000));
}

const listSubscriptions: Route = {
  endpoint: 'subscriptions',
  handle(ctx) {
    const o = orgFromQuery(ctx);
    if ('reply' in o) return o.reply;
    return json(200, {
      subscriptions: ctx.store
        .activeSubscriptions(o.org.id)
        .map((s) => subscriptionBody(s, groupIdOf(ctx, s))),
    });
  },
};

const getSubscription: Route = {
  endpoint: 'subscriptions',
  handle(ctx, [name]) {
    if (!name || !SUBSCRIPTION_NAME_PATH.test(name))
      return invalidParams([{ field: 'reportName', reason: 'INVALID_DATA' }]);
    const o = orgFromQuery(ctx);
    if ('reply' in o) return o.reply;
    const s = ctx.store.findSubscription(o.org.id, name);
    if (!s) return reportingError(404, 'NOT_FOUND', 'Subscriptions not found');
    return json(200, subscriptionBody(s, groupIdOf(ctx, s)));
  },
};

const deleteSubscription: Route = {
  endpoint: 'subscriptions',
  handle(ctx, [name]) {
    if (!name || !SUBSCRIPTION_NAME_PATH.test(name))
      return invalidParams([{ field: 'reportName', reason: 'INVALID_DATA' }]);
    const o = orgFromQuery(ctx);
    if ('reply' in o) return o.reply;
    if (!ctx.store.deleteSubscription(o.org.id, name)) {
      return reportingError(404, 'NOT_FOUND', 'Subscriptions not found');
    }
    return { status: 200 };
  },
};

type FieldIssue = { path: string; message: string };

function beanFields(issues: FieldIssue[]): Reply {
  return errorBean(400, {
    code: 'VALIDATION_ERROR',
    message: 'Field validation error',
    localizationKey: 'cybsapi.validation.errors',
    detail: issues.map((i) => `${i.path}: ${i.message}`).join('; '),
    fields: issues.map((i) => ({ ...i, localizationKey: 'cybsapi.validation.field.invalid' })),
  });
}

function parseJsonBody(ctx: RouteContext): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(ctx.body.toString('utf8'));
    return v !== null && typeof v === 'object' && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

const FIELD_ID = /^[A-Za-z][A-Za-z0-9-]*\.[A-Za-z][A-Za-z0-9_]*$/;

function checkCommon(
  body: Record<string, unknown>,
  issues: FieldIssue[],
  options: { requireMime: boolean },
): {
  def?: ReportDefinitionLayout;
  fields?: string[];
  mime?: ReportMimeType;
  filters: Record<string, string[]>;
  preferences: ReportPreferences;
} {
  const out: ReturnType<typeof checkCommon> = { filters: {}, preferences: { signedAmounts: false } };
  const defName = body['reportDefinitionName'];
  if (typeof defName !== 'string' || defName === '') {
    issues.push({ path: 'reportDefinitionName', message: 'is required' });
  } else if (!/^[a-zA-Z0-9-]{1,80}$/.test(defName) || !reportDefinition(defName)) {
    issues.push({ path: 'reportDefinitionName', message: `unknown report definition ${defName}` });
  } else {
    out.def = reportDefinition(defName)!;
  }
  const fields = body['reportFields'];
  if (!Array.isArray(fields) || fields.length === 0) {
    issues.push({ path: 'reportFields', message: 'is required: a non-empty array of Group.Field names' });
  } else if (!fields.every((f): f is string => typeof f === 'string' && FIELD_ID.test(f))) {
    issues.push({ path: 'reportFields', message: 'every field must be a Group.Field name' });
  } else if (new Set(fields).size !== fields.length) {
    issues.push({ path: 'reportFields', message: 'fields must not repeat' });
  } else {
    out.fields = fields;
  }
  const mime = body['reportMimeType'];
  if (mime === undefined || mime === null) {
    if (options.requireMime) issues.push({ path: 'reportMimeType', message: 'is required' });
    else out.mime = 'text/csv';
  } else if (typeof mime !== 'string' || !(REPORT_MIME_TYPES as readonly string[]).includes(mime)) {
    issues.push({ path: 'reportMimeType', message: 'must be application/xml or text/csv' });
  } else {
    out.mime = mime as ReportMimeType;
  }
  const filters = body['reportFilters'];
  if (filters !== undefined && filters !== null) {
    if (
      typeof filters !== 'object' ||
      Array.isArray(filters) ||
      !Object.values(filters).every((v) => Array.isArray(v) && v.every((x) => typeof x === 'string'))
    ) {
      issues.push({ path: 'reportFilters', message: 'must map names to arrays of strings' });
    } else {
      out.filters = filters as Record<string, string[]>;
    }
  }
  const prefs = body['reportPreferences'];
  if (prefs !== undefined && prefs !== null) {
    if (typeof prefs !== 'object' || Array.isArray(prefs)) {
      issues.push({ path: 'reportPreferences', message: 'must be an object' });
    } else {
      const p = prefs as Record<string, unknown>;
      for (const k of Object.keys(p)) {
        if (k !== 'signedAmounts' && k !== 'fieldNameConvention') {
          issues.push({ path: `reportPreferences.${k}`, message: 'unknown field' });
        }
      }
      if (p['signedAmounts'] !== undefined && typeof p['signedAmounts'] !== 'boolean') {
        issues.push({ path: 'reportPreferences.signedAmounts', message: 'must be a boolean' });
      } else {
        out.preferences.signedAmounts = p['signedAmounts'] === true;
      }
      const conv = p['fieldNameConvention'];
      if (conv !== undefined && conv !== null) {
        const normal = conv === 'Simple Order API' ? 'SOAPI' : conv;
        if (typeof normal !== 'string' || !(FIELD_NAME_CONVENTIONS as readonly string[]).includes(normal)) {
          issues.push({ path: 'reportPreferences.fieldNameConvention', message: 'must be SOAPI or SCMP' });
        } else {
          out.preferences.fieldNameConvention = normal as FieldNameConvention;
        }
      }
    }
  }
  return out;
}

const SUBSCRIPTION_KEYS = new Set([
  'organizationId',
  'reportDefinitionName',
  'reportFields',
  'reportMimeType',
  'reportFrequency',
  'reportInterval',
  'reportName',
  'timezone',
  'timeZone',
  'startTime',
  'startDay',
  'reportFilters',
  'reportPreferences',
  'groupName',
  'selectedMerchantGroupName',
]);

function canonical(value: Record<string, unknown>): string {
  return JSON.stringify(value, Object.keys(value).sort());
}

const putSubscription: Route = {
  endpoint: 'subscriptions',
  handle(ctx) {
    const body = parseJsonBody(ctx);
    if (!body) return beanFields([{ path: 'body', message: 'must be a JSON object' }]);
    const o = resolveOrganization(
      ctx,
      body['organizationId'] ?? ctx.query.get('organizationId') ?? undefined,
    );
    if ('reply' in o) return o.reply;
    const issues: FieldIssue[] = [];
    for (const k of Object.keys(body))
      if (!SUBSCRIPTION_KEYS.has(k)) issues.push({ path: k, message: 'unknown field' });
    const common = checkCommon(body, issues, { requireMime: true });
    const name = body['reportName'];
    if (typeof name !== 'string' || !SUBSCRIPTION_NAME_BODY.test(name)) {
      issues.push({ path: 'reportName', message: 'is required: 1-128 characters of [a-zA-Z0-9-_ ]' });
    }
    const freqRaw = body['reportFrequency'];
    const freq = typeof freqRaw === 'string' ? freqRaw.toUpperCase() : undefined;
    if (!freq || !(REPORT_FREQUENCIES as readonly string[]).includes(freq)) {
      issues.push({
        path: 'reportFrequency',
        message: 'is required: DAILY, WEEKLY, MONTHLY or USER_DEFINED',
      });
    }
    const tz = body['timezone'] ?? body['timeZone'];
    if (typeof tz !== 'string' || !isValidTimeZone(tz)) {
      issues.push({
        path: 'timezone',
        message: 'is required: a supported time zone such as America/Chicago',
      });
    }
    const startTime = body['startTime'];
    if (typeof startTime !== 'string' || !/^([01]\d|2[0-3])[0-5]\d$/.test(startTime)) {
      issues.push({ path: 'startTime', message: 'is required: HHMM, e.g. 0900' });
    }
    const startDayRaw = body['startDay'];
    let startDay = 1;
    if (startDayRaw !== undefined && startDayRaw !== null) {
      const max = freq === 'WEEKLY' ? 7 : 31;
      if (
        typeof startDayRaw !== 'number' ||
        !Number.isInteger(startDayRaw) ||
        startDayRaw < 1 ||
        startDayRaw > max
      ) {
        issues.push({ path: 'startDay', message: `must be an integer from 1 to ${max}` });
      } else {
        startDay = startDayRaw;
      }
    }
    const interval = body['reportInterval'];
    if (freq === 'USER_DEFINED') {
      if (typeof interval !== 'string' || !REPORT_INTERVAL.test(interval)) {
        issues.push({
          path: 'reportInterval',
          message: 'is required for USER_DEFINED: PT1M to PT23H59M, e.g. PT2H30M (no PT0H, PT24H or PT90M)',
        });
      } else if (parseInterval(interval) === undefined) {
        // The simulator's own limit (report-store.ts), not the service's.
        issues.push({ path: 'reportInterval', message: 'the simulator makes reports at most once an hour' });
      }
    } else if (interval !== undefined && interval !== null) {
      issues.push({ path: 'reportInterval', message: 'only applies to USER_DEFINED reports' });
    }
    for (const k of ['groupName', 'selectedMerchantGroupName']) {
      if (body[k] !== undefined && typeof body[k] !== 'string')
        issues.push({ path: k, message: 'must be a string' });
    }
    if (issues.length > 0) return beanFields(issues);
    const settings = {
      reportDefinitionName: common.def!.name,
      reportFields: common.fields!,
      reportMimeType: common.mime!,
      reportFrequency: freq as ReportFrequency,
      ...(freq === 'USER_DEFINED' ? { reportInterval: interval as string } : {}),
      reportName: name as string,
      timezone: tz as string,
      startTime: startTime as string,
      startDay,
      reportFilters: common.filters,
      reportPreferences: common.preferences,
      ...(typeof body['groupName'] === 'string' ? { groupName: body['groupName'] } : {}),
    };
    const result = ctx.store.putSubscription({
      organizationId: o.org.id,
      ...settings,
      canonical: canonical(settings as unknown as Record<string, unknown>),
    });
    if (result === 'unchanged') return { status: 304 };
    if (result === 'limit') {
      return beanFields([
        {
          path: 'reportName',
          message: `an organization can have at most ${SUBSCRIPTION_LIMIT} subscriptions`,
        },
      ]);
    }
    return { status: 200 };
  },
};

/** The names of PST a Standard predefined subscription accepts. */
const PST_NAMES: readonly string[] = ['PST', 'America/Los_Angeles'];

const putPredefinedSubscription: Route = {
  endpoint: 'subscriptions',
  handle(ctx) {
    const body = parseJsonBody(ctx);
    if (!body) return beanFields([{ path: 'body', message: 'must be a JSON object' }]);
    const o = resolveOrganization(
      ctx,
      body['organizationId'] ?? ctx.query.get('organizationId') ?? undefined,
    );
    if ('reply' in o) return o.reply;
    const issues: FieldIssue[] = [];
    const def =
      typeof body['reportDefinitionName'] === 'string'
        ? reportDefinition(body['reportDefinitionName'])
        : undefined;
    if (!def) issues.push({ path: 'reportDefinitionName', message: 'unknown or missing report definition' });
    const type = body['subscriptionType'];
    if (type !== 'CLASSIC' && type !== 'STANDARD')
      issues.push({ path: 'subscriptionType', message: 'must be CLASSIC or STANDARD' });
    // Standard subscriptions run in PST and refuse any other zone; Classic ones default to GMT
    // (SDK docs/PredefinedSubscriptionRequestBean.md).
    const tzRaw = body['timezone'] ?? (type === 'CLASSIC' ? 'GMT' : 'PST');
    const tz = type === 'STANDARD' && PST_NAMES.includes(tzRaw as string) ? 'America/Los_Angeles' : tzRaw;
    if (typeof tz !== 'string' || !isValidTimeZone(tz))
      issues.push({ path: 'timezone', message: 'unknown time zone' });
    else if (type === 'STANDARD' && tz !== 'America/Los_Angeles')
      issues.push({ path: 'timezone', message: 'a Standard subscription runs in PST; no other time zone' });
    const startTime = (body['startTime'] as string | undefined) ?? '0000';
    if (!/^([01]\d|2[0-3])[0-5]\d$/.test(String(startTime)))
      issues.push({ path: 'startTime', message: 'must be HHMM' });
    const mime = (body['reportMimeType'] as string | undefined) ?? 'text/csv';
    if (!(REPORT_MIME_TYPES as readonly string[]).includes(mime))
      issues.push({ path: 'reportMimeType', message: 'must be application/xml or text/csv' });
    if (issues.length > 0) return beanFields(issues);
    // Classic reports under their real names (report-layouts.ts CLASSIC_REPORTS).
    const name =
      (body['reportName'] as string | undefined) ??
      (type === 'CLASSIC' ? defaultClassicReport(def!.name)?.reportName : undefined) ??
      `${def!.type}Report_Daily_${type === 'CLASSIC' ? 'Classic' : 'Standard'}`;
    const classic = type === 'CLASSIC' ? classicReport(name) : undefined;
    const classicFields = classic?.definitionName === def!.name ? classic.fields : undefined;
    if (body['subscriptionStatus'] === 'INACTIVE') {
      ctx.store.deleteSubscription(o.org.id, name);
      return { status: 200 };
    }
    const settings = {
      reportDefinitionName: def!.name,
      reportFields: [...(classicFields ?? def!.fields)],
      reportMimeType: mime as ReportMimeType,
      reportFrequency: 'DAILY' as const,
      reportName: name,
      timezone: tz as string,
      startTime,
      startDay: 1,
      reportFilters: {},
      reportPreferences: { signedAmounts: false },
    };
    const result = ctx.store.putSubscription({
      organizationId: o.org.id,
      ...settings,
      canonical: canonical(settings as unknown as Record<string, unknown>),
    });
    if (result === 'limit') return beanFields([{ path: 'reportName', message: 'too many subscriptions' }]);
    return { status: result === 'created' ? 201 : 200 };
  },
};

/* ------------------------------------------------------------------ reports */

const SEARCH_STATUSES = ['COMPLETED', 'PENDING', 'QUEUED', 'RUNNING', 'ERROR', 'NO_DATA'] as const;
const SEARCH_FREQUENCIES = ['DAILY', 'WEEKLY', 'MONTHLY', 'USER_DEFINED', 'ADHOC'] as const;

/**
 * A search result's download link, as the service writes it (SPEC2020 example:
 * `…?reportDate=2017-10-02&reportName=…&reportTime=10:00:00+05:00`): reportTime is the local end time
 * of the report with its offset, the "+" written literally.
 */
function downloadHref(r: ReportInstance): string {
  return `/reporting/v3/report-downloads?reportDate=${r.reportDate}&reportName=${encodeURIComponent(r.reportName)}&reportTime=${reportTimeOf(r)}`;
}

function searchItem(ctx: RouteContext, r: ReportInstance): Record<string, unknown> {
  const status = ctx.store.status(r);
  const z = (ms: number): string => isoInZone(ms, r.timezone);
  const item: Record<string, unknown> = {
    _link: { reportDownload: { href: downloadHref(r), method: 'GET' } },
    reportDefinitionId: String(r.definition.id),
    reportName: r.reportName,
    reportMimeType: r.mimeType,
    reportFrequency: r.frequency,
    status,
    reportStartTime: z(r.start),
    reportEndTime: z(r.end),
    timezone: r.timezone,
    reportId: r.reportId,
    organizationId: r.organizationId,
    queuedTime: z(r.queuedTime),
  };
  if (status !== 'QUEUED') item['reportGeneratingTime'] = z(r.generatingTime);
  if (status === 'COMPLETED' || status === 'NO_DATA') item['reportCompletedTime'] = z(r.completedTime);
  item['subscriptionType'] = r.frequency === 'ADHOC' ? 'CUSTOM' : r.definition.subscriptionType;
  item['groupId'] = r.groupId;
  return item;
}

const searchReports: Route = {
  endpoint: 'search',
  handle(ctx) {
    const q = ctx.query;
    const issues: Issue[] = [];
    const { start, end } = windowParams(ctx, issues);
    const tqt = q.get('timeQueryType');
    if (tqt === null || tqt === '') issues.push({ field: 'timeQueryType', reason: 'MISSING_FIELD' });
    else if (tqt !== 'reportTimeFrame' && tqt !== 'executedTime')
      issues.push({ field: 'timeQueryType', reason: 'INVALID_DATA' });
    const mime = oneOf(q, 'reportMimeType', REPORT_MIME_TYPES, issues);
    const freq = oneOf(q, 'reportFrequency', SEARCH_FREQUENCIES, issues, (s) => s.toUpperCase());
    const status = oneOf(q, 'reportStatus', SEARCH_STATUSES, issues);
    const defIdRaw = q.get('reportDefinitionId');
    let defId: number | undefined;
    if (defIdRaw !== null && defIdRaw !== '') {
      if (!/^\d{1,9}$/.test(defIdRaw)) issues.push({ field: 'reportDefinitionId', reason: 'INVALID_DATA' });
      else defId = Number(defIdRaw);
    }
    const name = q.get('reportName');
    if (name !== null && name !== '' && !REPORT_NAME_PATH.test(name))
      issues.push({ field: 'reportName', reason: 'INVALID_DATA' });
    if (issues.length > 0) return invalidParams(issues);
    const o = orgFromQuery(ctx);
    if ('reply' in o) return o.reply;
    const from = start!;
    const to = end!;
    const candidates = ctx.store.reports(o.org.id, from - 32 * DAY_MS, to);
    const results = candidates.filter((r) => {
      if (
        tqt === 'reportTimeFrame'
          ? !(r.start < to && r.end > from)
          : !(r.queuedTime >= from && r.queuedTime <= to)
      ) {
        return false;
      }
      if (mime && r.mimeType !== mime) return false;
      if (freq && r.frequency !== freq) return false;
      if (name && r.reportName !== name) return false;
      if (defId !== undefined && r.definition.id !== defId) return false;
      if (status && ctx.store.status(r) !== status) return false;
      return true;
    });
    if (results.length === 0) return reportingError(404, 'NOT_FOUND', 'No Reports Found');
    return json(200, { reportSearchResults: results.map((r) => searchItem(ctx, r)) });
  },
};

const getReport: Route = {
  endpoint: 'report',
  handle(ctx, [id]) {
    const o = orgFromQuery(ctx);
    if ('reply' in o) return o.reply;
    const r = id ? ctx.store.byId(id) : undefined;
    if (!r || r.organizationId !== o.org.id || r.queuedTime > ctx.now) {
      return reportingError(404, 'NOT_FOUND', 'Report not found');
    }
    const body = {
      organizationId: r.organizationId,
      reportId: r.reportId,
      reportDefinitionId: String(r.definition.id),
      reportName: r.reportName,
      reportMimeType: r.mimeType,
      reportFrequency: r.frequency,
      reportFields: r.fields,
      reportStatus: ctx.store.status(r),
      reportStartTime: isoInZone(r.start, r.timezone),
      reportEndTime: isoInZone(r.end, r.timezone),
      timezone: r.timezone,
      reportFilters: r.filters,
      reportPreferences: {
        signedAmounts: r.preferences.signedAmounts,
        fieldNameConvention: r.preferences.fieldNameConvention ?? null,
      },
      groupId: r.groupId,
    };
    if (negotiate(ctx.accept, ['application/xml'] as const) === 'application/xml') {
      return {
        status: 200,
        headers: { 'content-type': 'application/xml;charset=utf-8' },
        body: jsonToXml('report', body),
      };
    }
    return json(200, body);
  },
};

const ADHOC_KEYS = new Set([
  'organizationId',
  'reportDefinitionName',
  'reportFields',
  'reportMimeType',
  'reportName',
  'timezone',
  'timeZone',
  'reportStartTime',
  'reportEndTime',
  'reportFilters',
  'reportPreferences',
  'groupName',
]);

const createReport: Route = {
  endpoint: 'create-report',
  handle(ctx) {
    const body = parseJsonBody(ctx);
    if (!body) return invalidParams([{ field: 'body', reason: 'INVALID_DATA' }]);
    const o = resolveOrganization(
      ctx,
      body['organizationId'] ?? ctx.query.get('organizationId') ?? undefined,
    );
    if ('reply' in o) return o.reply;
    const fieldIssues: FieldIssue[] = [];
    for (const k of Object.keys(body))
      if (!ADHOC_KEYS.has(k)) fieldIssues.push({ path: k, message: 'unknown field' });
    const common = checkCommon(body, fieldIssues, { requireMime: false });
    const name = body['reportName'];
    if (typeof name !== 'string' || !/^[a-zA-Z0-9-_ ]{1,128}$/.test(name))
      fieldIssues.push({ path: 'reportName', message: 'invalid' });
    const tzRaw = body['timezone'] ?? body['timeZone'] ?? 'GMT';
    if (typeof tzRaw !== 'string' || !isValidTimeZone(tzRaw))
      fieldIssues.push({ path: 'timezone', message: 'invalid' });
    const parse = (k: string): number | undefined => {
      const v = body[k];
      const t = typeof v === 'string' ? parseIsoDateTime(v) : undefined;
      if (t === undefined) fieldIssues.push({ path: k, message: 'is required: an ISO-8601 date-time' });
      return t;
    };
    const start = parse('reportStartTime');
    const end = parse('reportEndTime');
    if (start !== undefined && end !== undefined) {
      if (end <= start) fieldIssues.push({ path: 'reportEndTime', message: 'must be after reportStartTime' });
      else if (end - start > 31 * DAY_MS)
        fieldIssues.push({ path: 'reportEndTime', message: 'a one-time report spans at most 31 days' });
      else if (end > ctx.now)
        fieldIssues.push({ path: 'reportEndTime', message: 'a one-time report covers a period in the past' });
    }
    if (fieldIssues.length > 0) {
      return invalidParams(
        fieldIssues.map((i) => ({
          field: i.path,
          reason: i.message === 'unknown field' ? 'INVALID_FIELD' : 'INVALID_DATA',
        })),
      );
    }
    const settings = {
      reportDefinitionName: common.def!.name,
      reportFields: common.fields!,
      reportMimeType: common.mime!,
      reportName: name as string,
      timezone: tzRaw as string,
      start: start!,
      end: end!,
      reportFilters: common.filters,
      reportPreferences: common.preferences,
    };
    const result = ctx.store.createAdhoc({
      organizationId: o.org.id,
      ...settings,
      canonical: canonical(settings as unknown as Record<string, unknown>),
    });
    return { status: result === 'unchanged' ? 304 : 201 };
  },
};

const downloadReport: Route = {
  endpoint: 'download',
  async handle(ctx) {
    const xml = acceptsXml(ctx.accept);
    const q = ctx.query;
    const issues: Issue[] = [];
    const name = q.get('reportName');
    if (name === null || name === '') issues.push({ field: 'reportName', reason: 'MISSING_FIELD' });
    else if (!REPORT_NAME_PATH.test(name)) issues.push({ field: 'reportName', reason: 'INVALID_DATA' });
    const date = q.get('reportDate');
    if (date === null || date === '') issues.push({ field: 'reportDate', reason: 'MISSING_FIELD' });
    else if (!isValidDate(date)) issues.push({ field: 'reportDate', reason: 'INVALID_DATA' });
    // reportTime (hh:mm:ss±hh:mm) picks one of a day's several reports; the SDK no longer sends
    // it, the search result's link does.
    const time = q.get('reportTime');
    if (time !== null && !/^\d{2}:\d{2}:\d{2}([+\- ]\d{2}:?\d{2}|Z)?$/.test(time))
      issues.push({ field: 'reportTime', reason: 'INVALID_DATA' });
    if (issues.length > 0) return invalidParams(issues);
    const o = orgFromQuery(ctx);
    if ('reply' in o) return o.reply;
    const r = ctx.store.byNameAndDate(o.org.id, name!, date!, time ?? undefined);
    if (!r || ctx.store.status(r) !== 'COMPLETED') return notFoundBean(xml);
    const malformedRule = ctx.drawn.find((f) => f.kind === 'malformed-row');
    let malformed: MalformedRowFault | undefined;
    if (malformedRule) {
      const [row, mode] = (malformedRule.param ?? '1').split('/');
      malformed = { row: Math.max(1, Number(row) || 1), mode: mode === 'amount' ? 'amount' : 'columns' };
    }
    const ext = r.mimeType === 'text/csv' ? 'csv' : 'xml';
    const spec = fileSpecOf(r);
    const render = () => renderReport(spec, ctx.store.rows(r), malformed ? { malformed } : {});
    const body =
      ctx.reportCache !== undefined && malformed === undefined
        ? await ctx.reportCache.body(
            { ...spec, definition: spec.definition.name, reportDate: r.reportDate },
            render,
          )
        : render();
    return {
      status: 200,
      headers: {
        'content-type': `${r.mimeType};charset=utf-8`,
        'content-disposition': `attachment; filename="${r.reportName.replace(/[^A-Za-z0-9_-]/g, '_')}-${r.reportDate}.${ext}"`,
      },
      body,
    };
  },
};

/* ------------------------------------------------------------------ on-demand */

function onDemandWindow(ctx: RouteContext, org: SimOrganization, start: number, end: number): Window {
  return { organizationId: org.id, start, end, now: ctx.now };
}

function noData(message = 'No data found for the given criteria'): Reply {
  return reportingError(404, 'NOT_FOUND', message);
}

function formatted(
  ctx: RouteContext,
  supported: readonly ('text/csv' | 'application/xml')[],
  root: string,
  body: unknown,
  csv: () => string,
): Reply {
  const kind = negotiate(ctx.accept, supported);
  if (kind === 'text/csv')
    return { status: 200, headers: { 'content-type': 'text/csv;charset=utf-8' }, body: csv() };
  if (kind === 'application/xml') {
    return {
      status: 200,
      headers: { 'content-type': 'application/xml;charset=utf-8' },
      body: jsonToXml(root, body),
    };
  }
  return json(200, body);
}

/** The formats an on-demand reply offers besides JSON: root element (XML) and CSV writer. */
interface ReplyFormat<T> {
  supported: readonly ('text/csv' | 'application/xml')[];
  root: string;
  csv: (body: T) => string;
}

/**
 * A JSON body of on-demand windows, rendered by `render` (undefined: no data). With cacheReports,
 * the body of complete windows is kept once rendered under `identity` (everything it depends on).
 */
async function jsonBody(
  ctx: RouteContext,
  identity: unknown,
  windows: readonly Window[],
  render: () => string | undefined,
): Promise<string | Buffer | AsyncIterable<Buffer> | undefined> {
  const complete = windows.every((w) => w.end <= w.now);
  return ctx.reportCache !== undefined && complete ? ctx.reportCache.text(identity, render) : render();
}

/**
 * An on-demand reply: the body `build` gives (undefined or null: no data, `none`) in the format
 * asked for. With cacheReports, the JSON body of complete windows is kept once rendered, as the
 * Purchase and Refund Detail pages are: it cannot change any more, and building it generates the
 * windows' days of transactions again (a window and the two days before it: 60,000 transactions
 * at 20,000 a day), which in a long backfill costs more CPU than the loader it feeds. Its identity
 * is the endpoint, the organizations and the whole query.
 */
async function onDemandReply<T>(
  ctx: RouteContext,
  endpoint: EndpointName,
  windows: readonly Window[],
  format: ReplyFormat<T>,
  build: () => T | undefined | null,
  none: () => Reply,
): Promise<Reply> {
  if (negotiate(ctx.accept, format.supported) === 'json') {
    const identity = {
      endpoint,
      organizations: windows.map((w) => w.organizationId),
      query: [...ctx.query].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    };
    const body = await jsonBody(ctx, identity, windows, () => {
      const built = build();
      return built ? JSON.stringify(built) : undefined;
    });
    return body === undefined ? none() : { ...json(200, null), body };
  }
  const body = build();
  if (!body) return none();
  return formatted(ctx, format.supported, format.root, body, () => format.csv(body));
}

const purchaseRefundDetails: Route = {
  endpoint: 'purchase-refund-details',
  async handle(ctx) {
    const q = ctx.query;
    const issues: Issue[] = [];
    const { start, end } = windowParams(ctx, issues);
    const subtype = oneOf(q, 'paymentSubtype', PAYMENT_SUBTYPES, issues) ?? ('ALL' as PaymentSubtype);
    const viewBy = oneOf(q, 'viewBy', ['requestDate', 'submissionDate'] as const, issues) ?? 'requestDate';
    const int = (name: string, min: number, max: number, dflt: number): number => {
      const v = q.get(name);
      if (v === null || v === '') return dflt;
      if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
        issues.push({ field: name, reason: 'INVALID_DATA' });
        return dflt;
      }
      return Number(v);
    };
    const offset = int('offset', 0, 2_147_483_647, 0);
    const limit = int('limit', 1, 2000, 2000);
    if (issues.length > 0) return invalidParams(issues);
    const o = orgFromQuery(ctx);
    if ('reply' in o) return o.reply;
    const window = onDemandWindow(ctx, o.org, start!, end!);
    const pageOptions = { offset, limit, viewBy, paymentSubtype: subtype };
    if (negotiate(ctx.accept, ['text/csv', 'application/xml']) === 'json') {
      // The JSON body written straight from the transactions: the same bytes, several times faster.
      // A page of a complete window cannot change any more: with cacheReports it is kept once
      // rendered, as for report files (the bench measures the loader, not this renderer).
      const body = await jsonBody(
        ctx,
        { endpoint: 'purchase-refund-details', organizationId: o.org.id, start, end, ...pageOptions },
        [window],
        () => servePurchaseRefundPageJson(ctx.dataset, window, pageOptions),
      );
      if (body === undefined) return noData();
      return { ...json(200, null), body };
    }
    const page = purchaseRefundPage(ctx.dataset, window, pageOptions);
    if (!page) return noData();
    return formatted(ctx, ['text/csv', 'application/xml'], 'purchaseRefundDetails', page, () =>
      purchaseRefundCsv(page),
    );
  },
};

/**
 * The route of an on-demand endpoint that takes one organization's window (startTime, endTime,
 * and organizationId unless `withoutOrganization`) and nothing else; its reply is onDemandReply's.
 */
function windowRoute<T>(
  endpoint: EndpointName,
  format: ReplyFormat<T>,
  build: (dataset: Dataset, window: Window) => T | undefined | null,
  none: () => Reply = () => noData(),
  withoutOrganization = false,
): Route {
  return {
    endpoint,
    handle(ctx) {
      const issues: Issue[] = [];
      const { start, end } = windowParams(ctx, issues);
      if (withoutOrganization && ctx.query.has('organizationId'))
        issues.push({ field: 'organizationId', reason: 'INVALID_DATA' });
      if (issues.length > 0) return invalidParams(issues);
      const o = orgFromQuery(ctx);
      if ('reply' in o) return o.reply;
      const window = onDemandWindow(ctx, o.org, start!, end!);
      return onDemandReply(ctx, endpoint, [window], format, () => build(ctx.dataset, window), none);
    },
  };
}

const netFundingsRoute = windowRoute(
  'net-fundings',
  { supported: ['application/xml'], root: 'netFundings', csv: () => '' },
  netFundings,
);

const conversionDetailsRoute = windowRoute(
  'conversion-details',
  { supported: ['application/xml'], root: 'conversionDetails', csv: () => '' },
  conversionDetails,
  () => noData('Conversion detail not found'),
);

/**
 * notification-of-changes defines startTime and endTime only (spec, SDK NotificationOfChangesApi):
 * it answers for the merchant the request acts for (v-c-merchant-id). An organizationId is refused
 * (400) so that a client that sends one is caught; the real service may instead ignore it and answer
 * for the key's merchant, which would load one organization's changes as another's.
 */
const notificationOfChangesRoute = windowRoute(
  'notification-of-changes',
  {
    supported: ['text/csv', 'application/xml'],
    root: 'notificationOfChanges',
    csv: (body) => recordsToCsv(body.notificationOfChanges),
  },
  notificationOfChanges,
  undefined,
  true,
);

/**
 * An RFC 3339 date-time (the spec's format: date-time): Z or ±hh:mm with its colon; `+0000` is
 * refused with 400 as an ISO offset parser refuses it.
 */
const PBS_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

const paymentBatchSummariesRoute: Route = {
  endpoint: 'payment-batch-summaries',
  handle(ctx) {
    const q = ctx.query;
    const issues: Issue[] = [];
    for (const k of ['startTime', 'endTime']) {
      const v = q.get(k);
      if (v && !PBS_TIME.test(v)) issues.push({ field: k, reason: 'INVALID_DATA' });
    }
    const { start, end } = issues.length ? { start: undefined, end: undefined } : windowParams(ctx, issues);
    const rollUp = oneOf(q, 'rollUp', ROLL_UPS, issues);
    const breakdown = oneOf(q, 'breakdown', BREAKDOWNS, issues);
    if ((rollUp === undefined) !== (breakdown === undefined) && !issues.length) {
      issues.push({ field: rollUp === undefined ? 'rollUp' : 'breakdown', reason: 'MISSING_FIELD' });
    }
    const sdw = q.get('startDayOfWeek');
    let startDayOfWeek = 1;
    if (sdw !== null && sdw !== '') {
      if (!/^[1-7]$/.test(sdw)) issues.push({ field: 'startDayOfWeek', reason: 'INVALID_DATA' });
      else startDayOfWeek = Number(sdw);
    }
    if (issues.length > 0) return invalidParams(issues);
    const o = orgFromQuery(ctx);
    if ('reply' in o) return o.reply;
    // all_merchant: every merchant the credential may act for; otherwise the organization itself.
    const orgs =
      breakdown === 'all_merchant'
        ? ctx.allowed
            .map((id) => ctx.dataset.organization(id))
            .filter((x): x is SimOrganization => x !== undefined)
        : [o.org];
    const windows = orgs.map((org) => onDemandWindow(ctx, org, start!, end!));
    return onDemandReply(
      ctx,
      'payment-batch-summaries',
      windows,
      {
        supported: ['text/csv', 'application/xml'],
        root: 'paymentBatchSummaries',
        csv: (body) => recordsToCsv(body.paymentBatchSummaries as unknown as Record<string, unknown>[]),
      },
      () => paymentBatchSummaries(ctx.dataset, windows, { ...(rollUp ? { rollUp } : {}), startDayOfWeek }),
      () => noData(),
    );
  },
};

/* ------------------------------------------------------------------ routing */

interface RouteEntry {
  method: string;
  pattern: RegExp;
  route: Route;
}

const ROUTES: RouteEntry[] = [
  { method: 'GET', pattern: /^\/report-definitions\/?$/, route: listDefinitions },
  { method: 'GET', pattern: /^\/report-definitions\/([^/]+)$/, route: getDefinition },
  { method: 'GET', pattern: /^\/report-subscriptions\/?$/, route: listSubscriptions },
  { method: 'PUT', pattern: /^\/report-subscriptions\/?$/, route: putSubscription },
  { method: 'GET', pattern: /^\/report-subscriptions\/([^/]+)$/, route: getSubscription },
  { method: 'DELETE', pattern: /^\/report-subscriptions\/([^/]+)$/, route: deleteSubscription },
  { method: 'PUT', pattern: /^\/predefined-report-subscriptions\/?$/, route: putPredefinedSubscription },
  { method: 'GET', pattern: /^\/reports\/?$/, route: searchReports },
  { method: 'POST', pattern: /^\/reports\/?$/, route: createReport },
  { method: 'GET', pattern: /^\/reports\/([^/]+)$/, route: getReport },
  { method: 'GET', pattern: /^\/report-downloads\/?$/, route: downloadReport },
  { method: 'GET', pattern: /^\/purchase-refund-details\/?$/, route: purchaseRefundDetails },
  { method: 'GET', pattern: /^\/net-fundings\/?$/, route: netFundingsRoute },
  { method: 'GET', pattern: /^\/conversion-details\/?$/, route: conversionDetailsRoute },
  { method: 'GET', pattern: /^\/notification-of-changes\/?$/, route: notificationOfChangesRoute },
  { method: 'GET', pattern: /^\/payment-batch-summaries\/?$/, route: paymentBatchSummariesRoute },
];

/** The route of a method and path below /reporting/v3, with its decoded path parameters. */
export function matchRoute(method: string, path: string): { route: Route; params: string[] } | undefined {
  for (const entry of ROUTES) {
    if (entry.method !== method) continue;
    const m = entry.pattern.exec(path);
    if (!m) continue;
    try {
      return { route: entry.route, params: m.slice(1).map((p) => decodeURIComponent(p)) };
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Default subscription start used by the defaults: data start in the zone. */
export function zonedStart(date: string, tz: string): number {
  return zonedTime(date, 0, 0, tz);
}
