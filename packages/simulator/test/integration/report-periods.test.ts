/* eslint-disable @typescript-eslint/no-explicit-any -- JSON answers are read loosely here; their shapes are checked by simulator-contract.test.ts */
/**
 * The simulator serves reports of any schedule as the service does: a USER_DEFINED subscription
 * makes several reports a day, each search result carries the real fields and a download link with
 * reportTime (SPEC2020 example: `reportTime=10:00:00+05:00`), and a download by reportDate picks the
 * report named by reportTime (without it, the day's last one).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/server/start-simulator.js';
import type { SimulatorHandle } from '../../src/server/start-simulator.js';
import { signedFetch } from '../helpers/cybs-sign.js';

const NOW = Date.parse('2024-03-10T12:00:00Z');

describe('simulator report periods over HTTP', () => {
  let sim: SimulatorHandle;
  const call = (target: string) => signedFetch(sim.baseUrl, sim.credentials, target);

  beforeAll(async () => {
    sim = await startSimulator({
      seed: 3,
      transactionsPerDay: 100,
      startDate: '2024-03-01',
      organizations: 1,
      clock: () => NOW,
      quietDayRate: 0,
      subscriptions: [
        {
          reportName: 'Six_Hourly',
          reportDefinitionName: 'TransactionRequestClass',
          reportFields: ['Request.RequestID', 'Request.TransactionDate'],
          reportMimeType: 'text/csv',
          reportFrequency: 'USER_DEFINED',
          reportInterval: 'PT6H',
          timezone: 'Asia/Kolkata',
          startTime: '0100',
        },
        {
          reportName: 'Daily_0900',
          reportDefinitionName: 'TransactionRequestClass',
          reportFields: ['Request.RequestID', 'Request.TransactionDate'],
          reportMimeType: 'text/csv',
          reportFrequency: 'DAILY',
          timezone: 'Asia/Kolkata',
          startTime: '0900',
        },
      ],
    });
  });
  afterAll(() => sim.close());

  it('GET subscription returns startTime as a date-time in the subscription zone', async () => {
    const r = await call('/reporting/v3/report-subscriptions/Daily_0900');
    const body = (await r.json()) as any;
    expect(body.startTime).toMatch(/^\d{4}-\d{2}-\d{2}T09:00:00\+05:30$/);
    expect(body.reportFrequency).toBe('DAILY');
  });

  it('search: four reports a day, each with its period and a download link carrying reportTime', async () => {
    const r = await call(
      '/reporting/v3/reports?startTime=2024-03-04T19:30:00Z&endTime=2024-03-05T19:30:00Z&timeQueryType=reportTimeFrame&reportName=Six_Hourly',
    );
    expect(r.status).toBe(200);
    const results = ((await r.json()) as any).reportSearchResults as any[];
    expect(results.map((x) => [x.reportStartTime, x.reportEndTime, x.reportFrequency])).toEqual([
      ['2024-03-05T01:00:00+05:30', '2024-03-05T07:00:00+05:30', 'USER_DEFINED'],
      ['2024-03-05T07:00:00+05:30', '2024-03-05T13:00:00+05:30', 'USER_DEFINED'],
      ['2024-03-05T13:00:00+05:30', '2024-03-05T19:00:00+05:30', 'USER_DEFINED'],
      ['2024-03-05T19:00:00+05:30', '2024-03-06T01:00:00+05:30', 'USER_DEFINED'],
    ]);
    expect(results[1]._link.reportDownload).toEqual({
      href: '/reporting/v3/report-downloads?reportDate=2024-03-05&reportName=Six_Hourly&reportTime=13:00:00+05:30',
      method: 'GET',
    });
    expect(results.every((x) => x.status === 'COMPLETED')).toBe(true);
  });

  it('download: reportTime picks one of the day’s reports; without it, the day’s last one', async () => {
    const metadata = async (target: string) => {
      const r = await call(target);
      expect(r.status).toBe(200);
      return (await r.text()).split('\n')[0]!;
    };
    const base = '/reporting/v3/report-downloads?reportDate=2024-03-05&reportName=Six_Hourly';
    // The link's literal "+" (a space once decoded as a form value) and %2B both name +05:30.
    const second = await metadata(`${base}&reportTime=13:00:00+05:30`);
    expect(second).toContain('2024-03-05T01:30:00Z to 2024-03-05T07:30:00Z');
    expect(await metadata(`${base}&reportTime=13%3A00%3A00%2B05%3A30`)).toBe(second);
    expect(await metadata(`${base}&reportTime=07:30:00Z`)).toBe(second);
    const first = await metadata(`${base}&reportTime=07:00:00%2B05:30`);
    expect(first).toContain('2024-03-04T19:30:00Z to 2024-03-05T01:30:00Z');
    // Without reportTime: the report ending latest on 2024-03-05 (19:00 local).
    expect(await metadata(base)).toContain('2024-03-05T07:30:00Z to 2024-03-05T13:30:00Z');
    const none = await call(`${base}&reportTime=08:00:00%2B05:30`);
    expect(none.status).toBe(404);
    const bad = await call(`${base}&reportTime=noon`);
    expect(bad.status).toBe(400);
  });
});
