/**
 * Streamed answers: report files and any response whose body the caller reads itself. The
 * transport retries such a request only up to its response headers; a report download whose body
 * breaks later is started over whole (withDownload), and downloadToFile writes one to a file
 * through a part file that each attempt truncates.
 */
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { Logger } from '../observability/logger.js';
import { DOWNLOAD_ACCEPT } from './endpoints.js';
import { ApiError, createTransportError, isApiError, isTransientTransportError } from './errors.js';
import { FileDigester } from '../spool/file-digest.js';
import type { FileDigest } from '../spool/file-digest.js';
import { releaseBuffer } from '../spool/release-buffer.js';
import { isJsonContentType } from './json-body.js';
import { decideRetry } from './retry.js';
import type { RetryConfig } from './retry.js';
import { buildRequestTarget, chunksWithinDeadline, contentLengthOf } from './transport.js';
import type { ApiEvent, ApiRequest, ResponseBody, Transport } from './transport.js';
import type { RequestOptions } from './types.js';

export interface StreamedResponse {
  status: number;
  contentType: string | undefined;
  headers: Record<string, string | string[] | undefined>;
  body: Readable;
}

/** A report file being downloaded: the body is a Node Readable that must be consumed or destroyed. */
export interface ReportDownload extends StreamedResponse {
  /** 1 for the first download, 2 for the first restart, … (withDownload). */
  attempt: number;
}

/** A report download whose body may be lent (ApiRequest.lentBody): downloadToFile's. */
interface BodyDownload extends Omit<ReportDownload, 'body'> {
  body: ResponseBody;
}

/** The body of a request that was not lentBody: undici's Readable. */
function asReadable(body: ResponseBody): Readable {
  if (!(body instanceof Readable)) throw new Error('a lent body where a Readable was expected');
  return body;
}

export interface DownloadToFileResult {
  bytes: number;
  contentType: string | undefined;
  attempts: number;
  /** The complete file's digest (of the attempt that completed). */
  digest: FileDigest;
}

/** downloadToFile's options: for a reader that follows the file while it is written. */
export interface DownloadToFileOptions extends RequestOptions {
  /** Called as an attempt starts, before the part file is (re)created and truncated. */
  onAttempt?: (attempt: number) => void;
  /**
   * Called after each body chunk is handed to the file, with the bytes of this attempt written to
   * the file so far (the chunk itself may not be among them yet).
   */
  onChunk?: (written: number) => void;
  /** Called as each block of the file's digest (FileDigest.blocks) completes, in this attempt. */
  onDigestBlock?: (index: number, block: string) => void;
}

/** What starting a broken download over takes: the transport, the retry policy and the clock. */
export interface DownloadDeps {
  transport: Transport;
  retry: RetryConfig;
  /** The body's grace period before its deadline (config api.bodyTimeoutMs). */
  bodyTimeoutMs: number;
  now: () => number;
  random: () => number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  logger?: Logger | undefined;
  onEvent?: ((event: ApiEvent) => void) | undefined;
}

/**
 * What a report download's Content-Type says it is when that is not the report asked for (`accept`):
 * an HTML page, a JSON document, or the other report format. Undefined when it may be the report
 * (no Content-Type, a CSV or XML type as asked, a generic type such as text/plain): the body's own
 * head is checked after (src/extract/report-identity.ts).
 */
export function downloadContentTypeProblem(
  contentType: string | undefined,
  accept: string,
): string | undefined {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === '') return undefined;
  if (type.includes('html')) return `an HTML page (Content-Type ${type})`;
  if (isJsonContentType(type)) return `a JSON document (Content-Type ${type})`;
  const asked = accept.toLowerCase();
  if (/[/+]xml$/.test(type) && !asked.includes('xml')) return `an XML document (Content-Type ${type})`;
  if (type.includes('csv') && !asked.includes('csv')) return `a CSV file (Content-Type ${type})`;
  return undefined;
}

/** Send a request and hand out the response with its body unread. */
export function streamResponse(transport: Transport, request: ApiRequest): Promise<StreamedResponse> {
  // The handler returns the unread body: retries cover the request up to the response headers.
  return transport.execute(request, (response) =>
    Promise.resolve({
      status: response.status,
      contentType: response.contentType,
      headers: response.headers,
      body: asReadable(response.body),
    }),
  );
}

/**
 * A report download's response, with its body unread. A response whose media type says it is not
 * the report (a gateway's or proxy's HTML page served with 200, a JSON or XML error document) is
 * refused before its body is read, and retried as a transient failure.
 */
export async function streamReportDownload(
  transport: Transport,
  request: ApiRequest,
): Promise<StreamedResponse> {
  const response = await streamReportBody(transport, request);
  return { ...response, body: asReadable(response.body) };
}

