/**
 * Faults on demand, deterministic by seed.
 *
 * Spec syntax (CLI `--faults`, `POST /__simulator/faults` with `{"spec": "…"}`):
 *
 *   rule[,rule…]   rule = <endpoint>:<kind>[=<param>][@<probability>][x<count>]
 *
 *   endpoint  `*` (every endpoint) or one of ENDPOINT_NAMES: report-definitions, subscriptions,
 *             search (GET /reports), create-report (POST /reports), report (GET /reports/{id}),
 *             download, purchase-refund-details, net-fundings, conversion-details,
 *             notification-of-changes, payment-batch-summaries
 *   kind      429 (param: Retry-After seconds, default 1) · 500 · 502 · 503 ·
 *             401 (the credentials are refused, as when a key is revoked mid-run) ·
 *             html-page (a gateway's or proxy's HTML error page, served with status 200) ·
 *             slow-headers (param: delay ms before the headers, default 2000) ·
 *             slow-body (param: delay ms between body chunks, default 200) ·
 *             reset (param: bytes of body sent before the socket is destroyed; default half the first chunk) ·
 *             truncate (param: bytes after which the body ends early but the response completes normally;
 *                       default half the first chunk) ·
 *             stuck (param: a reportName; default every report: COMPLETED reports stay RUNNING and cannot be downloaded) ·
 *             error (param: a reportName, or a prefix ending in `*`; default every report: reports end in ERROR
 *                    instead of COMPLETED / NO_DATA and cannot be downloaded) ·
 *             malformed-row (param: 1-based data row, default 1; a CSV row loses a column, or with
 *                            `=<row>/amount` gets an unparseable amount; XML: the request element is left open
 *                            or the amount is unparseable)
 *   @p        probability per matching request, default 1 (decided by a PRNG seeded with the
 *             simulator seed and the rule, so a run is repeatable)
 *   xN        fire at most N times, then stop (default: no limit)
 *
 * Examples: `download:reset@0.3`, `search:429x2`, `purchase-refund-details:500@0.1`,
 * `download:truncate`, `*:slow-headers=1500x1`, `download:malformed-row=3/amount`, `report:stuck`,
 * `report:error=cybs-etl_*`.
 */
import { createRng, hash32 } from '../data/prng.js';
import type { Rng } from '../data/prng.js';

export const ENDPOINT_NAMES = [
  'report-definitions',
  'subscriptions',
  'search',
  'create-report',
  'report',
  'download',
  'purchase-refund-details',
  'net-fundings',
  'conversion-details',
  'notification-of-changes',
  'payment-batch-summaries',
] as const;
export type EndpointName = (typeof ENDPOINT_NAMES)[number];

