import { describe, expect, it } from 'vitest';
import { FaultPlan, FaultSpecError, parseFaultSpec } from '../../src/server/faults.js';

describe('fault spec', () => {
  it('parses endpoint:kind[=param][@probability][xCount]', () => {
    expect(
      parseFaultSpec('download:reset@0.3,search:429x2,purchase-refund-details:500@0.1,download:truncate'),
    ).toEqual([
      { endpoint: 'download', kind: 'reset', probability: 0.3 },
      { endpoint: 'search', kind: '429', count: 2 },
      { endpoint: 'purchase-refund-details', kind: '500', probability: 0.1 },
      { endpoint: 'download', kind: 'truncate' },
    ]);
    expect(parseFaultSpec('*:slow-headers=1500x1, download:malformed-row=3/amount')).toEqual([
      { endpoint: '*', kind: 'slow-headers', param: '1500', count: 1 },
      { endpoint: 'download', kind: 'malformed-row', param: '3/amount' },
    ]);
    expect(parseFaultSpec('search:401x1')).toEqual([{ endpoint: 'search', kind: '401', count: 1 }]);
  });

  it('rejects unknown endpoints, kinds and probabilities', () => {
    expect(() => parseFaultSpec('nowhere:500')).toThrow(FaultSpecError);
    expect(() => parseFaultSpec('download:explode')).toThrow(FaultSpecError);
    expect(() => parseFaultSpec('download:500@1.5')).toThrow(FaultSpecError);
    expect(() => parseFaultSpec('download')).toThrow(FaultSpecError);
  });

  it('draws deterministically by seed, honours counts and endpoints', () => {
    const draws = (seed: number) => {
      const plan = new FaultPlan(seed, parseFaultSpec('download:500@0.5'));
      return Array.from({ length: 40 }, () => plan.draw('download').length);
    };
    expect(draws(1)).toEqual(draws(1));
    expect(draws(1)).not.toEqual(draws(2));
    const hits = draws(1).reduce((a, b) => a + b, 0);
    expect(hits).toBeGreaterThan(5);
    expect(hits).toBeLessThan(35);
    const plan = new FaultPlan(1, parseFaultSpec('search:429x2'));
    expect([1, 2, 3, 4].map(() => plan.draw('search').length)).toEqual([1, 1, 0, 0]);
    expect(plan.draw('download')).toEqual([]);
  });
});
