/**
 * Issue 26 #12: a JSON body is bounded (its size and each string's) while it is read, before it
 * is parsed, whatever the chunks it arrives in. (The peak memory of a 150 MB page read through the
 * client is measured in test/unit/hostile-input.test.ts.)
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonBodyLimits } from '../../../src/api/json-body-limits.js';
import { createMockApi } from '../../helpers/mock-api.js';
import { isCybsError } from '../../../src/errors.js';

/** The first problem the limits find in `text` cut into chunks at `cuts`. */
function check(text: string, cuts: number[], maxBody: number, maxString: number): string | undefined {
  const bytes = Buffer.from(text);
  const limits = new JsonBodyLimits(maxBody, maxString);
  const at = [0, ...cuts.filter((c) => c > 0 && c < bytes.length).sort((a, b) => a - b), bytes.length];
  for (let i = 1; i < at.length; i++) {
    const problem = limits.update(bytes.subarray(at[i - 1], at[i]));
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/** The longest string of a JSON text, in bytes as written (escapes included). */
function longestString(text: string): number {
  let longest = 0;
  for (const m of Buffer.from(text)
    .toString('latin1')
    .matchAll(/"((?:[^"\\]|\\.)*)"/gs))
    longest = Math.max(longest, m[1]!.length);
  return longest;
}

describe('JSON body limits', () => {
  it('finds the longest string whatever the chunks, escaped quotes and backslashes included', () => {
    fc.assert(
      fc.property(
        fc.jsonValue(),
        fc.array(fc.nat(400), { maxLength: 30 }),
        fc.integer({ min: 0, max: 60 }),
        (value, cuts, limit) => {
          const text = JSON.stringify(value);
          const problem = check(text, cuts, 1e9, limit);
          expect(problem !== undefined, `${text} ${String(problem)}`).toBe(longestString(text) > limit);
        },
      ),
      { numRuns: 2000 },
    );
    // Backslashes before a quote and quotes after backslashes, cut at every byte.
    const tricky = JSON.stringify({ a: 'x\\"y\\\\', b: '\\\\\\"', c: '"' });
    const longest = longestString(tricky);
    for (let cut = 0; cut < tricky.length; cut++) {
      expect(check(tricky, [cut], 1e9, longest)).toBeUndefined();
      expect(check(tricky, [cut, cut + 1], 1e9, longest - 1)).toContain('longer than');
    }
  });

  it('a body whose Content-Length is within the string limit is read whole, and refused past that length', () => {
    const text = Buffer.from(`{"a":"${'x'.repeat(50)}","b":"\\"}`);
    const limits = new JsonBodyLimits(100, 80);
    expect(limits.overLimit(text.length)).toBeUndefined();
    expect(limits.update(text.subarray(0, 10))).toBeUndefined();
    expect(limits.update(text.subarray(10))).toBeUndefined();
    expect(limits.update(Buffer.from('"'))).toContain(
      `a JSON body longer than its Content-Length of ${text.length} bytes`,
    );
    // Announced longer than the string limit: its strings are followed.
    const followed = new JsonBodyLimits(100, 20);
    expect(followed.overLimit(text.length)).toBeUndefined();
    expect(followed.update(text)).toContain('a JSON string value longer than');
  });

  it('says which limit a body passes, in a sentence', () => {
    expect(check(`{"a":"${'x'.repeat(100)}"}`, [10, 50], 1e9, 64)).toBe(
      'a JSON string value longer than 0.00006103515625 MiB (from byte 5 of the body, 100 bytes so far), which is not read',
    );
    expect(check('[' + '1,'.repeat(100) + '1]', [], 100, 10)).toContain('a JSON body larger than');
    expect(new JsonBodyLimits(100, 10).overLimit(101)).toContain('a JSON body larger than');
    expect(new JsonBodyLimits(100, 10).overLimit(100)).toBeUndefined();
  });

  it('the client refuses a page with a string over 16 MiB with one sentence naming the request', async () => {
    const api = createMockApi();
    api.reply({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: `{"requestDetails":[{"requestId":"1","groupName":"${'g'.repeat(17 * 1024 * 1024)}"}]}`,
    });
    const error = await api.client
      .getPurchaseRefundDetails({
        startTime: new Date('2024-01-01T00:00:00Z'),
        endTime: new Date('2024-01-02T00:00:00Z'),
        offset: 0,
        limit: 10,
      })
      .catch((e: unknown) => e);
    expect(isCybsError(error) && error.code).toBe('API_INVALID_RESPONSE');
    expect((error as Error).message).toMatch(
      /^CyberSource answered GET \/reporting\/v3\/purchase-refund-details\?\S+ with a JSON string value longer than 16 MiB \(from byte 48 of the body, \d+ bytes so far\), which is not read\.$/,
    );
    expect(api.requests).toHaveLength(1);
  });
});
