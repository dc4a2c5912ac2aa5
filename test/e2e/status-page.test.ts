/**
 * Issue 30, finding 5: the status page, in a real headless browser (Debian's chromium through
 * playwright-core), over a simulator-loaded database with a gap, a failed window and a window not
 * ready yet. Its numbers equal `status --json`; it loads nothing from outside and breaks no rule of
 * its Content-Security-Policy; the `schedule` daemon serves it at `/` (filtered), with /readyz and
 * the process metrics. A screenshot is kept in test-artifacts/.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import { createE2eWorld, onlyPipelines } from '../helpers/e2e.js';
import type { E2eWorld } from '../helpers/e2e.js';
import { repoRoot } from '../helpers/simulator-process.js';

/** Installed by .ci/run (Debian's chromium) where missing; the test installs nothing itself. */
const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(repoRoot, 'test-artifacts');

interface JsonRow {
  pipeline: string;
  organizationId: string;
  lastLoadedWindow: string | null;
  lastLoadedEnd: string | null;
  windows: Record<string, number>;
  failed: unknown[];
  notReady: unknown[];
  rejects: number;
  gaps: { windows: number }[];
}

type QueueJson = Record<'queued' | 'active' | 'retrying' | 'deadLettered', number> & {
  pipelines: ({ pipeline: string } & Record<'queued' | 'active' | 'retrying' | 'deadLettered', number>)[];
};

async function openPage(browser: Browser, url: string): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('request', (r) => {
    if (new URL(r.url()).origin !== new URL(url).origin) problems.push(`request to ${r.url()}`);
  });
  page.setDefaultTimeout(10_000);
  await page.goto(url);
  return { page, problems };
}

/** The page's numbers of one row (data-k cells), by name. */
async function rowNumbers(page: Page, selector: string): Promise<Record<string, string>> {
  return page
    .locator(selector)
    .evaluate((tr) =>
      Object.fromEntries(
        [...tr.querySelectorAll('[data-k]')].map((td) => [
          td.getAttribute('data-k')!,
          td.getAttribute('data-seconds') ?? td.textContent ?? '',
        ]),
      ),
    );
}

