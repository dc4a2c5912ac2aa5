import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { configFile, configWarnings, parseConfig } from '../../src/config/load-config.js';
import { readEnv, secretValues } from '../../src/config/env.js';
import { isCybsError } from '../../src/errors.js';

function configErrorOf(text: string): string {
  try {
    parseConfig(text, 'config.yaml');
  } catch (error) {
    expect(isCybsError(error) && error.exitCode === 2).toBe(true);
    return (error as Error).message;
  }
  throw new Error('expected a config error');
}

describe('config', () => {
  it('accepts the committed example config and applies defaults', () => {
    const config = parseConfig(readFileSync('config.yaml', 'utf8'));
    expect(config.api.environment).toBe('test');
    expect(config.defaults.lookbackDays).toBe(3);
    expect(config.warehouse.path).toBe('./data/warehouse');
    expect(Object.isFrozen(config.api)).toBe(true);
  });

  it('accepts an empty file', () => {
    expect(parseConfig('').defaults.windowDays).toBe(1);
  });

  it('names the key path of a typo', () => {
    expect(configErrorOf('defaults:\n  lookbakDays: 3\n')).toContain('unknown key "defaults.lookbakDays"');
    expect(configErrorOf('warehous:\n  path: x\n')).toContain('unknown key "warehous"');
  });

  it('names the key path and expected form of a bad value', () => {
    const message = configErrorOf('api:\n  environment: staging\n');
    expect(message).toContain('key "api.environment"');
    expect(message).toMatch(/test.*production.*production-india/);
    expect(configErrorOf('defaults:\n  windowDays: 45\n')).toContain('key "defaults.windowDays"');
    expect(configErrorOf('defaults:\n  startDate: 2024/01/01\n')).toContain('YYYY-MM-DD');
    // A date off the calendar is refused when the config loads, not an "unexpected error" mid-run.
    expect(configErrorOf('pipelines:\n  net_fundings:\n    startDate: "2024-02-30"\n')).toBe(
      'config.yaml: key "pipelines.net_fundings.startDate": expected a calendar date written YYYY-MM-DD.',
    );
  });

  it("moves a former pipeline name's settings to the pipeline named after the real definition", () => {
    const config = parseConfig(
      'pipelines:\n  risk_decision_event_detail:\n    enabled: true\n',
      'config.yaml',
    );
    expect(config.pipelines).toEqual({
      decision_manager_event_detail: expect.objectContaining({ enabled: true }),
    });
    expect(configWarnings(config)).toEqual([
      'config.yaml: key "pipelines.risk_decision_event_detail" is the former name of pipeline decision_manager_event_detail; its settings apply to decision_manager_event_detail (rename the key)',
    ]);
    expect(
      configErrorOf('pipelines:\n  risk_decision_event_detail: {}\n  decision_manager_event_detail: {}\n'),
    ).toContain('name the same pipeline');
  });

  it('refuses a pipeline reportName the service cannot read a subscription by, with its key path (audit #4, issue 26 #9)', () => {
    for (const name of ['My daily report', '../../../pwn_rn', 'a/b', '..', 'x'.repeat(81)]) {
      const message = configErrorOf(`pipelines:\n  transaction_request:\n    reportName: "${name}"\n`);
      expect(message).toContain('key "pipelines.transaction_request.reportName"');
      expect(message).toContain('1-80 letters, digits, "-", "_" or "+"');
    }
    const config = parseConfig(
      'pipelines:\n  payment_batch_detail:\n    reportName: PaymentBatchDetailReport_Daily_Classic+2\n',
    );
    expect(config.pipelines.payment_batch_detail?.reportName).toBe(
      'PaymentBatchDetailReport_Daily_Classic+2',
    );
    expect(configWarnings(config)).toEqual([]);
  });

  it('refuses secrets in the file and points to the environment variable', () => {
    expect(configErrorOf('api:\n  sharedSecret: abc\n')).toContain('CYBS_SHARED_SECRET');
  });

  it('reports YAML syntax errors with the line', () => {
    expect(configErrorOf('api:\n  environment: [test\n')).toMatch(/config\.yaml:\d+: not valid YAML/);
  });
});

