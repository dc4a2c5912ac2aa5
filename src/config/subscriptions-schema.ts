/**
 * `subscriptions:` in config.yaml: report subscriptions declared as code (issue 8).
 *
 *   subscriptions:
 *     - reportName: TransactionRequestReport_Daily
 *       reportDefinitionName: TransactionRequestClass
 *       reportFields: [Request.RequestID, Request.TransactionDate, …]
 *       reportMimeType: text/csv            # or application/xml (default text/csv)
 *       reportFrequency: DAILY              # WEEKLY, MONTHLY, USER_DEFINED (default DAILY)
 *       timezone: America/Los_Angeles
 *       startTime: "0000"                   # HHMM in the time zone (default "0000")
 *       startDay: 1                         # WEEKLY 1-7 (1 = Sunday), MONTHLY 1-31
 *       reportFilters: { Application.Name: [ics_auth] }
 *       reportPreferences: { signedAmounts: false, fieldNameConvention: SOAPI }
 *       organizations: [merchant_a]         # omitted: every organization cybs-etl loads
 *
 * Everything the service would refuse is refused here first, with the key path: unknown report
 * definitions, time zones, HHMM times, startDay out of range, report intervals outside the
 * service's pattern, report names outside the GET/DELETE path pattern, repeated names, and more
 * than the service's 20 subscriptions per organization (facts §6). The seed's definition names
 * are accepted and normalised to the real ones (`REPORT_DEFINITION_ALIASES`).
 *
 * A `reportFields` entry the catalog does not know is not refused: the service is the judge of its
 * own fields. `subscriptionWarnings` names it (with its key path) so it is logged once, and says
 * when its group prefix is not one a CyberSource document states.
 */
import { z } from 'zod';
import {
  findFieldByAnyName,
  findReportDefinition,
  isDocumentedGroupPrefix,
  normalizeReportDefinitionName,
} from '../catalog/index.js';
import { isValidTimeZone } from '../time/time-zones.js';

export const SUBSCRIPTION_LIMIT = 20;
/**
 * Report names a subscription can be read and deleted by: the `reportName` path parameter of
 * GET/DELETE /report-subscriptions/{reportName} is `[a-zA-Z0-9-_+]+`, at most 80 characters
 * (SPEC2020). The PUT body allows `[a-zA-Z0-9-_ ]{1,128}`, but such a name could never be read
 * back or deleted.
 */
export const REPORT_NAME_PATTERN = /^[a-zA-Z0-9\-_+]{1,80}$/;
/** `reportInterval` as the service defines it (SPEC2020 PUT body): PT1H..PT23H59M, no zero parts. */
export const REPORT_INTERVAL_PATTERN =
  /^PT((([1-9]|1[0-9]|2[0-3])H(([1-9]|[1-4][0-9]|5[0-9])M)?)|((([1-9]|1[0-9]|2[0-3])H)?([1-9]|[1-4][0-9]|5[0-9])M))$/;
export const SUBSCRIPTION_FREQUENCIES = ['DAILY', 'WEEKLY', 'MONTHLY', 'USER_DEFINED'] as const;
export const SUBSCRIPTION_MIME_TYPES = ['text/csv', 'application/xml'] as const;
const HHMM = /^([01]\d|2[0-3])[0-5]\d$/;
/** `Group.Field`: a group and a field name joined by the first dot. */
const FIELD_NAME = /^[A-Za-z][A-Za-z0-9_-]*\.[A-Za-z0-9_.-]+$/;

/** YAML reads an unquoted 0900 as the number 900: accept it and write it back as "0900". */
const startTimeSchema = z
  .union([z.string(), z.number().int().min(0)])
  .transform((v) => (typeof v === 'number' ? String(v).padStart(4, '0') : v))
  .refine((v) => HHMM.test(v), { message: 'expected a time of day written HHMM, e.g. "0900"' });

const organizationId = z
  .string()
  .regex(/^[a-zA-Z0-9_-]{1,32}$/, 'expected an organizationId of 1-32 letters, digits, "-" or "_"');

