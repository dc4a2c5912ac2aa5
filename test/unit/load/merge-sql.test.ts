import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  sql,
} from 'kysely';
import type { RawBuilder } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { TableDecl } from '../../../src/load/table-spec.js';
import {
  changedKeyRepeatedSql,
  createChangedRowsSql,
  dataKey,
  deleteItemsLeftBehindSql,
  deleteVanishedSql,
  rejectRepeatedKeysSql,
  sameKey,
  upsertSql,
} from '../../../src/load/window/merge-sql.js';
import type { MergeIdentity } from '../../../src/load/window/merge-sql.js';

/** Compiles statements as the PostgreSQL dialect would send them; it never connects. */
const db = new Kysely<unknown>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (k) => new PostgresIntrospector(k),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

const compile = (statement: RawBuilder<unknown>) => {
  const { sql: text, parameters } = statement.compile(db);
  return { text: text.replace(/\s+/g, ' ').trim(), parameters };
};

const requests: TableDecl = {
  schema: 'cybs',
  name: 'transaction_request',
  description: 'One row per transaction request.',
  columns: [
    { name: 'request_id', pgType: 'text' },
    { name: 'amount', pgType: 'numeric' },
  ],
  naturalKey: ['_organization_id', 'request_id'],
  keyDescription: 'A request id is unique per organization.',
};

const lines: TableDecl = {
  ...requests,
  name: 'line_item',
  naturalKey: ['_organization_id', '_source', '_source_row'],
  parent: { table: 'transaction_request', key: ['request_id'] },
};

const who: MergeIdentity = {
  pipeline: 'tdr',
  organizationId: 'org1',
  windowKey: '2024-01-01',
  source: 'TransactionRequest 2024-01-01',
  runId: 7,
};

const staging = sql.id('pg_temp', '_cybs_stg_0');

describe('merge statements', () => {
  it('a source shares _organization_id and _source: the data key leaves them out', () => {
    expect(dataKey(requests)).toEqual(['request_id']);
    expect(dataKey(lines)).toEqual(['_source_row']);
    expect(compile(sameKey(requests, 'a', 'b')).text).toBe('"a"."request_id" = "b"."request_id"');
    expect(
      compile(sameKey({ ...requests, naturalKey: ['_organization_id', '_source'] }, 'a', 'b')).text,
    ).toBe('true');
  });

  it('upserts the staged rows with their lineage, rewriting a row only when it differs', () => {
    const { text, parameters } = compile(upsertSql(requests, who, ['request_id', 'amount'], staging, false));
    expect(text).toContain('insert into "cybs"."transaction_request" as t');
    expect(text).toContain(
      '("request_id", "amount", "_organization_id", "_source", "_source_row", "_run_id", "_loaded_at", "_source_key")',
    );
    expect(text).toContain('on conflict ("request_id", "_organization_id") do update');
    expect(text).toContain(
      'is distinct from ("excluded"."request_id", "excluded"."amount", "excluded"."_source", "excluded"."_source_row", "excluded"."_source_key")',
    );
    expect(text).toContain('from "pg_temp"."_cybs_stg_0" as s');
    expect(text).not.toContain('distinct on');
    expect(text).toMatch(/null::bigint as distinct_rows/);
    expect(parameters).toEqual([
      'org1',
      'TransactionRequest 2024-01-01',
      7,
      'org1',
      'TransactionRequest 2024-01-01',
    ]);
  });

  it('de-duplicates on the data key when asked, the last record of the source winning', () => {
    const { text } = compile(upsertSql(requests, who, ['request_id', 'amount'], staging, true));
    expect(text).toContain('src as materialized (');
    expect(text).toContain('distinct on ("s"."request_id")');
    expect(text).toContain('order by "s"."request_id", s."_source_row" desc');
    expect(text).toContain('(select count(*) from src)::bigint as distinct_rows');
  });

  it('writes each repeated record to etl.rejects, naming the record loaded in its place', () => {
    const { text, parameters } = compile(rejectRepeatedKeysSql(requests, who, staging, 5));
    expect(text).toContain('max(s."_source_row") over (partition by "s"."request_id") as kept');
    expect(text).toContain('insert into etl.rejects');
    expect(text).toContain('where r.line < r.kept');
    expect(parameters).toContain('LOAD_DUPLICATE_KEY');
    expect(parameters).toContain(': its natural key in cybs.transaction_request (');
    expect(parameters.at(-1)).toBe(5);
  });

  it('keeps the changed rows by an anti join on the source, key and compared columns', () => {
    const compared = ['request_id', 'amount', '_source_row'];
    const created = compile(
      createChangedRowsSql(requests, 'org1', who.source, compared, '_cybs_stg_0', '_cybs_stg_0_changed'),
    );
    expect(created.text).toContain('create temp table "_cybs_stg_0_changed" on commit drop as');
    expect(created.text).toContain('where not exists (select 1 from "cybs"."transaction_request" as t');
    expect(created.text).toContain('"t"."_source_key" = (select k.source_key from etl.sources as k');
    expect(created.text).toContain(
      '("t"."request_id", "t"."amount", "t"."_source_row") is not distinct from ("s"."request_id", "s"."amount", "s"."_source_row")',
    );
    const repeated = compile(changedKeyRepeatedSql(requests, compared, '_cybs_stg_0', '_cybs_stg_0_changed'));
    expect(repeated.text).toContain(
      'join "pg_temp"."_cybs_stg_0" as s on "c"."request_id" = "s"."request_id"',
    );
  });

  it('deletes only the rows of the source whose key is no longer staged', () => {
    const { text, parameters } = compile(deleteVanishedSql(requests, 'org1', who.source, staging));
    expect(text).toContain('delete from "cybs"."transaction_request" as t where "t"."_source_key" =');
    expect(text).toContain(
      'not exists (select 1 from "pg_temp"."_cybs_stg_0" as s where "s"."request_id" = "t"."request_id")',
    );
    expect(parameters).toEqual(['org1', who.source]);
  });

  it("deletes a record's items that another source left, from the source's records down", () => {
    const { text } = compile(deleteItemsLeftBehindSql(lines, requests, ['request_id'], 'org1', who.source));
    expect(text).toContain('delete from "cybs"."line_item" as c using "cybs"."transaction_request" as p');
    expect(text).toContain('"p"."_source_key" =');
    expect(text).toContain('"p"."request_id" = "c"."request_id"');
    expect(text).toContain('c."_source_key" is distinct from p."_source_key"');
  });
});
