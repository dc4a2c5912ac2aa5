/**
 * The request builders (src/api/endpoints.ts) against the official SDK (cybersource-rest-client,
 * a dev dependency only): the same call made through the SDK's own api class, whose ApiClient is
 * replaced by one that records what callApi is given (nothing is sent), must give the same
 * method, path, query names and values, body and an Accept the SDK lists; and each parameter the
 * SDK requires must be one the builder refuses to go without. No transport, no network.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { resolveTarget } from '../../../src/api/deployments.js';
import * as endpoints from '../../../src/api/endpoints.js';
import { JSON_ACCEPT } from '../../../src/api/transport.js';
import type { ApiRequest } from '../../../src/api/transport.js';
import { CybsError } from '../../../src/errors.js';

const require = createRequire(import.meta.url);

type SdkMethod = (...args: unknown[]) => unknown;
type SdkApi = Record<string, SdkMethod>;

/** ApiClient's own helpers, used as callApi uses them (path parameters, query normalisation). */
const sdkClient = (
  require('cybersource-rest-client/src/ApiClient.js') as {
    prototype: {
      buildUrl(path: string, pathParams: object): string;
      normalizeParams(params: object): Record<string, string>;
    };
  }
).prototype;

/** What the SDK would send, as its ApiClient.callApi receives it. */
interface SdkRequest {
  method: string;
  path: string;
  query: [string, string][];
  body: unknown;
  accepts: string[];
}

/** A call through the SDK's api class `apiName`, recorded instead of sent. */
function sdkCall(apiName: string, method: string, args: unknown[]): SdkRequest {
  const Api = require(`cybersource-rest-client/src/api/${apiName}.js`) as new (
    config: object,
    client: object,
  ) => SdkApi;
  const sent: SdkRequest[] = [];
  const apiClient = {
    // Only what the api classes read: request and response encryption (MLE) off.
    merchantConfig: {
      runEnvironment: 'apitest.cybersource.com',
      getEnableRequestMLEForOptionalApisGlobally: () => false,
      getDisableRequestMLEForMandatoryApisGlobally: () => false,
      getInternalMapToControlRequestMLEonAPI: () => undefined,
      getEnableResponseMleGlobally: () => false,
      getInternalMapToControlResponseMLEonAPI: () => undefined,
    },
    setConfiguration() {},
    callApi(
      path: string,
      httpMethod: string,
      pathParams: object,
      queryParams: object,
      _headerParams: object,
      _formParams: object,
      body: unknown,
      _authNames: unknown,
      _contentTypes: unknown,
      accepts: string[],
    ) {
      sent.push({
        method: httpMethod,
        path: sdkClient.buildUrl.call(sdkClient, path, pathParams),
        query: Object.entries(sdkClient.normalizeParams.call(sdkClient, queryParams)),
        body: body ?? undefined,
        accepts,
      });
    },
  };
  const api = new Api({}, apiClient);
  api[method]!.call(api, ...args);
  expect(sent).toHaveLength(1);
  return sent[0]!;
}

/** The SDK method's required parameters, as it checks them ("verify the required parameter 'x' is set"). */
function sdkRequired(apiName: string, method: string): { params: string[]; body: string | undefined } {
  const Api = require(`cybersource-rest-client/src/api/${apiName}.js`) as new (
    config: object,
    client: object,
  ) => SdkApi;
  const source = String(new Api({}, { setConfiguration() {} })[method]);
  expect(source).toContain('callApi');
  const params = [...source.matchAll(/verify the required parameter '(\w+)' is set/g)].map((m) => m[1]!);
  return { params, body: /var postBody = (\w+);/.exec(source)?.[1] };
}

const byName = (a: readonly [string, string], b: readonly [string, string]) =>
  a[0].localeCompare(b[0]) || a[1].localeCompare(b[1]);
const mediaType = (type: string) => type.split(';')[0]!.trim().toLowerCase();

/** Ours as the SDK's shape: query without the absent values, values as sent, Accept as sent. */
function compared(request: ApiRequest) {
  return {
    method: request.method,
    path: request.path,
    query: (request.query ?? [])
      .filter(([, value]) => value !== undefined)
      .map(([name, value]): [string, string] => [name, String(value)])
      .sort(byName),
    body: request.body,
    accept: (request.accept ?? JSON_ACCEPT).split(',').map(mediaType),
  };
}

