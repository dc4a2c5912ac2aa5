import type { PGlite } from '@electric-sql/pglite';
import { CompiledQuery, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely';
import type { DatabaseConnection, Dialect, Driver, Kysely, QueryResult, TransactionSettings } from 'kysely';

/**
 * A Kysely dialect over an embedded PGlite database. PGlite is one session, so connections are
 * handed out one at a time (a FIFO mutex): a transaction owns the database until it ends, and a
 * concurrent caller waits instead of interleaving statements into someone else's transaction.
 */
export class PGliteDialect implements Dialect {
  /** `mutex` null: the caller already holds the database (a pinned session). */
  constructor(
    private readonly pglite: PGlite,
    private readonly mutex: Mutex | null = new Mutex(),
  ) {}
  createAdapter() {
    return new PostgresAdapter();
  }
  createDriver(): Driver {
    return new PGliteDriver(this.pglite, this.mutex);
  }
  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db);
  }
  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }
}

export class Mutex {
  private tail: Promise<void> = Promise.resolve();
  async acquire(): Promise<() => void> {
    let release!: () => void;
    const next = new Promise<void>((resolve) => (release = resolve));
    const previous = this.tail;
    this.tail = previous.then(() => next);
    await previous;
    return release;
  }
}

class PGliteDriver implements Driver {
  private readonly releases = new Map<DatabaseConnection, () => void>();
  constructor(
    private readonly pglite: PGlite,
    private readonly mutex: Mutex | null,
  ) {}
  async init(): Promise<void> {
    await this.pglite.waitReady;
  }
  async acquireConnection(): Promise<DatabaseConnection> {
    const release = this.mutex ? await this.mutex.acquire() : () => {};
    const connection = new PGliteConnection(this.pglite);
    this.releases.set(connection, release);
    return connection;
  }
  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const iso = settings.isolationLevel ? ` isolation level ${settings.isolationLevel}` : '';
    await connection.executeQuery(CompiledQuery.raw(`begin${iso}`));
  }
  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }
  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }
  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const release = this.releases.get(connection);
    this.releases.delete(connection);
    release?.();
  }
  async destroy(): Promise<void> {
    // The owner of the PGlite instance closes it.
  }
}

export class PGliteConnection implements DatabaseConnection {
  constructor(private readonly pglite: PGlite) {}
  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const params = compiledQuery.parameters as unknown[];
    if (params.length === 0) {
      // exec() runs the simple protocol, which accepts several statements (migrations).
      const results = await this.pglite.exec(compiledQuery.sql);
      const last = results[results.length - 1];
      const out: QueryResult<R> = { rows: (last?.rows ?? []) as R[] };
      if (last?.affectedRows !== undefined) return { ...out, numAffectedRows: BigInt(last.affectedRows) };
      return out;
    }
    const result = await this.pglite.query<R>(compiledQuery.sql, params);
    const out: QueryResult<R> = { rows: result.rows };
    if (result.affectedRows !== undefined) return { ...out, numAffectedRows: BigInt(result.affectedRows) };
    return out;
  }
  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('Streaming queries are not supported on the embedded PGlite warehouse.');
  }
}
