/* eslint-disable @typescript-eslint/no-explicit-any -- JSON answers are read loosely here; their shapes are checked by simulator-contract.test.ts */
/**
 * Behaviour of the simulator over HTTP: subscriptions, search, report readiness and reportDate,
 * one-time reports, partner access, reconciliation between on-demand answers and the ground truth.
 */
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sumDecimals } from '../../src/data/money.js';
import { startSimulator } from '../../src/server/start-simulator.js';
import type { SimulatorHandle } from '../../src/server/start-simulator.js';
import type { GroundTruth } from '../../src/data/ground-truth.js';
import { signedFetch } from '../helpers/cybs-sign.js';
import type { SignCredentials } from '../helpers/cybs-sign.js';

const NOW = Date.parse('2024-03-10T12:00:00Z');

describe('simulator behaviour over HTTP', () => {
  let sim: SimulatorHandle;
  let creds: SignCredentials;
  const call = (target: string, init: Parameters<typeof signedFetch>[3] = {}, c: SignCredentials = creds) =>
    signedFetch(sim.baseUrl, c, target, init);
  const jsonOf = async (
    target: string,
    init: Parameters<typeof signedFetch>[3] = {},
    c?: SignCredentials,
  ) => {
    const r = await call(target, init, c);
    return { status: r.status, body: (await r.text().then((t) => (t ? JSON.parse(t) : undefined))) as any };
  };

  beforeAll(async () => {
    sim = await startSimulator({
      seed: 8,
      transactionsPerDay: 300,
      startDate: '2024-02-15',
      organizations: ['merchant_a', 'merchant_b', 'merchant_c'],
      credentials: { portfolioMerchants: ['merchant_a', 'merchant_b'] },
      clock: () => NOW,
      quietDayRate: 0,
    });
    creds = sim.credentials;
  });
  afterAll(() => sim.close());

  it('starts each organization with default subscriptions', async () => {
    const r = await jsonOf('/reporting/v3/report-subscriptions');
    const names = r.body.subscriptions.map(
      (s: any) => `${s.reportName}|${s.reportDefinitionName}|${s.reportMimeType}`,
    );
    expect(names).toContain('TransactionRequestReport_Daily|TransactionRequestClass|text/csv');
    expect(names).toContain('PaymentBatchDetailReport_Daily_Classic|PaymentBatchDetailClass|application/xml');
    const tr = r.body.subscriptions.find((s: any) => s.reportName === 'TransactionRequestReport_Daily');
    expect(tr.reportPreferences.fieldNameConvention).toBe('SOAPI');
  });

  it('PUT creates (200), identical PUT is 304, a change updates, DELETE removes (200, then 404)', async () => {
    const body = {
      reportDefinitionName: 'TransactionRequestClass',
      reportFields: [
        'Request.RequestID',
        'PaymentData.Amount',
        'PaymentData.CurrencyCode',
        'BillTo.CompanyName',
      ],
      reportMimeType: 'text/csv',
      reportFrequency: 'DAILY',
      reportName: 'My_Custom-Report',
      timezone: 'America/Chicago',
      startTime: '0000',
      reportPreferences: { signedAmounts: true, fieldNameConvention: 'SCMP' },
    };
    expect(
      (await call('/reporting/v3/report-subscriptions', { method: 'PUT', body: JSON.stringify(body) }))
        .status,
    ).toBe(200);
    expect(
      (await call('/reporting/v3/report-subscriptions', { method: 'PUT', body: JSON.stringify(body) }))
        .status,
    ).toBe(304);
    expect(
      (
        await call('/reporting/v3/report-subscriptions', {
          method: 'PUT',
          body: JSON.stringify({ ...body, startTime: '0100' }),
          scheme: 'jwt',
        })
      ).status,
    ).toBe(200);
    const got = await jsonOf('/reporting/v3/report-subscriptions/My_Custom-Report');
    expect(got.status).toBe(200);
    expect(got.body.reportFields).toEqual(body.reportFields);
    expect(got.body.startTime).toMatch(/T01:00:00-0[56]:00$/);
    expect(
      (await call('/reporting/v3/report-subscriptions/My_Custom-Report', { method: 'DELETE' })).status,
    ).toBe(200);
    expect(
      (await call('/reporting/v3/report-subscriptions/My_Custom-Report', { method: 'DELETE' })).status,
    ).toBe(404);
    expect((await call('/reporting/v3/report-subscriptions/My_Custom-Report')).status).toBe(404);
  });

  it('PUT validation: 400 error bean naming the bad fields', async () => {
    const base = {
      reportDefinitionName: 'TransactionRequestClass',
      reportFields: ['Request.RequestID'],
      reportMimeType: 'text/csv',
      reportFrequency: 'WEEKLY',
      reportName: 'Weekly_1',
      timezone: 'UTC',
      startTime: '0900',
      startDay: 2,
    };
    const bad: [Record<string, unknown>, string][] = [
      [{ reportDefinitionName: 'NoSuchClass' }, 'reportDefinitionName'],
      [{ reportName: 'bad/name!' }, 'reportName'],
      [{ startTime: '2460' }, 'startTime'],
      [{ startTime: '9:00' }, 'startTime'],
      [{ startDay: 8 }, 'startDay'],
      [{ reportFrequency: 'MONTHLY', startDay: 32 }, 'startDay'],
      [{ color: 'blue' }, 'color'],
      [{ timezone: 'Mars/Olympus' }, 'timezone'],
      [{ reportFields: [] }, 'reportFields'],
      [{ reportMimeType: 'application/pdf' }, 'reportMimeType'],
    ];
    for (const [change, field] of bad) {
      const r = await jsonOf('/reporting/v3/report-subscriptions', {
        method: 'PUT',
        body: JSON.stringify({ ...base, ...change }),
      });
      expect(r.status, field).toBe(400);
      expect(r.body.fields.map((f: any) => f.path)).toContain(field);
    }
    expect(
      (await call('/reporting/v3/report-subscriptions', { method: 'PUT', body: JSON.stringify(base) }))
        .status,
    ).toBe(200);
  });

  it('refuses a 21st subscription', async () => {
    const c = sim.merchantCredentials['merchant_b']!;
    const existing = (await jsonOf('/reporting/v3/report-subscriptions', {}, c)).body.subscriptions
      .length as number;
    let last = 0;
    for (let i = existing; i <= 20; i++) {
      last = (
        await call(
          '/reporting/v3/report-subscriptions',
          {
            method: 'PUT',
            body: JSON.stringify({
              reportDefinitionName: 'FeeDetailClass',
              reportFields: ['Request.RequestID'],
              reportMimeType: 'text/csv',
              reportFrequency: 'DAILY',
              reportName: `Fee_${i}`,
              timezone: 'UTC',
              startTime: '0000',
            }),
          },
          c,
        )
      ).status;
      if (i < 20) expect(last).toBe(200);
    }
    expect(last).toBe(400);
  });

  it('search: reportTimeFrame overlaps, executedTime by queued time, filters, 404 when empty, 400 when malformed', async () => {
    const frame = await jsonOf(
      '/reporting/v3/reports?startTime=2024-03-05T00:00:00Z&endTime=2024-03-06T00:00:00Z&timeQueryType=reportTimeFrame&reportName=TransactionRequestReport_Daily',
    );
    // LA days overlapping the UTC day 03-05: 03-04 (ends 08:00Z on 03-05) and 03-05.
    expect(frame.body.reportSearchResults.map((r: any) => r.reportStartTime)).toEqual([
      '2024-03-04T00:00:00-08:00',
      '2024-03-05T00:00:00-08:00',
    ]);
    const executed = await jsonOf(
      '/reporting/v3/reports?startTime=2024-03-05T00:00:00Z&endTime=2024-03-06T00:00:00Z&timeQueryType=executedTime&reportName=TransactionRequestReport_Daily',
    );
    expect(executed.body.reportSearchResults.map((r: any) => r.queuedTime)).toEqual([
      '2024-03-05T00:05:00-08:00',
    ]);
    const xmlOnly = await jsonOf(
      '/reporting/v3/reports?startTime=2024-03-05T00:00:00Z&endTime=2024-03-06T00:00:00Z&timeQueryType=reportTimeFrame&reportMimeType=application/xml',
    );
    expect(new Set(xmlOnly.body.reportSearchResults.map((r: any) => r.reportMimeType))).toEqual(
      new Set(['application/xml']),
    );
    const byDef = await jsonOf(
      '/reporting/v3/reports?startTime=2024-03-05T00:00:00Z&endTime=2024-03-06T00:00:00Z&timeQueryType=reportTimeFrame&reportDefinitionId=215',
    );
    expect(new Set(byDef.body.reportSearchResults.map((r: any) => r.reportName))).toEqual(
      new Set(['FundingDetailReport_Daily']),
    );
    const weekly = await jsonOf(
      '/reporting/v3/reports?startTime=2024-02-15T00:00:00Z&endTime=2024-03-10T00:00:00Z&timeQueryType=reportTimeFrame&reportFrequency=WEEKLY',
    );
    for (const r of weekly.body.reportSearchResults)
      expect(r.reportStartTime).toMatch(/T00:00:00Z|T00:00:00\+00:00/);
    expect(
      (
        await call(
          '/reporting/v3/reports?startTime=2023-01-01T00:00:00Z&endTime=2023-01-02T00:00:00Z&timeQueryType=reportTimeFrame',
        )
      ).status,
    ).toBe(404);
    for (const q of [
      'endTime=2024-03-06T00:00:00Z&timeQueryType=reportTimeFrame',
      'startTime=2024-03-05&endTime=2024-03-06T00:00:00Z&timeQueryType=reportTimeFrame',
      'startTime=2024-03-05T00:00:00Z&endTime=2024-03-06T00:00:00Z&timeQueryType=sometime',
      'startTime=2024-03-05T00:00:00Z&endTime=2024-03-06T00:00:00Z&timeQueryType=executedTime&reportStatus=DONE',
    ]) {
      const r = await jsonOf(`/reporting/v3/reports?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.reason).toBe('INVALID_DATA');
    }
  });

  it('a daily report is QUEUED, then RUNNING, then COMPLETED 6 h after the day ends; reportDate = the next day', async () => {
    // The LA day 2024-03-09 ends at 2024-03-10T08:00Z; the clock is 2024-03-10T12:00Z (4 h later).
    const q =
      '/reporting/v3/reports?startTime=2024-03-09T12:00:00Z&endTime=2024-03-09T13:00:00Z&timeQueryType=reportTimeFrame&reportName=TransactionRequestReport_Daily';
    const before = await jsonOf(q);
    expect(before.body.reportSearchResults[0].status).toBe('QUEUED');
    expect(before.body.reportSearchResults[0]._link.reportDownload.href).toContain('reportDate=2024-03-10');
    expect(
      (
        await call(
          '/reporting/v3/report-downloads?reportName=TransactionRequestReport_Daily&reportDate=2024-03-10',
        )
      ).status,
    ).toBe(404);
    sim.advance(90 * 60_000);
    expect((await jsonOf(q)).body.reportSearchResults[0].status).toBe('RUNNING');
    const clock = await fetch(`${sim.baseUrl}/__simulator/clock`, {
      method: 'POST',
      body: JSON.stringify({ advanceMs: 60 * 60_000 }),
    });
    expect(clock.status).toBe(200);
    expect((await jsonOf(q)).body.reportSearchResults[0].status).toBe('COMPLETED');
    const file = await call(
      '/reporting/v3/report-downloads?reportName=TransactionRequestReport_Daily&reportDate=2024-03-10',
    );
    expect(file.status).toBe(200);
    const csv = await file.text();
    expect(csv.split('\r\n')[0]).toContain('2024-03-09T08:00:00Z to 2024-03-10T08:00:00Z');
  });

  it('downloaded files agree with the ground truth (rows and amount sums per currency)', async () => {
    const gt = (await (
      await fetch(
        `${sim.baseUrl}/__simulator/ground-truth?organizationId=merchant_a&startDate=2024-03-03&endDate=2024-03-03`,
      )
    ).json()) as GroundTruth;
    const tr = gt.reports.find((r) => r.reportName === 'TransactionRequestReport_Daily')!.days[0]!;
    expect(tr.reportDate).toBe('2024-03-04');
    const csv = await (
      await call(
        `/reporting/v3/report-downloads?reportName=TransactionRequestReport_Daily&reportDate=${tr.reportDate}`,
      )
    ).text();
    const rows = (parse(csv) as string[][]).slice(2);
    expect(rows).toHaveLength(tr.rowCount);
    const header = (parse(csv) as string[][])[1]!;
    const amount = header.indexOf('paymentData_amount');
    const currency = header.indexOf('paymentData_currencyCode');
    const byCurrency: Record<string, string[]> = {};
    for (const r of rows) (byCurrency[r[currency]!] ??= []).push(r[amount]!);
    for (const [c, values] of Object.entries(byCurrency))
      expect(sumDecimals(values)).toBe(tr.amounts.byCurrency[c]);
    const pbd = gt.reports.find((r) => r.reportName === 'PaymentBatchDetailReport_Daily_Classic')!.days[0]!;
    const xml = await (
      await call(
        `/reporting/v3/report-downloads?reportName=PaymentBatchDetailReport_Daily_Classic&reportDate=${pbd.reportDate}`,
      )
    ).text();
    expect(xml.match(/<Request /g)).toHaveLength(pbd.rowCount);
  });

  it('cacheReports: a kept report file is served byte for byte as rendered; a malformed-row download is not kept', async () => {
    const options = {
      seed: 8,
      transactionsPerDay: 300,
      startDate: '2024-02-15',
      organizations: ['merchant_a'],
      clock: () => NOW,
      quietDayRate: 0,
    };
    const cached = await startSimulator({ ...options, cacheReports: true });
    try {
      const get = async (name: string, date: string) => {
        const r = await signedFetch(
          cached.baseUrl,
          cached.credentials,
          `/reporting/v3/report-downloads?reportName=${name}&reportDate=${date}`,
        );
        expect(r.status).toBe(200);
        return Buffer.from(await r.arrayBuffer());
      };
      const fresh = async (name: string, date: string) => {
        const r = await signedFetch(
          sim.baseUrl,
          creds,
          `/reporting/v3/report-downloads?reportName=${name}&reportDate=${date}&organizationId=merchant_a`,
        );
        expect(r.status).toBe(200);
        return Buffer.from(await r.arrayBuffer());
      };
      for (const name of ['TransactionRequestReport_Daily', 'PaymentBatchDetailReport_Daily_Classic']) {
        const first = await get(name, '2024-03-04');
        const second = await get(name, '2024-03-04');
        expect(second.equals(first)).toBe(true);
        expect(first.equals(await fresh(name, '2024-03-04'))).toBe(true);
        expect(first.equals(await get(name, '2024-03-05'))).toBe(false);
      }
      // Purchase and Refund Detail pages of a complete window: kept, the same bytes, offset and
      // limit part of what identifies one; a window with no data stays a 404.
      const page = async (base: string, c: typeof creds, query: string) => {
        const r = await signedFetch(base, c, `/reporting/v3/purchase-refund-details?${query}`);
        return { status: r.status, body: await r.text() };
      };
      const window = 'startTime=2024-03-01T00:00:00Z&endTime=2024-03-02T00:00:00Z';
      for (const paging of ['offset=0&limit=50', 'offset=50&limit=50', 'offset=0&limit=2000']) {
        const first = await page(cached.baseUrl, cached.credentials, `${window}&${paging}`);
        expect(first.status).toBe(200);
        expect((await page(cached.baseUrl, cached.credentials, `${window}&${paging}`)).body).toBe(first.body);
        expect((await page(sim.baseUrl, creds, `${window}&${paging}&organizationId=merchant_a`)).body).toBe(
          first.body,
        );
      }
      const before = 'startTime=2023-01-01T00:00:00Z&endTime=2023-01-02T00:00:00Z';
      for (let i = 0; i < 2; i++) {
        expect((await page(cached.baseUrl, cached.credentials, `${before}&offset=0&limit=50`)).status).toBe(
          404,
        );
      }
      // The other on-demand replies of complete windows: kept too, the same bytes as rendered; the
      // whole query is part of what identifies one; no data stays a 404.
      // An error reply says when it was answered (`submitTimeUtc`, to the second): not part of what
      // is compared, or two requests a second apart would differ.
      const reply = async (base: string, c: typeof creds, path: string) => {
        const r = await signedFetch(base, c, path);
        const body = (await r.text()).replace(/"submitTimeUtc":"[^"]*"/, '"submitTimeUtc":"…"');
        return { status: r.status, type: r.headers.get('content-type'), body };
      };
      for (const query of [
        `net-fundings?${window}`,
        `conversion-details?${window}`,
        `notification-of-changes?${window}`,
        `payment-batch-summaries?${window}`,
        `payment-batch-summaries?${window}&rollUp=day&breakdown=all_merchant`,
        `net-fundings?${before}`,
      ]) {
        const first = await reply(cached.baseUrl, cached.credentials, `/reporting/v3/${query}`);
        expect(first.status, query).toBe(query.includes(before) ? 404 : 200);
        expect(await reply(cached.baseUrl, cached.credentials, `/reporting/v3/${query}`), query).toEqual(
          first,
        );
        // notification-of-changes takes no organizationId (the spec defines startTime/endTime only).
        const org = query.startsWith('notification-of-changes') ? '' : '&organizationId=merchant_a';
        expect(await reply(sim.baseUrl, creds, `/reporting/v3/${query}${org}`), query).toEqual(first);
      }
      cached.setFaults('download:malformed-row=2/amount');
      const broken = await get('TransactionRequestReport_Daily', '2024-03-04');
      cached.setFaults([]);
      expect(broken.equals(await get('TransactionRequestReport_Daily', '2024-03-04'))).toBe(false);
    } finally {
      await cached.close();
    }
  });

  it('reconciles: Net Funding and Payment Batch Summary totals equal the purchase-refund detail rows', async () => {
    const window = 'startTime=2024-03-01T00:00:00Z&endTime=2024-03-04T00:00:00Z';
    const settlements: { amount: string; currencyCode: string; transactionType: string }[] = [];
    const fees: { totalFee: string; fundingAmount: string; fundingCurrency: string }[] = [];
    let offset = 0;
    for (;;) {
      const page = await jsonOf(`/reporting/v3/purchase-refund-details?${window}&offset=${offset}&limit=100`);
      expect(page.status).toBe(200);
      if (!page.body.requestDetails) {
        expect(page.body.pageResults).toBe(0);
        break;
      }
      expect(page.body.pageResults).toBe(page.body.requestDetails.length);
      for (const s of ['settlements', 'feeAndFundingDetails', 'others', 'settlementStatuses']) {
        expect(page.body[s].map((x: any) => x.requestId)).toEqual(
          page.body.requestDetails.map((x: any) => x.requestId),
        );
      }
      settlements.push(...page.body.settlements);
      fees.push(...page.body.feeAndFundingDetails);
      offset += 100;
    }
    expect(settlements.length).toBeGreaterThan(300);
    /** Exact decimal equality whatever the written scale ("0" = "0.000"). */
    const same = (a: string, b: string) =>
      expect(
        /^-?0(\.0+)?$/.test(sumDecimals([a, b.startsWith('-') ? b.slice(1) : `-${b}`])),
        `${a} = ${b}`,
      ).toBe(true);
    const sum = (
      rows: any[],
      key: string,
      currencyKey: string,
      currency: string,
      filter: (r: any) => boolean = () => true,
    ) => sumDecimals(rows.filter((r) => r[currencyKey] === currency && filter(r)).map((r) => r[key]));
    const nf = (await jsonOf(`/reporting/v3/net-fundings?${window}`)).body;
    const pbs = (
      await jsonOf(
        `/reporting/v3/payment-batch-summaries?startTime=2024-03-01T00:00:00.000Z&endTime=2024-03-04T00:00:00.000Z`,
      )
    ).body;
    for (const { currency, value } of nf.totalPurchases) {
      same(
        value,
        sum(settlements, 'amount', 'currencyCode', currency, (r) => r.transactionType === 'Purchases'),
      );
      const sales = pbs.paymentBatchSummaries
        .filter((r: any) => r.currencyCode === currency)
        .map((r: any) => r.salesAmount);
      same(sumDecimals(sales), value);
    }
    for (const { currency, value } of nf.totalRefunds) {
      same(
        value,
        sum(settlements, 'amount', 'currencyCode', currency, (r) => r.transactionType === 'Refunds'),
      );
      same(
        sumDecimals(
          pbs.paymentBatchSummaries
            .filter((r: any) => r.currencyCode === currency)
            .map((r: any) => r.creditAmount),
        ),
        value,
      );
    }
    for (const { currency, value } of nf.totalFees)
      same(value, sum(fees, 'totalFee', 'fundingCurrency', currency));
    const chargebacks = Object.fromEntries(nf.totalChargebacks.map((c: any) => [c.currency, c.value]));
    for (const { currency, value } of nf.netTotal) {
      const chargeback = (chargebacks[currency] as string | undefined) ?? '0';
      same(value, sumDecimals([sum(fees, 'fundingAmount', 'fundingCurrency', currency), `-${chargeback}`]));
    }
    const gt = (await (
      await fetch(
        `${sim.baseUrl}/__simulator/ground-truth?organizationId=merchant_a&startDate=2024-03-01&endDate=2024-03-03`,
      )
    ).json()) as GroundTruth;
    expect(gt.onDemand.purchaseRefundDetails.records).toBe(settlements.length);
    for (const { currency, value } of nf.netTotal)
      expect(gt.onDemand.netFundings.netTotal.byCurrency[currency]).toBe(value);
    const salesCount = pbs.paymentBatchSummaries.reduce((a: number, r: any) => a + r.salesCount, 0);
    expect(salesCount).toBe(gt.onDemand.paymentBatchSummaries.salesCount);
  });

  it('purchase-refund-details paging: limit 1–2000, an offset past the end has no sections, 404 for an empty window', async () => {
    const w = 'startTime=2024-03-01T00:00:00Z&endTime=2024-03-02T00:00:00Z';
    const first = await jsonOf(`/reporting/v3/purchase-refund-details?${w}`);
    expect(first.body.limit).toBe(2000);
    expect(first.body.offset).toBe(0);
    const total = first.body.pageResults as number;
    const past = await jsonOf(`/reporting/v3/purchase-refund-details?${w}&offset=${total + 5}&limit=10`);
    expect(past.status).toBe(200);
    expect(past.body).toEqual({ offset: total + 5, limit: 10, pageResults: 0 });
    for (const bad of ['limit=0', 'limit=2001', 'offset=-1', 'paymentSubtype=XX', 'viewBy=tomorrow']) {
      expect((await call(`/reporting/v3/purchase-refund-details?${w}&${bad}`)).status, bad).toBe(400);
    }
    const visa = await jsonOf(`/reporting/v3/purchase-refund-details?${w}&paymentSubtype=VI`);
    expect(new Set(visa.body.settlements.map((s: any) => s.paymentMethod))).toEqual(new Set(['VISA']));
    expect(
      (
        await call(
          '/reporting/v3/purchase-refund-details?startTime=2023-01-01T00:00:00Z&endTime=2023-01-02T00:00:00Z',
        )
      ).status,
    ).toBe(404);
    expect(
      (
        await call(
          '/reporting/v3/payment-batch-summaries?startTime=2024-03-01T00:00:00.000Z&endTime=2024-03-02T00:00:00.000Z&rollUp=day',
        )
      ).status,
    ).toBe(400);
    expect(
      (
        await call(
          '/reporting/v3/payment-batch-summaries?startTime=2024-03-01T00:00:00.000Z&endTime=2024-03-02T00:00:00.000Z&startDayOfWeek=8',
        )
      ).status,
    ).toBe(400);
  });

  it('one-time report: 201, identical repeat 304, QUEUED → RUNNING → COMPLETED as simulated time passes, downloadable by end date', async () => {
    const body = {
      reportDefinitionName: 'TransactionRequestClass',
      reportFields: [
        'Request.RequestID',
        'Request.TransactionDate',
        'PaymentData.Amount',
        'PaymentData.CurrencyCode',
      ],
      reportMimeType: 'text/csv',
      reportName: 'adhoc_march',
      timezone: 'GMT',
      reportStartTime: '2024-03-01T00:00:00Z',
      reportEndTime: '2024-03-03T00:00:00Z',
      reportPreferences: { signedAmounts: true, fieldNameConvention: 'SOAPI' },
    };
    expect((await call('/reporting/v3/reports', { method: 'POST', body: JSON.stringify(body) })).status).toBe(
      201,
    );
    expect(
      (await call('/reporting/v3/reports', { method: 'POST', body: JSON.stringify(body), scheme: 'jwt' }))
        .status,
    ).toBe(304);
    const tooLong = {
      ...body,
      reportName: 'too_long',
      reportEndTime: '2024-02-01T00:00:00Z',
      reportStartTime: '2023-12-01T00:00:00Z',
    };
    expect(
      (await call('/reporting/v3/reports', { method: 'POST', body: JSON.stringify(tooLong) })).status,
    ).toBe(400);
    const q = `/reporting/v3/reports?startTime=${new Date(sim.now() - 60_000).toISOString()}&endTime=${new Date(sim.now() + 3600_000).toISOString()}&timeQueryType=executedTime&reportFrequency=ADHOC`;
    const status = async () => (await jsonOf(q)).body.reportSearchResults[0].status;
    expect(await status()).toBe('QUEUED');
    sim.advance(3_000);
    expect(await status()).toBe('RUNNING');
    expect(
      (await call('/reporting/v3/report-downloads?reportName=adhoc_march&reportDate=2024-03-03')).status,
    ).toBe(404);
    sim.advance(3_000);
    expect(await status()).toBe('COMPLETED');
    const file = await call('/reporting/v3/report-downloads?reportName=adhoc_march&reportDate=2024-03-03');
    expect(file.status).toBe(200);
    // The metadata line keeps its five fields even when the report has fewer columns.
    const rows = parse(await file.text(), { relax_column_count: true }) as string[][];
    expect(rows[0]).toHaveLength(5);
    // SOAPI names as the Reporting User Guide gives them (Request Fields: RequestID, RequestDate);
    // Payment Data has no SOAPI column there, so those two keep the rule's names.
    expect(rows[1]).toEqual(['RequestID', 'RequestDate', 'paymentData_amount', 'paymentData_currencyCode']);
    for (const r of rows.slice(1)) expect(r).toHaveLength(4);
    expect(rows.length).toBeGreaterThan(500);
  });

  it('partner access: meta key may pass organizationId of its merchants, 403 for others, 404 for unknown', async () => {
    const p = sim.portfolioCredentials;
    expect(p.merchantId).toBe('merchant_a');
    const mine = await jsonOf('/reporting/v3/report-subscriptions?organizationId=merchant_b', {}, p);
    expect(mine.status).toBe(200);
    expect(mine.body.subscriptions[0].organizationId).toBe('merchant_b');
    expect((await call('/reporting/v3/report-subscriptions?organizationId=merchant_c', {}, p)).status).toBe(
      403,
    );
    expect((await call('/reporting/v3/report-subscriptions?organizationId=nobody', {}, p)).status).toBe(404);
    // A merchant key sees only its own organization.
    expect((await call('/reporting/v3/report-subscriptions?organizationId=merchant_b')).status).toBe(403);
    expect((await call('/reporting/v3/report-subscriptions?organizationId=merchant_a')).status).toBe(200);
    // all_merchant breakdown covers the portfolio's merchants.
    const pbs = await jsonOf(
      '/reporting/v3/payment-batch-summaries?startTime=2024-03-01T00:00:00.000Z&endTime=2024-03-02T00:00:00.000Z&rollUp=day&breakdown=all_merchant',
      {},
      p,
    );
    expect(new Set(pbs.body.paymentBatchSummaries.map((r: any) => r.merchantId))).toEqual(
      new Set(['merchant_a', 'merchant_b']),
    );
  });

  it('401 for a wrong secret (signature and JWT) and for none; 404 for unknown paths', async () => {
    const wrong = { ...creds, sharedSecret: Buffer.from('not the secret at all!').toString('base64') };
    expect((await call('/reporting/v3/report-definitions', {}, wrong)).status).toBe(401);
    expect((await call('/reporting/v3/report-definitions', { scheme: 'jwt' }, wrong)).status).toBe(401);
    expect((await fetch(`${sim.baseUrl}/reporting/v3/reports?startTime=x`)).status).toBe(401);
    expect((await call('/reporting/v3/nothing-here')).status).toBe(404);
    expect((await fetch(`${sim.baseUrl}/tms/v2/customers`)).status).toBe(404);
  });

  it('state shows subscriptions and one-time reports', async () => {
    const state = (await (await fetch(`${sim.baseUrl}/__simulator/state`)).json()) as any;
    expect(state.organizations).toEqual(['merchant_a', 'merchant_b', 'merchant_c']);
    expect(state.oneTimeReports.map((r: any) => r.reportName)).toContain('adhoc_march');
    expect(state.subscriptions.length).toBeGreaterThan(10);
  });
});
