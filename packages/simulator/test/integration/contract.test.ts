/**
 * Contract: every endpoint's answer validates against the shapes of facts §2 (zod schemas below),
 * and has the same keys and JSON types as the spec-example samples in
 * ../shared/samples/cybersource/ (null in a sample means "any type"; free-form maps such as
 * reportFilters are compared by value type only).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startSimulator } from '../../src/server/start-simulator.js';
import type { SimulatorHandle } from '../../src/server/start-simulator.js';
import { signedFetch } from '../helpers/cybs-sign.js';
import { SAMPLES } from '../helpers/samples.js';

const samples = SAMPLES;
const dateTime = z
  .string()
  .refine((s) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(s), 'date-time');
const money = z.string().regex(/^-?\d+(\.\d+)?$/);
const stringMap = z.record(z.string(), z.array(z.string()));
const preferences = z
  .object({ signedAmounts: z.boolean(), fieldNameConvention: z.enum(['SOAPI', 'SCMP']).nullable() })
  .strict();

const definition = z
  .object({
    type: z.string(),
    reportDefinitionId: z.number().int(),
    reportDefintionName: z.string(),
    supportedFormats: z.array(z.enum(['application/xml', 'text/csv'])),
    description: z.string(),
    defaultSettings: z
      .object({
        reportMimeType: z.string(),
        reportFrequency: z.string(),
        reportName: z.string(),
        timezone: z.string(),
        startTime: z.string().regex(/^\d{4}$/),
        startDay: z.number().int(),
        reportFilters: stringMap,
        reportPreferences: preferences,
      })
      .strict(),
    subscriptionType: z.enum(['CLASSIC', 'CUSTOM', 'STANDARD']),
  })
  .strict();
const definitionsList = z.object({ reportDefinitions: z.array(definition).min(19) }).strict();
const definitionByName = definition
  .extend({
    attributes: z.array(
      z
        .object({
          id: z.string(),
          name: z.string(),
          description: z.string(),
          filterType: z.string(),
          default: z.boolean(),
          required: z.boolean(),
          supportedType: z.union([z.string(), z.array(z.string())]),
        })
        .strict(),
    ),
  })
  .strict();
const subscription = z
  .object({
    organizationId: z.string(),
    reportDefinitionId: z.string(),
    reportDefinitionName: z.string(),
    reportMimeType: z.enum(['application/xml', 'text/csv']),
    reportFrequency: z.enum(['DAILY', 'WEEKLY', 'MONTHLY', 'USER_DEFINED']),
    reportInterval: z.string().nullable(),
    reportName: z.string(),
    timezone: z.string(),
    startTime: dateTime,
    startDay: z.number().int(),
    reportFields: z.array(z.string()),
    reportFilters: stringMap,
    reportPreferences: preferences,
    groupId: z.string(),
  })
  .strict();
const searchResult = z
  .object({
    _link: z
      .object({
        reportDownload: z
          .object({
            href: z.string().startsWith('/reporting/v3/report-downloads?'),
            method: z.literal('GET'),
          })
          .strict(),
      })
      .strict(),
    reportDefinitionId: z.string(),
    reportName: z.string(),
    reportMimeType: z.string(),
    reportFrequency: z.enum(['DAILY', 'WEEKLY', 'MONTHLY', 'USER_DEFINED', 'ADHOC']),
    status: z.enum(['COMPLETED', 'PENDING', 'QUEUED', 'RUNNING', 'ERROR', 'NO_DATA']),
    reportStartTime: dateTime,
    reportEndTime: dateTime,
    timezone: z.string(),
    reportId: z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
    organizationId: z.string(),
    queuedTime: dateTime,
    reportGeneratingTime: dateTime.optional(),
    reportCompletedTime: dateTime.optional(),
    subscriptionType: z.enum(['CLASSIC', 'CUSTOM', 'STANDARD']),
    groupId: z.string(),
  })
  .strict();
const reportById = z
  .object({
    organizationId: z.string(),
    reportId: z.string(),
    reportDefinitionId: z.string(),
    reportName: z.string(),
    reportMimeType: z.string(),
    reportFrequency: z.string(),
    reportFields: z.array(z.string()),
    reportStatus: z.enum(['COMPLETED', 'PENDING', 'QUEUED', 'RUNNING', 'ERROR', 'NO_DATA', 'RERUN']),
    reportStartTime: dateTime,
    reportEndTime: dateTime,
    timezone: z.string(),
    reportFilters: stringMap,
    reportPreferences: preferences,
    groupId: z.string(),
  })
  .strict();
const rid = z.string().regex(/^\d{22,26}$/);
const purchaseRefund = z
  .object({
    offset: z.number().int(),
    limit: z.number().int(),
    pageResults: z.number().int(),
    requestDetails: z.array(
      z
        .object({
          requestId: rid,
          cybersourceMerchantId: z.string(),
          processorMerchantId: z.string(),
          groupName: z.string(),
          transactionReferenceNumber: z.string(),
          merchantReferenceNumber: z.string(),
        })
        .strict(),
    ),
    settlements: z.array(
      z
        .object({
          requestId: rid,
          transactionType: z.enum(['Purchases', 'Refunds']),
          submissionTime: dateTime,
          amount: money,
          currencyCode: z.string().length(3),
          paymentMethod: z.string(),
          walletType: z.string(),
          paymentType: z.string(),
          accountSuffix: z.string(),
          cybersourceBatchTime: dateTime,
          cybersourceBatchId: z.string(),
          cardType: z.string(),
          debitNetwork: z.string(),
        })
        .strict(),
    ),
    authorizations: z.array(
      z
        .object({
          requestId: rid,
          transactionReferenceNumber: z.string(),
          time: dateTime,
          authorizationRequestId: rid,
          amount: money,
          currencyCode: z.string(),
          code: z.string(),
          rcode: z.string(),
        })
        .strict(),
    ),
    feeAndFundingDetails: z.array(
      z
        .object({
          requestId: rid,
          interchangePerItemFee: money,
          interchangeDescription: z.string(),
          interchangePercentage: money,
          interchangePercentageAmount: money,
          discountPercentage: money,
          discountAmount: money,
          discountPerItemFee: money,
          totalFee: money,
          feeCurrency: z.string(),
          duesAssessments: money,
          fundingAmount: money,
          fundingCurrency: z.string(),
        })
        .strict(),
    ),
    others: z.array(
      z
        .object({
          requestId: rid,
          merchantData1: z.string(),
          merchantData2: z.string(),
          merchantData3: z.string(),
          merchantData4: z.string(),
          firstName: z.string(),
          lastName: z.string(),
        })
        .strict(),
    ),
    settlementStatuses: z.array(
      z
        .object({
          requestId: rid,
          status: z.string(),
          settlementTime: dateTime,
          reasonCode: z.string(),
          errorText: z.string(),
        })
        .strict(),
    ),
  })
  .strict();
const currencyValue = z.array(z.object({ currency: z.string(), value: money }).strict());
const netFunding = z
  .object({
    startTime: dateTime,
    endTime: dateTime,
    netFundingSummaries: z.array(
      z
        .object({
          type: z.enum(['PURCHASES', 'REFUNDS', 'FEES', 'CHARGEBACKS']),
          paymentSubType: z.string(),
          conveyedCount: z.number().int(),
          conveyedAmount: money,
          settledCount: z.number().int(),
          fundedCount: z.number().int(),
          fundedAmount: money,
          currencyCode: z.string(),
        })
        .strict(),
    ),
    totalPurchases: currencyValue,
    totalRefunds: currencyValue,
    totalFees: currencyValue,
    totalChargebacks: currencyValue,
    netTotal: currencyValue,
  })
  .strict();
const conversion = z
  .object({
    organizationId: z.string(),
    startTime: dateTime,
    endTime: dateTime,
    conversionDetails: z.array(
      z
        .object({
          merchantReferenceNumber: z.string(),
          conversionTime: dateTime,
          requestId: rid,
          originalDecision: z.string(),
          newDecision: z.string(),
          reviewer: z.string(),
          reviewerComments: z.string(),
          queue: z.string(),
          profile: z.string(),
          notes: z.array(z.object({ time: dateTime, addedBy: z.string(), comments: z.string() }).strict()),
        })
        .strict(),
    ),
  })
  .strict();
const noc = z
  .object({
    notificationOfChanges: z.array(
      z
        .object({
          merchantReferenceNumber: z.string(),
          transactionReferenceNumber: z.string(),
          time: dateTime,
          code: z.string(),
          accountType: z.string(),
          routingNumber: z.string(),
          accountNumber: z.string(),
          consumerName: z.string(),
        })
        .strict(),
    ),
  })
  .strict();
const pbs = z
  .object({
    startTime: dateTime,
    endTime: dateTime,
    paymentBatchSummaries: z.array(
      z
        .object({
          currencyCode: z.string(),
          paymentSubTypeDescription: z.string(),
          startTime: dateTime,
          endTime: dateTime,
          salesCount: z.number().int(),
          salesAmount: money,
          creditCount: z.number().int(),
          creditAmount: money,
          accountName: z.string(),
          accountId: z.string(),
          merchantId: z.string(),
          merchantName: z.string(),
        })
        .strict(),
    ),
  })
  .strict();
const reportingError = z
  .object({
    submitTimeUtc: dateTime,
    reason: z.string(),
    message: z.string(),
    details: z.array(z.object({ field: z.string(), reason: z.string() }).strict()),
  })
  .strict();
const errorBean = z
  .object({
    code: z.string(),
    message: z.string(),
    localizationKey: z.string(),
    correlationId: z.string().nullable(),
    detail: z.string().nullable(),
    fields: z.array(
      z.object({ path: z.string(), message: z.string(), localizationKey: z.string() }).strict(),
    ),
  })
  .strict();

const MAP_KEYS = new Set(['reportFilters']);

/** Differences between a sample and an answer: same keys, same JSON types (null in the sample = any). */
function shapeDiff(sample: unknown, actual: unknown, at = '$'): string[] {
  if (sample === null) return [];
  const type = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
  if (type(sample) !== type(actual)) return [`${at}: sample ${type(sample)}, simulator ${type(actual)}`];
  if (Array.isArray(sample)) {
    const a = actual as unknown[];
    if (sample.length === 0 || a.length === 0) return [];
    return a.flatMap((item, i) => shapeDiff(sample[0], item, `${at}[${i}]`)).slice(0, 5);
  }
  if (type(sample) === 'object') {
    const s = sample as Record<string, unknown>;
    const o = actual as Record<string, unknown>;
    const name = at.split('.').pop() ?? '';
    if (MAP_KEYS.has(name)) {
      return Object.values(o).flatMap((v) => shapeDiff(Object.values(s)[0] ?? null, v, `${at}.*`));
    }
    const out: string[] = [];
    for (const k of Object.keys(s)) if (!(k in o)) out.push(`${at}.${k}: missing in simulator answer`);
    for (const k of Object.keys(o)) if (!(k in s)) out.push(`${at}.${k}: not in sample`);
    for (const k of Object.keys(s)) if (k in o) out.push(...shapeDiff(s[k], o[k], `${at}.${k}`));
    return out;
  }
  return [];
}

