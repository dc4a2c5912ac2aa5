/**
 * Subscriptions given to the simulator at its start (`cybs-etl simulator --subscriptions FILE`, or
 * SimulatorOptions.subscriptions): a list of PUT /reporting/v3/report-subscriptions bodies, each
 * with an optional `organizationId` (default: every organization), that exist from the simulator's
 * start date instead of the default subscriptions, so that any schedule can be tried without
 * waiting for simulated days. Each entry goes through the PUT route's own validation, so the
 * simulator holds nothing the service would refuse.
 */
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { SimulatorError } from './errors.js';
import type { Dataset } from '../data/dataset.js';
import type { FaultPlan } from './faults.js';
import type { ReportStore, SubscriptionRecord } from '../data/report-store.js';
import { SUBSCRIPTION_LIMIT } from '../data/report-store.js';
import { matchRoute } from '../routes/reporting-routes.js';
import type { RouteContext } from '../routes/reporting-routes.js';
import { zonedTime } from '../data/time.js';

/** One subscription in the PUT body's shape (plus an optional organizationId). */
export type SubscriptionSeed = Record<string, unknown>;

function optionsError(message: string): SimulatorError {
  return new SimulatorError('SIMULATOR_OPTIONS', message, { exitCode: 2 });
}

/** Read a YAML or JSON list of subscriptions (a top-level list, or `subscriptions:` holding one). */
export async function readSubscriptionsFile(path: string): Promise<SubscriptionSeed[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw optionsError(`${path}: cannot read the subscriptions file (${(error as Error).message}).`);
  }
  let data: unknown;
  try {
    // YAML is a superset of JSON: one parser reads both.
    data = parseYaml(text);
  } catch (error) {
    throw optionsError(`${path}: not YAML or JSON (${(error as Error).message.split('\n')[0]}).`);
  }
  if (data && typeof data === 'object' && !Array.isArray(data) && 'subscriptions' in data) {
    data = (data as { subscriptions: unknown }).subscriptions;
  }
  if (!Array.isArray(data) || data.length === 0) {
    throw optionsError(
      `${path}: expected a non-empty list of subscriptions (PUT report-subscriptions bodies).`,
    );
  }
  return data as SubscriptionSeed[];
}

/**
 * The subscription records of the seeds, each active from local midnight of `startDate` in its
 * zone; errors name `source` (the file) and the entry.
 */
export function seedSubscriptionRecords(
  seeds: readonly unknown[],
  deps: {
    source: string;
    organizations: readonly string[];
    startDate: string;
    dataset: Dataset;
    faults: FaultPlan;
    seed: number;
    now: number;
  },
): SubscriptionRecord[] {
  const put = matchRoute('PUT', '/report-subscriptions');
  if (!put) throw new Error('the simulator has no PUT /report-subscriptions route');
  const out: SubscriptionRecord[] = [];
  seeds.forEach((entry, index) => {
    const name =
      entry && typeof entry === 'object' && typeof (entry as SubscriptionSeed)['reportName'] === 'string'
        ? ` ("${String((entry as SubscriptionSeed)['reportName'])}")`
        : '';
    const where = `${deps.source}: subscription ${index + 1}${name}`;
    if (!entry || typeof entry !== 'object' || Array.isArray(entry)) {
      throw optionsError(`${where}: expected an object in the PUT report-subscriptions body's shape.`);
    }
    const body = entry as SubscriptionSeed;
    const org = body['organizationId'];
    if (org !== undefined && (typeof org !== 'string' || !deps.organizations.includes(org))) {
      throw optionsError(
        `${where}: organizationId ${JSON.stringify(org)} is not one of the simulated organizations (${deps.organizations.join(', ')}).`,
      );
    }
    for (const organizationId of org === undefined ? deps.organizations : [org as string]) {
      let captured: Omit<SubscriptionRecord, 'activeFrom'> | undefined;
      const capture = {
        putSubscription: (record: Omit<SubscriptionRecord, 'activeFrom'>) => {
          captured = record;
          return 'created';
        },
      } as unknown as ReportStore;
      const ctx: RouteContext = {
        method: 'PUT',
        path: '/report-subscriptions',
        query: new URLSearchParams(),
        body: Buffer.from(JSON.stringify({ ...body, organizationId })),
        accept: undefined,
        now: deps.now,
        merchantId: organizationId,
        allowed: deps.organizations,
        dataset: deps.dataset,
        store: capture,
        faults: deps.faults,
        seed: deps.seed,
        drawn: [],
      };
      const reply = put.route.handle(ctx, put.params);
      if (reply instanceof Promise) throw new Error('the PUT /report-subscriptions route is synchronous');
      if (!captured) {
        throw optionsError(`${where}: the service would refuse it (${refusal(reply.body)}).`);
      }
      const record = captured;
      if (out.some((s) => s.organizationId === organizationId && s.reportName === record.reportName)) {
        throw optionsError(
          `${where}: organization ${organizationId} already has a subscription of that name.`,
        );
      }
      if (out.filter((s) => s.organizationId === organizationId).length >= SUBSCRIPTION_LIMIT) {
        throw optionsError(
          `${where}: organization ${organizationId} would have more than ${SUBSCRIPTION_LIMIT} subscriptions.`,
        );
      }
      out.push({ ...record, activeFrom: zonedTime(deps.startDate, 0, 0, record.timezone) });
    }
  });
  return out;
}

/** The reason in a refusal's body (an Error Bean's detail, or a reporting error's details). */
function refusal(body: unknown): string {
  try {
    const parsed = JSON.parse(String(body)) as {
      detail?: string;
      message?: string;
      details?: { field: string; reason: string }[];
    };
    if (parsed.detail) return parsed.detail;
    if (parsed.details?.length) return parsed.details.map((d) => `${d.field}: ${d.reason}`).join('; ');
    return parsed.message ?? 'no reason given';
  } catch {
    return 'no reason given';
  }
}
