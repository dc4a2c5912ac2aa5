import { describe, expect, it } from 'vitest';
import { alertRetryDelayMs, diffIncidents } from '../../../src/observability/alerts.js';
import type { AlertCondition } from '../../../src/observability/alerts.js';
import { resolveWebhook } from '../../../src/observability/webhooks.js';
import { parseConfig } from '../../../src/config/load-config.js';

const failed = (subject: string): AlertCondition => ({
  event: 'window_failed',
  subject,
  text: subject,
  details: {},
});

describe('alerts', () => {
  it('opens incidents for new conditions and resolves those whose condition is gone', () => {
    const { opening, resolving } = diffIncidents(
      [failed('a'), failed('b')],
      [
        { id: 1, event: 'window_failed', subject: 'b' },
        { id: 2, event: 'window_failed', subject: 'c' },
        { id: 3, event: 'pipeline_stale', subject: 'a' },
      ],
    );
    expect(opening.map((c) => c.subject)).toEqual(['a']);
    expect(resolving.map((i) => i.id)).toEqual([2, 3]);
  });

  it('retries with doubling delays', () => {
    expect([1, 2, 3, 4].map((a) => alertRetryDelayMs(a, 100))).toEqual([0, 100, 200, 400]);
  });

  it('reads ${VARIABLE}s of a webhook URL from the environment and names it without them', () => {
    const t = resolveWebhook({ url: 'https://hooks.example/${HOOK}' }, 0, { HOOK: 'services/T/B/x' });
    expect(t).toEqual({
      url: 'https://hooks.example/services/T/B/x',
      label: 'https://hooks.example/${HOOK}',
    });
    expect(resolveWebhook({ url: 'https://hooks.example/secret/path' }, 0, {}).label).toBe(
      'https://hooks.example/[redacted]',
    );
    expect(() => resolveWebhook({ url: '${NOPE}' }, 2, {})).toThrow(
      'alerts.webhooks[2].url needs the environment variable NOPE',
    );
  });

  it('config: alerts and freshnessHours are checked when the config loads', () => {
    const c = parseConfig(
      'alerts:\n  webhooks:\n    - url: "${SLACK_WEBHOOK_URL}"\n      events: [window_failed]\n',
    );
    expect(c.alerts.webhooks).toEqual([{ url: '${SLACK_WEBHOOK_URL}', events: ['window_failed'] }]);
    expect(c.defaults.freshnessHours).toBe(48);
    expect(() => parseConfig('alerts:\n  webhooks:\n    - url: "ftp://x"\n')).toThrow(
      /alerts\.webhooks\.0\.url/,
    );
    expect(() => parseConfig('alerts:\n  webhooks:\n    - url: "https://x"\n      events: [nope]\n')).toThrow(
      /alerts\.webhooks\.0\.events/,
    );
  });
});
