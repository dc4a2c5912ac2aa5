/**
 * A report download read while it is written (followDownload), against the simulator: the reader
 * gets every byte in order before the download has finished, never a byte of an attempt that was
 * started over, and the download's own error when it fails; and a CSV or XML window whose transfer
 * breaks in the middle of its COPY loads exactly what a clean run loads.
 */
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createReportingClient } from '../../src/api/reporting-client.js';
import type { ReportingClient } from '../../src/api/reporting-client.js';
import { parseConfig } from '../../src/config/load-config.js';
import { followDownload, isDownloadRestarted } from '../../src/extract/followed-download.js';
import { ByteSpool, SpoolDir } from '../../src/spool/byte-spool.js';
import { startSimulator } from '../../packages/simulator/src/server/start-simulator.js';
import type { SimulatorHandle } from '../../packages/simulator/src/server/start-simulator.js';
import { compareWithGroundTruth } from '../helpers/ground-truth.js';
import { spawnCli } from '../helpers/cli-process.js';
import { createE2eWorld, E2E_NOW, E2E_START_DATE } from '../helpers/e2e.js';

const DAY_MS = 86_400_000;
const day = new Date(Date.now() - 5 * DAY_MS).toISOString().slice(0, 10);
const params = { reportName: 'TransactionRequestReport_Daily', reportDate: day, accept: 'text/csv' as const };

let sim: SimulatorHandle;
let client: ReportingClient;
let dir: string;
let whole: Buffer;

beforeAll(async () => {
  sim = await startSimulator({
    seed: 4,
    organizations: 1,
    transactionsPerDay: 3000,
    quietDayRate: 0,
    startDate: new Date(Date.now() - 20 * DAY_MS).toISOString().slice(0, 10),
  });
  client = createReportingClient({
    credentials: { auth: 'http-signature', ...sim.credentials },
    target: { baseUrl: sim.baseUrl },
    api: parseConfig('api:\n  retry:\n    attempts: 3\n    minDelayMs: 5\n    maxDelayMs: 20\n').api,
  });
  dir = await mkdtemp(join(tmpdir(), 'cybs-follow-'));
  await client.downloadReportToFile(params, join(dir, 'whole.csv'));
  whole = await readFile(join(dir, 'whole.csv'));
}, 60_000);

afterAll(async () => {
  await client?.close();
  await sim?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  sim.setFaults([]);
});

/** A spool named `name` in `dir`: in a file from its first byte unless given memory. */
function spoolAt(name: string, memoryBytes = 0): ByteSpool {
  return new ByteSpool(new SpoolDir({ path: dir, memoryBytes }), name);
}

async function collect(chunks: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return Buffer.concat(parts);
}

