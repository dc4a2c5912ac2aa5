/**
 * followDownload against scripted downloads: the moments at which the part file appears, grows,
 * is renamed and the download settles are chosen here, including the ones a real download only
 * hits now and then (a download that finishes while the reader is opening the part file).
 */
import { mkdtemp, rename, rm, writeFile, appendFile } from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DownloadToFileOptions, DownloadToFileResult } from '../../../src/api/index.js';
import { followDownload } from '../../../src/extract/followed-download.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cybs-follow-unit-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const params = { reportName: 'R', reportDate: '2024-03-01' };
const result = (bytes: number): DownloadToFileResult => ({ bytes, contentType: 'text/csv', attempts: 1 });
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

async function readAll(chunks: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return Buffer.concat(parts);
}

describe('followDownload (scripted downloads)', () => {
  it('does not wait forever when the download finishes while the reader opens the part file', async () => {
    const path = join(dir, 'fast.csv');
    const data = Buffer.from('a,b\r\n1,2\r\n');
    const client = {
      downloadReportToFile(_p: unknown, file: string, options?: DownloadToFileOptions) {
        options?.onAttempt?.(1);
        // Complete at once: the part file never exists when the reader looks for it.
        writeFileSync(file, data);
        return new Promise<DownloadToFileResult>((resolve) =>
          setImmediate(() => resolve(result(data.length))),
        );
      },
    };
    const download = followDownload(client, params, path, { readSize: 4 });
    expect((await readAll(download.chunks())).equals(data)).toBe(true);
    await download.stop();
  });

  it('waits for the first attempt, follows the part file as it grows, then reads to the end', async () => {
    const path = join(dir, 'growing.csv');
    const pieces = ['header\r\n', 'row 1\r\n', 'row 2 is longer\r\n', 'row 3\r\n'].map((s) => Buffer.from(s));
    let written = 0;
    const client = {
      async downloadReportToFile(_p: unknown, file: string, options?: DownloadToFileOptions) {
        await tick();
        options?.onAttempt?.(1);
        await writeFile(`${file}.part`, '');
        for (const piece of pieces) {
          await appendFile(`${file}.part`, piece);
          written += piece.length;
          options?.onChunk?.(written);
          await tick();
        }
        await rename(`${file}.part`, file);
        return result(written);
      },
    };
    const download = followDownload(client, params, path, { readSize: 8 });
    const read = await readAll(download.chunks());
    expect(read.equals(Buffer.concat(pieces))).toBe(true);
    await download.stop();
  });

  it('with startAfter, reads a file smaller than that only once it is complete', async () => {
    const path = join(dir, 'after.csv');
    const pieces = ['header\r\n', 'row 1\r\n', 'row 2\r\n'].map((s) => Buffer.from(s));
    let finished = false;
    const client = {
      async downloadReportToFile(_p: unknown, file: string, options?: DownloadToFileOptions) {
        options?.onAttempt?.(1);
        await writeFile(`${file}.part`, '');
        let written = 0;
        for (const piece of pieces) {
          await appendFile(`${file}.part`, piece);
          written += piece.length;
          options?.onChunk?.(written);
          await tick();
        }
        await rename(`${file}.part`, file);
        finished = true;
        return result(written);
      },
    };
    const download = followDownload(client, params, path, { readSize: 4, startAfter: 1000 });
    const seen: boolean[] = [];
    const parts: Buffer[] = [];
    for await (const chunk of download.chunks()) {
      seen.push(finished);
      parts.push(chunk);
    }
    expect(Buffer.concat(parts).equals(Buffer.concat(pieces))).toBe(true);
    expect(seen.every((f) => f)).toBe(true);
    await download.stop();
  });

  it('hands on a file smaller than one read once the download has finished', async () => {
    const path = join(dir, 'small.csv');
    const client = {
      async downloadReportToFile(_p: unknown, file: string, options?: DownloadToFileOptions) {
        options?.onAttempt?.(1);
        await writeFile(`${file}.part`, 'x\r\n');
        options?.onChunk?.(3);
        await tick();
        await rename(`${file}.part`, file);
        return result(3);
      },
    };
    const download = followDownload(client, params, path, { readSize: 1024 });
    expect((await readAll(download.chunks())).toString()).toBe('x\r\n');
    await download.stop();
  });
});
