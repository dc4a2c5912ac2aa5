/**
 * Secrets scan of a whole end-to-end session: every command a user runs (backfill under faults
 * including 401s, run, status, status --json, pipelines, api, schedule with its /metrics,
 * /healthz and /readyz, a refused key, jwt-p12 with a P12 password), in child processes at debug level with
 * --verbose, then every row of every etl.* table. No shared secret (nor its decoded, URL- or
 * base64url-encoded forms), P12 password, JWT, HTTP signature or bearer token may appear anywhere.
 * (The crash campaign and the concurrency test scan their own processes' output the same way.)
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { E2E_NOW, createE2eWorld, e2eConfigYaml } from '../helpers/e2e.js';
import type { E2eWorld } from '../helpers/e2e.js';
import { spawnCli } from '../helpers/cli-process.js';
import { createTestP12 } from '../helpers/p12.js';
import { findSecrets, secretsOf } from '../helpers/secrets.js';

const P12_PASSWORD = 'p12-Pa55word-e2e-4417';

describe('secrets scan of an end-to-end session', () => {
  let world: E2eWorld;
  let config: string;
  let p12Path: string;
  const texts: { what: string; text: string }[] = [];

  beforeAll(async () => {
    const p12 = createTestP12({ alias: 'sim_merchant_1', password: P12_PASSWORD });
    world = await createE2eWorld({
      prefix: 'secrets',
      simulator: {
        organizations: 1,
        transactionsPerDay: 15,
        credentials: { p12: { data: p12.der, password: P12_PASSWORD } },
      },
    });
    p12Path = join(world.dir, 'key.p12');
    await writeFile(p12Path, p12.der);
    config = join(world.dir, 'secrets.yaml');
    await writeFile(config, e2eConfigYaml(world.sim.organizations).replace('level: warn', 'level: debug'));
  });
  afterAll(async () => {
    await world?.close();
  });

  const runChild = async (what: string, args: string[], env: Record<string, string> = world.env) => {
    const p = spawnCli(['--config', config, '--now', E2E_NOW, '--verbose', ...args], env);
    const exit = await p.exited;
    texts.push(
      { what: `${what} (stdout)`, text: p.stdout() },
      { what: `${what} (stderr)`, text: p.stderr() },
    );
    return { exit, stdout: p.stdout(), stderr: p.stderr() };
  };

  it(
    'finds no credential in any output, error, status, metrics or etl.* table',
    { timeout: 300_000 },
    async () => {
      world.sim.setFaults(
        'search:500x2,download:resetx1,download:truncatex1,purchase-refund-details:401x1,net-fundings:429=1x1',
      );
      const b1 = await runChild('backfill under faults', [
        'backfill',
        '--from',
        '2024-03-02',
        '--to',
        '2024-03-04',
      ]);
      expect(b1.exit.code).toBe(1); // the truncated download and the 401 fail their windows
      world.sim.setFaults([]);
      const b2 = await runChild('backfill after faults', [
        'backfill',
        '--from',
        '2024-03-02',
        '--to',
        '2024-03-04',
      ]);
      expect(b2.exit.code, b2.stdout + b2.stderr).toBe(0);
      await runChild('run', ['run']);
      const status = await runChild('status', ['status']);
      expect(status.exit.code).toBe(0);
      await runChild('status --json', ['status', '--json']);
      await runChild('pipelines', ['pipelines']);
      const api = await runChild('api', ['api', 'GET', '/reporting/v3/report-definitions']);
      expect(api.exit.code, api.stderr).toBe(0);

      // A key the service refuses: the error names the scheme and merchant, never the secret.
      const wrong = {
        ...world.env,
        CYBS_SHARED_SECRET: Buffer.from('not-the-right-secret-0123456789').toString('base64'),
      };
      const refused = await runChild(
        'refused key',
        ['backfill', '--from', '2024-03-05', '--to', '2024-03-05'],
        wrong,
      );
      expect(refused.exit.code).not.toBe(0);

      // jwt-p12 with a P12 password, as the merchant itself.
      const p12Env: Record<string, string> = {
        CYBS_BASE_URL: world.sim.baseUrl,
        CYBS_AUTH: 'jwt-p12',
        CYBS_MERCHANT_ID: 'sim_merchant_1',
        CYBS_P12_PATH: p12Path,
        CYBS_P12_PASSWORD: P12_PASSWORD,
        DATABASE_URL: world.env['DATABASE_URL']!,
      };
      const p12Run = await runChild(
        'jwt-p12 backfill',
        ['backfill', '--from', '2024-03-06', '--to', '2024-03-06'],
        p12Env,
      );
      expect(p12Run.exit.code, p12Run.stdout + p12Run.stderr).toBe(0);
      const badP12 = await runChild(
        'wrong P12 password',
        ['backfill', '--from', '2024-03-07', '--to', '2024-03-07'],
        {
          ...p12Env,
          CYBS_P12_PASSWORD: `${P12_PASSWORD}-wrong`,
        },
      );
      expect(badP12.exit.code).not.toBe(0);

      // The scheduler: /metrics, /healthz and /readyz while it runs its catch-up pass.
      const schedule = spawnCli(['--config', config, '--now', E2E_NOW, 'schedule', '--port', '0'], world.env);
      try {
        const until = Date.now() + 120_000;
        let port: string | undefined;
        while (!port && Date.now() < until) {
          port = /on port (\d+) /.exec(schedule.stdout())?.[1];
          if (!port) await new Promise((r) => setTimeout(r, 100));
        }
        expect(port, schedule.stderr()).toBeDefined();
        while ((schedule.stderr().match(/"msg":"pass finished"/g) ?? []).length < 9 && Date.now() < until) {
          await new Promise((r) => setTimeout(r, 100));
        }
        for (const path of ['/metrics', '/healthz', '/readyz']) {
          const res = await fetch(`http://127.0.0.1:${port}${path}`);
          texts.push({ what: `schedule ${path}`, text: await res.text() });
        }
      } finally {
        schedule.child.kill('SIGTERM');
        await schedule.exited;
        texts.push(
          { what: 'schedule (stdout)', text: schedule.stdout() },
          { what: 'schedule (stderr)', text: schedule.stderr() },
        );
      }

      // Every row of every etl.* table, as text.
      const tables = await world.db.query(
        `select table_name from information_schema.tables where table_schema = 'etl' order by 1`,
      );
      let rows = 0;
      for (const t of tables.rows as { table_name: string }[]) {
        const r = await world.db.query(`select t::text as row from etl."${t.table_name}" t`);
        rows += r.rows.length;
        texts.push({
          what: `etl.${t.table_name}`,
          text: r.rows.map((x: { row: string }) => x.row).join('\n'),
        });
      }

      const secrets = secretsOf(world, [P12_PASSWORD]);
      // The scanner itself finds what it looks for.
      expect(findSecrets(`x ${encodeURIComponent(secrets[0]!)} y`, secrets)).toHaveLength(1);
      expect(
        findSecrets(`Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.abcdefghijk`, []),
      ).not.toEqual([]);
      expect(findSecrets(`Signature: keyid="k", signature="${'A'.repeat(43)}="`, [])).toHaveLength(1);
      const findings = texts.flatMap((t) => findSecrets(t.text, secrets).map((f) => `${t.what}: ${f}`));
      expect(findings).toEqual([]);
      const total = texts.reduce((n, t) => n + t.text.length, 0);
      // The scan is not vacuous: the logs hold the requests and errors, the tables hold the windows.
      const all = texts.map((t) => t.text).join('\n');
      expect(all).toMatch(/API_UNAUTHORIZED|refused the credentials/);
      expect(all).toMatch(/"msg":"API request"/);
      expect(rows).toBeGreaterThan(10);
      console.log(
        `secrets scan: ${texts.length} outputs/tables, ${(total / 1024).toFixed(0)} KiB, ${rows} etl rows, ${secrets.length} secrets + JWT/signature/bearer patterns: 0 found`,
      );
    },
  );
});
