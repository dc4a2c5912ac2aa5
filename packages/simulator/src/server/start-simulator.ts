/**
 * The CyberSource Reporting API simulator: a local, deterministic stand-in for the service on
 * node:http, used by every test, demo and benchmark.
 *
 *   const sim = await startSimulator({ seed: 7, transactionsPerDay: 200 });
 *   sim.baseUrl          // http://127.0.0.1:<random port>
 *   sim.credentials      // { merchantId, keyId, sharedSecret, … } accepted by the simulator
 *   sim.advance(6 * 3600_000); sim.setFaults('download:reset@0.3');
 *   await sim.close();
 *
 * Time: `clock()` (default Date.now) plus the offset added by `advance()` / POST /__simulator/clock
 * is the simulated now that drives report readiness and what data exists. Token freshness (the
 * HTTP signature `date`, JWT `iat`/`exp`) is checked against `authClock()` (default Date.now),
 * which `advance()` does not move, so real clients keep authenticating after time travel.
 *
 * Control endpoints (no authentication, outside /reporting):
 *   GET  /__simulator/ground-truth?organizationId=&startDate=&endDate=   (see ground-truth.ts)
 *   GET  /__simulator/state          subscriptions, one-time reports, faults, now
 *   POST /__simulator/clock          {"advanceMs": 21600000} or {"now": "2024-03-01T00:00:00Z"} → {"now": …}
 *   POST /__simulator/faults         {"spec": "download:reset@0.3"} or {"rules": [...]} (replaces) → {"rules": …}
 */
import { createHash, createPublicKey } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { SimulatorError } from './errors.js';
import { readP12Certificates, verifyRequest } from './auth.js';
import type { SimulatorKey } from './auth.js';
import type { AnomalyName, SeededAnomaly } from '../data/anomalies.js';
import { createDataset } from '../data/dataset.js';
import type { Dataset, SimOrganization } from '../data/dataset.js';
import { FaultPlan, FaultSpecError, normaliseFaultRules } from './faults.js';
import type { FaultRule } from './faults.js';
import { computeGroundTruth } from '../data/ground-truth.js';
import type { GroundTruth } from '../data/ground-truth.js';
import {
  errorBean,
  gatewayPageReply,
  json,
  reportingError,
  sendReply,
  serverErrorReply,
  unauthorizedReply,
} from '../routes/http-replies.js';
import type { Reply, UnauthorizedShape } from '../routes/http-replies.js';
import { hash32, stableUuid } from '../data/prng.js';
import { reportDefinition } from '../render/report-layouts.js';
import { ReportStore } from '../data/report-store.js';
import type { SubscriptionRecord } from '../data/report-store.js';
import { matchRoute } from '../routes/reporting-routes.js';
import { seedSubscriptionRecords } from './seed-subscriptions.js';
import { ReportFileCache } from '../render/report-cache.js';
import { DAY_MS, isValidDate, utcDate, zonedTime } from '../data/time.js';

export interface SimulatorCredentialOptions {
  merchantId?: string;
  keyId?: string;
  /** Base64 shared secret. */
  sharedSecret?: string;
  /** Meta key: keyId/sharedSecret then belong to this portfolio, which acts for `portfolioMerchants`. */
  portfolioId?: string;
  /** Merchants of the portfolio (default: every simulated organization). */
  portfolioMerchants?: string[];
  /** PKCS#12 file (DER bytes or base64) whose certificates sign RS256 JWTs (kid = subject serialNumber, owner = CN). */
  p12?: { data: Buffer | string; password: string };
  /** RS256 public keys given directly. */
  rsaPublicKeys?: { kid: string; publicKeyPem: string; ownerId: string }[];
}

