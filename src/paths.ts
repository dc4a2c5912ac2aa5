import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cachedRoot: string | undefined;

/** The package root (where package.json and sql/ live), from source or from dist/. */
export function projectRoot(): string {
  if (cachedRoot) return cachedRoot;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate) && existsSync(join(dir, 'sql'))) return (cachedRoot = dir);
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cybs-etl: cannot find the package root (package.json beside sql/).');
    dir = parent;
  }
}

/** The version in package.json (for the User-Agent and --version). */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(join(projectRoot(), 'package.json'), 'utf8')) as { version: string };
  return pkg.version;
}
