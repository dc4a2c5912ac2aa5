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

/** Bring the warehouse to the newest schema. Safe to run concurrently (the Migrator takes a lock). */
export async function migrateToLatest(db: Db): Promise<MigrateResult> {
  const migrator = new Migrator({
    db,
    provider: new SqlFileMigrationProvider(),
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
  const applied = (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  return { applied, alreadyApplied: all.filter((m) => m.executedAt).length - applied.length };
}
