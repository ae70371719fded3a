import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { homedir, hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { errnoText } from './errno.js';
import { InputError } from './errors.js';

// Every setting of savedq is resolved here, once: a flag beats the environment, the environment beats
// the default (README, "Configuration"). Below this module, code takes the typed values and reads no flag and no
// environment variable, but one: a path is shown as `~/…` by the HOME it is under (queries/catalog.ts's
// displayPath), for messages only.

/** A setting as the command line and the environment give it: its flag, its variable, its default, what it is. */
export interface Setting {
  /** commander's flag, with its argument. */
  readonly flag: string;
  /** The environment variable that gives it when the flag does not. */
  readonly env?: string;
  /** The default value, as the setting's text (resolveConfig reads it; help shows it). */
  readonly default?: string;
  /** How help says the default when it is not a value (a path under $XDG_…), or what qualifies it. */
  readonly shown?: string;
  readonly help: string;
  /** Given again adds a value (a list), rather than replacing it; the variable's items are comma-separated (SAVEDQ_QUERIES's: colon). */
  readonly repeatable?: boolean;
  /** A number setting's bounds, which its parser checks (numberSetting): a whole number or not, and the unit its error names. */
  readonly number?: NumberBounds;
}

/** What a number setting accepts. */
export interface NumberBounds {
  readonly min: number;
  readonly max: number;
  readonly integer?: boolean;
  readonly unit: string;
}

/**
 * The settings of savedq, each said once: commander's options (cli.ts) and their help are made from
 * them, and resolveConfig and resolveServeSettings read their variables and defaults from them.
 */
export const SETTINGS = {
  url: { flag: '--url <url>', env: 'SAVEDQ_CLICKHOUSE_URL', shown: 'the embedded engine', help: 'ClickHouse server URL; given again, another host of the same warehouse (repeatable; the variable comma-separated)', repeatable: true },
  warehouseConcurrency: { flag: '--warehouse-concurrency <n>', env: 'SAVEDQ_WAREHOUSE_CONCURRENCY', default: '8', help: "statements a process sends a ClickHouse server at once, at most (the embedded engine runs one at a time); the others wait their turn, fairly across callers", number: { min: 1, max: 1024, integer: true, unit: '' } },
  loadBalance: { flag: '--load-balance <order>', env: 'SAVEDQ_LOAD_BALANCE', default: 'in-order', help: 'which of several --url hosts a process uses: in-order (the first that answers) or random (one picked, then kept)' },
  passwordFile: { flag: '--password-file <file>', env: 'SAVEDQ_CLICKHOUSE_PASSWORD_FILE', help: "the ClickHouse server's password: the file's first line (readable by you alone)" },
  dataDir: { flag: '--data-dir <dir>', env: 'SAVEDQ_DATA_DIR', shown: '$XDG_DATA_HOME/savedq, else ~/.local/share/savedq', help: 'embedded engine data directory' },
  cacheFile: { flag: '--cache-file <file>', env: 'SAVEDQ_CACHE_FILE', shown: '$XDG_CACHE_HOME/savedq/results.sqlite, else ~/.cache/savedq/results.sqlite', help: 'results cache file' },
  store: { flag: '--store <url>', env: 'SAVEDQ_STORE_URL', shown: 'the cache file', help: "PostgreSQL URL of a store a team's processes share (cached answers, warming, alerts, rate limits)" },
  storePasswordFile: { flag: '--store-password-file <file>', env: 'SAVEDQ_STORE_PASSWORD_FILE', help: "the store's password: the file's first line (readable by you alone)" },
  queries: { flag: '--queries <dir>', env: 'SAVEDQ_QUERIES', shown: '~/.config/savedq/queries', help: 'a folder of your saved queries, *.sql (repeatable; the variable colon-separated)', repeatable: true },
  lockWait: { flag: '--lock-wait <seconds>', env: 'SAVEDQ_LOCK_WAIT', default: '30', help: 'how long to wait for another process using the data directory', number: { min: 0, max: 86_400, unit: 'seconds' } },
  timeout: { flag: '--timeout <seconds>', env: 'SAVEDQ_TIMEOUT', default: '30', help: 'per-query time limit', number: { min: 0.001, max: 86_400, unit: 'seconds' } },
  cacheMaxMb: { flag: '--cache-max-mb <megabytes>', env: 'SAVEDQ_CACHE_MAX_MB', default: '512', help: 'the results cache stays within about this size; the least recently served go first', number: { min: 1, max: 1_048_576, unit: 'megabytes' } },
  memoryMb: { flag: '--memory-mb <megabytes>', env: 'SAVEDQ_MEMORY_MB', default: '128', help: "answers a process keeps in memory to give again at once (their rows, half; serve's bodies of them, half), at most; the least recently used go first", number: { min: 2, max: 1_048_576, unit: 'megabytes' } },
  sandboxMaxMemoryMb: { flag: '--sandbox-max-memory-mb <megabytes>', env: 'SAVEDQ_SANDBOX_MAX_MEMORY_MB', default: '1024', help: "the memory a caller's own SQL over a sandboxed query's answer may take in the engine", number: { min: 16, max: 1_048_576, unit: 'megabytes' } },
  host: { flag: '--host <host>', default: '127.0.0.1', help: 'address to bind' },
  port: { flag: '--port <port>', default: '4000', help: 'port to listen on (0 = any free port)', number: { min: 0, max: 65535, integer: true, unit: '' } },
  apiKeyFile: { flag: '--api-key-file <file>', env: 'SAVEDQ_API_KEYS', help: 'file of accepted API keys, one a line, readable by you alone (the variable: comma-separated keys)' },
  maxConnections: { flag: '--max-connections <n>', env: 'SAVEDQ_MAX_CONNECTIONS', default: '1000', shown: '1000, capped by the open-file limit', help: 'HTTP connections open at once, at most; past it a new one takes the place of the one waiting longest for its headers, or is closed', number: { min: 1, max: 1_000_000, integer: true, unit: '' } },
  headerTimeout: { flag: '--header-timeout <seconds>', default: '10', help: "a request's headers must arrive within this", number: { min: 1, max: 3600, unit: 'seconds' } },
  maxExports: { flag: '--max-exports <n>', env: 'SAVEDQ_MAX_EXPORTS', default: '2', help: 'exports (/api/endpoints/export/…) streaming at once, at most; one more is answered 503 overloaded', number: { min: 1, max: 1000, integer: true, unit: '' } },
  maxQueue: { flag: '--max-queue <n>', env: 'SAVEDQ_MAX_QUEUE', default: '64', help: 'statements waiting for the warehouse, at most (runs, exports, checks, alerts, loads); one more is answered 503 overloaded', number: { min: 1, max: 1_000_000, integer: true, unit: '' } },
  tokenSecretFile: { flag: '--token-secret-file <file>', env: 'SAVEDQ_TOKEN_SECRETS', help: 'secrets of signed tokens, one a line, 32 bytes or more: the first signs, all verify (the variable: comma-separated)' },
  corsOrigin: { flag: '--cors-origin <origin>', env: 'SAVEDQ_CORS_ORIGINS', help: 'an origin whose pages may call serve from a browser (repeatable; * for any; the variable comma-separated)', repeatable: true },
  rateLimit: { flag: '--rate-limit <rps>', env: 'SAVEDQ_RATE_LIMIT', shown: 'none', help: 'calls a second for each caller without a limit of its own', number: { min: 0.001, max: 1_000_000, unit: 'calls a second' } },
  allowedHost: { flag: '--allowed-host <name>', env: 'SAVEDQ_ALLOWED_HOSTS', help: "a name /mcp answers as this server's besides its addresses (repeatable; the variable comma-separated)", repeatable: true },
} as const satisfies Record<string, Setting>;

/** A setting's help, as commander shows it: what it is, then its default and its variable. */
export function settingHelp(setting: Setting): string {
  const notes = [setting.shown ?? setting.default, setting.env].map((note, i) => (note === undefined ? undefined : `${i === 0 ? 'default' : 'env'} ${note}`)).filter((n) => n !== undefined);
  if (notes.length === 0) return setting.help;
  // One parenthesis: a help that ends in one takes the notes in it.
  return setting.help.endsWith(')') ? `${setting.help.slice(0, -1)}; ${notes.join('; ')})` : `${setting.help} (${notes.join('; ')})`;
}

/** A setting's text: its flag's, else its variable's, else its default (flags beat the environment, which beats defaults). */
function settingOf(setting: Setting, flag: string | undefined, env: Env): string | undefined {
  return first(flag, setting.env === undefined ? undefined : env[setting.env]) ?? setting.default;
}

/** A number setting, parsed by its bounds in the table; its error names its flag. */
function numberSetting(setting: Setting & { readonly number: NumberBounds }, flag: string | undefined, env: Env): number {
  return number(settingOf(setting, flag, env) ?? '', flagName(setting), setting.number);
}

/** A repeatable setting's values: every flag given, else its variable's items (comma-separated), each trimmed, none empty. */
function listSetting(setting: Setting, flags: readonly string[] | undefined, env: Env, separator = ','): string[] {
  const given = flags && flags.length > 0 ? flags : setting.env === undefined ? [] : (env[setting.env] ?? '').split(separator);
  return given.map((item) => item.trim()).filter((item) => item !== '');
}

/** A setting's flag without its argument: `--timeout`. */
function flagName(setting: Setting): string {
  return setting.flag.split(' ')[0] as string;
}

/** Everything the library needs to know about where things are. */
export interface Config {
  /**
   * The hosts of a ClickHouse server warehouse, each URL with its user, password (or --password-file's)
   * and database; none: the embedded engine.
   */
  readonly urls: readonly string[];
  /** Which of several hosts a process uses: the first that answers, or one picked at random. */
  readonly loadBalance: 'in-order' | 'random';
  /** Data directory of the embedded engine. */
  readonly dataDir: string;
  /** SQLite file of the results cache (and, beside it, what the catalog remembers, whatever the store). */
  readonly cacheFile: string;
  /** Where what is kept between calls is: the cache file, or a PostgreSQL store a team's processes share. */
  readonly store: StoreConfig;
  /** How long to wait for another process to release the embedded data directory. */
  readonly lockWaitMs: number;
  /** Per-query time limit. */
  readonly queryTimeoutSeconds: number;
  /** The results cache stays within about this size: past it, the least recently served go first. */
  readonly cacheMaxBytes: number;
  /** Statements this process sends a server warehouse at once, at most (--warehouse-concurrency); the embedded engine's is one. */
  readonly warehouseConcurrency: number;
  /** The memory a caller's SQL over a sandboxed query's answer may take (--sandbox-max-memory-mb), in bytes. */
  readonly sandboxMaxMemoryBytes: number;
  /**
   * The answers this process keeps in memory to give again at once (--memory-mb), in bytes: half for
   * their rows (calls/runner.ts's recent results), half for serve's bodies of them (http/query-route.ts).
   */
  readonly memoryBytes: number;
  /** The user's saved-query folders, in order (the built-ins ship with savedq). */
  readonly queryFolders: readonly string[];
  /** Where `savedq new` writes a definition: the first user folder, else the default one (made then). */
  readonly newQueriesDir: string;
  /**
   * The data source results belong to, which every cache key carries: the embedded engine's data
   * directory by its real path, or the warehouse: its hosts' URLs without passwords, in one order
   * whatever order they were given in (any host's answer is the warehouse's).
   */
  readonly source: string;
  /** What the user should hear about the configuration itself (a password on the command line), once. */
  readonly warnings: readonly string[];
}

/** The store: the SQLite file of `cacheFile`, or PostgreSQL (docs/scaling.md). */
export type StoreConfig =
  | { readonly kind: 'sqlite' }
  | {
      readonly kind: 'postgres';
      /** libpq's URL, with its password when one is given (never shown). */
      readonly url: string;
      /** The URL without its password, as messages, /health and `status` show it. */
      readonly shown: string;
      /** The schema of savedq's tables: `savedq`, unless the URL's options set a search_path. */
      readonly schema: string;
    };

/** Command-line flags that override the environment. */
export interface ConfigFlags {
  /** --url, repeatable (one as a string, as a test gives it). */
  url?: string | readonly string[] | undefined;
  loadBalance?: string | undefined;
  warehouseConcurrency?: string | undefined;
  dataDir?: string | undefined;
  cacheFile?: string | undefined;
  lockWait?: string | undefined;
  timeout?: string | undefined;
  cacheMaxMb?: string | undefined;
  sandboxMaxMemoryMb?: string | undefined;
  memoryMb?: string | undefined;
  /** --queries, repeatable. */
  queries?: readonly string[] | undefined;
  passwordFile?: string | undefined;
  store?: string | undefined;
  storePasswordFile?: string | undefined;
}

/** The environment, as settings read it. */
export type Env = Readonly<Record<string, string | undefined>>;

// One parser per kind of setting.

/** A setting's text, with empty as absent. */
function text(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

/** The first of a setting's sources that is set: flag, then environment, then default. */
function first(...values: (string | undefined)[]): string | undefined {
  return values.map(text).find((v) => v !== undefined);
}

/** A number setting within bounds; `what` names it in the error, with what it accepts. */
function number(value: string, what: string, bounds: { min: number; max: number; integer?: boolean; unit: string }): number {
  const n = Number(value);
  const shape = bounds.integer ? /^\d+$/ : /^\d+(\.\d+)?$/;
  if (!shape.test(value.trim()) || !(n >= bounds.min && n <= bounds.max)) {
    const unit = bounds.unit === '' ? '' : ` of ${bounds.unit}`;
    throw new InputError(`invalid ${what} ${JSON.stringify(value)}: expected ${bounds.integer ? 'a whole number' : 'a number'}${unit} from ${bounds.min} to ${bounds.max}.`);
  }
  return n;
}

/** A yes/no environment variable: yes when set to anything but empty, `0` or `false`. */
function envFlag(value: string | undefined): boolean {
  return value !== undefined && value !== '' && value !== '0' && value.toLowerCase() !== 'false';
}

/** A path setting, made absolute. */
function path(value: string): string {
  return resolve(value);
}

/** Precedence, lowest first: defaults < environment < flags. */
export function resolveConfig(flags: ConfigFlags = {}, env: Env = process.env): Config {
  // Without HOME (cron's `env -i`, a service without a user), the defaults are under the account's home
  // in the password database: said once, naming each one so taken, never chosen in silence.
  const homeSet = text(env.HOME) !== undefined;
  const home = text(env.HOME) ?? homedir();
  const dataHome = text(env.XDG_DATA_HOME) ?? join(home, '.local', 'share');
  const cacheHome = text(env.XDG_CACHE_HOME) ?? join(home, '.cache');
  const configHome = text(env.XDG_CONFIG_HOME) ?? join(home, '.config');
  const urlFlags = typeof flags.url === 'string' ? [flags.url] : flags.url;
  const given = listSetting(SETTINGS.url, urlFlags, env);
  for (const url of given) checkServerUrl(url);
  if (new Set(given.map(redactUrl)).size < given.length) throw new InputError(`a ClickHouse URL is given twice (${given.map(redactUrl).join(', ')}): each host of the warehouse once.`);
  const warnings: string[] = [];
  if ((urlFlags ?? []).some(hasPassword)) {
    warnings.push('a password in --url can be read by every user of this machine (ps); give it in SAVEDQ_CLICKHOUSE_URL or with --password-file instead.');
  }
  const passwordFile = settingOf(SETTINGS.passwordFile, flags.passwordFile, env);
  const password = passwordFile !== undefined && given.some((u) => !hasPassword(u)) ? passwordOf(passwordFile) : undefined;
  // --password-file gives the password to the hosts without one of their own.
  const urls = given.map((u) => (password !== undefined && !hasPassword(u) ? withPassword(u, password) : u));
  const loadBalance = settingOf(SETTINGS.loadBalance, flags.loadBalance, env) ?? 'in-order';
  if (loadBalance !== 'in-order' && loadBalance !== 'random') throw new InputError(`invalid --load-balance ${JSON.stringify(loadBalance)}: in-order or random.`);
  const dataDir = path(settingOf(SETTINGS.dataDir, flags.dataDir, env) ?? join(dataHome, 'savedq'));
  const store = storeConfig(flags, env, warnings);
  const cacheFile = path(settingOf(SETTINGS.cacheFile, flags.cacheFile, env) ?? join(cacheHome, 'savedq', 'results.sqlite'));
  const folders = queryFolders(flags.queries, env[SETTINGS.queries.env], join(configHome, 'savedq', 'queries'));
  if (!homeSet) {
    const underHome = (given: string | undefined, xdg: string | undefined) => given === undefined && text(xdg) === undefined;
    const queriesGiven = [...(flags.queries ?? []), ...(env[SETTINGS.queries.env] ?? '').split(':')].some((dir) => dir !== '');
    const guessed = [
      urls.length === 0 && underHome(settingOf(SETTINGS.dataDir, flags.dataDir, env), env.XDG_DATA_HOME) ? `the data directory ${dataDir} (--data-dir)` : undefined,
      underHome(settingOf(SETTINGS.cacheFile, flags.cacheFile, env), env.XDG_CACHE_HOME) ? `the cache file ${cacheFile} (--cache-file)` : undefined,
      underHome(queriesGiven ? 'given' : undefined, env.XDG_CONFIG_HOME)
        ? `${folders.queryFolders.length > 0 ? 'the queries folder' : 'no queries folder, as there is no'} ${folders.newQueriesDir} (--queries)`
        : undefined,
    ].filter((g) => g !== undefined);
    if (guessed.length > 0) warnings.push(`HOME is not set, so savedq takes ${home} for it: ${guessed.join('; ')}. Set HOME, or give each of these.`);
  }
  return {
    urls,
    loadBalance,
    // A data directory is one machine's: in a store that machines share, it is named with its host.
    source: urls.length === 0 ? `embedded:${store.kind === 'postgres' ? `${hostname()}:` : ''}${realPath(dataDir)}` : `server:${urls.map(redactUrl).sort().join(',')}`,
    store,
    warnings,
    dataDir,
    cacheFile,
    lockWaitMs: numberSetting(SETTINGS.lockWait, flags.lockWait, env) * 1000,
    queryTimeoutSeconds: numberSetting(SETTINGS.timeout, flags.timeout, env),
    cacheMaxBytes: numberSetting(SETTINGS.cacheMaxMb, flags.cacheMaxMb, env) * 2 ** 20,
    warehouseConcurrency: numberSetting(SETTINGS.warehouseConcurrency, flags.warehouseConcurrency, env),
    sandboxMaxMemoryBytes: numberSetting(SETTINGS.sandboxMaxMemoryMb, flags.sandboxMaxMemoryMb, env) * 2 ** 20,
    memoryBytes: numberSetting(SETTINGS.memoryMb, flags.memoryMb, env) * 2 ** 20,
    ...folders,
  };
}

/**
 * The store the settings name: `--store` (else SAVEDQ_STORE_URL) a PostgreSQL URL, its password from
 * `--store-password-file` when given; none: the cache file. Both a store and a cache file given is
 * refused: a team's store and one machine's file are not kept at once.
 */
function storeConfig(flags: ConfigFlags, env: Env, warnings: string[]): StoreConfig {
  const given = settingOf(SETTINGS.store, flags.store, env);
  if (given === undefined) return { kind: 'sqlite' };
  if (!/^postgres(ql)?:\/\//i.test(given)) throw new InputError('invalid store URL: expected postgres:// or postgresql:// (a PostgreSQL server).');
  if (settingOf(SETTINGS.cacheFile, flags.cacheFile, env) !== undefined) {
    throw new InputError('--store and --cache-file both given (or SAVEDQ_STORE_URL and SAVEDQ_CACHE_FILE): what is kept between calls is in one place; give one.');
  }
  let parsed: URL;
  try {
    parsed = new URL(given);
  } catch {
    throw new InputError('invalid store URL: not a URL (postgres://user@host:5432/database).');
  }
  if (text(flags.store) !== undefined && parsed.password !== '') {
    warnings.push('a password in --store can be read by every user of this machine (ps); give it in SAVEDQ_STORE_URL or with --store-password-file instead.');
  }
  const passwordFile = settingOf(SETTINGS.storePasswordFile, flags.storePasswordFile, env);
  const url = libpqSsl(passwordFile === undefined ? given : withPassword(given, passwordOf(passwordFile)));
  // libpq's options (`?options=-c search_path=team`) may name the schema; else savedq's own.
  const searchPath = /search_path\s*=\s*([^\s,]+)/.exec(parsed.searchParams.get('options') ?? '')?.[1];
  const schema = searchPath ?? 'savedq';
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new InputError(`invalid store schema ${JSON.stringify(schema)} (the URL's search_path): lower-case letters, digits and _, as a name savedq's tables go under.`);
  return { kind: 'postgres', url, shown: redactUrl(given), schema };
}

/** sslmode's values, as libpq reads them (and node-postgres's no-verify). */
const SSL_MODES = ['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify'];

/**
 * A store URL whose sslmode node-postgres reads as libpq does (the URL is libpq's): `require` encrypts
 * and verifies the server only against `sslrootcert` when given, `verify-ca` checks the chain,
 * `verify-full` the host's name too. Left to itself, node-postgres takes `require` and `verify-ca` for
 * `verify-full` and says so in a multi-line warning on standard error.
 */
function libpqSsl(url: string): string {
  const parsed = new URL(url);
  const mode = parsed.searchParams.get('sslmode');
  if (mode === null || parsed.searchParams.has('uselibpqcompat')) return url;
  if (!SSL_MODES.includes(mode)) throw new InputError(`invalid sslmode ${JSON.stringify(mode)} in the store URL: one of ${SSL_MODES.join(', ')}.`);
  if (mode === 'verify-ca' && !parsed.searchParams.has('sslrootcert')) {
    throw new InputError('sslmode=verify-ca in the store URL needs sslrootcert=<file>: the certificate of the authority to verify the server against.');
  }
  parsed.searchParams.set('uselibpqcompat', 'true');
  return parsed.href;
}

/**
 * A ClickHouse URL as a host of the warehouse must be (http or https, a host, nothing after #), or
 * refused naming it without its password.
 */
function checkServerUrl(url: string): void {
  // What the URL parser will not read is shown with anything between :// and @ taken for credentials.
  const shown = () => url.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^@/]*)@/i, (_, scheme: string, who: string) => `${scheme}${who.split(':')[0] ?? ''}@`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Hosts joined by commas, as SAVEDQ_CLICKHOUSE_URL takes them (which splits them before this), in a flag.
    const several = url.includes(',') ? '; give each host a --url of its own (SAVEDQ_CLICKHOUSE_URL takes them separated by commas)' : ' (http://user@host:8123/database)';
    throw new InputError(`invalid ClickHouse URL ${shown()}: not a URL${several}.`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new InputError(`invalid ClickHouse URL ${redactUrl(url)}: expected http:// or https://.`);
  if (parsed.hostname === '') throw new InputError(`invalid ClickHouse URL ${redactUrl(url)}: no host.`);
}

/** A URL with its password removed, for messages and for naming a data source. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    u.password = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return '<invalid URL>';
  }
}

function hasPassword(url: string): boolean {
  try {
    return new URL(url).password !== '';
  } catch {
    return false;
  }
}

function withPassword(url: string, password: string): string {
  const u = new URL(url);
  u.password = encodeURIComponent(password);
  return u.toString();
}

/**
 * A file of secrets (a password, token secrets, API keys), read by one rule: a regular file (a pipe or
 * a device would hold the read, and the start, forever) that no one but its owner may read (exit 2,
 * naming it and the fix). `what` names it in errors: "password file".
 */
function readSecretFile(file: string, what: string): string {
  const path = resolve(file);
  try {
    const stat = statSync(path);
    if (!stat.isFile()) throw new Error('not a regular file');
    if ((stat.mode & 0o077) !== 0) throw new InputError(`${what} ${path} can be read by other users; run chmod 600 ${path}.`);
    return readFileSync(path, 'utf8');
  } catch (err) {
    if (err instanceof InputError) throw err;
    throw new InputError(`cannot read ${what} ${path}: ${errnoText(err)}.`);
  }
}

/** A secret file's entries: one a line, or the variable's comma-separated items; blank lines and `#` comments left out. */
function secretLines(file: string | undefined, what: string, variable: string | undefined): string[] {
  const list = file !== undefined ? readSecretFile(file, what) : (variable ?? '').replace(/,/g, '\n');
  return list
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** A password file's first line. */
function passwordOf(file: string): string {
  const password = readSecretFile(file, 'password file').split(/\r?\n/)[0] ?? '';
  if (password === '') throw new InputError(`password file ${resolve(file)} is empty: its first line is the password.`);
  return password;
}

/** A path by its real location (links resolved), also for one not made yet: its nearest existing parent's, and the rest. */
function realPath(target: string): string {
  for (let dir = target, rest = ''; ; ) {
    try {
      return join(realpathSync(dir), rest);
    } catch {
      const parent = dirname(dir);
      if (parent === dir) return target;
      rest = join(basename(dir), rest);
      dir = parent;
    }
  }
}

/**
 * The user's saved-query folders: every --queries, else SAVEDQ_QUERIES (colon-separated), else the
 * default folder when it exists.
 */
function queryFolders(flags: readonly string[] | undefined, env: string | undefined, defaultDir: string): Pick<Config, 'queryFolders' | 'newQueriesDir'> {
  const given = flags && flags.length > 0 ? flags : (env ?? '').split(':');
  const folders = given.filter((dir) => dir !== '').map(path);
  if (folders.length > 0) return { queryFolders: folders, newQueriesDir: folders[0] as string };
  return { queryFolders: existsSync(defaultDir) ? [defaultDir] : [], newQueriesDir: defaultDir };
}

/** How `savedq serve` listens, and the keys it accepts. */
export interface ServeSettings {
  readonly host: string;
  readonly port: number;
  readonly apiKeys: readonly string[];
  /** HTTP connections open at once, at most: never so many that the process runs out of files. */
  readonly maxConnections: number;
  /** Seconds a request's headers may take to arrive whole. */
  readonly headerTimeoutSeconds: number;
  /** Statements waiting for the warehouse, at most: one more is answered 503 at once. */
  readonly maxQueue: number;
  /** Exports streaming at once, at most: one more is answered 503 at once. */
  readonly maxExports: number;
  /** Secrets of signed tokens: the first signs, every one verifies (none: tokens are refused). */
  readonly tokenSecrets: readonly string[];
  /** Calls a second for every caller without a limit of its own; undefined: none. */
  readonly rateLimit: number | undefined;
  /** Origins whose pages may call serve (CORS); `*` any; empty: none. */
  readonly corsOrigins: readonly string[];
  /** Names (with a port or not) /mcp answers a Host header of, besides IP addresses and a loopback's localhost. */
  readonly allowedHosts: readonly string[];
}

/** The settings of `savedq serve` of the table (SETTINGS), in the order its help lists them. */
export const SERVE_SETTINGS = ['host', 'port', 'apiKeyFile', 'maxConnections', 'headerTimeout', 'maxQueue', 'maxExports', 'tokenSecretFile', 'corsOrigin', 'rateLimit', 'allowedHost'] as const;

/** Flags of `savedq serve`, as commander gives them: each setting of SERVE_SETTINGS by its name, a list for a repeatable one. */
export type ServeFlags = { readonly [K in (typeof SERVE_SETTINGS)[number]]?: ((typeof SETTINGS)[K] extends { readonly repeatable: true } ? readonly string[] : string) | undefined };

/** Host names as a Host header carries them, a port or not: anything else is refused at start. */
function allowedHosts(given: readonly string[]): string[] {
  const hosts = given.map((h) => h.toLowerCase());
  for (const host of hosts) {
    if (!/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:\d{1,5})?$/.test(host)) throw new InputError(`invalid --allowed-host ${JSON.stringify(host)}: a host name such as savedq.internal or savedq.internal:4000.`);
  }
  return hosts;
}

/** Origins as a browser sends them (scheme://host[:port], no path), or `*`: anything else is refused at start. */
function corsOrigins(origins: readonly string[]): readonly string[] {
  for (const origin of origins) {
    if (origin !== '*' && !/^https?:\/\/[^/\s]+$/.test(origin)) throw new InputError(`invalid --cors-origin ${JSON.stringify(origin)}: an origin such as https://dashboard.example.com (no path), or *.`);
  }
  return origins;
}

/** A token secret is at least this long (HS256: RFC 7518 §3.2). */
const MIN_SECRET_BYTES = 32;

/**
 * The secrets of signed tokens: --token-secret-file (one a line; refused when others may read it), else
 * SAVEDQ_TOKEN_SECRETS (comma-separated). Each at least 32 bytes. The first signs, every one verifies.
 */
export function resolveTokenSecrets(file: string | undefined, env: Env = process.env): string[] {
  const secrets = secretLines(text(file), 'token secret file', env[SETTINGS.tokenSecretFile.env]);
  const short = secrets.findIndex((s) => Buffer.byteLength(s) < MIN_SECRET_BYTES);
  if (short >= 0) throw new InputError(`token secret ${short + 1} is ${Buffer.byteLength(secrets[short] as string)} bytes long; a secret is at least ${MIN_SECRET_BYTES} (openssl rand -base64 48 makes one).`);
  return secrets;
}

/**
 * Files the process keeps beside its HTTP connections: the engine's (its parts, its logs), the cache
 * file, the socket and its connections. HTTP never takes these.
 */
const FILES_KEPT = 256;

/** The process's open-file limit (its soft limit), where the system tells it (Linux: /proc/self/limits). */
function openFileLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
    return line === undefined || line === 'unlimited' ? undefined : Number(line);
  } catch {
    return undefined;
  }
}