function expectSameRequest(ours: ApiRequest, sdk: SdkRequest): void {
  const mine = compared(ours);
  expect({ method: mine.method, path: mine.path, query: mine.query, body: mine.body }).toEqual({
    method: sdk.method,
    path: sdk.path,
    query: [...sdk.query].sort(byName),
    body: sdk.body,
  });
  // We ask for a type the SDK lists for the operation.
  expect(mine.accept.filter((type) => sdk.accepts.map(mediaType).includes(type))).not.toEqual([]);
}

const target = resolveTarget({}, 'test');
const key = { merchantId: 'merchant7' };
const subscription = {
  reportDefinitionName: 'PaymentBatchDetailClass',
  reportFields: ['Batch.BatchID', 'PaymentData.Amount'],
  reportMimeType: 'application/xml' as const,
  reportFrequency: 'WEEKLY',
  reportName: 'weekly batches',
  timezone: 'America/Los_Angeles',
  startTime: '0130',
  startDay: 2,
  reportFilters: { 'Application.Name': ['ics_bill'] },
  reportPreferences: { signedAmounts: true, fieldNameConvention: 'SOAPI' as const },
};
const adhocReport = {
  reportDefinitionName: 'TransactionRequestClass',
  reportFields: ['Request.RequestID'],
  reportName: 'once',
  reportStartTime: '2024-03-01T00:00:00Z',
  reportEndTime: '2024-03-02T00:00:00Z',
};
const range = { startTime: new Date('2024-03-01T00:00:00Z'), endTime: '2024-03-02T00:00:00+05:00' };

/**
 * One case per builder: the parameters (named as the SDK names them), our request built from
 * them, and the SDK call (api class, method, arguments) made from the same values.
 */
interface Case {
  name: string;
  values: Record<string, unknown>;
  ours: (v: Record<string, unknown>) => ApiRequest;
  sdk: [api: string, method: string, args: (v: Record<string, unknown>) => unknown[]];
}

