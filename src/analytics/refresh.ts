/**
 * What a run leaves for the models after its windows: the zone each organization's reports are cut
 * in (its local days), and a refresh of the materialized views whose sources the run loaded rows
 * into (in dependency order, concurrently so that readers are not blocked).
 */
import { sql } from 'kysely';
import type { Db } from '../warehouse/warehouse.js';
import { analyticsViews } from './install.js';
import { qualified } from './view-def.js';

export interface AfterRunOptions {
  /** The run whose loaded windows say which tables changed; or, for a worker, the pipelines it loaded. */
  loaded: { runId: number } | { pipelines: readonly string[] };
  /** Tables of each pipeline (to learn which tables the run's windows loaded). */
  pipelineTables: ReadonlyMap<string, readonly string[]>;
  /** The zone each organization's Transaction Request reports are cut in, when the run knows it. */
  zones: readonly { organizationId: string; timeZone: string }[];
  /** False: record the zones only (`analytics.refresh: manual`). */
  refreshViews?: boolean;
}

export interface AfterRunResult {
  refreshed: string[];
}

export async function refreshAfterRun(db: Db, options: AfterRunOptions): Promise<AfterRunResult> {
  for (const { organizationId, timeZone } of options.zones) {
    await sql`insert into cybs_analytics.organizations (organization_id, time_zone, updated_at)
              values (${organizationId}, ${timeZone}, now())
              on conflict (organization_id) do update set time_zone = excluded.time_zone, updated_at = now()
              where cybs_analytics.organizations.time_zone is distinct from excluded.time_zone`.execute(db);
  }
  const materialized = analyticsViews().filter((v) => v.materialized);
  if (materialized.length === 0 || options.refreshViews === false) return { refreshed: [] };
  const pipelines =
    'pipelines' in options.loaded
      ? options.loaded.pipelines
      : (
          await sql<{ pipeline: string }>`
            select distinct pipeline from etl.windows
             where run_id = ${options.loaded.runId} and status = 'loaded' and rows_loaded > 0`.execute(db)
        ).rows.map((r) => r.pipeline);
  const touched = new Set(pipelines.flatMap((p) => options.pipelineTables.get(p) ?? []));
  const stale = materialized.filter((view) => view.sources.some((s) => touched.has(s)));
  if (stale.length === 0) return { refreshed: [] };
  await db.transaction().execute(async (trx) => {
    // Sorts and hashes of millions of rows: more than PostgreSQL's default 4 MB (docs/performance.md).
    await sql`select set_config('work_mem', '64MB', true)`.execute(trx);
    for (const view of stale) {
      await sql.raw(`refresh materialized view concurrently ${qualified(view.name)}`).execute(trx);
      // The views that read it plan their joins on its statistics.
      await sql.raw(`analyze ${qualified(view.name)}`).execute(trx);
    }
  });
  return { refreshed: stale.map((v) => v.name) };
}
