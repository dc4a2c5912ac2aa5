import { createHash } from 'node:crypto';
import type { StatusPageData, StatusPageRow, StripCell } from '../state/status-page-data.js';
import { PROBLEM_FILTERS } from '../state/status-page-data.js';
import type { QueueCounts } from '../queue/queue-status.js';

/**
 * The status page: one self-contained HTML document (no external assets) rendered from
 * StatusPageData. Its only style sheet and script are inline and allowed by their hashes in a strict
 * Content-Security-Policy, sent as a header by the daemon and repeated in a meta tag for a file.
 * Read-only: its one form is a GET of the same page with filters.
 */

const STYLE = `
:root { color-scheme: light; font: 14px/1.4 system-ui, sans-serif; color: #1d2430; }
body { margin: 1.5rem; }
h1 { font-size: 1.4rem; margin: 0 0 .25rem; } h2 { font-size: 1.1rem; margin: 1.5rem 0 .5rem; }
.muted { color: #5b6577; }
table { border-collapse: collapse; }
th, td { padding: .25rem .6rem; border-bottom: 1px solid #e3e7ee; text-align: left; white-space: nowrap; }
td.wrap { white-space: normal; max-width: 50rem; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.bad td:first-child { box-shadow: inset 3px 0 #c62828; }
.strip { display: inline-flex; gap: 1px; }
.c { display: inline-block; width: 11px; height: 16px; border-radius: 2px; background: #eef0f4; cursor: pointer; }
.c:focus { outline: 2px solid #1d2430; }
.s-loaded { background: #2e7d32; } .s-no_data { background: #a5d6a7; } .s-not_ready { background: #f9a825; }
.s-failed { background: #c62828; } .s-gap { background: #fff; box-shadow: inset 0 0 0 1px #c62828; }
.s-pending, .s-running { background: #64b5f6; } .s-none { background: #eef0f4; cursor: default; }
.legend span.c { vertical-align: middle; margin: 0 .25rem 0 .75rem; cursor: default; }
.stale { color: #c62828; font-weight: 600; }
form { display: flex; gap: .75rem; align-items: end; flex-wrap: wrap; margin: .5rem 0; }
label { display: flex; flex-direction: column; font-size: .85rem; }
#details { margin: .5rem 0; padding: .5rem .75rem; background: #f5f7fa; border-left: 3px solid #1d2430; white-space: pre-wrap; }
nav a { margin-right: 1rem; }
`;

const SCRIPT = `
(function () {
  var box = document.getElementById('details');
  function show(cell) {
    if (!cell.classList.contains('c') || cell.classList.contains('s-none') || !cell.title) return;
    box.textContent = cell.title;
    box.hidden = false;
  }
  document.addEventListener('click', function (e) { if (e.target instanceof HTMLElement) show(e.target); });
  document.addEventListener('keydown', function (e) {
    if (e.key === 'Enter' && e.target instanceof HTMLElement) show(e.target);
  });
})();
`;

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/** The policy of the page: nothing but its own inline style and script, forms only to itself. */
export const STATUS_PAGE_CSP = [
  "default-src 'none'",
  `style-src ${sha256(STYLE)}`,
  `script-src ${sha256(SCRIPT)}`,
  "img-src 'none'",
  "form-action 'self'",
  "base-uri 'none'",
].join('; ');

/** The headers the daemon sends with the page (frame-ancestors only works as a header). */
export const STATUS_PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': `${STATUS_PAGE_CSP}; frame-ancestors 'none'`,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
function esc(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

export function humanDuration(seconds: number | null): string {
  if (seconds === null) return 'never loaded';
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86_400).toFixed(1)} d`;
}

const STATE_NAMES: Record<string, string> = {
  loaded: 'loaded',
  no_data: 'no data',
  not_ready: 'not ready',
  failed: 'failed',
  pending: 'pending',
  running: 'being loaded',
  gap: 'gap',
  none: 'no window',
};

function cellTitle(row: StatusPageRow, cell: StripCell): string {
  const w = cell.window;
  if (!w) {
    return cell.state === 'gap'
      ? `${row.pipeline} ${row.organizationId} ${cell.day}: gap, no window for this day`
      : '';
  }
  return [
    `${row.pipeline} ${row.organizationId} ${w.key}: ${STATE_NAMES[cell.state] ?? cell.state}`,
    `attempts ${w.attempts}, rows ${w.rowsLoaded}, rejected ${w.rowsRejected}`,
    ...(w.errorCode || w.errorMessage ? [`${w.errorCode ?? 'error'}: ${w.errorMessage ?? ''}`] : []),
    `updated ${w.updatedAt.toISOString()}`,
  ].join('\n');
}

function strip(row: StatusPageRow): string {
  return `<span class="strip">${row.strip
    .map((cell) => {
      const title = cellTitle(row, cell);
      return `<span class="c s-${cell.state}" data-day="${cell.day}" data-state="${cell.state}"${
        title ? ` title="${esc(title)}" tabindex="0"` : ''
      }></span>`;
    })
    .join('')}</span>`;
}

function pageLink(data: StatusPageData, page: number): string {
  const q = data.query;
  const params = new URLSearchParams();
  if (q.pipeline) params.set('pipeline', q.pipeline);
  if (q.organization) params.set('organization', q.organization);
  if (q.problems !== 'all') params.set('problems', q.problems);
  if (q.pageSize !== 50) params.set('size', String(q.pageSize));
  params.set('page', String(page));
  return `?${params.toString()}`;
}

export interface RenderOptions {
  /** Served by the daemon: the filter form and page links work. A file shows the query it was written with. */
  served: boolean;
}

/** The window queue as `status` tells it (queued, being loaded, waiting to retry, dead-lettered), per pipeline. */
function queueSection(data: StatusPageData): string {
  const q = data.queue;
  if (!q)
    return '<p class="muted" id="queue">No window queue in this warehouse yet (the first run or worker installs it).</p>';
  const cells = (c: QueueCounts) =>
    `<td class="n" data-k="queued">${c.queued}</td><td class="n" data-k="active">${c.active}</td><td class="n" data-k="retrying">${c.retrying}</td><td class="n" data-k="deadLettered">${c.deadLettered}</td>`;
  const rows = q.pipelines
    .map(
      (p) =>
        `<tr data-pipeline="${esc(p.pipeline)}"${p.deadLettered > 0 ? ' class="bad"' : ''}><td>${esc(p.pipeline)}</td>${cells(p)}</tr>`,
    )
    .join('\n');
  return `<table id="queue">