/** The settings of `serve`: where it listens, the keys it accepts (--api-key-file, one a line, else SAVEDQ_API_KEYS, comma-separated), its limits. */
export function resolveServeSettings(flags: ServeFlags, env: Env = process.env): ServeSettings {
  return {
    host: settingOf(SETTINGS.host, flags.host, env) as string,
    port: numberSetting(SETTINGS.port, flags.port, env),
    apiKeys: apiKeys(secretLines(text(flags.apiKeyFile), 'API key file', env[SETTINGS.apiKeyFile.env])),
    maxConnections: Math.max(1, Math.min(numberSetting(SETTINGS.maxConnections, flags.maxConnections, env), (openFileLimit() ?? Infinity) - FILES_KEPT)),
    headerTimeoutSeconds: numberSetting(SETTINGS.headerTimeout, flags.headerTimeout, env),
    maxQueue: numberSetting(SETTINGS.maxQueue, flags.maxQueue, env),
    maxExports: numberSetting(SETTINGS.maxExports, flags.maxExports, env),
    tokenSecrets: resolveTokenSecrets(flags.tokenSecretFile, env),
    corsOrigins: corsOrigins(listSetting(SETTINGS.corsOrigin, flags.corsOrigin, env)),
    allowedHosts: allowedHosts(listSetting(SETTINGS.allowedHost, flags.allowedHost, env)),
    rateLimit: settingOf(SETTINGS.rateLimit, flags.rateLimit, env) === undefined ? undefined : numberSetting(SETTINGS.rateLimit, flags.rateLimit, env),
  };
}

