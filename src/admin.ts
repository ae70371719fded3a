import { packageVersion, builtinQueriesDir, examplesDir } from './package.js';
import { redactUrl } from './config.js';
import { InputError } from './errors.js';
import { withSqlOver, type PreparedCall } from './calls/prepare.js';
import type { GenerationState } from './calls/generation.js';
import type { Savedq } from './library.js';
import { PostgresStore } from './store/postgres.js';
import type { ProcessRecord, Store, StoreProbe } from './store/types.js';
import type { CheckedTestFile, FileResult, TestOptions } from './testing/index.js';
import type { Alerts } from './alerts/index.js';
import type { HostStatus } from './warehouse/types.js';

// What savedq does besides answering calls, over the library: making a team's store and a server's
// tables (init, schema), saying where things are and how they answer (status), running the saved
// queries' tests, and assembling the alerts. The library (library.ts) is the door of calls; this is
// the rest of the house, so that a call's walk never passes through it.

/** What `savedq status` reports. */
export interface StatusReport {
  readonly store: { readonly backend: Store['backend']; readonly location: string; readonly probe: StoreProbe };
  /** Where the data is: the data directory, or the server's URL without its password. */
  readonly warehouse: string;
  /** A server warehouse's hosts, each asked now whether it answers. */
  readonly hosts?: readonly HostStatus[];
  /** Left out when the store does not answer. */
  readonly data?: GenerationState;
  readonly cached?: { readonly calls: number; readonly bytes: number; readonly maxBytes: number };
  /** What a process keeps in memory of the answers it gave (--memory-mb), at most. */
  readonly memory: { readonly maxBytes: number };
  readonly processes?: ProcessRecord[];
}

/** The processes that said they share the store in the last minute. */
export function storeProcesses(lib: Savedq): Promise<ProcessRecord[]> {
  return lib.store.processes(Date.now() - 60_000);
}

/**
 * What `savedq status` says: the store asked now (where, whether and how fast it answers, its tables'
 * version), where the data is and its generation, what is cached, and who shared the store in the
 * last minute. What only the store knows is left out when it does not answer. Opens no warehouse.
 */
export async function statusOf(lib: Savedq): Promise<StatusReport> {
  await lib.settled();
  const probe = await lib.store.probe();
  const store = { backend: lib.store.backend, location: lib.store.location, probe };
  const warehouse = lib.config.urls.length === 0 ? lib.config.dataDir : lib.config.urls.map(redactUrl).join(', ');
  // A server's hosts are asked (their /ping: no engine is started, no query run).
  const probed = lib.config.urls.length === 0 ? undefined : await (await lib.warehouse()).probeHosts?.();
  const where = { warehouse, ...(probed ? { hosts: probed.hosts } : {}), memory: { maxBytes: lib.config.memoryBytes } };
  // Tables not made yet: nothing kept to tell (and asking would make them: savedq init --store's work).
  if (!probe.up || (probe.tables !== undefined && probe.tables.version === undefined)) return { store, ...where };
  const [data, served, bytes, processes] = await Promise.all([lib.generation.fresh(), lib.store.served(), lib.cache.size(), storeProcesses(lib)]);
  return { store, ...where, data, cached: { calls: served.length, bytes, maxBytes: lib.config.cacheMaxBytes }, processes };
}

/** The DDL of the log tables, for a server or (with a name) a cluster. */
export async function schemaOf(cluster?: string): Promise<string[]> {
  const { schemaDdl } = await import('./warehouse/schema.js');
  return schemaDdl(cluster);
}

/**
 * Makes savedq's tables in a PostgreSQL store (when one is given), then applies the log tables' DDL to
 * the ClickHouse server the configuration names (when one is given), telling each step as it goes.
 */
