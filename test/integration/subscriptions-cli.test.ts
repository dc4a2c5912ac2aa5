/**
 * `cybs-etl subscriptions list | plan | apply [--prune]` against the simulator: from an empty
 * account, from a drifted one, apply twice is a no-op, refusals carry the service's words.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../packages/simulator/src/server/start-simulator.js';
import type { SimulatorHandle } from '../../packages/simulator/src/server/start-simulator.js';
import { cli } from '../helpers/cli.js';
import { spawnCli } from '../helpers/cli-process.js';

const TR = `  - reportName: TransactionRequestReport_Daily
    reportDefinitionName: TransactionRequestClass
    reportFields: [Request.RequestID, Request.TransactionDate, Request.MerchantID, PaymentData.Amount, PaymentData.CurrencyCode]
    timezone: America/Los_Angeles
    reportPreferences: { fieldNameConvention: SOAPI }
`;
const WEEKLY = `  - reportName: Exceptions_Weekly
    reportDefinitionName: ExceptionDetailClass
    reportFields: [Request.RequestID, Request.TransactionDate]
    reportMimeType: application/xml
    reportFrequency: WEEKLY
    startDay: 2
    startTime: "0600"
    timezone: Europe/London
    organizations: [sim_merchant_2]
`;

describe('cybs-etl subscriptions', () => {
  let dir: string;
  let sim: SimulatorHandle | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cybs-subs-'));
  });
  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function setup(options: { defaultSubscriptions: boolean }, subscriptions: string) {
    sim = await startSimulator({ organizations: 2, transactionsPerDay: 5, ...options });
    const k = sim.portfolioCredentials;
    const env = {
      CYBS_BASE_URL: sim.baseUrl,
      CYBS_MERCHANT_ID: k.merchantId,
      CYBS_KEY_ID: k.keyId,
      CYBS_SHARED_SECRET: k.sharedSecret,
      CYBS_PORTFOLIO_ID: k.portfolioId,
    };
    const config = join(dir, `config-${Math.random().toString(36).slice(2)}.yaml`);
    await writeFile(
      config,
      `log: { level: silent }\ndefaults:\n  organizations: [sim_merchant_1, sim_merchant_2]\nsubscriptions:\n${subscriptions}`,
    );
    const run = (...args: string[]) => cli(['--config', config, 'subscriptions', ...args], { env });
    const names = (org: string) =>
      sim!.store
        .activeSubscriptions(org)
        .map((s) => s.reportName)
        .sort();
    return { run, names, sim };
  }

  it('from an empty account: plan shows creations (exit 2), apply creates, then nothing is left to do', async () => {
    const { run, names, sim } = await setup({ defaultSubscriptions: false }, TR + WEEKLY);
    const plan = await run('plan');
    expect(plan.stderr).toBe('');
    expect(plan.code).toBe(2);
    expect(plan.stdout).toContain('Organization sim_merchant_1\n  + TransactionRequestReport_Daily (create)');
    expect(plan.stdout).toContain('      + reportFields PaymentData.Amount');
    expect(plan.stdout).toContain('      + timezone: "America/Los_Angeles"');
    expect(plan.stdout).toContain('  + Exceptions_Weekly (create)');
    expect(plan.stdout).toContain('      + startDay: 2');
    expect(plan.stdout).toContain('Plan: 3 to create, 0 to change, 0 to delete.');
    expect(names('sim_merchant_1')).toEqual([]);

    const apply = await run('apply');
    expect(apply.code).toBe(0);
    expect(apply.stdout).toContain('sim_merchant_2 Exceptions_Weekly: created');
    expect(apply.stdout).toContain('Apply complete: 3 change(s).');
    expect(names('sim_merchant_1')).toEqual(['TransactionRequestReport_Daily']);
    expect(names('sim_merchant_2')).toEqual(['Exceptions_Weekly', 'TransactionRequestReport_Daily']);
    const weekly = sim.store.findSubscription('sim_merchant_2', 'Exceptions_Weekly')!;
    expect(weekly).toMatchObject({
      reportFrequency: 'WEEKLY',
      startDay: 2,
      startTime: '0600',
      reportMimeType: 'application/xml',
      timezone: 'Europe/London',
    });

    // Apply twice: the second one changes nothing (no request that could change anything is sent).
    const before = JSON.stringify(sim.store.allSubscriptions());
    const again = await run('apply');
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('No changes: the live subscriptions match config.yaml.');
    expect(again.stdout).not.toContain('Apply complete');
    expect(JSON.stringify(sim.store.allSubscriptions())).toBe(before);
    expect((await run('plan')).code).toBe(0);

    const list = await run('list');
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/sim_merchant_2\s+\|?\s*Exceptions_Weekly/);
    expect(list.stdout).toContain('WEEKLY (day 2)');
    const json = JSON.parse((await run('list', '--json')).stdout) as Record<string, { reportName: string }[]>;
    expect(json['sim_merchant_1']!.map((s) => s.reportName)).toEqual(['TransactionRequestReport_Daily']);
  });

  it('from a drifted account: plan shows the attribute diff, apply --prune converges, twice is a no-op', async () => {
    const { run, names } = await setup({ defaultSubscriptions: true }, TR);
    const plan = await run('plan', '--organization-id', 'sim_merchant_1');
    expect(plan.code).toBe(2);
    expect(plan.stdout).toContain('  ~ TransactionRequestReport_Daily (update)');
    // The default subscription has more fields than declared: the removals are listed one by one.
    expect(plan.stdout).toContain('      - reportFields Request.MerchantReferenceNumber');
    expect(plan.stdout).not.toContain('~ timezone');
    expect(plan.stdout).toContain(
      'FundingDetailReport_Daily (not declared; kept — apply --prune deletes it)',
    );
    expect(plan.stdout).toContain('Plan: 0 to create, 1 to change, 0 to delete.');

    const pruned = await run('plan', '--prune');
    expect(pruned.stdout).toContain('  - FundingDetailReport_Daily (delete)');
    expect(pruned.stdout).toContain('Plan: 0 to create, 2 to change, 8 to delete.');

    // Without --prune, apply leaves undeclared subscriptions alone.
    const apply = await run('apply');
    expect(apply.code).toBe(0);
    expect(apply.stdout).toContain('sim_merchant_1 TransactionRequestReport_Daily: updated');
    expect(names('sim_merchant_1')).toHaveLength(5);

    const prune = await run('apply', '--prune');
    expect(prune.code).toBe(0);
    expect(prune.stdout).toContain('sim_merchant_1 FundingDetailReport_Daily: deleted');
    expect(names('sim_merchant_1')).toEqual(['TransactionRequestReport_Daily']);
    expect(names('sim_merchant_2')).toEqual(['TransactionRequestReport_Daily']);

    const again = await run('apply', '--prune');
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('No changes');
    expect((await run('plan', '--prune')).code).toBe(0);
  });

  it('a PUT the service refuses is reported with its message; exit 1; the rest is applied', async () => {
    // 5 live (default) subscriptions + 16 declared, without --prune: the 21st is over the limit.
    const many = Array.from(
      { length: 16 },
      (_, i) =>
        `  - reportName: Extra_${String(i + 1).padStart(2, '0')}\n    reportDefinitionName: TransactionRequestClass\n` +
        `    reportFields: [Request.RequestID]\n    timezone: UTC\n    organizations: [sim_merchant_1]\n`,
    ).join('');
    const { run, names } = await setup({ defaultSubscriptions: true }, many);
    const r = await run('apply');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('sim_merchant_1 Extra_15: created');
    expect(r.stdout).toMatch(
      /sim_merchant_1 Extra_16: failed: HTTP 400: Field validation error: .*at most 20 subscriptions/,
    );
    expect(r.stdout).toContain('1 refused request(s)');
    expect(names('sim_merchant_1')).toHaveLength(20);
    // With --prune the undeclared defaults go first, and the last one fits.
    const pruned = await run('apply', '--prune');
    expect(pruned.code).toBe(0);
    expect(names('sim_merchant_1')).toHaveLength(16);
  });

  it('plan exit 2 does not leak into the next command run in the same process', async () => {
    const { run } = await setup({ defaultSubscriptions: false }, TR);
    expect((await run('plan')).code).toBe(2);
    expect(process.exitCode).toBeUndefined();
    expect((await cli(['--version'])).code).toBe(0);
  });

  it('logs a warning, once, for a field the catalog does not know, and still plans it (audit #6)', async () => {
    sim = await startSimulator({ organizations: 1, transactionsPerDay: 1 });
    const config = join(dir, 'unknown-field.yaml');
    await writeFile(
      config,
      `log: { level: warn }\nsubscriptions:\n${TR.replace('PaymentData.CurrencyCode]', 'PaymentData.CurrencyCode, PaymentData.NoSuchField]')}`,
    );
    // A child process: the log lines go to its stderr (fd 2), which an in-process run cannot capture.
    const child = spawnCli(['--config', config, 'subscriptions', 'plan'], {
      CYBS_BASE_URL: sim.baseUrl,
      ...sim.credentials,
    });
    expect((await child.exited).code).toBe(2);
    expect(child.stdout()).toContain('+ reportFields PaymentData.NoSuchField');
    const warnings = child
      .stderr()
      .split('\n')
      .filter((line) => line.includes('PaymentData.NoSuchField'));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0]!)).toMatchObject({
      level: 'warn',
      msg: `${config}: key "subscriptions.0.reportFields.5": "PaymentData.NoSuchField" is not in the cybs-etl field catalog; it is sent as written and the service decides (its column, if any, is typed text)`,
    });
  });

  it('says what to do when config.yaml declares no subscriptions', async () => {
    sim = await startSimulator({ organizations: 1, transactionsPerDay: 1 });
    const config = join(dir, 'empty.yaml');
    await writeFile(config, 'log: { level: silent }\n');
    const r = await cli(['--config', config, 'subscriptions', 'plan'], {
      env: { CYBS_BASE_URL: sim.baseUrl, ...sim.credentials },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('declares no "subscriptions:"');
  });
});
