import { sql } from 'kysely';
import type { RunCoordinator } from 'node-cron';
import type { EtlDb } from '../warehouse/database.js';

/**
 * node-cron's run coordinator on PostgreSQL: several `cybs-etl schedule` instances against one
 * database each see every cron fire, and the first to insert the fire's key into etl.schedule_fires
 * runs it; the others skip it ("not-elected"). Insert-once on a primary key needs no lock and no TTL:
 * a fire is never run twice, and work a dead instance left behind is caught up by the next fire
 * (windows have their own leases).
 */
export class PgRunCoordinator implements RunCoordinator {
  constructor(
    private readonly db: EtlDb,
    private readonly owner: string,
  ) {}

  async shouldRun(key: string): Promise<boolean> {
    const inserted = await this.db
      .insertInto('etl.schedule_fires')
      .values({ fire_key: key, owner: this.owner })
      .onConflict((oc) => oc.column('fire_key').doNothing())
      .returning('fire_key')
      .executeTakeFirst();
    return inserted !== undefined;
  }

  async onComplete(key: string): Promise<void> {
    await this.db
      .updateTable('etl.schedule_fires')
      .set({ completed_at: sql`now()` })
      .where('fire_key', '=', key)
      .where('owner', '=', this.owner)
      .execute();
  }
}
