/**
 * followDownload against scripted downloads: the moments at which the spool starts, grows and the
 * download settles are chosen here, including the ones a real download only hits now and then (a
 * download that finishes before the reader first looks).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileDigester } from '../../../src/api/index.js';
import type {
  DownloadSink,
  DownloadToFileOptions,
  DownloadToFileResult,
  FileDigest,
} from '../../../src/api/index.js';
import { followDownload } from '../../../src/extract/followed-download.js';
import { ByteSpool, SpoolDir } from '../../../src/spool/byte-spool.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cybs-follow-unit-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const params = { reportName: 'R', reportDate: '2024-03-01' };
const digestOf = (data: Buffer): FileDigest => {
  const digester = new FileDigester();
  digester.update(data);
  return digester.digest();
};
const result = (data: Buffer): DownloadToFileResult => ({
  bytes: data.length,
  contentType: 'text/csv',
  attempts: 1,
  digest: digestOf(data),
});
/** A spool named `name`: in memory, or (memoryBytes 0) in a file from its first byte. */
const spoolOf = (name: string, memoryBytes?: number) =>
  new ByteSpool(new SpoolDir({ path: dir, ...(memoryBytes === undefined ? {} : { memoryBytes }) }), name);
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('followDownload (scripted downloads)', () => {
  it('does not wait forever when the download finishes before the reader first looks', async () => {
    const data = Buffer.from('a,b\r\n1,2\r\n');
    const client = {
      async downloadReportToFile(_p: unknown, sink: string | DownloadSink, options?: DownloadToFileOptions) {
        if (typeof sink === 'string') throw new Error('a spool is expected');
        options?.onAttempt?.(1);
        // Complete at once, never reporting a chunk.
        await sink.restart();
        await sink.write(data);
        await sink.written();
        return new Promise<DownloadToFileResult>((resolve) => setImmediate(() => resolve(result(data))));
      },
    };
    const download = followDownload(client, params, spoolOf('fast.csv'), { readSize: 4 });
    expect((await buffer(download.chunks())).equals(data)).toBe(true);
    await download.stop();
  });

  it.each([
    ['in memory', undefined],
    ['in a file', 0],
  ])(
    'waits for the first attempt, follows the spool (%s) as it grows, then reads to the end',
    async (_, memory) => {
      const pieces = ['header\r\n', 'row 1\r\n', 'row 2 is longer\r\n', 'row 3\r\n'];
      // The download waits after its first piece until the reader has handed something on.
      const script = scripted(pieces, { waitForReader: true });
      const download = followDownload(script.client, params, spoolOf('growing.csv', memory), { readSize: 8 });
      const { read, seenBeforeEnd } = await readNoting(download.chunks(), script);
      expect(read).toBe(pieces.join(''));
      expect(seenBeforeEnd).toBeGreaterThan(0);
      await download.stop();
    },
  );

  it('in turn, reads a spool file into one buffer: each chunk holds its bytes until the next is asked for', async () => {
    const pieces = ['header\r\n', 'row 1\r\n', 'row 2 is longer\r\n', 'row 3\r\n'];
    const script = scripted(pieces, { waitForReader: true });
    const download = followDownload(script.client, params, spoolOf('in-turn.csv', 0), { readSize: 8 });
    const parts: Buffer[] = [];
    const buffers = new Set<ArrayBufferLike>();
    for await (const chunk of download.chunks({ inTurn: true })) {
      parts.push(Buffer.from(chunk));
      buffers.add(chunk.buffer);
      script.readerGotBytes();
    }
    expect(Buffer.concat(parts).toString()).toBe(pieces.join(''));
    expect(parts.length).toBeGreaterThan(1);
    expect(buffers.size).toBe(1);
    await download.stop();
  });

  it('with startAfter, reads a file smaller than that only once it is complete', async () => {
    const pieces = ['header\r\n', 'row 1\r\n', 'row 2\r\n'];
    const script = scripted(pieces);
    const download = followDownload(script.client, params, spoolOf('after.csv'), {
      readSize: 4,
      startAfter: 1000,
    });
    const { read, seenBeforeEnd } = await readNoting(download.chunks(), script);
    expect(read).toBe(pieces.join(''));
    expect(seenBeforeEnd).toBe(0);
    await download.stop();
  });

  it('same: true once a download of the expected bytes completes, false without expected bytes', async () => {
    const pieces = ['header\r\n', 'row 1\r\n', 'row 2\r\n'];
    const script = scripted(pieces);
    const download = followDownload(script.client, params, spoolOf('same.csv'), {
      expected: expectedOf(pieces),
    });
    expect(await download.same).toBe(true);
    expect(script.finished).toBe(true);
    await download.stop();
    const without = followDownload(scripted(pieces).client, params, spoolOf('same2.csv'));
    expect(await without.same).toBe(false);
    await without.stop();
  });

  it('same: false at the first block that differs, while the rest still downloads, and the reader reads it all', async () => {
    const before = ['header\r\n', 'row 1\r\n', 'row 2\r\n', 'row 3\r\n', 'row 4\r\n'];
    const now = ['header\r\n', 'row 1 changed\r\n', 'row 2\r\n', 'row 3\r\n', 'row 4\r\n'];
    const script = scripted(now);
    const download = followDownload(script.client, params, spoolOf('differs.csv'), {
      readSize: 4,
      expected: expectedOf(before),
    });
    expect(await download.same).toBe(false);
    expect(script.finished).toBe(false);
    expect((await readNoting(download.chunks(), script)).read).toBe(now.join(''));
    await download.stop();
  });

  it('same: false for a file that only grew (its blocks all match as far as they go)', async () => {
    const before = ['header\r\n', 'row 1\r\n'];
    const script = scripted([...before, 'row 2\r\n']);
    const download = followDownload(script.client, params, spoolOf('grew.csv'), {
      expected: expectedOf(before),
    });
    expect(await download.same).toBe(false);
    await download.stop();
  });

  it('hands on a file smaller than one read once the download has finished', async () => {
    const script = scripted(['x\r\n']);
    const download = followDownload(script.client, params, spoolOf('small.csv'), { readSize: 1024 });
    expect((await readNoting(download.chunks(), script)).read).toBe('x\r\n');
    await download.stop();
  });
});

