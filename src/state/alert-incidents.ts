import { sql } from 'kysely';
import type { AlertEvent } from '../config/schema.js';
import type { EtlDb } from '../warehouse/database.js';
import type { Db } from '../warehouse/warehouse.js';
import type { AlertCondition, OpenIncident } from '../observability/alerts.js';
import { readStatus } from './status.js';

/**
 * The alert conditions of the warehouse now, and the incidents of etl.alert_incidents: opened by
 * an insert that at most one process wins (a unique index on open incidents), resolved by an
 * update that at most one wins, so that each is told once whatever the number of daemons.
 */

export interface ConditionOptions {
  now: Date;
  freshnessSeconds: (pipeline: string) => number;
  /** A window whose rejected rows exceed this share of its rows. */
  rejectsShare: number;
  /** Schema changes newer than this are told (older ones are history). */
  schemaChangesSince: Date;
}

export async function readAlertConditions(db: Db, options: ConditionOptions): Promise<AlertCondition[]> {
  const conditions: AlertCondition[] = [];
  const failed = await sql<{
    pipeline: string;
    organization_id: string;
    window_key: string;
    attempts: number;
    last_error_code: string | null;
    last_error_message: string | null;
  }>`select pipeline, organization_id, window_key, attempts, last_error_code, last_error_message
       from etl.windows where status = 'failed' order by pipeline, organization_id, window_start`.execute(db);
  for (const w of failed.rows)
    conditions.push({
      event: 'window_failed',
      subject: `${w.pipeline} ${w.organization_id} ${w.window_key}`,
      text: `${w.pipeline} ${w.organization_id} ${w.window_key} (attempts ${w.attempts}): ${w.last_error_code ?? 'error'}: ${w.last_error_message ?? ''}`,
      details: {
        pipeline: w.pipeline,
        organizationId: w.organization_id,
        window: w.window_key,
        attempts: w.attempts,
        code: w.last_error_code,
      },
    });
  const { pipelines } = await readStatus(db, options.now);
  for (const p of pipelines) {
    const limit = options.freshnessSeconds(p.pipeline);
    if (p.lagSeconds === null || p.lagSeconds <= limit) continue;
    conditions.push({
      event: 'pipeline_stale',
      subject: `${p.pipeline} ${p.organizationId}`,
      text: `${p.pipeline} ${p.organizationId}: newest loaded window ${p.lastLoadedWindow ?? '?'} ended ${(p.lagSeconds / 3600).toFixed(1)} h ago, over its freshness limit of ${(limit / 3600).toFixed(1)} h`,
      details: {
        pipeline: p.pipeline,
        organizationId: p.organizationId,
        lagSeconds: p.lagSeconds,
        limitSeconds: limit,
      },
    });
  }
  const rejects = await sql<{
    pipeline: string;
    organization_id: string;
    window_key: string;
    rows_loaded: string;
    rows_rejected: string;
  }>`select pipeline, organization_id, window_key, rows_loaded, rows_rejected from etl.windows
      where rows_rejected > 0 and rows_rejected > ${options.rejectsShare}::float8 * (rows_loaded + rows_rejected)
      order by pipeline, organization_id, window_start`.execute(db);
  for (const w of rejects.rows) {
    const rejected = Number(w.rows_rejected);
    const total = Number(w.rows_loaded) + rejected;
    conditions.push({
      event: 'rejects',
      subject: `${w.pipeline} ${w.organization_id} ${w.window_key}`,
      text: `${w.pipeline} ${w.organization_id} ${w.window_key}: ${rejected} of ${total} rows rejected (over ${(options.rejectsShare * 100).toFixed(1)} %; see etl.rejects)`,
      details: {
        pipeline: w.pipeline,
        organizationId: w.organization_id,
        window: w.window_key,
        rejected,
        total,
      },
    });
  }
  const changes = await sql<{ table: string; source: string | null; columns: string; last_id: string }>`
    select table_schema || '.' || table_name as table, source,
           string_agg(column_name || ' ' || column_type, ', ' order by id) as columns, max(id) as last_id
      from etl.schema_changes where changed_at > ${options.schemaChangesSince}
     group by table_schema, table_name, source order by max(id)`.execute(db);
  for (const c of changes.rows)
    conditions.push({
      event: 'schema_change',
      subject: `${c.table} ${c.source ?? ''} #${c.last_id}`,
      text: `${c.table}: columns added from ${c.source ?? 'a source'}: ${c.columns}`,
      details: { table: c.table, source: c.source, columns: c.columns },
      oneOff: true,
    });
  return conditions;
}

/** Open incidents (one-off ones are born resolved, so never open). */
export async function readOpenIncidents(db: EtlDb): Promise<OpenIncident[]> {
  const rows = await db
    .selectFrom('etl.alert_incidents')
    .select(['id', 'event', 'subject'])
    .where('resolved_at', 'is', null)
    .execute();
  return rows.map((i) => ({ id: Number(i.id), event: i.event, subject: i.subject }));
}

/** Open an incident; its id when this process opened it, undefined when it exists (open, or a told one-off). */
export async function openIncident(db: Db, c: AlertCondition): Promise<number | undefined> {
  if (c.oneOff) {
    const told = await sql<{ id: string }>`
      select id from etl.alert_incidents where event = ${c.event} and subject = ${c.subject} limit 1`.execute(
      db,
    );
    if (told.rows.length > 0) return undefined;
  }
  const r = await sql<{ id: string }>`
    insert into etl.alert_incidents (event, subject, text, details, resolved_at, notified_resolved_at)
    values (${c.event}, ${c.subject}, ${c.text}, ${JSON.stringify(c.details)}::jsonb,
            ${c.oneOff ? sql`now()` : null}, ${c.oneOff ? sql`now()` : null})
    on conflict (event, subject) where resolved_at is null do nothing
    returning id`.execute(db);
  return r.rows[0] ? Number(r.rows[0].id) : undefined;
}

/** Resolve an open incident; its opening text when this process resolved it. */
export async function resolveIncident(db: EtlDb, id: number): Promise<string | undefined> {
  const row = await db
    .updateTable('etl.alert_incidents')
    .set({ resolved_at: sql`now()` })
    .where('id', '=', id)
    .where('resolved_at', 'is', null)
    .returning('text')
    .executeTakeFirst();
  return row?.text;
}

/** Incidents whose opening or resolution no webhook has received yet (delivery failed last time). */
export async function readUntoldIncidents(db: Db): Promise<
  {
    id: number;
    event: AlertEvent;
    subject: string;
    text: string;
    details: Record<string, unknown>;
    side: 'open' | 'resolved';
  }[]
> {
  const r = await sql<{
    id: string;
    event: AlertEvent;
    subject: string;
    text: string;
    details: Record<string, unknown>;
    notified_open_at: Date | null;
  }>`select id, event, subject, text, details, notified_open_at from etl.alert_incidents
      where notified_open_at is null or (resolved_at is not null and notified_resolved_at is null)
      order by id`.execute(db);
  return r.rows.map((i) => ({
    id: Number(i.id),
    event: i.event,
    subject: i.subject,
    text: i.text,
    details: i.details,
    side: i.notified_open_at === null ? 'open' : 'resolved',
  }));
}

export async function markTold(db: EtlDb, id: number, side: 'open' | 'resolved'): Promise<void> {
  const column = side === 'open' ? 'notified_open_at' : 'notified_resolved_at';
  await db
    .updateTable('etl.alert_incidents')
    .set(column, sql`now()`)
    .where('id', '=', id)
    .execute();
}