/** The longest API key, in bytes (UTF-8): keys are compared in buffers of one length (http/keys.ts). */
export const MAX_API_KEY_BYTES = 511;

/** The API keys serve accepts: at least one, none longer than MAX_API_KEY_BYTES. */
function apiKeys(keys: string[]): string[] {
  if (keys.length === 0) throw new InputError('serve needs at least one API key: set SAVEDQ_API_KEYS or give --api-key-file.');
  const long = keys.findIndex((k) => Buffer.byteLength(k) > MAX_API_KEY_BYTES);
  if (long >= 0) throw new InputError(`API key ${long + 1} is ${Buffer.byteLength(keys[long] as string)} bytes long; a key is at most ${MAX_API_KEY_BYTES}.`);
  return keys;
}

/** A number of seconds from a flag (`what` names it), or its default. */
export function resolveSeconds(flag: string | undefined, what: string, fallback: number): number {
  return number(text(flag) ?? String(fallback), what, { min: 0, max: 86_400, unit: 'seconds' });
}

/** --batch-mb: input per insert, in bytes (default 32 MiB). */
export function resolveBatchBytes(flag: string | undefined): number {
  const megabytes = number(text(flag) ?? '32', '--batch-mb', { min: 1, max: 1024, unit: 'megabytes' });
  return Math.round(megabytes * 2 ** 20);
}

/** Whether output is in colour: --no-color and NO_COLOR turn it off, FORCE_COLOR turns it on, else only on a terminal. */
export function resolveColor(flag: boolean | undefined, isTerminal: boolean, env: Env = process.env): boolean {
  if (flag === false) return false;
  if (text(env.NO_COLOR) !== undefined) return false;
  if (env.FORCE_COLOR !== undefined) return env.FORCE_COLOR !== '0' && env.FORCE_COLOR !== 'false';
  return isTerminal;
}

/** Whether progress is shown: on a terminal, never under CI or with --quiet. */
export function resolveProgress(quiet: boolean | undefined, isTerminal: boolean, env: Env = process.env): boolean {
  return isTerminal && !envFlag(env.CI) && quiet !== true;
}

/** The width tables fit: the terminal's, else COLUMNS, else 80 (a table written to a pipe or a file fits 80 unless told otherwise). */
export function resolveTableWidth(terminalColumns: number | undefined, env: Env = process.env): number {
  if (terminalColumns) return terminalColumns;
  const columns = text(env.COLUMNS);
  return columns !== undefined && /^\d+$/.test(columns) && Number(columns) > 0 ? Number(columns) : 80;
}
