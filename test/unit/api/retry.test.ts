import { describe, expect, it } from 'vitest';
import { createHttpError, createTransportError } from '../../../src/api/errors.js';
import { computeRetryDelay, decideRetry, parseRetryAfter } from '../../../src/api/retry.js';

const policy = { attempts: 4, minDelayMs: 100, maxDelayMs: 1000, maxTotalMs: 5000 };
const http = (status: number, retryAfter?: string) =>
  createHttpError({ method: 'GET', path: '/p', status, bodyText: '', ...(retryAfter ? { retryAfter } : {}) });
const NOW = Date.parse('2024-01-01T00:00:00Z');

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates', () => {
    expect(parseRetryAfter('3', NOW)).toBe(3000);
    expect(parseRetryAfter('0', NOW)).toBe(0);
    expect(parseRetryAfter('Mon, 01 Jan 2024 00:00:07 GMT', NOW)).toBe(7000);
    expect(parseRetryAfter('Sun, 31 Dec 2023 23:59:00 GMT', NOW)).toBe(0);
    expect(parseRetryAfter('soon', NOW)).toBeUndefined();
    expect(parseRetryAfter(undefined, NOW)).toBeUndefined();
  });
});

describe('computeRetryDelay', () => {
  it('is full jitter under an exponential ceiling capped by maxDelayMs', () => {
    expect(computeRetryDelay(1, policy, () => 0.999)).toBe(99);
    expect(computeRetryDelay(2, policy, () => 0.5)).toBe(100);
    expect(computeRetryDelay(3, policy, () => 0.5)).toBe(200);
    expect(computeRetryDelay(10, policy, () => 0.999)).toBe(999);
    expect(computeRetryDelay(1, policy, () => 0)).toBe(0);
  });
  it('uses Retry-After instead, capped by maxDelayMs', () => {
    expect(computeRetryDelay(1, policy, () => 0.5, 700)).toBe(700);
    expect(computeRetryDelay(1, policy, () => 0.5, 60_000)).toBe(1000);
  });
});

describe('decideRetry', () => {
  const decide = (error: unknown, attempt = 1, elapsedMs = 0) =>
    decideRetry({ error, attempt, elapsedMs, nowMs: NOW, policy, random: () => 0.5 });

  it('retries 429, 500, 502, 503, 504', () => {
    for (const status of [429, 500, 502, 503, 504]) expect(decide(http(status)).retry).toBe(true);
  });
  it('never retries 400, 401, 403, 404', () => {
    for (const status of [400, 401, 403, 404])
      expect(decide(http(status))).toEqual({ retry: false, reason: 'not retryable' });
  });
  it('retries socket errors and timeouts', () => {
    for (const code of [
      'ECONNRESET',
      'UND_ERR_SOCKET',
      'UND_ERR_HEADERS_TIMEOUT',
      'UND_ERR_BODY_TIMEOUT',
      'UND_ERR_CONNECT_TIMEOUT',
    ]) {
      const error = createTransportError({
        method: 'GET',
        path: '/p',
        host: 'h',
        error: Object.assign(new Error(code), { code }),
      });
      expect(decide(error).retry).toBe(true);
    }
  });
  it('honours Retry-After (seconds or date)', () => {
    expect(decide(http(429, '1'))).toEqual({ retry: true, delayMs: 1000, reason: 'Retry-After' });
    expect(decide(http(503, 'Mon, 01 Jan 2024 00:00:00 GMT'))).toEqual({
      retry: true,
      delayMs: 0,
      reason: 'Retry-After',
    });
  });
  it('stops at the attempt cap and before the total time cap', () => {
    expect(decide(http(503), 3).retry).toBe(true);
    expect(decide(http(503), 4)).toEqual({ retry: false, reason: 'gave up after 4 attempts' });
    expect(decide(http(429, '1'), 1, 4000).retry).toBe(true);
    expect(decide(http(429, '1'), 1, 4001).retry).toBe(false);
  });
});
