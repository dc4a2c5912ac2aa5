import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  createHttpError,
  createTransportError,
  decodeErrorBody,
  describeErrorBody,
} from '../../../src/api/errors.js';

const sample = (name: string) => readFileSync(new URL(`../../fixtures/api/${name}`, import.meta.url), 'utf8');

describe('decodeErrorBody', () => {
  it('decodes the reporting error shape (JSON)', () => {
    const body = decodeErrorBody(sample('error-400-reporting.spec-example.json'), 'application/json');
    expect(body).toEqual({
      shape: 'reporting',
      reason: 'INVALID_DATA',
      message: 'One or more fields contains invalid data',
      submitTimeUtc: '2016-08-11T22:47:57Z',
      details: [{ field: 'startTime', reason: 'INVALID_DATA' }],
    });
    expect(describeErrorBody(body)).toBe(
      'INVALID_DATA: One or more fields contains invalid data (startTime: INVALID_DATA)',
    );
  });

  it('decodes the error bean (JSON), with null fields left out', () => {
    const body = decodeErrorBody(sample('error-500-spec-example-purchase-refund.spec-example.json'));
    expect(body).toEqual({
      shape: 'error-bean',
      code: 'SERVER_ERROR',
      message: 'Error encountered while processing request',
      localizationKey: 'cybsapi.server.error',
      detail: 'Internal Server Error. Please contact the customer support.',
    });
    const bean = decodeErrorBody(
      JSON.stringify({
        code: 'VALIDATION_ERROR',
        message: 'Field validation error',
        correlationId: 'c-1',
        fields: [{ path: 'reportName', message: 'must not be blank', localizationKey: 'x' }],
      }),
    );
    expect(bean.fields).toEqual([{ path: 'reportName', message: 'must not be blank', localizationKey: 'x' }]);
    expect(bean.correlationId).toBe('c-1');
    expect(describeErrorBody(bean)).toBe(
      'VALIDATION_ERROR: Field validation error (reportName: must not be blank)',
    );
  });

  it('decodes the XML error bean of report-downloads (real sample)', () => {
    const body = decodeErrorBody(
      sample('error-404-resource-notfound.report-downloads.xml'),
      'application/xml',
    );
    expect(body).toEqual({
      shape: 'error-bean',
      code: 'RESOURCE_NOTFOUND',
      message: 'Requested Resource Not Found',
      localizationKey: 'cybsapi.resource.notfound',
      detail: 'The requested resource is not found. Please try again later.',
    });
  });

  it('decodes the reporting shape written as XML', () => {
    const xml =
      '<?xml version="1.0"?><error><submitTimeUtc>2024-01-01T00:00:00Z</submitTimeUtc><reason>INVALID_DATA</reason>' +
      '<message>bad</message><details><detail><field>endTime</field><reason>MISSING_FIELD</reason></detail></details></error>';
    expect(decodeErrorBody(xml, 'application/xml')).toEqual({
      shape: 'reporting',
      reason: 'INVALID_DATA',
      message: 'bad',
      submitTimeUtc: '2024-01-01T00:00:00Z',
      details: [{ field: 'endTime', reason: 'MISSING_FIELD' }],
    });
  });

  it('falls back to truncated one-line text, and says when there is no body', () => {
    const html = `<html>\n<body>${'x'.repeat(2000)}</body></html>`;
    const body = decodeErrorBody(html, 'text/html');
    expect(body.shape).toBe('text');
    expect(body.text!.length).toBeLessThanOrEqual(501);
    expect(body.text).not.toContain('\n');
    expect(decodeErrorBody('Bad Gateway', 'text/plain')).toEqual({ shape: 'text', text: 'Bad Gateway' });
    expect(decodeErrorBody('', undefined)).toEqual({ shape: 'empty' });
    expect(decodeErrorBody('{not json', 'application/json').shape).toBe('text');
  });
});

