/**
 * Hostile report downloads, end to end (CLI → a hostile proxy → simulator → PostgreSQL): a body
 * that is not the report (a gateway's HTML page served with 200, labelled as HTML or as the report's
 * own type) and a report that is not the window's (its metadata names another organization and
 * period) fail the window with a clear reason and load nothing; once the proxy passes the real
 * reports, the next backfill loads them, equal to the simulator's ground truth (issue 26 #4, #8).
 */
import { request } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PIPELINES } from '../../pipelines/index.js';
import { cli } from '../helpers/cli.js';
import type { E2eWorld } from '../helpers/e2e.js';
import { E2E_NOW, createE2eWorld, windowState } from '../helpers/e2e.js';
import { compareWithGroundTruth, duplicateRows } from '../helpers/ground-truth.js';
import { startLocalServer } from '../helpers/local-server.js';
import type { LocalServer } from '../helpers/local-server.js';

type Mode = 'pass' | 'html' | 'html-as-report' | 'foreign';

const GATEWAY_PAGE =
  '<!DOCTYPE html>\n<html lang="en"><head><title>502 Bad Gateway</title></head>\n' +
  '<body><h1>Bad Gateway</h1><p>The upstream server did not answer.</p></body></html>\n';

/** The report with its metadata rewritten to another organization's report of 1999-01-01. */
function foreign(text: string, organizationId: string): string {
  return text
    .replaceAll(organizationId, 'someone_else')
    .replace(/^someone_else,[^,\r\n]*,/, 'someone_else,SomeoneElsesReport_Daily,')
    .replace(
      /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z to \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/,
      '1999-01-01T00:00:00Z to 1999-01-02T00:00:00Z',
    )
    .replace(/ReportStartDate="[^"]*"/, 'ReportStartDate="1999-01-01T00:00:00Z"')
    .replace(/ReportEndDate="[^"]*"/, 'ReportEndDate="1999-01-02T00:00:00Z"');
}

