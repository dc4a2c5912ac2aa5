/**
 * Run the reconciliation checks for `cybs-etl check` and the daemon's metrics: each rc_* view,
 * filtered by organization and local day, its failures counted and the first ones kept, in one
 * read-only transaction at one as_of() time.
 */
import { sql } from 'kysely';
import type { Db } from '../warehouse/warehouse.js';
import { CHECKS } from './checks.js';

/** work_mem of the checks' transaction. */
export const CHECK_WORK_MEM = '64MB';

export interface CheckFilter {
  organizationId?: string;
  /** First and last local day (YYYY-MM-DD) of the failing items, inclusive. */
  from?: string;
  to?: string;
  /** The time ages and thresholds are counted from (cybs_analytics.as_of()); default now. */
  asOf?: Date;
}

export interface CheckOutcome {
  check: string;
  title: string;
  failures: number;
  /** The first failing rows (by day and reference), as the view returns them. */
  rows: Record<string, unknown>[];
}

export async function runChecks(db: Db, filter: CheckFilter = {}, sampleRows = 20): Promise<CheckOutcome[]> {
  return db.transaction().execute(async (trx) => {
    await sql`set transaction read only`.execute(trx);
    // The checks hash millions of rows at a portfolio's size: PostgreSQL's default 4 MB spills
    // them to disk (docs/performance.md).
    await sql`select set_config('work_mem', ${CHECK_WORK_MEM}, true)`.execute(trx);
    if (filter.asOf)
      await sql`select set_config('cybs_analytics.as_of', ${filter.asOf.toISOString()}, true)`.execute(trx);
    const out: CheckOutcome[] = [];
    for (const c of CHECKS) {
      const r = await sql<Record<string, unknown> & { failing_total: string }>`
        select x.*, count(*) over () as failing_total
          from ${sql.table(`cybs_analytics.${c.name}`)} x
         where (${filter.organizationId ?? null}::text is null or x.organization_id = ${filter.organizationId ?? null})
           and (${filter.from ?? null}::date is null or x.check_date >= ${filter.from ?? null}::date)
           and (${filter.to ?? null}::date is null or x.check_date <= ${filter.to ?? null}::date)
         order by x.check_date, x.reference
         limit ${sampleRows}`.execute(trx);
      const failures = Number(r.rows[0]?.failing_total ?? 0);
      out.push({
        check: c.check,
        title: c.title,
        failures,
        rows: r.rows.map(({ failing_total: _t, ...row }) => row),
      });
    }
    return out;
  });
}

/** Failures per check and organization (rc_summary), for metrics. */
export async function checkCounts(
  db: Db,
): Promise<{ check: string; organizationId: string; failures: number }[]> {
  const r = await db.transaction().execute(async (trx) => {
    await sql`select set_config('work_mem', ${CHECK_WORK_MEM}, true)`.execute(trx);
    return sql<{ check_name: string; organization_id: string; failures: string }>`
      select check_name, organization_id, sum(failures) as failures
        from cybs_analytics.rc_summary
       group by check_name, organization_id`.execute(trx);
  });
  return r.rows.map((x) => ({
    check: x.check_name,
    organizationId: x.organization_id,
    failures: Number(x.failures),
  }));
}
