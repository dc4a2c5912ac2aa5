#!/usr/bin/env -S MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=4 --initial-old-space-size=64
/**
 * The package's bin, dist/cli.mjs (scripts/build.mjs): turns on Node's compile cache
 * (src/compile-cache.ts), then loads the CLI's bundle (dist/cybs-etl.mjs, built from pipelines/cli.ts)
 * and runs it. The cache must be on before the bundle is compiled, and an old Node.js must be
 * refused before the bundle's syntax can trip it, hence this small module in front of it. The shebang carries the flags and environment of src/runtime-flags.ts.
 */
import { enableCompileCache } from '../src/compile-cache.js';
import { unsupportedNodeMessage } from '../src/node-support.js';

const tooOld = unsupportedNodeMessage(process.versions.node);
if (tooOld !== undefined) {
  process.stderr.write(`${tooOld}\n`);
  process.exit(2);
}
enableCompileCache(process.env);
const { main } = await import('./cli.js');
await main();
