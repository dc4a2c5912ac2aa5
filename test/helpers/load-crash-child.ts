/**
 * Child process of the crash test: loads the crash window and says on stdout when the COPY is well
 * under way (`COPY_STARTED`), so the parent can SIGKILL it mid-load. Prints `COMMITTED` if it ever
 * gets to the end (the parent treats that as a failed test).
 *
 * usage: node --import tsx test/helpers/load-crash-child.ts <postgres-url | embedded-data-dir> <rows>
 */
import { openWarehouse } from '../../src/warehouse/warehouse.js';
import { crashWindowOptions, recordCrashWindow } from './crash-window.js';
import { loadWindowThen } from './load-then.js';

const [target, rowsArg] = process.argv.slice(2);
if (!target || !rowsArg) throw new Error('usage: load-crash-child.ts <url | dir> <rows>');
const rows = Number(rowsArg);
const warehouse = await openWarehouse(
  target.startsWith('postgres') ? { url: target, path: '' } : { path: target },
);
let announced = false;
await loadWindowThen(
  warehouse,
  crashWindowOptions(rows, null, (produced) => {
    if (!announced && produced >= rows / 2) {
      announced = true;
      process.stdout.write('COPY_STARTED\n');
    }
  }),
  recordCrashWindow(null),
);
process.stdout.write('COMMITTED\n');
await warehouse.close();
