import { describe, expect, it } from 'vitest';
import { compileCacheDirectory } from '../../src/compile-cache.js';

describe('compileCacheDirectory', () => {
  const home = () => '/home/ana';

  it('is NODE_COMPILE_CACHE when set (Node’s own variable)', () => {
    expect(compileCacheDirectory({ NODE_COMPILE_CACHE: '/var/cache/node', XDG_CACHE_HOME: '/x' }, home)).toBe(
      '/var/cache/node',
    );
  });

  it('is under XDG_CACHE_HOME when it is an absolute path, else under ~/.cache', () => {
    expect(compileCacheDirectory({ XDG_CACHE_HOME: '/cache' }, home)).toBe(
      '/cache/cybs-etl/node-compile-cache',
    );
    expect(compileCacheDirectory({ XDG_CACHE_HOME: 'relative' }, home)).toBe(
      '/home/ana/.cache/cybs-etl/node-compile-cache',
    );
    expect(compileCacheDirectory({}, home)).toBe('/home/ana/.cache/cybs-etl/node-compile-cache');
  });

  it('is none without a home directory (never the shared temporary directory)', () => {
    expect(compileCacheDirectory({}, () => '')).toBeUndefined();
    expect(
      compileCacheDirectory({}, () => {
        throw new Error('no home');
      }),
    ).toBeUndefined();
  });
});
