import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { text } from 'node:stream/consumers';
import { decodeJwt } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { isApiError } from '../../../src/api/errors.js';
import { REPORT_FREQUENCIES } from '../../../src/api/types.js';
import { createMockApi, TEST_SECRET } from '../../helpers/mock-api.js';
import type { MockApi } from '../../helpers/mock-api.js';

const fixture = (name: string): object =>
  JSON.parse(readFileSync(new URL(`../../fixtures/api/${name}`, import.meta.url), 'utf8')) as object;

let api: MockApi;
afterEach(async () => {
  api.agent.assertNoPendingInterceptors();
  await api.agent.close();
});

const only = (m: MockApi) => {
  expect(m.requests).toHaveLength(1);
  return m.requests[0]!;
};

describe('report definitions', () => {
  it('lists definitions; organizationId and subscriptionType only when given', async () => {
    api = createMockApi();
    const body = fixture('report-definitions-200.spec-example.json');
    api.reply({ status: 200, body }, { status: 200, body });
    const result = await api.client.listReportDefinitions();
    expect(result).toEqual(body);
    expect(result.reportDefinitions[0]!.reportDefintionName).toBe('TransactionRequestClass');
    await api.client.listReportDefinitions({ organizationId: 'org_1', subscriptionType: 'CUSTOM' });
    expect(api.requests.map((r) => r.path)).toEqual([
      '/reporting/v3/report-definitions',
      '/reporting/v3/report-definitions?organizationId=org_1&subscriptionType=CUSTOM',
    ]);
    const headers = api.requests[0]!.headers;
    expect(headers.accept).toBe('application/hal+json, application/json');
    expect(headers['user-agent']).toMatch(/^cybs-etl\//);
    // Every request carries content-type (docs, JWT message elements: content-type, host,
    // authorization), unsigned: the signature covers host, date, request-target, v-c-merchant-id.
    expect(headers['content-type']).toBe('application/json');
    expect(headers.signature).toContain('headers="host date request-target v-c-merchant-id"');
  });

  it('gets one definition by name (encoded) with attributes and its query', async () => {
    api = createMockApi();
    const body = fixture('report-definition-by-name-200.spec-example.json');
    api.reply({ status: 200, body });
    const result = await api.client.getReportDefinition({
      reportDefinitionName: 'Transaction Request/Class',
      subscriptionType: 'CLASSIC',
      reportMimeType: 'text/csv',
    });
    expect(result.attributes[0]!.supportedType).toContain('ics_score');
    expect(only(api).path).toBe(
      '/reporting/v3/report-definitions/Transaction%20Request%2FClass?subscriptionType=CLASSIC&reportMimeType=text%2Fcsv',
    );
  });
});

describe('report subscriptions', () => {
  const subscription = {
    reportDefinitionName: 'TransactionRequestClass',
    reportFields: ['Request.RequestID', 'Request.TransactionDate'],
    reportMimeType: 'text/csv' as const,
    reportFrequency: 'DAILY',
    reportName: 'cybs-etl daily',
    timezone: 'UTC',
    startTime: '0000',
  };

  it('lists, gets by name, deletes', async () => {
    api = createMockApi();
    api.reply(
      { status: 200, body: fixture('report-subscriptions-200.spec-example.json') },
      { status: 200, body: fixture('report-subscription-by-name-200.spec-example.json') },
      { status: 200 },
    );
    expect((await api.client.listSubscriptions()).subscriptions).toHaveLength(1);
    expect((await api.client.getSubscription('My Report+1')).reportName).toBe(
      'My Transaction Request Detail Report',
    );
    await api.client.deleteSubscription('My Report+1', { organizationId: 'org1' });
    expect(api.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /reporting/v3/report-subscriptions',
      'GET /reporting/v3/report-subscriptions/My%20Report%2B1',
      'DELETE /reporting/v3/report-subscriptions/My%20Report%2B1?organizationId=org1',
    ]);
    expect(api.requests[2]!.headers.digest).toBeUndefined();
  });

  it("PUT creates or updates ('updated'), 304 is 'not-modified', and the JSON body is digested as sent", async () => {
    api = createMockApi();
    api.reply({ status: 200 }, { status: 304 });
    expect(await api.client.putSubscription(subscription)).toBe('updated');
    expect(await api.client.putSubscription(subscription)).toBe('not-modified');
    const put = api.requests[0]!;
    expect(put.method).toBe('PUT');
    expect(put.path).toBe('/reporting/v3/report-subscriptions');
    expect(put.headers['content-type']).toBe('application/json');
    expect(JSON.parse(put.body!)).toEqual(subscription);
    const { createHash } = await import('node:crypto');
    expect(put.headers.digest).toBe(`SHA-256=${createHash('sha256').update(put.body!).digest('base64')}`);
    expect(put.headers.signature).toContain('headers="host date request-target digest v-c-merchant-id"');
  });
});

