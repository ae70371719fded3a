import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';
import { packageRoot } from './package.js';

/** Set by the build (esbuild.config.mjs): write V8's code cache of the bundle when the process exits. */
export const WRITE_CODE_CACHE_ENV = 'SAVEDQ_WRITE_CODE_CACHE';

type CommonJsWrapper = (exports: unknown, require: NodeJS.Require, module: Module, filename: string, dirname: string) => void;

/**
 * Starts the CLI: the one-file bundle `dist/savedq.cjs` (see esbuild.config.mjs), compiled from V8's
 * code cache of it when the build left one. The cache holds the bytecode of the bundle and of every
 * function a run called, so V8 neither parses the bundle nor compiles those functions again: on a
 * cache hit, which is mostly start-up, that is about a fifth of the whole process.
 *
 * The cache is used only when it is newer than the bundle; V8 itself refuses a cache made by another
 * V8 version or with other flags, and then simply compiles the bundle (about 20 ms slower; `npm run
 * build` makes a new cache).
 */
export function launch(): void {
  const bundle = fileURLToPath(new URL('dist/savedq.cjs', packageRoot));
  const cacheFile = codeCacheFile(bundle);
  const script = compileBundle(bundle);
  if (process.env[WRITE_CODE_CACHE_ENV] === '1') {
    process.once('exit', () => {
      // After the run, so the functions it called are in the cache too; written whole, then renamed.
      writeFileSync(`${cacheFile}.tmp`, script.createCachedData());
      renameSync(`${cacheFile}.tmp`, cacheFile);
    });
  }
  const module = new Module(bundle);
  module.filename = bundle;
  const run = script.runInThisContext() as CommonJsWrapper;
  run.call(module.exports, module.exports, createRequire(bundle), module, bundle, dirname(bundle));
}

/** Where the build leaves V8's code cache of a bundle. */
export function codeCacheFile(bundle: string): string {
  return `${bundle}.v8cache`;
}

/** The bundle compiled as a CommonJS module, from its code cache when that is fresh. */
export function compileBundle(bundle: string): Script {
  return new Script(Module.wrap(readFileSync(bundle, 'utf8')), {
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
