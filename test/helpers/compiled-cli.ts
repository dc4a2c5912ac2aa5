import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Compile src/ and pipelines/ as deployed (`node dist/src/cli.js`, no tsx) into a cache folder under
 * node_modules (so the package root, package.json and sql/, are found from the compiled files), and
 * return the path of the compiled CLI. Used where a figure must describe the product as shipped:
 * memory measurements and the benchmark.
 */
export function compileCli(folder: string): string {
  const out = path.join(root, 'node_modules', '.cache', folder);
  const r = spawnSync(
    process.execPath,
    [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', out],
    { cwd: root, stdio: 'inherit' },
  );
  if (r.status !== 0) throw new Error('tsc failed');
  return path.join(out, 'src', 'cli.js');
}
