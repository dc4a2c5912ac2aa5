/**
 * Completeness and catch-up planning, pure (issue 30, finding 1): expected windows from the first
 * window the warehouse knows or startDate, gaps as spans, failed windows with their backoff, and a
 * run's catch-up windows bounded and ordered oldest first after the newest.
 */
import { describe, expect, it } from 'vitest';
import { PIPELINES } from '../../pipelines/index.js';
import { parseConfig } from '../../src/config/load-config.js';
import {
  orderPassWindows,
  planPassWindows,
  expectedWindows,
  assessPipelines,
} from '../../src/pipeline/plan-windows.js';
import { resolvePipelines } from '../../src/pipeline/resolve-pipelines.js';
import { assessCompleteness, attentionItems } from '../../src/state/completeness.js';
import type { WindowStateRow } from '../../src/state/completeness.js';
import { RETRY_BACKOFF_SECONDS, retryDelaySeconds } from '../../src/state/windows.js';
import type { WindowStatus } from '../../src/state/windows.js';
import { startOfLocalDay, addDays } from '../../src/time/time-zones.js';

const NOW = new Date('2026-11-25T12:00:00Z');
const config = parseConfig('defaults:\n  organizations: [o1]\n');
const [pipeline] = resolvePipelines(PIPELINES, config, { defaultOrganizations: [], now: NOW }).filter(
  (p) => p.name === 'net_fundings',
);
const NF = pipeline!;

function row(day: string, status: WindowStatus, extra: Partial<WindowStateRow> = {}): WindowStateRow {
  return {
    pipeline: 'net_fundings',
    organizationId: 'o1',
    windowKey: day,
    start: startOfLocalDay(day.slice(0, 10), 'UTC'),
    end: startOfLocalDay(addDays(day.slice(0, 10), 1), 'UTC'),
    status,
    attempts: 1,
    failures: status === 'failed' ? 1 : 0,
    lastErrorCode: status === 'failed' ? 'API_HTTP_STATUS' : null,
    lastErrorMessage: status === 'failed' ? 'HTTP 500' : null,
    notReadySince: null,
    retryAfter: null,
    loadedAt: null,
    retryDue: true,
    ...extra,
  };
}

const days = (from: string, n: number) => Array.from({ length: n }, (_, i) => addDays(from, i));

/** Loaded 10-01..10-30, 11-01 failed: the warehouse. */
function holey(failed: Partial<WindowStateRow> = {}): Map<string, WindowStateRow> {
  const rows = days('2026-10-01', 30).map((d) => row(d, 'loaded'));
  rows.push(row('2026-11-01', 'failed', failed));
  return new Map(rows.map((r) => [r.windowKey, r]));
}

describe('expected windows and completeness', () => {
  it('start at the first known window when it is before startDate, and end at the newest available', () => {
    expect(NF.startDate).toBe('2026-11-18');
    const plan = expectedWindows(NF, 'o1', holey().values(), NOW);
    expect(plan.windows[0]!.windowKey).toBe('2026-10-01');
    expect(plan.windows.at(-1)!.windowKey).toBe('2026-11-24');
    // No rows: from startDate.
    expect(expectedWindows(NF, 'o1', [], NOW).windows[0]!.windowKey).toBe('2026-11-18');
  });

  it('tells gaps (as spans), failures, not-ready windows and how far behind the newest it is', () => {
    const rows = holey();
    rows.set(
      '2026-11-05',
      row('2026-11-05', 'pending', { lastErrorCode: 'NOT_READY', lastErrorMessage: 'QUEUED' }),
    );
    rows.set('2026-11-06', row('2026-11-06', 'no_data'));
    rows.set('2026-11-07', row('2026-11-07', 'pending'));
    const plan = expectedWindows(NF, 'o1', rows.values(), NOW);
    const c = assessCompleteness({ pipeline: 'net_fundings', organizationId: 'o1' }, plan.windows, rows);
    expect(c.gaps.map((g) => [g.from, g.to, g.windows])).toEqual([
      ['2026-10-31', '2026-10-31', 1],
      ['2026-11-02', '2026-11-04', 3],
      ['2026-11-07', '2026-11-24', 18],
    ]);
    expect(c.counts).toEqual({ loaded: 30, no_data: 1, not_ready: 1, failed: 1, running: 0, gap: 22 });
    expect(c.failed.map((f) => f.windowKey)).toEqual(['2026-11-01']);
    expect(c.notReady).toEqual([{ windowKey: '2026-11-05', since: null, message: 'QUEUED' }]);
    expect(c.behind).toBe(18);
    expect(attentionItems([c]).map((a) => `${a.kind} ${a.windows ?? ''}`)).toEqual([
      'gap 2026-10-31',
      'gap 2026-11-02..2026-11-04',
      'gap 2026-11-07..2026-11-24',
      'failed 2026-11-01',
      'behind ',
    ]);
  });

  it('does not assess gaps against rows cut another way (a schedule status cannot see)', () => {
    const rows = new Map([['2026-11-20T09:00', row('2026-11-20T09:00', 'loaded')]]);
    const c = assessCompleteness(
      { pipeline: 'net_fundings', organizationId: 'o1' },
      expectedWindows(NF, 'o1', [], NOW).windows,
      rows,
    );
    expect(c).toMatchObject({ shapeDiffers: true, gaps: [], behind: 0, unplanned: 1 });
  });

  it('calls an enabled pipeline and organization without any window never loaded', () => {
    const [c] = assessPipelines([NF], [], NOW);
    expect(attentionItems([c!])).toEqual([
      expect.objectContaining({ kind: 'never_loaded', pipeline: 'net_fundings', organizationId: 'o1' }),
    ]);
  });

  it('measures each organization against its own first window, also when many share a first day', () => {
    const of = (org: string, from: string, n: number) =>
      days(from, n).map((d) => row(d, 'loaded', { organizationId: org }));
    const rows = [...of('a', '2026-10-01', 30), ...of('b', '2026-11-10', 3), ...of('c', '2026-10-01', 5)];
    const byOrg = new Map(assessPipelines([NF], rows, NOW).map((c) => [c.organizationId, c]));
    // o1 (configured, no rows) from startDate; a and c from their first window, 10-01; b from 11-10.
    for (const [org, first] of [
      ['o1', NF.startDate],
      ['a', '2026-10-01'],
      ['b', '2026-11-10'],
      ['c', '2026-10-01'],
    ] as const) {
      const own = rows.filter((r) => r.organizationId === org);
      const expected = expectedWindows(NF, org, own, NOW).windows;
      expect(expected[0]!.windowKey, org).toBe(first);
      expect(byOrg.get(org)!.expected, org).toBe(expected.length);
    }
    expect(byOrg.get('a')!.gaps.map((g) => [g.from, g.windows])).toEqual([['2026-10-31', 25]]);
    expect(byOrg.get('c')!.gaps.map((g) => [g.from, g.windows])).toEqual([['2026-10-06', 50]]);
  });
});

