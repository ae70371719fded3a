import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { codeCacheFile } from '../src/launch.js';
import { tempDir } from './helpers.js';

// The built CLI starts from dist/savedq.cjs and, when it is fresh, V8's code cache of it (src/launch.ts).
const root = fileURLToPath(new URL('../', import.meta.url));

/** What V8 made of the code cache of a package's bundle: true = refused, undefined = not offered. */
function cacheRejected(packageDir: string, bundle = 'savedq.cjs'): string {
  const script = `const l = require('./dist/launch.cjs');
    process.stdout.write(String(l.compileBundle(require('node:path').resolve('dist/${bundle}')).cachedDataRejected));`;
  return execFileSync(process.execPath, ['-e', script], { cwd: packageDir, encoding: 'utf8' });
}

/** A copy of the built package, sharing node_modules (or with an empty one), whose code cache a test may spoil. */
function packageCopy(sharingModules = true): string {
  const dir = join(tempDir(), 'savedq');
  mkdirSync(join(dir, 'dist'), { recursive: true });
  // Every bundle (the CLI loads some on first use) and the CLI's code cache.
  const files = readdirSync(join(root, 'dist')).filter((f) => f.endsWith('.cjs'));
  for (const f of [...files, codeCacheFile('savedq.cjs')]) copyFileSync(join(root, 'dist', f), join(dir, 'dist', f));
  for (const d of ['bin', 'sql']) cpSync(join(root, d), join(dir, d), { recursive: true });
  copyFileSync(join(root, 'package.json'), join(dir, 'package.json'));
  if (sharingModules) symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  else mkdirSync(join(dir, 'node_modules'));
  return dir;
}

const list = (packageDir: string) =>
  execFileSync(process.execPath, [join(packageDir, 'bin/savedq.js'), 'list', '-f', 'json'], { encoding: 'utf8' });

describe('start-up from the code cache', () => {
  it('the build leaves code caches V8 accepts: of the CLI, and of the bundles it loads when needed (YAML, RE2, the MCP SDK, node-postgres, the ClickHouse client)', () => {
    for (const bundle of ['savedq.cjs', 'yaml.cjs', 're2.cjs', 'mcp.cjs', 'store-pg.cjs', 'clickhouse.cjs']) expect(cacheRejected(root, bundle), bundle).toBe('false');
  });

  it('a damaged code cache is refused by V8, and the CLI still answers', () => {
    const dir = packageCopy();
    const expected = list(root);
    writeFileSync(codeCacheFile(join(dir, 'dist/savedq.cjs')), Buffer.alloc(150_000, 7));
    expect(cacheRejected(dir)).toBe('true');
    expect(list(dir)).toBe(expected);
  });

  it('a code cache older than the bundle is not used, and the CLI still answers', () => {
    const dir = packageCopy();
    const expected = list(root);
    const bundle = statSync(join(dir, 'dist/savedq.cjs'));
    const before = new Date(bundle.mtimeMs - 60_000);
    utimesSync(codeCacheFile(join(dir, 'dist/savedq.cjs')), before, before);
    expect(cacheRejected(dir)).toBe('undefined');
    expect(list(dir)).toBe(expected);
  });
});

