/**
 * Issue 7: `cybs-etl schedule` in two processes against one database. Each cron fire is run by
 * exactly one of them (the PostgreSQL run coordinator); /healthz and /metrics answer; SIGTERM stops
 * both cleanly with exit code 0 and no window left running.
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

    // Let several fires pass (every 3 seconds).
    const deadline = Date.now() + 45_000;
    for (;;) {
      const fires = await client.query(
        `select count(*)::int as n from etl.schedule_fires where completed_at is not null`,
      );
      if (fires.rows[0].n >= 3 || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const metrics = await (await fetch(`http://127.0.0.1:${port2}/metrics`)).text();
    expect(metrics).toContain('cybs_etl_windows{');

    for (const d of daemons) d.child.kill('SIGTERM');
    const codes = await Promise.all(daemons.map((d) => d.exit));
    expect(codes).toEqual([0, 0]);
    for (const d of daemons) expect(d.stdout).toContain('stopped cleanly');

    const fires = (
      await client.query(`select fire_key, owner, completed_at from etl.schedule_fires order by fire_key`)
    ).rows;
    expect(fires.length).toBeGreaterThanOrEqual(3);
    // Every fire was claimed by one instance only (fire_key is the primary key) and ran as one run.
    const runs = (
      await client.query(`select id, status, trigger from etl.runs where command = 'schedule' order by id`)
    ).rows;
    const completed = fires.filter((f) => f.completed_at !== null).length;
    expect(runs.length).toBeGreaterThanOrEqual(completed);
    expect(runs.length).toBeLessThanOrEqual(fires.length);
    expect(new Set(fires.map((f) => f.fire_key)).size).toBe(fires.length);
    const running = await client.query(`select count(*)::int as n from etl.windows where status = 'running'`);
    expect(running.rows[0].n).toBe(0);
    const loaded = await client.query(
      `select count(*)::int as n from etl.windows where status in ('loaded', 'no_data')`,
    );
    expect(loaded.rows[0].n).toBeGreaterThan(0);
  });
});