describe('createHttpError', () => {
  const base = { method: 'GET', path: '/reporting/v3/reports?startTime=a', bodyText: '' };

  it('404 on a no-data endpoint is API_NOT_FOUND with noData', () => {
    const error = createHttpError({
      ...base,
      status: 404,
      bodyText: sample('error-404-resource-notfound.report-downloads.xml'),
      contentType: 'application/xml',
      notFoundMeansNoData: true,
    });
    expect(error.code).toBe('API_NOT_FOUND');
    expect(error.noData).toBe(true);
    expect(error.retryable).toBe(false);
    expect(error.stage).toBe('api');
    expect(error.status).toBe(404);
    expect(error.message).toMatch(/^CyberSource has no data for GET \/reporting\/v3\/reports\?startTime=a/);
    expect(error.message).toContain('RESOURCE_NOTFOUND');
    const plain = createHttpError({ ...base, status: 404 });
    expect(plain.noData).toBe(false);
  });

  it('401 names the scheme and merchant id, never a secret', () => {
    const error = createHttpError({ ...base, status: 401, auth: { scheme: 'jwt', merchantId: 'merchant7' } });
    expect(error.code).toBe('API_UNAUTHORIZED');
    expect(error.message).toContain('refused the credentials');
    expect(error.message).toContain('jwt');
    expect(error.message).toContain('merchant7');
    expect(error.retryable).toBe(false);
  });

  it('401 in either shape the gateway uses reads as one sentence with its reason', () => {
    const auth = { scheme: 'jwt', merchantId: 'merchant7' };
    // The Error Bean (facts §3.2) and the gateway's {"response":{"rmsg":…}}: a string, or an object
    // {error, error_description} as in DOCS OAuth "Submit API Requests" (ACCESS_TOKEN_EXPIRED).
    const bean = createHttpError({
      ...base,
      status: 401,
      auth,
      bodyText: JSON.stringify({
        code: 'UNAUTHORIZED',
        message: 'Authentication Failed',
        localizationKey: 'cybsapi.authentication.failed',
        correlationId: null,
        detail: null,
        fields: [],
      }),
      contentType: 'application/hal+json',
    });
    const gateway = createHttpError({
      ...base,
      status: 401,
      auth,
      bodyText: '{"response":{"rmsg":"Authentication Failed"}}',
      contentType: 'application/json',
    });
    const expired = createHttpError({
      ...base,
      status: 401,
      auth,
      bodyText:
        '{ "response": { "rmsg": { "error": "ACCESS_TOKEN_EXPIRED", "error_description": "ACCESS_TOKEN_EXPIRED" } } }',
    });
    const where = 'GET /reporting/v3/reports?startTime=a';
    const sentence = (reason: string) =>
      `CyberSource refused the credentials (auth scheme jwt, merchant id merchant7) with HTTP 401 for ${where}: ${reason}; check CYBS_AUTH, CYBS_MERCHANT_ID, CYBS_KEY_ID and the shared secret or key file.`;
    expect(bean.message).toBe(sentence('UNAUTHORIZED: Authentication Failed'));
    expect(gateway.message).toBe(sentence('Authentication Failed'));
    expect(expired.message).toBe(sentence('ACCESS_TOKEN_EXPIRED'));
    expect(gateway.body).toEqual({ shape: 'gateway', message: 'Authentication Failed' });
    for (const e of [bean, gateway, expired]) expect(e.code).toBe('API_UNAUTHORIZED');
  });

  it('marks 429 and 5xx retryable, 400/403 not', () => {
    for (const status of [429, 500, 502, 503, 504]) {
      expect(createHttpError({ ...base, status }).retryable).toBe(true);
    }
    for (const status of [400, 403, 409, 501]) {
      const error = createHttpError({ ...base, status });
      expect(error.retryable).toBe(false);
      expect(error.code).toBe('API_HTTP_STATUS');
    }
    const e500 = createHttpError({
      ...base,
      status: 500,
      bodyText: sample('error-500-spec-example-net-fundings.spec-example.json'),
    });
    expect(e500.message).toBe(
      'CyberSource answered HTTP 500 to GET /reporting/v3/reports?startTime=a: SERVER_ERROR: Error encountered while processing request.',
    );
  });

  it('maps timeouts and socket errors', () => {
    const timeout = createTransportError({
      method: 'GET',
      path: '/p',
      host: 'h',
      error: Object.assign(new Error('Headers Timeout Error'), { code: 'UND_ERR_HEADERS_TIMEOUT' }),
    });
    expect([timeout.code, timeout.retryable]).toEqual(['API_TIMEOUT', true]);
    const reset = createTransportError({
      method: 'GET',
      path: '/p',
      host: 'h',
      error: new Error('fetch failed', {
        cause: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
      }),
    });
    expect([reset.code, reset.retryable]).toEqual(['API_NETWORK', true]);
    const other = createTransportError({ method: 'GET', path: '/p', host: 'h', error: new Error('boom') });
    expect([other.code, other.retryable]).toEqual(['API_NETWORK', false]);
  });
});
