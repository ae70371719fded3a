// The CLI as one CommonJS file, dist/savedq.cjs, bundled from tsc's output (npm run build runs both),
// and V8's code cache of it, dist/savedq.cjs.v8cache, which bin/savedq.js starts it from
// (src/launch.ts).
//
// Why: a cache hit is mostly start-up. Node 20 starts one CommonJS file far faster than a tree of ES
// modules: each ES module costs a resolve and a link, and each CommonJS package an ES module imports
// is first scanned for its export names (commander, sqlite3). The code cache then spares V8 parsing
// the bundle and compiling the functions a run calls. Node 22 has a built-in compile cache; Node 20
// does not. Measured side by side, see README, Performance.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { build } from 'esbuild';
import { codeCacheFile, WRITE_CODE_CACHE_ENV } from './dist/launch.js';

const bundle = 'dist/savedq.cjs';

// The YAML parser is needed only to read a saved query's header, which a cache hit never does (the
// results cache remembers what each definition file said): it is a bundle of its own, dist/yaml.cjs,
// loaded when first needed, so the main bundle every run compiles stays small.
const yamlApart = {
  name: 'yaml-apart',
  setup(b) {
    b.onResolve({ filter: /^yaml$/ }, () => ({ path: './yaml.cjs', external: true }));
  },
};
await build({
  entryPoints: { yaml: 'yaml' },
  outdir: 'dist',
  outExtension: { '.js': '.cjs' },
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  logLevel: 'warning',
});

await build({
  entryPoints: { savedq: 'dist/cli.js', launch: 'dist/launch.js' },
  outdir: 'dist',
  outExtension: { '.js': '.cjs' },
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  // Left in node_modules, loaded when first needed: packages with a native addon, which find their
  // binaries relative to their own files, and the warehouse client, which a cache hit never loads.
  external: ['sqlite3', 'chdb', 'chdb/*', '@clickhouse/client'],
  // import() of those becomes require(): they are CommonJS, and the bundle runs as a plain script.
  supported: { 'dynamic-import': false },
  // src/package.ts, the one reader of import.meta.url, is one level under the package root, as is
  // the bundle: the bundle's own URL stands for it.
  banner: { js: "const __bundleUrl = require('node:url').pathToFileURL(__filename).href;" },
  define: { 'import.meta.url': '__bundleUrl' },
  plugins: [yamlApart],
  sourcemap: true,
  logLevel: 'warning',
});

// The code cache: one run of the CLI that builds its commands, parses a command line and prints
// (`list`, which needs no data), writing the cache as it exits.
rmSync(codeCacheFile(bundle), { force: true });
const trained = spawnSync(process.execPath, ['bin/savedq.js', 'list', '-f', 'json'], {
  env: { ...process.env, [WRITE_CODE_CACHE_ENV]: '1' },
  stdio: ['ignore', 'ignore', 'inherit'],
});
if (trained.status !== 0) throw new Error(`writing the code cache failed (exit ${trained.status ?? trained.signal})`);