/** streamReportDownload, its body a LentBody when the request is lentBody. */
function streamReportBody(transport: Transport, request: ApiRequest): Promise<Omit<BodyDownload, 'attempt'>> {
  return transport.execute(request, async (response) => {
    const wrong = downloadContentTypeProblem(response.contentType, request.accept ?? DOWNLOAD_ACCEPT);
    if (wrong === undefined) {
      return {
        status: response.status,
        contentType: response.contentType,
        headers: response.headers,
        body: response.body,
      };
    }
    await response.body.dump().catch(() => {});
    const path = buildRequestTarget(transport.target.basePath, request.path, request.query);
    throw new ApiError({
      code: 'API_INVALID_RESPONSE',
      method: request.method,
      path,
      status: response.status,
      retryable: true,
      message: `CyberSource answered ${request.method} ${path} with status ${response.status} and ${wrong} instead of the report file (asked for ${request.accept ?? DOWNLOAD_ACCEPT}).`,
    });
  });
}

/**
 * Download and hand the stream to `consumer`; when the body breaks mid-way (socket error, body
 * timeout) the whole download is restarted, within the retry policy, and `consumer` is called
 * again with a fresh stream. The consumer MUST start over on every call: rows of a broken attempt
 * must not survive. Its own failures (its database connection dropping included) are rethrown.
 */
export function withDownload<T>(
  deps: DownloadDeps,
  request: ApiRequest,
  consumer: (download: ReportDownload) => Promise<T>,
): Promise<T> {
  return withBodyDownload(deps, { ...request, lentBody: undefined }, (download) =>
    consumer({ ...download, body: asReadable(download.body) }),
  );
}

/** withDownload, its body a LentBody when the request is lentBody. */
async function withBodyDownload<T>(
  deps: DownloadDeps,
  request: ApiRequest,
  consumer: (download: BodyDownload) => Promise<T>,
): Promise<T> {
  const { transport, now } = deps;
  const startedAt = now();
  for (let attempt = 1; ; attempt++) {
    const response = await streamReportBody(transport, request);
    let bodyError: unknown;
    response.body.once('error', (error: unknown) => (bodyError = error));
    try {
      return await consumer({ ...response, attempt });
    } catch (error) {
      // Only a break of the download stream itself restarts.
      const broken = bodyError;
      if (broken === undefined || !isTransientTransportError(broken) || request.signal?.aborted) throw error;
      const apiError = isApiError(broken)
        ? broken
        : createTransportError({
            method: 'GET',
            path: buildRequestTarget(transport.target.basePath, request.path, request.query),
            host: transport.target.host,
            error: broken,
          });
      const decision = decideRetry({
        error: apiError,
        attempt,
        elapsedMs: now() - startedAt,
        nowMs: now(),
        policy: deps.retry,
        random: deps.random,
      });
      if (!decision.retry) throw apiError;
      deps.onEvent?.({
        type: 'retry',
        operation: 'downloadReport',
        method: 'GET',
        path: request.path,
        attempt,
        delayMs: decision.delayMs,
        errorCode: apiError.code,
      });
      deps.logger?.info(
        { path: request.path, attempt, code: apiError.code, delayMs: decision.delayMs },
        'report download broke mid-stream; starting it over',
      );
      await deps.sleep(decision.delayMs, request.signal);
    } finally {
      if (!response.body.destroyed) response.body.destroy();
    }
  }
}

/**
 * Where a download's bytes go instead of a file (a ByteSpool: in memory while small): each
 * attempt starts it over, and it takes the body's chunks one at a time.
 */
export interface DownloadSink {
  /** Drop what an earlier attempt wrote. */
  restart(): Promise<void>;
  /**
   * The attempt's body will be `bytes` long (its content-length), told before its first chunk: a
   * sink that holds small bodies in memory can put a large one straight where it will end up.
   */
  expect?(bytes: number): void;
  /** Take a chunk; resolves when the sink can take the next. */
  write(chunk: Buffer): Promise<void>;
  /** Resolves once every chunk taken is complete. */
  written(): Promise<void>;
  /** Bytes of this attempt complete so far. */
  readonly bytes: number;
}

/**
 * Download to `target`: a file, through `<file>.part` (truncated by each attempt, renamed when
 * complete, removed on failure), or a DownloadSink; restarting on breaks (withDownload).
 * `onAttempt` and `onChunk` let a reader follow the bytes as they arrive
 * (src/extract/followed-download.ts).
 */