describe('report search, metadata, one-time reports', () => {
  it('search: required parameters, stable order, values that cannot split the query', async () => {
    api = createMockApi();
    const body = fixture('reports-search-200.spec-example.json');
    api.reply({ status: 200, body });
    const result = await api.client.searchReports({
      startTime: new Date('2024-03-01T00:00:00Z'),
      endTime: '2024-03-02T00:00:00+05:00',
      timeQueryType: 'executedTime',
      reportMimeType: 'text/csv',
      reportFrequency: 'DAILY',
      reportName: 'a&b=c #1',
      reportDefinitionId: 210,
      reportStatus: 'COMPLETED',
    });
    expect(result.reportSearchResults[0]!.reportId).toBe('6d9cb5b6-0e97-2d03-e053-7cb8d30af52e');
    expect(result.reportSearchResults[0]!._link?.reportDownload?.href).toContain('report-downloads');
    expect(only(api).path).toBe(
      '/reporting/v3/reports?startTime=2024-03-01T00%3A00%3A00.000Z&endTime=2024-03-02T00%3A00%3A00%2B05%3A00' +
        '&timeQueryType=executedTime&reportMimeType=text%2Fcsv&reportFrequency=DAILY&reportName=a%26b%3Dc%20%231' +
        '&reportDefinitionId=210&reportStatus=COMPLETED',
    );
    const query = new URL(`https://x${only(api).path}`).searchParams;
    expect(query.get('reportName')).toBe('a&b=c #1');
    expect([...query.keys()]).toHaveLength(8);
  });

  it('search: reportFrequency takes the values the SDK lists', () => {
    api = createMockApi();
    const sdk = readFileSync(
      new URL('../../../node_modules/cybersource-rest-client/src/api/ReportsApi.js', import.meta.url),
      'utf8',
    );
    const listed = /opts\.reportFrequency Valid Report Frequency\s+Valid values:((?:\s+-\s+\w+)+)/.exec(
      sdk,
    )?.[1];
    expect(
      listed
        ?.split('-')
        .map((v) => v.trim())
        .filter(Boolean),
    ).toEqual([...REPORT_FREQUENCIES]);
  });

  it('search: 404 is "no data", not retried', async () => {
    api = createMockApi();
    api.reply({ status: 404, body: { reason: 'NOT_FOUND', message: 'No Reports Found' } });
    const error = await api.client
      .searchReports({ startTime: 'a', endTime: 'b', timeQueryType: 'reportTimeFrame', organizationId: 'o1' })
      .catch((e: unknown) => e);
    expect(isApiError(error) && [error.code, error.noData, error.status]).toEqual([
      'API_NOT_FOUND',
      true,
      404,
    ]);
    expect(only(api).path).toBe(
      '/reporting/v3/reports?organizationId=o1&startTime=a&endTime=b&timeQueryType=reportTimeFrame',
    );
  });

  it('search: a body without the fields we rely on is an invalid response', async () => {
    api = createMockApi();
    api.reply({ status: 200, body: { reportSearchResults: [{ reportName: 'x' }] } });
    const error = await api.client
      .searchReports({ startTime: 'a', endTime: 'b', timeQueryType: 'executedTime' })
      .catch((e: unknown) => e);
    expect(isApiError(error) && error.code).toBe('API_INVALID_RESPONSE');
    expect((error as Error).message).toContain('reportSearchResults.0.reportId');
  });

  it('report metadata by id', async () => {
    api = createMockApi();
    api.reply({ status: 200, body: fixture('report-by-id-200.spec-example.json') });
    const report = await api.client.getReport('6da01922-bb8e-a1fb-e053-7cb8d30ade29');
    expect(report.reportStatus).toBe('COMPLETED');
    expect(only(api).path).toBe('/reporting/v3/reports/6da01922-bb8e-a1fb-e053-7cb8d30ade29');
  });

  it("one-time report: POST, 201 → 'created', 304 → 'not-modified'", async () => {
    api = createMockApi();
    api.reply({ status: 201 }, { status: 304 });
    const report = {
      reportDefinitionName: 'TransactionRequestClass',
      reportFields: ['Request.RequestID'],
      reportName: 'once',
      reportStartTime: '2024-03-01T00:00:00Z',
      reportEndTime: '2024-03-02T00:00:00Z',
    };
    expect(await api.client.createReport(report, { organizationId: 'o1' })).toBe('created');
    expect(await api.client.createReport(report)).toBe('not-modified');
    expect(api.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /reporting/v3/reports?organizationId=o1',
      'POST /reporting/v3/reports',
    ]);
  });
});

