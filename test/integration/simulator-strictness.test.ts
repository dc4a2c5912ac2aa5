/**
 * The simulator refuses what the service refuses (each check written from the spec, the SDK or the
 * docs, named at the check), and the product's client sends what the service accepts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReportingClient } from '../../src/api/reporting-client.js';
import type { ReportingClient } from '../../src/api/reporting-client.js';
import type { ApiEvent } from '../../src/api/transport.js';
import type { Credentials } from '../../src/config/env.js';
import { configSchema } from '../../src/config/schema.js';
import { fetchOnDemandPages } from '../../src/extract/on-demand-pages.js';
import { startSimulator } from '../../packages/simulator/src/server/start-simulator.js';
import type { SimulatorHandle } from '../../packages/simulator/src/server/start-simulator.js';
import { signedFetch } from '../../packages/simulator/test/helpers/cybs-sign.js';
import type { SignCredentials } from '../../packages/simulator/test/helpers/cybs-sign.js';

const NOW = Date.parse('2024-03-10T12:00:00Z');
const WINDOW = 'startTime=2024-03-04T00:00:00Z&endTime=2024-03-05T00:00:00Z';

describe('a simulator as strict as the service', () => {
  let sim: SimulatorHandle;
  const call = (target: string, init: Parameters<typeof signedFetch>[3] = {}, c?: SignCredentials) =>
    signedFetch(sim.baseUrl, c ?? sim.credentials, target, init);
  const clients: ReportingClient[] = [];
  const clientFor = (credentials: Credentials, events?: ApiEvent[]) => {
    const client = createReportingClient(
      {
        credentials,
        target: { baseUrl: sim.baseUrl },
        api: {
          ...configSchema.parse({}).api,
          retry: { attempts: 1, minDelayMs: 1, maxDelayMs: 1, maxTotalMs: 1 },
        },
      },
      events ? { onEvent: (e) => events.push(e) } : {},
    );
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    sim = await startSimulator({
      seed: 41,
      transactionsPerDay: 120,
      startDate: '2024-02-25',
      organizations: ['merchant_a', 'merchant_b'],
      clock: () => NOW,
      quietDayRate: 0,
    });
  });
  afterAll(async () => {
    for (const c of clients) await c.close();
    await sim.close();
  });

  it('subscription names in GET/DELETE paths fit [a-zA-Z0-9-_+]{1,80}; PUT bodies take [a-zA-Z0-9-_ ]{1,128}', async () => {
    // Spec: path parameter reportName pattern [a-zA-Z0-9-_+]+, maxLength 80 (GET and DELETE); the
    // PUT body's reportName [a-zA-Z0-9-_ ]+, maxLength 128.
    const body = (reportName: string) =>
      JSON.stringify({
        reportDefinitionName: 'TransactionRequestClass',
        reportFields: ['Request.RequestID'],
        reportMimeType: 'text/csv',
        reportFrequency: 'DAILY',
        reportName,
        timezone: 'UTC',
        startTime: '0000',
      });
    const spaced = 'Daily report with spaces';
    expect(
      (await call('/reporting/v3/report-subscriptions', { method: 'PUT', body: body(spaced) })).status,
    ).toBe(200);
    const long = 'x'.repeat(81);
    expect(
      (await call('/reporting/v3/report-subscriptions', { method: 'PUT', body: body(long) })).status,
    ).toBe(200);
    for (const name of [spaced, long]) {
      const path = `/reporting/v3/report-subscriptions/${encodeURIComponent(name)}`;
      expect((await call(path)).status, name).toBe(400);
      expect((await call(path, { method: 'DELETE' })).status, name).toBe(400);
    }
    const fits = 'a+b_c-d'.padEnd(80, '9');
    expect((await call('/reporting/v3/report-subscriptions/' + encodeURIComponent(fits))).status).toBe(404);
    expect((await call('/reporting/v3/report-subscriptions/TransactionRequestReport_Daily')).status).toBe(
      200,
    );
  });

  it("reportInterval follows the spec's pattern: PT1M to PT23H59M", async () => {
    const put = (reportInterval: string) =>
      call('/reporting/v3/report-subscriptions', {
        method: 'PUT',
        body: JSON.stringify({
          reportDefinitionName: 'TransactionRequestClass',
          reportFields: ['Request.RequestID'],
          reportMimeType: 'text/csv',
          reportFrequency: 'USER_DEFINED',
          reportInterval,
          reportName: `every_${reportInterval}`,
          timezone: 'UTC',
          startTime: '0000',
        }),
      });
    for (const bad of ['PT', 'PT24H', 'PT0H30M', 'PT90M', 'PT0M', 'PT1H60M', 'P1D', 'PT2H0M']) {
      const r = await put(bad);
      expect(r.status, bad).toBe(400);
      expect(((await r.json()) as { fields: { path: string }[] }).fields.map((f) => f.path)).toContain(
        'reportInterval',
      );
    }
    // (The simulator itself makes reports at most hourly: PT45M is the service's, not the simulator's.)
    for (const good of ['PT1H', 'PT6H', 'PT2H30M', 'PT23H59M'])
      expect((await put(good)).status, good).toBe(200);
  });

  it('Standard predefined subscriptions run in PST only; Classic ones default to GMT', async () => {
    // SDK docs/PredefinedSubscriptionRequestBean.md: "If user provides any other time zone apart
    // from PST for Standard subscription api should error out."
    const put = (extra: Record<string, unknown>) =>
      call('/reporting/v3/predefined-report-subscriptions', {
        method: 'PUT',
        body: JSON.stringify({ reportDefinitionName: 'FeeDetailClass', ...extra }),
      });
    expect((await put({ subscriptionType: 'STANDARD', timezone: 'America/Chicago' })).status).toBe(400);
    expect((await put({ subscriptionType: 'STANDARD', timezone: 'UTC', reportName: 'fee_utc' })).status).toBe(
      400,
    );
    expect(
      (await put({ subscriptionType: 'STANDARD', timezone: 'PST', reportName: 'fee_pst' })).status,
    ).toBeLessThan(300);
    expect((await put({ subscriptionType: 'STANDARD', reportName: 'fee_default' })).status).toBeLessThan(300);
    expect((await put({ subscriptionType: 'CLASSIC', reportName: 'fee_classic' })).status).toBeLessThan(300);
    const standard = (await (await call('/reporting/v3/report-subscriptions/fee_pst')).json()) as {
      timezone: string;
    };
    expect(standard.timezone).toBe('America/Los_Angeles');
    const classic = (await (await call('/reporting/v3/report-subscriptions/fee_classic')).json()) as {
      timezone: string;
    };
    expect(classic.timezone).toBe('GMT');
  });

  it('payment-batch-summaries takes RFC 3339 times (Z or ±hh:mm) and refuses +0000', async () => {
    // Spec: format date-time (RFC 3339); SDK example 2018-01-01T00:00:00.000Z; CyberSource's sample
    // get-payment-batch-summary-data.js sends '2024-09-01T12:00:00Z'.
    const pbs = (start: string, end: string) =>
      call(
        `/reporting/v3/payment-batch-summaries?startTime=${encodeURIComponent(start)}&endTime=${encodeURIComponent(end)}`,
      );
    expect((await pbs('2024-03-04T00:00:00Z', '2024-03-05T00:00:00Z')).status).toBe(200);
    expect((await pbs('2024-03-04T00:00:00.000Z', '2024-03-05T00:00:00.000+00:00')).status).toBe(200);
    expect((await pbs('2024-03-04T00:00:00.000+0000', '2024-03-05T00:00:00.000+0000')).status).toBe(400);
    // The product's client: Dates as toISOString() writes them.
    const client = clientFor({ auth: 'jwt', ...sim.credentials });
    const body = await client.getPaymentBatchSummaries({
      startTime: new Date('2024-03-04T00:00:00Z'),
      endTime: new Date('2024-03-05T00:00:00Z'),
    });
    expect(body.paymentBatchSummaries.length).toBeGreaterThan(0);
  });

  it('notification-of-changes refuses organizationId; a meta key reads each merchant as that merchant', async () => {
    // Spec and SDK NotificationOfChangesApi: startTime and endTime only.
    const p = sim.portfolioCredentials;
    const refused = await call(
      `/reporting/v3/notification-of-changes?${WINDOW}&organizationId=merchant_b`,
      {},
      p,
    );
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({
      details: [{ field: 'organizationId', reason: 'INVALID_DATA' }],
    });
    const portfolio: Credentials = { auth: 'jwt', ...p };
    // A day on which each merchant of this seed has changes (a day without any answers 404).
    for (const auth of ['jwt', 'http-signature'] as const) {
      const client = clientFor({ ...portfolio, auth });
      for (const org of ['merchant_a', 'merchant_b']) {
        const body = await client.getNotificationOfChanges({
          startTime: '2024-03-05T00:00:00Z',
          endTime: '2024-03-06T00:00:00Z',
          organizationId: org,
        });
        const truth = sim.groundTruth(org, '2024-03-05', '2024-03-05').onDemand.notificationOfChanges
          .rowCount;
        expect(body.notificationOfChanges.length, `${auth} ${org}`).toBe(truth);
      }
    }
    const a = sim.groundTruth('merchant_a', '2024-03-05', '2024-03-05').onDemand.notificationOfChanges
      .rowCount;
    const b = sim.groundTruth('merchant_b', '2024-03-05', '2024-03-05').onDemand.notificationOfChanges
      .rowCount;
    expect(a + b).toBeGreaterThan(0);
  });

  it('401 in the gateway shape by default and as the Error Bean on request; the client says why in one sentence', async () => {
    const wrong: Credentials = {
      auth: 'jwt',
      ...sim.credentials,
      sharedSecret: Buffer.from('not the secret at all!').toString('base64'),
    };
    const gateway = await call('/reporting/v3/report-definitions', {}, wrong as SignCredentials);
    expect(gateway.status).toBe(401);
    expect(await gateway.json()).toEqual({ response: { rmsg: 'Authentication Failed' } });
    await expect(clientFor(wrong).listReportDefinitions()).rejects.toMatchObject({
      code: 'API_UNAUTHORIZED',
      message: expect.stringMatching(
        /^CyberSource refused the credentials \(auth scheme jwt, merchant id merchant_a\) with HTTP 401 for GET \/reporting\/v3\/report-definitions: Authentication Failed; check CYBS_AUTH/,
      ),
    });
    const beanSim = await startSimulator({
      seed: 41,
      organizations: ['merchant_a'],
      unauthorizedShape: 'error-bean',
    });
    try {
      const r = await signedFetch(
        beanSim.baseUrl,
        { ...beanSim.credentials, sharedSecret: wrong.sharedSecret! },
        '/reporting/v3/report-definitions',
      );
      expect(r.status).toBe(401);
      expect(await r.json()).toMatchObject({
        code: 'UNAUTHORIZED',
        localizationKey: 'cybsapi.authentication.failed',
      });
    } finally {
      await beanSim.close();
    }
  });

  it('purchase-refund-details: the client pages past a short last page and gets no embedded object', async () => {
    const events: ApiEvent[] = [];
    const client = clientFor({ auth: 'jwt', ...sim.credentials }, events);
    let records = 0;
    for await (const body of fetchOnDemandPages(client, 'purchase-refund-details', {
      window: { start: new Date('2024-03-04T00:00:00Z'), end: new Date('2024-03-05T00:00:00Z') },
      pageLimit: 25,
    })) {
      records += (body as { requestDetails: unknown[] }).requestDetails.length;
    }
    const truth = sim.groundTruth('merchant_a', '2024-03-04', '2024-03-04').onDemand.purchaseRefundDetails
      .records;
    expect(records).toBe(truth);
    const pages = events.filter((e) => e.type === 'response' && e.status === 200).length;
    // Every page with records, then the one past the end.
    expect(pages).toBe(Math.ceil(truth / 25) + 1);
  });
});