export const subscriptionDeclSchema = z
  .strictObject({
    reportName: z
      .string()
      .regex(
        REPORT_NAME_PATTERN,
        'expected 1-80 letters, digits, "-", "_" or "+" (the service reads and deletes subscriptions only by such names)',
      ),
    reportDefinitionName: z.string().min(1).transform(normalizeReportDefinitionName),
    reportFields: z.array(z.string()).min(1, 'expected at least one Group.Field name'),
    reportMimeType: z.enum(SUBSCRIPTION_MIME_TYPES).default('text/csv'),
    reportFrequency: z.enum(SUBSCRIPTION_FREQUENCIES).default('DAILY'),
    /** USER_DEFINED only: hours 1-23 and/or minutes 1-59, e.g. PT2H30M (the service's pattern). */
    reportInterval: z
      .string()
      .regex(
        REPORT_INTERVAL_PATTERN,
        'expected PT<hours>H<minutes>M with hours 1-23 and minutes 1-59, either part optional (e.g. PT2H, PT45M, PT2H30M)',
      )
      .optional(),
    timezone: z.string().min(1),
    startTime: startTimeSchema.default('0000'),
    startDay: z.number().int().optional(),
    reportFilters: z.record(z.string(), z.array(z.string())).default({}),
    reportPreferences: z
      .strictObject({
        signedAmounts: z.boolean().default(false),
        fieldNameConvention: z.enum(['SOAPI', 'SCMP']).optional(),
      })
      .prefault({}),
    /** The organizations that get this subscription; omitted: every organization cybs-etl loads. */
    organizations: z.array(organizationId).min(1).optional(),
  })
  .superRefine((s, ctx) => {
    if (!findReportDefinition(s.reportDefinitionName)) {
      ctx.addIssue({
        code: 'custom',
        path: ['reportDefinitionName'],
        message: `unknown report definition "${s.reportDefinitionName}" (see "cybs-etl pipelines" or the catalog)`,
      });
    }
    const seen = new Set<string>();
    s.reportFields.forEach((field, i) => {
      if (!FIELD_NAME.test(field)) {
        ctx.addIssue({
          code: 'custom',
          path: ['reportFields', i],
          message: `"${field}" is not a Group.Field name such as Request.RequestID`,
        });
      } else if (seen.has(field)) {
        ctx.addIssue({ code: 'custom', path: ['reportFields', i], message: `"${field}" is listed twice` });
      }
      seen.add(field);
    });
    if (!isValidTimeZone(s.timezone)) {
      ctx.addIssue({
        code: 'custom',
        path: ['timezone'],
        message: `unknown time zone "${s.timezone}"; expected an IANA zone such as America/Chicago`,
      });
    }
    if (s.startDay !== undefined) {
      const max = s.reportFrequency === 'WEEKLY' ? 7 : s.reportFrequency === 'MONTHLY' ? 31 : undefined;
      if (max === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['startDay'],
          message: `startDay applies to WEEKLY (1-7) and MONTHLY (1-31) subscriptions, not ${s.reportFrequency}`,
        });
      } else if (s.startDay < 1 || s.startDay > max) {
        ctx.addIssue({
          code: 'custom',
          path: ['startDay'],
          message: `expected a ${s.reportFrequency} startDay from 1 to ${max}${max === 7 ? ' (1 = Sunday)' : ''}`,
        });
      }
    }
    if (s.reportFrequency === 'USER_DEFINED' && s.reportInterval === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['reportInterval'],
        message: 'a USER_DEFINED subscription needs a reportInterval such as PT2H',
      });
    } else if (s.reportFrequency !== 'USER_DEFINED' && s.reportInterval !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['reportInterval'],
        message: 'reportInterval applies only to USER_DEFINED subscriptions',
      });
    }
  });
export type SubscriptionDecl = z.infer<typeof subscriptionDeclSchema>;

/**
 * Warnings about declarations the service, not cybs-etl, must judge (pure), one sentence each with
 * the key path: definition names given by an alias, fields the catalog does not know, and fields
 * whose group prefix no CyberSource document states. `raw` is the declarations as written.
 */
export function subscriptionWarnings(raw: unknown, keyPath = 'subscriptions'): string[] {
  if (!Array.isArray(raw)) return [];
  const warnings: string[] = [];
  raw.forEach((decl: unknown, index) => {
    if (typeof decl !== 'object' || decl === null) return;
    const { reportDefinitionName, reportFields } = decl as Record<string, unknown>;
    if (typeof reportDefinitionName === 'string') {
      const real = normalizeReportDefinitionName(reportDefinitionName);
      if (real !== reportDefinitionName) {
        warnings.push(
          `key "${keyPath}.${index}.reportDefinitionName": "${reportDefinitionName}" is the seed's name of ${real}; ${real} is sent to the service`,
        );
      }
    }
    if (!Array.isArray(reportFields)) return;
    reportFields.forEach((field: unknown, i) => {
      if (typeof field !== 'string' || !FIELD_NAME.test(field)) return;
      const at = `key "${keyPath}.${index}.reportFields.${i}"`;
      const group = field.slice(0, field.indexOf('.'));
      const known = findFieldByAnyName(field);
      const prefixNote = isDocumentedGroupPrefix(known?.group ?? group)
        ? ''
        : `; its group prefix "${known?.group ?? group}" is not one the CyberSource documentation states`;
      if (known === undefined) {
        warnings.push(
          `${at}: "${field}" is not in the cybs-etl field catalog${prefixNote}; it is sent as written and the service decides (its column, if any, is typed text)`,
        );
      } else if (prefixNote !== '') {
        warnings.push(`${at}: "${field}" is in the catalog${prefixNote}, so the service may refuse it`);
      }
    });
  });
  return warnings;
}

/**
 * The list: per organization, names are unique and there are at most 20 (a declaration without
 * `organizations` counts for every organization).
 */
export const subscriptionsSchema = z.array(subscriptionDeclSchema).superRefine((list, ctx) => {
  const everywhere = list.filter((s) => !s.organizations);
  const orgs = new Set(list.flatMap((s) => s.organizations ?? []));
  const scopes: [string, SubscriptionDecl[]][] = [
    ['every organization', everywhere],
    ...[...orgs].map((org): [string, SubscriptionDecl[]] => [
      `organization ${org}`,
      list.filter((s) => !s.organizations || s.organizations.includes(org)),
    ]),
  ];
  for (const [scope, decls] of scopes) {
    const names = new Map<string, number>();
    for (const d of decls) {
      const index = list.indexOf(d);
      const earlier = names.get(d.reportName);
      if (earlier !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: [index, 'reportName'],
          message: `"${d.reportName}" is declared twice for ${scope} (also at subscriptions.${earlier})`,
        });
      } else {
        names.set(d.reportName, index);
      }
    }
    if (decls.length > SUBSCRIPTION_LIMIT) {
      ctx.addIssue({
        code: 'custom',
        path: [list.indexOf(decls[SUBSCRIPTION_LIMIT]!)],
        message: `${scope} would have ${decls.length} subscriptions; the service allows at most ${SUBSCRIPTION_LIMIT}`,
      });
    }
  }
});
