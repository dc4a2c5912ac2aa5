/**
 * Issue 30, finding 5: alerts. A real local HTTP listener stands in for a Slack webhook whose
 * secret comes from the environment (`${HOOK_TOKEN}`); it receives a failed window once (after a
 * delivery it answered 503 was retried), told by the backfill that failed it, then its resolution,
 * told by the backfill that loads it, and a test alert; the secret never reaches the logs.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnCli } from '../helpers/cli-process.js';
import { createE2eWorld, E2E_NOW, onlyPipelines } from '../helpers/e2e.js';
import type { E2eWorld } from '../helpers/e2e.js';

interface Received {
  path: string;
  body: { text: string; event: string; status: string; subject: string };
}

const TOKEN = 'T000-B000-s3cretHookToken';

describe('alerts to a webhook', { timeout: 180_000 }, () => {
  let world: E2eWorld;
  let server: Server;
  const received: Received[] = [];
  let requests = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        // The first delivery fails: the alert is retried.
        if (requests++ === 0) {
          res.writeHead(503).end();
          return;
        }
        received.push({ path: req.url ?? '', body: JSON.parse(body) as Received['body'] });
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    world = await createE2eWorld({
      prefix: 'alerts',
      configExtra: stringify({
        pipelines: onlyPipelines({ transaction_request: {} }),
        alerts: {
          retryDelayMs: 10,
          webhooks: [
            { url: `http://127.0.0.1:${port}/hook/\${HOOK_TOKEN}`, events: ['window_failed', 'rejects'] },
          ],
        },
      }),
    });
    world.env.HOOK_TOKEN = TOKEN;
  });
  afterAll(async () => {
    await world?.close();
    await new Promise((r) => server?.close(r));
  });

  it('tells a failed window once, and once its resolution, at the end of the backfills that fail and load it', async () => {
    expect((await world.run(['backfill', '--from', '2024-03-01', '--to', '2024-03-02'])).code).toBe(0);
    // The schema changes and the staleness of that first load go to no webhook (this one takes failures and rejects).
    expect(requests).toBe(0);
    world.sim.setFaults('download:500');
    // In a child process, so that its log (stderr) is read too.
    const day = ['--from', '2024-03-03', '--to', '2024-03-03'];
    const child = spawnCli(['--config', world.configPath, '--now', E2E_NOW, 'backfill', ...day], world.env);
    const exit = await child.exited;
    world.sim.setFaults([]);
    const first = { code: exit.code, stdout: child.stdout(), stderr: child.stderr() };
    expect(first.code, first.stderr).toBe(1);
    // The backfill told the webhook itself, as run and schedule do: once, after a 503 it retried.
    expect(requests).toBe(2);
    expect(received).toHaveLength(1);
    const org = world.sim.organizations[0]!;
    expect(received[0]).toMatchObject({
      path: `/hook/${TOKEN}`,
      body: { event: 'window_failed', status: 'open', subject: `transaction_request ${org} 2024-03-03` },
    });
    expect(received[0]!.body.text).toMatch(
      /^:red_circle: cybs-etl window failed: transaction_request .* 2024-03-03 \(attempts \d+\): API_HTTP_STATUS/,
    );
    // The retry was logged by the webhook's URL as written, never with its secret.
    expect(first.stderr).toContain('alert not delivered; retrying');
    expect(first.stderr).toContain('/hook/${HOOK_TOKEN}');
    expect(first.stderr).not.toContain(TOKEN);

    // Still failed: nothing new is told.
    const again = await world.run(['alerts', 'check']);
    expect(again.stdout).toContain('0 incident(s) opened, 0 resolved, 0 message(s) delivered');
    expect(received).toHaveLength(1);

    // Loaded by a backfill: the resolution, once, told at its end.
    expect((await world.run(['backfill', ...day])).code).toBe(0);
    expect(received).toHaveLength(2);
    expect(received[1]!.body).toMatchObject({
      event: 'window_failed',
      status: 'resolved',
      subject: `transaction_request ${org} 2024-03-03`,
    });
    expect(received[1]!.body.text).toMatch(/^:large_green_circle: cybs-etl resolved, window failed: /);
    const resolved = await world.run(['alerts', 'check']);
    expect(resolved.stdout).toContain('0 incident(s) opened, 0 resolved, 0 message(s) delivered');
    await world.run(['alerts', 'check']);
    expect(received).toHaveLength(2);
    // The schema changes of the first load went to no webhook: this one takes failures and rejects only.
    expect(received.some((r) => r.body.event === 'schema_change')).toBe(false);
    const incidents = await world.db.query(
      `select event, resolved_at is not null as resolved, notified_open_at is not null as told_open,
              notified_resolved_at is not null as told_resolved from etl.alert_incidents where event = 'window_failed'`,
    );
    expect(incidents.rows).toEqual([
      { event: 'window_failed', resolved: true, told_open: true, told_resolved: true },
    ]);
  });

  it('alerts test sends one test alert; a missing variable is named', async () => {
    const r = await world.run(['alerts', 'test']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('/hook/${HOOK_TOKEN}: test alert delivered');
    expect(r.stdout + r.stderr).not.toContain(TOKEN);
    expect(received.at(-1)!.body).toMatchObject({ event: 'test', status: 'test' });
    expect(received.at(-1)!.body.text).toContain('cybs-etl test alert');

    delete world.env.HOOK_TOKEN;
    const missing = await world.run(['alerts', 'test']);
    world.env.HOOK_TOKEN = TOKEN;
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('alerts.webhooks[0].url needs the environment variable HOOK_TOKEN');
  });
});
