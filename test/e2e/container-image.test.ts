/**
 * Issue 27, finding 7: the container hangs together. No Docker daemon runs on these machines, so
 * this test runs what the image runs, read from the Dockerfile and docker-compose.yml themselves
 * (a change to either that breaks the container breaks this test):
 *
 *  - /app is assembled from the final stage's COPY lines (the build stage's node_modules and dist:
 *    this checkout's node_modules and a fresh `npm run build`), owned by root and not writable by
 *    the process, as COPY leaves it; the stage's RUN lines (mkdir/chown/chmod only) are replayed;
 *  - the process runs as an unprivileged user (root here runs it as `nobody` through setpriv, as
 *    the image runs as `node`; without root it runs as the current user in an app directory made
 *    read-only with chmod), with the stage's ENV and WORKDIR, its ENTRYPOINT and compose's command,
 *    and compose's environment as a shell with CyberSource credentials exported would give it;
 *  - compose's `postgres` service is the local PostgreSQL (a database of this test), the
 *    CyberSource service the simulator, and compose's config.yaml mount a config.yaml written
 *    into /app (the repository's, with one pipeline enabled to keep the pass short);
 *  - `schedule` listens on every interface (its published port reaches it), its first pass
 *    succeeds, /readyz says ready, and the image's HEALTHCHECK and compose's healthcheck pass;
 *  - without DATABASE_URL the embedded warehouse is created in the writable data directory.
 *
 * The one deviation: `--port 0` (a free port) instead of 9464, which the health checks are told.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse, parseDocument } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../packages/simulator/src/server/start-simulator.js';
import type { SimulatorHandle } from '../../packages/simulator/src/server/start-simulator.js';
import { createTestDatabase } from '../helpers/db.js';
import { onlyPipelines } from '../helpers/e2e.js';
import type { TestDatabase } from '../helpers/db.js';
import { repoRoot } from '../helpers/simulator-process.js';

interface Instruction {
  keyword: string;
  args: string;
}

/** The Dockerfile's instructions by stage (comments dropped, continuation lines joined). */
function dockerfileStages(text: string): Instruction[][] {
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const stages: Instruction[][] = [];
  for (const line of lines) {
    const [, keyword, args] = /^(\S+)\s+(.*)$/.exec(line) ?? [];
    if (!keyword || args === undefined) throw new Error(`cannot read Dockerfile line: ${line}`);
    if (keyword.toUpperCase() === 'FROM') stages.push([]);
    stages.at(-1)!.push({ keyword: keyword.toUpperCase(), args });
  }
  return stages;
}

/** What the image runs, from the Dockerfile's final stage. */
interface Image {
  env: Record<string, string>;
  workdir: string;
  user: string;
  copies: { from?: string; sources: string[]; dest: string }[];
  runs: string[];
  entrypoint: string[];
  cmd: string[];
  healthcheck: string[];
}

