/**
 * `analytics: { enabled: true }`: everything the cybs_analytics models read, in one switch. It
 * enables the pipelines of their tables (src/analytics/sources.ts) and declares, for each report
 * definition they read, the subscription its pipeline downloads (under the pipeline's report name)
 * with the fields they need, so that `subscriptions apply` creates them and a `backfill` loads the
 * history before them from one-time reports with the same fields. A subscription already declared
 * under that name keeps its settings and gains the fields it lacks. A pipeline config.yaml disables
 * explicitly stays disabled, with a warning (its models stay empty).
 */
import { defaultReportName } from '../catalog/index.js';
import { REPORT_SOURCES, analyticsPipelines } from '../analytics/sources.js';
import type { AnalyticsSettings, PipelineSettings } from './schema.js';
import { subscriptionDeclSchema, subscriptionsSchema } from './subscriptions-schema.js';
import type { SubscriptionDecl } from './subscriptions-schema.js';

export interface AnalyticsExpansion {
  pipelines: Record<string, PipelineSettings>;
  subscriptions: SubscriptionDecl[] | undefined;
  warnings: string[];
}

/**
 * The pipelines and subscriptions of a config with the switch applied. `raw` is the config as
 * written (to tell an explicit `enabled: false` from the default).
 */
export function expandAnalytics(
  config: {
    analytics: AnalyticsSettings;
    pipelines: Record<string, PipelineSettings>;
    subscriptions?: SubscriptionDecl[] | undefined;
  },
  raw: Record<string, unknown>,
  file: string,
): AnalyticsExpansion {
  const { pipelines, subscriptions } = config;
  if (!config.analytics.enabled) return { pipelines, subscriptions, warnings: [] };
  const warnings: string[] = [];
  const rawPipelines = (raw.pipelines ?? {}) as Record<string, { enabled?: unknown } | undefined>;
  const nextPipelines: Record<string, PipelineSettings> = { ...pipelines };
  for (const name of analyticsPipelines()) {
    if (rawPipelines[name]?.enabled === false) {
      warnings.push(
        `${file}: key "pipelines.${name}.enabled" is false while analytics is enabled; the models that read its table stay empty`,
      );
      continue;
    }
    nextPipelines[name] = { ...(pipelines[name] ?? {}), enabled: true };
  }
  const declared = [...(subscriptions ?? [])];
  for (const source of REPORT_SOURCES) {
    if (!source.subscribe) continue;
    const reportName = pipelines[source.table]?.reportName ?? defaultReportName(source.reportDefinitionName);
    const index = declared.findIndex((d) => d.reportName === reportName && !d.organizations);
    if (index >= 0) {
      const decl = declared[index]!;
      const missing = source.fields.filter((f) => !decl.reportFields.includes(f));
      if (missing.length > 0) declared[index] = { ...decl, reportFields: [...decl.reportFields, ...missing] };
      continue;
    }
    declared.push(
      subscriptionDeclSchema.parse({
        reportName,
        reportDefinitionName: source.reportDefinitionName,
        reportFields: [...source.fields],
        timezone: config.analytics.timezone,
      }),
    );
  }
  return { pipelines: nextPipelines, subscriptions: subscriptionsSchema.parse(declared), warnings };
}
