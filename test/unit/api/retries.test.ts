import { decodeJwt } from 'jose';
import { errors } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { isApiError } from '../../../src/api/errors.js';
import { createMockApi } from '../../helpers/mock-api.js';
import type { MockApi } from '../../helpers/mock-api.js';

let api: MockApi;
afterEach(async () => {
  await api.agent.close();
});

const search = (m: MockApi) =>
  m.client.searchReports({ startTime: 'a', endTime: 'b', timeQueryType: 'executedTime' });
const ok = { status: 200, body: { reportSearchResults: [] } };
const socketError = (code: string) => Object.assign(new Error(`socket ${code}`), { code });

describe('retry policy on the wire', () => {
  for (const status of [429, 500, 502, 503, 504]) {
    it(`retries ${status} and succeeds`, async () => {
      api = createMockApi();
      api.reply({ status, body: 'busy' }, ok);
      await expect(search(api)).resolves.toEqual({ reportSearchResults: [] });
      expect(api.requests).toHaveLength(2);
      expect(api.events.filter((e) => e.type === 'retry')).toMatchObject([
        { status, attempt: 1, operation: 'searchReports' },
      ]);
      api.agent.assertNoPendingInterceptors();
    });
  }

  for (const status of [400, 401, 403, 404]) {
    it(`never retries ${status}`, async () => {
      api = createMockApi();
      api.reply({ status, body: { reason: 'X', message: 'no' } }, ok);
      const error = await search(api).catch((e: unknown) => e);
      expect(isApiError(error) && error.status).toBe(status);
      expect(api.requests).toHaveLength(1);
      expect(api.sleeps).toEqual([]);
      expect(api.agent.pendingInterceptors()).toHaveLength(1);
    });
  }

  for (const [name, error] of [
    ['ECONNRESET', socketError('ECONNRESET')],
    ['UND_ERR_SOCKET', new errors.SocketError('other side closed')],
    ['UND_ERR_HEADERS_TIMEOUT', new errors.HeadersTimeoutError()],
    ['UND_ERR_BODY_TIMEOUT', new errors.BodyTimeoutError()],
    ['UND_ERR_CONNECT_TIMEOUT', new errors.ConnectTimeoutError()],
  ] as const) {
    it(`retries ${name}`, async () => {
      api = createMockApi();
      api.reply({ status: 0, error }, ok);
      await expect(search(api)).resolves.toEqual({ reportSearchResults: [] });
      const retry = api.events.find((e) => e.type === 'retry');
      expect(retry?.errorCode).toBe(name.includes('TIMEOUT') ? 'API_TIMEOUT' : 'API_NETWORK');
      api.agent.assertNoPendingInterceptors();
    });
  }

  it('backs off exponentially with full jitter (random = 0.5)', async () => {
    api = createMockApi({ api: { retry: { attempts: 4, minDelayMs: 100, maxDelayMs: 250 } } });
    api.reply({ status: 503 }, { status: 503 }, { status: 503 }, ok);
    await search(api);
    expect(api.sleeps).toEqual([50, 100, 125]);
  });

  it('honours Retry-After in seconds and as an HTTP date, capped by maxDelayMs', async () => {
    api = createMockApi({ api: { retry: { maxDelayMs: 5000 } } });
    // Answered after the first 3 s wait, so two seconds after that moment.
    const inTwoSeconds = new Date(api.clock.now + 3000 + 2000).toUTCString();
    api.reply(
      { status: 429, headers: { 'retry-after': '3' } },
      { status: 503, headers: { 'retry-after': inTwoSeconds } },
      { status: 429, headers: { 'retry-after': '3600' } },
      ok,
    );
    await search(api);
    expect(api.sleeps).toEqual([3000, 2000, 5000]);
  });

  it('stops after the configured number of attempts and reports the last failure', async () => {
    api = createMockApi({ api: { retry: { attempts: 3 } } });
    api.reply({
      status: 500,
      body: { code: 'SERVER_ERROR', message: 'Error encountered while processing request' },
    });
    api.reply({
      status: 500,
      body: { code: 'SERVER_ERROR', message: 'Error encountered while processing request' },
    });
    api.reply({ status: 502, body: 'Bad Gateway', headers: { 'content-type': 'text/plain' } });
    const error = await search(api).catch((e: unknown) => e);
    expect(isApiError(error) && [error.code, error.status, error.retryable]).toEqual([
      'API_HTTP_STATUS',
      502,
      true,
    ]);
    expect((error as Error).message).toContain('Bad Gateway');
    expect(api.requests).toHaveLength(3);
    expect(api.events.filter((e) => e.type === 'retry')).toHaveLength(2);
  });

  it('stops before the total time budget would be exceeded', async () => {
    api = createMockApi({ api: { retry: { attempts: 10, maxDelayMs: 5000, maxTotalMs: 7000 } } });
    api.reply(
      { status: 429, headers: { 'retry-after': '3' } },
      { status: 429, headers: { 'retry-after': '3' } },
      { status: 429, headers: { 'retry-after': '3' } },
      ok,
    );
    const error = await search(api).catch((e: unknown) => e);
    expect(isApiError(error) && error.status).toBe(429);
    expect(api.sleeps).toEqual([3000, 3000]);
    expect(api.requests).toHaveLength(3);
  });

  it('signs every attempt afresh (new date, new jti)', async () => {
    api = createMockApi({ credentials: { auth: 'jwt' }, api: { retry: { maxDelayMs: 5000 } } });
    api.reply({ status: 503, headers: { 'retry-after': '2' } }, ok);
    await search(api);
    const [first, second] = api.requests.map((r) => decodeJwt(r.headers.authorization!.slice(7)));
    expect(first!.jti).not.toBe(second!.jti);
    expect((second!.iat as number) - (first!.iat as number)).toBe(2);

    const sig = createMockApi({ api: { retry: { maxDelayMs: 5000 } } });
    sig.reply({ status: 503, headers: { 'retry-after': '2' } }, ok);
    await search(sig);
    expect(sig.requests[0]!.headers.date).not.toBe(sig.requests[1]!.headers.date);
    expect(sig.requests[0]!.headers.signature).not.toBe(sig.requests[1]!.headers.signature);
    await sig.agent.close();
  });

  it('a 401 says the credentials were refused, with scheme and merchant id', async () => {
    api = createMockApi({ credentials: { auth: 'jwt' } });
    api.reply({ status: 401, body: { response: { rmsg: 'Authentication Failed' } } });
    const error = await search(api).catch((e: unknown) => e);
    expect(isApiError(error) && error.code).toBe('API_UNAUTHORIZED');
    expect((error as Error).message).toMatch(
      /refused the credentials \(auth scheme jwt, merchant id merchant7\)/,
    );
  });

  it('emits request/response events with attempt numbers', async () => {
    api = createMockApi();
    api.reply({ status: 500 }, ok);
    await search(api);
    expect(api.events.map((e) => `${e.type}:${e.attempt}:${e.status ?? ''}`)).toEqual([
      'request:1:',
      'response:1:500',
      'retry:1:500',
      'request:2:',
      'response:2:200',
    ]);
    expect(api.events.every((e) => e.path === '/reporting/v3/reports' && e.method === 'GET')).toBe(true);
  });

  it('304 on PUT is not an error and not retried', async () => {
    api = createMockApi();
    api.reply({ status: 304 });
    await expect(
      api.client.putSubscription({
        reportDefinitionName: 'X',
        reportFields: [],
        reportMimeType: 'text/csv',
        reportFrequency: 'DAILY',
        reportName: 'n',
        timezone: 'UTC',
        startTime: '0000',
      }),
    ).resolves.toBe('not-modified');
    expect(api.events.filter((e) => e.type === 'retry')).toHaveLength(0);
  });
});
