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
 * header), RE2 (only to check a pattern before a query runs), the UUID package, a Node built-in a cache
 * hit never needs. In the CLI a package with a bundle of its own comes from that bundle; one without
 * (a built-in) is required as usual. Kept once loaded, so a hot path may call it.
 */
export function lazyRequire<T>(pkg: string, bundle?: string): () => T {
  let loaded: T | undefined;
  return () => {
    if (loaded === undefined) {
      const load = (globalThis as { [BUNDLE_LOADER]?: BundleLoader })[BUNDLE_LOADER];
      loaded = (load && bundle !== undefined ? load(bundle) : createRequire(packageRoot)(pkg)) as T;
    }
    return loaded;
  };
}

/**
 * `node:crypto`, loaded on first use. No cache hit uses it, and Node 22 and 24 do not have it in their
 * start-up snapshot: imported at the top of a room, every run would load it, since the bundle starts
 * every room it holds (docs/performance.md). Required rather than taken from process.getBuiltinModule,
 * which Node before 20.16 lacks.
 */
export const nodeCrypto = lazyRequire<typeof import('node:crypto')>('node:crypto');

/**
 * A part of savedq with a bundle of its own (the MCP SDK, node-postgres), loaded on first use: from
 * that bundle in the CLI (compiled from its code cache), else (tests, the library from source) as
 * modules by `fromSource`. Kept once loaded.
 */
export function bundleApart<T>(bundle: string, fromSource: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () => {
    const load = (globalThis as { [BUNDLE_LOADER]?: BundleLoader })[BUNDLE_LOADER];
    loaded ??= load ? Promise.resolve(load(bundle) as T) : fromSource();
    return loaded;
  };
}
