/**
 * A downloaded body is judged from its head: is it a report, and is it the window's (issue 26 #4,
 * #8)? Written against the real files in samples/cybersource: the REST-era metadata line, the
 * legacy three-field line with a date-only period, the legacy XML written to the minute, the
 * Transaction Detail XML with its DOCTYPE, and the service's XML error document.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { downloadContentTypeProblem } from '../../../src/api/download.js';
import { guessReportDefinition, isSharedReportName } from '../../../src/catalog/index.js';
import { isCybsError } from '../../../src/errors.js';
import type { CybsError } from '../../../src/errors.js';
import {
  checkReportHead,
  checkReportShape,
  namedReportDefinition,
  reportHeadComplete,
} from '../../../src/extract/report-identity.js';
import {
  CLASSIC_REPORTS,
  REPORT_DEFINITIONS as SIMULATED_DEFINITIONS,
} from '../../../packages/simulator/src/render/report-layouts.js';
import type { ExpectedReport } from '../../../src/extract/report-identity.js';
import { samplesDir } from '../parse/helpers.js';

const sample = (name: string) => readFileSync(join(samplesDir, name));

const PBD: ExpectedReport = {
  format: 'csv',
  fileName: 'PaymentBatchDetailReport_Daily_Classic_2023-10-11.csv',
  reportDefinition: 'PaymentBatchDetailClass',
  organizationId: 'wfgsulair',
  reportName: 'PaymentBatchDetailReport_Daily_Classic',
  start: new Date('2023-10-10T07:00:00Z'),
  end: new Date('2023-10-11T07:00:00Z'),
  timeZone: 'America/Los_Angeles',
};

function failure(head: Buffer | string, expected: ExpectedReport): string {
  try {
    checkReportHead(Buffer.from(head), expected);
  } catch (error) {
    expect(isCybsError(error) && error.code === 'EXTRACT_NOT_THE_REPORT').toBe(true);
    return (error as Error).message;
  }
  throw new Error('expected the head to be refused');
}

describe('report identity from the head of a download', () => {
  it("accepts the real REST-era CSV as the window's report, and names both values of each difference", () => {
    const file = sample('rest-v3-PaymentBatchDetailReport_Daily_Classic.sul-dlss-fixture.csv');
    expect(() => checkReportHead(file, PBD)).not.toThrow();
    // Merchant ids are case-insensitive at the service.
    expect(() => checkReportHead(file, { ...PBD, organizationId: 'WFGSULAIR' })).not.toThrow();
    expect(failure(file, { ...PBD, organizationId: 'other_org' })).toBe(
      `${PBD.fileName}: the report is not the window's: its metadata names organization "wfgsulair" (the window's: "other_org"); nothing of it is loaded.`,
    );
    expect(failure(file, { ...PBD, reportName: 'Mine_Daily' })).toContain(
      `report "PaymentBatchDetailReport_Daily_Classic" (the window's: "Mine_Daily")`,
    );
    expect(
      failure(file, {
        ...PBD,
        start: new Date('2023-10-11T07:00:00Z'),
        end: new Date('2023-10-12T07:00:00Z'),
      }),
    ).toContain(
      `period "2023-10-10T07:00:00Z to 2023-10-11T07:00:00Z" (the window's: 2023-10-11T07:00:00.000Z to 2023-10-12T07:00:00.000Z)`,
    );
  });

  it('judges the legacy three-field line by its date-only period in the subscription zone, not by its title', () => {
    const file = sample('legacy-docs-PaymentBatchDetailReport.csv');
    const day = {
      ...PBD,
      timeZone: 'UTC',
      start: new Date('2003-05-01T00:00:00Z'),
      end: new Date('2003-05-02T00:00:00Z'),
    };
    expect(() => checkReportHead(file, day)).not.toThrow();
    expect(
      failure(file, {
        ...day,
        start: new Date('2003-05-02T00:00:00Z'),
        end: new Date('2003-05-03T00:00:00Z'),
      }),
    ).toContain('period "2003-05-01 to 2003-05-01"');
  });

  it('reads the head of a UTF-16 file by its byte order mark', () => {
    const text = sample('rest-v3-PaymentBatchDetailReport_Daily_Classic.sul-dlss-fixture.csv').toString(
      'utf8',
    );
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    const be = Buffer.from(le);
    be.swap16();
    expect(() => checkReportHead(le, PBD)).not.toThrow();
    expect(() => checkReportHead(be, PBD)).not.toThrow();
    expect(failure(le, { ...PBD, organizationId: 'other_org' })).toContain('organization "wfgsulair"');
  });

  it('accepts a file without a metadata line whose header names fields of the report', () => {
    const file = sample('legacy-docs-PaymentBatchDetailReport.csv')
      .toString('utf8')
      .split('\n')
      .slice(1)
      .join('\n');
    expect(() => checkReportHead(Buffer.from(file), PBD)).not.toThrow();
  });

  it('refuses a body that is not a CSV report, saying what it starts with', () => {
    expect(failure('<!DOCTYPE html>\n<html><body>Bad Gateway</body></html>\n', PBD)).toBe(
      `${PBD.fileName}: the body is not a PaymentBatchDetailClass CSV report: it has no metadata line and no header naming a field of the report (it starts with "<!DOCTYPE html> <html><body>Bad Gateway</body></html>"); nothing of it is loaded.`,
    );
    expect(failure('', PBD)).toContain('it starts with nothing (the body is empty)');
    expect(failure(sample('error-404-resource-notfound.report-downloads.xml'), PBD)).toContain(
      'no metadata line',
    );
  });

  it('judges XML reports by their root element and its MerchantID and period, legacy minutes included', () => {
    const xml = { ...PBD, format: 'xml' as const, fileName: 'pbd.xml', timeZone: 'America/Los_Angeles' };
    const legacy = sample('legacy-docs-PaymentBatchDetailReport.excerpt.xml');
    const legacyDay = {
      ...xml,
      organizationId: 'CyberSource',
      start: new Date('2001-08-16T00:00:00-07:00'),
      end: new Date('2001-08-17T00:00:00-07:00'),
    };
    expect(() => checkReportHead(legacy, legacyDay)).not.toThrow();
    expect(failure(legacy, { ...legacyDay, organizationId: 'someone' })).toContain(
      'organization "CyberSource"',
    );
    const tdr = sample('transaction-detail-tdr_1_6.killbill-excerpt.xml');
    expect(() =>
      checkReportHead(tdr, {
        ...xml,
        reportDefinition: 'TransactionDetailReportClass',
        organizationId: 'ok_go',
        start: new Date('2009-05-26T18:30:00-08:00'),
        end: new Date('2009-05-27T18:30:00-08:00'),
      }),
    ).not.toThrow();
    expect(failure(sample('error-404-resource-notfound.report-downloads.xml'), xml)).toContain(
      'its root element is <errorBean>, not <Report>',
    );
    expect(failure('Service Unavailable', xml)).toContain('it has no root element');
  });

  it('knows when the head holds enough to judge', () => {
    expect(reportHeadComplete(Buffer.from('a,b,c 2024-01-01 to 2024-01-02\n'), 'csv', false)).toBe(false);
    expect(reportHeadComplete(Buffer.from('m\nh\nr\nr\n'), 'csv', false)).toBe(true);
    expect(reportHeadComplete(Buffer.from('<?xml version="1.0"?>\n<Report Name="x"'), 'xml', false)).toBe(
      false,
    );
    expect(reportHeadComplete(Buffer.from('<?xml version="1.0"?>\n<Report Name="x">'), 'xml', false)).toBe(
      true,
    );
    expect(reportHeadComplete(Buffer.from('<Rep'), 'xml', true)).toBe(true);
  });
});

describe("a report download's Content-Type", () => {
  it('refuses an HTML page, a JSON document and the other report format; lets generic types through to the head check', () => {
    expect(downloadContentTypeProblem('text/html; charset=utf-8', 'text/csv')).toBe(
      'an HTML page (Content-Type text/html)',
    );
    expect(downloadContentTypeProblem('application/xhtml+xml', 'application/xml')).toContain('HTML page');
    expect(downloadContentTypeProblem('application/hal+json', 'text/csv')).toContain('JSON document');
    expect(downloadContentTypeProblem('application/xml', 'text/csv')).toContain('XML document');
    expect(downloadContentTypeProblem('text/csv', 'application/xml')).toContain('CSV file');
    for (const [type, accept] of [
      [undefined, 'text/csv'],
      ['text/csv;charset=UTF-8', 'text/csv'],
      ['application/xml', 'application/xml'],
      ['text/xml', 'application/xml, text/csv'],
      ['application/octet-stream', 'text/csv'],
      ['text/plain', 'text/csv'],
    ] as const) {
      expect(downloadContentTypeProblem(type, accept)).toBeUndefined();
    }
  });
});

describe('the report definition a file names (issue 27 #4)', () => {
  const shape = (reportDefinition: string | undefined, format: 'csv' | 'xml' = 'csv') => ({
    format,
    fileName: 'f',
    reportDefinition,
  });
  const named = (file: string, format: 'csv' | 'xml' = 'csv') =>
    namedReportDefinition(checkReportShape(sample(file), shape(undefined, format))!)?.name;

  it('reads it from the real files: the REST-era type, the legacy title, the XML root Name', () => {
    expect(named('rest-v3-PaymentBatchDetailReport_Daily_Classic.sul-dlss-fixture.csv')).toBe(
      'PaymentBatchDetailClass',
    );
    expect(named('legacy-docs-PaymentBatchDetailReport.csv')).toBe('PaymentBatchDetailClass');
    expect(named('legacy-docs-PaymentBatchDetailReport.excerpt.xml', 'xml')).toBe('PaymentBatchDetailClass');
    // The Transaction Detail family's Name is the layout of more than one definition's XML.
    expect(named('transaction-detail-tdr_1_6.killbill-excerpt.xml', 'xml')).toBeUndefined();
  });

  it("refuses a file whose metadata names another definition than the one asked for, with the file's", () => {
    const head = sample('rest-v3-PaymentBatchDetailReport_Daily_Classic.sul-dlss-fixture.csv');
    try {
      checkReportShape(head, shape('TransactionRequestClass'));
      expect.unreachable();
    } catch (error) {
      expect(isCybsError(error) && error.code).toBe('EXTRACT_OTHER_REPORT');
      expect((error as CybsError).exitCode).toBe(2);
      expect((error as CybsError).context.reportDefinition).toBe('PaymentBatchDetailClass');
      expect((error as Error).message).toBe(
        'f: its metadata line names a "PaymentBatchDetail" report (PaymentBatchDetailClass), not TransactionRequestClass; nothing of it is loaded.',
      );
    }
    expect(() => checkReportHead(head, { ...PBD, reportDefinition: 'FundingDetailClass' })).toThrow(
      /names a "PaymentBatchDetail" report \(PaymentBatchDetailClass\), not FundingDetailClass/,
    );
    expect(checkReportShape(head, shape('PaymentBatchDetailClass'))?.organizationId).toBe('wfgsulair');
  });

  it("a subscription's own name says nothing: only its report type does", () => {
    const line = (type: string) =>
      Buffer.from(
        `org1,TransactionRequestReport_Daily,${type},1.10,2024-03-01T00:00:00Z to 2024-03-02T00:00:00Z\nrequest_id,amount\n`,
      );
    expect(namedReportDefinition(checkReportShape(line(''), shape(undefined))!)).toBeUndefined();
    expect(() => checkReportShape(line(''), shape('FundingDetailClass'))).not.toThrow();
    expect(() => checkReportShape(line('FundingDetail'), shape('FundingDetailClass'))).not.toThrow();
  });

  it('every report the simulator writes names its own definition (CSV type, XML Name, Classic reports)', () => {
    for (const layout of SIMULATED_DEFINITIONS) {
      expect(guessReportDefinition(layout.type)?.name, layout.type).toBe(layout.name);
      if (isSharedReportName(layout.xml.name)) continue;
      expect(guessReportDefinition(layout.xml.name)?.name, layout.xml.name).toBe(layout.name);
    }
    for (const classic of CLASSIC_REPORTS) {
      expect(guessReportDefinition(classic.type)?.name, classic.type).toBe(classic.definitionName);
    }
  });
});
