import type { Command } from 'commander';
import { createReportingClient } from '../api/reporting-client.js';
import type { Config } from '../config/schema.js';
import { configFile } from '../config/load-config.js';
import { CybsError, configError } from '../errors.js';
import { applyPlan, fetchLiveSubscriptions } from '../subscriptions/apply.js';
import type { SubscriptionDeps } from '../subscriptions/apply.js';
import { liveSettings, managedOrganizations } from '../subscriptions/declared-subscriptions.js';
import {
  formatPlan,
  hasChanges,
  planSubscriptions,
  protectedDeletions,
  refusedPruneMessage,
} from '../subscriptions/plan.js';
import type { SubscriptionPlan, SubscriptionReader } from '../subscriptions/plan.js';
import { resolvePipelines } from '../pipeline/resolve-pipelines.js';
import { YES_OPTION, confirmChange } from './confirm.js';
import type { CliContext } from './context.js';
import { SIMULATOR_OPTION, chooseService, connectService } from './service-access.js';
import { formatTable } from './sql.js';

interface ApiAccess extends SubscriptionDeps {
  /** The organizations "every organization" means: config's, else the credential's (or the simulator's). */
  organizations: string[];
}

/**
 * The API client of the subscriptions commands (no warehouse): the credentials', or the built-in
 * simulator on the same terms as `run` (chooseService), which says so.
 */
async function connect(ctx: CliContext, config: Config, simulator: boolean): Promise<ApiAccess> {
  const logger = await ctx.logger();
  const choice = chooseService(ctx, config, { simulator });
  const { credentials, target, defaultOrganizations, partner } = await connectService(ctx, choice, {
    simulator: { logger },
    announce: (line) => ctx.io.stderr.write(`${line}\n`),
  });
  const client = createReportingClient({ credentials, target, api: config.api }, { logger });
  ctx.onClose(() => client.close());
  const configured = new Set([
    ...(config.defaults.organizations ?? []),
    ...Object.values(config.pipelines).flatMap((p) => p.organizations ?? []),
  ]);
  return {
    client,
    organizationParam: (org) => (partner || org !== credentials.merchantId ? org : undefined),
    organizations: configured.size > 0 ? [...configured] : defaultOrganizations,
  };
}

function declared(config: Config) {
  if (!config.subscriptions) {
    throw configError(
      `${configFile(config)} declares no "subscriptions:"; add the list of report subscriptions to manage (see README, "Subscriptions as code").`,
      { file: configFile(config) },
    );
  }
  return config.subscriptions;
}

/** The subscriptions the enabled report pipelines read, per organization (what --prune must keep). */
function readers(ctx: CliContext, config: Config, organizations: string[]): SubscriptionReader[] {
  return resolvePipelines(ctx.pipelines, config, { defaultOrganizations: organizations, now: ctx.now() })
    .filter((p) => p.enabled && p.reportName !== undefined)
    .map((p) => ({ pipeline: p.name, reportName: p.reportName!, organizations: p.organizations }));
}

/** Deletions that would take a subscription from an enabled pipeline, as the refusal (exit 1). */
function refusal(
  ctx: CliContext,
  config: Config,
  api: ApiAccess,
  plan: SubscriptionPlan,
): CybsError | undefined {
  const found = protectedDeletions(plan, readers(ctx, config, api.organizations));
  if (found.length === 0) return undefined;
  return new CybsError('SUBSCRIPTION_IN_USE', refusedPruneMessage(found), { stage: 'cli', exitCode: 1 });
}

function scope(all: string[], only: string | undefined): string[] {
  if (!only) return all;
  return [only];
}

