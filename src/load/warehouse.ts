import { chmod, lstat, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { from as copyFromStream } from 'pg-copy-streams';
import { CybsError, isCybsError } from '../errors.js';
import { redactUrlPasswords } from '../observability/redact.js';
import { isConnectionLost, LOAD_ERROR_CODES } from './load-errors.js';
import { Mutex, PGliteDialect } from './pglite-dialect.js';

/** Kysely over an untyped schema: table shapes come from data (report headers), not from code. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Db = Kysely<any>;

export type WarehouseKind = 'postgres' | 'pglite';

/** One connection, held for a unit of work: its `db` and its `copyFrom` share one session. */
export interface WarehouseSession {
  readonly db: Db;
  /**
   * Run `COPY … FROM STDIN` with the given bytes. Each chunk must end on a row boundary (the embedded
   * warehouse copies in slices). Resolves to the number of rows copied.
   */
  copyFrom(
    statement: string,
    chunks: AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>,
  ): Promise<number>;
}

export interface Warehouse {
  readonly kind: WarehouseKind;
  /** A pool-level Kysely instance for ordinary queries. */
  readonly db: Db;
  /** Where the data is, without credentials (for messages). */
  readonly location: string;
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
  /** PostgreSQL URL; when absent, the embedded PGlite database at `path`. */
  url?: string | undefined;
  path: string;
  /** Pool size on PostgreSQL. */
  maxConnections?: number;
  applicationName?: string;
}

const DATE_OID = 1082;

/** Open the warehouse: PostgreSQL through pg when a URL is given, embedded PGlite otherwise. */
export async function openWarehouse(config: WarehouseConfig): Promise<Warehouse> {
  return config.url ? openPostgres(config.url, config) : openPglite(config.path);
}

function openPostgres(url: string, config: WarehouseConfig): Warehouse {
  const types = {
    getTypeParser: (oid: number, format?: 'text' | 'binary') =>
      oid === DATE_OID ? (value: string) => value : pg.types.getTypeParser(oid, format),
  };
  const pool = new pg.Pool({
    connectionString: url,
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
  return {
    kind: 'postgres',
    db,
    location: redactUrlPasswords(url),
    async session(fn) {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw connectError(url, error);
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
          async copyFrom(statement, chunks) {
            const stream = client.query(copyFromStream(statement));
            try {
              await pipeline(Readable.from(chunks, { objectMode: false }), stream);
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
        connectionString: url,
        application_name: config.applicationName ?? 'cybs-etl',
        options: '-c default_transaction_read_only=on',
        types,
      });
      // A server that goes away must reject the query, not crash the process.
      client.on('error', () => {});
      try {
        await client.connect();
      } catch (error) {
        throw connectError(url, error);
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
          connectionString: url,
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
        throw connectError(url, error);
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
    },
  };
}

/**
 * Directories 0700 and files 0600 under `root`, itself included. The embedded warehouse holds names,
 * e-mails and addresses, and PGlite writes the files it unpacks at creation with mode 0666.
 */
async function makePrivate(root: string): Promise<void> {
  const visit = async (path: string): Promise<void> => {
    const info = await lstat(path);
    if (info.isSymbolicLink()) return;
    const want = info.isDirectory() ? 0o700 : 0o600;
    if ((info.mode & 0o777) !== want) await chmod(path, want);
    if (info.isDirectory()) for (const name of await readdir(path)) await visit(join(path, name));
  };
  await visit(root);
}

async function openPglite(path: string): Promise<Warehouse> {
  await mkdir(path, { recursive: true, mode: 0o700 });
  await makePrivate(path);
  // Loaded only when used: a PostgreSQL deployment never pays for the embedded database's module.
  const { PGlite } = await import('@electric-sql/pglite');
  const pglite = new PGlite({ dataDir: path, parsers: { [DATE_OID]: (value: string) => value } });
  try {
    await pglite.waitReady;
  } catch (error) {
    throw new CybsError(
      'LOAD_CONNECT',
      `Cannot open the embedded warehouse at ${path}: ${(error as Error).message}`,
      {
        stage: 'load',
        cause: error,
      },
    );
  }
  await makePrivate(path);
  const mutex = new Mutex();
  const db: Db = new Kysely({ dialect: new PGliteDialect(pglite, mutex) });
  return {
    kind: 'pglite',
    db,
    location: path,
    async session(fn) {
      const release = await mutex.acquire();
      const sessionDb: Db = new Kysely({ dialect: new PGliteDialect(pglite, null) });
      try {
        return await fn({
          db: sessionDb,
          async copyFrom(statement, chunks) {
            let rows = 0;
            let buffered: (Uint8Array | string)[] = [];
            let size = 0;
            const flush = async () => {
              if (size === 0) return;
              const blob = new Blob(buffered as (string | Uint8Array<ArrayBuffer>)[]);
              buffered = [];
              size = 0;
              const result = await pglite.query(
                statement.replace(/\bFROM\s+STDIN\b/i, "FROM '/dev/blob'"),
                [],
                { blob },
              );
              rows += result.affectedRows ?? 0;
            };
            for await (const chunk of chunks) {
              buffered.push(chunk);
              size += typeof chunk === 'string' ? chunk.length : chunk.byteLength;
              if (size >= 8 * 1024 * 1024) await flush();
            }
            await flush();
            return rows;
          },
        });
      } finally {
        release();
      }
    },
    async readOnlyQuery(text) {
      const release = await mutex.acquire();
      try {
        await pglite.exec('begin transaction read only; select 1;');
        try {
          return (await pglite.query<Record<string, unknown>>(text)).rows;
        } finally {
          await pglite.exec('rollback');
        }
      } finally {
        release();
      }
    },
    async holdAdvisoryLock(space, key) {
      // One session: the lock lives in it until released or the process ends.
      const run = async (text: string) => {
        const release = await mutex.acquire();
        try {
          await pglite.query(text, [space, key]);
        } finally {
          release();
        }
      };
      await run('select pg_advisory_lock($1, hashtext($2))');
      return () => run('select pg_advisory_unlock($1, hashtext($2))').catch(() => {});
    },
    async close() {
      await pglite.close();
      await makePrivate(path);
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