export interface SimulatorOptions {
  /** 0 (default) = a random free port. */
  port?: number;
  /** 127.0.0.1 by default. */
  host?: string;
  seed?: number;
  /** How many organizations (default 3), or their ids. */
  organizations?: number | string[];
  /** Transactions per organization and UTC day (default 200). */
  transactionsPerDay?: number;
  /** First UTC day with data, YYYY-MM-DD (default 60 days before now). */
  startDate?: string;
  /** Simulated now (default Date.now); `advance()` adds to it. */
  clock?: () => number;
  /** Now for token freshness checks (default Date.now). */
  authClock?: () => number;
  faults?: string | FaultRule[];
  credentials?: SimulatorCredentialOptions;
  /** Share of (organization, day) pairs without transactions (default 0.05). */
  quietDayRate?: number;
  /** Install the default daily subscriptions (default true; ignored when `subscriptions` is given). */
  defaultSubscriptions?: boolean;
  /**
   * Subscriptions that exist from startDate instead of the default ones: PUT report-subscriptions
   * bodies, each with an optional organizationId (default: every organization); see
   * seed-subscriptions.ts. `subscriptionsSource` names them in errors (the file they came from).
   */
  subscriptions?: readonly Record<string, unknown>[];
  subscriptionsSource?: string;
  /**
   * Subscriptions (PUT bodies, as `subscriptions`) installed from startDate besides the default
   * ones; one named like a default subscription takes its place (cybs-etl's declared
   * subscriptions, when it starts the simulator in-process).
   */
  additionalSubscriptions?: readonly Record<string, unknown>[];
  /** Anomalies to seed in the money chain (anomalies.ts), on the first organization. */
  anomalies?: readonly AnomalyName[];
  /**
   * Keep each report file once rendered (in a temporary directory removed on close) and serve
   * later downloads of it from disk, at file speed, as the real service does (default false;
   * the benchmark sets it so that it measures the loader, not the renderer).
   */
  cacheReports?: boolean;
  /**
   * The body of a 401: `gateway` (default), `{"response":{"rmsg":"Authentication Failed"}}` as the
   * API gateway answers a refused signature or token, or `error-bean`, the Error Bean
   * (UNAUTHORIZED); see unauthorizedReply.
   */
  unauthorizedShape?: UnauthorizedShape;
  logger?: Logger;
}

export interface SimulatorCredentials {
  merchantId: string;
  keyId: string;
  sharedSecret: string;
  /** Set when the credentials are a meta key of this portfolio. */
  portfolioId?: string;
}

export interface SimulatorHandle {
  baseUrl: string;
  host: string;
  port: number;
  seed: number;
  /** The primary credentials (from options, or made up from the seed). */
  credentials: SimulatorCredentials;
  /** A meta key of a portfolio that acts for `portfolioMerchants`. */
  portfolioCredentials: SimulatorCredentials & { portfolioId: string };
  /** One merchant key per organization. */
  merchantCredentials: Record<string, SimulatorCredentials>;
  organizations: string[];
  startDate: string;
  dataset: Dataset;
  store: ReportStore;
  /** Simulated now, epoch ms. */
  now(): number;
  /** Move simulated time forward (ms). */
  advance(ms: number): number;
  setFaults(faults: string | FaultRule[]): FaultRule[];
  groundTruth(organizationId: string, startDate: string, endDate: string): GroundTruth;
  /** Where the requested anomalies were seeded. */
  anomalies: readonly SeededAnomaly[];
  /**
   * Authenticated requests per key id: how many are being answered now, and the most at once so far
   * (a client's or a fleet's concurrency per credential, as the service would see it). `reset`:
   * start counting the most at once from now on (after the result is taken).
   */
  requestConcurrency(options?: { reset?: boolean }): Record<string, { inFlight: number; max: number }>;
  close(): Promise<void>;
}

/** The simulated organizations' ids: this prefix and their number (`sim_merchant_1`, …). */
export const SIMULATED_ORGANIZATION_PREFIX = 'sim_merchant_';

/** Names of the default subscriptions each organization starts with. */
export const DEFAULT_SUBSCRIPTION_NAMES = {
  transactionRequest: 'TransactionRequestReport_Daily',
  paymentBatchDetail: 'PaymentBatchDetailReport_Daily_Classic',
  fundingDetail: 'FundingDetailReport_Daily',
  conversionDetail: 'ConversionDetailReport_Daily',
  exceptionWeekly: 'ExceptionDetailReport_Weekly',
} as const;

function secretFrom(seed: number, label: string): string {
  return createHash('sha256').update(`cybs-sim|${seed}|${label}`).digest('base64');
}

