import { Agent, request } from 'undici';
import type { AlertEvent } from '../config/schema.js';
import { configError } from '../errors.js';
import type { AlertMessage } from './alerts.js';
import { alertRetryDelayMs } from './alerts.js';
import type { Logger } from './logger.js';
import { REDACTED, scrubSecrets } from './redact.js';

/** A webhook of config `alerts.webhooks`, its URL as written (with `${VARIABLE}` parts). */
export interface WebhookConfig {
  url: string;
  events?: readonly AlertEvent[] | undefined;
}

export interface WebhookTarget {
  /** The URL with its variables read from the environment: a secret, never logged. */
  url: string;
  /** What logs and errors name it by: the URL as written when it has variables, else its origin. */
  label: string;
  events?: readonly AlertEvent[] | undefined;
}

/**
 * Read a webhook's `${VARIABLE}` parts from the environment. A missing variable is a config error
 * naming the webhook and the variable.
 */
export function resolveWebhook(
  webhook: WebhookConfig,
  index: number,
  env: Record<string, string | undefined>,
): WebhookTarget {
  const url = webhook.url.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
    const value = env[name]?.trim();
    if (!value)
      throw configError(
        `alerts.webhooks[${index}].url needs the environment variable ${name}, which is not set; set it to the webhook's URL (or its secret part).`,
      );
    return value;
  });
  if (!/^https?:\/\/[^\s/]+/.test(url) || !URL.canParse(url))
    throw configError(
      `alerts.webhooks[${index}].url is not an http(s) URL once its variables are read from the environment; set them to a webhook's URL.`,
    );
  const label = webhook.url.includes('${') ? webhook.url : `${new URL(url).origin}/${REDACTED}`;
  return { url, label, ...(webhook.events ? { events: webhook.events } : {}) };
}

export interface SendOptions {
  attempts: number;
  retryDelayMs: number;
  logger: Logger;
  /** Waits between attempts (tests pass a recorder; default setTimeout). */
  sleep?: (ms: number) => Promise<void>;
}

/**
 * POST one message to one webhook as JSON, retried with doubling delays on a network error, 429 or
 * 5xx (a 4xx other than 429 will not change); returns whether it was delivered. The URL is never
 * logged: the webhook's label is, and the URL is scrubbed from any error text.
 */
export async function sendWebhook(
  target: WebhookTarget,
  message: AlertMessage,
  options: SendOptions,
): Promise<boolean> {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const secrets = [target.url, new URL(target.url).pathname + new URL(target.url).search].filter(
    (s) => s.length > 1,
  );
  const agent = new Agent({ connectTimeout: 10_000, headersTimeout: 15_000, bodyTimeout: 15_000 });
  try {
    for (let attempt = 1; attempt <= options.attempts; attempt++) {
      const delay = alertRetryDelayMs(attempt, options.retryDelayMs);
      if (delay > 0) await sleep(delay);
      let why: string;
      let retryable = true;
      try {
        const response = await request(target.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': 'cybs-etl' },
          body: JSON.stringify(message),
          dispatcher: agent,
        });
        await response.body.dump();
        if (response.statusCode >= 200 && response.statusCode < 300) return true;
        why = `HTTP ${response.statusCode}`;
        retryable = response.statusCode === 429 || response.statusCode >= 500;
      } catch (error) {
        why = scrubSecrets((error as Error).message, secrets);
      }
      options.logger.warn(
        { webhook: target.label, event: message.event, attempt, of: options.attempts, reason: why },
        retryable && attempt < options.attempts ? 'alert not delivered; retrying' : 'alert not delivered',
      );
      if (!retryable) return false;
    }
    return false;
  } finally {
    await agent.close();
  }
}
