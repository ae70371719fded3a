import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';
import { BUNDLE_LOADER } from './lazy.js';
import { packageRoot } from './package.js';

/**
 * Set by the build (esbuild.config.mjs): write V8's code cache of the bundles this run started when the
 * process exits. `1` writes them all; otherwise a comma-separated list of bundle names (`re2.cjs`).
 */
export const WRITE_CODE_CACHE_ENV = 'SAVEDQ_WRITE_CODE_CACHE';

type CommonJsWrapper = (exports: unknown, require: NodeJS.Require, module: Module, filename: string, dirname: string) => void;

/** The bundles this process started, by file, for writing their code caches at exit. */
const started = new Map<string, Script>();

/**
 * Starts the CLI: the one-file bundle `dist/savedq.cjs` (see esbuild.config.mjs), compiled from V8's
 * code cache of it when the build left one. The cache holds the bytecode of the bundle and of every
 * function a run called, so V8 neither parses the bundle nor compiles those functions again: on a
 * cache hit, which is mostly start-up, that is a good part of the whole process.
 *
 * The cache is used only when it is newer than the bundle; V8 itself refuses a cache made by another
 * V8 version or with other flags, and then simply compiles the bundle (slower to start; `npm run build`
 * makes a new cache).
 */
export function launch(): void {
  const write = process.env[WRITE_CODE_CACHE_ENV];
  if (write !== undefined && write !== '') {
    // After the run, so the functions it called are in the caches too; each written whole, then renamed.
    process.once('exit', () => {
      for (const [file, script] of started) {
        if (write !== '1' && !write.split(',').includes(file.slice(file.lastIndexOf('/') + 1))) continue;
        const cacheFile = codeCacheFile(file);
        writeFileSync(`${cacheFile}.tmp`, script.createCachedData());
        renameSync(`${cacheFile}.tmp`, cacheFile);
      }
    });
  }
  (globalThis as { [BUNDLE_LOADER]?: (bundle: string) => unknown })[BUNDLE_LOADER] = loadBundle;
  loadBundle('savedq.cjs');
}

/**
 * Runs a CommonJS bundle of `dist/` from its code cache and returns its exports: the CLI, and the
 * parts it loads only when needed (the YAML parser, RE2), each a bundle of its own so that a run that
 * does not need them does not compile them.
 */
export function loadBundle(name: string): unknown {
  const bundle = fileURLToPath(new URL(`dist/${name}`, packageRoot));
  const script = compileBundle(bundle);
  started.set(bundle, script);
  const module = new Module(bundle);
  module.filename = bundle;
  const run = script.runInThisContext() as CommonJsWrapper;
  run.call(module.exports, module.exports, createRequire(bundle), module, bundle, dirname(bundle));
  return module.exports;
}

/** Where the build leaves V8's code cache of a bundle. */
export function codeCacheFile(bundle: string): string {
  return `${bundle}.v8cache`;
}

/** The bundle compiled as a CommonJS module, from its code cache when that is fresh. */
export function compileBundle(bundle: string): Script {
  return new Script(Module.wrap(readFileSync(bundle, 'latin1')), {
    filename: bundle,
    cachedData: freshCodeCache(bundle, codeCacheFile(bundle)),
  });
}

/** The code cache, when there is one made after the bundle was (an older one may be of other code). */
function freshCodeCache(bundle: string, cacheFile: string): Buffer | undefined {
  try {
    if (statSync(cacheFile).mtimeMs < statSync(bundle).mtimeMs) return undefined;
    return readFileSync(cacheFile);
  } catch {
    return undefined; // no cache: compile from source
  }
}
