/**
 * The ground-truth comparison (test/helpers/ground-truth.ts) on a real end-to-end load: a backfill
 * from the simulator equals the truth, and each kind of damage to the warehouse (a lost row, a
 * duplicated window, a changed amount, a leftover source) is reported.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../packages/simulator/src/server/start-simulator.js';
import type { SimulatorHandle } from '../../packages/simulator/src/server/start-simulator.js';
import { cli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { compareWithGroundTruth, duplicateRows, normaliseDecimal } from '../helpers/ground-truth.js';

const NOW = Date.parse('2024-03-10T12:00:00Z');

describe('compareWithGroundTruth', () => {
  let sim: SimulatorHandle;
  let database: TestDatabase;
  let dir: string;
  let db: pg.Client;

  beforeAll(async () => {
    sim = await startSimulator({
      seed: 11,
      organizations: 2,
      transactionsPerDay: 25,
      startDate: '2024-03-01',
      clock: () => NOW,
    });
    database = await createTestDatabase('gt');
    dir = await mkdtemp(join(tmpdir(), 'cybs-gt-'));
    const config = join(dir, 'config.yaml');
    await writeFile(
      config,
      `log:\n  level: warn\ndefaults:\n  organizations: [${sim.organizations.join(', ')}]\n`,
    );
    const k = sim.portfolioCredentials;
    const r = await cli(
      [
        '--config',
        config,
        '--now',
        new Date(NOW).toISOString(),
        'backfill',
        '--from',
        '2024-03-02',
        '--to',
        '2024-03-04',
      ],
      {
        env: {
          CYBS_BASE_URL: sim.baseUrl,
          CYBS_MERCHANT_ID: k.merchantId,
          CYBS_KEY_ID: k.keyId,
          CYBS_SHARED_SECRET: k.sharedSecret,
          CYBS_PORTFOLIO_ID: k.portfolioId,
          DATABASE_URL: database.url,
        },
      },
    );
    expect(r.code, r.stdout + r.stderr).toBe(0);
    db = new pg.Client({ connectionString: database.url });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await database?.drop();
    await sim?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const compare = () =>
    compareWithGroundTruth(db, {
      truth: (o, s, e) => sim.groundTruth(o, s, e),
      organizations: sim.organizations,
      startDate: '2024-03-02',
      endDate: '2024-03-04',
    });

  it('finds a backfill equal to the truth, with nothing duplicated', async () => {
    const result = await compare();
    expect(result.mismatches).toEqual([]);
    expect(result.rowsExpected).toBeGreaterThan(300);
    expect(result.sourcesCompared).toBeGreaterThan(50);
    expect(await duplicateRows(db)).toBe(0);
  });

  it('reports a lost row, a changed amount and a window copied under another source', async () => {
    await db.query('begin');
    try {
      const victim = await db.query(
        `select request_id, _source from cybs.transaction_request where _organization_id = $1 order by request_id limit 2`,
        [sim.organizations[0]],
      );
      await db.query(`delete from cybs.transaction_request where request_id = $1`, [
        victim.rows[0].request_id,
      ]);
      await db.query(`update cybs.transaction_request set amount = amount + 0.01 where request_id = $1`, [
        victim.rows[1].request_id,
      ]);
      await db.query(
        `with k as (insert into etl.sources (organization_id, source)
                    select distinct _organization_id, _source || 'x' from cybs.net_funding_totals
                     where _organization_id = $1
                    returning source_key, organization_id, source)
         insert into cybs.net_funding_totals
                (total_type, currency, value, _organization_id, _source, _source_row, _source_key)
         select t.total_type, t.currency, t.value, t._organization_id, t._source || 'x', t._source_row, k.source_key
           from cybs.net_funding_totals t join k on k.organization_id = t._organization_id and k.source = t._source || 'x'
          where t._organization_id = $1`,
        [sim.organizations[1]],
      );
      const result = await compare();
      expect(result.ok).toBe(false);
      expect(result.rowsMissing).toBe(1);
      expect(result.rowsExtra).toBeGreaterThan(0);
      expect(result.mismatches.join('\n')).toMatch(/transaction_request .* rows, truth/);
      expect(result.mismatches.join('\n')).toMatch(/sum\(amount\)/);
      expect(result.mismatches.join('\n')).toMatch(/source the truth does not expect/);
    } finally {
      await db.query('rollback');
    }
    expect((await compare()).mismatches).toEqual([]);
  });

  it('normalises exact decimals without floats', () => {
    expect(normaliseDecimal('0012.3400')).toBe('12.34');
    expect(normaliseDecimal('-0.00')).toBe('0');
    expect(normaliseDecimal('123456789012345678.10')).toBe('123456789012345678.1');
    expect(normaliseDecimal(null)).toBe('0');
  });
});