async function sample(name: string): Promise<unknown> {
  return JSON.parse(await readFile(path.join(samples, name), 'utf8'));
}

describe('simulator contract (facts §2, spec-example samples)', () => {
  let sim: SimulatorHandle;
  const day = '2024-03-05';
  const window = 'startTime=2024-03-04T00:00:00Z&endTime=2024-03-06T00:00:00Z';
  const get = async (
    target: string,
    accept?: string,
  ): Promise<{ status: number; body: unknown; type: string }> => {
    const res = await signedFetch(sim.baseUrl, sim.credentials, target, accept ? { accept } : {});
    const text = await res.text();
    const type = res.headers.get('content-type') ?? '';
    return { status: res.status, body: type.includes('json') && text ? JSON.parse(text) : text, type };
  };

  beforeAll(async () => {
    sim = await startSimulator({
      seed: 21,
      transactionsPerDay: 400,
      startDate: '2024-02-20',
      clock: () => Date.parse('2024-03-10T12:00:00Z'),
      quietDayRate: 0,
    });
  });
  afterAll(() => sim.close());

  const cases: [string, string, z.ZodType, string | undefined][] = [
    [
      'report definitions',
      '/reporting/v3/report-definitions',
      definitionsList,
      'report-definitions-200.spec-example.json',
    ],
    [
      'report definition by name',
      '/reporting/v3/report-definitions/TransactionRequestClass',
      definitionByName,
      'report-definition-by-name-200.spec-example.json',
    ],
    [
      'subscriptions',
      '/reporting/v3/report-subscriptions',
      z.object({ subscriptions: z.array(subscription).min(2) }).strict(),
      'report-subscriptions-200.spec-example.json',
    ],
    [
      'subscription by name',
      '/reporting/v3/report-subscriptions/TransactionRequestReport_Daily',
      subscription,
      'report-subscription-by-name-200.spec-example.json',
    ],
    [
      'report search',
      `/reporting/v3/reports?${window}&timeQueryType=reportTimeFrame&reportStatus=COMPLETED`,
      z.object({ reportSearchResults: z.array(searchResult).min(1) }).strict(),
      'reports-search-200.spec-example.json',
    ],
    [
      'purchase-refund-details',
      `/reporting/v3/purchase-refund-details?${window}&limit=50`,
      purchaseRefund,
      'purchase-refund-details-200.spec-example.json',
    ],
    [
      'net-fundings',
      `/reporting/v3/net-fundings?${window}`,
      netFunding,
      'net-fundings-200.spec-example.json',
    ],
    [
      'conversion-details',
      `/reporting/v3/conversion-details?${window}`,
      conversion,
      'conversion-details-200.spec-example.json',
    ],
    [
      'notification-of-changes',
      `/reporting/v3/notification-of-changes?${window}`,
      noc,
      'notification-of-changes-200.spec-example.json',
    ],
    [
      'payment-batch-summaries',
      `/reporting/v3/payment-batch-summaries?startTime=2024-03-04T00:00:00.000%2B00:00&endTime=2024-03-06T00:00:00.000Z`,
      pbs,
      'payment-batch-summaries-200.spec-example.json',
    ],
    [
      'payment-batch-summaries rolled up',
      `/reporting/v3/payment-batch-summaries?startTime=2024-03-01T00:00:00.000Z&endTime=2024-03-08T00:00:00.000Z&rollUp=day&breakdown=all_merchant`,
      pbs,
      'payment-batch-summaries-200.spec-example.json',
    ],
  ];

  for (const [name, target, schema, sampleFile] of cases) {
    it(`${name}: matches the facts §2 shape and the sample's keys and types`, async () => {
      const r = await get(target);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.type).toContain('application/hal+json');
      const parsed = schema.safeParse(r.body);
      expect(parsed.success, parsed.success ? '' : JSON.stringify(parsed.error.issues.slice(0, 5))).toBe(
        true,
      );
      if (sampleFile) expect(shapeDiff(await sample(sampleFile), r.body)).toEqual([]);
    });
  }

  it('report by id: shape and sample', async () => {
    const search = (await get(`/reporting/v3/reports?${window}&timeQueryType=executedTime`)).body as {
      reportSearchResults: { reportId: string }[];
    };
    const id = search.reportSearchResults[0]!.reportId;
    const r = await get(`/reporting/v3/reports/${id}`);
    expect(r.status).toBe(200);
    const parsed = reportById.safeParse(r.body);
    expect(parsed.success, parsed.success ? '' : JSON.stringify(parsed.error.issues)).toBe(true);
    expect(shapeDiff(await sample('report-by-id-200.spec-example.json'), r.body)).toEqual([]);
    const xml = await get(`/reporting/v3/reports/${id}`, 'application/xml');
    expect(xml.type).toContain('application/xml');
    expect(String(xml.body)).toContain(`<ReportId>${id}</ReportId>`);
  });

  it('all 19 definitions with their ids (two invented ids documented in report-layouts.ts)', async () => {
    const r = (await get('/reporting/v3/report-definitions')).body as {
      reportDefinitions: { reportDefintionName: string; reportDefinitionId: number }[];
    };
    const ids = Object.fromEntries(
      r.reportDefinitions.map((d) => [d.reportDefintionName, d.reportDefinitionId]),
    );
    expect(ids).toMatchObject({
      TransactionRequestClass: 210,
      PaymentBatchDetailClass: 211,
      ConversionDetailClass: 222,
      JPTransactionDetailClass: 270,
      GatewayTransactionRequestClass: 310,
      SubscriptionDetailClass: 620,
    });
    expect(Object.keys(ids)).toHaveLength(19);
    expect(ids['DecisionManagerEventDetailClass']).toBe(400);
    // The specification's rename is not a wire name: the service (and so the simulator) lists none.
    expect(ids['RiskDecisionEventDetailClass']).toBeUndefined();
    expect(ids['RecurringBillingDetailClass']).toBeTypeOf('number');
  });

  it('error bodies: reporting error for 400/404, the gateway shape for 401, error bean for the PUT 400, XML bean for a missing download', async () => {
    const bad = await get('/reporting/v3/reports?startTime=yesterday');
    expect(bad.status).toBe(400);
    expect(reportingError.safeParse(bad.body).success).toBe(true);
    expect(shapeDiff(await sample('error-400-reporting.spec-example.json'), bad.body)).toEqual([]);
    const none = await get(
      '/reporting/v3/reports?startTime=2023-01-01T00:00:00Z&endTime=2023-01-02T00:00:00Z&timeQueryType=reportTimeFrame',
    );
    expect(none.status).toBe(404);
    expect(reportingError.safeParse(none.body).success).toBe(true);
    const unauth = await fetch(`${sim.baseUrl}/reporting/v3/report-definitions`);
    expect(unauth.status).toBe(401);
    // The gateway answers a refused authentication {"response":{"rmsg":…}} (DOCS OAuth "Submit API
    // Requests"; the spec documents no 401 body).
    expect(await unauth.json()).toEqual({ response: { rmsg: 'Authentication Failed' } });
    const put = await signedFetch(sim.baseUrl, sim.credentials, '/reporting/v3/report-subscriptions', {
      method: 'PUT',
      body: '{"reportName":"x"}',
    });
    expect(put.status).toBe(400);
    const putBody = await put.json();
    expect(errorBean.safeParse(putBody).success).toBe(true);
    expect(shapeDiff(await sample('error-500-spec-example-net-fundings.spec-example.json'), putBody)).toEqual(
      [],
    );
    const xml = await get(
      `/reporting/v3/report-downloads?reportName=NoSuchReport&reportDate=${day}`,
      'application/xml',
    );
    expect(xml.status).toBe(404);
    const sampleXml = await readFile(
      path.join(samples, 'error-404-resource-notfound.report-downloads.xml'),
      'utf8',
    );
    const norm = (s: string) => s.replace(/\s+/g, '');
    expect(norm(String(xml.body))).toBe(norm(sampleXml));
    const json = await get(
      `/reporting/v3/report-downloads?reportName=NoSuchReport&reportDate=${day}`,
      'application/json',
    );
    expect(errorBean.safeParse(json.body).success).toBe(true);
  });

  it('CSV and XML answers of on-demand endpoints where Accept asks', async () => {
    const csv = await get(`/reporting/v3/purchase-refund-details?${window}&limit=5`, 'text/csv');
    expect(csv.type).toContain('text/csv');
    expect(String(csv.body).split('\r\n')[0]).toContain('settlements.amount');
    const xml = await get(`/reporting/v3/net-fundings?${window}`, 'application/xml');
    expect(xml.type).toContain('application/xml');
    expect(String(xml.body)).toContain('<NetFundingSummaries>');
    const nocCsv = await get(`/reporting/v3/notification-of-changes?${window}`, 'text/csv');
    expect(String(nocCsv.body).split('\r\n')[0]).toBe(
      'merchantReferenceNumber,transactionReferenceNumber,time,code,accountType,routingNumber,accountNumber,consumerName',
    );
    const pbsCsv = await get(
      `/reporting/v3/payment-batch-summaries?startTime=2024-03-04T00:00:00.000Z&endTime=2024-03-06T00:00:00.000Z`,
      'text/csv',
    );
    expect(String(pbsCsv.body)).toMatch(/^currencyCode,paymentSubTypeDescription/);
    const conv = await get(`/reporting/v3/conversion-details?${window}`, 'application/xml');
    expect(String(conv.body)).toContain('<ConversionDetail>');
  });
});
