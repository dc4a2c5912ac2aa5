/**
 * A re-load of an on-demand window (Purchase and Refund Detail) recognised from the pages' raw
 * bytes (pipeline/on-demand-raw-pages.ts): the very pages of the last load are neither scanned
 * nor spooled, and a row changed by hand since is restored from the page that holds it. A page that
 * differs, a load that needs every record, or a window last loaded without page digests goes the
 * full way. The tables end as a full re-load leaves them (the rows as first loaded).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ON_DEMAND_PIPELINES } from '../../pipelines/index.js';
import { OnDemandSpools } from '../../src/pipeline/on-demand-spools.js';
import { createE2eWorld } from '../helpers/e2e.js';
import type { E2eWorld } from '../helpers/e2e.js';

const def = ON_DEMAND_PIPELINES.find((p) => p.name === 'purchase_refund_details')!;
const DAY = '2024-03-03';
const TABLES = Object.values(def.tables).map((t) => `${t.schema}.${t.name}`);

describe('on-demand re-load of the same pages (raw page digests)', () => {
  let world: E2eWorld;
  /** Every table's rows but when they were written, in a stable order. */
  let original: Record<string, unknown[]>;
  const backfill = ['backfill', '--from', DAY, '--to', DAY, '--pipelines', 'purchase_refund_details'];
  const reload = () => world.run([...backfill, '--force']);
  const contents = async () => {
    const out: Record<string, unknown[]> = {};
    for (const table of TABLES) {
      const rows = await world.db.query(`select * from ${table} order by _source, _source_row`);
      out[table] = rows.rows.map(({ _loaded_at, _run_id, ...rest }) => (void _loaded_at, void _run_id, rest));
    }
    return out;
  };
  const fingerprint = async () =>
    (
      await world.db.query(
        `select fingerprint from etl.windows where pipeline = 'purchase_refund_details' and fingerprint is not null`,
      )
    ).rows.map((r) => {
      // The page digests and the spooled sections' digest (the writers change from load to load).
      const { pages, file } = r.fingerprint as {
        pages?: { sha256: string[]; counts: number[][] };
        file: unknown;
      };
      return { pages, file };
    });
  const windowCounts = async () =>
    (
      await world.db.query(`select counts from etl.windows where pipeline = 'purchase_refund_details'`)
    ).rows.map((r) => r.counts as Record<string, number>);
  const touchOneRow = () =>
    world.db.query(`update cybs.purchase_refund_settlements set amount = amount + 1
                     where ctid = (select ctid from cybs.purchase_refund_settlements order by _source_row offset 9 limit 1)`);
  /** Pages spooled by the re-load (OnDemandSpools.write), the result and the tables after it. */
  const reloadCounting = async () => {
    const write = vi.spyOn(OnDemandSpools.prototype, 'write');
    try {
      const r = await reload();
      expect(r.code, r.stdout + r.stderr).toBe(0);
      return { spooled: write.mock.calls.length };
    } finally {
      write.mockRestore();
    }
  };

  /**
   * After `change` (SQL) and a row changed by hand: the re-load spools every page, and leaves the
   * tables and the window's page digests as the first load left them.
   */
  const expectFullReload = async (change: string) => {
    const before = await fingerprint();
    await world.db.query(change);
    await touchOneRow();
    const { spooled } = await reloadCounting();
    expect(spooled).toBe(before[0]!.pages!.counts.length);
    expect(await contents()).toEqual(original);
    expect(await fingerprint()).toEqual(before);
  };

  beforeAll(async () => {
    world = await createE2eWorld({
      prefix: 'odsame',
      simulator: { transactionsPerDay: 60 },
      configExtra: 'pipelines:\n  purchase_refund_details:\n    pageLimit: 7\n',
    });
    const r = await world.run(backfill);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    original = await contents();
  });

  afterAll(async () => {
    await world?.close();
  });

  it('a first load records each page digest and what it gave each section', async () => {
    const [fp] = await fingerprint();
    const pages = fp!.pages!;
    expect(pages.counts.length).toBeGreaterThan(3);
    // The empty page that ended the paging has a digest, and no counts.
    expect(pages.sha256).toHaveLength(pages.counts.length + 1);
    expect(pages.counts.every((c) => c.length === pages.counts[0]!.length)).toBe(true);
    expect(original['cybs.purchase_refund_settlements']!.length).toBeGreaterThan(20);
  });

  it('the same pages after a row was changed by hand: nothing spooled, the row restored', async () => {
    const before = await fingerprint();
    await touchOneRow();
    expect(await contents()).not.toEqual(original);
    const { spooled } = await reloadCounting();
    expect(spooled).toBe(0);
    expect(await contents()).toEqual(original);
    expect((await windowCounts())[0]).toMatchObject({ updated: 1, inserted: 0, deleted: 0 });
    expect(await fingerprint()).toEqual(before);
    // And again: the tables are as the last load left them.
    const again = await reloadCounting();
    expect(again.spooled).toBe(0);
    expect((await windowCounts())[0]).toMatchObject({ updated: 0, inserted: 0, deleted: 0 });
  });

  it('the same pages after a row was deleted by hand: the pages kept are spooled and loaded in full', async () => {
    await expectFullReload(`delete from cybs.purchase_refund_settlements
      where ctid = (select ctid from cybs.purchase_refund_settlements order by _source_row offset 3 limit 1)`);
  });

  it('a page that differs from the last load’s: the pages before it spooled from their bytes, then the rest', async () => {
    // The last load's third page as if it had other bytes.
    await expectFullReload(`update etl.windows set fingerprint = jsonb_set(fingerprint, '{pages,sha256,2}', '"0"')
      where pipeline = 'purchase_refund_details'`);
  });

  it('a window last loaded without page digests (before them): the full way, and the digests recorded', async () => {
    await expectFullReload(`update etl.windows set fingerprint = fingerprint - 'pages'
      where pipeline = 'purchase_refund_details'`);
    // The next re-load recognises the pages.
    await touchOneRow();
    expect((await reloadCounting()).spooled).toBe(0);
    expect(await contents()).toEqual(original);
  });
});
