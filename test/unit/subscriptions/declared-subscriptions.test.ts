import { describe, expect, it } from 'vitest';
import { configWarnings, parseConfig } from '../../../src/config/load-config.js';
import { isCybsError } from '../../../src/errors.js';
import {
  declaredSettings,
  liveSettings,
  managedOrganizations,
  startTimeOf,
  subscriptionRequest,
} from '../../../src/subscriptions/declared-subscriptions.js';
import { formatPlan, hasChanges, planSubscriptions } from '../../../src/subscriptions/plan.js';

const GOOD = `
subscriptions:
  - reportName: TransactionRequestReport_Daily
    reportDefinitionName: TransactionRequestClass
    reportFields: [Request.RequestID, Request.TransactionDate, PaymentData.Amount]
    timezone: America/Los_Angeles
    startTime: "0100"
    reportPreferences: { fieldNameConvention: SOAPI }
`;

/** One declaration with `extra` lines appended (or replacing keys given in `without`). */
function decl(extra: string, without: string[] = []): string {
  const base: Record<string, string> = {
    reportName: 'Daily_report',
    reportDefinitionName: 'TransactionRequestClass',
    reportFields: '[Request.RequestID]',
    timezone: 'UTC',
  };
  const lines = Object.entries(base)
    .filter(([k]) => !without.includes(k))
    .map(([k, v]) => `    ${k}: ${v}`);
  return `subscriptions:\n  - ${lines.join('\n').trimStart()}\n${extra}`;
}

function configErrorOf(text: string): string {
  try {
    parseConfig(text, 'config.yaml');
  } catch (error) {
    expect(isCybsError(error) && error.exitCode === 2).toBe(true);
    return (error as Error).message;
  }
  throw new Error('expected a config error');
}

