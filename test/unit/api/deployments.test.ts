import { describe, expect, it } from 'vitest';
import { isLoopbackHost, resolveTarget } from '../../../src/api/deployments.js';
import { formatReportDate, formatTimeParam } from '../../../src/api/params.js';
import { buildRequestTarget } from '../../../src/api/transport.js';
import { splitPathAndQuery } from '../../../src/api/endpoints.js';

describe('resolveTarget', () => {
  it('maps the three deployments to their hosts', () => {
    expect(resolveTarget({}, 'test')).toMatchObject({
      origin: 'https://apitest.cybersource.com',
      host: 'apitest.cybersource.com',
    });
    expect(resolveTarget({ environment: 'production' }, 'test').origin).toBe('https://api.cybersource.com');
    expect(resolveTarget({ environment: 'production-india' }).origin).toBe('https://api.in.cybersource.com');
  });

  it('an explicit base URL wins; https anywhere, http only on loopback', () => {
    expect(
      resolveTarget({ baseUrl: 'https://proxy.example.com:8443/cybs/', environment: 'production' }),
    ).toEqual({
      origin: 'https://proxy.example.com:8443',
      host: 'proxy.example.com:8443',
      basePath: '/cybs',
    });
    for (const url of [
      'http://127.0.0.1:8080',
      'http://127.1.2.3',
      'http://[::1]:9000',
      'http://localhost:3000',
    ]) {
      expect(resolveTarget({ baseUrl: url }).origin).toBe(url);
    }
    for (const url of ['http://10.0.0.5', 'http://api.cybersource.com', 'http://128.0.0.1']) {
      expect(() => resolveTarget({ baseUrl: url })).toThrow(
        expect.objectContaining({ code: 'API_INSECURE_URL', exitCode: 2 }),
      );
    }
    expect(() => resolveTarget({ baseUrl: 'ftp://x' })).toThrow(
      expect.objectContaining({ code: 'API_BASE_URL_INVALID' }),
    );
    expect(() => resolveTarget({ baseUrl: 'https://u:p@x' })).toThrow(
      expect.objectContaining({ code: 'API_BASE_URL_INVALID' }),
    );
  });

  it('knows loopback hosts', () => {
    expect(isLoopbackHost('127.0.0.1')).toBe(true);
    expect(isLoopbackHost('[::1]')).toBe(true);
    expect(isLoopbackHost('LOCALHOST')).toBe(true);
    expect(isLoopbackHost('localhost.example.com')).toBe(false);
    expect(isLoopbackHost('::ffff:10.0.0.1')).toBe(false);
  });
});

describe('request target and parameters', () => {
  it('builds path?query in the given order, leaving out undefined, encoding every value', () => {
    expect(
      buildRequestTarget('/base', '/reporting/v3/reports', [
        ['b', 'x y'],
        ['a', undefined],
        ['c', 'a&b=c'],
        ['d', 0],
        ['e', false],
      ]),
    ).toBe('/base/reporting/v3/reports?b=x%20y&c=a%26b%3Dc&d=0&e=false');
    expect(buildRequestTarget('', '/p', [])).toBe('/p');
  });

  it('splits a path with a query keeping the order', () => {
    expect(splitPathAndQuery('/x?b=1&a=2&b=3')).toEqual({
      path: '/x',
      query: [
        ['b', '1'],
        ['a', '2'],
        ['b', '3'],
      ],
    });
    expect(splitPathAndQuery('/x')).toEqual({ path: '/x', query: [] });
  });

  it('formats time parameters', () => {
    expect(formatTimeParam(new Date('2024-03-01T00:00:00Z'), 't')).toBe('2024-03-01T00:00:00.000Z');
    expect(formatTimeParam('2024-03-01T00:00:00+05:30', 't')).toBe('2024-03-01T00:00:00+05:30');
    expect(() => formatTimeParam(new Date('nope'), 't')).toThrow(/invalid date/);
    // RFC 3339 (the spec's format: date-time) writes a numeric offset with a colon: +0100 is not one.
    expect(formatTimeParam('2024-03-01T00:00:00.000-05:00', 't')).toBe('2024-03-01T00:00:00.000-05:00');
    expect(formatTimeParam('2024-03-01T00:00:00.000+0100', 't')).toBe('2024-03-01T00:00:00.000+01:00');
    expect(formatTimeParam('2024-03-01T00:00+0000', 't')).toBe('2024-03-01T00:00+00:00');
    expect(formatTimeParam('2024-09-01T12:00:00Z', 't')).toBe('2024-09-01T12:00:00Z');
    expect(formatReportDate('2024-03-09')).toBe('2024-03-09');
    expect(formatReportDate(new Date('2024-03-09T23:59:59Z'))).toBe('2024-03-09');
    expect(() => formatReportDate('2024/03/09')).toThrow(/yyyy-MM-dd/);
  });
});
