/**
 * `npm run bench`: cybs-etl against PostgreSQL's own `psql \copy`, in one run, on the local
 * PostgreSQL (127.0.0.1:5432, user postgres, trust). How to run it: test/bench/README.md; the
 * figures and what they led to: docs/performance.md.
 *
 * Environment: BENCH_SCALE (default 1; 0.05 for a quick run) scales every size; BENCH_REPS
 * (default 3) repetitions per case (the median is reported); BENCH_CASES (comma list) runs a subset
 * (ref,csv,xml,prd,backfill,naive,embedded,workers); TEST_PG_ADMIN_URL as for the tests.
 *
 * Each case runs in its own process (the CLI as shipped: `<the environment and V8 flags of
 * src/runtime-flags.ts, as in the bin's shebang> node dist/cli.mjs`, the bundle of scripts/build.mjs) under
 * /usr/bin/time, whose maximum resident set size is the peak RSS reported. The simulator runs in
 * another process, so its memory is not counted. The `embedded` case runs the README's first
 * command (`npm start`: no credentials, the in-process simulator, the embedded warehouse) and
 * `sql`/`status` on what it loaded; the embedded PostgreSQL server is a process of its own, whose
 * peak memory (the sum of its processes' proportional set sizes, sampled) is reported beside.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmod, copyFile, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { parse } from 'csv-parse/sync';
import { resolveHeader } from '../../src/catalog/index.js';
import { compileCli } from '../helpers/compiled-cli.js';
import { sampleServerPeak } from '../helpers/memory.js';
import { NODE_RUNTIME_ENV, NODE_RUNTIME_FLAGS } from '../../src/runtime-flags.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const ADMIN_URL = process.env['TEST_PG_ADMIN_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const SCALE = Number(process.env['BENCH_SCALE'] ?? '1');
const REPS = Math.max(1, Math.trunc(Number(process.env['BENCH_REPS'] ?? '3')));
const CASES = new Set(
  (process.env['BENCH_CASES'] ?? 'ref,csv,xml,prd,backfill,naive,embedded,workers')
    .split(',')
    .map((s) => s.trim()),
);
const size = (n: number, min: number): number => Math.max(min, Math.round(n * SCALE));
const CSV_ROWS = size(1_000_000, 2000);
/** Purchase and Refund Detail: the simulator has ≈ 0.78 records a day per transaction. */
const PRD_RECORDS = size(200_000, 2000);
const PRD_TX_PER_DAY = Math.round(PRD_RECORDS / 0.7796);
const BACKFILL_DAYS = 30;
const BACKFILL_TX_PER_DAY = size(20_000, 200);
const NAIVE_ROWS = size(20_000, 1000);
/** The scale case: a payment partner's organizations, one day, 20 transactions a day each. */
const WORKER_ORGANIZATIONS = size(2000, 20);
const WORKER_PROCESSES = [1, 2, 4];

const DAY_MS = 86_400_000;
const isoDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
const DAY = isoDay(today - 5 * DAY_MS);
/** The window after DAY: a nightly load into tables that hold a day already. */
const NEXT_DAY = isoDay(today - 4 * DAY_MS);
/** The daily report of the window DAY (the subscription's day ends in its time zone, on the next UTC date). */
const REPORT_DATE = isoDay(today - 4 * DAY_MS);
const START = isoDay(today - 45 * DAY_MS);
const BACKFILL_FROM = isoDay(today - (4 + BACKFILL_DAYS) * DAY_MS);

const log = (line: string): void => void process.stderr.write(`[bench] ${line}\n`);

interface Measured {
  seconds: number;
  rssMB: number;
  stdout: string;
  /** CPU the command used (user + system, its own and its waited-for children's). */
  cpuSeconds: number;
  /**
   * CPU PostgreSQL's processes used meanwhile, read from the server's postmaster (its reaped
   * children: the command's backends, and any parallel or autovacuum worker that ended); undefined
   * where the server is not the bench's local one.
   */
  pgCpuSeconds: number | undefined;
}

/**
 * Run a command under /usr/bin/time; its wall time, maximum RSS and CPU, and PostgreSQL's CPU
 * meanwhile (`postgres`: false where the command runs a server of its own). A CHECKPOINT first, so
 * that no run pays for writing out the buffers an earlier one dirtied (a checkpoint falling inside
 * one run but not another makes runs of the same command differ widely).
 *
 * On a shared machine the wall time of a load moves with what else runs, and a load that needs
 * both cores (the loader beside PostgreSQL's backend) loses more of it than `psql \copy`, which
 * needs one: the CPU figures say how much work each path did. They move with the machine's phase
 * too (its other work slows each core), so they are compared within one run as well.
 */
