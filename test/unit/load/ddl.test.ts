import { describe, expect, it } from 'vitest';
import {
  addColumnDdl,
  naturalKeyIndexColumns,
  naturalKeyIndexName,
  quoteIdent,
  quoteLiteral,
  tableDdl,
  validateTableDecl,
} from '../../../src/load/ddl.js';
import type { TableDecl } from '../../../src/load/table-spec.js';

const decl: TableDecl = {
  schema: 'cybs',
  name: 'transaction_request',
  description: 'One row per transaction request.',
  columns: [
    { name: 'request_id', pgType: 'text', description: 'Request id (22–26 digits).' },
    { name: 'amount', pgType: 'numeric(12,2)', description: "Merchant's amount." },
    { name: 'submitted_at', pgType: 'timestamptz' },
  ],
  naturalKey: ['_organization_id', 'request_id'],
  keyDescription: 'A request id is unique per organization.',
};

describe('quoteIdent', () => {
  it('always double-quotes and doubles embedded quotes', () => {
    expect(quoteIdent('amount')).toBe('"amount"');
    expect(quoteIdent('Brand New')).toBe('"Brand New"');
    expect(quoteIdent('x"; drop table t; --')).toBe('"x""; drop table t; --"');
    expect(quoteIdent('""')).toBe('""""""');
  });
});

describe('quoteLiteral', () => {
  it('doubles quotes, and uses an E literal when there is a backslash', () => {
    expect(quoteLiteral("it's")).toBe("'it''s'");
    expect(quoteLiteral('a\\b')).toBe("E'a\\\\b'");
    expect(quoteLiteral("\\'; drop table t; --")).toBe("E'\\\\''; drop table t; --'");
    expect(quoteLiteral('nul\0here')).toBe("'nulhere'");
  });
});