describe('subscriptions in config.yaml', () => {
  it('accepts a declaration and fills the service defaults', () => {
    const [s] = parseConfig(GOOD).subscriptions!;
    expect(s).toMatchObject({
      reportMimeType: 'text/csv',
      reportFrequency: 'DAILY',
      startTime: '0100',
      reportFilters: {},
      reportPreferences: { signedAmounts: false, fieldNameConvention: 'SOAPI' },
    });
    expect(parseConfig('').subscriptions).toBeUndefined();
  });

  it('reads an unquoted HHMM that YAML turned into a number', () => {
    const [s] = parseConfig(decl('    startTime: 0930\n')).subscriptions!;
    expect(s!.startTime).toBe('0930');
  });

  it.each([
    [
      'an unknown report definition',
      decl('', ['reportDefinitionName']) + '    reportDefinitionName: NoSuchClass\n',
      'subscriptions.0.reportDefinitionName',
      'unknown report definition "NoSuchClass"',
    ],
    [
      'a field that is not a Group.Field name',
      decl('', ['reportFields']) + '    reportFields: [Request.RequestID, RequestID]\n',
      'subscriptions.0.reportFields.1',
      'not a Group.Field name',
    ],
    [
      'a repeated field',
      decl('', ['reportFields']) + '    reportFields: [Request.RequestID, Request.RequestID]\n',
      'subscriptions.0.reportFields.1',
      'listed twice',
    ],
    [
      'no fields',
      decl('', ['reportFields']) + '    reportFields: []\n',
      'subscriptions.0.reportFields',
      'at least one',
    ],
    ['a bad time of day', decl('    startTime: "2460"\n'), 'subscriptions.0.startTime', 'HHMM'],
    [
      'a bad time zone',
      decl('', ['timezone']) + '    timezone: Mars/Olympus\n',
      'subscriptions.0.timezone',
      'unknown time zone',
    ],
    [
      'a weekly start day out of range',
      decl('    reportFrequency: WEEKLY\n    startDay: 8\n'),
      'subscriptions.0.startDay',
      'from 1 to 7',
    ],
    [
      'a monthly start day out of range',
      decl('    reportFrequency: MONTHLY\n    startDay: 32\n'),
      'subscriptions.0.startDay',
      'from 1 to 31',
    ],
    ['a start day on a daily report', decl('    startDay: 2\n'), 'subscriptions.0.startDay', 'not DAILY'],
    [
      'a name the service refuses',
      decl('', ['reportName']) + '    reportName: "daily/report"\n',
      'subscriptions.0.reportName',
      'letters, digits',
    ],
    [
      'a name too long',
      decl('', ['reportName']) + `    reportName: ${'x'.repeat(81)}\n`,
      'subscriptions.0.reportName',
      '1-80',
    ],
    [
      'a name with a space (the PUT body allows it; GET and DELETE by name never find it)',
      decl('', ['reportName']) + '    reportName: Daily report\n',
      'subscriptions.0.reportName',
      'letters, digits, "-", "_" or "+"',
    ],
    [
      'an unknown format',
      decl('    reportMimeType: application/pdf\n'),
      'subscriptions.0.reportMimeType',
      'text/csv',
    ],
    [
      'USER_DEFINED without interval',
      decl('    reportFrequency: USER_DEFINED\n'),
      'subscriptions.0.reportInterval',
      'PT2H',
    ],
    ['an unknown key', decl('    colour: blue\n'), 'subscriptions.0.colour', 'unknown key'],
    [
      'an unknown preference',
      decl('    reportPreferences: { signed: true }\n'),
      'subscriptions.0.reportPreferences.signed',
      'unknown key',
    ],
  ])('refuses %s, naming the key path', (_what, text, path, words) => {
    const message = configErrorOf(text);
    expect(message).toContain(path);
    expect(message).toContain(words);
  });

  it('accepts names of the GET/DELETE path pattern [a-zA-Z0-9-_+]{1,80} (audit #4)', () => {
    for (const name of ['a', 'Daily_report-2+x', 'x'.repeat(80)]) {
      const [s] = parseConfig(decl('', ['reportName']) + `    reportName: "${name}"\n`).subscriptions!;
      expect(s!.reportName).toBe(name);
    }
    for (const name of ['Daily report', 'x'.repeat(81), 'a.b', 'a/b', ''])
      expect(configErrorOf(decl('', ['reportName']) + `    reportName: "${name}"\n`)).toContain(
        'key "subscriptions.0.reportName"',
      );
  });

  it("follows the service's reportInterval pattern (audit #12)", () => {
    const interval = (v: string) => decl(`    reportFrequency: USER_DEFINED\n    reportInterval: ${v}\n`);
    for (const ok of ['PT1H', 'PT23H', 'PT6H', 'PT1M', 'PT59M', 'PT45M', 'PT2H30M', 'PT23H59M', 'PT1H1M'])
      expect(parseConfig(interval(ok)).subscriptions![0]!.reportInterval, ok).toBe(ok);
    for (const bad of [
      'PT',
      'PT24H',
      'PT90M',
      'PT0H30M',
      'PT0M',
      'PT0H',
      'PT60M',
      'PT2H0M',
      'P1D',
      'PT1.5H',
      'pt2h',
    ])
      expect(configErrorOf(interval(bad)), bad).toContain('key "subscriptions.0.reportInterval"');
  });

  it("sends the real definition name for the seed's alias, with a warning (audit #1)", () => {
    const text =
      decl('', ['reportDefinitionName']) + '    reportDefinitionName: RiskDecisionEventDetailClass\n';
    const config = parseConfig(text, 'config.yaml');
    expect(config.subscriptions![0]!.reportDefinitionName).toBe('DecisionManagerEventDetailClass');
    expect(configWarnings(config)).toEqual([
      'config.yaml: key "subscriptions.0.reportDefinitionName": "RiskDecisionEventDetailClass" is the seed\'s name of DecisionManagerEventDetailClass; DecisionManagerEventDetailClass is sent to the service',
    ]);
  });

  it('warns, not refuses, for a field the catalog does not know, flagging undocumented prefixes (audit #6)', () => {
    const text =
      decl('', ['reportFields']) +
      '    reportFields: [Request.RequestID, Request.NoSuchField, Invented.Field, Exception.Action, Request.LocalizedDate]\n';
    const config = parseConfig(text, 'config.yaml');
    expect(config.subscriptions![0]!.reportFields).toEqual([
      'Request.RequestID',
      'Request.NoSuchField',
      'Invented.Field',
      'Exception.Action',
      'Request.LocalizedDate',
    ]);
    const warnings = configWarnings(config);
    expect(warnings).toHaveLength(3);
    expect(warnings[0]).toContain(
      'key "subscriptions.0.reportFields.1": "Request.NoSuchField" is not in the cybs-etl field catalog;',
    );
    expect(warnings[0]).not.toContain('group prefix');
    expect(warnings[1]).toContain(
      'key "subscriptions.0.reportFields.2": "Invented.Field" is not in the cybs-etl field catalog',
    );
    expect(warnings[1]).toContain('group prefix "Invented" is not one the CyberSource documentation states');
    expect(warnings[2]).toContain(
      'key "subscriptions.0.reportFields.3": "Exception.Action" is in the catalog',
    );
    expect(warnings[2]).toContain('group prefix "Exception"');
    expect(configWarnings(parseConfig(GOOD))).toEqual([]);
  });

  it('refuses a name declared twice for an organization', () => {
    const one = `  - reportName: Same\n    reportDefinitionName: TransactionRequestClass\n    reportFields: [Request.RequestID]\n    timezone: UTC\n`;
    const message = configErrorOf(`subscriptions:\n${one}${one.replace('UTC', 'GMT')}`);
    expect(message).toContain('key "subscriptions.1.reportName"');
    expect(message).toContain('declared twice');
    // The same name for two different organizations is fine.
    const scoped = `subscriptions:\n${one}    organizations: [a]\n${one}    organizations: [b]\n`;
    expect(parseConfig(scoped).subscriptions).toHaveLength(2);
  });

  it('refuses more than 20 subscriptions for an organization, counting the unscoped ones', () => {
    const item = (i: number, org?: string) =>
      `  - reportName: R${i}\n    reportDefinitionName: TransactionRequestClass\n    reportFields: [Request.RequestID]\n    timezone: UTC\n` +
      (org ? `    organizations: [${org}]\n` : '');
    const twenty = Array.from({ length: 20 }, (_, i) => item(i)).join('');
    expect(parseConfig(`subscriptions:\n${twenty}`).subscriptions).toHaveLength(20);
    const message = configErrorOf(`subscriptions:\n${twenty}${item(20, 'merchant_a')}`);
    expect(message).toContain('key "subscriptions.20"');
    expect(message).toContain('organization merchant_a would have 21 subscriptions');
    expect(configErrorOf(`subscriptions:\n${twenty}${item(20)}`)).toContain(
      'every organization would have 21',
    );
  });
});