async function measure(
  cmd: string,
  args: string[],
  env: Record<string, string> = {},
  cwd = root,
  postgres = true,
): Promise<Measured> {
  await admin('checkpoint');
  const pgBefore = postgres ? await postgresCpu() : undefined;
  const started = performance.now();
  const child = spawn('/usr/bin/time', ['-f', 'BENCH_MAXRSS_KB=%M BENCH_CPU_S=%U+%S', cmd, ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${code}:\n${out}\n${err}`);
  const m = /BENCH_MAXRSS_KB=(\d+)/.exec(err);
  const cpu = /BENCH_CPU_S=([\d.]+)\+([\d.]+)/.exec(err);
  let pgCpuSeconds: number | undefined;
  if (pgBefore !== undefined) {
    // The command's backends end as it disconnects; the postmaster counts them once it reaps them.
    await new Promise((r) => setTimeout(r, 300));
    const pgAfter = await postgresCpu();
    if (pgAfter !== undefined) pgCpuSeconds = pgAfter - pgBefore;
  }
  return {
    seconds,
    rssMB: m ? Number(m[1]) / 1024 : NaN,
    stdout: out,
    cpuSeconds: cpu ? Number(cpu[1]) + Number(cpu[2]) : NaN,
    pgCpuSeconds,
  };
}

/** The local server's postmaster (the parent of an admin backend); undefined when not on this machine. */
let postmasterPid: Promise<number | undefined> | undefined;
const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK']).stdout?.toString().trim()) || 100;

/**
 * CPU seconds of the postmaster's ended children so far (user + system, /proc/<pid>/stat's cutime
 * and cstime); undefined when the server is not a process of this machine.
 */
async function postgresCpu(): Promise<number | undefined> {
  postmasterPid ??= (async () => {
    const c = new pg.Client({ connectionString: ADMIN_URL });
    await c.connect();
    try {
      const pid = Number((await c.query('select pg_backend_pid() as pid')).rows[0].pid);
      const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
      const ppid = /^PPid:\s+(\d+)/m.exec(status);
      return ppid ? Number(ppid[1]) : undefined;
    } finally {
      await c.end();
    }
  })();
  const pid = await postmasterPid;
  if (pid === undefined) return undefined;
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (stat === undefined) return undefined;
  // Fields after the command's closing parenthesis; cutime and cstime are the 16th and 17th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS;
}

interface Sim {
  env: Record<string, string>;
  stop(): Promise<void>;
}

async function startSim(options: Record<string, unknown>): Promise<Sim> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(root, 'test/bench/sim.ts'), JSON.stringify(options)],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('Press Ctrl+C')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`simulator exited with ${code}: ${out}`)));
  });
  const env: Record<string, string> = { CYBS_AUTH: 'http-signature' };
  for (const m of out.matchAll(/([A-Z_]+)=(\S+)/g)) env[m[1]!] = m[2]!;
  return {
    env,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** The Transaction Request report of REPORT_DATE, downloaded from `sim` into `file` (also renders it there). */
function downloadReport(sim: Sim, format: 'csv' | 'xml', file: string): Promise<Measured> {
  return measure(
    process.execPath,
    [
      '--import',
      'tsx',
      'test/bench/fetch-report.ts',
      'TransactionRequestReport_Daily',
      REPORT_DATE,
      format,
      file,
    ],
    sim.env,
  );
}

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: ADMIN_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** Change one row of cybs.<table> by hand (its first row on disk: amount + 1). */
async function changeOneRow(url: string, table: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(
      `update cybs.${table} set amount = coalesce(amount, 0) + 1 where ctid = (select min(ctid) from cybs.${table})`,
    );
  } finally {
    await c.end();
  }
}

const databases: string[] = [];
async function freshDatabase(label: string): Promise<string> {
  const name = `cybs_bench_${label}_${process.pid}_${databases.length}`;
  await admin(`drop database if exists "${name}" with (force)`);
  await admin(`create database "${name}"`);
  databases.push(name);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}
async function dropDatabases(): Promise<void> {
  for (const name of databases.splice(0)) await admin(`drop database if exists "${name}" with (force)`);
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

interface Figure {
  key: string;
  label: string;
  rows: number;
  bytes: number | undefined;
  seconds: number;
  rssMB: number;
  /** Rows per second of this figure (extrapolated ones included). */
  rowsPerSecond: number;
  /** Median of the reference runs made alternately with this case's runs (its ratio's base). */
  refSeconds?: number;
  /**
   * Rows of this case's own reference, when it is not the CSV `\copy` (Purchase and Refund Detail:
   * its records, the same rows copied by psql into the same tables).
   */
  refRows?: number;
  /** Peak memory of the embedded PostgreSQL server beside the command (sum of its processes' PSS). */
  serverMB?: number;
  /** Median CPU of the runs: the command's and PostgreSQL's together (undefined without the latter). */
  cpuSeconds?: number;
  /** Median CPU of PostgreSQL's processes in the runs. */
  pgCpuSeconds?: number;
  /** Median CPU (command and PostgreSQL) of the reference runs beside this case. */
  refCpuSeconds?: number;
  note?: string;
}
const figures: Figure[] = [];

function record(
  key: string,
  label: string,
  rows: number,
  bytes: number | undefined,
  runs: Measured[],
  note?: string,
  refs?: Measured[],
): Figure {
  const seconds = median(runs.map((r) => r.seconds));
  const refSeconds = refs && refs.length > 0 ? median(refs.map((r) => r.seconds)) : undefined;
  const cpuSeconds = totalCpu(runs);
  const refCpuSeconds = refs && refs.length > 0 ? totalCpu(refs) : undefined;
  const pgCpu = runs.map((r) => r.pgCpuSeconds);
  const figure: Figure = {
    key,
    label,
    rows,
    bytes,
    seconds,
    rssMB: Math.max(...runs.map((r) => r.rssMB)),
    rowsPerSecond: rows / seconds,
    ...(note ? { note } : {}),
    ...(refSeconds !== undefined ? { refSeconds } : {}),
    ...(cpuSeconds !== undefined ? { cpuSeconds } : {}),
    ...(cpuSeconds !== undefined ? { pgCpuSeconds: median(pgCpu.map((c) => c!)) } : {}),
    ...(refCpuSeconds !== undefined ? { refCpuSeconds } : {}),
  };
  figures.push(figure);
  // The workers' figures count windows, not rows (their note says so).
  const unit = note?.startsWith('windows') ? 'windows/s' : 'rows/s';
  log(
    `${label}: ${figure.seconds.toFixed(2)} s (runs ${runs.map((r) => r.seconds.toFixed(2)).join(', ')}), ${Math.round(figure.rowsPerSecond)} ${unit}, peak RSS ${figure.rssMB.toFixed(0)} MB` +
      (refs && refs.length > 0
        ? `; reference runs beside it ${refs.map((r) => r.seconds.toFixed(2)).join(', ')} s`
        : '') +
      (cpuSeconds !== undefined
        ? `; CPU ${runs.map((r) => `${r.cpuSeconds.toFixed(2)} + ${r.pgCpuSeconds!.toFixed(2)}`).join(', ')} s (command + PostgreSQL)` +
          (refs && refCpuSeconds !== undefined
            ? `, reference ${refs.map((r) => `${r.cpuSeconds.toFixed(2)} + ${r.pgCpuSeconds!.toFixed(2)}`).join(', ')} s`
            : '')
        : ''),
  );
  return figure;
}

/** Median CPU of runs, the command's and PostgreSQL's; undefined when PostgreSQL's was not read. */
function totalCpu(runs: readonly Measured[]): number | undefined {
  if (runs.length === 0 || runs.some((r) => r.pgCpuSeconds === undefined || Number.isNaN(r.cpuSeconds)))
    return undefined;
  return median(runs.map((r) => r.cpuSeconds + r.pgCpuSeconds!));
}

function rowsOf(stdout: string): { loaded: number; rejected: number } {
  const loaded = /rows loaded\s+(\d+)/.exec(stdout);
  const rejected = /rows rejected\s+(\d+)/.exec(stdout);
  return { loaded: Number(loaded?.[1] ?? NaN), rejected: Number(rejected?.[1] ?? 0) };
}

/** Build the CLI once, as shipped (dist/cli.mjs, the bin, and the bundle it runs), into a cache folder. */
function build(): string {
  log('building into node_modules/.cache/cybs-etl-bench');
  return compileCli('cybs-etl-bench');
}

async function main(): Promise<void> {
  const cli = build();
  const work = await mkdtemp(path.join(tmpdir(), 'cybs-bench-'));
  const configPath = path.join(work, 'config.yaml');
  await writeFile(
    configPath,
    // The loader against \copy: the analytics views are not refreshed after each command.
    'log:\n  level: warn\nanalytics:\n  refresh: manual\npipelines:\n  purchase_refund_details:\n    pageLimit: 2000\n',
    'utf8',
  );
  const etl = (url: string, sim: Sim, args: string[]) =>
    measure(process.execPath, [...NODE_RUNTIME_FLAGS, cli, '--config', configPath, ...args], {
      ...NODE_RUNTIME_ENV,
      ...sim.env,
      DATABASE_URL: url,
    });
  const migrate = async (url: string, sim: Sim) => {
    await etl(url, sim, ['migrate']);
  };
  log(
    `scale ${SCALE}: CSV ${CSV_ROWS} rows on ${DAY}, PRD ≈${PRD_RECORDS} records, backfill ${BACKFILL_DAYS} days × ${BACKFILL_TX_PER_DAY}, naive ${NAIVE_ROWS}; ${REPS} repetitions`,
  );
  const sims: Sim[] = [];
  try {
    // ---- CSV: the reference \copy and the CSV report ----
    const csvSim = await startSim({ transactionsPerDay: CSV_ROWS, startDate: START });
    sims.push(csvSim);
    const csvFile = path.join(work, 'transaction_request.csv');
    const fetched = await downloadReport(csvSim, 'csv', csvFile);
    const csvBytes = (await stat(csvFile)).size;
    log(`CSV report: ${csvBytes} bytes, downloaded in ${fetched.seconds.toFixed(1)} s`);
    // The same rows without the metadata line, for \copy.
    const refFile = path.join(work, 'ref.csv');
    spawnSync('sh', ['-c', `tail -n +2 '${csvFile}' > '${refFile}'`]);
    const header = await firstLine(refFile);
    const columns = (parse(header) as string[][])[0]!.map((h) =>
      resolveHeader(h, { report: 'TransactionRequestClass' }),
    );
    let ref: Figure | undefined;
    let refRows = 0;
    /** One `psql \copy` of the reference, into a fresh database. */
    const refRun = async (): Promise<Measured> => {
      const url = await freshDatabase('ref');
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(
        `create table ref (${columns.map((col) => `"${col.column}" ${col.pgType}`).join(', ')}, primary key (request_id))`,
      );
      await c.end();
      const copied = await measure('psql', [
        url,
        '-qc',
        `\\copy ref (${columns.map((col) => `"${col.column}"`).join(', ')}) from '${refFile}' with (format csv, header true)`,
      ]);
      const counter = new pg.Client({ connectionString: url });
      await counter.connect();
      refRows = Number((await counter.query('select count(*) as n from ref')).rows[0].n);
      await counter.end();
      await dropDatabases();
      return copied;
    };
    // The reference runs alternate with the cases compared to it (one before each repetition), and
    // each case's ratio is taken against the reference runs of its own section: on a shared
    // machine the speed of everything drifts within one bench, and a reference measured only at
    // the start would bias every later ratio by that drift.
    const refRuns: Measured[] = [];
    const refBefore = async (section: Measured[]): Promise<void> => {
      if (!CASES.has('ref')) return;
      const r = await refRun();
      refRuns.push(r);
      section.push(r);
    };
    if (CASES.has('ref') && !CASES.has('csv') && !CASES.has('xml')) {
      for (let i = 0; i < REPS; i++) await refBefore([]);
    }

    if (CASES.has('csv')) {
      const first: Measured[] = [];
      const reload: Measured[] = [];
      const touched: Measured[] = [];
      const refs: Measured[] = [];
      let rows = 0;
      for (let i = 0; i < REPS; i++) {
        await refBefore(refs);
        const url = await freshDatabase('csv');
        await migrate(url, csvSim);
        const args = ['backfill', '--from', DAY, '--to', DAY, '--pipelines', 'transaction_request'];
        const a = await etl(url, csvSim, args);
        first.push(a);
        rows = rowsOf(a.stdout).loaded + rowsOf(a.stdout).rejected;
        // The same file again: recognised (nothing written).
        reload.push(await etl(url, csvSim, [...args, '--force']));
        // One row changed by hand since: the file is read and compared with the table again.
        await changeOneRow(url, 'transaction_request');
        touched.push(await etl(url, csvSim, [...args, '--force']));
        await dropDatabases();
      }
      record('csv_first', 'CSV report → typed table, first load', rows, csvBytes, first, undefined, refs);
      record(
        'csv_reload',
        'CSV report → typed table, identical reload',
        rows,
        csvBytes,
        reload,
        undefined,
        refs,
      );
      record(
        'csv_reload_touched',
        'CSV report → typed table, re-load after one row was changed by hand',
        rows,
        csvBytes,
        touched,
        undefined,
        refs,
      );
    }
    await csvSim.stop();

    if (CASES.has('xml')) {
      const xmlSim = await startSim({ transactionsPerDay: CSV_ROWS, startDate: START, xml: true });
      sims.push(xmlSim);
      // The XML file's size (for MB/s): downloaded once on its own.
      const xmlFile = path.join(work, 'transaction_request.xml');
      await downloadReport(xmlSim, 'xml', xmlFile);
      const xmlBytes = (await stat(xmlFile)).size;
      await rm(xmlFile, { force: true });
      log(`XML report: ${xmlBytes} bytes`);
      const runs: Measured[] = [];
      const refs: Measured[] = [];
      let rows = 0;
      for (let i = 0; i < REPS; i++) {
        await refBefore(refs);
        const url = await freshDatabase('xml');
        await migrate(url, xmlSim);
        const r = await etl(url, xmlSim, [
          'backfill',
          '--from',
          DAY,
          '--to',
          DAY,
          '--pipelines',
          'transaction_request',
        ]);
        runs.push(r);
        rows = rowsOf(r.stdout).loaded + rowsOf(r.stdout).rejected;
        await dropDatabases();
      }
      record('xml', 'XML report (same rows) → typed table', rows, xmlBytes, runs, undefined, refs);
      await xmlSim.stop();
    }

    if (CASES.has('prd')) {
      const prdSim = await startSim({ transactionsPerDay: PRD_TX_PER_DAY, startDate: START });
      sims.push(prdSim);
      const runs: Measured[] = [];
      const nextRuns: Measured[] = [];
      const touchedRuns: Measured[] = [];
      let records = 0;
      let rows = 0;
      let nextRecords = 0;
      let nextRows = 0;
      const prdArgs = ['backfill', '--from', DAY, '--to', DAY, '--pipelines', 'purchase_refund_details'];
      const nextArgs = [
        'backfill',
        '--from',
        NEXT_DAY,
        '--to',
        NEXT_DAY,
        '--pipelines',
        'purchase_refund_details',
      ];
      const countRecords = async (url: string): Promise<number> => {
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        try {
          return Number(
            (await c.query('select count(*) as n from cybs.purchase_refund_request_details')).rows[0].n,
          );
        } finally {
          await c.end();
        }
      };
      const prdRef = await (async () => {
        // Once, untimed: the simulator keeps the pages of a complete window once rendered (as the
        // report files), so the timed runs measure the loader, not the simulator's renderer.
        const url = await freshDatabase('prd');
        await migrate(url, prdSim);
        const warm = await etl(url, prdSim, prdArgs);
        // The same rows, for the reference (PostgreSQL's own copy of them), before the next day's.
        const reference = await prdReference(url, work);
        const warmNext = await etl(url, prdSim, nextArgs);
        log(
          `Purchase and Refund Detail pages rendered by the simulator in ${warm.seconds.toFixed(1)} s and ${warmNext.seconds.toFixed(1)} s`,
        );
        await dropDatabases();
        return reference;
      })();
      const refs: Measured[] = [];
      for (let i = 0; i < REPS; i++) {
        refs.push(await prdRef());
        const url = await freshDatabase('prd');
        await migrate(url, prdSim);
        const r = await etl(url, prdSim, prdArgs);
        runs.push(r);
        rows = rowsOf(r.stdout).loaded;
        records = await countRecords(url);
        // The next day, into the tables this run made (no table or index made anew: the nightly load).
        const next = await etl(url, prdSim, nextArgs);
        nextRuns.push(next);
        nextRows = rowsOf(next.stdout).loaded;
        nextRecords = (await countRecords(url)) - records;
        // One row of the first day changed by hand since, then that day again with --force: its
        // pages are fetched, spooled and compared with the tables, as any re-load of changed data.
        await changeOneRow(url, 'purchase_refund_settlements');
        touchedRuns.push(await etl(url, prdSim, [...prdArgs, '--force']));
        await dropDatabases();
      }
      const prd = record(
        'prd',
        `Purchase and Refund Detail, pages of 2,000 → six tables (${rows} rows)`,
        records,
        undefined,
        runs,
        'records',
        refs,
      );
      prd.refRows = records;
      const copied = record(
        'prd_copy',
        `psql \\copy of the same ${rows} rows into the same six tables`,
        records,
        undefined,
        refs,
        'records; the reference of the line above',
        refs,
      );
      copied.refRows = records;
      const next = record(
        'prd_next',
        `The next day (${nextRows} rows) into the same six tables, as a nightly load`,
        nextRecords,
        undefined,
        nextRuns,
        'records; its × is to the \\copy above, into new tables',
        refs,
      );
      next.refRows = records;
      const touched = record(
        'prd_touched',
        'The first day re-loaded after one row was changed by hand (--force)',
        records,
        undefined,
        touchedRuns,
        'records; its × is to the \\copy above, into new tables',
        refs,
      );
      touched.refRows = records;
      await prdSim.stop();
    }

    const smallSim =
      CASES.has('backfill') || CASES.has('naive')
        ? await startSim({ transactionsPerDay: BACKFILL_TX_PER_DAY, startDate: START })
        : undefined;
    if (smallSim) sims.push(smallSim);
    if (smallSim && CASES.has('backfill')) {
      const runs: Measured[] = [];
      let rows = 0;
      for (let i = 0; i < REPS; i++) {
        const url = await freshDatabase('backfill');
        await migrate(url, smallSim);
        const r = await etl(url, smallSim, ['backfill', '--from', BACKFILL_FROM, '--to', DAY]);
        runs.push(r);
        rows = rowsOf(r.stdout).loaded + rowsOf(r.stdout).rejected;
        await dropDatabases();
      }
      record('backfill', `${BACKFILL_DAYS}-day backfill, all default pipelines`, rows, undefined, runs);
    }
    if (smallSim && CASES.has('naive')) {
      const naiveSim = await startSim({ transactionsPerDay: NAIVE_ROWS, startDate: START });
      sims.push(naiveSim);
      const runs: Measured[] = [];
      let rows = 0;
      for (let i = 0; i < REPS; i++) {
        const url = await freshDatabase('naive');
        const r = await measure(
          process.execPath,
          ['--import', 'tsx', 'test/bench/naive.ts', 'TransactionRequestReport_Daily', REPORT_DATE],
          { ...naiveSim.env, DATABASE_URL: url },
        );
        runs.push(r);
        rows = (JSON.parse(r.stdout.trim()) as { rows: number }).rows;
        await dropDatabases();
      }
      const f = record(
        'naive',
        `naive: fetch + one INSERT per row (${rows}-row sample, extrapolated)`,
        rows,
        undefined,
        runs,
      );
      f.note = `≈ ${((CSV_ROWS / f.rowsPerSecond) | 0).toString()} s for ${CSV_ROWS} rows`;
      await naiveSim.stop();
    }

    if (CASES.has('embedded')) await benchEmbedded();
    if (CASES.has('workers')) await benchWorkers(cli, work);

    if (refRuns.length > 0) {
      ref = record('copy', 'psql \\copy into a typed, keyed table (reference)', refRows, csvBytes, refRuns);
      figures.unshift(figures.pop()!);
    }
    printReport(ref, { csvRows: CSV_ROWS });
  } finally {
    for (const s of sims) await s.stop().catch(() => {});
    await dropDatabases().catch(() => {});
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * The README's first command and what a new user runs next, on the embedded warehouse: `npm start`
 * (`run` without credentials: the in-process simulator, a fresh ./data/warehouse), then `sql` and
 * `status` on what it loaded. Each repetition in a new directory with the committed config.yaml.
 */
async function benchEmbedded(): Promise<void> {
  const cli = build();
  const runs: Record<'start' | 'sql' | 'status', Measured[]> = { start: [], sql: [], status: [] };
  const server: Record<'start' | 'sql' | 'status', number[]> = { start: [], sql: [], status: [] };
  let rows = 0;
  // No credentials and no DATABASE_URL: the simulator and the embedded warehouse, as for a new user.
  const env: Record<string, string> = { ...NODE_RUNTIME_ENV, DATABASE_URL: '' };
  for (const key of Object.keys(process.env)) if (key.startsWith('CYBS_')) env[key] = '';
  for (let i = 0; i < REPS; i++) {
    const dir = await mkdtemp(path.join(tmpdir(), 'cybs-bench-embedded-'));
    // As root the server runs as user postgres, which must be able to pass through the directory.
    await chmod(dir, 0o711);
    try {
      await copyFile(path.join(root, 'config.yaml'), path.join(dir, 'config.yaml'));
      const dataDir = path.join(dir, 'data', 'warehouse');
      const step = async (name: 'start' | 'sql' | 'status', args: string[]): Promise<Measured> => {
        const stop = sampleServerPeak(dataDir);
        // The embedded server is the command's own, not the bench's PostgreSQL.
        const r = await measure(process.execPath, [...NODE_RUNTIME_FLAGS, cli, ...args], env, dir, false);
        server[name].push(await stop());
        runs[name].push(r);
        return r;
      };
      const started = await step('start', ['run']);
      rows = rowsOf(started.stdout).loaded;
      await step('sql', ['sql', 'select 1']);
      await step('status', ['status']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  const labels = {
    start: '`npm start`: embedded warehouse, simulator, new directory',
    sql: '`cybs-etl sql "select 1"` on the embedded warehouse',
    status: '`cybs-etl status` on the embedded warehouse',
  };
  for (const name of ['start', 'sql', 'status'] as const) {
    const f = record(`embedded_${name}`, labels[name], name === 'start' ? rows : 0, undefined, runs[name]);
    f.serverMB = Math.max(...server[name]);
    f.note = `server ${f.serverMB.toFixed(0)} MB beside it`;
  }
}

/**
 * The reference of the Purchase and Refund Detail case, from a database the loader filled: PostgreSQL's
 * own `psql \copy` of the same rows into the same six tables (their DDL from `pg_dump --schema-only`:
 * the same columns, keys and indexes), in one transaction as the loader's window. `_loaded_at` is
 * left to its default, as the loader leaves it. Returns a run: a fresh database with the tables,
 * then the timed `psql` (measure: a CHECKPOINT first).
 */
async function prdReference(filled: string, work: string): Promise<() => Promise<Measured>> {
  const schemaFile = path.join(work, 'prd-schema.sql');
  const dumped = spawnSync('pg_dump', ['--schema-only', '--schema=cybs', '--file', schemaFile, filled]);
  if (dumped.status !== 0) throw new Error(`pg_dump failed: ${dumped.stderr.toString()}`);
  const c = new pg.Client({ connectionString: filled });
  await c.connect();
  const script = ['begin;'];
  try {
    const tables = await c.query<{ name: string; columns: string }>(
      `select c.relname as name,
              string_agg(quote_ident(a.attname), ', ' order by a.attnum) as columns
         from pg_class c
         join pg_namespace n on n.oid = c.relnamespace
         join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
        where n.nspname = 'cybs' and c.relkind = 'r' and c.relname like 'purchase_refund_%'
          and a.attname <> '_loaded_at'
        group by c.relname
        order by c.relname`,
    );
    for (const { name, columns } of tables.rows) {
      const file = path.join(work, `prd-${name}.txt`);
      const out = spawnSync('psql', [
        filled,
        '-qc',
        `\\copy (select ${columns} from cybs.${name}) to '${file}'`,
      ]);
      if (out.status !== 0) throw new Error(`psql \\copy of cybs.${name} failed: ${out.stderr.toString()}`);
      script.push(`\\copy cybs.${name} (${columns}) from '${file}'`);
    }
  } finally {
    await c.end();
  }
  script.push('commit;');
  const scriptFile = path.join(work, 'prd-copy.sql');
  await writeFile(scriptFile, `${script.join('\n')}\n`, 'utf8');
  return async () => {
    const url = await freshDatabase('prd_copy');
    const made = spawnSync('psql', [url, '-q', '-v', 'ON_ERROR_STOP=1', '-f', schemaFile]);
    if (made.status !== 0)
      throw new Error(`the Purchase and Refund Detail tables: ${made.stderr.toString()}`);
    const copied = await measure('psql', [url, '-q', '-v', 'ON_ERROR_STOP=1', '-f', scriptFile]);
    await dropDatabases();
    return copied;
  };
}

async function firstLine(file: string): Promise<string> {
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  for await (const line of lines) {
    lines.close();
    return line;
  }
  return '';
}

/** A figure's rows/s over the reference's: the reference runs of its own section where it has them. */
function ratioOf(f: Figure, ref: Figure | undefined): number | undefined {
  if (f.refRows !== undefined && f.refSeconds !== undefined)
    return f.rowsPerSecond / (f.refRows / f.refSeconds);
  if (ref === undefined) return undefined;
  const refRate = f.refSeconds !== undefined ? ref.rows / f.refSeconds : ref.rowsPerSecond;
  return f.rowsPerSecond / refRate;
}

/**
 * A figure's rows per CPU-second (the command's and PostgreSQL's) over its reference's, as ratioOf
 * does for wall time: how much work each did for the same rows.
 */
function cpuRatioOf(f: Figure, ref: Figure | undefined): number | undefined {
  if (f.cpuSeconds === undefined) return undefined;
  if (f.refRows !== undefined && f.refCpuSeconds !== undefined)
    return f.rows / f.cpuSeconds / (f.refRows / f.refCpuSeconds);
  const refCpu = f.refCpuSeconds ?? ref?.cpuSeconds;
  if (ref === undefined || refCpu === undefined) return undefined;
  return f.rows / f.cpuSeconds / (ref.rows / refCpu);
}

function printReport(ref: Figure | undefined, info: { csvRows: number }): void {
  const pad = (s: string, n: number) => s.padEnd(n);
  const lpad = (s: string, n: number) => s.padStart(n);
  const lines: string[] = [];
  lines.push('');
  lines.push(
    `cybs-etl bench — scale ${SCALE} (CSV ${info.csvRows} rows), medians of ${REPS}, ` +
      `node ${process.version}, ${new Date().toISOString()}`,
  );
  lines.push(
    `${pad('case', 72)} ${lpad('rows', 9)} ${lpad('s', 7)} ${lpad('rows/s', 9)} ${lpad('MB/s', 6)} ${lpad('× \\copy', 8)} ${lpad('CPU s', 7)} ${lpad('CPU ×', 7)} ${lpad('peak RSS', 9)}`,
  );
  for (const f of figures) {
    const ratio = ratioOf(f, ref) ?? NaN;
    const cpuRatio = f === ref || f.key === 'prd_copy' ? NaN : (cpuRatioOf(f, ref) ?? NaN);
    lines.push(
      `${pad(f.label, 72)} ${lpad(String(f.rows), 9)} ${lpad(f.seconds.toFixed(2), 7)} ${lpad(Math.round(f.rowsPerSecond).toString(), 9)} ` +
        `${lpad(f.bytes === undefined ? '—' : (f.bytes / 1e6 / f.seconds).toFixed(1), 6)} ${lpad(Number.isNaN(ratio) ? '—' : ratio.toFixed(3), 8)} ` +
        `${lpad(f.cpuSeconds === undefined ? '—' : f.cpuSeconds.toFixed(2), 7)} ${lpad(Number.isNaN(cpuRatio) ? '—' : cpuRatio.toFixed(3), 7)} ` +
        `${lpad(`${f.rssMB.toFixed(0)} MB`, 9)}${f.note ? `  (${f.note})` : ''}`,
    );
  }
  lines.push('');
  const kv: string[] = [`node=${process.version}`, `scale=${SCALE}`, `reps=${REPS}`];
  const get = (k: string) => figures.find((f) => f.key === k);
  for (const f of figures) {
    kv.push(`${f.key}_rows=${f.rows}`);
    kv.push(`${f.key}_seconds=${f.seconds.toFixed(3)}`);
    kv.push(`${f.key}_rows_per_s=${Math.round(f.rowsPerSecond)}`);
    if (f.bytes !== undefined) kv.push(`${f.key}_mb_per_s=${(f.bytes / 1e6 / f.seconds).toFixed(2)}`);
    const ratio = f === ref ? undefined : ratioOf(f, ref);
    if (ratio !== undefined && f.key !== 'prd_copy') kv.push(`${f.key}_ratio=${ratio.toFixed(3)}`);
    if (f.refSeconds !== undefined && f.key !== 'prd_copy')
      kv.push(`${f.key}_ref_seconds=${f.refSeconds.toFixed(3)}`);
    if (f.cpuSeconds !== undefined) {
      kv.push(`${f.key}_cpu_seconds=${f.cpuSeconds.toFixed(3)}`);
      kv.push(`${f.key}_pg_cpu_seconds=${f.pgCpuSeconds!.toFixed(3)}`);
      const cpuRatio = f === ref || f.key === 'prd_copy' ? undefined : cpuRatioOf(f, ref);
      if (cpuRatio !== undefined) kv.push(`${f.key}_cpu_ratio=${cpuRatio.toFixed(3)}`);
    }
    kv.push(`${f.key}_peak_rss_mb=${f.rssMB.toFixed(0)}`);
    if (f.serverMB !== undefined) kv.push(`${f.key}_server_peak_mb=${f.serverMB.toFixed(0)}`);
  }
  const naive = get('naive');
  const csvFirst = get('csv_first');
  if (naive && csvFirst)
    kv.push(`csv_first_vs_naive=${(csvFirst.rowsPerSecond / naive.rowsPerSecond).toFixed(1)}`);
  const atLeast = (f: Figure | undefined, target: number): boolean | undefined => {
    const ratio = f ? ratioOf(f, ref) : undefined;
    return ratio === undefined ? undefined : ratio >= target;
  };
  // The targets (docs/performance.md): load speed of issue 9, memory of issue 27.
  const targets: [string, boolean | undefined][] = [
    ['target_csv_first_ratio_0.6', atLeast(csvFirst, 0.6)],
    ['target_csv_reload_ratio_0.6', atLeast(get('csv_reload'), 0.6)],
    ['target_xml_ratio_0.15', atLeast(get('xml'), 0.15)],
    ['target_prd_50k_records_per_s', get('prd') ? get('prd')!.rowsPerSecond >= 50_000 : undefined],
    // Issue 32: a re-load after a row was changed by hand costs what changed, not the whole day.
    ['target_prd_touched_ratio_0.8', atLeast(get('prd_touched'), 0.8)],
    [
      'target_peak_rss_200mb',
      figures
        .filter((f) => f.key !== 'copy' && f.key !== 'prd_copy' && f.key !== 'naive')
        .filter((f) => !f.key.startsWith('embedded_'))
        .every((f) => f.rssMB <= 200),
    ],
    // Issue 27: the embedded default, the command and its server together.
    ['target_embedded_start_400mb', withServer(get('embedded_start'), 400)],
    [
      'target_embedded_sql_status_250mb',
      both(withServer(get('embedded_sql'), 250), withServer(get('embedded_status'), 250)),
    ],
    ['target_10x_naive', naive && csvFirst ? csvFirst.rowsPerSecond / naive.rowsPerSecond >= 10 : undefined],
  ];
  function withServer(f: Figure | undefined, mb: number): boolean | undefined {
    return f ? f.rssMB + (f.serverMB ?? 0) <= mb : undefined;
  }
  function both(a: boolean | undefined, b: boolean | undefined): boolean | undefined {
    return a === undefined || b === undefined ? undefined : a && b;
  }
  for (const [k, met] of targets)
    kv.push(`${k}=${met === undefined ? 'not_measured' : met ? 'met' : 'missed'}`);
  process.stdout.write(`${lines.join('\n')}\n${kv.join('\n')}\n`);
}

/**
 * Beyond one machine: a one-day backfill of WORKER_ORGANIZATIONS organizations (every default
 * pipeline: nine windows each), loaded by one `backfill` process, then planned by `backfill
 * --detach` and loaded by 1, 2 and 4 `worker` processes (started after the planner; the time runs
 * from the planner's start until the queue is empty). Figures in windows per second; a worker's
 * peak RSS is its VmHWM, read before it is stopped.
 */
async function benchWorkers(cli: string, work: string): Promise<void> {
  const sim = await startSim({
    transactionsPerDay: 20,
    startDate: START,
    organizations: WORKER_ORGANIZATIONS,
  });
  try {
    const organizations = sim.env['BENCH_ORGANIZATIONS']!.split(',');
    const configPath = path.join(work, 'workers.yaml');
    await writeFile(
      configPath,
      `log:\n  level: warn\nanalytics:\n  refresh: manual\ndefaults:\n  organizations: [${organizations.join(', ')}]\n`,
    );
    const argv = (args: string[]) => [...NODE_RUNTIME_FLAGS, cli, '--config', configPath, ...args];
    const envOf = (url: string) => ({ ...NODE_RUNTIME_ENV, ...sim.env, DATABASE_URL: url });
    const windowsIn = async (url: string): Promise<number> => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const r = await c.query(
          `select count(*)::int as n from etl.windows where status in ('loaded', 'no_data')`,
        );
        return r.rows[0].n as number;
      } finally {
        await c.end();
      }
    };
    const label = `one-day backfill of ${organizations.length} organizations`;
    const single: Measured[] = [];
    let windows = 0;
    for (let i = 0; i < REPS; i++) {
      const url = await freshDatabase('workers');
      await measure(process.execPath, argv(['migrate']), envOf(url));
      single.push(
        await measure(process.execPath, argv(['backfill', '--from', DAY, '--to', DAY]), envOf(url)),
      );
      windows = await windowsIn(url);
      await dropDatabases();
    }
    record('workers_backfill', `${label}, one backfill process`, windows, undefined, single, 'windows');
    for (const n of WORKER_PROCESSES) {
      const runs: Measured[] = [];
      for (let i = 0; i < REPS; i++) {
        const url = await freshDatabase('workers');
        await measure(process.execPath, argv(['migrate']), envOf(url));
        await admin('checkpoint');
        const started = performance.now();
        const planner = spawnSync(
          process.execPath,
          argv(['backfill', '--from', DAY, '--to', DAY, '--detach']),
          {
            env: { ...process.env, ...envOf(url) },
            encoding: 'utf8',
          },
        );
        if (planner.status !== 0)
          throw new Error(`backfill --detach failed: ${planner.stdout}${planner.stderr}`);
        const workers = Array.from({ length: n }, () =>
          spawn(process.execPath, argv(['worker']), {
            env: { ...process.env, ...envOf(url) },
            stdio: 'ignore',
          }),
        );
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        try {
          for (;;) {
            const r = await c.query(
              `select count(*)::int as n from pgboss.job where name = 'cybs_etl_windows' and state in ('created', 'retry', 'active')`,
            );
            if (r.rows[0].n === 0) break;
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        } finally {
          await c.end();
        }
        const seconds = (performance.now() - started) / 1000;
        let rssMB = 0;
        for (const w of workers) {
          const status = await readFile(`/proc/${w.pid}/status`, 'utf8').catch(() => '');
          rssMB = Math.max(rssMB, Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024);
          w.kill('SIGTERM');
        }
        await Promise.all(
          workers.map(
            (w) => new Promise((resolve) => (w.exitCode !== null ? resolve(null) : w.once('exit', resolve))),
          ),
        );
        windows = await windowsIn(url);
        // Several processes: their CPU is not read (the figure is windows/s).
        runs.push({ seconds, rssMB, stdout: planner.stdout, cpuSeconds: NaN, pgCpuSeconds: undefined });
        await dropDatabases();
      }
      record(
        `workers_${n}`,
        `${label}, backfill --detach + ${n} worker process(es)`,
        windows,
        undefined,
        runs,
        'windows; RSS per worker',
      );
    }
  } finally {
    await sim.stop();
  }
}

await main();