function defaultSubscriptions(org: string, startDate: string): SubscriptionRecord[] {
  const make = (
    reportName: string,
    definitionName: string,
    mime: 'text/csv' | 'application/xml',
    timezone: string,
    convention: 'SOAPI' | 'SCMP' | undefined,
    extra: Partial<SubscriptionRecord> = {},
  ): SubscriptionRecord => {
    const def = reportDefinition(definitionName)!;
    const settings = {
      reportDefinitionName: definitionName,
      reportFields: [...def.fields],
      reportMimeType: mime,
      reportFrequency: 'DAILY' as SubscriptionRecord['reportFrequency'],
      reportName,
      timezone,
      startTime: '0000',
      startDay: 1,
      reportFilters: {},
      reportPreferences: convention
        ? { signedAmounts: false, fieldNameConvention: convention }
        : { signedAmounts: false },
      ...extra,
    };
    return {
      organizationId: org,
      ...settings,
      activeFrom: zonedTime(startDate, 0, 0, timezone),
      canonical: JSON.stringify(settings, Object.keys(settings).sort()),
    };
  };
  return [
    make(
      DEFAULT_SUBSCRIPTION_NAMES.transactionRequest,
      'TransactionRequestClass',
      'text/csv',
      'America/Los_Angeles',
      'SOAPI',
    ),
    make(
      DEFAULT_SUBSCRIPTION_NAMES.paymentBatchDetail,
      'PaymentBatchDetailClass',
      'application/xml',
      'GMT',
      undefined,
    ),
    make(DEFAULT_SUBSCRIPTION_NAMES.fundingDetail, 'FundingDetailClass', 'text/csv', 'UTC', 'SCMP'),
    make(
      DEFAULT_SUBSCRIPTION_NAMES.conversionDetail,
      'ConversionDetailClass',
      'text/csv',
      'America/New_York',
      undefined,
    ),
    make(
      DEFAULT_SUBSCRIPTION_NAMES.exceptionWeekly,
      'ExceptionDetailClass',
      'text/csv',
      'Europe/London',
      'SOAPI',
      {
        reportFrequency: 'WEEKLY',
        startDay: 2,
      },
    ),
  ];
}

const MAX_BODY = 1024 * 1024;

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const b = chunk as Buffer;
    size += b.length;
    if (size > MAX_BODY) throw new Error('body too large');
    chunks.push(b);
  }
  return Buffer.concat(chunks);
}

