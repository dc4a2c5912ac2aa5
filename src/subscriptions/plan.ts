/**
 * The plan (pure): declared vs live subscriptions of each organization, attribute by attribute, like
 * a terraform plan. `create` and `update` are PUTs, `delete` a DELETE (only with prune); live
 * subscriptions that are not declared are `unmanaged` without prune and left alone.
 */
import type { ReportSubscription } from '../api/types.js';
import type { SubscriptionDecl } from '../config/subscriptions-schema.js';
import { SETTING_KEYS, declarationsFor, declaredSettings, liveSettings } from './declared-subscriptions.js';
import type { SettingKey, SubscriptionSettings } from './declared-subscriptions.js';

export interface AttributeChange {
  key: SettingKey;
  from: unknown;
  to: unknown;
}

export type PlannedAction =
  | {
      kind: 'create';
      organizationId: string;
      reportName: string;
      decl: SubscriptionDecl;
      settings: SubscriptionSettings;
    }
  | {
      kind: 'update';
      organizationId: string;
      reportName: string;
      decl: SubscriptionDecl;
      changes: AttributeChange[];
    }
  | { kind: 'unchanged'; organizationId: string; reportName: string; decl: SubscriptionDecl }
  | { kind: 'delete'; organizationId: string; reportName: string }
  | { kind: 'unmanaged'; organizationId: string; reportName: string };

