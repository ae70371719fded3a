// The CLI as one CommonJS file, dist/savedq.cjs, bundled from tsc's output (npm run build runs both),
// and V8's code cache of it, dist/savedq.cjs.v8cache, which bin/savedq.js starts it from
// (src/launch.ts); likewise dist/yaml.cjs and dist/re2.cjs, which it loads when needed.
//
// Why: a cache hit is mostly start-up. Node 20 starts one CommonJS file far faster than a tree of ES
// modules: each ES module costs a resolve and a link, and each CommonJS package an ES module imports
// is first scanned for its export names (commander, sqlite3). The code cache then spares V8 parsing
// the bundle and compiling the functions a run calls. Node 22 has a built-in compile cache; Node 20
// does not. What each step bought is in the README, Performance.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { codeCacheFile, WRITE_CODE_CACHE_ENV } from './dist/launch.js';

// Packages the CLI needs only now and then are bundles of their own, loaded on first use
// (src/lazy.ts; the YAML parser, RE2 and the MCP SDK each from a code cache of its own, made below): the
// YAML parser reads a definition's header, which a cache hit never does (the results cache remembers
// what each definition file said); RE2 checks a pattern before a query runs; the UUID package gives a
// query without an id in its header one, and loads node:crypto, which Node 22 and 24 start without
// (5–10 ms a run). The main bundle every run compiles stays small.
// The MCP SDK (with zod) is `savedq mcp`'s and serve's /mcp alone: src/mcp/sdk.ts is all of it savedq uses.
// node-postgres and keyv's PostgreSQL adapter are a run's with a store URL alone: src/store/pg-driver.ts.
const apart = { yaml: 'yaml', re2: 're2js', jose: 'jose', uuid: 'uuid', mcp: './dist/mcp/sdk.js', 'store-pg': './dist/store/pg-driver.js', clickhouse: './dist/warehouse/client-package.js' };
/**
 * In the CLI bundle, src/mcp/load.ts's import of the SDK module, src/store/load-pg.ts's of
 * node-postgres and src/warehouse/load-client.ts's of @clickhouse/client stay imports: the bundles apart
 * answer them.
 */
const sdkApart = {
  name: 'sdk-apart',
  setup(b) {
    b.onResolve({ filter: /^\.\/sdk\.js$/ }, (args) => (args.importer.endsWith(join('mcp', 'load.js')) ? { path: args.path, external: true } : undefined));
    b.onResolve({ filter: /^\.\/pg-driver\.js$/ }, (args) => (args.importer.endsWith(join('store', 'load-pg.js')) ? { path: args.path, external: true } : undefined));
    b.onResolve({ filter: /^\.\/client-package\.js$/ }, (args) => (args.importer.endsWith(join('warehouse', 'load-client.js')) ? { path: args.path, external: true } : undefined));
  },
};
/**
 * commander requires node:child_process as it loads, for subcommands that are programs of their own,
 * which savedq has none of: loading it (internal/child_process, node:dgram) took about 1 ms of every
 * run. In the CLI bundle commander's spawn is a function that loads child_process when first called.
 */
