/**
 * Rendered report files (and on-demand pages of complete windows) kept on disk, so that a report
 * is served at the speed of a stored file, as the real service serves its reports, instead of at
 * the speed of rendering it row by row (slower than the loader it is meant to feed). Opt-in
 * (`cacheReports` of startSimulator): the benchmark uses it so that it measures the loader.
 *
 * A file is rendered once, on its first download, into a temporary file that is renamed when
 * complete; later downloads of the same report stream that file. Downloads with a malformed-row
 * fault are never cached. The directory belongs to one simulator and is removed when it closes.
 *
 * On-demand bodies (a few MB each) are kept in memory instead, up to MEMORY_BUDGET bytes in all
 * (then on disk) and sent whole: streaming each few-MB page from its file through the thread pool
 * costs the simulator CPU that the loader and PostgreSQL, on the same machine, need.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { once } from 'node:events';

/** Bytes of on-demand bodies kept in memory (ReportFileCache.text), in all, unless told otherwise. */
const MEMORY_BUDGET = 1 << 30;

export class ReportFileCache {
  private readonly rendering = new Map<string, Promise<string>>();
  /** On-demand bodies kept in memory, and their bytes in all. */
  private readonly kept = new Map<string, Buffer>();
  private keptBytes = 0;
  /** Keys whose render gave no body. */
  private readonly empty = new Set<string>();

  private constructor(
    private readonly dir: string,
    private readonly memoryBudget: number,
  ) {}

  static async create(options: { memoryBudget?: number } = {}): Promise<ReportFileCache> {
    return new ReportFileCache(
      await mkdtemp(path.join(tmpdir(), 'cybs-sim-reports-')),
      options.memoryBudget ?? MEMORY_BUDGET,
    );
  }

  /**
   * The body of the report identified by `identity` (everything its content depends on), rendered
   * by `render` the first time.
   */
  async body(identity: unknown, render: () => AsyncIterable<string>): Promise<AsyncIterable<Buffer>> {
    const key = createHash('sha256').update(JSON.stringify(identity)).digest('hex').slice(0, 32);
    let file = this.rendering.get(key);
    if (file === undefined) {
      file = this.renderToFile(key, render);
      this.rendering.set(key, file);
      file.catch(() => this.rendering.delete(key));
    }
    return createReadStream(await file, { highWaterMark: 256 * 1024 });
  }

  /**
   * A body rendered as one string by `render` the first time (undefined: there is none, which is
   * remembered too), then served from memory (or, past the memory budget, from its file): the
   * on-demand pages of complete windows.
   */
  async text(
    identity: unknown,
    render: () => string | undefined,
  ): Promise<Buffer | AsyncIterable<Buffer> | undefined> {
    const key = createHash('sha256').update(JSON.stringify(identity)).digest('hex').slice(0, 32);
    if (this.empty.has(key)) return undefined;
    const kept = this.kept.get(key);
    if (kept !== undefined) return kept;
    let file = this.rendering.get(key);
    if (file === undefined) {
      const body = render();
      if (body === undefined) {
        this.empty.add(key);
        return undefined;
      }
      const bytes = Buffer.from(body, 'utf8');
      if (this.keptBytes + bytes.length <= this.memoryBudget) {
        this.kept.set(key, bytes);
        this.keptBytes += bytes.length;
        return bytes;
      }
      file = this.renderToFile(key, async function* () {
        yield bytes;
      });
      this.rendering.set(key, file);
      file.catch(() => this.rendering.delete(key));
    }
    return createReadStream(await file, { highWaterMark: 256 * 1024 });
  }

  async close(): Promise<void> {
    this.kept.clear();
    this.keptBytes = 0;
    await Promise.allSettled([...this.rendering.values()]);
    await rm(this.dir, { recursive: true, force: true });
  }

  private async renderToFile(key: string, render: () => AsyncIterable<string | Buffer>): Promise<string> {
    const target = path.join(this.dir, `${key}.report`);
    const exists = await stat(target).then(
      () => true,
      () => false,
    );
    if (exists) return target;
    const partial = `${target}.part`;
    const out = createWriteStream(partial);
    try {
      for await (const chunk of render()) {
        if (!out.write(chunk)) await once(out, 'drain');
      }
      out.end();
      await once(out, 'finish');
    } catch (error) {
      out.destroy();
      await rm(partial, { force: true });
      throw error;
    }
    await rename(partial, target);
    return target;
  }
}
