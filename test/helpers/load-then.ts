import { inWindowTransaction, loadWindowIn } from '../../src/load/window/load-window.js';
import type { LoadWindowOptions, LoadWindowResult } from '../../src/load/window/load-window.js';
import type { Db, Warehouse } from '../../src/warehouse/warehouse.js';

/**
 * A window load and then, in the same transaction, what the test records with it (as the pipeline
 * records the window's state, src/pipeline/window/commit.ts): committed together or not at all.
 */
export function loadWindowThen(
  warehouse: Warehouse,
  options: LoadWindowOptions,
  then?: (trx: Db, result: LoadWindowResult) => Promise<void>,
): Promise<LoadWindowResult> {
  return inWindowTransaction(warehouse, options, async (tx) => {
    const result = await loadWindowIn(tx, options);
    await then?.(tx.trx, result);
    return result;
  });
}