describe('declared vs live settings', () => {
  const [d] = parseConfig(GOOD).subscriptions!;
  const live = {
    organizationId: 'm1',
    reportDefinitionId: '210',
    reportDefinitionName: 'TransactionRequestClass',
    reportMimeType: 'text/csv',
    reportFrequency: 'DAILY',
    reportName: 'TransactionRequestReport_Daily',
    timezone: 'America/Los_Angeles',
    startTime: '2024-03-01T01:00:00-08:00',
    startDay: 1,
    reportFields: ['Request.RequestID', 'Request.TransactionDate', 'PaymentData.Amount'],
    reportFilters: {},
    reportPreferences: { signedAmounts: false, fieldNameConvention: 'SOAPI' },
    groupId: '12345',
  };

  it('builds the PUT body of facts §2.4', () => {
    expect(subscriptionRequest(d!)).toEqual({
      reportDefinitionName: 'TransactionRequestClass',
      reportFields: ['Request.RequestID', 'Request.TransactionDate', 'PaymentData.Amount'],
      reportMimeType: 'text/csv',
      reportFrequency: 'DAILY',
      reportName: 'TransactionRequestReport_Daily',
      timezone: 'America/Los_Angeles',
      startTime: '0100',
      reportFilters: {},
      reportPreferences: { signedAmounts: false, fieldNameConvention: 'SOAPI' },
    });
  });

  it('reads the live startTime as local HHMM and ignores startDay of daily reports', () => {
    expect(startTimeOf('2017-10-01T10:10:10+05:00')).toBe('1010');
    expect(startTimeOf('0900')).toBe('0900');
    // With the subscription's zone, the instant the GET returns is read there (audit #22).
    expect(startTimeOf('2026-03-01T03:30:00Z', 'Asia/Kolkata')).toBe('0900');
    expect(startTimeOf('2026-07-01T09:00:00-05:00', 'America/Chicago')).toBe('0900');
    expect(startTimeOf('2026-07-01T14:00:00Z', 'America/Chicago')).toBe('0900');
    expect(liveSettings(live)).toEqual(declaredSettings(d!));
  });

  it('plans nothing when live matches, an attribute diff when it drifted', () => {
    const same = planSubscriptions([d!], new Map([['m1', [live]]]), { prune: false });
    expect(hasChanges(same)).toBe(false);
    expect(formatPlan(same)).toContain('No changes');

    const drifted = {
      ...live,
      timezone: 'UTC',
      reportMimeType: 'application/xml',
      reportFields: ['Request.RequestID', 'Request.TransactionDate', 'Request.MerchantID'],
    };
    const plan = planSubscriptions([d!], new Map([['m1', [drifted]]]), { prune: false });
    expect(plan.counts).toMatchObject({ update: 1, create: 0, delete: 0 });
    const text = formatPlan(plan);
    expect(text).toContain('~ TransactionRequestReport_Daily (update)');
    expect(text).toContain('~ reportMimeType: "application/xml" → "text/csv"');
    expect(text).toContain('~ timezone: "UTC" → "America/Los_Angeles"');
    expect(text).toContain('+ reportFields PaymentData.Amount');
    expect(text).toContain('- reportFields Request.MerchantID');
  });

  it('creates what is missing and deletes the undeclared only with prune', () => {
    const other = { ...live, reportName: 'Other' };
    const keep = planSubscriptions([d!], new Map([['m1', [other]]]), { prune: false });
    expect(keep.counts).toMatchObject({ create: 1, delete: 0, unmanaged: 1 });
    expect(formatPlan(keep)).toContain('Other (not declared; kept');
    const prune = planSubscriptions([d!], new Map([['m1', [other]]]), { prune: true });
    expect(prune.counts).toMatchObject({ create: 1, delete: 1 });
    expect(formatPlan(prune)).toContain('- Other (delete)');
    expect(formatPlan(prune)).toContain('Plan: 1 to create, 0 to change, 1 to delete.');
  });

  it('applies unscoped declarations to every organization and scoped ones to theirs', () => {
    expect(managedOrganizations([d!], ['a', 'b'])).toEqual(['a', 'b']);
    expect(managedOrganizations([{ ...d!, organizations: ['c'] }], ['a'])).toEqual(['c']);
    expect(managedOrganizations([], ['a'])).toEqual(['a']);
  });
});