const commanderSpawnsLater = {
  name: 'commander-spawns-later',
  setup(b) {
    b.onResolve({ filter: /^node:child_process$/ }, (args) => (args.importer.includes(join('node_modules', 'commander')) ? { path: 'spawn-later', namespace: 'commander-spawns-later' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'commander-spawns-later' }, () => ({
      contents: "module.exports = { spawn: (...args) => require('node:child_process').spawn(...args) };",
      loader: 'js',
    }));
  },
};
/**
 * node-postgres in Node alone, in its bundle. As it loads, it asks whether it runs in a Cloudflare Worker
 * by making a `Response`, which loads Node's fetch (undici, with http2, zlib and worker_threads): about
 * 25 ms of every run with a store URL, for a question whose answer in Node is no; its stream module is
 * Node's alone here. And its SCRAM authentication's hashes are Node's own crypto functions (the same
 * algorithms: PBKDF2, HMAC and SHA-256, MD5 for md5 authentication) rather than Web Crypto, whose first
 * use loads its modules and hops to the thread pool for each of the six steps: a few ms a connection.
 */
const pgInNode = {
  name: 'pg-in-node',
  setup(b) {
    b.onLoad({ filter: /[\\/]pg[\\/]lib[\\/]stream\.js$/ }, () => ({
      contents: "module.exports = { getStream: () => new (require('net').Socket)(), getSecureStream: (options) => require('tls').connect(options) };",
      loader: 'js',
    }));
    b.onLoad({ filter: /[\\/]pg[\\/]lib[\\/]crypto[\\/]utils\.js$/ }, () => ({
      contents: `const c = require('crypto');
const md5 = (data) => c.createHash('md5').update(data).digest('hex');
module.exports = {
  randomBytes: (length) => c.randomBytes(length),
  md5: async (data) => md5(data),
  postgresMd5PasswordHash: async (user, password, salt) => 'md5' + md5(Buffer.concat([Buffer.from(md5(password + user)), salt])),
  sha256: async (data) => c.createHash('sha256').update(data).digest(),
  hashByName: async (name, data) => c.createHash(name.replace('-', '').toLowerCase()).update(data).digest(),
  hmacSha256: async (key, message) => c.createHmac('sha256', Buffer.from(key)).update(message).digest(),
  deriveKey: async (password, salt, iterations) => c.pbkdf2Sync(password, salt, iterations, 32, 'sha256'),
};`,
      loader: 'js',
    }));
  },
};
/**
 * sqlite3 (the results cache's driver) in the CLI bundle, its native module required by its path: its
 * own loader, the `bindings` package, finds the module by reading a stack trace for the caller's file
 * and trying a dozen paths, with two packages of its own to load (about 2 ms of every cache hit). The
 * build sqlite3 makes is build/Release/node_sqlite3.node; when that is not there or does not load,
 * sqlite3's own loader runs as before, from node_modules, and says what it tried.
 */
const sqliteNativeByPath = {
  name: 'sqlite-native-by-path',
  setup(b) {
    b.onResolve({ filter: /^\.\/sqlite3-binding\.js$/ }, (args) => (args.importer.includes(join('node_modules', 'sqlite3', 'lib')) ? { path: 'sqlite3-binding', namespace: 'sqlite-native' } : undefined));
    b.onResolve({ filter: /^sqlite3\/lib\/sqlite3-binding\.js$/ }, (args) => (args.namespace === 'sqlite-native' ? { path: args.path, external: true } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'sqlite-native' }, () => ({
      contents: `const { dirname, join } = require('node:path');
const { accessSync, constants } = require('node:fs');
let native;
const file = join(dirname(require.resolve('sqlite3/package.json')), 'build', 'Release', 'node_sqlite3.node');
try {
  native = require(file);
} catch {
  // There, but not this user's to read: that is what is wrong (store/sqlite-module.ts says so), not a build missing.
  try {
    accessSync(file, constants.R_OK);
  } catch (denied) {
    if (denied.code === 'EACCES') throw Object.assign(denied, { sqliteModule: file });
  }
  native = require('sqlite3/lib/sqlite3-binding.js');
}
module.exports = native;`,
      loader: 'js',
    }));
  },
};
/** Every bundle: one CommonJS file of dist/ for Node. */
const cjsBundle = {
  outdir: 'dist',
  outExtension: { '.js': '.cjs' },
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  // Every run reads the bundle whole: no comments or indentation (half its size), and ASCII only, which
  // the launcher reads as Latin-1, without decoding UTF-8. Names stay, so stack traces stay readable.
  minifyWhitespace: true,
  charset: 'ascii',
  logLevel: 'warning',
};
// pg-native is node-postgres's other driver, which savedq does not use (nor install).
await build({ ...cjsBundle, entryPoints: apart, external: ['pg-native'], plugins: [pgInNode] });

await build({
  ...cjsBundle,
  entryPoints: { savedq: 'dist/cli.js', launch: 'dist/launch.js' },
  // Left in node_modules, loaded when first needed: the engine's package, which finds its native library
  // relative to its own files, and the warehouse client, which a cache hit never loads (sqlite3 is
  // bundled, its native module required by path: sqliteNativeByPath). prom-client: serve's metrics
  // only, never a run's; junit-report-builder: `test -f junit` only.
  external: ['chdb', 'chdb/*', '@clickhouse/client', 'prom-client', 'junit-report-builder', ...Object.values(apart)],
  plugins: [sdkApart, commanderSpawnsLater, sqliteNativeByPath],
  // sqliteNativeByPath resolves sqlite3's folder when the bundle runs, from node_modules beside it, as meant.
  logOverride: { 'require-resolve-not-external': 'silent' },
  // import() of those becomes require(): they are CommonJS, and the bundle runs as a plain script.
  supported: { 'dynamic-import': false },
  // src/package.ts, the one reader of import.meta.url, is one level under the package root, as is
  // the bundle: the bundle's own URL stands for it.
  banner: { js: "const __bundleUrl = require('node:url').pathToFileURL(__filename).href;" },
  define: { 'import.meta.url': '__bundleUrl' },
  sourcemap: true,
});

// serve's page (src/http/page): its script with uPlot and its style sheet with uPlot's, each one file
// for the browser, minified; served from dist/page by the server itself (no CDN, no inline script).
await build({
  entryPoints: { app: 'src/http/page/app.ts', style: 'src/http/page/app.css' },
  outdir: 'dist/page',
  bundle: true,
  platform: 'browser',
  target: ['chrome109', 'firefox115', 'safari16'],
  format: 'iife',
  minify: true,
  charset: 'utf8',
  legalComments: 'none',
  logLevel: 'warning',
});
for (const file of ['index.html', 'icon.svg']) copyFileSync(`src/http/page/${file}`, `dist/page/${file}`);

// The launcher reads each bundle as Latin-1 (src/launch.ts): a byte past ASCII would be misread.
for (const name of ['savedq', 'launch', ...Object.keys(apart)]) {
  if (readFileSync(`dist/${name}.cjs`).some((byte) => byte > 0x7f)) throw new Error(`dist/${name}.cjs is not ASCII only`);
}

// The code caches: one run of the CLI that builds its commands, reads the built-in definitions and
// prints (`list`, which needs no data), writing the caches of the CLI and of the YAML parser as it
// exits; a call run twice (a miss, then a hit), which adds to the CLI's what a hit compiles; and one
// that checks a pattern (refused before anything runs), for RE2's. None reads a user's queries or
// touches a user's data directory or cache file (the build's own are made and removed).
// And one MCP session over standard input (initialize, tools/list, standard input ends), for the SDK's;
// and one status of a store URL, for node-postgres's.
const mcpSession = [
  { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'savedq-build', version: '0' } } },
  { jsonrpc: '2.0', method: 'notifications/initialized' },
  { jsonrpc: '2.0', id: 2, method: 'tools/list' },
].map((m) => `${JSON.stringify(m)}\n`).join('');
// The CLI's cache holds what `list` compiled and then what a cache hit of `run` did (a run starts from
// the cache the run before it wrote, and writes it again with what it compiled itself): the first run
// of the call is a miss, computed by the embedded engine on a data directory of the build's own.
const hit = ['run', 'usage.api-counts', '-p', 'project=build', '-p', 'interval=daily', '-f', 'json'];
const training = [
  [['list', '-f', 'json'], ['savedq.cjs', 'yaml.cjs'], 0],
  // (Its miss computes on the embedded engine through @clickhouse/client: the client's bundle's cache.)
  [hit, ['clickhouse.cjs'], 0],
  [hit, ['savedq.cjs'], 0],
  [['run', 'usage.api-counts', '-p', 'project=^https://(acme|initech)[0-9]*\\.example/[a-z]+(', '-p', 'interval=daily', '--no-cache'], ['re2.cjs'], 2],
  [['mcp'], ['mcp.cjs'], 0, mcpSession],
  // node-postgres's: a status of a store that is not there (port 1 refuses at once): loaded, connecting.
  // (No cache file: a store URL with one is refused.)
  [['--store', 'postgres://savedq@127.0.0.1:1/savedq', 'status'], ['store-pg.cjs'], 1, '', { SAVEDQ_CACHE_FILE: undefined }],
];
for (const [, caches] of training) for (const c of caches) rmSync(codeCacheFile(`dist/${c}`), { force: true });
// A cache file of their own, new: the definitions are read (and the YAML parser run), whatever the
// user's cache file remembers, and the user's is never touched.
const scratch = mkdtempSync(join(tmpdir(), 'savedq-build-'));
try {
  for (const [args, caches, expected, input, without = {}] of training) {
    const env = { ...process.env, [WRITE_CODE_CACHE_ENV]: caches.join(','), XDG_CONFIG_HOME: '/nonexistent/savedq-build', SAVEDQ_QUERIES: '', SAVEDQ_DATA_DIR: join(scratch, 'data'), SAVEDQ_CACHE_FILE: join(scratch, 'cache.sqlite') };
    for (const name of Object.keys(without)) delete env[name];
    const trained = spawnSync(process.execPath, ['bin/savedq.js', ...args], {
      env,
      input: input ?? '',
      stdio: ['pipe', 'ignore', 'ignore'],
      timeout: 60_000,
    });
    if (trained.status !== expected) throw new Error(`writing the code caches ${caches.join(', ')} failed (exit ${trained.status ?? trained.signal})`);
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
