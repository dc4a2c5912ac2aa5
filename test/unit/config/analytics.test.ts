import { describe, expect, it } from 'vitest';
import { REPORT_SOURCES, analyticsPipelines } from '../../../src/analytics/sources.js';
import { configWarnings, parseConfig } from '../../../src/config/load-config.js';
import { isCybsError } from '../../../src/errors.js';

describe('analytics.enabled', () => {
  it('changes nothing when off', () => {
    const config = parseConfig('log:\n  level: warn\n');
    expect(config.analytics).toEqual({ enabled: false, timezone: 'UTC', refresh: 'after-run' });
    expect(config.pipelines).toEqual({});
    expect(config.subscriptions).toBeUndefined();
  });

  it('refreshes the views after each run unless refresh is manual, and names the setting when it is neither', () => {
    expect(parseConfig('analytics:\n  refresh: manual\n').analytics.refresh).toBe('manual');
    let error: unknown;
    try {
      parseConfig('analytics:\n  refresh: nightly\n');
    } catch (e) {
      error = e;
    }
    expect(isCybsError(error)).toBe(true);
    expect((error as Error).message).toMatch(/analytics\.refresh/);
    expect((error as Error).message).toMatch(/after-run.*manual|manual.*after-run/);
  });

  it('enables every pipeline the models read and declares their subscriptions with the fields they need', () => {
    const config = parseConfig('analytics:\n  enabled: true\n  timezone: America/New_York\n');
    for (const name of analyticsPipelines()) expect(config.pipelines[name]?.enabled, name).toBe(true);
    const declared = config.subscriptions ?? [];
    expect(declared.map((d) => d.reportName).sort()).toEqual([
      'ChargebackAndRetrievalDetailReport_Daily',
      'DepositDetailReport_Daily',
      'FeeDetailReport_Daily',
      'FundingDetailReport_Daily',
      'ProcessorSettlementDetailReport_Daily',
      'TransactionRequestReport_Daily',
    ]);
    for (const source of REPORT_SOURCES.filter((s) => s.subscribe)) {
      const d = declared.find((x) => x.reportDefinitionName === source.reportDefinitionName)!;
      expect(d.reportFields).toEqual(source.fields);
      expect(d).toMatchObject({
        timezone: 'America/New_York',
        reportFrequency: 'DAILY',
        reportMimeType: 'text/csv',
        startTime: '0000',
      });
    }
  });

  it('adds the missing fields to a subscription declared under the pipeline’s name, keeping its settings', () => {
    const config = parseConfig(
      [
        'analytics:',
        '  enabled: true',
        'pipelines:',
        '  fee_detail:',
        '    reportName: MyFees',
        'subscriptions:',
        '  - reportName: MyFees',
        '    reportDefinitionName: FeeDetailClass',
        '    reportFields: [Fee.TotalFeeAmount, Request.RequestID]',
        '    reportMimeType: application/xml',
        '    timezone: Europe/Paris',
      ].join('\n'),
    );
    const fees = config.subscriptions!.filter((d) => d.reportDefinitionName === 'FeeDetailClass');
    expect(fees).toHaveLength(1);
    expect(fees[0]!).toMatchObject({
      reportName: 'MyFees',
      reportMimeType: 'application/xml',
      timezone: 'Europe/Paris',
    });
    expect(fees[0]!.reportFields.slice(0, 2)).toEqual(['Fee.TotalFeeAmount', 'Request.RequestID']);
    expect(new Set(fees[0]!.reportFields)).toEqual(
      new Set(['Fee.TotalFeeAmount', ...REPORT_SOURCES.find((s) => s.table === 'fee_detail')!.fields]),
    );
    expect(config.pipelines['fee_detail']).toMatchObject({ enabled: true, reportName: 'MyFees' });
  });

  it('keeps a pipeline disabled explicitly, and says so', () => {
    const config = parseConfig(
      'analytics:\n  enabled: true\npipelines:\n  deposit_detail:\n    enabled: false\n',
    );
    expect(config.pipelines['deposit_detail']?.enabled).toBe(false);
    expect(configWarnings(config).join('\n')).toContain(
      'key "pipelines.deposit_detail.enabled" is false while analytics is enabled',
    );
  });

  it('refuses a bad time zone, and more subscriptions than the service allows, naming the key', () => {
    expect(() => parseConfig('analytics:\n  enabled: true\n  timezone: Mars/Olympus\n')).toThrow(
      /key "analytics.timezone"/,
    );
    const many = Array.from(
      { length: 17 },
      (_, i) =>
        `  - reportName: Mine${i}\n    reportDefinitionName: AgingDetailClass\n    reportFields: [Request.RequestID]\n    timezone: UTC`,
    ).join('\n');
    let error: unknown;
    try {
      parseConfig(`analytics:\n  enabled: true\nsubscriptions:\n${many}\n`);
    } catch (e) {
      error = e;
    }
    expect(isCybsError(error) && error.exitCode).toBe(2);
    expect((error as Error).message).toMatch(
      /subscriptions\.\d+.*at most 20 \(with the subscriptions analytics\.enabled declares\)/,
    );
  });
});
