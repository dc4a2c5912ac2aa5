// @ts-check
/**
 * The arrows that must never exist between the parts of cybs-etl, checked by `npm run lint` over
 * src/, pipelines/ and the simulator package's src/ (dependency-cruiser). Type-only imports count: a part that names another's
 * types depends on it. Any violation fails the lint.
 */

/** The leaves: they import nothing of the product but the catalog and the error family. */
const LEAVES = '^src/(time|spool|copy-text)/';
/** The simulator package (imported as `@cybs-etl/simulator`, resolved to its files here). */
const SIMULATOR = '^packages/simulator/';
/** The one module of the simulator the product may import (its `simulator` command and start). */
const SIMULATOR_ENTRY = '^packages/simulator/src/index[.]ts$';

/** @param {string} name @param {string} comment @param {object} from @param {object} to */
const forbid = (name, comment, from, to) => ({ name, comment, severity: 'error', from, to });

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    forbid('no-circular', 'No import cycle, type-only ones included.', {}, { circular: true }),
    forbid(
      'not-to-unresolvable',
      'Every import resolves (otherwise the rules below would not see it).',
      {},
      { couldNotResolve: true },
    ),
    forbid(
      'parse-not-to-load',
      'Parsers hand typed records or COPY text down; they know no loader.',
      {
        path: '^src/parse/',
      },
      { path: '^src/load/' },
    ),
    forbid(
      'parse-not-to-api',
      'Parsers read bytes; fetching them is api/ and extract/.',
      {
        path: '^src/parse/',
      },
      { path: '^src/api/' },
    ),
    forbid(
      'api-not-to-storage',
      'The API client knows no warehouse, loader or run state.',
      { path: '^src/api/' },
      { path: '^src/(warehouse|load|state)/' },
    ),
    forbid(
      'load-not-to-api',
      'The loader consumes sources; it never fetches.',
      { path: '^src/load/' },
      {
        path: '^src/api/',
      },
    ),
    forbid(
      'extract-not-to-load',
      'Extraction hands bodies up; loading is called by pipeline/.',
      {
        path: '^src/extract/',
      },
      { path: '^src/load/' },
    ),
    forbid(
      'extract-not-to-pipeline',
      'Lower layers never call back up.',
      { path: '^src/extract/' },
      {
        path: '^src/pipeline/',
      },
    ),
    forbid(
      'catalog-only-own-data',
      'The catalog is data: it imports nothing of the product but itself.',
      { path: '^src/catalog/' },
      { path: '^(src|pipelines)/', pathNot: '^src/catalog/' },
    ),
    forbid(
      'leaves-stay-leaves',
      'time/, spool/ and copy-text/ import nothing of the product but the catalog and errors.ts.',
      { path: LEAVES },
      { path: '^(src|pipelines)/', pathNot: ['^src/$1/', '^src/catalog/', '^src/errors[.]ts$'] },
    ),
    forbid(
      'errors-is-a-leaf',
      'The error family imports nothing of the product.',
      { path: '^src/errors[.]ts$' },
      { path: '^(src|pipelines)/' },
    ),
    forbid(
      'src-not-to-pipelines',
      'pipelines/ declares on top of src/; src/ does not reach into the declarations: the CLI is ' +
        'given them by its entry, pipelines/cli.ts.',
      { path: '^src/' },
      { path: '^pipelines/' },
    ),
    forbid(
      'product-not-to-simulator-internals',
      'The product reaches the simulator only through its entry, @cybs-etl/simulator.',
      { path: '^(src|pipelines)/' },
      { path: SIMULATOR, pathNot: SIMULATOR_ENTRY },
    ),
    forbid(
      'simulator-started-by-commands-only',
      'Only the CLI (its `simulator` command and the start without credentials) starts the simulator.',
      { path: '^(src|pipelines)/', pathNot: '^src/commands/' },
      { path: SIMULATOR },
    ),
    forbid(
      'simulator-not-to-product',
      'The simulator stands in for the service: it imports nothing of the product, not even the error family.',
      { path: SIMULATOR },
      { path: '^(src|pipelines)/' },
    ),
    forbid(
      'observability-not-to-commands',
      'Logging and metrics are used by commands, not the other way.',
      { path: '^src/observability/' },
      { path: '^src/commands/' },
    ),
    forbid(
      'warehouse-below-load',
      'warehouse/ holds connections, migrations and database errors: the loader and the state use it, never the reverse.',
      { path: '^src/warehouse/' },
      { path: '^src/(load|parse|api|extract|pipeline|state|queue|schedule|commands|analytics)/' },
    ),
    forbid(
      'parse-formats-apart',
      'Each format folder of parse/ reads its own format; what they share lives in parse/ itself.',
      { path: '^src/parse/(csv|xml|json)/' },
      { path: '^src/parse/(csv|xml|json)/', pathNot: '^src/parse/$1/' },
    ),
    forbid(
      'config-not-to-pipeline',
      'Configuration is read before any pipeline exists.',
      {
        path: '^src/config/',
      },
      { path: '^src/pipeline/' },
    ),
    forbid(
      'load-not-up',
      'The loader is called by pipeline/ and commands/; it never imports them (nor the queue or run state).',
      { path: '^src/load/' },
      { path: '^src/(pipeline|commands|queue|state)/' },
    ),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.json', '.d.ts'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