describe('report downloads', () => {
  it('streams the file with the chosen Accept; reportDate is yyyy-MM-dd', async () => {
    api = createMockApi();
    const csv =
      'org,Daily,PaymentBatchDetail,1.10,2023-10-10T07:00:00Z to 2023-10-11T07:00:00Z\nbatch_id,amount\n1,2.00\n';
    api.reply({ status: 200, body: csv, headers: { 'content-type': 'text/csv' } });
    const download = await api.client.downloadReport({
      reportName: 'PaymentBatchDetailReport_Daily_Classic',
      reportDate: new Date('2023-10-11T00:00:00Z'),
      accept: 'text/csv',
      organizationId: 'wfgsulair',
    });
    expect(download.contentType).toBe('text/csv');
    expect(typeof download.body.pipe).toBe('function');
    expect(await text(download.body)).toBe(csv);
    const req = only(api);
    expect(req.path).toBe(
      '/reporting/v3/report-downloads?organizationId=wfgsulair&reportDate=2023-10-11&reportName=PaymentBatchDetailReport_Daily_Classic',
    );
    expect(req.headers.accept).toBe('text/csv');
  });

  it('404 (XML error bean) is API_NOT_FOUND with noData; a bad date is refused before any request', async () => {
    api = createMockApi();
    api.reply({
      status: 404,
      body: readFileSync(
        new URL('../../fixtures/api/error-404-resource-notfound.report-downloads.xml', import.meta.url),
        'utf8',
      ),
      headers: { 'content-type': 'application/xml' },
    });
    const error = await api.client
      .downloadReport({ reportName: 'r', reportDate: '2024-03-09' })
      .catch((e: unknown) => e);
    expect(isApiError(error) && [error.code, error.noData, error.body?.code]).toEqual([
      'API_NOT_FOUND',
      true,
      'RESOURCE_NOTFOUND',
    ]);
    expect(only(api).headers.accept).toBe('application/xml, text/csv');
    await expect(
      api.client.downloadReport({ reportName: 'r', reportDate: '20240309' }),
    ).rejects.toMatchObject({
      code: 'API_INVALID_PARAMS',
    });
  });
});

