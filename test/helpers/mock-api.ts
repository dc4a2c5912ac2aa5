import { MockAgent } from 'undici';
import type { Interceptable } from 'undici';
import { createReportingClient } from '../../src/api/reporting-client.js';
import type { ReportingClient, ReportingClientDeps } from '../../src/api/reporting-client.js';
import type { ApiEvent } from '../../src/api/transport.js';
import type { Credentials } from '../../src/config/env.js';
import { configSchema } from '../../src/config/schema.js';
import type { Config } from '../../src/config/schema.js';

export const TEST_ORIGIN = 'https://apitest.cybersource.com';
export const TEST_SECRET = 'yBJxy6LjM2TmcPGu+GaJrHtkke25fPpUX+UY6/L/1tE=';
export const TEST_KEY_ID = '08c94330-f618-42a3-b09d-e1e43be5efda';

export interface CapturedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
}

export interface Reply {
  status: number;
  body?: string | object;
  headers?: Record<string, string>;
  error?: Error;
}

export interface MockApi {
  client: ReportingClient;
  agent: MockAgent;
  pool: Interceptable;
  requests: CapturedRequest[];
  events: ApiEvent[];
  sleeps: number[];
  /** Queue replies, one per request, in order. */
  reply(...replies: Reply[]): void;
  /** Current fake time (ms); sleeping advances it. */
  clock: { now: number };
}

function normaliseHeaders(headers: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!headers) return out;
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2)
      out[String(headers[i]).toLowerCase()] = String(headers[i + 1]);
    return out;
  }
  const entries =
    typeof (headers as Headers).entries === 'function' &&
    !(headers as object).constructor.name.startsWith('Object')
      ? [...(headers as Headers).entries()]
      : Object.entries(headers as Record<string, string>);
  for (const [k, v] of entries) out[k.toLowerCase()] = String(v);
  return out;
}

/** A reporting client on undici's MockAgent (no network), with a fake clock and recorded sleeps. */
export function createMockApi(
  options: {
    credentials?: Partial<Credentials>;
    api?: Partial<Omit<Config['api'], 'retry'>> & { retry?: Partial<Config['api']['retry']> };
    deps?: Partial<ReportingClientDeps>;
  } = {},
): MockApi {
  const agent = new MockAgent();
  agent.disableNetConnect();
  const pool = agent.get(TEST_ORIGIN);
  const requests: CapturedRequest[] = [];
  const events: ApiEvent[] = [];
  const sleeps: number[] = [];
  const clock = { now: Date.parse('2024-03-10T06:07:08Z') };
  let jti = 0;
  const base = configSchema.parse({}).api;
  const api: Config['api'] = {
    ...base,
    ...options.api,
    retry: {
      ...base.retry,
      attempts: 4,
      minDelayMs: 10,
      maxDelayMs: 100,
      maxTotalMs: 10_000,
      ...options.api?.retry,
    },
  };
  const credentials: Credentials = {
    auth: 'http-signature',
    merchantId: 'merchant7',
    keyId: TEST_KEY_ID,
    sharedSecret: TEST_SECRET,
    ...options.credentials,
  };
  const client = createReportingClient(
    {
      credentials,
      target: { environment: 'test' },
      api,
      userAgent: 'cybs-etl/0.0.0-test (+https://github.com/cybs-etl)',
    },
    {
      dispatcher: agent,
      now: () => clock.now,
      uuid: () => `jti-${++jti}`,
      random: () => 0.5,
      sleep: (ms) => {
        sleeps.push(ms);
        clock.now += ms;
        return Promise.resolve();
      },
      onEvent: (event) => events.push(event),
      ...options.deps,
    },
  );
  return {
    client,
    agent,
    pool,
    requests,
    events,
    sleeps,
    clock,
    reply(...replies: Reply[]) {
      for (const r of replies) {
        const interceptor = pool.intercept({ path: () => true, method: () => true });
        if (r.error) {
          // MockAgent consumes an interceptor only when it answers; a transport failure is not recorded.
          interceptor.replyWithError(r.error);
          continue;
        }
        interceptor.reply((opts) => {
          requests.push({
            method: opts.method,
            path: opts.path,
            headers: normaliseHeaders(opts.headers),
            body:
              typeof opts.body === 'string' ? opts.body : opts.body == null ? undefined : String(opts.body),
          });
          const data =
            r.body === undefined ? '' : typeof r.body === 'string' ? r.body : JSON.stringify(r.body);
          const headers =
            r.headers ??
            (typeof r.body === 'object' ? { 'content-type': 'application/hal+json;charset=utf-8' } : {});
          return { statusCode: r.status, data, responseOptions: { headers } };
        });
      }
    },
  };
}
