import { CybsError } from '../errors.js';
import { DEPLOYMENT_BASE_URLS } from './deployments.js';
import type { ResolvedTarget } from './deployments.js';
import type { QueryEntry } from './transport.js';

/** The one path a search result's download link may lead to. */
export const REPORT_DOWNLOADS_PATH = '/reporting/v3/report-downloads';

/**
 * The query of a search result's `_link.reportDownload.href` (e.g.
 * `/reporting/v3/report-downloads?reportDate=2017-10-02&reportName=x&reportTime=10:00:00+05:00`),
 * to be sent, signed like any request, to the configured target: only the link's query is taken,
 * the request always goes to the target's report-downloads path, so credentials are never sent
 * anywhere else. The link comes from the service's answer, so one that leads elsewhere (another
 * host or path) is refused. A relative link is resolved against the target; an absolute one may
 * carry the target's path prefix.
 */
export function downloadHrefQuery(href: string, target: ResolvedTarget): QueryEntry[] {
  let url: URL;
  try {
    url = new URL(href, `${target.origin}/`);
  } catch {
    throw refused(href, 'it is not a URL');
  }
  let path = url.pathname;
  if (target.basePath !== '' && path.startsWith(`${target.basePath}/`))
    path = path.slice(target.basePath.length);
  // Behind a proxy (CYBS_BASE_URL), the service's own absolute links name its host: their query is
  // still taken, and sent to the configured target like every request.
  const service = (Object.values(DEPLOYMENT_BASE_URLS) as string[]).includes(url.origin);
  if (url.origin !== target.origin && !service)
    throw refused(href, `it leads to ${url.origin}, neither ${target.origin} nor a CyberSource host`);
  if (url.username !== '' || url.password !== '' || url.hash !== '')
    throw refused(href, 'it carries a user, password or fragment');
  if (path !== REPORT_DOWNLOADS_PATH) throw refused(href, `its path is not ${REPORT_DOWNLOADS_PATH}`);
  return queryPairs(url.search.slice(1), href);
}

/**
 * Name/value pairs of a raw query, percent-decoded but with `+` kept as a plus: the service writes
 * reportTime's offset literally (`reportTime=10:00:00+05:00`), so the value means `+05:00`, which
 * the transport then sends encoded (`%2B`).
 */
function queryPairs(raw: string, href: string): [string, string][] {
  const out: [string, string][] = [];
  for (const part of raw.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    try {
      out.push([
        decodeURIComponent(eq < 0 ? part : part.slice(0, eq)),
        decodeURIComponent(eq < 0 ? '' : part.slice(eq + 1)),
      ]);
    } catch {
      throw refused(href, 'its query is not percent-encoded text');
    }
  }
  return out;
}

function refused(href: string, why: string): CybsError {
  return new CybsError(
    'API_INVALID_RESPONSE',
    `the report download link "${href.slice(0, 200)}" of a search result is not followed: ${why}.`,
    { stage: 'api' },
  );
}
