import type { Command } from 'commander';
import { freshnessSeconds } from '../config/schema.js';
import type { Config } from '../config/schema.js';
import { configError } from '../errors.js';
import type { Db } from '../warehouse/warehouse.js';
import { diffIncidents, openingMessage, resolvedMessage, testMessage } from '../observability/alerts.js';
import type { AlertMessage } from '../observability/alerts.js';
import type { Logger } from '../observability/logger.js';
import { resolveWebhook, sendWebhook } from '../observability/webhooks.js';
import type { WebhookTarget } from '../observability/webhooks.js';
import {
  markTold,
  openIncident,
  readAlertConditions,
  readOpenIncidents,
  readUntoldIncidents,
  resolveIncident,
} from '../state/alert-incidents.js';
import type { CliContext } from './context.js';
import type { Runtime } from './runtime.js';

export interface AlertDeps {
  db: Db;
  config: Config;
  env: Record<string, string | undefined>;
  logger: Logger;
  now: Date;
}

/** Schema changes older than this when alerts are first evaluated are history, not news. */
const SCHEMA_CHANGE_HORIZON_MS = 24 * 3_600_000;

function webhookTargets(config: Config, env: Record<string, string | undefined>): WebhookTarget[] {
  return config.alerts.webhooks.map((w, i) => resolveWebhook(w, i, env));
}

/** Send one message to every webhook that takes its event; whether all of them received it. */
async function deliver(
  targets: readonly WebhookTarget[],
  message: AlertMessage,
  deps: Pick<AlertDeps, 'config' | 'logger'>,
): Promise<boolean> {
  let all = true;
  for (const target of targets) {
    if (message.event !== 'test' && target.events && !target.events.includes(message.event)) continue;
    const ok = await sendWebhook(target, message, {
      attempts: deps.config.alerts.attempts,
      retryDelayMs: deps.config.alerts.retryDelayMs,
      logger: deps.logger,
    });
    if (ok)
      deps.logger.info({ webhook: target.label, event: message.event, status: message.status }, 'alert sent');
    else all = false;
  }
  return all;
}

/**
 * Evaluate the alerts once: open an incident for each condition that has none, resolve those whose
 * condition is gone, and tell the webhooks every opening and resolution not told yet (a delivery
 * that failed is tried again at the next evaluation). Returns the counts; does nothing without
 * webhooks.
 */
export async function evaluateAlerts(
  deps: AlertDeps,
): Promise<{ opened: number; resolved: number; told: number }> {
  const targets = webhookTargets(deps.config, deps.env);
  if (targets.length === 0) return { opened: 0, resolved: 0, told: 0 };
  const conditions = await readAlertConditions(deps.db, {
    now: deps.now,
    freshnessSeconds: (p) => freshnessSeconds(deps.config, p),
    rejectsShare: deps.config.alerts.rejectsShare,
    schemaChangesSince: new Date(deps.now.getTime() - SCHEMA_CHANGE_HORIZON_MS),
  });
  const { opening, resolving } = diffIncidents(conditions, await readOpenIncidents(deps.db));
  let opened = 0;
  let resolved = 0;
  for (const c of opening) if ((await openIncident(deps.db, c)) !== undefined) opened++;
  for (const i of resolving) if ((await resolveIncident(deps.db, i.id)) !== undefined) resolved++;
  let told = 0;
  for (const incident of await readUntoldIncidents(deps.db)) {
    const message =
      incident.side === 'open'
        ? openingMessage({ ...incident, details: incident.details }, deps.now)
        : resolvedMessage(incident, deps.now);
    if (await deliver(targets, message, deps)) {
      await markTold(deps.db, incident.id, incident.side);
      told++;
    }
  }
  return { opened, resolved, told };
}

/** evaluateAlerts for a daemon or a run: a failure is logged, never the caller's. */
export async function evaluateAlertsLogged(deps: AlertDeps): Promise<void> {
  try {
    const r = await evaluateAlerts(deps);
    if (r.opened + r.resolved + r.told > 0) deps.logger.info(r, 'alerts evaluated');
  } catch (error) {
    deps.logger.warn({ error: (error as Error).message }, 'alerts were not evaluated');
  }
}

/** The evaluation at the end of a run or backfill, with its runtime's warehouse, config, logger and clock. */
export async function evaluateAlertsAfterPass(
  rt: Pick<Runtime, 'warehouse' | 'config' | 'logger' | 'now'>,
  env: Record<string, string | undefined>,
): Promise<void> {
  await evaluateAlertsLogged({
    db: rt.warehouse.db,
    config: rt.config,
    env,
    logger: rt.logger,
    now: rt.now(),
  });
}

export function registerAlertsCommand(program: Command, ctx: CliContext): void {
  const alerts = program
    .command('alerts')
    .description(
      'webhook alerts (config alerts.webhooks): failed windows, stale pipelines, schema changes, rejects',
    );
  alerts
    .command('test')
    .description('send one test alert to every configured webhook')
    .action(async () => {
      const config = await ctx.config();
      const logger = await ctx.logger();
      const targets = webhookTargets(config, ctx.io.env);
      if (targets.length === 0)
        throw configError('No webhooks to test: add alerts.webhooks (each with a url) to the config.');
      let failed = 0;
      for (const target of targets) {
        const ok = await deliver([target], testMessage(ctx.now()), { config, logger });
        ctx.io.stdout.write(
          `${target.label}: ${ok ? 'test alert delivered' : 'NOT delivered (see the log)'}\n`,
        );
        if (!ok) failed++;
      }
      if (failed > 0) ctx.exitCode = 1;
    });
  alerts
    .command('check')
    .description(
      'evaluate the alerts now and tell the webhooks (the schedule daemon does this after every pass)',
    )
    .action(async () => {
      const config = await ctx.config();
      const warehouse = await ctx.warehouse();
      const r = await evaluateAlerts({
        db: warehouse.db,
        config,
        env: ctx.io.env,
        logger: await ctx.logger(),
        now: ctx.now(),
      });
      ctx.io.stdout.write(
        `Alerts: ${r.opened} incident(s) opened, ${r.resolved} resolved, ${r.told} message(s) delivered.\n`,
      );
    });
}
