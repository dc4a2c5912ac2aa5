/**
 * Issue 26 #19 through `cybs-etl import`: the real Transaction Detail XML (killbill `tdr_1_6`, its
 * default namespace the report's) with hostile records beside its own. A record with a character
 * reference XML does not allow or an undefined entity is a reject (raw text and reason in
 * etl.rejects), never a row with the character dropped or the reference as text; an element of
 * another namespace is no record at all. On PostgreSQL and on the embedded warehouse.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

describe.each(['postgres', 'embedded'])('cybs-etl import of hostile XML on %s', (kind) => {
  let dir: string;
  let database: TestDatabase | undefined;
  let config: string;

  beforeAll(async () => {
    dir = await warehouseTempDir('cybs-hostile-xml-');
    config = join(dir, 'config.yaml');
    await writeFile(config, `log:\n  level: silent\nwarehouse:\n  path: ${join(dir, 'warehouse')}\n`);
    if (kind === 'postgres') database = await createTestDatabase('hostilexml');
  });
  afterAll(async () => {
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const env = (): Record<string, string> => (database ? { DATABASE_URL: database.url } : {});
  const run = (args: string[]) => cli(['--config', config, ...args], { env: env() });
  const query = async <T>(text: string): Promise<T[]> => {
    const r = await run(['sql', '--json', text]);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as T[];
  };

  it('rejects records with illegal references or undefined entities, and reads no foreign element as a record', async () => {
    const real = await readFile(SAMPLE, 'utf8');
    const record = /<Request [\s\S]*?<\/Request>/.exec(real)![0];
    const withId = (id: string, city: string) =>
      record
        .replace(/RequestID="\d+"/, `RequestID="${id}"`)
        .replace('<City>Big City</City>', `<City>${city}</City>`);
    const bad = ['&#0;', '&#xD800;', '&#x110000;', '&undefined;'];
    const foreign = withId('9100000000000000000099', 'Evil')
      .replace('<Request ', '<evil:Request xmlns:evil="urn:evil" ')
      .replace('</Request>', '</evil:Request>');
    const text = real.replace(
      record,
      [
        record,
        ...bad.map((b, i) => withId(`910000000000000000000${i}`, `x${b}y`)),
        foreign,
        withId('9100000000000000000098', 'A&#x42;C'),
        // Enough good records that four rejects stay under the import's reject threshold (1%).
        ...Array.from({ length: 400 }, (_, i) => withId(`92${String(i).padStart(20, '0')}`, 'Good')),
      ].join('\n'),
    );
    await writeFile(join(dir, 'hostile.xml'), text);
    const r = await run([
      'import',
      join(dir, 'hostile.xml'),
      '--report-definition',
      'TransactionRequestClass',
      '--format',
      'xml',
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /into cybs\.transaction_request \(organization ok_go\): 402 rows loaded \([^)]*\), 4 rejected/,
    );
    const rows = await query<{ request_id: string; bill_to_city: string }>(
      "select request_id, bill_to_city from cybs.transaction_request where bill_to_city <> 'Good' order by request_id",
    );
    expect(rows).toEqual([
      { request_id: '2434465504100167904567', bill_to_city: 'Big City' },
      { request_id: '9100000000000000000098', bill_to_city: 'ABC' },
    ]);
    const rejects = await query<{ record_number: number; raw_text: string; message: string }>(
      'select record_number::int as record_number, raw_text, message from etl.rejects order by record_number',
    );
    expect(rejects.map((x) => x.record_number)).toEqual([2, 3, 4, 5]);
    for (const [i, reject] of rejects.entries()) {
      expect(reject.raw_text).toContain(`<City>x${bad[i]!}y</City>`);
      expect(reject.message).toMatch(/hostile\.xml record \d+: the (character reference|entity) /);
    }
  });
});