export async function startSimulator(options: SimulatorOptions = {}): Promise<SimulatorHandle> {
  const seed = options.seed ?? 1;
  const baseClock = options.clock ?? Date.now;
  const authClock = options.authClock ?? Date.now;
  let offset = 0;
  const now = (): number => baseClock() + offset;
  const startDate = options.startDate ?? utcDate(now() - 60 * DAY_MS);
  if (!isValidDate(startDate)) {
    throw new SimulatorError('SIMULATOR_OPTIONS', `startDate must be YYYY-MM-DD (got "${startDate}").`, {
      exitCode: 2,
    });
  }
  const given = options.credentials ?? {};
  const orgIds = Array.isArray(options.organizations)
    ? [...options.organizations]
    : Array.from(
        { length: Math.max(1, options.organizations ?? 3) },
        (_, i) => `${SIMULATED_ORGANIZATION_PREFIX}${i + 1}`,
      );
  if (given.merchantId && !orgIds.includes(given.merchantId)) orgIds[0] = given.merchantId;
  for (const id of orgIds) {
    if (!/^[a-zA-Z0-9-_]{1,32}$/.test(id)) {
      throw new SimulatorError(
        'SIMULATOR_OPTIONS',
        `Organization id "${id}" must match [a-zA-Z0-9-_]{1,32}.`,
        { exitCode: 2 },
      );
    }
  }
  const organizations: SimOrganization[] = orgIds.map((id, index) => ({
    id,
    index,
    name: `Simulated Merchant ${index + 1}`,
    accountId: `${id}_acct`,
    accountName: `Simulated Account ${1 + (hash32(`${seed}|${id}`) % 9)}`,
    groupName: String(996411990498708810001n + BigInt(index)),
  }));
  const dataset = createDataset({
    seed,
    organizations,
    transactionsPerDay: options.transactionsPerDay ?? 200,
    startDate,
    ...(options.quietDayRate !== undefined ? { quietDayRate: options.quietDayRate } : {}),
    ...(options.anomalies ? { anomalies: options.anomalies, now: now() } : {}),
  });
  const faults = new FaultPlan(seed, options.faults ? normaliseFaultRules(options.faults) : []);
  const store = new ReportStore({ dataset, faults, seed, now });
  const reportCache = options.cacheReports === true ? await ReportFileCache.create() : undefined;
  const seeded = (list: readonly Record<string, unknown>[]) =>
    seedSubscriptionRecords(list, {
      source: options.subscriptionsSource ?? 'subscriptions',
      organizations: orgIds,
      startDate,
      dataset,
      faults,
      seed,
      now: now(),
    });
  if (options.subscriptions) {
    for (const s of seeded(options.subscriptions)) store.seedSubscription(s);
  } else if (options.defaultSubscriptions !== false) {
    const additional = options.additionalSubscriptions ? seeded(options.additionalSubscriptions) : [];
    for (const org of orgIds) {
      const own = additional.filter((s) => s.organizationId === org);
      for (const s of defaultSubscriptions(org, startDate))
        if (!own.some((a) => a.reportName === s.reportName)) store.seedSubscription(s);
      for (const s of own) store.seedSubscription(s);
    }
  }

  // Keys: one merchant key per organization, one portfolio (meta) key, and the given credentials.
  const keys = new Map<string, SimulatorKey>();
  const rsaKeys = new Map<string, SimulatorKey>();
  const merchantCredentials: Record<string, SimulatorCredentials> = {};
  for (const id of orgIds) {
    const c = {
      merchantId: id,
      keyId: stableUuid(`${seed}|key|${id}`),
      sharedSecret: secretFrom(seed, `merchant|${id}`),
    };
    merchantCredentials[id] = c;
    keys.set(c.keyId, {
      keyId: c.keyId,
      sharedSecret: c.sharedSecret,
      kind: 'merchant',
      ownerId: id,
      merchants: [id],
    });
  }
  const portfolioMerchants = given.portfolioMerchants ?? orgIds;
  let portfolioCredentials: SimulatorHandle['portfolioCredentials'] = {
    merchantId: portfolioMerchants[0] ?? orgIds[0]!,
    portfolioId: `sim_portfolio_${seed}`,
    keyId: stableUuid(`${seed}|key|portfolio`),
    sharedSecret: secretFrom(seed, 'portfolio'),
  };
  let credentials: SimulatorCredentials = merchantCredentials[orgIds[0]!]!;
  if (given.portfolioId) {
    portfolioCredentials = {
      merchantId: given.merchantId ?? portfolioMerchants[0] ?? orgIds[0]!,
      portfolioId: given.portfolioId,
      keyId: given.keyId ?? stableUuid(`${seed}|key|${given.portfolioId}`),
      sharedSecret: given.sharedSecret ?? secretFrom(seed, `portfolio|${given.portfolioId}`),
    };
    credentials = portfolioCredentials;
  } else if (given.keyId || given.sharedSecret || given.merchantId) {
    const id = given.merchantId ?? orgIds[0]!;
    credentials = {
      merchantId: id,
      keyId: given.keyId ?? merchantCredentials[id]!.keyId,
      sharedSecret: given.sharedSecret ?? merchantCredentials[id]!.sharedSecret,
    };
    merchantCredentials[id] = credentials;
    keys.set(credentials.keyId, {
      keyId: credentials.keyId,
      sharedSecret: credentials.sharedSecret,
      kind: 'merchant',
      ownerId: id,
      merchants: [id],
    });
  }
  keys.set(portfolioCredentials.keyId, {
    keyId: portfolioCredentials.keyId,
    sharedSecret: portfolioCredentials.sharedSecret,
    kind: 'portfolio',
    ownerId: portfolioCredentials.portfolioId,
    merchants: portfolioMerchants,
  });
  const rsaOwner = (owner: string): Pick<SimulatorKey, 'kind' | 'merchants'> =>
    owner === portfolioCredentials.portfolioId
      ? { kind: 'portfolio', merchants: portfolioMerchants }
      : { kind: 'merchant', merchants: [owner] };
  if (given.p12) {
    for (const cert of readP12Certificates(given.p12.data, given.p12.password)) {
      rsaKeys.set(cert.kid, {
        keyId: cert.kid,
        publicKey: cert.publicKey,
        ownerId: cert.commonName,
        ...rsaOwner(cert.commonName),
      });
    }
  }
  for (const k of given.rsaPublicKeys ?? []) {
    rsaKeys.set(k.kid, {
      keyId: k.kid,
      publicKey: createPublicKey(k.publicKeyPem),
      ownerId: k.ownerId,
      ...rsaOwner(k.ownerId),
    });
  }

  const log = options.logger;
  const unauthorizedShape = options.unauthorizedShape ?? 'gateway';

  const control = async (req: IncomingMessage, url: URL): Promise<Reply> => {
    const path = url.pathname;
    if (req.method === 'GET' && path === '/__simulator/ground-truth') {
      const org = url.searchParams.get('organizationId') ?? orgIds[0]!;
      const s = url.searchParams.get('startDate') ?? startDate;
      const e = url.searchParams.get('endDate') ?? utcDate(now());
      if (!dataset.organization(org))
        return reportingError(404, 'NOT_FOUND', `Organization ${org} not found`);
      if (!isValidDate(s) || !isValidDate(e) || e < s) {
        return reportingError(
          400,
          'INVALID_DATA',
          'startDate and endDate must be YYYY-MM-DD, endDate not before startDate',
        );
      }
      return json(200, computeGroundTruth({ dataset, store, now: now() }, org, s, e));
    }
    if (req.method === 'GET' && path === '/__simulator/state') {
      return json(200, {
        now: new Date(now()).toISOString(),
        seed,
        startDate,
        organizations: orgIds,
        anomalies: dataset.anomalies,
        subscriptions: store.allSubscriptions().map(({ canonical: _c, ...s }) => ({
          ...s,
          activeFrom: new Date(s.activeFrom).toISOString(),
          ...(s.activeUntil !== undefined ? { activeUntil: new Date(s.activeUntil).toISOString() } : {}),
        })),
        oneTimeReports: store.allAdhoc().map(({ canonical: _c, ...a }) => ({
          ...a,
          start: new Date(a.start).toISOString(),
          end: new Date(a.end).toISOString(),
          createdAt: new Date(a.createdAt).toISOString(),
        })),
        faults: faults.rules(),
      });
    }
    if (req.method === 'GET' && path === '/__simulator/clock')
      return json(200, { now: new Date(now()).toISOString() });
    const body = req.method === 'POST' ? await readBody(req) : Buffer.alloc(0);
    let parsed: Record<string, unknown> = {};
    try {
      parsed = body.length ? (JSON.parse(body.toString('utf8')) as Record<string, unknown>) : {};
    } catch {
      return reportingError(400, 'INVALID_DATA', 'body must be JSON');
    }
    if (req.method === 'POST' && path === '/__simulator/clock') {
      if (typeof parsed['advanceMs'] === 'number' && parsed['advanceMs'] >= 0) offset += parsed['advanceMs'];
      else if (typeof parsed['now'] === 'string' && Number.isFinite(Date.parse(parsed['now']))) {
        const target = Date.parse(parsed['now']);
        if (target < now()) return reportingError(400, 'INVALID_DATA', 'simulated time only moves forward');
        offset += target - now();
      } else
        return reportingError(400, 'INVALID_DATA', 'give {"advanceMs": n} or {"now": "<ISO date-time>"}');
      return json(200, { now: new Date(now()).toISOString() });
    }
    if (req.method === 'POST' && path === '/__simulator/faults') {
      try {
        const rules = normaliseFaultRules(parsed['rules'] ?? parsed['spec'] ?? '');
        faults.set(rules);
        return json(200, { rules: faults.rules() });
      } catch (error) {
        return reportingError(400, 'INVALID_DATA', (error as Error).message);
      }
    }
    return errorBean(404, {
      code: 'RESOURCE_NOTFOUND',
      message: 'Requested Resource Not Found',
      localizationKey: 'cybsapi.resource.notfound',
      detail: `No simulator control endpoint ${req.method} ${path}`,
    });
  };

  const concurrencyByKey = new Map<string, { inFlight: number; max: number }>();
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const rawUrl = req.url ?? '/';
    const url = new URL(rawUrl, 'http://simulator.local');
    const method = (req.method ?? 'GET').toUpperCase();
    if (url.pathname.startsWith('/__simulator/')) {
      await sendReply(res, await control(req, url), []);
      return;
    }
    const prefix = '/reporting/v3';
    const match = url.pathname.startsWith(`${prefix}/`)
      ? matchRoute(method, url.pathname.slice(prefix.length))
      : undefined;
    if (!match) {
      await readBody(req).catch(() => Buffer.alloc(0));
      await sendReply(
        res,
        errorBean(404, {
          code: 'RESOURCE_NOTFOUND',
          message: 'Requested Resource Not Found',
          localizationKey: 'cybsapi.resource.notfound',
          detail: `No resource at ${method} ${url.pathname}`,
        }),
        [],
      );
      return;
    }
    const body = await readBody(req);
    const auth = await verifyRequest(
      { method, url: rawUrl, headers: req.headers, body },
      { byKeyId: (k) => keys.get(k), byRsaKid: (k) => rsaKeys.get(k) },
      { now: authClock() },
    );
    if (!auth.ok) {
      log?.debug({ reason: auth.reason, url: url.pathname }, 'simulator rejected a request');
      const reply =
        auth.status === 401
          ? unauthorizedReply(unauthorizedShape, auth.reason)
          : errorBean(403, {
              code: 'FORBIDDEN',
              message: 'Not authorized',
              localizationKey: 'cybsapi.forbidden',
              detail: auth.reason,
            });
      await sendReply(res, reply, []);
      return;
    }
    const concurrency = concurrencyByKey.get(auth.key.keyId) ?? { inFlight: 0, max: 0 };
    concurrencyByKey.set(auth.key.keyId, concurrency);
    concurrency.inFlight++;
    concurrency.max = Math.max(concurrency.max, concurrency.inFlight);
    try {
      await answer(req, res, method, url, match, body, auth);
    } finally {
      concurrency.inFlight--;
    }
  };

  const answer = async (
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    url: URL,
    match: NonNullable<ReturnType<typeof matchRoute>>,
    body: Buffer,
    auth: Extract<Awaited<ReturnType<typeof verifyRequest>>, { ok: true }>,
  ): Promise<void> => {
    const prefix = '/reporting/v3';
    const drawn = faults.draw(match.route.endpoint);
    const statusFault = drawn.find((f) => ['429', '500', '502', '503'].includes(f.kind));
    let reply: Reply;
    if (drawn.some((f) => f.kind === '401')) {
      reply = unauthorizedReply(unauthorizedShape, 'simulated fault: the key was refused');
    } else if (statusFault) {
      reply = serverErrorReply(Number(statusFault.kind), statusFault.param);
    } else if (drawn.some((f) => f.kind === 'html-page')) {
      reply = gatewayPageReply();
    } else {
      const accept = req.headers['accept'];
      reply = await match.route.handle(
        {
          method,
          path: url.pathname.slice(prefix.length),
          query: url.searchParams,
          body,
          accept: Array.isArray(accept) ? accept.join(',') : accept,
          now: now(),
          merchantId: auth.merchantId,
          allowed: auth.key.merchants,
          dataset,
          store,
          faults,
          seed,
          drawn,
          reportCache,
        },
        match.params,
      );
    }
    await sendReply(res, reply, drawn);
  };

  // Imported here, not at the top: an ESM import of node:http loads Node's own undici (its
  // WebSocket getters) in every command that bundles this module, served or not.
  const { createServer } = await import('node:http');
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      log?.error({ err: error }, 'simulator request failed');
      if (!res.headersSent) {
        void sendReply(res, serverErrorReply(500), []);
      } else {
        res.destroy();
      }
    });
  });
  server.keepAliveTimeout = 5_000;
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    baseUrl: `http://${urlHost}:${port}`,
    host,
    port,
    seed,
    credentials,
    portfolioCredentials,
    merchantCredentials,
    organizations: orgIds,
    startDate,
    dataset,
    store,
    now,
    advance(ms: number) {
      if (!(ms >= 0)) throw new SimulatorError('SIMULATOR_CLOCK', 'Simulated time only moves forward.');
      offset += ms;
      return now();
    },
    setFaults(spec) {
      try {
        faults.set(normaliseFaultRules(spec));
      } catch (error) {
        if (error instanceof FaultSpecError) {
          throw new SimulatorError('SIMULATOR_FAULTS', error.message, { exitCode: 2 });
        }
        throw error;
      }
      return faults.rules();
    },
    groundTruth: (org, s, e) => computeGroundTruth({ dataset, store, now: now() }, org, s, e),
    anomalies: dataset.anomalies,
    requestConcurrency: (options = {}) => {
      const counts = Object.fromEntries([...concurrencyByKey].map(([k, v]) => [k, { ...v }]));
      if (options.reset) for (const c of concurrencyByKey.values()) c.max = c.inFlight;
      return counts;
    },
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await reportCache?.close();
    },
  };
}