/* eslint-disable @typescript-eslint/no-explicit-any -- the values are typed by each builder. */
const cases: Case[] = [
  {
    name: 'listReportDefinitions',
    values: { subscriptionType: 'CUSTOM', organizationId: 'org_1' },
    ours: (v) => endpoints.listReportDefinitions(v as any).request,
    sdk: ['ReportDefinitionsApi', 'getResourceV2Info', (v) => [v]],
  },
  {
    name: 'getReportDefinition',
    values: {
      reportDefinitionName: 'Transaction Request/Class',
      subscriptionType: 'CLASSIC',
      reportMimeType: 'text/csv',
      organizationId: 'org_1',
    },
    ours: (v) => endpoints.getReportDefinition(v as any).request,
    sdk: ['ReportDefinitionsApi', 'getResourceInfoByReportDefinition', (v) => [v.reportDefinitionName, v]],
  },
  {
    name: 'listSubscriptions',
    values: { organizationId: 'org_1' },
    ours: (v) => endpoints.listSubscriptions(v).request,
    sdk: ['ReportSubscriptionsApi', 'getAllSubscriptions', (v) => [v]],
  },
  {
    name: 'getSubscription',
    values: { reportName: 'My Report+1', organizationId: 'org_1' },
    ours: (v) => endpoints.getSubscription(v.reportName as string, v).request,
    sdk: ['ReportSubscriptionsApi', 'getSubscription', (v) => [v.reportName, v]],
  },
  {
    name: 'putSubscription',
    values: { createReportSubscriptionRequest: subscription, organizationId: 'org_1' },
    ours: (v) => endpoints.putSubscription(v.createReportSubscriptionRequest as any, v),
    sdk: ['ReportSubscriptionsApi', 'createSubscription', (v) => [v.createReportSubscriptionRequest, v]],
  },
  {
    name: 'deleteSubscription',
    values: { reportName: 'My Report+1', organizationId: 'org_1' },
    ours: (v) => endpoints.deleteSubscription(v.reportName as string, v),
    sdk: ['ReportSubscriptionsApi', 'deleteSubscription', (v) => [v.reportName, v]],
  },
  {
    name: 'searchReports',
    values: {
      ...range,
      timeQueryType: 'executedTime',
      organizationId: 'org_1',
      reportMimeType: 'text/csv',
      reportFrequency: 'DAILY',
      reportName: 'a&b=c #1',
      reportDefinitionId: 210,
      reportStatus: 'COMPLETED',
    },
    ours: (v) => endpoints.searchReports(v as any).request,
    sdk: ['ReportsApi', 'searchReports', (v) => [v.startTime, v.endTime, v.timeQueryType, v]],
  },
  {
    name: 'getReport',
    values: { reportId: '6da01922-bb8e-a1fb-e053-7cb8d30ade29', organizationId: 'org_1' },
    ours: (v) => endpoints.getReport(v.reportId as string, v).request,
    sdk: ['ReportsApi', 'getReportByReportId', (v) => [v.reportId, v]],
  },
  {
    name: 'createReport',
    values: { createAdhocReportRequest: adhocReport, organizationId: 'org_1' },
    ours: (v) => endpoints.createReport(v.createAdhocReportRequest as any, v),
    sdk: ['ReportsApi', 'createReport', (v) => [v.createAdhocReportRequest, v]],
  },
  {
    name: 'downloadReport',
    values: { reportDate: '2024-03-09', reportName: 'Daily TRR & more', organizationId: 'org_1' },
    ours: (v) => endpoints.downloadReport(v as any, target),
    sdk: ['ReportDownloadsApi', 'downloadReport', (v) => [v.reportDate, v.reportName, v]],
  },
  {
    name: 'getConversionDetails',
    values: { ...range, organizationId: 'org_1' },
    ours: (v) => endpoints.getConversionDetails(v as any).request,
    sdk: ['ConversionDetailsApi', 'getConversionDetail', (v) => [v.startTime, v.endTime, v]],
  },
  {
    name: 'getNotificationOfChanges',
    values: { ...range },
    ours: (v) => endpoints.getNotificationOfChanges(v as any, key).request,
    sdk: ['NotificationOfChangesApi', 'getNotificationOfChangeReport', (v) => [v.startTime, v.endTime]],
  },
  {
    name: 'getPurchaseRefundDetails',
    values: {
      ...range,
      organizationId: 'org_1',
      paymentSubtype: 'VI',
      viewBy: 'submissionDate',
      groupName: 'g 1',
      offset: 0,
      limit: 2000,
    },
    ours: (v) => endpoints.getPurchaseRefundDetails(v as any).request,
    sdk: ['PurchaseAndRefundDetailsApi', 'getPurchaseAndRefundDetails', (v) => [v.startTime, v.endTime, v]],
  },
  {
    name: 'downloadOnDemandReport (purchase-refund-details as CSV)',
    values: { ...range, organizationId: 'org_1', offset: 2000, limit: 2000 },
    ours: (v) => endpoints.downloadOnDemandReport('purchase-refund-details', v as any, 'text/csv', key),
    sdk: ['PurchaseAndRefundDetailsApi', 'getPurchaseAndRefundDetails', (v) => [v.startTime, v.endTime, v]],
  },
  {
    name: 'getNetFundings',
    values: { ...range, organizationId: 'org_1', groupName: 'g' },
    ours: (v) => endpoints.getNetFundings(v as any).request,
    sdk: ['NetFundingsApi', 'getNetFundingDetails', (v) => [v.startTime, v.endTime, v]],
  },
  {
    name: 'getPaymentBatchSummaries',
    values: {
      ...range,
      organizationId: 'org_1',
      rollUp: 'day',
      breakdown: 'all_merchant',
      startDayOfWeek: 1,
    },
    ours: (v) => endpoints.getPaymentBatchSummaries(v as any).request,
    sdk: ['PaymentBatchSummariesApi', 'getPaymentBatchSummary', (v) => [v.startTime, v.endTime, v]],
  },
];
/* eslint-enable @typescript-eslint/no-explicit-any */

describe('each builder sends what the SDK sends for the same call', () => {
  it.each(cases)('$name', ({ values, ours, sdk: [api, method, args] }) => {
    expectSameRequest(ours(values), sdkCall(api, method, args(values)));
  });

  it.each(cases)('$name: needs the parameters the SDK requires, and only those', ({ values, ours, sdk }) => {
    const [api, method, args] = sdk;
    const required = sdkRequired(api, method);
    // With only the required parameters, both send the same request.
    const minimal = Object.fromEntries(required.params.map((name) => [name, values[name]]));
    expectSameRequest(ours(minimal), sdkCall(api, method, args(minimal)));
    for (const name of required.params) {
      // The SDK refuses the call without it ...
      expect(() => sdkCall(api, method, args({ ...values, [name]: undefined }))).toThrow(
        `Missing the required parameter '${name}'`,
      );
      // ... and so does the builder, except for a body, which its type makes required and which
      // the comparison above holds to the SDK's.
      if (name === required.body) continue;
      let refusal: unknown;
      try {
        ours({ ...values, [name]: undefined });
      } catch (error) {
        refusal = error;
      }
      expect(refusal, name).toBeInstanceOf(CybsError);
      expect(refusal).toMatchObject({ code: 'API_INVALID_PARAMS', message: `${name} is required.` });
    }
  });
});

