import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Migrator, sql } from 'kysely';
import type { Migration, MigrationProvider, MigrationResultSet } from 'kysely';
import { CybsError, errorMessage } from '../errors.js';
import { databaseErrorFix, sqlState } from './database-errors.js';
import { projectRoot } from '../paths.js';
import type { Db } from './warehouse.js';

const MIGRATION_FILE = /^(\d{4})_[a-z0-9_]+\.sql$/;

/** Forward-only migrations: every `NNNN_name.sql` in sql/migrations, run once, in order. */
export class SqlFileMigrationProvider implements MigrationProvider {
  constructor(private readonly folder = join(projectRoot(), 'sql', 'migrations')) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(this.folder)).filter((f) => MIGRATION_FILE.test(f)).sort();
    const out: Record<string, Migration> = {};
    for (const file of files) {
      const text = await readFile(join(this.folder, file), 'utf8');
      out[file.replace(/\.sql$/, '')] = {
        up: async (db) => {
          await sql.raw(text).execute(db);
        },
      };
    }
    return out;
  }
}

export interface MigrateResult {
  applied: string[];
  alreadyApplied: number;
}

/**
 * The migrations the warehouse has run, or undefined before the first (no etl.migrations). Read
 * before the Migrator, whose own look at the schema reads every table's every column and comment.
 */
async function appliedMigrations(db: Db): Promise<Set<string> | undefined> {
  const present = await sql<{ t: string | null }>`select to_regclass('etl.migrations')::text as t`.execute(
    db,
  );
  if (present.rows[0]?.t == null) return undefined;
  const rows = await sql<{ name: string }>`select name from etl.migrations`.execute(db);
  return new Set(rows.rows.map((r) => r.name));
}

/** Bring the warehouse to the newest schema. Safe to run concurrently (the Migrator takes a lock). */
export async function migrateToLatest(db: Db): Promise<MigrateResult> {
  const provider = new SqlFileMigrationProvider();
  // Every migration run already, and no other: nothing to do (the common case, every command).
  // A look that fails (a role without rights on etl) leaves it to the Migrator, which says why.
  const [files, applied] = await Promise.all([
    provider.getMigrations(),
    appliedMigrations(db).catch(() => undefined),
  ]);
  const names = Object.keys(files);
  if (applied !== undefined && applied.size === names.length && names.every((n) => applied.has(n))) {
    return { applied: [], alreadyApplied: names.length };
  }
  const migrator = new Migrator({
    db,
    provider,
    migrationTableSchema: 'etl',
    migrationTableName: 'migrations',
    migrationLockTableName: 'migrations_lock',
  });
  const { error, results }: MigrationResultSet = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    const code = sqlState(error);
    const fix = databaseErrorFix(code);
    throw new CybsError(
      'LOAD_MIGRATION',
      `Migrating the warehouse failed${failed ? ` in ${failed}` : ''}: ${errorMessage(error)}` +
        `${code && /^[0-9A-Z]{5}$/.test(code) ? ` (SQLSTATE ${code})` : ''}${fix ? `; ${fix}` : ''}.`,
      { stage: 'load', cause: error },
    );
  }
  const all = await migrator.getMigrations();
  const ran = (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  return { applied: ran, alreadyApplied: all.filter((m) => m.executedAt).length - ran.length };
}