export async function init(lib: Savedq, cluster: string | undefined, onApplied?: (step: string) => void): Promise<void> {
  const { config } = lib;
  const store = lib.store instanceof PostgresStore ? lib.store : undefined;
  if (config.urls.length === 0 && store === undefined) {
    throw new InputError(
      'init needs a ClickHouse server (--url or SAVEDQ_CLICKHOUSE_URL) or a store (--store or SAVEDQ_STORE_URL): the embedded engine and the cache file make their tables themselves.',
    );
  }
  if (cluster !== undefined && config.urls.length === 0) throw new InputError('--cluster needs a ClickHouse server: give --url or SAVEDQ_CLICKHOUSE_URL.');
  if (store !== undefined) {
    const made = await store.create();
    const done = { made: "made savedq's tables", upgraded: "brought savedq's tables up to this version", there: "savedq's tables are there already" }[made];
    onApplied?.(`store ${store.location}: ${done} (schema ${store.schema})`);
  }
  if (config.urls.length === 0) return;
  const [{ openWarehouse }, statements] = await Promise.all([import('./warehouse/index.js'), schemaOf(cluster)]);
  const { urls, loadBalance, dataDir, lockWaitMs, queryTimeoutSeconds } = config;
  // One host takes the DDL (on a cluster, ON CLUSTER takes it to every node).
  const warehouse = await openWarehouse({ urls, loadBalance, dataDir, lockWaitMs, timeoutSeconds: queryTimeoutSeconds, createTables: false });
  try {
    for (const statement of statements) {
      await warehouse.command(statement);
      onApplied?.(`applied: ${statement.split('\n')[0]}`);
    }
  } finally {
    await warehouse.close();
  }
}

/**
 * Runs saved queries' tests (`savedq test`), each test file on a warehouse of its own in an embedded
 * engine started for the run on a temporary data directory, whatever the configuration's warehouse:
 * nothing of the library's data directory, server or cache is read or written.
 */
export async function runTests(lib: Savedq, options: Omit<TestOptions, 'limits'>): Promise<FileResult[]> {
  const { runTests: run } = await import('./testing/index.js');
  const folders = { builtin: builtinQueriesDir, examples: examplesDir, user: lib.config.queryFolders };
  const limits = { timeoutSeconds: lib.config.queryTimeoutSeconds, sandboxMaxMemoryBytes: lib.config.sandboxMaxMemoryBytes };
  return run(folders, { ...options, limits });
}

/** The test files of the user's folders, read and matched with their queries, nothing run (`check`). */
export async function checkTests(lib: Savedq): Promise<CheckedTestFile[]> {
  const { checkTestFiles } = await import('./testing/index.js');
  return checkTestFiles(lib.catalog);
}

/**
 * An alert's call: its saved query's call, prepared as any run's, with the alert's condition over the
 * answer, checked on the engine's parse as a caller's SQL is: `when`, an expression over a row;
 * `whenSql`, a SELECT over `result`.
 */
async function withCondition(lib: Savedq, call: PreparedCall, condition: { readonly when?: string | undefined; readonly whenSql?: string | undefined }): Promise<PreparedCall> {
  const sql = condition.when !== undefined ? await lib.executor.checkCondition(condition.when) : await lib.executor.checkSql(condition.whenSql ?? '');
  return withSqlOver(call, sql);
}

/** Each library's alerts, made on first use. */
const alertsOfLibraries = new WeakMap<Savedq, Promise<Alerts>>();

/**
 * The alerts of the queries folders (alerts/): each runs its saved query's call through the library,
 * the cache included, and keeps its state in the store, as the source's it evaluated. Made on first use.
 */
export function alertsOf(lib: Savedq): Promise<Alerts> {
  let alerts = alertsOfLibraries.get(lib);
  if (!alerts) {
    alerts = import('./alerts/index.js').then(
      ({ Alerts }) =>
        new Alerts({
          folders: lib.config.queryFolders,
          records: lib.store.alerts(lib.config.source),
          clock: () => lib.clock(),
          prepare: (request) => lib.prepare(request),
          withCondition: (call, condition) => withCondition(lib, call, condition),
          run: (call) => lib.runPrepared(call, 'use', { caller: 'alerts' }),
          explain: (call) => lib.executor.explainOver(call),
          env: process.env,
          userAgent: `savedq/${packageVersion()}`,
        }),
    );
    alertsOfLibraries.set(lib, alerts);
  }
  return alerts;
}
