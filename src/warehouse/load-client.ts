import { bundleApart } from '../lazy.js';

export type ClientPackage = typeof import('./client-package.js');

/** @clickhouse/client, loaded when a statement first needs it (a bundle of its own in the CLI); a cache hit never does. */
export const loadClient = bundleApart<ClientPackage>('clickhouse.cjs', () => import('./client-package.js'));
