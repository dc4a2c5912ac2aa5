import { createReportingClient } from '../api/reporting-client.js';
import type { ReportingClient } from '../api/reporting-client.js';
import type { ReportSubscription } from '../api/types.js';
import { isApiError } from '../api/errors.js';
import type { Config } from '../config/schema.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import type { Logger } from '../observability/logger.js';
import { createMetrics, endpointLabel } from '../observability/metrics.js';
import { OneTimeReports } from '../extract/one-time-reports.js';
import type { Metrics } from '../observability/metrics.js';
import type { PipelineDef } from '../pipeline/define-pipeline.js';
import { createWindowExecutor } from '../pipeline/execute-window.js';
import { resolvePipelines } from '../pipeline/resolve-pipelines.js';
import { sweepStaleSpoolDirs } from '../spool/spool-dirs.js';
import type { ResolvedPipeline } from '../pipeline/resolve-pipelines.js';
import type { WindowExecutor } from '../pipeline/run-pipelines.js';
import type { SimulatorHandle } from '@cybs-etl/simulator';
import { subscriptionRequest } from '../subscriptions/declared-subscriptions.js';
import { scheduleOfSubscription } from '../time/report-periods.js';
import type { CliContext } from './context.js';
import { chooseService, connectService } from './service-access.js';
import type { ServiceAccess } from './service-access.js';
import { CREDENTIAL_VARIABLES } from '../config/env.js';
import { organizationsWithoutPrefix } from '../state/status.js';
import { CybsError } from '../errors.js';
import { credentialGroup } from '../queue/window-jobs.js';

/** Everything a loading command needs, built once per invocation. */
export interface Runtime {
  config: Config;
  logger: Logger;
  warehouse: Warehouse;
  client: ReportingClient;
  metrics: Metrics;
  pipelines: ResolvedPipeline[];
  /** Set when no credentials were given and the built-in simulator stands in for CyberSource. */
  simulator?: SimulatorHandle;
  /** Pipelines that cannot run (e.g. their subscription does not exist), with the reason. */
  unavailable: Map<string, string>;
  organizationParam: (organizationId: string) => string | undefined;
  executor: WindowExecutor;
  /** The clock of this invocation (--now, or real time). */
  now: () => Date;
  /** The API credential's group in the window queue (a hash; see credentialGroup). */
  credentialGroup: string;
  /** One-time reports of backfills, for the windows and report jobs this process runs. */
  oneTimeReports: OneTimeReports;
}

export interface RuntimeOptions {
  defs: readonly PipelineDef[];
  now: Date;
  /** Print the simulator notice to this stream (the loud first lines of `run` without credentials). */
  announce?: (line: string) => void;
  /** Only these pipelines need their subscription looked up. */
  selected?: readonly string[];
  /** `--simulator`: the built-in simulator stands in for CyberSource, whatever the environment holds. */
  simulator?: boolean;
}

/**
 * Build the runtime: warehouse (migrated), API client with metrics, pipelines resolved from config
 * and, for report pipelines, their subscription's schedule and time zone. The service is the
 * credentials' or, only on purpose, the built-in simulator (see chooseService).
 */
export async function createRuntime(ctx: CliContext, options: RuntimeOptions): Promise<Runtime> {
  const config = await ctx.config();
  // Decided before anything starts: without credentials, a PostgreSQL warehouse is a usage error.
  const choice = chooseService(ctx, config, { simulator: options.simulator === true });
  const logger = await ctx.logger();
  const metrics = createMetrics();
  // Spools of earlier runs killed before they could remove them (see spool-dirs.ts).
  await sweepStaleSpoolDirs({ logger });
  const warehouse = await ctx.warehouse();
  // Simulated rows never go into a warehouse that holds real organizations' data.
  if (choice === 'simulator') await refuseRealOrganizations(warehouse);
  // The simulator holds the subscriptions config.yaml declares, as `subscriptions apply` would.
  const declared = (config.subscriptions ?? []).flatMap((decl) => {
    const body = subscriptionRequest(decl) as unknown as Record<string, unknown>;
    return decl.organizations
      ? decl.organizations.map((organizationId) => ({ ...body, organizationId }))
      : [body];
  });
  const service = await connectService(ctx, choice, {
    simulator: {
      transactionsPerDay: 200,
      logger,
      ...(declared.length > 0
        ? { additionalSubscriptions: declared, subscriptionsSource: 'config.yaml' }
        : {}),
    },
    announce: (line) => options.announce?.(line),
  });
  const { credentials, target, defaultOrganizations, partner, simulator } = service;
  const client = createReportingClient(
    { credentials, target, api: config.api },
    {
      logger,
      onEvent: (event) => {
        const endpoint = endpointLabel(event.path);
        if (event.type === 'response') {
          metrics.apiRequests.inc({
            method: event.method,
            endpoint,
            status: String(event.status ?? event.errorCode ?? 'error'),
          });
        } else if (event.type === 'retry') {
          metrics.apiRetries.inc({ endpoint, reason: String(event.status ?? event.errorCode ?? 'error') });
        }
      },
    },
  );
  ctx.onClose(() => client.close());
  const organizationParam = (organizationId: string) =>
    partner || organizationId !== credentials.merchantId ? organizationId : undefined;
  const pipelines = resolvePipelines(options.defs, config, { defaultOrganizations, now: options.now });
  const unavailable = await applySubscriptionSchedules(
    client,
    pipelines,
    organizationParam,
    logger,
    options.selected,
  );
  // Used by backfills' windows only (their jobs carry the backfill's range), by any process.
  const oneTimeReports = new OneTimeReports({ client, logger }, { now: () => ctx.now() });
  ctx.onClose(() => oneTimeReports.close());
  const executor = createWindowExecutor({
    warehouse,
    client,
    logger,
    metrics,
    organizationParam,
    oneTimeReports,
  });
  return {
    config,
    logger,
    warehouse,
    client,
    metrics,
    pipelines,
    ...(simulator ? { simulator } : {}),
    unavailable,
    organizationParam,
    executor,
    now: () => ctx.now(),
    credentialGroup: credentialGroupOf(credentials),
    oneTimeReports,
  };
}

