import { BUNDLE_LOADER } from '../lazy.js';

export type PgDriver = typeof import('./pg-driver.js');

let driver: Promise<PgDriver> | undefined;

/**
 * node-postgres and keyv's adapter, loaded on first use: from their own bundle in the CLI (compiled from
 * its code cache), else (tests, the library from source) as modules. No run without a store URL loads them.
 */
export function loadPgDriver(): Promise<PgDriver> {
  const load = (globalThis as { [BUNDLE_LOADER]?: (bundle: string) => unknown })[BUNDLE_LOADER];
  driver ??= load ? Promise.resolve(load('store-pg.cjs') as PgDriver) : import('./pg-driver.js');
  return driver;
}