describe('on-demand reports', () => {
  it('purchase and refund details: every parameter in order, money stays text', async () => {
    api = createMockApi();
    api.reply({ status: 200, body: fixture('purchase-refund-details-200.spec-example.json') });
    const page = await api.client.getPurchaseRefundDetails({
      organizationId: 'org1',
      startTime: '2024-03-01T00:00:00Z',
      endTime: '2024-03-02T00:00:00Z',
      paymentSubtype: 'VI',
      viewBy: 'submissionDate',
      groupName: 'g 1',
      offset: 0,
      limit: 2000,
    });
    expect(page.settlements[0]!.amount).toBe('23.00');
    expect(page.requestDetails[0]!.requestId).toBe('12345678901234567890123456');
    expect(only(api).path).toBe(
      '/reporting/v3/purchase-refund-details?organizationId=org1&startTime=2024-03-01T00%3A00%3A00Z' +
        '&endTime=2024-03-02T00%3A00%3A00Z&paymentSubtype=VI&viewBy=submissionDate&groupName=g%201&offset=0&limit=2000',
    );
  });

  it('purchase and refund details as bytes: the body as received, json() as getPurchaseRefundDetails', async () => {
    api = createMockApi();
    const body = fixture('purchase-refund-details-200.spec-example.json');
    const text = `\ufeff${JSON.stringify(body)}`;
    api.reply(
      { status: 200, body },
      { status: 200, body: text, headers: { 'content-type': 'application/json' } },
      { status: 200, body: '{"requestDetails": [1', headers: { 'content-type': 'application/json' } },
      { status: 200, body: { settlements: 'x' } },
    );
    const params = {
      startTime: '2024-03-01T00:00:00Z',
      endTime: '2024-03-02T00:00:00Z',
      offset: 0,
      limit: 2000,
    };
    const expected = await api.client.getPurchaseRefundDetails(params);
    const page = await api.client.getPurchaseRefundDetailsPage(params);
    expect(page.bytes.toString('utf8')).toBe(text);
    // A byte order mark is skipped, as undici's text() skips it.
    expect(page.json()).toEqual(expected);
    const notJson = await api.client.getPurchaseRefundDetailsPage(params);
    expect(() => notJson.json()).toThrow(/not JSON \(\{"requestDetails": \[1…\)/);
    const unexpected = await api.client.getPurchaseRefundDetailsPage(params);
    expect(() => unexpected.json()).toThrow(/unexpected body: at "settlements"/);
    expect(new Set(api.requests.map((r) => r.path)).size).toBe(1);
  });

  it('net fundings, conversion details, notification of changes', async () => {
    api = createMockApi();
    api.reply(
      { status: 200, body: fixture('net-fundings-200.spec-example.json') },
      { status: 200, body: fixture('conversion-details-200.spec-example.json') },
      { status: 200, body: fixture('notification-of-changes-200.spec-example.json') },
    );
    const range = { startTime: '2024-03-01T00:00:00Z', endTime: '2024-03-02T00:00:00Z' };
    expect((await api.client.getNetFundings({ ...range, groupName: 'g' })).netTotal[0]!.value).toBe('10.01');
    expect((await api.client.getConversionDetails(range)).conversionDetails[0]!.newDecision).toBe('ACCEPT');
    expect((await api.client.getNotificationOfChanges(range)).notificationOfChanges).toHaveLength(1);
    const q = 'startTime=2024-03-01T00%3A00%3A00Z&endTime=2024-03-02T00%3A00%3A00Z';
    expect(api.requests.map((r) => r.path)).toEqual([
      `/reporting/v3/net-fundings?${q}&groupName=g`,
      `/reporting/v3/conversion-details?${q}`,
      `/reporting/v3/notification-of-changes?${q}`,
    ]);
  });

  it('notification of changes: no organizationId (the endpoint defines startTime and endTime only)', async () => {
    // SDK NotificationOfChangesApi.getNotificationOfChangeReport(startTime, endTime): no other
    // parameter. A meta key reads an organization's changes by acting as that merchant.
    const body = fixture('notification-of-changes-200.spec-example.json');
    const range = { startTime: '2024-03-01T00:00:00Z', endTime: '2024-03-02T00:00:00Z' };
    const q = 'startTime=2024-03-01T00%3A00%3A00Z&endTime=2024-03-02T00%3A00%3A00Z';
    const logged: string[] = [];
    const logger = { info: (_: unknown, m: string) => logged.push(m), warn: () => {}, debug: () => {} };
    api = createMockApi({
      credentials: { portfolioId: 'portfolio1' },
      deps: { logger: logger as never },
    });
    api.reply({ status: 200, body }, { status: 200, body }, { status: 200, body });
    await api.client.getNotificationOfChanges({ ...range, organizationId: 'org_b' });
    await api.client.getNotificationOfChanges({ ...range, organizationId: 'org_c' });
    await api.client.getNotificationOfChanges({ ...range, organizationId: 'merchant7' });
    expect(api.requests.map((r) => r.path)).toEqual(
      [1, 2, 3].map(() => `/reporting/v3/notification-of-changes?${q}`),
    );
    expect(api.requests.map((r) => r.headers['v-c-merchant-id'])).toEqual(['org_b', 'org_c', 'merchant7']);
    // Signed with the portfolio: the signing string's v-c-merchant-id line is the portfolio id.
    const req = api.requests[0]!;
    const signingString = [
      `host: ${req.headers.host}`,
      `date: ${req.headers.date}`,
      `request-target: get ${req.path}`,
      'v-c-merchant-id: portfolio1',
    ].join('\n');
    const expected = createHmac('sha256', Buffer.from(TEST_SECRET, 'base64'))
      .update(signingString)
      .digest('base64');
    expect(req.headers.signature).toContain(`signature="${expected}"`);
    expect(logged.filter((m) => m.includes('notification-of-changes'))).toHaveLength(1);
    await api.agent.close();

    // JWT: the claim carries the merchant acted for, the issuer is the portfolio.
    api = createMockApi({ credentials: { auth: 'jwt', portfolioId: 'portfolio1' } });
    api.reply({ status: 200, body });
    await api.client.getNotificationOfChanges({ ...range, organizationId: 'org_b' });
    const claims = decodeJwt(only(api).headers.authorization!.replace(/^Bearer /, ''));
    expect(claims['v-c-merchant-id']).toBe('org_b');
    expect(claims.iss).toBe('portfolio1');
    expect(only(api).path).toBe(`/reporting/v3/notification-of-changes?${q}`);
    await api.agent.close();

    // A merchant's own key cannot read another organization's changes: refused before sending.
    api = createMockApi();
    await expect(api.client.getNotificationOfChanges({ ...range, organizationId: 'org_b' })).rejects.toThrow(
      /notification-of-changes takes no organizationId, so the key of merchant merchant7 reads only that merchant's changes, not organization org_b's/,
    );
    expect(api.requests).toHaveLength(0);
  });

  it('payment batch summaries: times as toISOString() writes them (…Z), rollUp, breakdown, startDayOfWeek', async () => {
    // The SDK's example (PaymentBatchSummariesApi: 2018-01-01T00:00:00.000Z) and CyberSource's own
    // sample (get-payment-batch-summary-data.js: '2024-09-01T12:00:00Z') write UTC with Z; the
    // spec's format: date-time is RFC 3339, where an offset needs its colon (+00:00, never +0000).
    api = createMockApi();
    api.reply({ status: 200, body: fixture('payment-batch-summaries-200.spec-example.json') });
    const result = await api.client.getPaymentBatchSummaries({
      startTime: new Date('2024-03-01T00:00:00Z'),
      endTime: '2024-03-02T00:00:00Z',
      rollUp: 'day',
      breakdown: 'all_merchant',
      startDayOfWeek: 1,
    });
    expect(result.paymentBatchSummaries[0]!.salesAmount).toBe('5000.01');
    expect(only(api).path).toBe(
      '/reporting/v3/payment-batch-summaries?startTime=2024-03-01T00%3A00%3A00.000Z' +
        '&endTime=2024-03-02T00%3A00%3A00Z&rollUp=day&breakdown=all_merchant&startDayOfWeek=1',
    );
  });

  it('an on-demand report as CSV is streamed with that Accept', async () => {
    api = createMockApi();
    api.reply({ status: 200, body: 'a,b\n1,2\n', headers: { 'content-type': 'text/csv' } });
    const download = await api.client.downloadOnDemandReport(
      'purchase-refund-details',
      { startTime: 's', endTime: 'e', limit: 10 },
      'text/csv',
    );
    expect(await text(download.body)).toBe('a,b\n1,2\n');
    expect(only(api).headers.accept).toBe('text/csv');
    expect(only(api).path).toBe('/reporting/v3/purchase-refund-details?startTime=s&endTime=e&limit=10');
  });
});

describe('generic request (api command, token management)', () => {
  it('keeps the caller query order, re-encodes it canonically, appends organizationId', async () => {
    api = createMockApi();
    api.reply({ status: 200, body: { ok: true } });
    const response = await api.client.request({
      method: 'GET',
      path: '/reporting/v3/reports?startTime=2024-01-01T00:00:00Z&reportName=a b',
      organizationId: 'org1',
    });
    expect(response.json).toEqual({ ok: true });
    expect(only(api).path).toBe(
      '/reporting/v3/reports?startTime=2024-01-01T00%3A00%3A00Z&reportName=a%20b&organizationId=org1',
    );
  });

  it('POST to /tms/v2 with a JSON body', async () => {
    api = createMockApi();
    api.reply({ status: 201, body: { id: 'C1' } });
    const response = await api.client.request({
      method: 'POST',
      path: '/tms/v2/customers',
      body: { email: 'a@b.c' },
    });
    expect(response.status).toBe(201);
    expect(only(api).body).toBe('{"email":"a@b.c"}');
  });
});

describe('signing what is sent', () => {
  it('http-signature: the request-target signed is the path on the wire', async () => {
    api = createMockApi();
    api.reply({ status: 200, body: { reportSearchResults: [] } });
    await api.client.searchReports({
      startTime: 'x y',
      endTime: 'z+1',
      timeQueryType: 'executedTime',
      reportName: 'q&r',
    });
    const req = only(api);
    const signingString = [
      `host: ${req.headers.host}`,
      `date: ${req.headers.date}`,
      `request-target: get ${req.path}`,
      `v-c-merchant-id: ${req.headers['v-c-merchant-id']}`,
    ].join('\n');
    const expected = createHmac('sha256', Buffer.from(TEST_SECRET, 'base64'))
      .update(signingString)
      .digest('base64');
    expect(req.headers.signature).toContain(`signature="${expected}"`);
    expect(req.headers.host).toBe('apitest.cybersource.com');
  });

  it('http-signature: one warning per client that CyberSource ends it, naming CYBS_AUTH and jwt', async () => {
    // DOCS rest-getting-started restgs-http-message-intro: "Deprecating September 2026: HTTP
    // Signature Messaging"; SDK README marks HTTP Signature deprecated.
    const warned: string[] = [];
    const logger = { warn: (m: string) => warned.push(m), info: () => {}, debug: () => {} };
    api = createMockApi({ deps: { logger: logger as never } });
    api.reply({ status: 200, body: { subscriptions: [] } }, { status: 200, body: { subscriptions: [] } });
    await api.client.listSubscriptions();
    await api.client.listSubscriptions();
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatch(
      /^CYBS_AUTH=http-signature: CyberSource announced the end of HTTP Signature authentication for September 2026, so the service may refuse it; set CYBS_AUTH=jwt\b/,
    );
    await api.agent.close();
    warned.length = 0;
    api = createMockApi({ credentials: { auth: 'jwt' }, deps: { logger: logger as never } });
    expect(warned).toEqual([]);
  });

  it('jwt: request-resource-path is the path on the wire; no v-c-merchant-id header', async () => {
    api = createMockApi({ credentials: { auth: 'jwt' } });
    api.reply({ status: 200, body: { subscriptions: [] } });
    await api.client.listSubscriptions({ organizationId: 'o-1' });
    const req = only(api);
    const claims = decodeJwt(req.headers.authorization!.replace(/^Bearer /, ''));
    expect(claims['request-resource-path']).toBe(req.path);
    expect(claims['request-host']).toBe('apitest.cybersource.com');
    expect(claims['request-method']).toBe('get');
    expect(req.headers['v-c-merchant-id']).toBeUndefined();
    expect(req.headers.signature).toBeUndefined();
  });
});
