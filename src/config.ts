import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { InputError } from './errors.js';

/** Everything the library needs to know about where things are. Resolved once, in one place. */
export interface Config {
  /** ClickHouse server URL (may carry user, password, database); undefined = the embedded engine. */
  readonly url: string | undefined;
  /** Data directory of the embedded engine. */
  readonly dataDir: string;
  /** SQLite file of the results cache. */
  readonly cacheFile: string;
  /** How long to wait for another process to release the embedded data directory. */
  readonly lockWaitMs: number;
  /** Per-query time limit. */
  readonly queryTimeoutSeconds: number;
  /** The user's saved-query folders, in order (the built-ins ship with savedq). */
  readonly queryFolders: readonly string[];
  /** Where `savedq new` writes a definition: the first user folder, else the default one (made then). */
  readonly newQueriesDir: string;
}

/** Command-line flags that override the environment. */
export interface ConfigFlags {
  url?: string | undefined;
  dataDir?: string | undefined;
  cacheFile?: string | undefined;
  lockWait?: string | undefined;
  timeout?: string | undefined;
  /** --queries, repeatable. */
  queries?: readonly string[] | undefined;
}

type Env = Readonly<Record<string, string | undefined>>;

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

function seconds(value: string, what: string): number {
  const n = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value.trim()) || !Number.isFinite(n)) {
    throw new InputError(`invalid ${what} ${JSON.stringify(value)}: expected a number of seconds.`);
  }
  return n;
}

/** Precedence, lowest first: defaults < environment < flags. */
export function resolveConfig(flags: ConfigFlags = {}, env: Env = process.env): Config {
  const home = nonEmpty(env.HOME) ?? homedir();
  const dataHome = nonEmpty(env.XDG_DATA_HOME) ?? join(home, '.local', 'share');
  const cacheHome = nonEmpty(env.XDG_CACHE_HOME) ?? join(home, '.cache');
  const configHome = nonEmpty(env.XDG_CONFIG_HOME) ?? join(home, '.config');
  const url = nonEmpty(flags.url) ?? nonEmpty(env.SAVEDQ_CLICKHOUSE_URL);
  if (url !== undefined && !/^https?:\/\//i.test(url)) {
    throw new InputError(`invalid ClickHouse URL: expected http:// or https://.`);
  }
  return {
    url,
    dataDir: resolve(nonEmpty(flags.dataDir) ?? nonEmpty(env.SAVEDQ_DATA_DIR) ?? join(dataHome, 'savedq')),
    cacheFile: resolve(
      nonEmpty(flags.cacheFile) ?? nonEmpty(env.SAVEDQ_CACHE_FILE) ?? join(cacheHome, 'savedq', 'results.sqlite'),
    ),
    lockWaitMs: seconds(nonEmpty(flags.lockWait) ?? nonEmpty(env.SAVEDQ_LOCK_WAIT) ?? '30', 'lock wait') * 1000,
    queryTimeoutSeconds: seconds(nonEmpty(flags.timeout) ?? nonEmpty(env.SAVEDQ_TIMEOUT) ?? '30', 'timeout'),
    ...queryFolders(flags.queries, env.SAVEDQ_QUERIES, join(configHome, 'savedq', 'queries')),
  };
}

/**
 * The user's saved-query folders: every --queries, else SAVEDQ_QUERIES (colon-separated), else the
 * default folder when it exists.
 */
function queryFolders(
  flags: readonly string[] | undefined,
  env: string | undefined,
  defaultDir: string,
): Pick<Config, 'queryFolders' | 'newQueriesDir'> {
  const given = flags && flags.length > 0 ? flags : (env ?? '').split(':');
  const folders = given.filter((dir) => dir !== '').map((dir) => resolve(dir));
  if (folders.length > 0) return { queryFolders: folders, newQueriesDir: folders[0] as string };
  return { queryFolders: existsSync(defaultDir) ? [defaultDir] : [], newQueriesDir: defaultDir };
}
