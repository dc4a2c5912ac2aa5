import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/warehouse/migrate.js';
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';

describe('sql/roles.sql', () => {
  let database: TestDatabase;
  let client: pg.Client;

  beforeAll(async () => {
    database = await createTestDatabase('roles');
    const warehouse = await openWarehouse({ url: database.url, path: '' });
    await migrateToLatest(warehouse.db);
    await warehouse.close();
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const text = await readFile('sql/roles.sql', 'utf8');
    // Roles are cluster-wide: serialise concurrent test databases applying the script.
    await client.query('select pg_advisory_lock(727274)');
    try {
      await client.query(text);
      await client.query(text); // idempotent
    } finally {
      await client.query('select pg_advisory_unlock(727274)');
    }
  });
  afterAll(async () => {
    await client.end();
    await database.drop();
  });

  it('lets analysts read cybs tables created later by the loader, and state without raw rejects', async () => {
    await client.query('set role cybs_loader');
    await client.query('create table cybs.later_table (id text primary key)');
    await client.query(
      "insert into etl.rejects (pipeline, organization_id, source, raw_text, error_code, message) values ('p','o','s','4111111111111111,secret','E','m')",
    );
    await client.query('reset role');
    await client.query('set role cybs_analyst');
    try {
      await expect(client.query('select * from cybs.later_table')).resolves.toBeDefined();
      await expect(client.query('select * from etl.windows')).resolves.toBeDefined();
      await expect(client.query('select * from etl.sources')).resolves.toBeDefined();
      const summary = await client.query('select * from etl.rejects_summary');
      expect(summary.rows).toHaveLength(1);
      expect(Object.keys(summary.rows[0])).not.toContain('raw_text');
      await expect(client.query('select raw_text from etl.rejects')).rejects.toThrow(/permission denied/);
      await expect(client.query('insert into cybs.later_table values ($1)', ['x'])).rejects.toThrow(
        /permission denied/,
      );
    } finally {
      await client.query('reset role');
    }
  });
});
