import { describe, expect, it } from 'vitest';
import { parseOnDemandResponse } from '../../../../src/parse/json/on-demand.js';
import type { CybsError } from '../../../../src/errors.js';
import { collect, rowsOf } from '../helpers.js';

describe('on-demand JSON', () => {
  it('rejects items of the wrong shape and values of the wrong type, naming the path', async () => {
    const result = parseOnDemandResponse(
      'purchase-refund-details',
      {
        settlements: [
          { requestId: '1', amount: 'abc' },
          5,
          { requestId: '2', amount: 2.5, extraInfo: { a: 1 } },
          { requestId: '3', amount: { x: 1 } },
          { requestId: '4', submissionTime: 'yesterday' },
        ],
      },
      { source: 'prd 2024-01-01' },
    );
    const source = result.sections.settlements!;
    const { records, rejects } = await collect(source);
    expect(records.length + rejects.length).toBe(5);
    expect(rowsOf(source, records)).toEqual([
      expect.objectContaining({ request_id: '2', amount: '2.5', extra_info: '{"a":1}' }),
    ]);
    expect(source.unknownColumns.map((c) => c.column)).toEqual(['extra_info']);
    expect(rejects.map((r) => [r.recordNumber, r.code, r.field])).toEqual([
      [1, 'MAP_INVALID_VALUE', 'amount'],
      [2, 'PARSE_JSON_INVALID', undefined],
      [4, 'MAP_INVALID_VALUE', 'amount'],
      [5, 'MAP_INVALID_VALUE', 'submissionTime'],
    ]);
    expect(rejects[0]!.message).toBe(
      'prd 2024-01-01 settlements[0].amount: field amount (column amount, numeric) has "abc"; expected a decimal number such as 123.45 or -0.0100 (no exponent, no thousands separator)',
    );
    expect(rejects[1]!.message).toBe('prd 2024-01-01 settlements[1]: expected an object, got number.');
  });

  it('treats absent sections as empty and keeps page metadata', async () => {
    const result = parseOnDemandResponse('purchase-refund-details', {
      offset: 2000,
      limit: 2000,
      pageResults: 0,
    });
    expect(result.metadata.attributes).toEqual({ offset: '2000', limit: '2000', pageResults: '0' });
    for (const source of Object.values(result.sections)) expect((await collect(source)).records).toEqual([]);
    expect(Object.keys(result.sections)).toEqual([
      'requestDetails',
      'settlements',
      'authorizations',
      'feeAndFundingDetails',
      'others',
      'settlementStatuses',
    ]);
  });

  it('throws PARSE_JSON_INVALID for a body or section of the wrong shape', () => {
    const bad = (endpoint: Parameters<typeof parseOnDemandResponse>[0], body: unknown): CybsError => {
      try {
        parseOnDemandResponse(endpoint, body);
      } catch (error) {
        return error as CybsError;
      }
      throw new Error('expected an error');
    };
    expect(bad('net-fundings', [])).toMatchObject({ code: 'PARSE_JSON_INVALID', context: { path: '$' } });
    expect(bad('net-fundings', { totalFees: { currency: 'USD' } })).toMatchObject({
      code: 'PARSE_JSON_INVALID',
      context: { path: 'totalFees' },
    });
    expect(bad('conversion-details', { conversionDetails: 'x' }).stage).toBe('parse');
  });

  it('flattens conversion notes with their parent request id and position', async () => {
    const result = parseOnDemandResponse('conversion-details', {
      conversionDetails: [
        {
          requestId: 'r1',
          notes: [{ comments: 'a' }, { comments: 'b', time: '2019-05-01T00:00:00.000+0000' }],
        },
        { requestId: 'r2' },
        { requestId: 'r3', notes: 'oops' },
      ],
    });
    const notes = result.sections.conversionDetailNotes!;
    const { records, rejects } = await collect(notes);
    expect(rowsOf(notes, records)).toEqual([
      { request_id: 'r1', note_number: 1, time: null, added_by: null, comments: 'a' },
      { request_id: 'r1', note_number: 2, time: '2019-05-01T00:00:00.000Z', added_by: null, comments: 'b' },
    ]);
    expect(rejects.map((r) => r.message)).toEqual([
      'conversion-details conversionDetails[2].notes: expected an object, got string.',
    ]);
    const details = result.sections.conversionDetails!;
    expect(details.unknownColumns).toEqual([]);
  });
});