/** The window queue's group of an API credential: its jobs share the credential's concurrency limit. */
export function credentialGroupOf(credentials: ServiceAccess['credentials']): string {
  return credentialGroup({
    merchantId: credentials.portfolioId ?? credentials.merchantId,
    keyId: credentials.keyId ?? credentials.keyAlias ?? credentials.p12Path ?? '',
  });
}

/**
 * A report pipeline's windows are its subscription's report periods, in its time zone (reportDate is
 * the end date there): look the subscription up for its schedule (frequency, startTime, startDay,
 * reportInterval) and zone; config.yaml's `timezone`, when set, overrides the zone. A pipeline whose
 * subscription does not exist, or whose schedule cannot be planned, cannot run; it is reported, not
 * silently skipped.
 */
async function applySubscriptionSchedules(
  client: ReportingClient,
  pipelines: ResolvedPipeline[],
  organizationParam: (org: string) => string | undefined,
  logger: Logger,
  selected: readonly string[] | undefined,
): Promise<Map<string, string>> {
  const unavailable = new Map<string, string>();
  for (const p of pipelines) {
    if (p.def.kind !== 'report') continue;
    if (selected ? !selected.includes(p.name) : !p.enabled) continue;
    const organizationId = p.organizations[0];
    if (!organizationId || !p.reportName) continue;
    const param = organizationParam(organizationId);
    let subscription: ReportSubscription;
    try {
      subscription = await client.getSubscription(p.reportName, param ? { organizationId: param } : {});
    } catch (error) {
      if (isApiError(error) && error.status === 404) {
        unavailable.set(
          p.name,
          `subscription "${p.reportName}" does not exist for organization ${organizationId}; declare it (cybs-etl subscriptions apply) or set pipelines.${p.name}.reportName`,
        );
        continue;
      }
      throw error;
    }
    if (!p.timeZoneConfigured && subscription.timezone) p.timeZone = subscription.timezone;
    const schedule = scheduleOfSubscription(subscription, p.timeZone);
    if (typeof schedule === 'string') {
      unavailable.set(p.name, `subscription "${p.reportName}": ${schedule}`);
      continue;
    }
    p.reportSchedule = schedule;
    logger.debug(
      { pipeline: p.name, timeZone: p.timeZone, schedule },
      'report pipeline periods from its subscription',
    );
  }
  return unavailable;
}

/**
 * Refuse to load simulated rows into a warehouse that already holds organizations other than the
 * simulator's (etl.windows, etl.sources): real data and made-up merchants never share a warehouse.
 */
export async function refuseRealOrganizations(warehouse: Warehouse): Promise<void> {
  const { SIMULATED_ORGANIZATION_PREFIX } = await import('@cybs-etl/simulator');
  const real = await organizationsWithoutPrefix(warehouse.db, SIMULATED_ORGANIZATION_PREFIX, 4);
  if (real.length === 0) return;
  const named = real.length > 3 ? `${real.slice(0, 3).join(', ')}, …` : real.join(', ');
  throw new CybsError(
    'SIMULATOR_REAL_WAREHOUSE',
    `the warehouse ${warehouse.location} holds data of real organizations (${named}), so the built-in simulator's made-up merchants are not loaded into it: set ${CREDENTIAL_VARIABLES} to load from CyberSource, or use another warehouse for the simulator.`,
    { stage: 'cli', exitCode: 2 },
  );
}
