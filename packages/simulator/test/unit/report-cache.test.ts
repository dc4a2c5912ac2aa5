import { afterEach, describe, expect, it } from 'vitest';
import { ReportFileCache } from '../../src/render/report-cache.js';

async function bytesOf(body: Buffer | AsyncIterable<Buffer> | undefined): Promise<Buffer | undefined> {
  if (body === undefined || Buffer.isBuffer(body)) return body;
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

describe('ReportFileCache.text', () => {
  let cache: ReportFileCache | undefined;
  afterEach(async () => {
    await cache?.close();
    cache = undefined;
  });

  it('renders a body once and serves the same bytes from memory, then from disk past the memory budget', async () => {
    // Room in memory for the first body (9 bytes) only.
    cache = await ReportFileCache.create({ memoryBudget: 12 });
    let renders = 0;
    const render = (text: string) => () => {
      renders++;
      return text;
    };
    const first = await cache.text({ page: 1 }, render('{"a":"é"}'));
    expect(Buffer.isBuffer(first)).toBe(true);
    expect(first?.toString('utf8')).toBe('{"a":"é"}');
    expect(await bytesOf(await cache.text({ page: 1 }, render('changed')))).toEqual(first);

    const second = await cache.text({ page: 2 }, render('{"b":[1,2,3]}'));
    expect(Buffer.isBuffer(second)).toBe(false);
    expect((await bytesOf(second))?.toString('utf8')).toBe('{"b":[1,2,3]}');
    expect((await bytesOf(await cache.text({ page: 2 }, render('changed'))))?.toString('utf8')).toBe(
      '{"b":[1,2,3]}',
    );
    expect(renders).toBe(2);
  });

  it('remembers a body that has no data', async () => {
    cache = await ReportFileCache.create();
    let renders = 0;
    const none = () => {
      renders++;
      return undefined;
    };
    expect(await cache.text({ page: 3 }, none)).toBeUndefined();
    expect(await cache.text({ page: 3 }, none)).toBeUndefined();
    expect(renders).toBe(1);
  });
});
