import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Build the CLI as shipped (`npm run build`: scripts/build.mjs, the one-file bundle and the
 * package's bin that runs it, without tsx) into a cache folder under node_modules (so the package
 * root, package.json and sql/, is found from it, and so are the dependencies left outside the
 * bundle), and return the path of the bin (cli.mjs). Used where a figure or a check must describe
 * the product as shipped: memory measurements, the bundled CLI's own test and the benchmark.
 */
export function compileCli(folder: string): string {
  const out = path.join(root, 'node_modules', '.cache', folder);
  const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'build.mjs'), out], {
    cwd: root,
    stdio: 'inherit',
  });
  if (r.status !== 0) throw new Error('the build (scripts/build.mjs) failed');
  return path.join(out, 'cli.mjs');
}
