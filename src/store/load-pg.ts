import { bundleApart } from '../lazy.js';

export type PgDriver = typeof import('./pg-driver.js');

/**
 * node-postgres and keyv's adapter, loaded on first use (a bundle of their own in the CLI). No run
 * without a store URL loads them.
 */
export const loadPgDriver = bundleApart<PgDriver>('store-pg.cjs', () => import('./pg-driver.js'));