describe('hostile report downloads (end to end)', { timeout: 120_000 }, () => {
  let world: E2eWorld;
  let proxy: LocalServer;
  let mode: Mode = 'pass';
  /** Downloads the proxy answered with something other than the report. */
  let altered = 0;

  beforeAll(async () => {
    world = await createE2eWorld({ prefix: 'hostile_dl' });
    const upstream = new URL(world.sim.baseUrl);
    proxy = await startLocalServer(
      (req, res) =>
        new Promise<void>((resolve, reject) => {
          const headers: IncomingHttpHeaders = { ...req.headers };
          const forward = request(
            { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
            (answer) => {
              const chunks: Buffer[] = [];
              answer.on('data', (c: Buffer) => chunks.push(c));
              answer.on('error', reject);
              answer.on('end', () => {
                let body = Buffer.concat(chunks);
                const out: Record<string, string> = {};
                for (const [k, v] of Object.entries(answer.headers)) {
                  if (typeof v === 'string' && k !== 'content-length' && k !== 'transfer-encoding')
                    out[k] = v;
                }
                const download =
                  req.url.startsWith('/reporting/v3/report-downloads') && answer.statusCode === 200;
                if (download && mode !== 'pass') {
                  altered++;
                  if (mode === 'foreign') {
                    body = Buffer.from(foreign(body.toString('utf8'), world.sim.organizations[0]!));
                  } else {
                    body = Buffer.from(GATEWAY_PAGE);
                    if (mode === 'html') out['content-type'] = 'text/html; charset=utf-8';
                  }
                }
                out['content-length'] = String(body.length);
                res.writeHead(answer.statusCode ?? 502, out);
                res.end(body);
                resolve();
              });
            },
          );
          forward.on('error', reject);
          forward.end(req.body);
        }),
    );
  });

  afterAll(async () => {
    await proxy?.close();
    await world?.close();
  });

  const backfill = (pipeline: string, day: string) =>
    cli(
      [
        '--config',
        world.configPath,
        '--now',
        E2E_NOW,
        'backfill',
        '--pipelines',
        pipeline,
        '--from',
        day,
        '--to',
        day,
      ],
      {
        env: { ...world.env, CYBS_BASE_URL: proxy.url },
      },
    );

  async function tableRows(pipeline: string): Promise<number> {
    const p = PIPELINES.find((x) => x.name === pipeline)!;
    if (p.kind !== 'report') return 0;
    const exists = await world.db.query(`select to_regclass($1) as r`, [`cybs.${p.table.name}`]);
    if (!exists.rows[0].r) return 0;
    return (await world.db.query(`select count(*)::int as n from cybs."${p.table.name}"`)).rows[0]
      .n as number;
  }

  const CASES: { name: string; mode: Mode; pipeline: string; day: string; code: RegExp; reason: RegExp[] }[] =
    [
      {
        name: 'an HTML page served with 200 and text/html (source-keyed report)',
        mode: 'html',
        pipeline: 'funding_detail',
        day: '2024-03-02',
        code: /^API_INVALID_RESPONSE$/,
        reason: [/status 200 and an HTML page \(Content-Type text\/html\) instead of the report file/],
      },
      {
        name: 'an HTML page served with 200 as the report type (source-keyed CSV report)',
        mode: 'html-as-report',
        pipeline: 'funding_detail',
        day: '2024-03-03',
        code: /^EXTRACT_NOT_THE_REPORT$/,
        reason: [
          /is not a FundingDetailClass CSV report: it has no metadata line and no header/,
          /<!DOCTYPE html>/,
        ],
      },
      {
        name: 'an HTML page served with 200 as the report type (request-keyed CSV report)',
        mode: 'html-as-report',
        pipeline: 'transaction_request',
        day: '2024-03-03',
        code: /^EXTRACT_NOT_THE_REPORT$/,
        reason: [/no metadata line and no header naming a field of the report/],
      },
      {
        name: 'an HTML page served with 200 as the report type (XML report)',
        mode: 'html-as-report',
        pipeline: 'payment_batch_detail',
        day: '2024-03-03',
        code: /^EXTRACT_NOT_THE_REPORT$/,
        reason: [/not an XML report: its root element is <html>, not <Report>/],
      },
      {
        name: "another organization's report of another day (CSV)",
        mode: 'foreign',
        pipeline: 'funding_detail',
        day: '2024-03-04',
        code: /^EXTRACT_NOT_THE_REPORT$/,
        reason: [
          /organization "someone_else" \(the window's: "[^"]+"\)/,
          /period "1999-01-01T00:00:00Z to 1999-01-02T00:00:00Z" \(the window's: 2024-03-04T00:00:00.000Z to 2024-03-05T00:00:00.000Z\)/,
        ],
      },
      {
        name: "another organization's report of another day (XML)",
        mode: 'foreign',
        pipeline: 'payment_batch_detail',
        day: '2024-03-04',
        code: /^EXTRACT_NOT_THE_REPORT$/,
        reason: [/organization "someone_else"/, /period "1999-01-01T00:00:00Z to 1999-01-02T00:00:00Z"/],
      },
    ];

  for (const c of CASES) {
    it(`${c.name}: the window fails with the reason and loads nothing; a later run loads the real report`, async () => {
      const before = await tableRows(c.pipeline);
      mode = c.mode;
      altered = 0;
      const r = await backfill(c.pipeline, c.day);
      mode = 'pass';
      const where = `${r.code} ${r.stdout}${r.stderr}`;
      expect(r.code, where).toBe(1);
      expect(altered, where).toBeGreaterThan(0);
      const state = await windowState(world.db, c.pipeline, c.day);
      expect(state?.status, where).toBe('failed');
      expect(state?.code, where).toMatch(c.code);
      for (const reason of c.reason) expect(state?.message, where).toMatch(reason);
      expect(await tableRows(c.pipeline)).toBe(before);
      if (c.mode === 'html') {
        // A gateway's page is a transient failure: the download was tried as often as the retry policy allows.
        expect(altered).toBe(3);
      }
      const p = PIPELINES.find((x) => x.name === c.pipeline)!;
      if (p.kind === 'report') {
        const columns = await world.db.query(
          `select column_name from information_schema.columns where table_schema = 'cybs' and column_name like '%html%'`,
        );
        expect(columns.rows).toEqual([]);
      }

      const again = await backfill(c.pipeline, c.day);
      expect(again.code, again.stdout + again.stderr).toBe(0);
      expect((await windowState(world.db, c.pipeline, c.day))?.status).toBe('loaded');
      const compared = await compareWithGroundTruth(world.db, {
        truth: (o, s, e) => world.sim.groundTruth(o, s, e),
        organizations: world.sim.organizations,
        startDate: c.day,
        endDate: c.day,
        pipelines: [c.pipeline],
        strict: false,
      });
      expect(compared.mismatches).toEqual([]);
      expect(await duplicateRows(world.db)).toBe(0);
    });
  }
});
