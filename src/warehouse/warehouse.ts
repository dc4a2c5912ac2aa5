import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import type { Writable } from 'node:stream';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { from as copyFromStream } from 'pg-copy-streams';
import { CybsError, isCybsError } from '../errors.js';
import { redactUrlPasswords } from '../observability/redact.js';
import { isConnectionLost, LOAD_ERROR_CODES } from './database-errors.js';
import { openEmbeddedServer } from './embedded-server.js';

/** Kysely over an untyped schema: table shapes come from data (report headers), not from code. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Db = Kysely<any>;

/**
 * Where the warehouse runs: a PostgreSQL server of the user's (`DATABASE_URL`), or the embedded one
 * cybs-etl runs itself (embedded-server.ts). Both are PostgreSQL and take the same code paths; the
 * kind only changes messages.
 */
export type WarehouseKind = 'postgres' | 'embedded';

/** One connection, held for a unit of work: its `db` and its `copyFrom` share one session. */
export interface WarehouseSession {
  readonly db: Db;
  /**
   * Run `COPY … FROM STDIN` with the given bytes. Resolves to the number of rows copied.
   * `inTurn`: each chunk is written out to the connection (its bytes handed to the system) before
   * the next is asked for, so a producer may fill the same buffer again for the next chunk.
   */
  copyFrom(
    statement: string,
    chunks: AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>,
    options?: { inTurn?: boolean },
  ): Promise<number>;
}

export interface Warehouse {
  readonly kind: WarehouseKind;
  /** A pool-level Kysely instance for ordinary queries. */
  readonly db: Db;
  /** Where the data is, without credentials (for messages). */
  readonly location: string;
  /**
   * How to open another connection to the same database (the job queue opens its own pool). It may
   * hold a password: never log it.
   */
  readonly connection: Readonly<pg.ClientConfig>;
  /** Run `fn` on one dedicated connection (needed for COPY + merge in one transaction). */
  session<T>(fn: (session: WarehouseSession) => Promise<T>): Promise<T>;
  /**
   * Run one statement (extended protocol, so a second statement is a syntax error) inside a
   * read-only transaction whose first snapshot is already taken (so the text cannot switch it to
   * read write), then roll back. On PostgreSQL the connection's default is read-only as well.
   */
  readOnlyQuery(text: string): Promise<Record<string, unknown>[]>;
  /**
   * Hold the session-level advisory lock (`space`, hashtext(`key`)) until the returned release is
   * called or this process ends: the server drops it with the process's connection, so others can
   * tell a live holder from a dead one (pg_locks). On PostgreSQL a connection of its own, taken
   * again if it is lost.
   */
  holdAdvisoryLock(space: number, key: string): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export interface WarehouseConfig {
  /** PostgreSQL URL; when absent, the embedded PostgreSQL server on the data directory `path`. */
  url?: string | undefined;
  path: string;
  /** Pool size on PostgreSQL. */
  maxConnections?: number;
  applicationName?: string;
}

const DATE_OID = 1082;

/** Open the warehouse: the PostgreSQL server at the URL, or the embedded server (started if need be). */
export async function openWarehouse(config: WarehouseConfig): Promise<Warehouse> {
  if (config.url) {
    const url = config.url;
    return openPostgres({ connectionString: url }, config, {
      kind: 'postgres',
      location: redactUrlPasswords(url),
      connectError: (error) => connectError(url, error),
    });
  }
  const server = await openEmbeddedServer(config.path, config.applicationName ?? 'cybs-etl');
  return openPostgres(server.connection, config, {
    kind: 'embedded',
    location: server.dataDir,
    connectError: (error) =>
      new CybsError(
        'LOAD_CONNECT',
        `Cannot connect to the embedded warehouse at ${server.dataDir}: ${(error as Error).message}`,
        { stage: 'load', retryable: true, cause: error },
      ),
    release: () => server.release(),
  });
}

interface ServerAccess {
  kind: WarehouseKind;
  location: string;
  connectError(error: unknown): CybsError;
  /** After the pool has ended (the embedded server: leave it). */
  release?: () => Promise<void>;
}

function openPostgres(connection: pg.ClientConfig, config: WarehouseConfig, access: ServerAccess): Warehouse {
  const types = {
    getTypeParser: (oid: number, format?: 'text' | 'binary') =>
      oid === DATE_OID ? (value: string) => value : pg.types.getTypeParser(oid, format),
  };
  const pool = new pg.Pool({
    ...connection,
    max: config.maxConnections ?? 10,
    application_name: config.applicationName ?? 'cybs-etl',
    types,
  });
  // A client that loses its server must never crash the process with an unhandled 'error' event:
  // idle, the pool drops it; checked out (pg emits 'error' then too, e.g. EPIPE mid-COPY), the
  // statement in flight fails with the error and the session is discarded.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const db: Db = new Kysely({ dialect: new PostgresDialect({ pool }) });
  const { connectError: failed } = access;
  return {
    kind: access.kind,
    db,
    connection,
    location: access.location,
    async session(fn) {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw failed(error);
      }
      const pinned = {
        // Kysely only calls query() and release(); release is a no-op because the session owns the client.
        connect: async () =>
          ({ query: client.query.bind(client), release: () => {} }) as unknown as pg.PoolClient,
        end: async () => {},
      };
      const sessionDb: Db = new Kysely({ dialect: new PostgresDialect({ pool: pinned }) });
      // The connection's own error when it is lost mid-session: a COPY stream cut short may only
      // say "premature close", so the cause is reported instead.
      let lost: Error | undefined;
      const onLost = (error: Error) => (lost ??= error);
      client.on('error', onLost);
      let broken = false;
      try {
        return await fn({
          db: sessionDb,
          async copyFrom(statement, chunks, options) {
            const stream = client.query(copyFromStream(statement));
            try {
              if (options?.inTurn) await writeInTurn(stream, client.connection.stream, chunks);
              else await pipeline(Readable.from(chunks, { objectMode: false }), stream);
            } catch (error) {
              throw lost ?? error;
            }
            return Number(stream.rowCount ?? 0);
          },
        });
      } catch (error) {
        broken =
          lost !== undefined ||
          isConnectionLost(error) ||
          (isCybsError(error) && error.code === LOAD_ERROR_CODES.connection);
        throw error;
      } finally {
        client.off('error', onLost);
        client.release(broken ? true : undefined);
      }
    },
    async readOnlyQuery(text) {
      const client = new pg.Client({
        ...connection,
        application_name: config.applicationName ?? 'cybs-etl',
        options: '-c default_transaction_read_only=on',
        types,
      });
      // A server that goes away must reject the query, not crash the process.
      client.on('error', () => {});
      try {
        await client.connect();
      } catch (error) {
        throw failed(error);
      }
      try {
        await client.query('begin transaction read only');
        await client.query('select 1');
        // queryMode is pg's own option (its type definitions lag behind).
        const extended = { text, queryMode: 'extended' } as pg.QueryConfig;
        const result = await client.query<Record<string, unknown>>(extended);
        await client.query('rollback');
        return result.rows;
      } finally {
        await client.end().catch(() => {});
      }
    },
    async holdAdvisoryLock(space, key) {
      let client: pg.Client | undefined;
      let released = false;
      const lock = async (): Promise<void> => {
        const next = new pg.Client({
          ...connection,
          application_name: config.applicationName ?? 'cybs-etl',
        });
        // A lost lock connection is taken again (below), never an unhandled 'error' event.
        next.on('error', () => {});
        next.on('end', () => {
          if (released || client !== next) return;
          client = undefined;
          const retry = (): void => {
            if (released) return;
            lock().catch(() => setTimeout(retry, 1000).unref());
          };
          retry();
        });
        try {
          await next.connect();
          await next.query('select pg_advisory_lock($1, hashtext($2))', [space, key]);
        } catch (error) {
          await next.end().catch(() => {});
          throw error;
        }
        if (released) await next.end().catch(() => {});
        else client = next;
      };
      try {
        await lock();
      } catch (error) {
        throw failed(error);
      }
      return async () => {
        released = true;
        const last = client;
        // Unlocked before the connection ends, so that the lock is gone when this resolves.
        await last?.query('select pg_advisory_unlock($1, hashtext($2))', [space, key]).catch(() => {});
        await last?.end().catch(() => {});
      };
    },
    async close() {
      await db.destroy();
      await access.release?.();
    },
  };
}

