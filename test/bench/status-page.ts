/**
 * The status page's data at scale: `node --import tsx test/bench/status-page.ts [organizations=2000]
 * [days=90]` fills a scratch database with one pipeline's daily windows for that many organizations
 * and days (a gap on the 14th of each month, a failure for one organization in fifty), then reads
 * what `status` and the page read: the window states, their completeness (assessPipelines) and the
 * page's queries. Prints the times, the Node CPU time and the gaps found.
 */
import { parseConfig } from '../../src/config/load-config.js';
import { migrateToLatest } from '../../src/warehouse/migrate.js';
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import { resolvePipelines } from '../../src/pipeline/resolve-pipelines.js';
import { assessPipelines } from '../../src/pipeline/plan-windows.js';
import { readWindowStates } from '../../src/state/completeness.js';
import { readStatusPageData } from '../../src/state/status-page-data.js';
import { PIPELINES } from '../../pipelines/index.js';
import { createTestDatabase } from '../helpers/db.js';
import { sql } from 'kysely';

const orgs = Number(process.argv[2] ?? 2000);
const days = Number(process.argv[3] ?? 90);
const database = await createTestDatabase('pagescale');
const warehouse = await openWarehouse({ url: database.url, path: '' });
try {
  await migrateToLatest(warehouse.db);
  const now = new Date('2026-11-26T12:00:00Z');
  const config = parseConfig(`defaults:\n  startDate: "2026-11-19"\n`);
  const organizations = Array.from({ length: orgs }, (_, i) => `org${i}`);
  const pipelines = resolvePipelines(PIPELINES, config, { defaultOrganizations: organizations, now }).filter(
    (p) => p.name === 'net_fundings',
  );
  await sql`insert into etl.windows (pipeline, organization_id, window_key, window_start, window_end, status, attempts, last_error_code)
    select 'net_fundings', 'org' || o, to_char(d, 'YYYY-MM-DD'), d, d + interval '1 day',
           case when o % 50 = 0 and d = date '2026-11-20' then 'failed' else 'loaded' end, 1, null
      from generate_series(0, ${orgs - 1}) o,
           generate_series(date '2026-11-25' - ${days - 1}::int, date '2026-11-25', interval '1 day') d
     where extract(day from d)::int <> 14`.execute(warehouse.db);
  const n = await sql<{ n: number }>`select count(*)::int as n from etl.windows`.execute(warehouse.db);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const states = await readWindowStates(warehouse.db);
  const t1 = performance.now();
  const completeness = assessPipelines(pipelines, states, now);
  const t2 = performance.now();
  const data = await readStatusPageData(
    warehouse.db,
    {},
    { now, freshnessSeconds: () => 172_800, completeness },
  );
  const t3 = performance.now();
  const cpu = process.cpuUsage(cpu0);
  console.log(
    JSON.stringify({
      rows: n.rows[0]!.n,
      readWindowStatesMs: Math.round(t1 - t0),
      assessMs: Math.round(t2 - t1),
      pageQueriesMs: Math.round(t3 - t2),
      nodeCpuMs: Math.round((cpu.user + cpu.system) / 1000),
      gaps: data.pipelines[0]?.gaps,
      rssMB: Math.round(process.memoryUsage().rss / 1e6),
    }),
  );
} finally {
  await warehouse.close();
  await database.drop();
}
