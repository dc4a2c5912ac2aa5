/**
 * Issue 27, finding 7: `/healthz` is liveness (the daemon serves), `/readyz` is readiness: the
 * warehouse answers and the last pass of every scheduled pipeline neither failed nor went stale.
 * A `cybs-etl schedule` process against PostgreSQL and the simulator: ready after a good pass, not
 * ready (503) once a pass failed (the service answering 500), ready again after the next good pass,
 * not ready while its database refuses connections, ready again once it is back; /healthz stays
 * 200 throughout.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addDays } from '../../src/time/time-zones.js';
import { startSimulator } from '../../packages/simulator/src/server/start-simulator.js';
import type { SimulatorHandle } from '../../packages/simulator/src/server/start-simulator.js';
import { spawnCli } from '../helpers/cli-process.js';
import type { CliProcess } from '../helpers/cli-process.js';
import { ADMIN_URL, createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { e2eConfigYaml, onlyPipelines, simulatorEnv } from '../helpers/e2e.js';

interface Readyz {
  status: string;
  warehouse?: string;
  pipelines?: { pipeline: string; lastPass: { runId: number; status: string } | null; problem?: string }[];
}

describe('cybs-etl schedule: /readyz', () => {
  let sim: SimulatorHandle;
  let database: TestDatabase;
  let dir: string;
  let daemon: CliProcess | undefined;
  let port: number;

  const get = async (path: string): Promise<{ status: number; body: Readyz }> => {
    const r = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: r.status, body: (await r.json()) as Readyz };
  };

  /** Ask /readyz until `until` holds for its answer (bounded: the daemon fires every 2 s). */
  const readyzUntil = async (
    until: (r: { status: number; body: Readyz }) => boolean,
  ): Promise<{ status: number; body: Readyz }> => {
    const deadline = Date.now() + 90_000;
    for (;;) {
      const r = await get('/readyz');
      if (until(r)) return r;
      if (Date.now() > deadline) throw new Error(`/readyz never matched; last: ${JSON.stringify(r.body)}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
  const lastPass = (r: { body: Readyz }) => r.body.pipelines?.[0]?.lastPass ?? null;

  const admin = async (statement: string) => {
    const c = new pg.Client({ connectionString: ADMIN_URL });
    await c.connect();
    try {
      await c.query(statement);
    } finally {
      await c.end();
    }
  };

  beforeAll(async () => {
    sim = await startSimulator({ organizations: 1, transactionsPerDay: 10, seed: 27 });
    database = await createTestDatabase('readyz');
    dir = await mkdtemp(join(tmpdir(), 'cybs-readyz-'));
  });
  afterAll(async () => {
    daemon?.child.kill('SIGKILL');
    await admin(`alter database "${database.name}" with allow_connections true`).catch(() => {});
    await database?.drop();
    await sim?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('follows the warehouse and the last pass, while /healthz stays 200', async () => {
    const config = join(dir, 'config.yaml');
    await writeFile(
      config,
      e2eConfigYaml(
        sim.organizations,
        [
          `  startDate: "${addDays(new Date().toISOString().slice(0, 10), -2)}"`,
          'schedule:',
          '  shutdownTimeoutMs: 5000',
          stringify({
            pipelines: onlyPipelines({
              net_fundings: { schedule: { cron: '*/2 * * * * *', timezone: 'UTC' } },
            }),
          }),
        ].join('\n'),
      ).replace('attempts: 3', 'attempts: 1'),
    );
    daemon = spawnCli(
      ['--config', config, 'schedule', '--port', '0'],
      simulatorEnv(sim.portfolioCredentials, sim.baseUrl, database.url),
    );
    port = await new Promise<number>((resolve, reject) => {
      const check = () => {
        const m = /on port (\d+) of 127\.0\.0\.1/.exec(daemon!.stdout());
        if (m) resolve(Number(m[1]));
      };
      daemon!.child.stdout!.on('data', check);
      void daemon!.exited.then(() => reject(new Error(`schedule exited: ${daemon!.stderr().slice(-2000)}`)));
    });

    // A good pass: ready.
    const good = await readyzUntil((r) => lastPass(r)?.status === 'succeeded');
    expect(good.status).toBe(200);
    expect(good.body).toMatchObject({ status: 'ready', warehouse: 'ok' });

    // The service fails every net-fundings request: the next pass fails, and so does readiness.
    sim.setFaults('net-fundings:500');
    const failed = await readyzUntil((r) => lastPass(r)?.status === 'failed');
    expect(failed.status).toBe(503);
    expect(failed.body.status).toBe('not ready');
    expect(failed.body.pipelines![0]!.problem).toMatch(/^its last pass \(run \d+\) failed: /);
    expect((await get('/healthz')).status).toBe(200);

    // The service recovers: the next good pass makes the daemon ready again.
    sim.setFaults([]);
    const recovered = await readyzUntil((r) => lastPass(r)?.status === 'succeeded');
    expect(recovered.status).toBe(200);

    // The database refuses connections (and its sessions end): not ready, with the reason.
    await admin(`alter database "${database.name}" with allow_connections false`);
    await admin(`select pg_terminate_backend(pid) from pg_stat_activity where datname = '${database.name}'`);
    const down = await readyzUntil((r) => r.status === 503 && r.body.warehouse !== 'ok');
    expect(down.body.status).toBe('not ready');
    expect(down.body.warehouse).toMatch(/not currently accepting connections|terminat/i);
    expect((await get('/healthz')).status).toBe(200);

    // Back: ready again once a pass has succeeded on it.
    await admin(`alter database "${database.name}" with allow_connections true`);
    const back = await readyzUntil(
      (r) => r.status === 200 && (lastPass(r)?.runId ?? 0) > (lastPass(recovered)?.runId ?? 0),
    );
    expect(back.body).toMatchObject({ status: 'ready', warehouse: 'ok' });

    daemon.child.kill('SIGTERM');
    const { code } = await daemon.exited;
    expect(code, daemon.stderr().slice(-2000)).toBe(0);
  }, 240_000);
});