describe('tableDdl', () => {
  const statements = tableDdl(decl);
  const text = statements.join(';\n');

  it('creates the schema and the table with data columns, then lineage columns', () => {
    expect(statements[0]).toBe('create schema if not exists "cybs"');
    expect(statements[1]).toBe(
      [
        'create table if not exists "cybs"."transaction_request" (',
        '  "request_id" text not null,',
        '  "amount" numeric(12,2),',
        '  "submitted_at" timestamptz,',
        '  "_organization_id" text not null,',
        '  "_source" text not null,',
        '  "_source_row" bigint not null,',
        '  "_run_id" bigint,',
        '  "_loaded_at" timestamptz not null default now(),',
        '  "_source_key" bigint not null',
        ')',
      ].join('\n'),
    );
  });

  it('adds a unique index on the natural key (the organization last) and an index to find a source’s rows', () => {
    expect(statements).toContain(
      'create unique index if not exists "transaction_request_natural_key" on "cybs"."transaction_request" ("request_id", "_organization_id")',
    );
    expect(statements).toContain(
      'create index if not exists "transaction_request_source" on "cybs"."transaction_request" ("_source_key")',
    );
  });

  it('adds no index of its own to find a source’s rows when the natural key starts with (organization, source), and indexes that key by the source’s number', () => {
    const rowKeyed = tableDdl({
      ...decl,
      name: 'fee_detail',
      naturalKey: ['_organization_id', '_source', '_source_row'],
    });
    expect(rowKeyed.filter((s) => s.startsWith('create') && s.includes('index'))).toEqual([
      'create unique index if not exists "fee_detail_natural_key" on "cybs"."fee_detail" ("_source_key", "_source_row")',
    ]);
  });

  it('comments the table (description and key) and every column, escaping literals', () => {
    expect(statements).toContain(
      `comment on table "cybs"."transaction_request" is 'One row per transaction request. Natural key (_organization_id, request_id): A request id is unique per organization.'`,
    );
    expect(text).toContain(
      `comment on column "cybs"."transaction_request"."amount" is 'Merchant''s amount.'`,
    );
    expect(text).toContain(
      `comment on column "cybs"."transaction_request"."submitted_at" is 'submitted_at (no description in the catalog).'`,
    );
    for (const column of [
      'request_id',
      'amount',
      'submitted_at',
      '_organization_id',
      '_source',
      '_source_row',
      '_run_id',
      '_loaded_at',
      '_source_key',
    ]) {
      expect(
        statements.filter((s) =>
          s.startsWith(`comment on column "cybs"."transaction_request"."${column}" is `),
        ),
      ).toHaveLength(1);
    }
  });

  it('keeps hostile names and descriptions inert', () => {
    const hostile = tableDdl({
      ...decl,
      name: 'x"; drop table t; --',
      description: "'); drop table t; --",
      columns: [{ name: 'a"b', pgType: 'text', description: "\\'; drop table t; --" }],
      naturalKey: ['_organization_id', 'a"b'],
    });
    expect(hostile[1]).toContain(
      'create table if not exists "cybs"."x""; drop table t; --" (\n  "a""b" text not null,',
    );
    expect(hostile).toContain(
      `comment on column "cybs"."x""; drop table t; --"."a""b" is E'\\\\''; drop table t; --'`,
    );
    expect(hostile.find((s) => s.startsWith('comment on table'))).toContain(`is '''); drop table t; --`);
  });

  it('orders the unique index with the organization last; a key starting with (organization, source) has the source’s number for the two', () => {
    const keyed = (naturalKey: string[]) => naturalKeyIndexColumns({ ...decl, naturalKey });
    expect(keyed(['_organization_id', 'request_id'])).toEqual(['request_id', '_organization_id']);
    expect(keyed(['_organization_id', 'batch_id', 'line'])).toEqual(['batch_id', 'line', '_organization_id']);
    expect(keyed(['_organization_id', '_source', '_source_row'])).toEqual(['_source_key', '_source_row']);
    expect(keyed(['_organization_id', '_source'])).toEqual(['_source_key']);
    expect(keyed(['_organization_id', '_source', 'line', '_source_row'])).toEqual([
      '_source_key',
      'line',
      '_source_row',
    ]);
    expect(keyed(['_organization_id'])).toEqual(['_organization_id']);
    expect(keyed(['request_id', '_organization_id'])).toEqual(['request_id', '_organization_id']);
  });

  it('truncates index names to 63 bytes', () => {
    const long = { ...decl, name: 'a'.repeat(60) };
    expect(Buffer.byteLength(naturalKeyIndexName(long))).toBeLessThanOrEqual(63);
    expect(naturalKeyIndexName(long).endsWith('_natural_key')).toBe(true);
  });

  it('refuses declarations that cannot be loaded safely', () => {
    const invalid: Partial<TableDecl>[] = [
      { columns: [{ name: 'a', pgType: 'text default now()' }], naturalKey: ['_organization_id'] },
      { columns: [{ name: 'a', pgType: 'text; drop table t' }], naturalKey: ['_organization_id'] },
      { columns: [{ name: '_source', pgType: 'text' }], naturalKey: ['_organization_id'] },
      {
        columns: [
          { name: 'a', pgType: 'text' },
          { name: 'a', pgType: 'text' },
        ],
        naturalKey: ['_organization_id'],
      },
      { naturalKey: ['request_id'] },
      { naturalKey: ['_organization_id', 'missing'] },
      { naturalKey: ['_organization_id', '_loaded_at'] },
      { columns: [{ name: 'x'.repeat(64), pgType: 'text' }], naturalKey: ['_organization_id'] },
      // A child table must carry its records' key columns, and have a key of its own beyond them.
      { parent: { table: 'transaction_request', key: ['missing'] } },
      { parent: { table: 'transaction_request', key: ['request_id'] } },
    ];
    for (const change of invalid) {
      expect(() => validateTableDecl({ ...decl, ...change }), JSON.stringify(change)).toThrow(
        expect.objectContaining({ stage: 'load' }),
      );
    }
  });

  it('accepts the usual type names', () => {
    for (const pgType of [
      'text',
      'numeric(12,2)',
      'timestamp with time zone',
      'timestamp(3) without time zone',
      'character varying(50)',
      'double precision',
      'int8[]',
      'jsonb',
    ]) {
      expect(() =>
        validateTableDecl({ ...decl, columns: [...decl.columns, { name: 'z', pgType }] }),
      ).not.toThrow();
    }
  });
});

describe('addColumnDdl', () => {
  it('adds a quoted column if it does not exist', () => {
    expect(addColumnDdl(decl, { name: 'New "Header"', pgType: 'text' })).toBe(
      'alter table "cybs"."transaction_request" add column if not exists "New ""Header""" text',
    );
  });
});
