/**
 * Every fault kind, observed with raw requests (undici for the wire-level ones).
 */
import { parse } from 'csv-parse/sync';
import { XMLValidator } from 'fast-xml-parser';
import { request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/server/start-simulator.js';
import type { SimulatorHandle } from '../../src/server/start-simulator.js';
import { httpSignatureHeaders, signedFetch } from '../helpers/cybs-sign.js';

const NOW = Date.parse('2024-03-10T12:00:00Z');
const DOWNLOAD =
  '/reporting/v3/report-downloads?reportName=TransactionRequestReport_Daily&reportDate=2024-03-05';
const SEARCH =
  '/reporting/v3/reports?startTime=2024-03-04T00:00:00Z&endTime=2024-03-05T00:00:00Z&timeQueryType=reportTimeFrame';

describe('simulator faults', () => {
  let sim: SimulatorHandle;
  const get = (target: string, accept?: string) =>
    signedFetch(sim.baseUrl, sim.credentials, target, accept ? { accept } : {});
  const raw = (target: string) => {
    const url = new URL(target, sim.baseUrl);
    const headers = httpSignatureHeaders(sim.credentials, {
      method: 'GET',
      target: `${url.pathname}${url.search}`,
      host: url.host,
    });
    delete headers['host'];
    return request(url, { method: 'GET', headers });
  };

  beforeAll(async () => {
    sim = await startSimulator({
      seed: 4,
      transactionsPerDay: 400,
      startDate: '2024-03-01',
      clock: () => NOW,
      quietDayRate: 0,
    });
  });
  beforeEach(() => {
    sim.setFaults([]);
  });
  afterAll(() => sim.close());

  it('429 with Retry-After, twice, then success', async () => {
    sim.setFaults('search:429=7x2');
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await get(SEARCH);
      statuses.push(r.status);
      if (r.status === 429) expect(r.headers.get('retry-after')).toBe('7');
      await r.text();
    }
    expect(statuses).toEqual([429, 429, 200]);
  });

  it('500, 502 and 503 with the SERVER_ERROR bean', async () => {
    for (const code of ['500', '502', '503']) {
      sim.setFaults(`purchase-refund-details:${code}x1`);
      const r = await get(
        '/reporting/v3/purchase-refund-details?startTime=2024-03-02T00:00:00Z&endTime=2024-03-03T00:00:00Z',
      );
      expect(r.status).toBe(Number(code));
      expect(await r.json()).toMatchObject({ code: 'SERVER_ERROR', localizationKey: 'cybsapi.server.error' });
    }
  });

  it('a probability is repeatable: the same seed gives the same sequence', async () => {
    const run = async () => {
      sim.setFaults('report-definitions:503@0.5');
      const out: number[] = [];
      for (let i = 0; i < 12; i++) {
        const r = await get('/reporting/v3/report-definitions');
        out.push(r.status);
        await r.text();
      }
      return out;
    };
    const a = await run();
    expect(await run()).toEqual(a);
    expect(new Set(a)).toEqual(new Set([200, 503]));
  });

  it('slow headers delay the response head; slow body spaces the chunks', async () => {
    sim.setFaults('report-definitions:slow-headers=400');
    let t = performance.now();
    const r1 = await raw('/reporting/v3/report-definitions');
    const headerDelay = performance.now() - t;
    await r1.body.text();
    sim.setFaults('download:slow-body=150');
    t = performance.now();
    const r2 = await raw(DOWNLOAD);
    const firstAt = performance.now() - t;
    const gaps: number[] = [];
    let last = performance.now();
    let chunks = 0;
    for await (const _ of r2.body) {
      const now = performance.now();
      if (chunks > 0) gaps.push(now - last);
      last = now;
      chunks++;
      if (chunks > 4) break;
    }
    r2.body.destroy();
    // Observed, not timed: the delays exist (generous lower bounds only).
    console.log(
      `[simulator-faults] header delay ${headerDelay.toFixed(0)} ms; first body after ${firstAt.toFixed(0)} ms; chunk gaps ${gaps.map((g) => g.toFixed(0)).join(',')} ms`,
    );
    expect(headerDelay).toBeGreaterThanOrEqual(350);
    expect(Math.max(...gaps)).toBeGreaterThanOrEqual(100);
  });

  it('reset: the connection is destroyed in the middle of the body', async () => {
    sim.setFaults('download:reset=5000x1');
    const r = await raw(DOWNLOAD);
    expect(r.statusCode).toBe(200);
    let received = 0;
    const error = await (async () => {
      try {
        for await (const chunk of r.body) received += (chunk as Buffer).length;
        return undefined;
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error).toBeDefined();
    expect(received).toBe(5000);
    // The next download is whole again (x1).
    const again = await get(DOWNLOAD);
    expect((await again.text()).endsWith('\r\n')).toBe(true);
  });

  it('truncate: the body ends early but the response completes normally', async () => {
    const whole = await (await get(DOWNLOAD)).text();
    sim.setFaults('download:truncate');
    const r = await get(DOWNLOAD);
    expect(r.status).toBe(200);
    const cut = await r.text();
    expect(cut.length).toBeLessThan(whole.length);
    expect(whole.startsWith(cut)).toBe(true);
  });

  it('stuck: a report stays RUNNING and cannot be downloaded', async () => {
    sim.setFaults('report:stuck=TransactionRequestReport_Daily');
    const body = (await (await get(`${SEARCH}&reportName=TransactionRequestReport_Daily`)).json()) as {
      reportSearchResults: { status: string }[];
    };
    expect(body.reportSearchResults.every((r) => r.status === 'RUNNING')).toBe(true);
    expect((await get(DOWNLOAD)).status).toBe(404);
    const other = (await (await get(`${SEARCH}&reportName=FundingDetailReport_Daily`)).json()) as {
      reportSearchResults: { status: string }[];
    };
    expect(other.reportSearchResults[0]!.status).toBe('COMPLETED');
  });

  it('error: reports (by name or name prefix) end in ERROR and cannot be downloaded', async () => {
    sim.setFaults('report:error=TransactionRequest*');
    const body = (await (await get(`${SEARCH}&reportName=TransactionRequestReport_Daily`)).json()) as {
      reportSearchResults: { status: string }[];
    };
    expect(body.reportSearchResults.length).toBeGreaterThan(0);
    expect(body.reportSearchResults.every((r) => r.status === 'ERROR')).toBe(true);
    expect((await get(DOWNLOAD)).status).toBe(404);
    const other = (await (await get(`${SEARCH}&reportName=FundingDetailReport_Daily`)).json()) as {
      reportSearchResults: { status: string }[];
    };
    expect(other.reportSearchResults[0]!.status).toBe('COMPLETED');
  });

  it('malformed-row: a CSV row with a missing column, or an unparseable amount; a broken XML file', async () => {
    sim.setFaults('download:malformed-row=3');
    const csv = await (await get(DOWNLOAD)).text();
    expect(() => parse(csv)).toThrow(/Invalid Record Length/);
    const rows = parse(csv, { relax_column_count: true }) as string[][];
    expect(rows[4]!.length).toBe(rows[1]!.length - 1);
    sim.setFaults('download:malformed-row=2/amount');
    const rows2 = parse(await (await get(DOWNLOAD)).text()) as string[][];
    const amount = rows2[1]!.indexOf('paymentData_amount');
    expect(rows2[3]![amount]).not.toMatch(/^-?\d+(\.\d+)?$/);
    expect(rows2[4]![amount]).toMatch(/^-?\d+(\.\d+)?$/);
    sim.setFaults('download:malformed-row=1');
    const xml = await (
      await get(
        '/reporting/v3/report-downloads?reportName=PaymentBatchDetailReport_Daily_Classic&reportDate=2024-03-05',
      )
    ).text();
    expect(XMLValidator.validate(xml)).not.toBe(true);
  });

  it('faults can be set at runtime over HTTP and are refused when malformed', async () => {
    const ok = await fetch(`${sim.baseUrl}/__simulator/faults`, {
      method: 'POST',
      body: JSON.stringify({ spec: '*:503x1' }),
    });
    expect(await ok.json()).toEqual({ rules: [{ endpoint: '*', kind: '503', count: 1 }] });
    expect((await get('/reporting/v3/report-subscriptions')).status).toBe(503);
    expect((await get('/reporting/v3/report-subscriptions')).status).toBe(200);
    const bad = await fetch(`${sim.baseUrl}/__simulator/faults`, {
      method: 'POST',
      body: JSON.stringify({ spec: 'download:explode' }),
    });
    expect(bad.status).toBe(400);
  });
});
