/**
 * `cybs-etl import` recognises a report by its content, not its file name (issue 26 #15): the same
 * Funding Detail report imported as `funding.csv` and then as `funding (1).csv` (a browser's name for
 * a second download) replaces its earlier load instead of doubling a table keyed by source and line;
 * a corrected version of the report (same metadata, other rows) replaces it too; a file without
 * metadata is recognised by its bytes; another report adds its own rows.
 */
import { createHash } from 'node:crypto';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';

const HEADER = 'request_id,transaction_date,merchant_id,amount,currency_code';

function fundingReport(day: string, rows: number, metadata = true): string {
  const next = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
  const lines = metadata
    ? [`org1,FundingDetailReport_Daily,FundingDetail,1.0,${day}T00:00:00Z to ${next}T00:00:00Z,,,`]
    : [];
  lines.push(HEADER);
  for (let i = 0; i < rows; i++) {
    lines.push(`${7000000000000000000000 + i},${day}T10:00:00Z,org1,${(i + 1).toFixed(2)},USD`);
  }
  return `${lines.join('\n')}\n`;
}

describe('cybs-etl import recognises a report by its content', () => {
  let dir: string;
  let database: TestDatabase;
  let db: pg.Client;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cybs-import-identity-'));
    database = await createTestDatabase('import_identity');
    await writeFile(join(dir, 'config.yaml'), 'log:\n  level: silent\n');
    db = new pg.Client({ connectionString: database.url });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const importFile = (name: string, ...extra: string[]) =>
    cli(
      [
        '--config',
        join(dir, 'config.yaml'),
        'import',
        join(dir, name),
        '--report-definition',
        'FundingDetailClass',
        ...extra,
      ],
      { env: { DATABASE_URL: database.url } },
    );
  const rows = async () =>
    (
      await db.query(
        `select count(*)::int as n, count(distinct _source)::int as sources from cybs.funding_detail`,
      )
    ).rows[0] as { n: number; sources: number };

  it('the same report under another file name replaces its earlier load', async () => {
    await writeFile(join(dir, 'funding.csv'), fundingReport('2024-03-01', 20));
    const first = await importFile('funding.csv');
    expect(first.code, first.stderr).toBe(0);
    expect(await rows()).toEqual({ n: 20, sources: 1 });

    await copyFile(join(dir, 'funding.csv'), join(dir, 'funding (1).csv'));
    const second = await importFile('funding (1).csv');
    expect(second.code, second.stderr).toBe(0);
    // The very bytes again: recognised as that import's, nothing written.
    expect(second.stdout).toContain(
      'It is the very file imported before (import:funding.csv:FundingDetailReport_Daily:2024-03-01T00:00:00Z..2024-03-02T00:00:00Z)',
    );
    expect(await rows()).toEqual({ n: 20, sources: 1 });
  });

  it('a corrected version of the report (same metadata) replaces it, whatever its name', async () => {
    await writeFile(join(dir, 'funding-corrected.csv'), fundingReport('2024-03-01', 18));
    const r = await importFile('funding-corrected.csv');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('2 removed');
    expect(await rows()).toEqual({ n: 18, sources: 1 });
  });

  it("another day's report adds its own rows", async () => {
    await writeFile(join(dir, 'funding.csv'), fundingReport('2024-03-02', 5));
    const r = await importFile('funding.csv');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toContain('replaced');
    expect(await rows()).toEqual({ n: 23, sources: 2 });
  });

  it('a file without metadata is recognised by its bytes', async () => {
    await writeFile(join(dir, 'bare.csv'), fundingReport('2024-03-03', 7, false));
    await copyFile(join(dir, 'bare.csv'), join(dir, 'bare (1).csv'));
    const run = (name: string) => importFile(name, '--organization-id', 'org1');
    expect((await run('bare.csv')).code).toBe(0);
    expect(await rows()).toEqual({ n: 30, sources: 3 });
    const again = await run('bare (1).csv');
    expect(again.code, again.stderr).toBe(0);
    // The identity is the first 32 hex digits of the SHA-256 of the file's bytes.
    const sha256 = createHash('sha256')
      .update(await readFile(join(dir, 'bare.csv')))
      .digest('hex');
    expect(again.stdout).toContain(
      `It is the very file imported before (import:bare.csv:sha256-${sha256.slice(0, 32)})`,
    );
    expect(await rows()).toEqual({ n: 30, sources: 3 });
  });

  it('refuses a file that is no report of the definition, and loads nothing of it (issue 26 #4)', async () => {
    const before = await rows();
    await writeFile(
      join(dir, 'funding.html.csv'),
      '<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>Session expired</body></html>\n',
    );
    const r = await importFile('funding.html.csv', '--organization-id', 'org1');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'funding.html.csv: the body is not a FundingDetailClass CSV report: it has no metadata line and no header naming a field of the report (it starts with "<!DOCTYPE html> <html><head><title>Sign in</title></head><bo"); nothing of it is loaded.',
    );
    expect(await rows()).toEqual(before);
  });

  it('the same bytes again write nothing; a row changed by hand since is restored alone', async () => {
    await writeFile(join(dir, 'funding-05.csv'), fundingReport('2024-03-05', 20));
    const ofDay = `_source like '%2024-03-05%'`;
    const written = async () =>
      (
        await db.query(`select _source_row::int as row, xmin::text as x, amount::text as amount from cybs.funding_detail
                        where ${ofDay} order by _source_row`)
      ).rows as { row: number; x: string; amount: string }[];
    const first = await importFile('funding-05.csv');
    expect(first.code, first.stderr).toBe(0);
    const before = await written();
    expect(before).toHaveLength(20);

    const again = await importFile('funding-05.csv');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('(0 new, 0 updated, 20 unchanged, 0 removed)');
    expect(again.stdout).toContain('It is the very file imported before');
    expect(await written()).toEqual(before);

    const touched = before[3]!.row;
    await db.query(`update cybs.funding_detail set amount = 999 where _source_row = $1 and ${ofDay}`, [
      touched,
    ]);
    const restored = await importFile('funding-05.csv');
    expect(restored.code, restored.stderr).toBe(0);
    const after = await written();
    expect(after.map((r) => r.amount)).toEqual(before.map((r) => r.amount));
    // Only the touched row was written again.
    expect(after.filter((r, i) => r.x !== before[i]!.x).map((r) => r.row)).toEqual([touched]);

    const fourth = await importFile('funding-05.csv');
    expect(fourth.stdout).toContain('(0 new, 0 updated, 20 unchanged, 0 removed)');
    expect(await written()).toEqual(after);
    // The other tests count every row of the table.
    await db.query(`delete from cybs.funding_detail where ${ofDay}`);
  });
});
