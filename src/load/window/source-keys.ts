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

/**
 * Each source's number in etl.sources, added there when it has none yet (`added`: those). Taken as the window's
 * load begins, in its transaction and before any savepoint, so that no rollback to a savepoint
 * can take back a number the load goes on using. Another load adding the same source at once
 * makes this one wait for it (the unique index), then read its number.
 */
export async function takeSourceKeys(
  trx: EtlDb,
  organizationId: string,
  sources: readonly string[],
): Promise<{ keys: Map<string, string>; added: Set<string> }> {
  const keys = new Map<string, string>();
  const added = new Set<string>();
  const asText = sql<string>`source_key::text`.as('k');
  for (const source of new Set(sources)) {
    for (let attempt = 0; !keys.has(source); attempt++) {
      const taken = await trx
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
        .selectFrom('found')
        .select([asText, sql<boolean>`false`.as('added')])
        .unionAll((db) => db.selectFrom('added').select([asText, sql<boolean>`true`.as('added')]))
        .execute();
      const key = taken[0]?.k;
      if (key !== undefined) keys.set(source, key);
      if (taken[0]?.added === true) added.add(source);
      else if (attempt > 0) {
        throw new CybsError(LOAD_ERROR_CODES.failed, `etl.sources gave no number for the source ${source}.`, {
          stage: 'load',
          context: { source },
        });
      }
    }
  }
  return { keys, added };
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