describe('a run plans the gaps and failed windows since the first known window', () => {
  it('loads the newest from startDate, and catches up on the older gaps and failures', () => {
    const planned = planPassWindows(NF, 'o1', { now: NOW }, holey());
    const newest = planned.filter((p) => !p.catchUp).map((p) => p.window.windowKey);
    const catchUp = planned.filter((p) => p.catchUp).map((p) => p.window.windowKey);
    expect(newest).toEqual(days('2026-11-18', 7));
    expect(catchUp).toEqual(['2026-10-31', ...days('2026-11-01', 17)]);
  });

  it('leaves a failed window alone until its backoff has passed; a backfill takes it anyway', () => {
    const waiting = holey({ failures: 2, retryDue: false });
    const planned = planPassWindows(NF, 'o1', { now: NOW }, waiting).map((p) => p.window.windowKey);
    expect(planned).not.toContain('2026-11-01');
    expect(planned).toContain('2026-11-02');
    const backfill = planPassWindows(
      NF,
      'o1',
      { now: NOW, range: { from: '2026-11-01', to: '2026-11-01' } },
      waiting,
    );
    expect(backfill.map((p) => p.window.windowKey)).toEqual(['2026-11-01']);
  });

  it('re-loads the lookback windows, except those loaded since the cron fire the pass plans for', () => {
    const loadedAt = new Date(NOW.getTime() - 60_000);
    const rows = new Map(days('2026-11-18', 7).map((d) => [d, row(d, 'loaded', { loadedAt })]));
    const newest = (firedAt?: Date) =>
      planPassWindows(NF, 'o1', { now: NOW, ...(firedAt ? { firedAt } : {}) }, rows)
        .filter((p) => !p.catchUp)
        .map((p) => p.window.windowKey);
    const lookback = newest();
    expect(lookback.length).toBeGreaterThan(0);
    // Another instance's pass of the same fire loaded them a minute ago: not again for this fire.
    expect(newest(new Date(NOW.getTime() - 120_000))).toEqual([]);
    // Loaded before this fire: the lookback re-loads them.
    expect(newest(NOW)).toEqual(lookback);
  });

  it('orders the newest first (oldest first among them), then at most maxCatchUp older windows, oldest first', () => {
    const planned = planPassWindows(NF, 'o1', { now: NOW }, holey());
    const ordered = orderPassWindows([...planned].reverse(), 3).map((p) => p.window.windowKey);
    expect(ordered).toEqual([...days('2026-11-18', 7), '2026-10-31', '2026-11-01', '2026-11-02']);
    expect(orderPassWindows(planned, 0)).toHaveLength(7);
  });
});

describe('the backoff of a failing window', () => {
  it('retries after the first failure at once, then waits 1, 2, 4, 8, 16 hours, then a day at most', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 50].map(retryDelaySeconds)).toEqual([
      0, 3600, 7200, 14_400, 28_800, 57_600, 86_400, 86_400, 86_400,
    ]);
    expect(RETRY_BACKOFF_SECONDS.at(-1)).toBe(86_400);
  });
});