describe('followDownload', () => {
  it('hands on the bytes in order while the download is still running', async () => {
    expect(whole.length).toBeGreaterThan(1_000_000);
    sim.setFaults('download:slow-body=15');
    const path = join(dir, 'slow.csv');
    const download = followDownload(client, params, spoolAt('slow.csv'));
    let finished = false;
    void download.done.then(() => (finished = true));
    const parts: Buffer[] = [];
    let beforeDone = 0;
    for await (const chunk of download.chunks()) {
      parts.push(chunk);
      if (!finished) beforeDone += chunk.length;
    }
    expect(Buffer.concat(parts).equals(whole)).toBe(true);
    // Handed on at most 64 KiB at a time (the default readSize), however much one read took.
    expect(Math.max(...parts.map((p) => p.length))).toBeLessThanOrEqual(64 * 1024);
    // Most of the file was read before its last byte arrived.
    expect(beforeDone).toBeGreaterThan(whole.length / 2);
    expect((await download.done).attempts).toBe(1);
    expect((await readFile(path)).equals(whole)).toBe(true);
    await download.stop();
  });

  it('reads a complete file in large reads, handed on in pieces of readSize, in order', async () => {
    const spool = spoolAt('complete.csv');
    const download = followDownload(client, params, spool, { readSize: 100_000 });
    await download.done;
    const parts: Buffer[] = [];
    for await (const chunk of download.chunks()) parts.push(chunk);
    expect(Buffer.concat(parts).equals(whole)).toBe(true);
    expect(parts.length).toBe(Math.ceil(whole.length / 100_000));
    expect(parts.slice(0, -1).every((p) => p.length === 100_000)).toBe(true);
    await download.stop();
  });

  it('holds a file within its memory in memory, and hands on the same bytes', async () => {
    const spool = spoolAt('memory.csv', 2 * whole.length);
    const download = followDownload(client, params, spool, { readSize: 100_000 });
    const read = await collect(download.chunks());
    await download.done;
    expect(spool.spilled).toBe(false);
    expect(read.equals(whole)).toBe(true);
    expect((await collect(spool.read())).equals(whole)).toBe(true);
    await download.stop();
  });

  it('fails the reader when the transfer breaks and starts over; the download completes', async () => {
    sim.setFaults(`download:reset=${Math.floor(whole.length / 2)}x1`);
    const path = join(dir, 'reset.csv');
    // In memory up to a third of the file, then in its file: the restart starts both over.
    const spool = spoolAt('reset.csv', Math.floor(whole.length / 3));
    const download = followDownload(client, params, spool);
    let read = 0;
    const error = await (async () => {
      try {
        for await (const chunk of download.chunks()) read += chunk.length;
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(isDownloadRestarted(error)).toBe(true);
    // Never more than the first attempt delivered.
    expect(read).toBeLessThanOrEqual(Math.floor(whole.length / 2));
    expect((await download.done).attempts).toBe(2);
    expect(spool.spilled).toBe(true);
    expect((await readFile(path)).equals(whole)).toBe(true);
    expect((await collect(spool.read())).equals(whole)).toBe(true);
    await download.stop();
  });

  it("fails the reader with the download's own error", async () => {
    const download = followDownload(
      client,
      { ...params, reportName: 'NoSuchReport' },
      spoolAt('missing.csv'),
    );
    await expect(buffer(download.chunks())).rejects.toMatchObject({ stage: 'api', status: 404 });
    await expect(download.done).rejects.toMatchObject({ status: 404 });
    await download.stop();
  });

  it("stop() aborts a running download; its file goes with the window's spool directory", async () => {
    sim.setFaults('download:slow-body=50');
    const sub = await mkdtemp(join(dir, 'stop-'));
    const spoolDir = new SpoolDir({ parent: sub, memoryBytes: 0 });
    const download = followDownload(client, params, new ByteSpool(spoolDir, 'stopped.csv'));
    const iterator = download.chunks()[Symbol.asyncIterator]();
    expect((await iterator.next()).done).toBe(false);
    await iterator.return(undefined);
    await download.stop();
    await expect(download.done).rejects.toBeDefined();
    await spoolDir.remove();
    expect(await readdir(sub)).toEqual([]);
  });
});

describe('a report window read while it downloads', () => {
  it.each(['csv', 'xml'] as const)(
    '%s: loads exactly the truth when the transfer breaks in the middle of the COPY',
    async (format) => {
      // Large enough to be read while it downloads (past 32 MiB; see withDownloadedBytes).
      const world = await createE2eWorld({
        prefix: `follow${format}`,
        simulator: { transactionsPerDay: format === 'csv' ? 120_000 : 30_000 },
        patient: true,
      });
      try {
        const from = E2E_START_DATE;
        const org = world.sim.organizations[0]!;
        if (format === 'xml') {
          world.sim.store.findSubscription(org, 'TransactionRequestReport_Daily')!.reportMimeType =
            'application/xml';
        }
        // The first day's report, downloaded once with the merchant's own key: its size places the break.
        const size = await reportSize(world.sim, org, format, {
          reportName: 'TransactionRequestReport_Daily',
          reportDate: new Date(Date.parse(from) + DAY_MS).toISOString().slice(0, 10),
        });
        expect(size).toBeGreaterThan(36 * 1024 * 1024);
        // The break comes after the reader has started (at 32 MiB), before the end.
        world.sim.setFaults(`download:reset=${Math.floor(size * 0.92)}x1`);
        // In a child process, to read its log lines.
        const run = spawnCli(
          [
            '--config',
            world.configPath,
            '--now',
            E2E_NOW,
            '--log-level',
            'info',
            'backfill',
            '--pipelines',
            'transaction_request',
            '--from',
            from,
            '--to',
            from,
          ],
          world.env,
        );
        const exited = await run.exited;
        expect(exited.code, run.stdout() + run.stderr()).toBe(0);
        expect(run.stderr()).toContain('report download broke mid-stream; starting it over');
        // The complete file went through the fast path again, not row by row.
        expect(run.stderr()).not.toMatch(/fast path refused/);
        const result = await compareWithGroundTruth(world.db, {
          truth: (o, s, e) => world.sim.groundTruth(o, s, e),
          organizations: world.sim.organizations,
          startDate: from,
          endDate: from,
          pipelines: ['transaction_request'],
        });
        expect(result.mismatches).toEqual([]);
        expect(result.rowsExpected).toBeGreaterThan(20_000);
      } finally {
        await world.close();
      }
    },
    120_000,
  );
});

/** The size of a report's file, downloaded once with a merchant's own key. */
async function reportSize(
  simulator: SimulatorHandle,
  organizationId: string,
  format: 'csv' | 'xml',
  report: { reportName: string; reportDate: string },
): Promise<number> {
  const c = createReportingClient({
    credentials: { auth: 'http-signature', ...simulator.merchantCredentials[organizationId]! },
    target: { baseUrl: simulator.baseUrl },
    api: parseConfig('').api,
  });
  const sub = await mkdtemp(join(tmpdir(), 'cybs-follow-size-'));
  try {
    return (
      await c.downloadReportToFile(
        { ...report, accept: format === 'xml' ? 'application/xml' : 'text/csv' },
        join(sub, `r.${format}`),
      )
    ).bytes;
  } finally {
    await c.close();
    await rm(sub, { recursive: true, force: true });
  }
}
