/**
 * End-to-end plumbing shared by test/e2e: a simulator on a fixed simulated clock, a fresh database,
 * a small config file (short timeouts and retry delays), the CYBS_* environment that points the CLI
 * at the simulator, and a pg client for checks.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { stringify } from 'yaml';
import { PIPELINES } from '../../pipelines/index.js';
import { addDays } from '../../src/time/time-zones.js';
import { startSimulator } from '../../packages/simulator/src/server/start-simulator.js';
import type {
  SimulatorHandle,
  SimulatorOptions,
} from '../../packages/simulator/src/server/start-simulator.js';
import { cli } from './cli.js';
import type { CliResult } from './cli.js';
import { createTestDatabase } from './db.js';
import type { TestDatabase } from './db.js';

/** Simulated now of the e2e tests: every day of March 1–24 2024 has its reports ready. */
export const E2E_NOW = '2024-03-25T12:00:00.000Z';
export const E2E_START_DATE = '2024-03-01';

/**
 * A config with short network timeouts and retry delays, so faults resolve in milliseconds.
 * `patient`: timeouts and a retry budget that a machine busy with the rest of the suite cannot
 * exhaust, for tests whose faults are injected (a dropped connection, a broken transfer) rather
 * than timed out; the in-process simulator shares the test's CPU.
 */
export function e2eConfigYaml(organizations: readonly string[], extra = '', patient = false): string {
  return [
    'log:',
    '  level: warn',
    'api:',
    '  connectTimeoutMs: 2000',
    `  headersTimeoutMs: ${patient ? 15_000 : 1000}`,
    `  bodyTimeoutMs: ${patient ? 15_000 : 2000}`,
    '  retry:',
    '    attempts: 3',
    '    minDelayMs: 5',
    '    maxDelayMs: 50',
    `    maxTotalMs: ${patient ? 120_000 : 10_000}`,
    'defaults:',
    `  organizations: [${organizations.join(', ')}]`,
    extra,
  ].join('\n');
}

/**
 * `pipelines:` settings that run only the pipelines given (with their settings) and turn every
 * other pipeline off, for a config (e.g. `stringify({ pipelines: onlyPipelines(…) })`).
 */
export function onlyPipelines(
  settings: Record<string, Record<string, unknown>>,
): Record<string, Record<string, unknown>> {
  return Object.fromEntries(PIPELINES.map((p) => [p.name, settings[p.name] ?? { enabled: false }]));
}

/** The environment of a CLI process pointed at the simulator through its portfolio (meta) key. */
export function simulatorEnv(
  key: SimulatorHandle['portfolioCredentials'],
  baseUrl: string,
  databaseUrl: string,
): Record<string, string> {
  return {
    CYBS_BASE_URL: baseUrl,
    CYBS_MERCHANT_ID: key.merchantId,
    CYBS_KEY_ID: key.keyId,
    CYBS_SHARED_SECRET: key.sharedSecret,
    CYBS_PORTFOLIO_ID: key.portfolioId,
    DATABASE_URL: databaseUrl,
  };
}

export interface E2eWorld {
  sim: SimulatorHandle;
  database: TestDatabase;
  db: pg.Client;
  dir: string;
  configPath: string;
  env: Record<string, string>;
  /** Run the CLI in-process with this world's config, env and --now. */
  run(args: string[]): Promise<CliResult>;
  close(): Promise<void>;
}

export async function createE2eWorld(options: {
  prefix: string;
  /** Simulator options over the e2e defaults, e.g. `subscriptions` instead of the default ones. */
  simulator?: SimulatorOptions;
  configExtra?: string;
  /** See e2eConfigYaml. */
  patient?: boolean;
}): Promise<E2eWorld> {
  const now = Date.parse(E2E_NOW);
  const sim = await startSimulator({
    seed: 5,
    organizations: 1,
    transactionsPerDay: 20,
    startDate: E2E_START_DATE,
    clock: () => now,
    ...options.simulator,
  });
  const database = await createTestDatabase(options.prefix);
  const dir = await mkdtemp(join(tmpdir(), `cybs-${options.prefix}-`));
  const configPath = join(dir, 'config.yaml');
  await writeFile(configPath, e2eConfigYaml(sim.organizations, options.configExtra ?? '', options.patient));
  const db = new pg.Client({ connectionString: database.url });
  await db.connect();
  const env = simulatorEnv(sim.portfolioCredentials, sim.baseUrl, database.url);
  return {
    sim,
    database,
    db,
    dir,
    configPath,
    env,
    run: (args) => cli(['--config', configPath, '--now', E2E_NOW, ...args], { env }),
    async close() {
      await db.end().catch(() => {});
      await database.drop();
      await sim.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The etl.windows row of a pipeline window (status, error). */
export async function windowState(
  db: pg.Client,
  pipeline: string,
  windowKey: string,
): Promise<{ status: string; code: string | null; message: string | null } | undefined> {
  const r = await db.query(
    `select status, last_error_code, last_error_message from etl.windows where pipeline = $1 and window_key = $2`,
    [pipeline, windowKey],
  );
  const row = r.rows[0] as
    { status: string; last_error_code: string | null; last_error_message: string | null } | undefined;
  return row ? { status: row.status, code: row.last_error_code, message: row.last_error_message } : undefined;
}

/**
 * A daemon's config that loads only net_fundings, fired every `everySeconds` seconds, for the
 * organizations from three days ago (`warehousePath`: the embedded warehouse's data directory).
 */
export function netFundingsDaemonYaml(
  organizations: readonly string[],
  everySeconds: number,
  warehousePath?: string,
): string {
  return [
    'log:',
    '  level: warn',
    ...(warehousePath ? ['warehouse:', `  path: ${warehousePath}`] : []),
    'defaults:',
    `  startDate: "${addDays(new Date().toISOString().slice(0, 10), -3)}"`,
    `  organizations: [${organizations.join(', ')}]`,
    'schedule:',
    '  shutdownTimeoutMs: 20000',
    stringify({
      pipelines: onlyPipelines({
        net_fundings: { schedule: { cron: `*/${everySeconds} * * * * *`, timezone: 'UTC' } },
      }),
    }),
  ].join('\n');
}