export const FAULT_KINDS = [
  '401',
  '429',
  '500',
  '502',
  '503',
  'html-page',
  'slow-headers',
  'slow-body',
  'reset',
  'truncate',
  'stuck',
  'error',
  'malformed-row',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultRule {
  endpoint: EndpointName | '*';
  kind: FaultKind;
  param?: string;
  /** 0 < probability ≤ 1; default 1. */
  probability?: number;
  /** Fire at most this many times. */
  count?: number;
}

export class FaultSpecError extends Error {}

export function parseFaultSpec(spec: string): FaultRule[] {
  const rules: FaultRule[] = [];
  for (const raw of spec.split(',')) {
    const text = raw.trim();
    if (!text) continue;
    // kind is one of the known kinds (longest first), so that `429x2` reads as kind 429, count 2.
    const m =
      /^([*a-z-]+):(slow-headers|malformed-row|slow-body|truncate|reset|stuck|error|html-page|401|429|500|502|503)(?:=([^@]*?))?(?:@(\d*\.?\d+))?(?:x(\d+))?$/.exec(
        text,
      ) ?? /^([*a-z-]+):([0-9a-z-]+?)(?:=([^@]*?))?(?:@(\d*\.?\d+))?(?:x(\d+))?$/.exec(text);
    if (!m) {
      throw new FaultSpecError(
        `Bad fault rule "${text}": expected endpoint:kind[=param][@probability][xCount]`,
      );
    }
    const [, endpoint, kind, param, probability, count] = m;
    if (endpoint !== '*' && !(ENDPOINT_NAMES as readonly string[]).includes(endpoint!)) {
      throw new FaultSpecError(
        `Unknown endpoint "${endpoint}" in "${text}" (one of *, ${ENDPOINT_NAMES.join(', ')})`,
      );
    }
    if (!(FAULT_KINDS as readonly string[]).includes(kind!)) {
      throw new FaultSpecError(
        `Unknown fault kind "${kind}" in "${text}" (one of ${FAULT_KINDS.join(', ')})`,
      );
    }
    const rule: FaultRule = { endpoint: endpoint as FaultRule['endpoint'], kind: kind as FaultKind };
    if (param !== undefined && param !== '') rule.param = param;
    if (probability !== undefined) {
      const p = Number(probability);
      if (!(p > 0 && p <= 1)) throw new FaultSpecError(`Probability must be in (0, 1] in "${text}"`);
      rule.probability = p;
    }
    if (count !== undefined) rule.count = Number(count);
    rules.push(rule);
  }
  return rules;
}

/** Validate rules given as objects (library options, JSON). */
export function normaliseFaultRules(input: unknown): FaultRule[] {
  if (typeof input === 'string') return parseFaultSpec(input);
  if (!Array.isArray(input)) throw new FaultSpecError('faults must be a spec string or an array of rules');
  return input.map((r: unknown) => {
    if (typeof r !== 'object' || r === null) throw new FaultSpecError('a fault rule must be an object');
    const o = r as Record<string, unknown>;
    const text =
      `${String(o['endpoint'] ?? '*')}:${String(o['kind'])}` +
      (o['param'] !== undefined ? `=${String(o['param'])}` : '') +
      (o['probability'] !== undefined ? `@${String(o['probability'])}` : '') +
      (o['count'] !== undefined ? `x${String(o['count'])}` : '');
    const [rule] = parseFaultSpec(text);
    return rule!;
  });
}

interface ActiveRule {
  rule: FaultRule;
  rng: Rng;
  fired: number;
}

/** Decides, request by request, which faults fire. */
export class FaultPlan {
  private active: ActiveRule[] = [];

  constructor(
    private readonly seed: number,
    rules: readonly FaultRule[] = [],
  ) {
    this.set(rules);
  }

  /** Replace the rules; the same rules under the same seed replay the same sequence of faults. */
  set(rules: readonly FaultRule[]): void {
    this.active = rules.map((rule, i) => ({
      rule,
      rng: createRng(`${this.seed}|fault|${i}|${rule.endpoint}|${rule.kind}|${rule.param ?? ''}`),
      fired: 0,
    }));
  }

  rules(): FaultRule[] {
    return this.active.map((a) => ({ ...a.rule }));
  }

  /** Faults that fire for this request (each rule at most once), consuming their PRNG draws. */
  draw(endpoint: EndpointName, kinds?: readonly FaultKind[]): FaultRule[] {
    const out: FaultRule[] = [];
    for (const a of this.active) {
      if (a.rule.endpoint !== '*' && a.rule.endpoint !== endpoint) continue;
      if (kinds && !kinds.includes(a.rule.kind)) continue;
      if (a.rule.kind === 'stuck' || a.rule.kind === 'error') continue;
      if (a.rule.count !== undefined && a.fired >= a.rule.count) continue;
      const p = a.rule.probability ?? 1;
      if (p < 1 && !(a.rng.next() < p)) continue;
      a.fired++;
      out.push(a.rule);
    }
    return out;
  }

  /** Whether a report ends in ERROR (decided per report id, so it stays failed). */
  isError(reportId: string, reportName: string): boolean {
    for (const a of this.active) {
      if (a.rule.kind !== 'error') continue;
      const param = a.rule.param;
      if (param !== undefined) {
        const match = param.endsWith('*') ? reportName.startsWith(param.slice(0, -1)) : reportName === param;
        if (!match) continue;
      }
      const p = a.rule.probability ?? 1;
      if (p >= 1 || hash32(`${this.seed}|error|${reportId}`) / 4294967296 < p) return true;
    }
    return false;
  }

  /** Whether a report is stuck in RUNNING (decided per report id, so it stays stuck). */
  isStuck(reportId: string, reportName: string): boolean {
    for (const a of this.active) {
      if (a.rule.kind !== 'stuck') continue;
      if (a.rule.param !== undefined && a.rule.param !== reportName) continue;
      const p = a.rule.probability ?? 1;
      if (p >= 1 || hash32(`${this.seed}|stuck|${reportId}`) / 4294967296 < p) return true;
    }
    return false;
  }
}
