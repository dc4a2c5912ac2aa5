/** /readyz of the schedule daemon (issue 27 #7): failed and stale last passes are not ready. */
import { describe, expect, it } from 'vitest';
import { judgeReadiness } from '../../src/schedule/readiness.js';
import type { SchedulePass } from '../../src/state/runs.js';

const t = (iso: string) => new Date(`2026-11-20T${iso}Z`);
const GRACE = 10 * 60_000;

function pass(status: SchedulePass['status'], started: string, runId = 7): SchedulePass {
  return {
    runId,
    status,
    startedAt: t(started),
    finishedAt: status === 'running' ? null : t(started),
    error: null,
  };
}

describe('judgeReadiness', () => {
  const base = { pipelines: ['a'], graceMs: GRACE };

  it('is ready when the last pass succeeded after the last due fire, and before any fire', () => {
    const ready = judgeReadiness({
      ...base,
      now: t('07:30:00'),
      lastPasses: new Map([['a', pass('succeeded', '07:00:02')]]),
      lastDue: new Map([['a', t('07:00:00')]]),
    });
    expect(ready).toMatchObject({ ready: true, warehouse: 'ok' });
    // --no-catch-up, nothing due yet, no pass ever: nothing is late.
    expect(
      judgeReadiness({ ...base, now: t('07:30:00'), lastPasses: new Map(), lastDue: new Map() }).ready,
    ).toBe(true);
    // A pass still running within the grace is fine, and so is one an instance of a few seconds'
    // different clock started just before the fire.
    expect(
      judgeReadiness({
        ...base,
        now: t('07:30:00'),
        lastPasses: new Map([['a', pass('running', '06:59:58')]]),
        lastDue: new Map([['a', t('07:00:00')]]),
      }).ready,
    ).toBe(true);
  });

  it('is not ready when the last pass failed, from whichever instance', () => {
    const r = judgeReadiness({
      ...base,
      now: t('07:30:00'),
      lastPasses: new Map([['a', { ...pass('failed', '07:00:01'), error: '2 window(s) failed' }]]),
      lastDue: new Map(),
    });
    expect(r.ready).toBe(false);
    expect(r.pipelines[0]!.problem).toBe('its last pass (run 7) failed: 2 window(s) failed');
  });

  it('is not ready when a fire due longer than the grace ago has no pass', () => {
    const none = judgeReadiness({
      ...base,
      now: t('07:10:01'),
      lastPasses: new Map([['a', pass('succeeded', '06:00:00')]]),
      lastDue: new Map([['a', t('07:00:00')]]),
    });
    expect(none.ready).toBe(false);
    expect(none.pipelines[0]!.problem).toBe(
      'stale: no pass has started for the fire due at 2026-11-20T07:00:00.000Z',
    );
    const overrun = judgeReadiness({
      ...base,
      now: t('08:11:00'),
      lastPasses: new Map([['a', pass('running', '07:00:00')]]),
      lastDue: new Map([['a', t('08:00:00')]]),
    });
    expect(overrun.pipelines[0]!.problem).toBe(
      'stale: its pass (run 7, started 2026-11-20T07:00:00.000Z) is still running past the fire due at 2026-11-20T08:00:00.000Z',
    );
    // Within the grace it is not stale yet.
    expect(
      judgeReadiness({
        ...base,
        now: t('07:09:59'),
        lastPasses: new Map([['a', pass('succeeded', '06:00:00')]]),
        lastDue: new Map([['a', t('07:00:00')]]),
      }).ready,
    ).toBe(true);
  });

  it('is not ready when the warehouse cannot be read', () => {
    const r = judgeReadiness({
      ...base,
      now: t('07:00:00'),
      lastPasses: undefined,
      warehouseError: 'connect ECONNREFUSED 127.0.0.1:5432',
      lastDue: new Map(),
    });
    expect(r).toMatchObject({ ready: false, warehouse: 'connect ECONNREFUSED 127.0.0.1:5432' });
  });
});