describe('requests to any path (the api command, the token management API)', () => {
  it('GET /tms/v2/customers/{customerId}: the path encoded as the SDK encodes a path parameter', () => {
    const request = endpoints.request({ method: 'GET', path: '/tms/v2/customers/C 1+2' });
    expectSameRequest(request, sdkCall('CustomerApi', 'getCustomer', ['C 1+2', {}]));
    // A segment already encoded keeps its meaning.
    expect(endpoints.request({ method: 'GET', path: '/tms/v2/customers/C%201%2B2' }).path).toBe(request.path);
  });

  it('POST /tms/v2/customers with a JSON body', () => {
    const body = { buyerInformation: { email: 'a@b.c' } };
    const request = endpoints.request({ method: 'POST', path: '/tms/v2/customers', body });
    expectSameRequest(request, sdkCall('CustomerApi', 'postCustomer', [body, {}]));
  });

  it('keeps the query of the path in order, then the extra query, then organizationId once', () => {
    expect(
      endpoints.request({
        method: 'GET',
        path: ' reporting/v3/reports?b=1&a=2 ',
        query: { c: 'x y', d: undefined },
        organizationId: 'org1',
        accept: 'text/csv',
      }),
    ).toEqual({
      method: 'GET',
      path: '/reporting/v3/reports',
      query: [
        ['b', '1'],
        ['a', '2'],
        ['c', 'x y'],
        ['d', undefined],
        ['organizationId', 'org1'],
      ],
      accept: 'text/csv',
      operation: 'request',
    });
    expect(
      endpoints.request({ method: 'GET', path: '/p?organizationId=a', organizationId: 'b' }).query,
    ).toEqual([['organizationId', 'a']]);
  });
});

describe('what the SDK cannot show', () => {
  it('notification-of-changes acts for another organization only with a meta key', () => {
    const meta = { merchantId: 'merchant7', portfolioId: 'portfolio1' };
    const of = (organizationId: string | undefined, signer: endpoints.SigningKey) =>
      endpoints.getNotificationOfChanges({ ...range, organizationId }, signer).request.merchantId;
    expect(of('org_b', meta)).toBe('org_b');
    expect(of('merchant7', meta)).toBeUndefined();
    expect(of(undefined, key)).toBeUndefined();
    expect(of('merchant7', key)).toBeUndefined();
    expect(() => of('org_b', key)).toThrow(/key of merchant merchant7 reads only that merchant's changes/);
  });

  it('a search result download link: its query, sent to the target, organizationId added unless it has one', () => {
    const href =
      '/reporting/v3/report-downloads?reportDate=2024-03-09&reportName=r&reportTime=10:00:00+05:00';
    expect(
      endpoints.downloadReport({ reportName: 'x', reportDate: 'y', href, organizationId: 'o' }, target),
    ).toMatchObject({
      path: '/reporting/v3/report-downloads',
      query: [
        ['organizationId', 'o'],
        ['reportDate', '2024-03-09'],
        ['reportName', 'r'],
        ['reportTime', '10:00:00+05:00'],
      ],
      accept: endpoints.DOWNLOAD_ACCEPT,
      notFoundMeansNoData: true,
    });
    expect(
      endpoints
        .downloadReport(
          { reportName: 'x', reportDate: 'y', href: `${href}&organizationId=p`, organizationId: 'o' },
          target,
        )
        .query?.filter(([name]) => name === 'organizationId'),
    ).toEqual([['organizationId', 'p']]);
  });

  it('JSON operations carry the schema their answer must match; a 404 is "no data" where it means that', () => {
    const prd = endpoints.getPurchaseRefundDetails({ ...range });
    expect(prd.fastCheck).toBeTypeOf('function');
    expect(prd.schema.safeParse({ requestDetails: 'x' }).success).toBe(false);
    expect(
      endpoints.searchReports({ ...range, timeQueryType: 'executedTime' }).request.notFoundMeansNoData,
    ).toBe(true);
    expect(endpoints.getReport('r').request.notFoundMeansNoData).toBeUndefined();
  });
});
