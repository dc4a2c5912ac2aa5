import type { AlertEvent } from '../config/schema.js';

/**
 * The alerts' pure core: what is wrong now (conditions), which incidents that opens or resolves,
 * and the message a webhook receives (a Slack-compatible `text`, with the fields for other
 * receivers beside it).
 */

/** One thing wrong now, keyed by event and subject (the same condition keeps its incident open). */
export interface AlertCondition {
  event: AlertEvent;
  subject: string;
  text: string;
  details: Record<string, unknown>;
  /** Told once, never resolved (a schema change). */
  oneOff?: boolean;
}

export interface OpenIncident {
  id: number;
  event: AlertEvent;
  subject: string;
}

/** The conditions without an open incident (to open), and the open incidents without a condition (to resolve). */
export function diffIncidents(
  conditions: readonly AlertCondition[],
  open: readonly OpenIncident[],
): { opening: AlertCondition[]; resolving: OpenIncident[] } {
  const key = (x: { event: string; subject: string }) => `${x.event}\u0000${x.subject}`;
  const current = new Set(conditions.map(key));
  const opened = new Set(open.map(key));
  return {
    opening: conditions.filter((c) => !opened.has(key(c))),
    resolving: open.filter((i) => !current.has(key(i))),
  };
}

export interface AlertMessage {
  /** Slack (and Mattermost, Teams workflows, Discord's /slack endpoint) show this. */
  text: string;
  event: AlertEvent | 'test';
  status: 'open' | 'resolved' | 'test';
  subject: string;
  details: Record<string, unknown>;
  at: string;
}

const EVENT_TITLES: Record<AlertEvent, string> = {
  window_failed: 'window failed',
  pipeline_stale: 'pipeline stale',
  schema_change: 'schema change',
  rejects: 'rejected rows',
};

export function openingMessage(c: AlertCondition, at: Date): AlertMessage {
  return {
    text: `:red_circle: cybs-etl ${EVENT_TITLES[c.event]}: ${c.text}`,
    event: c.event,
    status: 'open',
    subject: c.subject,
    details: c.details,
    at: at.toISOString(),
  };
}

export function resolvedMessage(
  i: { event: AlertEvent; subject: string; text: string },
  at: Date,
): AlertMessage {
  return {
    text: `:large_green_circle: cybs-etl resolved, ${EVENT_TITLES[i.event]}: ${i.subject} (was: ${i.text})`,
    event: i.event,
    status: 'resolved',
    subject: i.subject,
    details: {},
    at: at.toISOString(),
  };
}

export function testMessage(at: Date): AlertMessage {
  return {
    text: ':white_check_mark: cybs-etl test alert: this webhook receives the alerts of cybs-etl.',
    event: 'test',
    status: 'test',
    subject: 'test',
    details: {},
    at: at.toISOString(),
  };
}

/** The webhooks' wait before attempt `attempt` (1-based, the first is immediate): doubling from `firstMs`. */
export function alertRetryDelayMs(attempt: number, firstMs: number): number {
  return attempt <= 1 ? 0 : firstMs * 2 ** (attempt - 2);
}
