import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/warehouse/migrate.js';
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import type { Warehouse } from '../../src/warehouse/warehouse.js';
import { PgRunCoordinator } from '../../src/schedule/pg-run-coordinator.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';

describe('PostgreSQL run coordinator', () => {
  let database: TestDatabase;
  let a: Warehouse;
  let b: Warehouse;

  beforeAll(async () => {
    database = await createTestDatabase('coord');
    a = await openWarehouse({ url: database.url, path: '' });
    b = await openWarehouse({ url: database.url, path: '' });
    await migrateToLatest(a.db);
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await database.drop();
  });

  it('elects exactly one instance per fire, even when they race', async () => {
    const ca = new PgRunCoordinator(a.db, 'a');
    const cb = new PgRunCoordinator(b.db, 'b');
    for (let i = 0; i < 20; i++) {
      const key = `nightly:2026-11-21T07:00:0${i % 10}.000Z-${i}`;
      const [ra, rb] = await Promise.all([ca.shouldRun(key), cb.shouldRun(key)]);
      expect(Number(ra) + Number(rb)).toBe(1);
      await (ra ? ca : cb).onComplete(key);
    }
    const rows = await a.db.selectFrom('etl.schedule_fires').selectAll().execute();
    expect(rows).toHaveLength(20);
    expect(rows.every((r) => r.completed_at !== null)).toBe(true);
  });
});
