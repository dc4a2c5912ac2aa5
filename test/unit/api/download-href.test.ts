import { describe, expect, it } from 'vitest';
import { downloadHrefQuery } from '../../../src/api/download-href.js';

const target = { origin: 'https://api.cybersource.com', host: 'api.cybersource.com', basePath: '' };
const proxied = { origin: 'http://127.0.0.1:8080', host: '127.0.0.1:8080', basePath: '/cybs' };

describe('downloadHrefQuery', () => {
  it('takes the query of the documented link, reportTime included', () => {
    // SPEC2020 example of a search result's _link.reportDownload.href.
    const href =
      '/reporting/v3/report-downloads?reportDate=2017-10-02&reportName=TRR_133&reportTime=10:00:00+05:00';
    expect(downloadHrefQuery(href, target)).toEqual([
      ['reportDate', '2017-10-02'],
      ['reportName', 'TRR_133'],
      // The offset is written with a literal "+": it stays a plus (sent as %2B), not a space.
      ['reportTime', '10:00:00+05:00'],
    ]);
    expect(
      downloadHrefQuery(
        'https://api.cybersource.com/reporting/v3/report-downloads?reportDate=2017-10-02&reportName=a&reportTime=10%3A00%3A00%2B05%3A00',
        target,
      ),
    ).toContainEqual(['reportTime', '10:00:00+05:00']);
    expect(
      downloadHrefQuery('http://127.0.0.1:8080/cybs/reporting/v3/report-downloads?reportName=a', proxied),
    ).toEqual([['reportName', 'a']]);
  });

  it('takes the query of the service’s own absolute link behind a proxy (sent to the proxy)', () => {
    expect(
      downloadHrefQuery('https://api.cybersource.com/reporting/v3/report-downloads?reportName=a', proxied),
    ).toEqual([['reportName', 'a']]);
  });

  it('never follows a link to another host or path', () => {
    for (const href of [
      'https://evil.example/reporting/v3/report-downloads?reportName=a',
      '//evil.example/reporting/v3/report-downloads?reportName=a',
      'http://api.cybersource.com/reporting/v3/report-downloads?reportName=a',
      '/reporting/v3/reports?reportName=a',
      '/reporting/v3/report-downloads/../report-subscriptions',
      'https://user:pw@api.cybersource.com/reporting/v3/report-downloads',
    ]) {
      expect(() => downloadHrefQuery(href, target), href).toThrow(/is not followed/);
    }
  });
});