describe('the status page', { timeout: 240_000 }, () => {
  let world: E2eWorld;
  let browser: Browser;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(
        `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium; .ci/run does).`,
      );
    world = await createE2eWorld({
      prefix: 'page',
      configExtra: stringify({ pipelines: onlyPipelines({ transaction_request: {} }) }),
    });
    // A gap (03-11 and 03-12 never loaded), a failure (03-21: every download answered 500) and a
    // window not ready (03-24: the simulator's report of that day is not done at its time).
    for (const [from, to] of [
      ['2024-03-01', '2024-03-10'],
      ['2024-03-13', '2024-03-20'],
    ] as const) {
      const r = await world.run(['backfill', '--from', from, '--to', to]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
    }
    world.sim.setFaults('download:500');
    const failed = await world.run(['backfill', '--from', '2024-03-21', '--to', '2024-03-21']);
    world.sim.setFaults([]);
    expect(failed.code).toBe(1);
    const later = await cli(
      [
        '--config',
        world.configPath,
        '--now',
        '2024-03-26T12:00:00.000Z',
        'backfill',
        '--from',
        '2024-03-22',
        '--to',
        '2024-03-24',
      ],
      { env: world.env },
    );
    expect(later.stdout).toMatch(/windows not ready +1$/m);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--no-first-run',
        '--disable-sync',
      ],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await world?.close();
  });

  it('status --html: renders the strip, and its numbers equal status --json', async () => {
    const file = join(world.dir, 'status.html');
    const written = await world.run(['status', '--html', file]);
    expect(written.code, written.stderr).toBe(0);
    expect(written.stdout).toContain(`Status page written to ${file}`);
    const json = await world.run(['status', '--json']);
    const status = JSON.parse(json.stdout) as {
      pipelines: JsonRow[];
      runs: { id: number }[];
      queue: QueueJson | null;
    };

    const url = `file://${file}`;
    const { page, problems } = await openPage(browser, url);
    const generatedAt = Date.parse((await page.locator('#generated').getAttribute('datetime'))!);
    expect(status.pipelines.length).toBeGreaterThan(0);
    for (const r of status.pipelines) {
      const shown = await rowNumbers(
        page,
        `tr.row[data-pipeline="${r.pipeline}"][data-organization="${r.organizationId}"]`,
      );
      expect(shown).toMatchObject({
        loaded: String(r.windows.loaded ?? 0),
        noData: String(r.windows.no_data ?? 0),
        failed: String(r.failed.length),
        notReady: String(r.notReady.length),
        rejects: String(r.rejects),
        // status's gaps (completeness.ts): expected windows never loaded.
        gaps: String(r.gaps.reduce((n, g) => n + g.windows, 0)),
        lastLoaded: r.lastLoadedWindow ?? '',
        // The same newest window, its lag counted at the page's time.
        lag: String(Math.round((generatedAt - Date.parse(r.lastLoadedEnd!)) / 1000)),
      });
    }
    const totals = await rowNumbers(page, '#pipelines tr[data-pipeline="transaction_request"]');
    const sum = (f: (r: JsonRow) => number) => String(status.pipelines.reduce((n, r) => n + f(r), 0));
    expect(totals).toMatchObject({
      loaded: sum((r) => r.windows.loaded ?? 0),
      failed: sum((r) => r.failed.length),
      notReady: sum((r) => r.notReady.length),
      rejects: sum((r) => r.rejects),
      gaps: '2',
    });
    // The window queue as status counts it: the failed window's job waits for its retry.
    expect(status.queue).not.toBeNull();
    const queue = status.queue!;
    expect(queue.retrying).toBe(1);
    const asText = (c: Omit<QueueJson, 'pipelines'>) => ({
      queued: String(c.queued),
      active: String(c.active),
      retrying: String(c.retrying),
      deadLettered: String(c.deadLettered),
    });
    expect(await rowNumbers(page, '#queue tr[data-total]')).toEqual(asText(queue));
    for (const p of queue.pipelines)
      expect(await rowNumbers(page, `#queue tr[data-pipeline="${p.pipeline}"]`)).toEqual(asText(p));
    expect(queue.pipelines.map((p) => p.pipeline)).toEqual(['transaction_request']);
    const runs = await page
      .locator('#runs tr[data-run]')
      .evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-run')));
    expect(runs).toEqual(status.runs.map((r) => String(r.id)));

    // The strip: each state where the test put it.
    const org = world.sim.organizations[0]!;
    const cell = (day: string) =>
      page.locator(
        `tr.row[data-pipeline="transaction_request"][data-organization="${org}"] .c[data-day="${day}"]`,
      );
    expect(await cell('2024-03-01').getAttribute('data-state')).toMatch(/^(loaded|no_data)$/);
    expect(await cell('2024-03-11').getAttribute('data-state')).toBe('gap');
    expect(await cell('2024-03-12').getAttribute('data-state')).toBe('gap');
    expect(await cell('2024-03-21').getAttribute('data-state')).toBe('failed');
    expect(await cell('2024-03-24').getAttribute('data-state')).toBe('not_ready');
    // A cell's window, shown on click.
    await cell('2024-03-21').click();
    const details = await page.locator('#details').textContent();
    expect(details).toContain(`transaction_request ${org} 2024-03-21: failed`);
    expect(details).toMatch(/attempts \d+/);
    expect(details).toContain('API_');
    // The style sheet applied (the CSP allows it by its hash) and nothing was blocked or fetched.
    const failedCell = `tr.row[data-organization="${org}"] .c[data-day="2024-03-21"]`;
    expect(
      await page.evaluate(`getComputedStyle(document.querySelector('${failedCell}')).backgroundColor`),
    ).toBe('rgb(198, 40, 40)');
    expect(problems).toEqual([]);

    await mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'status-page.png'), fullPage: true });
    expect((await readFile(file, 'utf8')).includes('http://')).toBe(false);
    await page.close();
  });

  it('the schedule daemon serves it at / (filtered and read-only), with /readyz and process metrics', async () => {
    const daemon = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'pipelines/cli.ts',
        '--config',
        world.configPath,
        'schedule',
        '--no-catch-up',
        '--port',
        '0',
      ],
      {
        cwd: repoRoot,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...world.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    daemon.stdout.on('data', (d: Buffer) => (out += d.toString()));
    daemon.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => daemon.once('exit', resolve));
    try {
      await expect
        .poll(() => /on port (\d+)/.test(out) || daemon.exitCode !== null, { timeout: 90_000 })
        .toBe(true);
      const port = Number(/on port (\d+)/.exec(out)?.[1] ?? NaN);
      expect(port, err).toBeGreaterThan(0);
      const base = `http://127.0.0.1:${port}`;

      const response = await fetch(`${base}/?problems=failed`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-security-policy')).toMatch(
        /^default-src 'none'; style-src 'sha256-/,
      );
      expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect((await fetch(`${base}/`, { method: 'POST' })).status).toBe(405);

      const { page, problems } = await openPage(browser, `${base}/?problems=failed`);
      const rows = await page
        .locator('tr.row')
        .evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-pipeline')));
      expect(rows).toEqual(['transaction_request']);
      expect(await page.locator('#pager').textContent()).toContain('rows 1–1 of 1');
      await page.selectOption('select[name="problems"]', 'all');
      await Promise.all([page.waitForURL(/problems=all/), page.click('button[type="submit"]')]);
      expect(await page.locator('tr.row').count()).toBe(1);
      expect(problems).toEqual([]);
      await page.close();

      const ready = await fetch(`${base}/readyz`);
      expect([200, 503]).toContain(ready.status);
      expect(await ready.json()).toHaveProperty('status');
      const metrics = await (await fetch(`${base}/metrics`)).text();
      expect(metrics).toContain('process_resident_memory_bytes');
      expect(metrics).toContain('nodejs_eventloop_lag_seconds');
      expect(metrics).toContain('cybs_etl_windows{');
    } finally {
      daemon.kill('SIGTERM');
      await exited;
    }
  });
});
