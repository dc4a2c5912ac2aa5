/**
 * Predefined Classic subscriptions over HTTP: the real report names (dotnet #38, edX, sul-dlss, the
 * specification's predefined example), and the files they produce: the real Classic CSV layout
 * with LF line ends, the Payment Submission Detail columns edX reads.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/server/start-simulator.js';
import type { SimulatorHandle } from '../../src/server/start-simulator.js';
import { signedFetch } from '../helpers/cybs-sign.js';

const NOW = Date.parse('2024-03-10T12:00:00Z');

describe('predefined Classic reports', () => {
  let sim: SimulatorHandle;
  const call = (target: string, init: Parameters<typeof signedFetch>[3] = {}) =>
    signedFetch(sim.baseUrl, sim.credentials, target, init);
  const predefine = (body: Record<string, unknown>) =>
    call('/reporting/v3/predefined-report-subscriptions', { method: 'PUT', body: JSON.stringify(body) });

  beforeAll(async () => {
    sim = await startSimulator({
      seed: 21,
      transactionsPerDay: 200,
      startDate: '2024-03-01',
      organizations: ['merchant_a'],
      defaultSubscriptions: false,
      clock: () => NOW,
      quietDayRate: 0,
    });
  });
  afterAll(() => sim.close());

  it('takes the real Classic names by default', async () => {
    for (const reportDefinitionName of [
      'ExceptionDetailClass',
      'TransactionRequestClass',
      'PaymentBatchDetailClass',
    ])
      expect((await predefine({ reportDefinitionName, subscriptionType: 'CLASSIC' })).status).toBe(201);
    const list = (await (await call('/reporting/v3/report-subscriptions')).json()) as {
      subscriptions: { reportName: string; reportDefinitionName: string }[];
    };
    expect(list.subscriptions.map((s) => `${s.reportName}|${s.reportDefinitionName}`).sort()).toEqual([
      'PaymentBatchDetailReport_Daily_Classic|PaymentBatchDetailClass',
      'TransactionDetailReport_Daily_Classic|TransactionRequestClass',
      'TransactionExceptionDetailReport_Daily_Classic|ExceptionDetailClass',
    ]);
  });

  it('writes PaymentSubmissionDetailReport_Daily_Classic as the real Classic CSV, LF line ends', async () => {
    const reportName = 'PaymentSubmissionDetailReport_Daily_Classic';
    const put = await predefine({
      reportDefinitionName: 'PaymentBatchDetailClass',
      subscriptionType: 'CLASSIC',
      reportName,
    });
    expect(put.status).toBe(201);
    const sub = (await (await call(`/reporting/v3/report-subscriptions/${reportName}`)).json()) as {
      reportFields: string[];
    };
    expect(sub.reportFields.at(-1)).toBe('PaymentData.PaymentProcessor');
    sim.advance(24 * 3600_000);
    const file = await call(`/reporting/v3/report-downloads?reportName=${reportName}&reportDate=2024-03-11`);
    expect(file.status).toBe(200);
    const text = await file.text();
    expect(text).not.toContain('\r');
    const [meta, header, first] = text.split('\n');
    expect(meta!.split(',').slice(0, 5)).toEqual([
      'merchant_a',
      reportName,
      'PaymentSubmissionDetail',
      '1.10',
      '2024-03-10T00:00:00Z to 2024-03-11T00:00:00Z',
    ]);
    expect(header).toBe(
      'batch_id,merchant_id,batch_date,request_id,merchant_ref_number,TransactionReferenceNumber,' +
        'payment_type,currency,amount,ics_applications,status,transaction_date,payment_processor',
    );
    expect(first).toMatch(/^\d+,merchant_a,\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ,\d{22},/);
  });
});
