import type { Config } from '../config.js';
import type { Unsafe } from '../fs.js';
import type { Warn } from './health.js';
import { PostgresStore } from './postgres.js';
import { SqliteStore } from './sqlite.js';
import type { Store } from './types.js';

export type { Warn } from './health.js';

/**
 * The store the configuration names: PostgreSQL for a store URL (node-postgres loaded on its first
 * operation), else the SQLite file of `--cache-file`. `connections`: how many at once a process may
 * hold (serve more than a command).
 */
export function openStore(config: Pick<Config, 'cacheFile' | 'store'>, warn: Warn, cacheFileProblem: () => Unsafe, connections = 2): Store {
  if (config.store.kind === 'postgres') return new PostgresStore({ url: config.store.url, shown: config.store.shown, schema: config.store.schema, connections }, warn);
  return new SqliteStore(config.cacheFile, warn, cacheFileProblem);
}
