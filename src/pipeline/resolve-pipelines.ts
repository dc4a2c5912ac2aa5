import { DEFAULT_START_DATE_DAYS_AGO } from '../config/defaults.js';
import { configFile } from '../config/load-config.js';
import type { Config, PipelineSettings, SchemaChanges } from '../config/schema.js';
import { configError } from '../errors.js';
import type { ReportSchedule } from '../time/report-periods.js';
import type { PipelineDef } from './define-pipeline.js';
import { addDays, localDate } from '../time/time-zones.js';

/** A pipeline with its effective settings: definition defaults < config defaults < per-pipeline config. */
export interface ResolvedPipeline {
  def: PipelineDef;
  name: string;
  enabled: boolean;
  organizations: string[];
  reportName: string | undefined;
  schedule: { cron: string; timezone: string };
  /** Time zone the windows are cut in (the subscription's for report files, the schedule's otherwise). */
  timeZone: string;
  /** False when config.yaml does not set it: a report pipeline then takes its subscription's zone. */
  timeZoneConfigured: boolean;
  /**
   * Report pipelines: the subscription's schedule, whose periods are the windows (set from the
   * subscription by the runtime; absent: local calendar days in `timeZone`).
   */
  reportSchedule?: ReportSchedule;
  startDate: string;
  lookbackDays: number;
  windowDays: number;
  concurrency: number;
  pageLimit: number;
  readyAfterHours: number;
  notReadyHorizonHours: number;
  rejectThreshold: number;
  /** Columns a source brings that its table lacks: added, or the window fails (config `schemaChanges`). */
  schemaChanges: SchemaChanges;
}

export interface ResolveOptions {
  /** The organizations to load when config names none (the credential's own, or the simulator's). */
  defaultOrganizations: string[];
  now: Date;
}

/** Apply the config to the pipeline definitions; unknown pipeline names are config errors. */
export function resolvePipelines(
  defs: readonly PipelineDef[],
  config: Config,
  options: ResolveOptions,
): ResolvedPipeline[] {
  const byName = new Map(defs.map((d) => [d.name, d]));
  for (const name of Object.keys(config.pipelines)) {
    if (!byName.has(name)) {
      throw configError(
        `${configFile(config)}: unknown pipeline "pipelines.${name}"; known pipelines: ${[...byName.keys()].join(', ')}.`,
        { file: configFile(config), key: `pipelines.${name}` },
      );
    }
  }
  return defs.map((def) => {
    const configured = config.pipelines[def.name];
    const s: PipelineSettings = configured ?? { enabled: def.enabledByDefault };
    // Cron expressions and time zones of the config were checked when it loaded (config/schema.ts).
    const schedule = s.schedule ?? def.defaultSchedule;
    const organizations = s.organizations ?? config.defaults.organizations ?? options.defaultOrganizations;
    return {
      def,
      name: def.name,
      enabled: configured ? (configured.enabled ?? true) : def.enabledByDefault,
      organizations: [...organizations],
      reportName: def.kind === 'report' ? (s.reportName ?? def.defaultReportName) : undefined,
      schedule: { cron: schedule.cron, timezone: schedule.timezone },
      timeZone: s.timezone ?? schedule.timezone,
      timeZoneConfigured: s.timezone !== undefined,
      startDate:
        s.startDate ??
        config.defaults.startDate ??
        addDays(localDate(options.now, schedule.timezone), -DEFAULT_START_DATE_DAYS_AGO),
      lookbackDays:
        s.lookbackDays ?? (def.kind === 'on-demand' ? config.defaults.lookbackDays : def.defaultLookbackDays),
      windowDays: s.windowDays ?? config.defaults.windowDays,
      concurrency: s.concurrency ?? config.defaults.concurrency,
      pageLimit: s.pageLimit ?? 2000,
      readyAfterHours: config.defaults.readyAfterHours,
      notReadyHorizonHours: config.defaults.notReadyHorizonHours,
      rejectThreshold: config.defaults.rejectThreshold,
      schemaChanges: s.schemaChanges ?? config.defaults.schemaChanges,
    };
  });
}

/** Filter by `--pipelines a,b`; unknown names are usage errors. */
export function selectPipelines(
  all: readonly ResolvedPipeline[],
  names: readonly string[] | undefined,
): ResolvedPipeline[] {
  if (!names || names.length === 0) return all.filter((p) => p.enabled);
  const known = new Set(all.map((p) => p.name));
  const unknown = names.filter((n) => !known.has(n));
  if (unknown.length > 0) {
    throw configError(
      `unknown pipeline ${unknown.map((n) => `"${n}"`).join(', ')}; run "cybs-etl pipelines" to list them.`,
    );
  }
  return all.filter((p) => names.includes(p.name));
}
