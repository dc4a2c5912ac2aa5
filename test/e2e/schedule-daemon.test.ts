/**
 * Issues 7 and 29: `cybs-etl schedule` in two processes against one database, both firing the same
 * pipeline at the same cron times. Each fire's windows are enqueued once (the window queue's
 * singleton keys collapse the two instances' plans) and loaded once; /healthz and /metrics answer;
 * SIGTERM stops both cleanly with exit code 0 and no window left running.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { netFundingsDaemonYaml } from '../helpers/e2e.js';
import { startSimulator } from '../../packages/simulator/src/server/start-simulator.js';
import type { SimulatorHandle } from '../../packages/simulator/src/server/start-simulator.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';

interface Daemon {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  port: Promise<number>;
  exit: Promise<number | null>;
}

function startDaemon(config: string, env: Record<string, string>): Daemon {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'pipelines/cli.ts', '--config', config, 'schedule', '--no-catch-up', '--port', '0'],
    {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const daemon: Daemon = {
    child,
    stdout: '',
    stderr: '',
    port: Promise.resolve(0),
    exit: Promise.resolve(null),
  };
  daemon.port = new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      daemon.stdout += chunk.toString();
      const m = /on port (\d+)/.exec(daemon.stdout);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', () => reject(new Error(`daemon exited early: ${daemon.stderr.slice(-2000)}`)));
  });
  daemon.port.catch(() => {});
  child.stderr!.on('data', (chunk: Buffer) => (daemon.stderr += chunk.toString()));
  daemon.exit = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  return daemon;
}

describe('cybs-etl schedule with two instances', () => {
  let sim: SimulatorHandle;
  let database: TestDatabase;
  let dir: string;
  let client: pg.Client;
  const daemons: Daemon[] = [];

  beforeAll(async () => {
    sim = await startSimulator({ organizations: 1, transactionsPerDay: 20, seed: 5 });
    database = await createTestDatabase('sched');
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
    dir = await mkdtemp(join(tmpdir(), 'cybs-sched-'));
  });
  afterAll(async () => {
    for (const d of daemons) d.child.kill('SIGKILL');
    await client?.end();
    await database?.drop();
    await sim?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('runs each fire once across instances and stops cleanly on SIGTERM', async () => {
    const config = join(dir, 'config.yaml');
    await writeFile(config, netFundingsDaemonYaml(sim.organizations, 3));
    const key = sim.portfolioCredentials;
    const env = {
      CYBS_BASE_URL: sim.baseUrl,
      CYBS_MERCHANT_ID: key.merchantId,
      CYBS_KEY_ID: key.keyId,
      CYBS_SHARED_SECRET: key.sharedSecret,
      CYBS_PORTFOLIO_ID: key.portfolioId,
      DATABASE_URL: database.url,
    };
    daemons.push(startDaemon(config, env));
    // Start the second instance once the first has migrated the database.
    const port1 = await daemons[0]!.port;
    daemons.push(startDaemon(config, env));
    const port2 = await daemons[1]!.port;

    const health = await (await fetch(`http://127.0.0.1:${port1}/healthz`)).json();
    expect(health).toMatchObject({
      status: 'ok',
      tasks: [{ pipeline: 'net_fundings', status: expect.any(String) }],
    });

    // Let several fires pass (every 3 seconds), some of them fired by both instances.
    const slot = `floor(extract(epoch from started_at) / 3)`;
    const deadline = Date.now() + 45_000;
    for (;;) {
      const shared = await client.query(
        `select count(*)::int as n from (select ${slot} from etl.runs
          where command = 'schedule' and status = 'succeeded' group by 1 having count(distinct pid) = 2) s`,
      );
      if (shared.rows[0].n >= 3 || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const metrics = await (await fetch(`http://127.0.0.1:${port2}/metrics`)).text();
    expect(metrics).toContain('cybs_etl_windows{');

    for (const d of daemons) d.child.kill('SIGTERM');
    const codes = await Promise.all(daemons.map((d) => d.exit));
    expect(codes).toEqual([0, 0]);
    for (const d of daemons) expect(d.stdout).toContain('stopped cleanly');

    // Fires both instances planned: one cron time (3-second slot) with a pass of each.
    const fires = (
      await client.query(
        `select ${slot} as slot, count(distinct pid)::int as instances from etl.runs
          where command = 'schedule' group by 1 order by 1`,
      )
    ).rows;
    expect(fires.filter((f) => f.instances === 2).length).toBeGreaterThanOrEqual(3);
    // Every window: one job per fire at most (the two instances' plans made one), never two of a
    // window at once, and as many claims of the window (loads) as it had jobs.
    const windows = (
      await client.query(
        `select w.window_key, w.attempts, w.status,
                count(j.id)::int as jobs,
                count(distinct ${slot.replace('started_at', 'j.created_on')})::int as job_slots,
                bool_or(exists (select 1 from pgboss.job k
                                 where k.name = j.name and k.singleton_key = j.singleton_key and k.id <> j.id
                                   and k.created_on < coalesce(j.completed_on, now())
                                   and j.created_on < coalesce(k.completed_on, now()))) as overlapping
           from etl.windows w
           join pgboss.job j on j.name = 'cybs_etl_windows'
                            and j.singleton_key = w.pipeline || '|' || w.organization_id || '|' || w.window_key
          group by 1, 2, 3 order by 1`,
      )
    ).rows;
    expect(windows.length).toBeGreaterThan(0);
    for (const w of windows) {
      expect(w, JSON.stringify(w)).toMatchObject({ overlapping: false, attempts: w.jobs });
      expect(w.jobs).toBe(w.job_slots);
      expect(w.jobs).toBeLessThanOrEqual(fires.length);
    }
    const jobStates = await client.query(
      `select state::text, count(*)::int as n from pgboss.job where name = 'cybs_etl_windows' group by 1`,
    );
    expect(jobStates.rows.map((r) => r.state)).toEqual(['completed']);
    const running = await client.query(`select count(*)::int as n from etl.windows where status = 'running'`);
    expect(running.rows[0].n).toBe(0);
    const loaded = await client.query(
      `select count(*)::int as n from etl.windows where status in ('loaded', 'no_data')`,
    );
    expect(loaded.rows[0].n).toBeGreaterThan(0);
  });
});