export async function downloadToFile(
  deps: DownloadDeps,
  request: ApiRequest,
  target: string | DownloadSink,
  options?: DownloadToFileOptions,
): Promise<DownloadToFileResult> {
  if (typeof target !== 'string') return downloadToSink(deps, request, target, options);
  const filePath = target;
  const partPath = `${filePath}.part`;
  try {
    const result = await withBodyDownload(deps, { ...request, lentBody: 'alone' }, async (download) => {
      options?.onAttempt?.(download.attempt);
      // flags 'w' truncates: a restarted download never appends to a broken one.
      const file = createWriteStream(partPath, { flags: 'w' });
      try {
        const onChunk = options?.onChunk;
        const digester = new FileDigester(options?.onDigestBlock);
        const blocks = new BlockWriter(
          (block) =>
            new Promise<void>((resolve, reject) =>
              file.write(block, (error) => (error ? reject(error) : resolve())),
            ),
          () => onChunk?.(file.bytesWritten),
        );
        try {
          for await (const chunk of bodyChunks(
            chunksWithinDeadline(download.body, {
              contentLength: contentLengthOf(download.headers),
              graceMs: deps.bodyTimeoutMs,
            }),
            digester,
          ))
            await blocks.add(chunk);
          await blocks.finish();
        } finally {
          await blocks.idle();
        }
        blocks.release();
        await new Promise<void>((resolve, reject) => {
          file.once('error', reject);
          file.end(resolve);
        });
        return {
          bytes: file.bytesWritten,
          contentType: download.contentType,
          attempts: download.attempt,
          digest: digester.digest(),
        };
      } finally {
        if (!file.closed) file.destroy();
      }
    });
    await rename(partPath, filePath);
    return result;
  } catch (error) {
    await rm(partPath, { force: true });
    throw error;
  }
}

async function downloadToSink(
  deps: DownloadDeps,
  request: ApiRequest,
  sink: DownloadSink,
  options?: DownloadToFileOptions,
): Promise<DownloadToFileResult> {
  return withBodyDownload(deps, { ...request, lentBody: 'alone' }, async (download) => {
    options?.onAttempt?.(download.attempt);
    await sink.restart();
    const contentLength = contentLengthOf(download.headers);
    if (contentLength !== undefined) sink.expect?.(contentLength);
    const onChunk = options?.onChunk;
    const digester = new FileDigester(options?.onDigestBlock);
    const chunks = bodyChunks(
      chunksWithinDeadline(download.body, { contentLength, graceMs: deps.bodyTimeoutMs }),
      digester,
    );
    const blocks = new BlockWriter(
      async (block) => {
        await sink.write(block);
        await sink.written();
      },
      () => onChunk?.(sink.bytes),
    );
    try {
      for await (const chunk of chunks) await blocks.add(chunk);
      await blocks.finish();
    } finally {
      await blocks.idle();
    }
    blocks.release();
    await sink.written();
    return {
      bytes: sink.bytes,
      contentType: download.contentType,
      attempts: download.attempt,
      digest: digester.digest(),
    };
  });
}

/** Bytes of each block a download's chunks are gathered in before they are written. */
const WRITE_BLOCK_BYTES = 256 * 1024;

/**
 * A download's chunks gathered into two blocks taken in turn: a full block is written while the
 * next fills, and filled again once its write is complete. The body lends its chunks (each is
 * copied before the next is asked for), and the writes are few and large, one at a time.
 */
class BlockWriter {
  private readonly blocks = [
    Buffer.allocUnsafeSlow(WRITE_BLOCK_BYTES),
    Buffer.allocUnsafeSlow(WRITE_BLOCK_BYTES),
  ];
  private current = 0;
  private filled = 0;
  /** The write of the other block, if any (its block is busy until it completes). */
  private writing: Promise<void> = Promise.resolve();

  constructor(
    /** Write a block; resolves once its bytes are written (the block may then be reused). */
    private readonly write: (block: Buffer) => Promise<void>,
    /** Called after each block's write completes. */
    private readonly written: () => void,
  ) {}

  async add(chunk: Buffer): Promise<void> {
    for (let at = 0; at < chunk.length;) {
      const block = this.blocks[this.current]!;
      const n = chunk.copy(block, this.filled, at);
      at += n;
      this.filled += n;
      if (this.filled === block.length) await this.send();
    }
  }

  /** Write what is gathered, and wait for every write. */
  async finish(): Promise<void> {
    if (this.filled > 0) await this.send();
    await this.writing;
  }

  /** Give back the blocks (releaseBuffer): after finish(), when every write is complete. */
  release(): void {
    for (const block of this.blocks) releaseBuffer(block);
  }

  /**
   * Resolves once no write is in flight, failed or not: an attempt that ends early waits for it,
   * so that no write of a broken attempt lands after the next one restarted the file or sink.
   */
  async idle(): Promise<void> {
    await this.writing.catch(() => undefined);
  }

  private async send(): Promise<void> {
    const block = this.blocks[this.current]!.subarray(0, this.filled);
    // One write at a time, in order: the other block's write completes first.
    await this.writing;
    const writing = this.write(block).then(this.written);
    // Awaited by the next send or by finish(), where a failure surfaces; never unhandled.
    writing.catch(() => undefined);
    this.writing = writing;
    this.current = 1 - this.current;
    this.filled = 0;
  }
}

/**
 * A response body's chunks, pulled one at a time (backpressure through the async iterator), each
 * passed to `digester` on its way.
 */
async function* bodyChunks(body: AsyncIterable<Buffer>, digester: FileDigester): AsyncGenerator<Buffer> {
  for await (const chunk of body) {
    digester.update(chunk);
    yield chunk;
  }
}
