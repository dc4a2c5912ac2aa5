/**
 * The I/O shell of subscriptions as code: read the live subscriptions of each organization, and
 * carry out a plan with PUT (create or update; 304 = already so) and DELETE (prune only).
 */
import type { ReportingClient } from '../api/reporting-client.js';
import type { ReportSubscription } from '../api/types.js';
import { isApiError } from '../api/errors.js';
import { errorMessage } from '../errors.js';
import { subscriptionRequest } from './declared-subscriptions.js';
import type { SubscriptionPlan } from './plan.js';

export interface SubscriptionDeps {
  client: ReportingClient;
  /** The organizationId query parameter (only a partner acting for a merchant sends one). */
  organizationParam: (organizationId: string) => string | undefined;
}

function params(deps: SubscriptionDeps, organizationId: string): { organizationId?: string } {
  const param = deps.organizationParam(organizationId);
  return param ? { organizationId: param } : {};
}

/** Live subscriptions per organization; the service's 404 "Subscriptions not found" is an empty list. */
export async function fetchLiveSubscriptions(
  deps: SubscriptionDeps,
  organizations: readonly string[],
): Promise<Map<string, ReportSubscription[]>> {
  const out = new Map<string, ReportSubscription[]>();
  for (const org of organizations) {
    try {
      const response = await deps.client.listSubscriptions(params(deps, org));
      out.set(
        org,
        [...response.subscriptions].sort((a, b) => a.reportName.localeCompare(b.reportName)),
      );
    } catch (error) {
      if (isApiError(error) && error.status === 404) out.set(org, []);
      else throw error;
    }
  }
  return out;
}

export interface AppliedAction {
  organizationId: string;
  reportName: string;
  outcome: 'created' | 'updated' | 'not-modified' | 'deleted' | 'failed';
  message?: string;
}

const ORDER = { delete: 0, update: 1, create: 2, unchanged: 3, unmanaged: 3 } as const;

/**
 * Carry out the changes of a plan, one request each; a refused request is reported, the rest go on.
 * Deletions go first, creations last, so that pruning makes room under the 20-subscription limit.
 */
export async function applyPlan(deps: SubscriptionDeps, plan: SubscriptionPlan): Promise<AppliedAction[]> {
  const out: AppliedAction[] = [];
  const ordered = [...plan.actions].sort((a, b) => ORDER[a.kind] - ORDER[b.kind]);
  for (const action of ordered) {
    const { organizationId, reportName } = action;
    try {
      if (action.kind === 'create' || action.kind === 'update') {
        const result = await deps.client.putSubscription(
          subscriptionRequest(action.decl),
          params(deps, organizationId),
        );
        out.push({
          organizationId,
          reportName,
          outcome:
            result === 'not-modified' ? 'not-modified' : action.kind === 'create' ? 'created' : 'updated',
        });
      } else if (action.kind === 'delete') {
        await deps.client.deleteSubscription(reportName, params(deps, organizationId));
        out.push({ organizationId, reportName, outcome: 'deleted' });
      }
    } catch (error) {
      out.push({ organizationId, reportName, outcome: 'failed', message: serviceMessage(error) });
    }
  }
  return out;
}

/** The service's own words for a refused request (message, detail, fields), else the error message. */
export function serviceMessage(error: unknown): string {
  if (isApiError(error) && error.body && error.body.message) {
    const b = error.body;
    const parts = [b.message];
    if (b.detail) parts.push(b.detail);
    else if (b.fields?.length)
      parts.push(b.fields.map((f) => `${f.path ?? ''} ${f.message ?? ''}`.trim()).join('; '));
    else if (b.details?.length)
      parts.push(b.details.map((d) => `${d.field ?? ''} ${d.reason ?? ''}`.trim()).join('; '));
    return `HTTP ${error.status ?? '?'}: ${parts.join(': ')}`;
  }
  return errorMessage(error);
}