describe('env', () => {
  it('checks cron expressions and time zones when the config loads, naming the key path (issue 27 #6)', () => {
    const cron = configErrorOf('pipelines:\n  transaction_request:\n    schedule: { cron: "0 7 * *" }\n');
    expect(cron).toContain('key "pipelines.transaction_request.schedule.cron"');
    expect(cron).toContain('expected 5 or 6 fields but got 4');
    expect(cron).toContain('"0 7 * * *"');
    expect(configErrorOf('pipelines:\n  net_fundings:\n    schedule: { cron: "0 25 * * *" }\n')).toContain(
      'key "pipelines.net_fundings.schedule.cron": "0 25 * * *" is not a cron expression (25 is a invalid expression for hour)',
    );
    const zone = configErrorOf(
      'pipelines:\n  net_fundings:\n    schedule: { cron: "0 7 * * *", timezone: Mars/Olympus }\n',
    );
    expect(zone).toContain(
      'key "pipelines.net_fundings.schedule.timezone": unknown time zone "Mars/Olympus"',
    );
    expect(configErrorOf('pipelines:\n  net_fundings:\n    timezone: Europe/Nowhere\n')).toContain(
      'key "pipelines.net_fundings.timezone": unknown time zone "Europe/Nowhere"',
    );
    const ok = parseConfig(
      'pipelines:\n  net_fundings:\n    schedule: { cron: "*/3 * * * * *", timezone: America/Chicago }\n',
    );
    expect(ok.pipelines.net_fundings?.schedule).toEqual({
      cron: '*/3 * * * * *',
      timezone: 'America/Chicago',
    });
  });

  it('names the file it was given in its errors, not config.yaml', () => {
    try {
      parseConfig('warehouse:\n  pth: x\n', '/etc/cybs/prod.yaml');
      expect.unreachable();
    } catch (error) {
      expect((error as Error).message).toMatch(/^\/etc\/cybs\/prod\.yaml: unknown key "warehouse\.pth"/);
    }
    expect(configFile(parseConfig('', '/etc/cybs/prod.yaml'))).toBe('/etc/cybs/prod.yaml');
  });

  it('refuses a warehouse URL that is not PostgreSQL, in the file or in DATABASE_URL, without echoing it (exit 2)', () => {
    expect(configErrorOf('warehouse:\n  url: mysql://root@db:3306/warehouse\n')).toBe(
      'config.yaml: key "warehouse.url": is not a PostgreSQL URL (it starts with "mysql:"); expected postgres://user@host:5432/database, or no url for the embedded warehouse.',
    );
    for (const url of [
      'postgres://u@h/db',
      'postgresql://u@h:5433/db',
      'postgres:///db?host=/run/postgresql',
    ]) {
      expect(parseConfig(`warehouse:\n  url: "${url}"\n`).warehouse.url).toBe(url);
      expect(readEnv({ DATABASE_URL: url }).databaseUrl).toBe(url);
    }
    for (const url of ['mysql://root:hunter22@db/x', 'localhost:5432/db', 'not a url']) {
      let error: unknown;
      try {
        readEnv({ DATABASE_URL: url });
      } catch (e) {
        error = e;
      }
      expect(isCybsError(error) && error.exitCode === 2, url).toBe(true);
      const message = (error as Error).message;
      expect(message).toMatch(/^DATABASE_URL is not (a URL|a PostgreSQL URL)/);
      expect(message).toContain('postgres://user@host:5432/database');
      expect(message).not.toContain('hunter22');
    }
  });

  it('reads CYBS_METRICS_HOST, where the schedule daemon serves (the container sets 0.0.0.0)', () => {
    expect(readEnv({ CYBS_METRICS_HOST: '0.0.0.0' }).metricsHost).toBe('0.0.0.0');
    expect(readEnv({}).metricsHost).toBeUndefined();
    expect(parseConfig('').schedule.metricsHost).toBe('127.0.0.1');
  });

  it('returns no credentials when none are set (simulator mode)', () => {
    expect(readEnv({}).credentials).toBeUndefined();
  });

  it('reads credentials and the deployment', () => {
    const s = readEnv({
      CYBS_MERCHANT_ID: 'm1',
      CYBS_KEY_ID: 'k1',
      CYBS_SHARED_SECRET: 'c2VjcmV0c2VjcmV0',
      CYBS_ENVIRONMENT: 'production-india',
      DATABASE_URL: 'postgres://u:pw1234@h/db',
    });
    expect(s.credentials).toMatchObject({ auth: 'jwt', merchantId: 'm1', keyId: 'k1' });
    expect(s.target.environment).toBe('production-india');
    expect(secretValues(s)).toEqual(['c2VjcmV0c2VjcmV0', 'pw1234']);
  });

  it('rejects incomplete or malformed credentials with one clear sentence', () => {
    expect(() => readEnv({ CYBS_MERCHANT_ID: 'm1' })).toThrow(/CYBS_KEY_ID/);
    expect(() =>
      readEnv({ CYBS_MERCHANT_ID: 'm', CYBS_KEY_ID: 'k', CYBS_SHARED_SECRET: 'not base64!' }),
    ).toThrow(/base64/);
    expect(() => readEnv({ CYBS_AUTH: 'basic' })).toThrow(/CYBS_AUTH/);
    expect(() => readEnv({ CYBS_AUTH: 'jwt-p12', CYBS_MERCHANT_ID: 'm' })).toThrow(/CYBS_P12_PATH/);
  });
});
