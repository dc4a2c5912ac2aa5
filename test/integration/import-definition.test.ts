/**
 * Issue 27, finding 4: `import rest-v3-PaymentBatchDetailReport_Daily_Classic.sul-dlss-fixture.csv
 * --report-definition TransactionRequestClass` exited 0 and added batch_id, batch_date and status to
 * cybs.transaction_request for good, although the file's first line says it is a Payment Batch
 * Detail report. Now the file is checked against the definition before anything is written: a
 * metadata line that names another definition is refused (exit 2), `--report-definition` may be
 * left out when the file names it, a header mostly foreign to the table is refused unless
 * `--force`, and a pipeline's `schemaChanges: freeze` holds for imports and windows alike.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { createE2eWorld, windowState } from '../helpers/e2e.js';
import { samplesDir } from '../unit/parse/helpers.js';
import type { E2eWorld } from '../helpers/e2e.js';

const FIXTURE = join(samplesDir, 'rest-v3-PaymentBatchDetailReport_Daily_Classic.sul-dlss-fixture.csv');

/** A Transaction Request report of one day, with its REST-era metadata line unless `metadata` is false. */
function transactionRequestCsv(header: string, row: string, metadata = true): string {
  return [
    ...(metadata
      ? [
          'org1,TransactionRequestReport_Daily,TransactionRequest,1.10,2024-03-01T00:00:00Z to 2024-03-02T00:00:00Z',
        ]
      : []),
    header,
    row,
    '',
  ].join('\n');
}

describe('import checks the file against the definition', () => {
  let dir: string;
  let database: TestDatabase;
  let db: pg.Client;
  let config: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cybs-import-definition-'));
    config = join(dir, 'config.yaml');
    await writeFile(config, 'log:\n  level: silent\n');
    database = await createTestDatabase('import_definition');
    db = new pg.Client({ connectionString: database.url });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const importFile = (file: string, ...extra: string[]) =>
    cli(['--config', config, 'import', file, ...extra], { env: { DATABASE_URL: database.url } });
  const write = async (name: string, text: string) => {
    await writeFile(join(dir, name), text);
    return join(dir, name);
  };
  /** What an import could have changed: the table's columns and rows, schema changes, runs. */
  const snapshot = async (table: string) => ({
    columns: (
      await db.query(
        `select column_name from information_schema.columns where table_schema = 'cybs' and table_name = $1 order by ordinal_position`,
        [table],
      )
    ).rows.map((r) => r.column_name as string),
    rows: (await db.query(`select count(*)::int as n from cybs.${table}`)).rows[0].n as number,
    schemaChanges: (await db.query(`select count(*)::int as n from etl.schema_changes`)).rows[0].n as number,
    runs: (await db.query(`select count(*)::int as n from etl.runs`)).rows[0].n as number,
  });

  it('a Transaction Request report goes into cybs.transaction_request (the table of the next tests)', async () => {
    const file = await write(
      'tr.csv',
      transactionRequestCsv(
        'request_id,transaction_date,merchant_id,amount,currency_code',
        '7000000000000000000001,2024-03-01T10:00:00Z,org1,10.00,USD',
      ),
    );
    const r = await importFile(file);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('into cybs.transaction_request (organization org1): 1 rows loaded');
  });

  it('the sul-dlss Payment Batch Detail file imported as TransactionRequestClass is refused, exit 2, the table untouched', async () => {
    const before = await snapshot('transaction_request');
    const r = await importFile(FIXTURE, '--report-definition', 'TransactionRequestClass');
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      'cybs-etl: rest-v3-PaymentBatchDetailReport_Daily_Classic.sul-dlss-fixture.csv: its metadata line names a "PaymentBatchDetail" report (PaymentBatchDetailClass), not TransactionRequestClass: ' +
        'import it with --report-definition PaymentBatchDetailClass, or without --report-definition; nothing was imported.\n',
    );
    expect(r.stdout).toBe('');
    expect(await snapshot('transaction_request')).toEqual(before);
    expect(before.columns).not.toContain('batch_id');
  });

  it('without --report-definition, a file is imported as the definition its metadata names', async () => {
    const r = await importFile(FIXTURE);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('into cybs.payment_batch_detail (organization wfgsulair): 1 rows loaded');
    const legacy = await importFile(
      join(samplesDir, 'legacy-docs-PaymentBatchDetailReport.csv'),
      '--organization-id',
      'CyberSource',
    );
    expect(legacy.code, legacy.stderr).toBe(0);
    expect(legacy.stdout).toContain(
      'into cybs.payment_batch_detail (organization CyberSource): 3 rows loaded',
    );
  });

  it('a file that names no report type needs --report-definition', async () => {
    const file = await write(
      'bare.csv',
      transactionRequestCsv('request_id,amount', '7000000000000000000002,1.00', false),
    );
    const r = await importFile(file, '--organization-id', 'org1');
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      'cybs-etl: bare.csv does not name its report type (no metadata line that names one); pass --report-definition, e.g. --report-definition PaymentBatchDetailClass.\n',
    );
  });

  it('a header sharing fewer than half of its columns with the table is refused, and --force imports it', async () => {
    const file = await write(
      'foreign.csv',
      transactionRequestCsv(
        'request_id,Kundennummer,Betrag,Waehrung,Buchungstag',
        '7000000000000000000003,K-1,5.00,EUR,2024-03-01',
      ),
    );
    const before = await snapshot('transaction_request');
    const r = await importFile(file, '--report-definition', 'TransactionRequestClass');
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      'cybs-etl: foreign.csv: only 1 of its 5 header columns are catalog fields or columns of cybs.transaction_request ' +
        '(not "Kundennummer", "Betrag", "Waehrung", "Buchungstag"); check --report-definition, or pass --force to import it and add those columns; nothing was imported.\n',
    );
    expect(await snapshot('transaction_request')).toEqual(before);
    const forced = await importFile(file, '--report-definition', 'TransactionRequestClass', '--force');
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stdout).toContain('columns added: kundennummer, betrag, waehrung, buchungstag');
    // Columns the table has now count as known: the same header is accepted without --force.
    const again = await importFile(file, '--report-definition', 'TransactionRequestClass');
    expect(again.code, again.stderr).toBe(0);
  });

  it('schemaChanges: freeze refuses a new column, naming it, and leaves the table as it was', async () => {
    const frozen = join(dir, 'frozen.yaml');
    await writeFile(
      frozen,
      'log:\n  level: silent\npipelines:\n  transaction_request:\n    schemaChanges: freeze\n',
    );
    const file = await write(
      'wider.csv',
      transactionRequestCsv(
        'request_id,transaction_date,merchant_id,amount,currency_code,BillTo.Email',
        '7000000000000000000004,2024-03-01T11:00:00Z,org1,20.00,USD,a@example.com',
      ),
    );
    const before = await snapshot('transaction_request');
    const r = await cli(['--config', frozen, 'import', file], { env: { DATABASE_URL: database.url } });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^cybs-etl: cybs\.transaction_request has no column "bill_to_email", which import:\S+ brings, and pipelines\.transaction_request\.schemaChanges is freeze: add it to the table, or set schemaChanges: evolve; nothing was loaded\.\n$/,
    );
    const after = await snapshot('transaction_request');
    expect({ ...after, runs: before.runs }).toEqual(before);
    // The default, evolve, adds it.
    const evolved = await importFile(file);
    expect(evolved.code, evolved.stderr).toBe(0);
    expect(evolved.stdout).toContain('columns added: bill_to_email');
  });
});