describe('what a run loads', () => {
  /** The modules of Node's own a CLI run loaded (`process.moduleLoadList`), and the files it required, as it exits. */
  function loadedBy(args: readonly string[], env: Record<string, string>): { node: string[]; files: string[]; stdout: string } {
    const dir = tempDir();
    const preload = join(dir, 'modules.cjs');
    writeFileSync(preload, "process.on('exit', () => require('node:fs').writeFileSync(process.env.MODULES_FILE, JSON.stringify({ node: process.moduleLoadList, files: Object.keys(require.cache) })));\n");
    const file = join(dir, 'modules.json');
    // Standard output and error are pipes, as in a shell pipeline or a program's call.
    const stdout = execFileSync(process.execPath, ['-r', preload, join(root, 'bin/savedq.js'), ...args], { env: { PATH: process.env.PATH ?? '', ...env, MODULES_FILE: file }, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
    const loaded = JSON.parse(readFileSync(file, 'utf8')) as { node: string[]; files: string[] };
    return { node: loaded.node.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice('NativeModule '.length)), files: loaded.files, stdout };
  }

  const dir = tempDir();
  const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'cache.sqlite'), XDG_CONFIG_HOME: join(dir, 'config') };
  const call = ['run', 'usage.api-counts', '-p', 'project=acme', '-p', 'interval=daily', '-f', 'json'];
  /** The call's answer as the engine gave it, cached by that first run (once). */
  let answered: string | undefined;
  /** The engine's package, which a cache hit never loads. */
  const engine = (files: string[]) => files.filter((f) => /[\\/]chdb[\\/]/.test(f));
  /** The call, cached; what a run of it loaded, checked to be a cache hit: the answer the engine gave, without the engine. */
  const hit = () => {
    answered ??= execFileSync(process.execPath, [join(root, 'bin/savedq.js'), ...call], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'ignore'], encoding: 'utf8' });
    return call;
  };
  const measured = (args: readonly string[]) => {
    const loaded = loadedBy(args, env);
    if (args === call) {
      expect(loaded.stdout).toBe(answered);
      expect(engine(loaded.files), 'a cache hit').toEqual([]);
    }
    return loaded;
  };

  it('tells a cache hit from a miss by what it loads: a miss (--no-cache) loads the engine', () => {
    hit();
    const miss = loadedBy([...call, '--no-cache'], env);
    expect(JSON.parse(miss.stdout)).toEqual(expect.any(Array));
    expect(engine(miss.files)).not.toEqual([]);
  });

  it("loads neither child_process (commander's, for subcommands savedq has none of) nor fs/promises on --version or a cache hit", () => {
    for (const args of [['--version'], hit()]) {
      const { node } = measured(args);
      expect(node, args.join(' ')).toContain('fs'); // the list is read
      expect(node.filter((m) => /child_process|fs\/promises/.test(m)), args.join(' ')).toEqual([]);
    }
  });

  it("a cache hit takes SQLite's native module by its path, without the search of the bindings package, and times nothing (perf_hooks)", () => {
    const { node, files } = measured(hit());
    expect(files.filter((f) => f.endsWith('.node')).map((f) => f.split(/[\\/]/).slice(-4).join('/'))).toEqual(['sqlite3/build/Release/node_sqlite3.node']);
    expect(files.filter((f) => /[\\/](bindings|file-uri-to-path)[\\/]/.test(f))).toEqual([]);
    expect(node).not.toContain('perf_hooks');
  });

  it('a cache hit into pipes makes no stream of standard output or error (for a pipe, a net.Socket: the stream and net modules)', () => {
    const { node } = measured(hit());
    expect(node.filter((m) => m === 'net' || m === 'stream' || m === 'tty')).toEqual([]);
  });

  it("without a build of SQLite's native module, a run says in one line what to do", () => {
    // A package whose sqlite3 has no build (npm ran no install script): every other package as installed.
    const copy = packageCopy(false);
    const modules = join(copy, 'node_modules');
    for (const name of readdirSync(join(root, 'node_modules'))) if (name !== 'sqlite3') symlinkSync(join(root, 'node_modules', name), join(modules, name));
    cpSync(join(root, 'node_modules', 'sqlite3'), join(modules, 'sqlite3'), { recursive: true, filter: (f) => !f.includes(join('sqlite3', 'build')) });
    const ran = spawnSync(process.execPath, [join(copy, 'bin/savedq.js'), ...call], { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8' });
    expect([ran.status, ran.stderr]).toEqual([1, `savedq: SQLite's native module, sqlite3, has no build for Node ${process.version} here: run npm rebuild sqlite3 where savedq is installed.\n`]);
  });
});
