/**
 * Audit #8: `cybs-etl import` of the real Transaction Detail XML (killbill `tdr_1_6`, DOCTYPE'd)
 * as a Transaction Request report lands its request in cybs.transaction_request (RequestDate as
 * the transaction date, values typed), its three application replies and its line item in the
 * child tables; importing it again changes nothing; the same file in UTF-16 loads alike. On
 * PostgreSQL and on the embedded warehouse. `pipelines --sql` declares the child tables with their comments.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATALOG_FIELDS } from '../../src/catalog/index.js';
import { LINEAGE_COLUMNS } from '../../src/load/table-spec.js';
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import type { Warehouse } from '../../src/warehouse/warehouse.js';
import { cli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { warehouseTempDir } from '../helpers/temp-dir.js';

const SAMPLE = resolve(
  process.cwd(),
  '..',
  'shared',
  'samples',
  'cybersource',
  'transaction-detail-tdr_1_6.killbill-excerpt.xml',
);
const REQUEST_ID = '2434465504100167904567';

describe.each(['postgres', 'embedded'])('cybs-etl import of Transaction Detail XML on %s', (kind) => {
  let dir: string;
  let database: TestDatabase | undefined;
  let config: string;
  let warehouse: Warehouse | undefined;

  beforeAll(async () => {
    dir = await warehouseTempDir('cybs-import-tdr-');
    config = join(dir, 'config.yaml');
    await writeFile(config, `log:\n  level: silent\nwarehouse:\n  path: ${join(dir, 'warehouse')}\n`);
    if (kind === 'postgres') database = await createTestDatabase('importtdr');
  });
  afterAll(async () => {
    await warehouse?.close();
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const env = (): Record<string, string> => (database ? { DATABASE_URL: database.url } : {});
  const importSample = (file = SAMPLE) =>
    cli(
      [
        '--config',
        config,
        'import',
        file,
        '--report-definition',
        'TransactionRequestClass',
        '--format',
        'xml',
      ],
      { env: env() },
    );

  it('imports the request, its 3 application replies and its line item; a second import changes nothing', async () => {
    const first = await importSample();
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(
      'into cybs.transaction_request (organization ok_go): 1 rows loaded (1 new, 0 updated, 0 unchanged, 0 removed), 0 rejected',
    );
    expect(first.stdout).toContain(
      'cybs.transaction_request_application_reply: 3 rows (3 new, 0 updated, 0 unchanged, 0 removed), 0 rejected',
    );
    expect(first.stdout).toContain(
      'cybs.transaction_request_line_item: 1 rows (1 new, 0 updated, 0 unchanged, 0 removed), 0 rejected',
    );
    const again = await importSample();
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('1 rows loaded (0 new, 0 updated, 1 unchanged, 0 removed), 0 rejected');
    expect(again.stdout).toContain('application_reply: 3 rows (0 new, 0 updated, 3 unchanged, 0 removed)');
  });

  it('lands the values typed: the transaction date in UTC, amounts exact, items keyed by request and number', async () => {
    warehouse = await openWarehouse(
      database ? { url: database.url, path: '' } : { path: join(dir, 'warehouse') },
    );
    const request = await sql<Record<string, unknown>>`
      select request_id, to_char(transaction_date at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as transaction_date,
             merchant_reference_number, transaction_reference_number, amount::text as amount, currency_code,
             bill_to_first_name, bill_to_phone, merchant_defined_data_field1, _organization_id, _source_row::int as _source_row
        from cybs.transaction_request`.execute(warehouse.db);
    expect(request.rows).toEqual([
      {
        request_id: REQUEST_ID,
        transaction_date: '2009-05-27T12:19:10Z',
        merchant_reference_number: '1234',
        transaction_reference_number: '00013791KV8BZF3P',
        amount: '2.00',
        currency_code: 'USD',
        bill_to_first_name: 'sample',
        bill_to_phone: null,
        merchant_defined_data_field1: 'ca',
        _organization_id: 'ok_go',
        _source_row: 1,
      },
    ]);
    const replies = await sql<Record<string, unknown>>`
      select request_id, reply_number, application_name, application_rcode, application_rflag, application_rmsg
        from cybs.transaction_request_application_reply order by reply_number`.execute(warehouse.db);
    expect(replies.rows).toEqual([
      {
        request_id: REQUEST_ID,
        reply_number: 1,
        application_name: 'ics_auth',
        application_rcode: '1',
        application_rflag: 'SOK',
        application_rmsg: 'Request was processed successfully.',
      },
      {
        request_id: REQUEST_ID,
        reply_number: 2,
        application_name: 'ics_decision',
        application_rcode: '0',
        application_rflag: 'DREVIEW',
        application_rmsg: 'Decision is REVIEW.',
      },
      {
        request_id: REQUEST_ID,
        reply_number: 3,
        application_name: 'ics_score',
        application_rcode: '1',
        application_rflag: 'DSCORE',
        application_rmsg: 'Score exceeds threshold. Score = 84',
      },
    ]);
    const items = await sql<Record<string, unknown>>`
      select request_id, line_items_number, line_items_fulfillment_type, line_items_quantity,
             line_items_unit_price::text as unit_price, line_items_tax_amount::text as tax_amount,
             line_items_product_code, _source_row::int as _source_row
        from cybs.transaction_request_line_item`.execute(warehouse.db);
    expect(items.rows).toEqual([
      {
        request_id: REQUEST_ID,
        line_items_number: 0,
        line_items_fulfillment_type: 'P',
        line_items_quantity: 1,
        unit_price: '2.00',
        tax_amount: '0.00',
        line_items_product_code: 'default',
        _source_row: 1,
      },
    ]);
    const rejects = await sql<{ n: number }>`select count(*)::int as n from etl.rejects`.execute(
      warehouse.db,
    );
    expect(rejects.rows[0]!.n).toBe(0);
  });

  it('adds no text column for a documented field: every column is a catalog field', async () => {
    const known = new Set([...CATALOG_FIELDS.map((f) => f.column), ...LINEAGE_COLUMNS.map((c) => c.name)]);
    const columns = await sql<{ column_name: string }>`
      select column_name from information_schema.columns
       where table_schema = 'cybs' and table_name = 'transaction_request'`.execute(warehouse!.db);
    expect(columns.rows.map((r) => r.column_name).filter((c) => !known.has(c))).toEqual([]);
  });

  it('pipelines --sql declares the child tables, keyed by request id and number, with column comments', async () => {
    const ddl = await cli(['--config', config, 'pipelines', '--sql'], { env: env() });
    expect(ddl.code).toBe(0);
    expect(ddl.stdout).toContain('create table if not exists "cybs"."transaction_request_application_reply"');
    expect(ddl.stdout).toContain(
      'create unique index if not exists "transaction_request_line_item_natural_key" on "cybs"."transaction_request_line_item" ("request_id", "line_items_number", "_organization_id")',
    );
    expect(ddl.stdout).toMatch(
      /comment on column "cybs"\."transaction_request_application_reply"\."reply_number" is 'position of the reply/,
    );
    expect(ddl.stdout).toMatch(/comment on column "cybs"\."transaction_request_line_item"\."_source_row" is/);
  });

  it.each([
    ['with a byte order mark, little-endian', 'le-bom.xml', true, false],
    ['without a mark, big-endian', 'be.xml', false, true],
  ])('reads the sample in UTF-16 %s', async (_, name, bom, swap) => {
    const text = (await readFile(SAMPLE, 'utf8')).replace(/encoding="UTF-8"/i, 'encoding="UTF-16"');
    const bytes = Buffer.from((bom ? '\uFEFF' : '') + text, 'utf16le');
    await writeFile(join(dir, name), swap ? bytes.swap16() : bytes);
    const r = await importSample(join(dir, name));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /into cybs\.transaction_request \(organization ok_go\): 1 rows loaded .*, 0 rejected/,
    );
    expect(r.stdout).toMatch(/cybs\.transaction_request_application_reply: 3 rows .*, 0 rejected/);
  });
});
