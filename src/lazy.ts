import { createRequire } from 'node:module';
import { packageRoot } from './package.js';

/**
 * How the CLI loads a package that has a bundle of its own (src/launch.ts sets it before the CLI
 * starts): from that bundle, compiled from its V8 code cache. Elsewhere (the tests, the library used
 * from source) the package is required as usual.
 */
export const BUNDLE_LOADER = Symbol.for('savedq.loadBundle');

type BundleLoader = (bundle: string) => unknown;

/**
 * A package loaded on first use, not at start-up: the YAML parser (needed only to read a definition's
 * header) and RE2 (only to check a pattern before a query runs). A cache hit needs neither.
 */
export function lazyRequire<T>(pkg: string, bundle: string): () => T {
  let loaded: T | undefined;
  return () => {
    if (loaded === undefined) {
      const load = (globalThis as { [BUNDLE_LOADER]?: BundleLoader })[BUNDLE_LOADER];
      loaded = (load ? load(bundle) : createRequire(packageRoot)(pkg)) as T;
    }
    return loaded;
  };
}

/** node:crypto once loaded (not named crypto: that is the global Web Crypto). */
let cryptoModule: typeof import('node:crypto') | undefined;

/**
 * `node:crypto`, loaded on first use. No cache hit uses it, and Node 22 and 24 do not have it in their
 * start-up snapshot: imported at the top of a room, it cost every run there 5–10 ms (a hit takes
 * about 55), since the bundle starts every room it holds. Kept once loaded, so a hot path may call it.
 */
export function nodeCrypto(): typeof import('node:crypto') {
  // Not process.getBuiltinModule: Node before 20.16 has none, and a run there would fail where it worked.
  cryptoModule ??= createRequire(packageRoot)('node:crypto') as typeof import('node:crypto');
  return cryptoModule;
}