function connectError(url: string, error: unknown): CybsError {
  return new CybsError(
    'LOAD_CONNECT',
    `Cannot connect to PostgreSQL at ${redactUrlPasswords(url)}: ${(error as Error).message}`,
    { stage: 'load', retryable: true, cause: error },
  );
}

const NO_BYTES = Buffer.alloc(0);

/**
 * Write `chunks` into a COPY stream (pg-copy-streams) one at a time: a chunk's write completes
 * (the stream handed it to the socket), then the socket's writes complete (a socket keeps a chunk
 * it could not send at once, by reference, however small), and only then is the next chunk asked
 * for. A failure of either ends the stream as `pipeline` would: destroyed with the error (a
 * CopyFail to the server when the failure is ours), its close awaited.
 */
async function writeInTurn(
  copy: Writable,
  socket: Writable,
  chunks: AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>,
): Promise<void> {
  let failure: Error | undefined;
  let failStep: ((error: Error) => void) | undefined;
  const onError = (error: Error) => {
    failure ??= error;
    failStep?.(error);
  };
  copy.on('error', onError);
  const step = (start: (done: (error?: Error | null) => void) => void) =>
    new Promise<void>((resolve, reject) => {
      if (failure) return reject(failure);
      failStep = reject;
      start((error) => (error ? reject(error) : resolve()));
    });
  try {
    for await (const chunk of chunks) {
      await step((done) => copy.write(chunk, done));
      // A write issued now completes after every earlier one: then the chunk is sent.
      if (socket.writableLength > 0) await step((done) => socket.write(NO_BYTES, done));
    }
    await step((done) => copy.end(done));
  } catch (error) {
    const first = failure ?? error;
    if (!copy.destroyed) {
      const closed = new Promise((resolve) => copy.once('close', resolve));
      copy.destroy(first as Error);
      await closed;
    }
    throw first;
  } finally {
    failStep = undefined;
    // Late errors of a stream already failed or finished (its destroy) stay handled.
    copy.off('error', onError);
    copy.on('error', () => {});
  }
}
