/**
 * etl.import_fingerprints: what the last `cybs-etl import` of each report left (a
 * WindowFingerprint, src/pipeline/fingerprint.ts), so that importing the same file again is
 * recognised as a window's re-load of the same report is.
 */
import type { EtlDb } from '../warehouse/database.js';

/** The stored fingerprint of the report's last import (jsonb, as read), or undefined. */
export async function readImportFingerprint(
  db: EtlDb,
  organizationId: string,
  source: string,
): Promise<unknown> {
  const row = await db
    .selectFrom('etl.import_fingerprints')
    .select('fingerprint')
    .where('organization_id', '=', organizationId)
    .where('source', '=', source)
    .executeTakeFirst();
  return row?.fingerprint;
}

/**
 * Keep what this import left, in its load's transaction; none (`null`) when the load could not
 * tell what it left, so that the next import reads the file whole.
 */
export async function saveImportFingerprint(
  db: EtlDb,
  organizationId: string,
  source: string,
  fingerprint: object | null,
): Promise<void> {
  if (fingerprint === null) {
    await db
      .deleteFrom('etl.import_fingerprints')
      .where('organization_id', '=', organizationId)
      .where('source', '=', source)
      .execute();
    return;
  }
  const value = JSON.stringify(fingerprint);
  await db
    .insertInto('etl.import_fingerprints')
    .values({ organization_id: organizationId, source, fingerprint: value })
    .onConflict((oc) =>
      oc.columns(['organization_id', 'source']).doUpdateSet({ fingerprint: value, imported_at: new Date() }),
    )
    .execute();
}
