import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSubscriptionsFile } from '../../src/server/seed-subscriptions.js';
import { startSimulator } from '../../src/server/start-simulator.js';

const weekly = {
  reportName: 'Exceptions_Weekly',
  reportDefinitionName: 'ExceptionDetailClass',
  reportFields: ['Request.RequestID', 'Request.TransactionDate'],
  reportMimeType: 'text/csv',
  reportFrequency: 'WEEKLY',
  timezone: 'America/Chicago',
  startTime: '0600',
  startDay: 2,
};

describe('simulator --subscriptions', () => {
  let dir: string;
  const file = async (name: string, text: string) => {
    const path = join(dir, name);
    await writeFile(path, text);
    return path;
  };
  const start = async (path: string) =>
    startSimulator({
      organizations: 2,
      transactionsPerDay: 5,
      startDate: '2024-03-01',
      clock: () => Date.parse('2024-03-20T00:00:00Z'),
      subscriptions: await readSubscriptionsFile(path),
      subscriptionsSource: path,
    });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cybs-seed-subs-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('installs the subscriptions of a YAML file (every organization by default) instead of the defaults', async () => {
    const path = await file(
      'subs.yaml',
      [
        '- reportName: Exceptions_Weekly',
        '  reportDefinitionName: ExceptionDetailClass',
        '  reportFields: [Request.RequestID, Request.TransactionDate]',
        '  reportMimeType: text/csv',
        '  reportFrequency: WEEKLY',
        '  timezone: America/Chicago',
        "  startTime: '0600'",
        '  startDay: 2',
        '- reportName: Six_Hourly',
        '  organizationId: sim_merchant_2',
        '  reportDefinitionName: TransactionRequestClass',
        '  reportFields: [Request.RequestID, Request.TransactionDate]',
        '  reportMimeType: application/xml',
        '  reportFrequency: USER_DEFINED',
        '  reportInterval: PT6H',
        '  timezone: Asia/Kolkata',
        "  startTime: '0100'",
        '',
      ].join('\n'),
    );
    const sim = await start(path);
    try {
      const names = (org: string) => sim.store.activeSubscriptions(org).map((s) => s.reportName);
      expect(names('sim_merchant_1')).toEqual(['Exceptions_Weekly']);
      expect(names('sim_merchant_2')).toEqual(['Exceptions_Weekly', 'Six_Hourly']);
      const six = sim.store.findSubscription('sim_merchant_2', 'Six_Hourly')!;
      expect(six).toMatchObject({
        reportFrequency: 'USER_DEFINED',
        reportInterval: 'PT6H',
        startTime: '0100',
      });
      // Active from the start date: the reports of 2024-03-01 exist.
      const truth = sim.groundTruth('sim_merchant_2', '2024-03-01', '2024-03-01');
      const days = truth.reports.find((r) => r.reportName === 'Six_Hourly')!.days;
      expect(days.map((d) => [d.reportDate, d.reportTime])).toEqual([
        ['2024-03-01', '07:00:00+05:30'],
        ['2024-03-01', '13:00:00+05:30'],
        ['2024-03-01', '19:00:00+05:30'],
        ['2024-03-02', '01:00:00+05:30'],
      ]);
    } finally {
      await sim.close();
    }
  });

  it('reads JSON too', async () => {
    const sim = await start(await file('subs.json', JSON.stringify([weekly])));
    try {
      expect(sim.store.activeSubscriptions('sim_merchant_1').map((s) => s.reportName)).toEqual([
        'Exceptions_Weekly',
      ]);
    } finally {
      await sim.close();
    }
  });

  it('refuses what the service would refuse, naming the file and the entry', async () => {
    const bad = await file(
      'bad.json',
      JSON.stringify([weekly, { ...weekly, reportName: 'Late', startTime: '9am' }]),
    );
    await expect(start(bad)).rejects.toThrow(
      `${bad}: subscription 2 ("Late"): the service would refuse it (startTime`,
    );
    const org = await file('org.json', JSON.stringify([{ ...weekly, organizationId: 'nobody' }]));
    await expect(start(org)).rejects.toThrow(
      /org\.json: subscription 1 \("Exceptions_Weekly"\): organizationId "nobody"/,
    );
    const twice = await file('twice.json', JSON.stringify([weekly, weekly]));
    await expect(start(twice)).rejects.toThrow(/subscription 2 .* already has a subscription of that name/);
    await expect(readSubscriptionsFile(await file('empty.yaml', 'a: 1\n'))).rejects.toThrow(
      /empty\.yaml: expected a non-empty list of subscriptions/,
    );
    await expect(readSubscriptionsFile(join(dir, 'missing.yaml'))).rejects.toThrow(
      /missing\.yaml: cannot read/,
    );
  });
});