<thead><tr><th>pipeline</th><th class="n">queued</th><th class="n">being loaded</th><th class="n">waiting to retry</th><th class="n" title="retries spent: the window stays failed and a later pass retries it after its backoff">dead-lettered</th></tr></thead>
<tbody>${rows}
<tr data-total><td>all</td>${cells(q)}</tr></tbody></table>
<p class="muted">Jobs of the window queue, loaded by <code>cybs-etl worker</code> processes, the schedule daemon and runs. A failed attempt waits to retry (queue.retryLimit); a job whose retries are spent is dead-lettered and its window stays failed until a pass retries it after its backoff, or <code>cybs-etl windows retry</code>.</p>`;
}

export function renderStatusPage(data: StatusPageData, options: RenderOptions): string {
  const q = data.query;
  const pipelinesTable = `<table id="pipelines">
<thead><tr><th>pipeline</th><th class="n">organizations</th><th class="n">loaded</th><th class="n">no data</th><th class="n">failed</th><th class="n">not ready</th><th class="n" title="expected windows never loaded">gaps</th><th class="n">rejects</th><th class="n">stale</th><th class="n">largest lag</th><th class="n">freshness limit</th></tr></thead>
<tbody>${data.pipelines
    .map(
      (p) =>
        `<tr data-pipeline="${esc(p.pipeline)}"${p.failed + p.staleOrganizations + p.gaps > 0 ? ' class="bad"' : ''}><td>${esc(p.pipeline)}</td><td class="n">${p.organizations}</td><td class="n" data-k="loaded">${p.loaded}</td><td class="n" data-k="noData">${p.noData}</td><td class="n" data-k="failed">${p.failed}</td><td class="n" data-k="notReady">${p.notReady}</td><td class="n" data-k="gaps">${p.gaps}</td><td class="n" data-k="rejects">${p.rejects}</td><td class="n${p.staleOrganizations > 0 ? ' stale' : ''}" data-k="stale">${p.staleOrganizations}</td><td class="n">${esc(humanDuration(p.maxLagSeconds))}</td><td class="n">${esc(humanDuration(p.freshnessSeconds))}</td></tr>`,
    )
    .join('\n')}</tbody></table>`;

  const queue = queueSection(data);

  const filter = options.served
    ? `<form method="get" action="">
<label>pipeline<select name="pipeline"><option value="">all</option>${data.pipelines
        .map(
          (p) =>
            `<option value="${esc(p.pipeline)}"${p.pipeline === q.pipeline ? ' selected' : ''}>${esc(p.pipeline)}</option>`,
        )
        .join('')}</select></label>
<label>organization contains<input name="organization" value="${esc(q.organization)}" size="20"></label>
<label>show<select name="problems">${PROBLEM_FILTERS.map(
        (f) => `<option value="${f}"${f === q.problems ? ' selected' : ''}>${f.replace('_', ' ')}</option>`,
      ).join('')}</select></label>
<button type="submit">filter</button></form>`
    : `<p class="muted">Written by <code>cybs-etl status --html</code>: pipeline ${esc(q.pipeline || 'all')}, organization ${esc(q.organization || 'any')}, showing ${esc(q.problems)}, page ${q.page}. The <code>schedule</code> daemon serves this page at <code>/</code> with filters.</p>`;

  const first = (q.page - 1) * q.pageSize;
  const pages = Math.max(1, Math.ceil(data.matching / q.pageSize));
  const pager = `<nav id="pager"><span class="muted">rows ${data.matching === 0 ? 0 : first + 1}–${first + data.rows.length} of ${data.matching}, page ${q.page} of ${pages}</span>${
    options.served && q.page > 1 ? ` <a href="${esc(pageLink(data, q.page - 1))}">previous</a>` : ''
  }${options.served && q.page < pages ? ` <a href="${esc(pageLink(data, q.page + 1))}">next</a>` : ''}</nav>`;

  const rowsTable = `<table id="rows">