function readImage(): Image {
  const stages = dockerfileStages(readFileSync(join(repoRoot, 'Dockerfile'), 'utf8'));
  const final = stages.at(-1)!;
  const image: Image = {
    env: {},
    workdir: '/',
    user: 'root',
    copies: [],
    runs: [],
    entrypoint: [],
    cmd: [],
    healthcheck: [],
  };
  for (const { keyword, args } of final) {
    if (keyword === 'ENV') {
      for (const m of args.matchAll(/(\w+)=("[^"]*"|\S+)/g)) image.env[m[1]!] = m[2]!.replace(/^"|"$/g, '');
    } else if (keyword === 'WORKDIR') image.workdir = args;
    else if (keyword === 'USER') image.user = args;
    else if (keyword === 'COPY') {
      const words = args.split(/\s+/);
      const from = words[0]!.startsWith('--from=') ? words.shift()!.slice('--from='.length) : undefined;
      const dest = words.pop()!;
      image.copies.push({ ...(from ? { from } : {}), sources: words, dest });
    } else if (keyword === 'RUN') image.runs.push(args);
    else if (keyword === 'ENTRYPOINT') image.entrypoint = JSON.parse(args) as string[];
    else if (keyword === 'CMD') image.cmd = JSON.parse(args) as string[];
    else if (keyword === 'HEALTHCHECK') {
      const m = /\bCMD\s+(\[.*\])\s*$/.exec(args);
      if (!m) throw new Error(`HEALTHCHECK without an exec-form CMD: ${args}`);
      image.healthcheck = JSON.parse(m[1]!) as string[];
    }
  }
  return image;
}

/** `${NAME}` and `${NAME:-default}` of compose, from a shell environment. */
function interpolate(value: string, shell: Record<string, string>): string {
  return value.replace(/\$\{(\w+)(?::-([^}]*))?\}/g, (_m, name: string, fallback?: string) =>
    shell[name] ? shell[name] : (fallback ?? ''),
  );
}

interface Service {
  command: string[];
  environment: Record<string, string>;
  volumes: string[];
  ports?: string[];
  healthcheck: { test: string[] };
}

function readCompose(): { services: Record<string, Service> } {
  return parse(readFileSync(join(repoRoot, 'docker-compose.yml'), 'utf8')) as {
    services: Record<string, Service>;
  };
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('the container image (Dockerfile and docker-compose.yml, run without Docker)', () => {
  const image = readImage();
  const compose = readCompose();
  const service = compose.services['cybs-etl']!;
  const asRoot = process.getuid?.() === 0;
  /** The unprivileged user the image's USER stands for: nobody (as root), else this user. */
  const uid = asRoot ? 65534 : process.getuid!();
  const gid = asRoot ? 65534 : process.getgid!();
  let root: string;
  let app: string;
  let home: string;
  let sim: SimulatorHandle;
  let database: TestDatabase;
  let shell: Record<string, string>;

  /** A path of the image (absolute, or relative to WORKDIR) in the assembled copy. */
  const inApp = (path: string) => {
    const absolute = path.startsWith('/') ? path : `${image.workdir}/${path}`;
    const rel = resolve('/', absolute).slice(image.workdir.length);
    if (!resolve('/', absolute).startsWith(image.workdir))
      throw new Error(`${path} is outside ${image.workdir}`);
    return join(app, rel);
  };

  /** The environment the container's process gets: PATH, HOME, the image's ENV, compose's environment. */
  const containerEnv = (overrides: Record<string, string | undefined> = {}): Record<string, string> => {
    const env: Record<string, string> = { PATH: process.env['PATH'] ?? '', HOME: home, ...image.env };
    for (const [name, value] of Object.entries(service.environment))
      env[name] = interpolate(String(value), shell);
    for (const [name, value] of Object.entries(overrides)) {
      if (value === undefined) delete env[name];
      else env[name] = value;
    }
    return env;
  };

  /** argv run as the image's user, in WORKDIR; `node` is this test's node. */
  const asUser = (argv: string[]): [string, string[]] => {
    const command = argv.map((a, i) => (i === 0 && a === 'node' ? process.execPath : a));
    return asRoot
      ? ['setpriv', [`--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--', ...command]]
      : [command[0]!, command.slice(1)];
  };

  const run = (argv: string[], env: Record<string, string>): Ran => {
    const [file, args] = asUser(argv);
    const r = spawnSync(file, args, { cwd: app, env, encoding: 'utf8', timeout: 120_000 });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };

  beforeAll(async () => {
    if (asRoot)
      expect(spawnSync('setpriv', ['--version']).status, 'setpriv (util-linux) is needed as root').toBe(0);
    root = await mkdtemp(join(tmpdir(), 'cybs-image-'));
    chmodSync(root, 0o755);
    app = join(root, 'app');
    home = join(root, 'home');
    mkdirSync(app);
    mkdirSync(home);
    if (asRoot) chownSync(home, uid, gid);

    // COPY: the build stage's outputs and the build context's files.
    for (const copy of image.copies) {
      const dest = inApp(copy.dest);
      if (copy.from !== undefined) {
        expect(copy.from, 'the only stage copied from is the build stage').toBe('build');
        expect(copy.sources).toHaveLength(1);
        const what = copy.sources[0]!;
        if (what === '/app/node_modules') symlinkSync(join(repoRoot, 'node_modules'), dest, 'dir');
        else if (what === '/app/dist') {
          const built = spawnSync(process.execPath, [join(repoRoot, 'scripts', 'build.mjs'), dest], {
            cwd: repoRoot,
            encoding: 'utf8',
          });
          expect(built.status, built.stderr).toBe(0);
        } else throw new Error(`this test does not know how to assemble ${what} of the build stage`);
        continue;
      }
      for (const source of copy.sources) {
        const target = copy.dest.endsWith('/') ? join(dest, source) : dest;
        cpSync(join(repoRoot, source), target, { recursive: true });
      }
    }
    // RUN: only what can be replayed here (directories and their owners and modes).
    for (const command of image.runs) {
      for (const step of command.split('&&').map((s) => s.trim())) {
        const [tool, ...rest] = step.split(/\s+/);
        const paths = rest.filter((a) => a.startsWith('/') || a.startsWith('.'));
        if (tool === 'mkdir') for (const p of paths) mkdirSync(inApp(p), { recursive: true });
        else if (tool === 'chown') {
          const owner = rest.find((a) => !a.startsWith('-') && !paths.includes(a))!;
          expect(owner.split(':')[0], `RUN chown to the image's user: ${step}`).toBe(image.user);
          for (const p of paths) {
            if (asRoot) chownSync(inApp(p), uid, gid);
            else chmodSync(inApp(p), 0o755);
          }
        } else if (tool === 'chmod') {
          const mode = rest.find((a) => /^[0-7]{3,4}$/.test(a));
          expect(mode, `RUN chmod with an octal mode: ${step}`).toBeDefined();
          for (const p of paths) chmodSync(inApp(p), Number.parseInt(mode!, 8));
        } else throw new Error(`this test does not know how to replay "RUN ${step}" of the final stage`);
      }
    }
    // Without root, the process owns the copy: take the write permission away (the data
    // directories the RUN lines gave the user keep theirs).
    if (!asRoot) {
      const writable = image.runs.flatMap((r) =>
        [...r.matchAll(/chown\s+\S+\s+(\S+)/g)].map((m) => inApp(m[1]!)),
      );
      spawnSync('chmod', ['-R', 'a-w', app]);
      for (const dir of writable) chmodSync(dir, 0o755);
    }

    sim = await startSimulator({ organizations: 1, transactionsPerDay: 10, seed: 7 });
    database = await createTestDatabase('image');
    const org = sim.organizations[0]!;
    const key = sim.merchantCredentials[org]!;
    // What the operator exports before `docker compose up`.
    shell = {
      CYBS_MERCHANT_ID: key.merchantId,
      CYBS_KEY_ID: key.keyId!,
      CYBS_SHARED_SECRET: key.sharedSecret!,
      CYBS_BASE_URL: sim.baseUrl,
    };
  }, 180_000);

  afterAll(async () => {
    await sim?.close();
    await database?.drop();
    if (root) {
      spawnSync('chmod', ['-R', 'u+w', root]);
      await rm(root, { recursive: true, force: true });
    }
  });

  it('keeps the build context small and free of secrets (.dockerignore)', () => {
    const ignored = readFileSync(join(repoRoot, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    for (const entry of ['node_modules', 'dist', 'data', '.git', '.env']) expect(ignored).toContain(entry);
    // Nothing the Dockerfile copies from the context is left out of it.
    const stages = dockerfileStages(readFileSync(join(repoRoot, 'Dockerfile'), 'utf8'));
    for (const copy of stages.flat().filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from'))) {
      for (const source of copy.args.split(/\s+/).slice(0, -1)) expect(ignored).not.toContain(source);
    }
  });

  it('compose: PostgreSQL off the host’s 5432, every CYBS_* variable passed through, the config mounted', () => {
    const ports = (compose.services['postgres']!.ports ?? []).map((p) => interpolate(String(p), {}));
    for (const p of ports) expect(p.split(':').at(-2), `postgres publishes ${p}`).not.toBe('5432');
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
    const env = readFileSync(join(repoRoot, 'src', 'config', 'env.ts'), 'utf8');
    const documented = new Set([
      ...[...readme.matchAll(/^\|.*$/gm)].flatMap((l) =>
        [...l[0].matchAll(/`(CYBS_[A-Z0-9_]+)`/g)].map((m) => m[1]!),
      ),
      ...[...env.matchAll(/'(CYBS_[A-Z0-9_]+)'/g)].map((m) => m[1]!),
    ]);
    expect(documented.size).toBeGreaterThan(8);
    for (const name of documented) expect(Object.keys(service.environment), name).toContain(name);
    expect(service.volumes).toContain(`./config.yaml:${image.workdir}/config.yaml:ro`);
    expect(service.environment['DATABASE_URL']).toMatch(/^postgres:\/\/[^@]+@postgres:5432\//);
  });

  it('runs `schedule` as the image does: on every interface, a good pass, ready, healthy; stops cleanly', async () => {
    // compose mounts ./config.yaml over the image's: the repository's, with one quick pipeline.
    const config = parseDocument(readFileSync(join(repoRoot, 'config.yaml'), 'utf8'));
    config.set('pipelines', onlyPipelines({ net_fundings: { enabled: true } }));
    const configFile = inApp('config.yaml');
    chmodSync(app, 0o755);
    chmodSync(configFile, 0o644);
    writeFileSync(configFile, config.toString());
    if (!asRoot) {
      chmodSync(configFile, 0o444);
      chmodSync(app, 0o555);
    }

    // compose's postgres service: the local PostgreSQL.
    const env = containerEnv({ DATABASE_URL: database.url });
    const [file, args] = asUser([...image.entrypoint, ...service.command, '--port', '0']);
    const child = spawn(file, args, { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      const [port, host] = await new Promise<[number, string]>((resolvePort, reject) => {
        child.stdout.on('data', () => {
          const m = /on port (\d+) of (\S+)\./.exec(stdout);
          if (m) resolvePort([Number(m[1]), m[2]!]);
        });
        void exited.then((code) => reject(new Error(`schedule exited with ${code}: ${stderr.slice(-3000)}`)));
      });
      expect(host, 'the daemon listens on every interface').toBe('0.0.0.0');

      // Ready once the catch-up pass has loaded.
      const deadline = Date.now() + 120_000;
      let readyz: {
        status: number;
        body: { status: string; pipelines: { lastPass: { status: string } | null }[] };
      };
      for (;;) {
        const r = await fetch(`http://127.0.0.1:${port}/readyz`);
        readyz = { status: r.status, body: (await r.json()) as typeof readyz.body };
        if (readyz.body.pipelines?.[0]?.lastPass?.status === 'succeeded' || Date.now() > deadline) break;
        await new Promise((r2) => setTimeout(r2, 250));
      }
      expect(readyz.body.pipelines[0]!.lastPass?.status, stderr.slice(-3000)).toBe('succeeded');
      expect(readyz.status).toBe(200);
      expect(readyz.body.status).toBe('ready');

      // A published port reaches the container's own interface, not its loopback.
      const outside = Object.values(networkInterfaces())
        .flat()
        .find((a) => a && !a.internal && a.family === 'IPv4');
      if (outside) expect((await fetch(`http://${outside.address}:${port}/healthz`)).status).toBe(200);

      // The image's HEALTHCHECK and compose's healthcheck, as the image's user, told the port.
      const told = (argv: string[]) => argv.map((a) => a.replace(':9464/', `:${port}/`));
      expect(image.healthcheck.join(' ')).toContain(':9464/healthz');
      const health = run(told(image.healthcheck), env);
      expect(health.code, health.stderr).toBe(0);
      const composeTest = service.healthcheck.test;
      expect(composeTest[0]).toBe('CMD');
      expect(composeTest.join(' ')).toContain(':9464/readyz');
      const ready = run(told(composeTest.slice(1)), env);
      expect(ready.code, ready.stderr).toBe(0);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, stderr.slice(-3000)).toBe(0);
    expect(stdout).toContain('stopped cleanly');
    const errors = stderr.split('\n').filter((l) => /"level":"(error|fatal)"/.test(l));
    expect(errors).toEqual([]);
  }, 240_000);

  it('without DATABASE_URL: the embedded warehouse in the writable data directory', () => {
    const env = containerEnv({ DATABASE_URL: undefined });
    const migrate = run([...image.entrypoint, 'migrate'], env);
    expect(migrate.code, migrate.stderr).toBe(0);
    expect(existsSync(inApp('data/warehouse'))).toBe(true);
    const status = run([...image.entrypoint, 'status'], env);
    expect(status.code, status.stderr).toBe(0);
    // The process could not have written anywhere else in /app.
    const probe = run(
      ['node', '-e', `require('node:fs').writeFileSync(${JSON.stringify(inApp('probe'))}, '')`],
      env,
    );
    expect(probe.code).not.toBe(0);
    expect(probe.stderr).toMatch(/EACCES|EPERM|EROFS/);
  }, 180_000);
});