/** The block digest the scripted download reports for a piece. */
const blockOf = (piece: string): string => digestOf(Buffer.from(piece)).sha256.slice(0, 16);

/** What a download of `pieces` by the scripted client gives as its digest, blocks as it reports them. */
const expectedOf = (pieces: string[]): FileDigest => ({
  ...digestOf(Buffer.from(pieces.join(''))),
  blocks: pieces.map(blockOf),
});

/**
 * A download that writes `pieces` to the part file one by one (a tick apart, reporting each), then
 * renames it; `finished` once it has. With `waitForReader`, it stops after the first piece until
 * `readerGotBytes()` is called.
 */
function scripted(pieces: string[], scriptOptions: { waitForReader?: boolean } = {}) {
  let release = (): void => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  const state = {
    finished: false,
    readerGotBytes: () => release(),
    client: {
      async downloadReportToFile(_p: unknown, sink: string | DownloadSink, options?: DownloadToFileOptions) {
        if (typeof sink === 'string') throw new Error('a spool is expected');
        await tick();
        options?.onAttempt?.(1);
        await sink.restart();
        let written = 0;
        for (const piece of pieces) {
          await sink.write(Buffer.from(piece));
          written += Buffer.byteLength(piece);
          options?.onChunk?.(written);
          // Each piece stands for one block of the digest.
          options?.onDigestBlock?.(pieces.indexOf(piece), blockOf(piece));
          await tick();
          if (scriptOptions.waitForReader && written === Buffer.byteLength(pieces[0]!)) await gate;
        }
        await sink.written();
        state.finished = true;
        return result(Buffer.from(pieces.join('')));
      },
    },
  };
  return state;
}

/** Everything the reader hands on, and how many chunks came before the download had finished. */
async function readNoting(
  chunks: AsyncIterable<Buffer>,
  script: { finished: boolean; readerGotBytes(): void },
): Promise<{ read: string; seenBeforeEnd: number }> {
  const parts: Buffer[] = [];
  let seenBeforeEnd = 0;
  for await (const chunk of chunks) {
    if (!script.finished) seenBeforeEnd++;
    parts.push(chunk);
    script.readerGotBytes();
  }
  return { read: Buffer.concat(parts).toString(), seenBeforeEnd };
}