export function registerSubscriptionsCommand(program: Command, ctx: CliContext): void {
  const command = program
    .command('subscriptions')
    .description('list, plan and apply the report subscriptions declared in config.yaml');

  command
    .command('list')
    .description('show the live report subscriptions of each organization')
    .option('--organization-id <id>', 'only this organization')
    .option('--json', 'machine-readable output', false)
    .option(...SIMULATOR_OPTION)
    .action(async (opts: { organizationId?: string; json: boolean; simulator: boolean }) => {
      const config = await ctx.config();
      const api = await connect(ctx, config, opts.simulator);
      const orgs = scope(
        managedOrganizations(config.subscriptions ?? [], api.organizations),
        opts.organizationId,
      );
      const live = await fetchLiveSubscriptions(api, orgs);
      const rows = [...live].flatMap(([org, subs]) =>
        subs.map((s) => {
          const n = liveSettings(s);
          return {
            organization: org,
            reportName: n.reportName,
            definition: n.reportDefinitionName,
            format: n.reportMimeType,
            frequency: n.reportFrequency + (n.startDay !== null ? ` (day ${n.startDay})` : ''),
            timezone: n.timezone,
            startTime: n.startTime,
            fields: String(n.reportFields.length),
          };
        }),
      );
      if (opts.json) {
        ctx.io.stdout.write(`${JSON.stringify(Object.fromEntries(live), null, 2)}\n`);
      } else {
        ctx.io.stdout.write(rows.length > 0 ? formatTable(rows) : 'No subscriptions.\n');
      }
    });

  command
    .command('plan')
    .description(
      'show, attribute by attribute, what apply would create, change or delete (exit 0; 1 on error; --detailed-exitcode: 2 on changes)',
    )
    .option('--prune', 'plan to delete live subscriptions that config.yaml does not declare', false)
    .option('--organization-id <id>', 'only this organization')
    .option(
      '--detailed-exitcode',
      'exit 2 when there are changes (0 when none, 1 on error), as terraform plan',
      false,
    )
    .option(...SIMULATOR_OPTION)
    .action(
      async (opts: {
        prune: boolean;
        organizationId?: string;
        detailedExitcode: boolean;
        simulator: boolean;
      }) => {
        const config = await ctx.config();
        const decls = declared(config);
        const api = await connect(ctx, config, opts.simulator);
        const orgs = scope(managedOrganizations(decls, api.organizations), opts.organizationId);
        const plan = planSubscriptions(decls, await fetchLiveSubscriptions(api, orgs), { prune: opts.prune });
        ctx.io.stdout.write(formatPlan(plan));
        const refused = refusal(ctx, config, api, plan);
        if (refused) throw refused;
        if (opts.detailedExitcode && hasChanges(plan)) ctx.exitCode = 2;
      },
    );

  command
    .command('apply')
    .description(
      'show the plan, ask, then create or update the declared subscriptions (PUT); --prune also deletes undeclared ones',
    )
    .option(
      '--prune',
      'delete live subscriptions that config.yaml does not declare (never one an enabled pipeline reads)',
      false,
    )
    .option('--organization-id <id>', 'only this organization')
    .option(...YES_OPTION)
    .option(...SIMULATOR_OPTION)
    .action(async (opts: { prune: boolean; organizationId?: string; yes: boolean; simulator: boolean }) => {
      const config = await ctx.config();
      const decls = declared(config);
      const api = await connect(ctx, config, opts.simulator);
      const orgs = scope(managedOrganizations(decls, api.organizations), opts.organizationId);
      const plan = planSubscriptions(decls, await fetchLiveSubscriptions(api, orgs), { prune: opts.prune });
      const out = ctx.io.stdout;
      out.write(formatPlan(plan));
      const refused = refusal(ctx, config, api, plan);
      if (refused) throw refused;
      if (!hasChanges(plan)) return;
      const go = await confirmChange(ctx, {
        yes: opts.yes,
        question: 'Apply these changes to the live subscriptions?',
        what: 'subscriptions apply',
      });
      if (!go) return;
      const results = await applyPlan(api, plan);
      out.write('\n');
      for (const r of results) {
        const what = r.outcome === 'not-modified' ? 'already so (304)' : r.outcome;
        out.write(`  ${r.organizationId} ${r.reportName}: ${what}${r.message ? `: ${r.message}` : ''}\n`);
      }
      const failed = results.filter((r) => r.outcome === 'failed').length;
      out.write(
        failed > 0
          ? `\nApply finished with ${failed} refused request(s); the others were applied.\n`
          : `\nApply complete: ${results.length} change(s).\n`,
      );
      if (failed > 0) ctx.exitCode = 1;
    });
}
