import { writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { freshnessSeconds } from '../config/schema.js';
import type { Config } from '../config/schema.js';
import type { Db } from '../warehouse/warehouse.js';
import { assessPipelines } from '../pipeline/plan-windows.js';
import type { ResolvedPipeline } from '../pipeline/resolve-pipelines.js';
import { readWindowStates } from '../state/completeness.js';
import { renderStatusPage, STATUS_PAGE_HEADERS } from '../observability/status-page.js';
import { PROBLEM_FILTERS, readStatusPageData } from '../state/status-page-data.js';
import type { ProblemFilter, StatusPageQuery } from '../state/status-page-data.js';

/** A written page holds more rows than a served one, which pages with links instead. */
const FILE_PAGE_SIZE = 200;

/**
 * `status --html FILE`: the page with its first rows (problems first); returns the sentence to print.
 * `pipelines`: as `status` resolves them; its gaps are status's (assessPipelines).
 */
export async function writeStatusPage(
  db: Db,
  config: Config,
  pipelines: readonly ResolvedPipeline[],
  now: Date,
  file: string,
): Promise<string> {
  const data = await readStatusPageData(
    db,
    { pageSize: FILE_PAGE_SIZE },
    {
      now,
      freshnessSeconds: (p) => freshnessSeconds(config, p),
      completeness: assessPipelines(pipelines, await readWindowStates(db), now),
    },
  );
  await writeFile(file, renderStatusPage(data, { served: false }));
  return `Status page written to ${file} (${data.rows.length} of ${data.matching} pipeline × organization rows, problems first).\n`;
}

/** The query of a served page, from its URL (?pipeline=&organization=&problems=&page=&size=). */
export function statusPageQuery(url: URL): StatusPageQuery {
  const p = url.searchParams;
  const problems = p.get('problems') ?? 'all';
  const number = (name: string) => {
    const n = Number(p.get(name));
    return Number.isInteger(n) && n > 0 ? n : undefined;
  };
  const page = number('page');
  const size = number('size');
  return {
    pipeline: p.get('pipeline') ?? '',
    organization: p.get('organization') ?? '',
    problems: (PROBLEM_FILTERS as readonly string[]).includes(problems) ? (problems as ProblemFilter) : 'all',
    ...(page ? { page } : {}),
    ...(size ? { pageSize: size } : {}),
  };
}

/** The daemon's `/`: the page for the URL's query (read-only: GET and HEAD only), over the daemon's pipelines. */
export function serveStatusPage(db: Db, config: Config, pipelines: readonly ResolvedPipeline[]) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' });
      res.end('the status page is read-only\n');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    const now = new Date();
    const data = await readStatusPageData(db, statusPageQuery(url), {
      now,
      freshnessSeconds: (p) => freshnessSeconds(config, p),
      completeness: assessPipelines(pipelines, await readWindowStates(db), now),
    });
    res.writeHead(200, STATUS_PAGE_HEADERS);
    res.end(req.method === 'HEAD' ? undefined : renderStatusPage(data, { served: true }));
  };
}
