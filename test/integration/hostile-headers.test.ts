/**
 * Report header names made to break SQL, loaded for real (cybs-etl import → PostgreSQL): quotes,
 * semicolons, comments, SQL keywords, system and lineage column names, names that collide after
 * truncation to 63 bytes, tabs, empty names. They become safe, distinct columns and their values
 * load; the schema is untouched. A file with more columns than PostgreSQL allows fails clearly with
 * nothing committed.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';

const META = 'org1,Hostile,TransactionRequest,1.0,2024-01-01T00:00:00Z to 2024-01-02T00:00:00Z\n';

function csvLine(values: string[]): string {
  return values.map((v) => (/[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v)).join(',') + '\n';
}

const HOSTILE_HEADERS = [
  'x"; drop table etl.windows; --',
  "Robert'); DROP TABLE cybs.transaction_request;--",
  'a'.repeat(200),
  'a'.repeat(199) + 'b',
  '_source',
  '_organization_id',
  '_run_id',
  'ctid',
  'xmin',
  'Amount',
  '',
  'select',
  '$1',
  '\\x',
  'tab\there',
  '"quoted"',
  'ünïcødé ✓',
  'comment */ /*',
];

describe('hostile report header names', () => {
  let dir: string;
  let database: TestDatabase;
  let db: pg.Client;
  let config: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cybs-hh-'));
    database = await createTestDatabase('hh');
    config = join(dir, 'c.yaml');
    await writeFile(config, 'log:\n  level: silent\n');
    db = new pg.Client({ connectionString: database.url });
    await db.connect();
  });
  afterAll(async () => {
    await db.end();
    await database.drop();
    await rm(dir, { recursive: true, force: true });
  });

  // --force: such a header, mostly foreign to the table, is refused without it (issue 27 #4);
  // with it, the loader meets the hostile names.
  const importFile = (file: string, force = true) =>
    cli(
      [
        '--config',
        config,
        'import',
        file,
        '--report-definition',
        'TransactionRequestClass',
        '--organization-id',
        'org1',
        ...(force ? ['--force'] : []),
      ],
      { env: { DATABASE_URL: database.url } },
    );

  it('load as data into safe, distinct columns; the schema is untouched', async () => {
    const header = ['request_id', 'amount', 'currency_code', ...HOSTILE_HEADERS];
    let text = META + csvLine(header);
    for (let i = 0; i < 3; i++)
      text += csvLine([String(1000 + i), '1.00', 'USD', ...HOSTILE_HEADERS.map((_, j) => `v${i}-${j}`)]);
    const file = join(dir, 'hostile.csv');
    await writeFile(file, text);
    const refused = await importFile(file, false);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /^cybs-etl: hostile\.csv: only \d+ of its \d+ header columns are catalog fields/,
    );
    const r = await importFile(file);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/3 rows loaded/);
    const cols = await db.query(
      `select column_name from information_schema.columns where table_schema = 'cybs' and table_name = 'transaction_request'`,
    );
    const names = cols.rows.map((c: { column_name: string }) => c.column_name);
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(n).toMatch(/^[a-z_][a-z0-9_]{0,62}$/);
    expect(names).toContain('ctid_column');
    // Every hostile value landed in its own column, lineage columns kept their meaning.
    const row = await db.query(`select * from cybs.transaction_request where request_id = '1000'`);
    const values = Object.values(row.rows[0] as Record<string, unknown>).map(String);
    for (let j = 0; j < HOSTILE_HEADERS.length; j++) expect(values).toContain(`v0-${j}`);
    expect(row.rows[0]._organization_id).toBe('org1');
    expect(String(row.rows[0]._source)).toMatch(/^import:hostile\.csv/);
    const tables = await db.query(
      `select count(*)::int as n from information_schema.tables where table_schema = 'etl' and table_name = 'windows'`,
    );
    expect(tables.rows[0].n).toBe(1);
  });

  it('more columns than PostgreSQL allows: a clear error, nothing committed', async () => {
    const before = await db.query(`select count(*)::int as n from cybs.transaction_request`);
    const header = [
      'request_id',
      'amount',
      'currency_code',
      ...Array.from({ length: 2000 }, (_, i) => `Col ${i}`),
    ];
    let text = META + csvLine(header);
    for (let i = 0; i < 3; i++)
      text += csvLine([String(2000 + i), '1.00', 'USD', ...header.slice(3).map(() => 'x')]);
    const file = join(dir, 'wide.csv');
    await writeFile(file, text);
    const r = await importFile(file);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/at most 1600 columns/);
    const after = await db.query(`select count(*)::int as n from cybs.transaction_request`);
    expect(after.rows[0].n).toBe(before.rows[0].n);
    const cols = await db.query(
      `select count(*)::int as n from information_schema.columns where table_schema = 'cybs' and table_name = 'transaction_request'`,
    );
    expect(cols.rows[0].n).toBeLessThan(100);
  });
});