<thead><tr><th>pipeline</th><th>organization</th><th>${esc(data.days[0] ?? '')} … ${esc(data.days.at(-1) ?? '')}</th><th class="n">loaded</th><th class="n">no data</th><th class="n">failed</th><th class="n">not ready</th><th class="n" title="expected windows never loaded">gaps</th><th class="n">rejects</th><th>last loaded</th><th class="n">lag</th></tr></thead>
<tbody>${data.rows
    .map(
      (r) =>
        `<tr class="row${r.failed > 0 || r.stale || r.gaps > 0 ? ' bad' : ''}" data-pipeline="${esc(r.pipeline)}" data-organization="${esc(r.organizationId)}"><td>${esc(r.pipeline)}</td><td>${esc(r.organizationId)}</td><td>${strip(r)}</td><td class="n" data-k="loaded">${r.loaded}</td><td class="n" data-k="noData">${r.noData}</td><td class="n" data-k="failed">${r.failed}</td><td class="n" data-k="notReady">${r.notReady}</td><td class="n" data-k="gaps">${r.gaps}</td><td class="n" data-k="rejects">${r.rejects}</td><td data-k="lastLoaded">${esc(r.lastLoadedWindow ?? '')}</td><td class="n${r.stale ? ' stale' : ''}" data-k="lag" data-seconds="${r.lagSeconds ?? ''}" title="freshness limit ${esc(humanDuration(r.freshnessSeconds))}">${esc(humanDuration(r.lagSeconds))}${r.stale ? ' (stale)' : ''}</td></tr>`,
    )
    .join('\n')}</tbody></table>`;

  const runsTable = `<table id="runs">
<thead><tr><th>run</th><th>command</th><th>trigger</th><th>status</th><th>started</th><th class="n">seconds</th><th class="n">loaded</th><th class="n">no data</th><th class="n">not ready</th><th class="n">failed</th><th class="n">rows</th><th class="n">rejected</th></tr></thead>
<tbody>${data.runs
    .map((r) => {
      const n = (k: string) => esc(String(r.counts[k] ?? 0));
      const seconds = r.finishedAt
        ? ((r.finishedAt.getTime() - r.startedAt.getTime()) / 1000).toFixed(1)
        : '';
      return `<tr data-run="${r.id}"${r.status === 'failed' ? ' class="bad"' : ''}><td>${r.id}</td><td>${esc(r.command)}</td><td>${esc(r.trigger)}</td><td title="${esc(r.error ?? '')}">${esc(r.status)}</td><td>${esc(r.startedAt.toISOString())}</td><td class="n">${seconds}</td><td class="n">${n('loaded')}</td><td class="n">${n('no_data')}</td><td class="n">${n('not_ready')}</td><td class="n">${n('failed')}</td><td class="n">${n('rowsLoaded')}</td><td class="n">${n('rowsRejected')}</td></tr>`;
    })
    .join('\n')}</tbody></table>`;

  const changes =
    data.schemaChanges.length === 0
      ? '<p class="muted">No columns added.</p>'
      : `<table id="schema-changes"><thead><tr><th>when</th><th>table</th><th>columns added</th><th>pipeline</th><th>source</th></tr></thead><tbody>${data.schemaChanges
          .map(
            (c) =>
              `<tr><td>${esc(c.changedAt.toISOString())}</td><td>${esc(c.table)}</td><td class="wrap">${esc(c.columns)}</td><td>${esc(c.pipeline ?? '')}</td><td>${esc(c.source ?? '')}</td></tr>`,
          )
          .join('')}</tbody></table>`;

  const legend = `<p class="legend muted">${(
    ['loaded', 'no_data', 'not_ready', 'failed', 'gap', 'pending'] as const
  )
    .map((s) => `<span class="c s-${s}"></span>${STATE_NAMES[s]}`)
    .join('')} — one square a day; click one for its window.</p>`;

  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${esc(STATUS_PAGE_CSP)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>cybs-etl status</title>
<style>${STYLE}</style></head>
<body>
<h1>cybs-etl status</h1>
<p class="muted">As of <time id="generated" datetime="${esc(data.generatedAt.toISOString())}">${esc(data.generatedAt.toISOString())}</time>. Read-only.</p>
<h2>Pipelines</h2>
${pipelinesTable}
<h2>Window queue</h2>
${queue}
<h2>Organizations</h2>
${filter}
${legend}
<div id="details" hidden></div>
${pager}
${rowsTable}
<h2>Last runs</h2>
${runsTable}
<h2>Schema changes</h2>
${changes}
<script>${SCRIPT}</script>
</body></html>
`;
}