export interface SubscriptionPlan {
  actions: PlannedAction[];
  counts: { create: number; update: number; delete: number; unchanged: number; unmanaged: number };
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Differences between live and declared settings, in display order. */
export function diffSettings(live: SubscriptionSettings, wanted: SubscriptionSettings): AttributeChange[] {
  const out: AttributeChange[] = [];
  for (const key of SETTING_KEYS) {
    if (!same(live[key], wanted[key])) out.push({ key, from: live[key], to: wanted[key] });
  }
  return out;
}

export function planSubscriptions(
  decls: readonly SubscriptionDecl[],
  live: ReadonlyMap<string, readonly ReportSubscription[]>,
  options: { prune: boolean },
): SubscriptionPlan {
  const actions: PlannedAction[] = [];
  for (const [organizationId, subscriptions] of live) {
    const byName = new Map(subscriptions.map((s) => [s.reportName, s]));
    const declared = declarationsFor(decls, organizationId);
    for (const decl of declared) {
      const wanted = declaredSettings(decl);
      const existing = byName.get(decl.reportName);
      if (!existing) {
        actions.push({ kind: 'create', organizationId, reportName: decl.reportName, decl, settings: wanted });
        continue;
      }
      const changes = diffSettings(liveSettings(existing), wanted);
      actions.push(
        changes.length > 0
          ? { kind: 'update', organizationId, reportName: decl.reportName, decl, changes }
          : { kind: 'unchanged', organizationId, reportName: decl.reportName, decl },
      );
    }
    const names = new Set(declared.map((d) => d.reportName));
    for (const s of subscriptions) {
      if (names.has(s.reportName)) continue;
      actions.push({
        kind: options.prune ? 'delete' : 'unmanaged',
        organizationId,
        reportName: s.reportName,
      });
    }
  }
  const counts = { create: 0, update: 0, delete: 0, unchanged: 0, unmanaged: 0 };
  for (const a of actions) counts[a.kind]++;
  return { actions, counts };
}

export function hasChanges(plan: SubscriptionPlan): boolean {
  return plan.counts.create + plan.counts.update + plan.counts.delete > 0;
}

function show(value: unknown): string {
  if (value === null || value === undefined) return '(none)';
  if (typeof value === 'string') return JSON.stringify(value);
  return JSON.stringify(value);
}

/** Field lists are shown as what is added and removed (and a note when only the order differs). */
function describeChange(change: AttributeChange): string[] {
  if (change.key === 'reportFields' && Array.isArray(change.from) && Array.isArray(change.to)) {
    const from = change.from as string[];
    const to = change.to as string[];
    const added = to.filter((f) => !from.includes(f));
    const removed = from.filter((f) => !to.includes(f));
    const lines = [
      ...added.map((f) => `      + reportFields ${f}`),
      ...removed.map((f) => `      - reportFields ${f}`),
    ];
    if (lines.length === 0) lines.push('      ~ reportFields: same fields, new order');
    return lines;
  }
  return [`      ~ ${change.key}: ${show(change.from)} → ${show(change.to)}`];
}

/** The plan as text, one block per organization. */
export function formatPlan(plan: SubscriptionPlan): string {
  const lines: string[] = [];
  const orgs = [...new Set(plan.actions.map((a) => a.organizationId))];
  for (const org of orgs) {
    lines.push(`Organization ${org}`);
    for (const a of plan.actions.filter((x) => x.organizationId === org)) {
      switch (a.kind) {
        case 'create':
          lines.push(`  + ${a.reportName} (create)`);
          for (const key of SETTING_KEYS) {
            const v = a.settings[key];
            if (v === null) continue;
            if (key === 'reportFields')
              for (const f of v as string[]) lines.push(`      + reportFields ${f}`);
            else lines.push(`      + ${key}: ${show(v)}`);
          }
          break;
        case 'update':
          lines.push(`  ~ ${a.reportName} (update)`);
          for (const c of a.changes) lines.push(...describeChange(c));
          break;
        case 'delete':
          lines.push(`  - ${a.reportName} (delete)`);
          break;
        case 'unchanged':
          lines.push(`    ${a.reportName} (no change)`);
          break;
        case 'unmanaged':
          lines.push(`    ${a.reportName} (not declared; kept — apply --prune deletes it)`);
          break;
      }
    }
    lines.push('');
  }
  const c = plan.counts;
  lines.push(
    hasChanges(plan)
      ? `Plan: ${c.create} to create, ${c.update} to change, ${c.delete} to delete.`
      : 'No changes: the live subscriptions match config.yaml.',
  );
  return `${lines.join('\n')}\n`;
}

/** A subscription an enabled pipeline reads: its report name, for these organizations. */
export interface SubscriptionReader {
  pipeline: string;
  reportName: string;
  organizations: readonly string[];
}

/** A deletion of the plan that would take away a subscription an enabled pipeline reads. */
export interface ProtectedDeletion {
  organizationId: string;
  reportName: string;
  pipeline: string;
}

/** The plan's deletions of subscriptions that enabled pipelines read (apply --prune refuses them). */
export function protectedDeletions(
  plan: SubscriptionPlan,
  readers: readonly SubscriptionReader[],
): ProtectedDeletion[] {
  const out: ProtectedDeletion[] = [];
  for (const a of plan.actions) {
    if (a.kind !== 'delete') continue;
    for (const r of readers) {
      if (r.reportName === a.reportName && r.organizations.includes(a.organizationId))
        out.push({ organizationId: a.organizationId, reportName: a.reportName, pipeline: r.pipeline });
    }
  }
  return out;
}

/** Why a prune is refused: one sentence naming each subscription, its organizations and the pipeline that reads it. */
export function refusedPruneMessage(found: readonly ProtectedDeletion[]): string {
  const groups = new Map<string, { reportName: string; pipeline: string; organizations: string[] }>();
  for (const p of found) {
    const key = `${p.reportName}\u0000${p.pipeline}`;
    const g = groups.get(key) ?? { reportName: p.reportName, pipeline: p.pipeline, organizations: [] };
    g.organizations.push(p.organizationId);
    groups.set(key, g);
  }
  const named = [...groups.values()]
    .map((g) => {
      const orgs =
        g.organizations.length > 3
          ? `${g.organizations.slice(0, 3).join(', ')} and ${g.organizations.length - 3} more`
          : g.organizations.join(', ');
      return `${g.reportName} of ${orgs} (read by the enabled pipeline ${g.pipeline})`;
    })
    .join(', ');
  const pipelines = [...new Set(found.map((p) => p.pipeline))];
  return (
    `--prune would delete ${named}, so nothing was changed: declare ${groups.size === 1 ? 'it' : 'them'} ` +
    `under subscriptions: in config.yaml, or disable ${pipelines.map((p) => `pipelines.${p}`).join(', ')} (enabled: false) first.`
  );
}
