/**
 * Issue 6: `cybs-etl import` of every CSV and XML sample file lands typed rows, value by value;
 * importing the same file twice changes nothing the second time. On PostgreSQL and on the embedded warehouse.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import type { Warehouse } from '../../src/warehouse/warehouse.js';
import { cli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { warehouseTempDir } from '../helpers/temp-dir.js';

const SAMPLES = resolve(process.cwd(), '..', 'shared', 'samples', 'cybersource');
const sample = (name: string) => join(SAMPLES, name);

interface Backend {
  name: string;
  env: () => Record<string, string>;
  config: () => string;
  open: () => Promise<Warehouse>;
}

describe.each(['postgres', 'embedded'])('cybs-etl import on %s', (kind) => {
  let dir: string;
  let database: TestDatabase | undefined;
  let backend: Backend;
  let warehouse: Warehouse;

  beforeAll(async () => {
    dir = await warehouseTempDir('cybs-import-');
    const config = join(dir, 'config.yaml');
    await writeFile(config, `log:\n  level: silent\nwarehouse:\n  path: ${join(dir, 'warehouse')}\n`);
    if (kind === 'postgres') database = await createTestDatabase('import');
    backend = {
      name: kind,
      env: (): Record<string, string> => (database ? { DATABASE_URL: database.url } : {}),
      config: () => config,
      open: () =>
        openWarehouse(database ? { url: database.url, path: '' } : { path: join(dir, 'warehouse') }),
    };
  });
  afterAll(async () => {
    await warehouse?.close();
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const importFile = (file: string, ...extra: string[]) =>
    cli(['--config', backend.config(), 'import', file, ...extra], { env: backend.env() });

  it('imports the REST-era Payment Batch Detail CSV with typed values', async () => {
    const r = await importFile(
      sample('rest-v3-PaymentBatchDetailReport_Daily_Classic.sul-dlss-fixture.csv'),
      '--report-definition',
      'PaymentBatchDetailClass',
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      'into cybs.payment_batch_detail (organization wfgsulair): 1 rows loaded (1 new',
    );
    const again = await importFile(
      sample('rest-v3-PaymentBatchDetailReport_Daily_Classic.sul-dlss-fixture.csv'),
      '--report-definition',
      'PaymentBatchDetailClass',
    );
    expect(again.stdout).toContain('(0 new, 0 updated, 1 unchanged, 0 removed), 0 rejected');
  });

  it('imports the legacy CSV (CRLF, negative refund) and the legacy XML', async () => {
    const csv = await importFile(
      sample('legacy-docs-PaymentBatchDetailReport.csv'),
      '--report-definition',
      'PaymentBatchDetailClass',
      '--organization-id',
      'CyberSource',
    );
    expect(csv.code).toBe(0);
    expect(csv.stdout).toContain('3 rows loaded (3 new');
    const xml = await importFile(
      sample('legacy-docs-PaymentBatchDetailReport.excerpt.xml'),
      '--report-definition',
      'PaymentBatchDetailClass',
      '--organization-id',
      'CyberSourceXml',
    );
    expect(xml.stderr).toBe('');
    expect(xml.code).toBe(0);
    expect(xml.stdout).toContain('1 rows loaded (1 new');
    const xmlAgain = await importFile(
      sample('legacy-docs-PaymentBatchDetailReport.excerpt.xml'),
      '--report-definition',
      'PaymentBatchDetailClass',
      '--organization-id',
      'CyberSourceXml',
    );
    expect(xmlAgain.stdout).toContain('1 unchanged');
  });

  it('lands every value typed: exact amounts, UTC timestamps, ids with leading zeros', async () => {
    warehouse ??= await backend.open();
    const rows = (
      await sql<Record<string, unknown>>`
        select _organization_id, request_id, batch_id, amount::text as amount, currency_code,
               to_char(batch_date at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as batch_date,
               to_char(transaction_date at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as transaction_date,
               merchant_reference_number, transaction_reference_number, application_name, batch_status
        from cybs.payment_batch_detail where _organization_id <> 'sul2025'
        order by _organization_id, request_id`.execute(warehouse.db)
    ).rows;
    expect(rows).toEqual([
      {
        _organization_id: 'CyberSource',
        request_id: '0004172180000167905139',
        batch_id: '123456',
        amount: '100.00',
        currency_code: 'USD',
        batch_date: '2003-05-01T00:00:00Z',
        transaction_date: null,
        merchant_reference_number: '45CBBDE3378A553',
        transaction_reference_number: '5652882910',
        application_name: null,
        batch_status: null,
      },
      expect.objectContaining({ request_id: '0004173790000167905139', amount: '-100.00' }),
      expect.objectContaining({ request_id: '0004174690000167905139', amount: '100.00' }),
      {
        _organization_id: 'CyberSourceXml',
        request_id: '0004172180000167905139',
        batch_id: '123456',
        amount: '100.00',
        currency_code: 'USD',
        batch_date: '2001-08-16T00:00:00Z',
        transaction_date: null,
        merchant_reference_number: '45CBBDE3378A553',
        transaction_reference_number: '5652882910',
        application_name: 'ics_bill',
        batch_status: null,
      },
      {
        _organization_id: 'wfgsulair',
        request_id: '6969304358566698703248',
        batch_id: '21265991580',
        amount: '35.00',
        currency_code: 'USD',
        batch_date: '2023-10-11T04:15:21Z',
        transaction_date: '2023-10-10T09:33:55Z',
        merchant_reference_number: 'f1cf56ef-5071-477f-b3ee-8779721a7f44',
        transaction_reference_number: '93211601',
        application_name: 'ics_bill,ics_auth',
        batch_status: 'BATCHED',
      },
    ]);
    const sum = await sql<{
      s: string;
    }>`select sum(amount)::text as s from cybs.payment_batch_detail`.execute(warehouse.db);
    expect(sum.rows[0]!.s).toBe('235.00');
  });

  it('imports the 2025 Classic file: merchant_data_1..5 (with stray spaces) land in the MDD columns', async () => {
    // The test's handle stays open while the CLI writes: the embedded server is shared.
    const r = await importFile(
      sample('rest-v3-PaymentBatchDetailReport_Daily_Classic.sul-dlss-2025.csv'),
      '--report-definition',
      'PaymentBatchDetailClass',
      '--organization-id',
      'sul2025',
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('1 rows loaded (1 new');
    expect(r.stdout).toContain(', 0 rejected');
    // Only catalog columns were added: no untyped column for a documented field.
    const added = /columns added: ([^.]*)\./.exec(r.stdout)?.[1]?.split(', ') ?? [];
    expect(added.filter((c) => /merchant_data|^\s/.test(c))).toEqual([]);
    const columns = (
      await sql<{ column_name: string }>`
        select column_name from information_schema.columns
        where table_schema = 'cybs' and table_name = 'payment_batch_detail'`.execute(warehouse.db)
    ).rows.map((c) => c.column_name);
    expect(columns.filter((c) => c.startsWith('merchant_data'))).toEqual([]);
    const rows = (
      await sql<Record<string, unknown>>`
        select request_id, amount::text as amount, application_name, batch_status,
               merchant_defined_data_field1, merchant_defined_data_field2, merchant_defined_data_field3,
               merchant_defined_data_field4, merchant_defined_data_field5
        from cybs.payment_batch_detail where _organization_id = 'sul2025'`.execute(warehouse.db)
    ).rows;
    expect(rows).toEqual([
      {
        request_id: '6969304358566698703248',
        amount: '35.00',
        application_name: 'ics_bill,ics_auth',
        batch_status: 'BATCHED',
        merchant_defined_data_field1: '7ff7f3c:cf238f9:66a1dfd',
        merchant_defined_data_field2: 'asdfasd:FSASFD:fsasdf',
        merchant_defined_data_field3: 'dasdfas:fghdfgh',
        merchant_defined_data_field4: 'sdfgsfg:brthbhy:5bbh5b7',
        merchant_defined_data_field5: '5bh5bh8',
      },
    ]);
  });

  it("accepts the seed's definition name and loads into the table named after the real one (audit #1)", async () => {
    // A Decision Manager Event Detail report (a file of another report is refused: issue 27 #4).
    const file = join(dir, 'dm-events.csv');
    await writeFile(
      file,
      'dm_org,DecisionManagerEventDetailReport_Daily,DecisionManagerEventDetail,1.10,2024-03-01T00:00:00Z to 2024-03-02T00:00:00Z\n' +
        'request_id,transaction_date,merchant_id,amount,currency_code\n' +
        '7000000000000000000001,2024-03-01T10:00:00Z,dm_org,10.00,USD\n',
    );
    const r = await importFile(file, '--report-definition', 'RiskDecisionEventDetailClass');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      'into cybs.decision_manager_event_detail (organization dm_org): 1 rows loaded',
    );
  });

  it('says clearly what is wrong with a bad invocation', async () => {
    const missing = await importFile(join(dir, 'nope.csv'), '--report-definition', 'PaymentBatchDetailClass');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/does not exist/);
    const unknown = await importFile(
      sample('legacy-docs-PaymentBatchDetailReport.csv'),
      '--report-definition',
      'NoSuchClass',
    );
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown report definition "NoSuchClass"/);
  });
});
