/**
 * Each source's number in etl.sources (`_source_key`), taken as the load begins, and the SQL that
 * finds a source's rows by it.
 */
import { CybsError } from '../../errors.js';
import { LOAD_ERROR_CODES } from '../../warehouse/database-errors.js';
import type { EtlDb } from '../../warehouse/database.js';
import type { TableDecl } from '../table-spec.js';
import type { WindowContext } from './context.js';
import { sql } from 'kysely';
import type { RawBuilder } from 'kysely';

/** Whether the table has a row of this source (one probe of an index on `_source_key`). */
export function sourceHasRows(decl: TableDecl, organizationId: string, source: string): RawBuilder<boolean> {
  return sql<boolean>`exists (select 1 from ${sql.id(decl.schema, decl.name)}
                               where ${ofSource(organizationId, source)})`;
}

/**
 * `<alias>."_source_key" = <the source's number>`: the rows of one organization and source, found
 * by an index on `_source_key` (the number is read from etl.sources once per statement; none, and
 * no row matches).
 */
export function ofSource(organizationId: string, source: string, alias?: string): RawBuilder<unknown> {
  const column = alias === undefined ? sql.id('_source_key') : sql.id(alias, '_source_key');
  return sql`${column} = ${sourceKeyQuery(organizationId, source)}`;
}

/** `(select <the source's number> from etl.sources)`: null when it has none. */
export function sourceKeyQuery(organizationId: string, source: string): RawBuilder<unknown> {
  return sql`(select k.source_key from etl.sources as k
               where k.organization_id = ${organizationId} and k.source = ${source})`;
}

/** The window whose rejects takeSourceKeys deletes in the same statement (deleteWindowRejects). */
export type WindowId = { pipeline: string; organizationId: string; windowKey: string };

/**
 * Each source's number in etl.sources, added there when it has none yet (`added`: those). Taken as
 * the window's load begins, after its lock, in its transaction and before any savepoint, so that no
 * rollback to a savepoint can take back a number the load goes on using. Another load adding the
 * same source at once makes this one wait for it (the unique index), then read its number.
 *
 * The same statement, being the window's first after its lock, also does what the load needs done
 * then, to save a round trip each: with `deleteRejectsOf`, it deletes the window's rejects (the load
 * replaces them); with `snapshot`, it reads the transaction's snapshot and id (LoadedState).
 */
export async function takeSourceKeys(
  trx: EtlDb,
  organizationId: string,
  sources: readonly string[],
  also: { deleteRejectsOf?: WindowId; snapshot?: boolean } = {},
): Promise<{ keys: Map<string, string>; added: Set<string>; snapshot?: { s: string; x: string } }> {
  const keys = new Map<string, string>();
  const added = new Set<string>();
  let snapshot: { s: string; x: string } | undefined;
  const asText = sql<string>`source_key::text`.as('k');
  // Asked of the first statement only.
  let first = true;
  for (const source of new Set(sources)) {
    for (let attempt = 0; !keys.has(source); attempt++) {
      const window = first ? also.deleteRejectsOf : undefined;
      const withSnapshot = first && also.snapshot === true;
      const taken = await trx
        .with('gone', (db) =>
          db.deleteFrom('etl.rejects').where(
            window
              ? (eb) =>
                  eb.and({
                    pipeline: window.pipeline,
                    organization_id: window.organizationId,
                    window_key: window.windowKey,
                  })
              : sql<boolean>`false`,
          ),
        )
        .with('found', (db) =>
          db
            .selectFrom('etl.sources')
            .select('source_key')
            .where('organization_id', '=', organizationId)
            .where('source', '=', source),
        )
        .with('added', (db) =>
          db
            .insertInto('etl.sources')
            .columns(['organization_id', 'source'])
            .expression(
              db
                .selectNoFrom((eb) => [
                  eb.val(organizationId).as('organization_id'),
                  eb.val(source).as('source'),
                ])
                .where(({ not, exists, selectFrom, lit }) =>
                  not(exists(selectFrom('found').select(lit(1).as('one')))),
                ),
            )
            .onConflict((oc) => oc.columns(['organization_id', 'source']).doNothing())
            .returning('source_key'),
        )
        .selectFrom((db) =>
          db
            .selectFrom('found')
            .select([asText, sql<boolean>`false`.as('added')])
            .unionAll((db) => db.selectFrom('added').select([asText, sql<boolean>`true`.as('added')]))
            .as('taken'),
        )
        .rightJoin(sql`(select 1)`.as('one'), (join) => join.onTrue())
        .select(['taken.k', 'taken.added'])
        .select(
          withSnapshot
            ? [
                sql<string>`pg_current_snapshot()::text`.as('s'),
                sql<string>`pg_current_xact_id()::text`.as('x'),
              ]
            : [sql<string>`null`.as('s'), sql<string>`null`.as('x')],
        )
        .execute();
      first = false;
      if (withSnapshot) snapshot = { s: taken[0]!.s, x: taken[0]!.x };
      const key = taken[0]?.k ?? undefined;
      if (key !== undefined && key !== null) keys.set(source, key);
      if (taken[0]?.added === true) added.add(source);
      else if (attempt > 0) {
        throw new CybsError(LOAD_ERROR_CODES.failed, `etl.sources gave no number for the source ${source}.`, {
          stage: 'load',
          context: { source },
        });
      }
    }
  }
  return snapshot ? { keys, added, snapshot } : { keys, added };
}

/** The source's number taken as the load began (takeSourceKeys). */
export function sourceKeyOf(ctx: WindowContext, source: string): string {
  const key = ctx.sourceKeys.get(source);
  if (key === undefined) {
    throw new CybsError(
      LOAD_ERROR_CODES.failed,
      `No etl.sources number was taken for the source ${source}.`,
      {
        stage: 'load',
        context: { source },
      },
    );
  }
  return key;
}
