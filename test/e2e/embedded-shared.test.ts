/**
 * Issue 27 #1: the embedded warehouse shared by several processes. With PGlite, an `import` beside
 * a running `schedule` printed "3 rows loaded" and its rows were gone afterwards, and three
 * concurrent imports kept 0 of 9 rows. The embedded warehouse is now a PostgreSQL server that the
 * first process starts and the last one stops: every row any process reported is there, and no
 * server is left running once they have all exited.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { netFundingsDaemonYaml } from '../helpers/e2e.js';
import { startSimulator } from '../../packages/simulator/src/server/start-simulator.js';
import type { SimulatorHandle } from '../../packages/simulator/src/server/start-simulator.js';
import { warehouseTempDir } from '../helpers/temp-dir.js';

const SAMPLE = join(
  process.cwd(),
  '..',
  'shared',
  'samples',
  'cybersource',
  'legacy-docs-PaymentBatchDetailReport.csv',
);

interface Proc {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  exit: Promise<number | null>;
}

function cybsEtl(args: string[], env: Record<string, string> = {}): Proc {
  const child = spawn(process.execPath, ['--import', 'tsx', 'pipelines/cli.ts', ...args], {
    env: { ...process.env, DATABASE_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proc: Proc = { child, stdout: '', stderr: '', exit: Promise.resolve(null) };
  child.stdout!.on('data', (chunk: Buffer) => (proc.stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (proc.stderr += chunk.toString()));
  proc.exit = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  return proc;
}

/** Rows the import said it loaded. */
function reported(proc: Proc): number {
  const m = /(\d+) rows loaded/.exec(proc.stdout);
  if (!m) throw new Error(`no "rows loaded" in: ${proc.stdout}${proc.stderr}`);
  return Number(m[1]);
}

/** Whether a server still runs on the data directory (its postmaster.pid names a live process). */
async function serverRunning(dataDir: string): Promise<boolean> {
  const text = await readFile(join(dataDir, 'postmaster.pid'), 'utf8').catch(() => undefined);
  const pid = Number(text?.split('\n')[0]);
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A query on the embedded warehouse through the CLI (which starts the server and stops it again). */
async function count(config: string, where: string): Promise<number> {
  const proc = cybsEtl([
    '--config',
    config,
    'sql',
    `select count(*) as n from cybs.payment_batch_detail where ${where}`,
  ]);
  expect(await proc.exit, proc.stderr).toBe(0);
  return Number(/\n\s*(\d+)\s*\n/.exec(proc.stdout)?.[1]);
}

describe('the embedded warehouse shared by several processes', () => {
  let dir: string;
  let config: string;
  let dataDir: string;
  let sim: SimulatorHandle;
  const procs: Proc[] = [];

  beforeAll(async () => {
    dir = await warehouseTempDir('cybs-shared-');
    dataDir = join(dir, 'warehouse');
    config = join(dir, 'config.yaml');
    sim = await startSimulator({ organizations: 1, transactionsPerDay: 20, seed: 11 });
    await writeFile(config, netFundingsDaemonYaml(sim.organizations, 2, dataDir));
  });
  afterAll(async () => {
    for (const p of procs) p.child.kill('SIGKILL');
    await sim?.close();
    // A server a failed test left behind is stopped before its directory goes.
    const pid = Number(
      (await readFile(join(dataDir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0],
    );
    if (pid) {
      try {
        process.kill(pid, 'SIGQUIT');
      } catch {
        // Not running.
      }
    }
    await rm(dir, { recursive: true, force: true });
  });

  const importAs = (organization: string) =>
    cybsEtl([
      '--config',
      config,
      'import',
      SAMPLE,
      '--report-definition',
      'PaymentBatchDetailClass',
      '--organization-id',
      organization,
    ]);

  it('keeps every row of three imports run at once on a new warehouse, and stops the server after them', async () => {
    const imports = ['acme_1', 'acme_2', 'acme_3'].map(importAs);
    procs.push(...imports);
    const codes = await Promise.all(imports.map((p) => p.exit));
    expect(codes, imports.map((p) => p.stderr).join('\n')).toEqual([0, 0, 0]);
    const loaded = imports.map(reported);
    expect(loaded.every((n) => n > 0)).toBe(true);
    expect(await serverRunning(dataDir)).toBe(false);
    for (const [i, n] of loaded.entries())
      expect(await count(config, `_organization_id = 'acme_${i + 1}'`)).toBe(n);
  }, 120_000);

  it('keeps the rows of an import run beside a schedule daemon, and the daemon goes on loading', async () => {
    const key = sim.portfolioCredentials;
    const daemon = cybsEtl(['--config', config, 'schedule', '--no-catch-up', '--port', '0'], {
      CYBS_BASE_URL: sim.baseUrl,
      CYBS_MERCHANT_ID: key.merchantId,
      CYBS_KEY_ID: key.keyId,
      CYBS_SHARED_SECRET: key.sharedSecret,
      CYBS_PORTFOLIO_ID: key.portfolioId,
    });
    procs.push(daemon);
    await expect.poll(() => /on port \d+/.test(daemon.stdout), { timeout: 60_000, interval: 100 }).toBe(true);
    const beside = importAs('acme_beside');
    procs.push(beside);
    expect(await beside.exit, beside.stderr).toBe(0);
    const n = reported(beside);
    // The daemon keeps the server up after the import has gone.
    expect(await serverRunning(dataDir)).toBe(true);
    // And loads its fires meanwhile (net_fundings every 2 s).
    const client = new pg.Client({ host: dataDir, port: 5432, user: 'postgres', database: 'postgres' });
    await client.connect();
    try {
      await expect
        .poll(
          async () =>
            Number(
              (
                await client.query<{ n: string }>(
                  `select count(*) as n from etl.windows where pipeline = 'net_fundings' and status in ('loaded', 'no_data')`,
                )
              ).rows[0]!.n,
            ),
          { timeout: 60_000, interval: 250 },
        )
        .toBeGreaterThan(0);
    } finally {
      await client.end();
    }
    daemon.child.kill('SIGTERM');
    expect(await daemon.exit, daemon.stderr).toBe(0);
    expect(await serverRunning(dataDir)).toBe(false);
    expect(await count(config, `_organization_id = 'acme_beside'`)).toBe(n);
  }, 180_000);
});
