import type { Config } from '../config/schema.js';
import { isApiError, isTransientTransportError } from './errors.js';

/** Retry settings (config `api.retry`). */
export type RetryConfig = Config['api']['retry'];

/** Outcome of a failed attempt: give up (with why) or wait `delayMs` and try again. */
export type RetryDecision =
  { retry: true; delayMs: number; reason: string } | { retry: false; reason: string };

/**
 * Parse a Retry-After header: delay-seconds or an HTTP date (relative to `nowMs`). Returns
 * milliseconds (never negative), or undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/**
 * Backoff before retry number `attempt` (1 = after the first failed attempt): exponential with full
 * jitter, `random() * min(maxDelayMs, minDelayMs * 2^(attempt-1))`; a Retry-After given by the server
 * replaces it, capped at maxDelayMs.
 */
export function computeRetryDelay(
  attempt: number,
  policy: Pick<RetryConfig, 'minDelayMs' | 'maxDelayMs'>,
  random: () => number,
  retryAfterMs?: number,
): number {
  if (retryAfterMs !== undefined) return Math.min(Math.max(0, retryAfterMs), policy.maxDelayMs);
  const ceiling = Math.min(policy.maxDelayMs, policy.minDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
}

/** Whether a failure can be cured by sending the same request again (pure). */
export function isRetryableError(error: unknown): boolean {
  if (isApiError(error)) return error.retryable;
  return isTransientTransportError(error);
}

export interface RetryInput {
  error: unknown;
  /** Number of the attempt that just failed, starting at 1. */
  attempt: number;
  /** Time since the first attempt started. */
  elapsedMs: number;
  nowMs: number;
  policy: RetryConfig;
  random: () => number;
}

/**
 * Decide whether and when to retry (pure): 429/500/502/503/504, socket errors and timeouts retry;
 * 400/401/403/404 and anything else do not; never more than `attempts` attempts, and never past
 * `maxTotalMs` since the first attempt (a retry whose wait would cross that line is not made).
 */
export function decideRetry(input: RetryInput): RetryDecision {
  const { error, attempt, policy } = input;
  if (!isRetryableError(error)) return { retry: false, reason: 'not retryable' };
  if (attempt >= policy.attempts) return { retry: false, reason: `gave up after ${attempt} attempts` };
  const retryAfterMs = isApiError(error) ? parseRetryAfter(error.retryAfter, input.nowMs) : undefined;
  const delayMs = computeRetryDelay(attempt, policy, input.random, retryAfterMs);
  if (input.elapsedMs + delayMs > policy.maxTotalMs) {
    return { retry: false, reason: `gave up after ${attempt} attempts and ${input.elapsedMs} ms` };
  }
  return {
    retry: true,
    delayMs,
    reason: retryAfterMs === undefined ? 'backoff' : 'Retry-After',
  };
}