describe('schemaChanges: freeze fails a window whose report brings a new column', () => {
  let world: E2eWorld;
  beforeAll(async () => {
    world = await createE2eWorld({
      prefix: 'freeze',
      configExtra: 'pipelines:\n  transaction_request:\n    schemaChanges: freeze\n',
    });
  });
  afterAll(async () => world?.close());

  it('fails the window with the columns named; nothing of it is loaded', async () => {
    const r = await world.run([
      'backfill',
      '--pipelines',
      'transaction_request',
      '--from',
      '2024-03-04',
      '--to',
      '2024-03-04',
    ]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/windows failed\s+1\b/);
    const state = await windowState(world.db, 'transaction_request', '2024-03-04');
    expect(state?.status).toBe('failed');
    expect(state?.code).toBe('LOAD_SCHEMA_FROZEN');
    expect(state?.message).toMatch(
      /^cybs\.transaction_request has no column "[a-z_0-9]+"(, "[a-z_0-9]+"){0,7}( \(and \d+ more\))?, which TransactionRequestReport_Daily\/2024-03-05 brings, and pipelines\.transaction_request\.schemaChanges is freeze/,
    );
    // The table exists from the start (the cybs_analytics views read it) and stays as it was:
    // without the columns the message names, and without a row.
    const named = /has no column "([a-z_0-9]+)"/.exec(state!.message!)![1];
    const column = await world.db.query(
      `select count(*)::int as n from information_schema.columns
        where table_schema = 'cybs' and table_name = 'transaction_request' and column_name = $1`,
      [named],
    );
    expect(column.rows[0].n).toBe(0);
    const rows = await world.db.query(`select count(*)::int as n from cybs.transaction_request`);
    expect(rows.rows[0].n).toBe(0);
  });
});
