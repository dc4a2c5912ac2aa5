import module from 'node:module';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

/**
 * Node's compile cache for the CLI's bundle (`module.enableCompileCache`, Node ≥ 22.1): V8 keeps the
 * code it compiled for the 5 MB bundle on disk, and every later start reads it instead of compiling
 * the bundle again, so the CLI starts sooner.
 *
 * The cache lives in the user's own cache directory, not in Node's default (a directory in the
 * shared temporary directory, where another user of the machine could have put files first):
 * `$NODE_COMPILE_CACHE` when set (Node's own variable), else `$XDG_CACHE_HOME/cybs-etl/node-compile-cache`,
 * else `~/.cache/cybs-etl/node-compile-cache`; none (no cache) without a home directory.
 * `NODE_DISABLE_COMPILE_CACHE=1` turns it off, as for any Node program.
 */
export function compileCacheDirectory(
  env: Readonly<Record<string, string | undefined>>,
  home: () => string = homedir,
): string | undefined {
  const own = env['NODE_COMPILE_CACHE'];
  if (own) return own;
  const xdg = env['XDG_CACHE_HOME'];
  if (xdg && isAbsolute(xdg)) return join(xdg, 'cybs-etl', 'node-compile-cache');
  let dir: string;
  try {
    dir = home();
  } catch {
    return undefined;
  }
  return dir && isAbsolute(dir) ? join(dir, '.cache', 'cybs-etl', 'node-compile-cache') : undefined;
}

/** Turn the compile cache on where Node has one; never throws (a cache that fails is no cache). */
export function enableCompileCache(env: Readonly<Record<string, string | undefined>>): void {
  const node = module as { enableCompileCache?: (dir?: string) => unknown };
  if (typeof node.enableCompileCache !== 'function') return;
  const dir = compileCacheDirectory(env);
  if (dir === undefined) return;
  try {
    node.enableCompileCache(dir);
  } catch {
    // Not fatal: the CLI only starts slower.
  }
}
