import { hostname } from 'node:os';
import { ResultsCache, type CachedCall, type CacheEntry } from './cache/index.js';
import { openStore } from './store/index.js';
import { StoreUnreachable } from './store/health.js';
import { fileMemo, memoKeys, memoryMemo, pruneMemo } from './store/memo.js';
import type { LocalMemo, Store } from './store/types.js';
import { prepareCall, type CallRequest, type PreparedCall } from './calls/prepare.js';
import { CallRunner, type CacheMode, type Clock, type RunOptions, type RunResult } from './calls/runner.js';
import { CallExecutor } from './calls/execute.js';
import type { Export, ExportOptions } from './calls/export.js';
import { embeddedGeneration, serverGeneration, type DataGeneration } from './calls/generation.js';
import { cachedCallViews, dueForWarming, warm, type CachedCallView, type WarmingParts, type WarmOptions, type WarmOutcome } from './calls/warming.js';
import type { Config } from './config.js';
import { WarehouseHandle } from './warehouse-handle.js';
import { DefinitionError, InputError } from './errors.js';
import { sqlitePathCheck, type Unsafe } from './fs.js';
import type { LoadInput, LoadOptions, LoadReport } from './load/index.js';
import { builtinQueriesDir, packageVersion } from './package.js';
import { brokenText, QueryCatalog, type CatalogScan } from './queries/catalog.js';
import type { PatternMemo } from './queries/params.js';
import { SILENT, type Reporter } from './report.js';
import type { Warehouse } from './warehouse/index.js';
import type { EngineQueue, WarehouseHosts } from './warehouse/types.js';
import type { TableName } from './warehouse/schema.js';

export type { CallRequest, PreparedCall } from './calls/prepare.js';
export type { CacheMode, CacheOutcome, Clock, RunResult } from './calls/runner.js';
export type { CachedCallView, WarmOptions, WarmOutcome } from './calls/warming.js';
export type { GenerationState } from './calls/generation.js';
export { warmCounts } from './calls/warming.js';

/** A request to run a saved query. */
export interface RunRequest extends CallRequest {
  readonly cache?: CacheMode;
  /**
   * When aborted, this caller stops waiting (with the abort's reason). The query itself runs on for any
   * identical call that joined it, and is stored as usual; when every such caller has given up before
   * it began, it is not run.
   */
  readonly signal?: AbortSignal | undefined;
  /** The request's id (serve's X-Request-Id), which the warehouse's query log is told; absent: the run's own. */
  readonly requestId?: string | undefined;
  /** A caller's W3C trace context (traceparent, tracestate), passed on to the warehouse. */
  readonly trace?: RunOptions['trace'];
}

/** An export asked for: the call, as a run's, and how its answer is written (calls/export.ts). */
export interface ExportRequest extends CallRequest, Omit<ExportOptions, 'tags'> {
  readonly requestId?: string | undefined;
  readonly trace?: RunOptions['trace'];
}

/**
 * What a library's process is: `serve`, which owns the embedded engine of its data directory (and
 * shares it with the others), watches the data's generation and keeps its memories in its memory; or a
 * command, which uses a serve's engine when one runs, and its memories' files.
 */
export type Role = 'serve' | 'command';

/** How a library is made besides its configuration. */
export interface LibraryOptions {
  readonly clock?: Clock;
  /** What this process is (default: a command). */
  readonly role?: Role;
  /** When aborted, waiting for the data directory ends with the abort reason. */
  readonly signal?: AbortSignal;
  /** The saved queries; default: the built-ins and the configured folders. */
  readonly queries?: QueryCatalog;
  /** Who hears warnings and notes as they happen (default: no one). */
  readonly reporter?: Reporter;
}

/** What is remembered locally is kept a week after it was written (looked up by its text, so never stale). */
const MEMO_RETENTION_MS = 7 * 24 * 3_600_000;
/** At most this many files of what is remembered locally: the newest are kept. */
const MEMO_FILES_KEPT = 5_000;
/** Patterns a server remembers as compiling. */
const PATTERNS_KEPT = 10_000;

/**
 * The library: every surface (CLI commands, HTTP, MCP) comes in here, and a call reads top-down from
 * it: prepare (calls/prepare.ts: the catalog finds the query, every parameter is checked) → the call's
 * whole life (calls/runner.ts: the cache, identical calls in flight, the store's leases, what is kept)
 * → the engine below the cache (calls/execute.ts) → the warehouse (warehouse/) → the answer. It wires
 * the rooms once, and keeps what they share: the catalog, the store, the data's generation. What
 * else savedq does (init, schema, status, tests, alerts) is admin.ts's, over this. It never prints and
 * never exits: what a surface should tell its user reaches it through the Reporter it gave.
 */
export class Savedq {
  readonly config: Config;
  readonly clock: Clock;
  /** What this process is: serve, or a command. */
  readonly role: Role;
  /** What is kept between calls (store/): the SQLite file, or PostgreSQL for a team. */
  readonly store: Store;
  readonly cache: ResultsCache;
  /** The generation of the data this library reads (calls/generation.ts), picked once for the warehouse. */
  readonly generation: DataGeneration;
  /** What runs calls on the warehouse below the cache (calls/execute.ts). */
  readonly executor: CallExecutor;
  /** Told of warnings and notes as they happen. */
  readonly reporter: Reporter;
  /** This process, as its leases name it to the others sharing the store. */
  readonly owner: string;
  readonly #warehouse: WarehouseHandle;
  readonly #runner: CallRunner;
  /** What this machine remembers: files beside the cache file (store/memo.ts). */
  readonly #memo: LocalMemo;
  /**
   * Patterns RE2 compiled: a hit of a pattern checked before loads no RE2. A server keeps them in memory,
   * bounded: its callers send the patterns, and a file each would let them fill the disk.
   */
  readonly #patterns: PatternMemo;
  #catalog: QueryCatalog;
  /** The catalog whose broken definitions were reported, so each is reported once. */
  #reported: QueryCatalog | undefined;
  #closed: Promise<void> | undefined;

  constructor(config: Config, options: LibraryOptions = {}) {
    this.config = config;
    this.clock = options.clock ?? Date.now;
    this.role = options.role ?? 'command';
    this.reporter = options.reporter ?? SILENT;
    const serving = this.role === 'serve';
    // Whether the cache file's path is one to use (not a folder, a device, a file of other text): looked
    // at once, for the results cache, the memo beside it and the alerts' store.
    const cacheFileProblem: () => Unsafe = sqlitePathCheck(config.cacheFile);
    this.store = openStore(config, (message, kind) => (kind === 'back' ? this.reporter.note(message) : this.reporter.warn(message)), cacheFileProblem, serving ? 8 : 2);
    this.cache = new ResultsCache(this.store);
    this.#memo = fileMemo(config.cacheFile, cacheFileProblem);
    const patterns = serving ? memoryMemo(PATTERNS_KEPT) : this.#memo;
    this.#patterns = { get: (pattern) => patterns.get(memoKeys.pattern(pattern)), set: (pattern) => patterns.set(memoKeys.pattern(pattern), true) };
    this.#catalog = options.queries ?? new QueryCatalog({ builtin: builtinQueriesDir, user: config.queryFolders }, this.#memo);
    this.#warehouse = new WarehouseHandle(config, { owns: serving, signal: options.signal, reporter: this.reporter, store: this.store });
    // Unique enough beside the host and pid, and no node:crypto for it (a cache hit loads none).
    this.owner = `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 10)}`;
    this.generation = config.urls.length === 0 ? embeddedGeneration(config.dataDir, serving) : serverGeneration(this.store, config.source, this.owner);
    this.executor = new CallExecutor({
      warehouse: () => this.#warehouse.open(),
      source: config.source,
      timeoutSeconds: config.queryTimeoutSeconds,
      sandboxMaxMemoryBytes: config.sandboxMaxMemoryBytes,
      clock: () => this.clock(),
      memo: this.#memo,
    });
    this.#runner = new CallRunner({
      cache: this.cache,
      store: this.store,
      executor: this.executor,
      generation: this.generation,
      clock: () => this.clock(),
      owner: this.owner,
      waitMs: config.queryTimeoutSeconds * 1000,
      maxBytes: config.cacheMaxBytes,
      recentBytes: config.memoryBytes / 2,
    });
  }

  /** The catalog of the saved queries this library answers (savedQueries() reads it, with its warnings). */
  get catalog(): QueryCatalog {
    return this.#catalog;
  }

  /**
   * Answers from another set of saved queries from now on (`serve` on SIGHUP). Calls already under way
   * finish with the definition they started with; cache keys carry each definition's digest, so no
   * result of an old text is served for a new one.
   */
  useQueries(queries: QueryCatalog): void {
    this.#catalog = queries;
    this.#runner.forgetRecent();
  }

  /**
   * Every saved query, read and checked together; broken ones are reported (once a set) as warnings,
   * but for the files or folders in `unsaid` (a folder `savedq new` is about to make).
   */
  async savedQueries(unsaid: readonly string[] = []): Promise<CatalogScan> {
    const scan = await this.#catalog.scan();
    this.#reportBroken(unsaid);
    return scan;
  }

  /** Reports the broken definitions of the current set, once; those an error is about already are its own. */
  #reportBroken(told: readonly string[] = []): void {
    const scan = this.#catalog.scanned();
    if (!scan || this.#reported === this.#catalog) return;
    this.#reported = this.#catalog;
    for (const broken of scan.broken) if (!told.includes(broken.file)) this.reporter.warn(`skipped ${brokenText(broken)}`);
  }

  /** Checks a request against the saved queries, without running anything. */
  async prepare(request: CallRequest): Promise<PreparedCall> {
    try {
      const data = await this.generation.fresh();
      const call = await prepareCall(this.#catalog, { name: this.config.source, generation: data.current }, request, this.#patterns, (sql) => this.executor.checkSql(sql));
      this.#reportBroken();
      return call;
    } catch (err) {
      // Broken definitions read on the way may be why.
      this.#reportBroken(err instanceof DefinitionError ? err.files : []);
      throw err;
    }
  }

  /**
   * The door every surface calls a saved query through (the command line, `savedq mcp`, serve's /mcp):
   * the query found, the caller's grant applied, the parameters checked, then the call's life
   * (calls/runner.ts). serve's HTTP keeps the calls it prepared, and runs them with runPrepared.
   */
  async run(request: RunRequest): Promise<RunResult> {
    return this.runPrepared(await this.prepare(request), request.cache ?? 'use', { signal: request.signal, caller: request.caller?.name, requestId: request.requestId, trace: request.trace });
  }

  /**
   * The door of an export (`savedq export`, serve's export route): the call prepared as a run's is,
   * then its whole answer streamed in a format, never cached (calls/export.ts).
   */
  async export(request: ExportRequest): Promise<Export> {
    return this.exportPrepared(await this.prepare(request), request);
  }

  /** An export of a call already prepared (the command opens its file between the two). */
  exportPrepared(call: PreparedCall, request: Omit<ExportRequest, Exclude<keyof CallRequest, 'caller'>>): Promise<Export> {
    return this.executor.export(call, {
      format: request.format,
      signal: request.signal,
      tags: { caller: request.caller?.name, requestId: request.requestId, trace: request.trace },
      terminal: request.terminal,
      csvRaw: request.csvRaw,
      file: request.file,
    });
  }

  /**
   * Runs a call already prepared (a server keeps the calls it prepared): its cache mode, and who asks
   * (serve: an API key, for turns at the engine fair across callers) and until when they wait. What
   * follows the answer (storing it, recording it as served) is done after it (`settled`).
   */
  runPrepared(call: PreparedCall, mode: CacheMode = 'use', options: RunOptions = {}): Promise<RunResult> {
    return this.#runner.run(call, mode, options);
  }

  /** The answer from what this process served a moment ago, without waiting (serve's hot path), if any. */
  answerRecent(call: PreparedCall): RunResult | undefined {
    return this.#runner.answerRecent(call);
  }

  /** The rows of answers this process keeps in memory to give again at once: about how many bytes, of at most how many (serve's /health). */
  recentMemory(): { bytes: number; maxBytes: number } {
    return this.#runner.recentMemory();
  }

  /** The statements running and waiting for the warehouse, this process's and (serve's) those of the processes sharing its engine: serve's /health. */
  engineQueue(): EngineQueue {
    return this.#warehouse.queueState();
  }

  /** How many statements may wait for the warehouse at most (serve's --max-queue): one more is refused (503). */
  limitQueue(maxWaiting: number): void {
    this.#warehouse.queue.limit(maxWaiting);
  }

  /** How many exports may stream at once (serve's --max-exports): its HTTP exports and the streams of the processes sharing its engine. */
  limitExports(max: number): void {
    this.#warehouse.exports.limit(max);
  }

  /** An export's slot, released by the function returned; none free is OverloadedError (503). */
  exportSlot(): () => void {
    return this.#warehouse.exports.take();
  }

  /** The hosts of a server warehouse and whether each answers, once the warehouse is open (serve's /health, /metrics). */
  warehouseHosts(): WarehouseHosts | undefined {
    return this.#warehouse.hosts();
  }

  /** The warehouse, opened on first use and kept until `close()`. */
  warehouse(): Promise<Warehouse> {
    return this.#warehouse.open();
  }

  /**
   * Lets go of the embedded engine (its data directory) until the next call needs it: a process that
   * lives long but calls now and then (`savedq mcp`) never holds the engine between calls. A server
   * warehouse is kept: nothing of another process's waits for it, and its hosts' states (which are
   * down, their probes) would be forgotten with it.
   */
  releaseEngine(): Promise<void> {
    return this.config.urls.length === 0 ? this.#warehouse.close() : Promise.resolve();
  }

  /**
   * Waits for what followed the answers given so far: their results stored and their calls recorded as
   * served (which the answers did not wait for).
   */
  settled(): Promise<void> {
    return this.#runner.settled();
  }

  /** What warming works with (what was served so far recorded, the data's generation read now). */
  async #warming(): Promise<WarmingParts> {
    await this.settled();
    await this.generation.fresh();
    return { catalog: this.#catalog, source: this.config.source, generation: this.generation, cache: this.cache, runner: this.#runner, clock: this.clock };
  }

  /**
   * Keeps what this long-lived process (serve) knows of the data and the cache fresh: the data's
   * generation (a server's read from the store every half second, and at once on another process's
   * signal), and what it served a moment ago forgotten when another process clears the cache. Returns
   * how to stop.
   */
  watchStore(): () => void {
    const stopWatching = this.generation.watch();
    const stopListening = this.store.listen((what) => {
      if (what.kind === 'cleared') this.#runner.forgetRecent();
    });
    return () => {
      stopWatching();
      stopListening();
    };
  }

  /** The warm set: cached calls served lately whose result is old enough to refresh. */
  async dueForWarming(): Promise<CacheEntry[]> {
    const due = await dueForWarming(await this.#warming());
    this.#reportBroken();
    return due;
  }

  /** Re-runs the given calls (default: the warm set) and stores fresh results; see calls/warming.ts. */
  async warm(options: WarmOptions = {}): Promise<WarmOutcome[]> {
    const outcomes = await warm(await this.#warming(), options);
    this.#reportBroken();
    await this.pruneCache();
    return outcomes;
  }

  /**
   * Keeps the cache file bounded: deletes what is past its retention, then the least recently served
   * results while the entries take more than --cache-max-mb (warm, and serve every ten minutes; the
   * runner keeps the bound after each answer it stores), and what this machine remembers past its week.
   */
  async pruneCache(): Promise<{ expired: number; evicted: number }> {
    await this.settled();
    pruneMemo(this.config.cacheFile, MEMO_RETENTION_MS, MEMO_FILES_KEPT);
    return this.cache.prune(this.config.cacheMaxBytes);
  }

  /** The cache entry of a request, checked, for `warm <name> -p …`. */
  async cachedCallOf(request: CallRequest): Promise<CachedCall> {
    const call = await this.prepare(request);
    if (call.query.cacheSeconds === 0) throw new InputError(`${call.query.name} is not cached, so it cannot be warmed.`);
    return call.cached;
  }

  /** Says in the store that this process shares it, and what it runs (serve, every 20 s; a command, once). */
  async announce(role: string): Promise<void> {
    await this.store.beat({ host: hostname(), pid: process.pid, version: packageVersion(), role });
  }

  /** The calls the cache holds, for `cache list`. */
  async cachedCalls(): Promise<CachedCallView[]> {
    const views = await cachedCallViews(await this.#warming());
    this.storeAnswered('nothing to list');
    this.#reportBroken();
    return views;
  }

  /** Forgets every cached result; returns how many calls were forgotten. */
  async clearCache(): Promise<number> {
    await this.settled(); // an answer stored after the clear would outlive it
    const cleared = await this.cache.clear();
    this.storeAnswered('nothing was cleared');
    return cleared;
  }

  /** What reads or changes the store itself (not a call, which answers without it) fails when it did not answer. */
  storeAnswered(consequence: string): void {
    if (!this.store.up) throw new StoreUnreachable(`the cache at ${this.store.location} cannot be used now: ${consequence}.`);
  }

  /**
   * Where the data is (the warehouse's location) when its log tables hold no event at all (an empty
   * answer's likely cause on a new machine), else undefined. An embedded data directory savedq has
   * loaded into (its generation says so, without the engine) is taken to hold some; otherwise the
   * engine's catalog is asked.
   */
  async emptyWarehouse(): Promise<string | undefined> {
    if (this.generation.current().current !== '') return undefined;
    const [{ logTablesEmpty }, warehouse] = await Promise.all([import('./warehouse/schema.js'), this.warehouse()]);
    return (await logTablesEmpty(warehouse)) ? warehouse.location : undefined;
  }

  /**
   * Loads newline-delimited JSON events into a log table (see load/). The warehouse opens while the
   * first batch is read; the data's generation marks the load (calls/generation.ts).
   */
  async load(table: TableName, input: LoadInput, options: LoadOptions = {}): Promise<LoadReport> {
    const { loadEvents } = await import('./load/index.js');
    const opening = this.warehouse();
    return this.generation.changing(opening, () => loadEvents(opening, table, input, options));
  }

  /**
   * Loads sample events for a few projects over the 90 days before now (one instant for every table)
   * into the log tables, unless each holds the sample already (then nothing: each report's `loaded` is
   * 0 and `present` counts the sample's rows there); `replace` loads it anew. On the embedded engine the
   * sample is loaded beside the tables and swapped in with them when every table's is whole, so an
   * interrupted or failed load leaves every table as it was (load/sample.ts).
   */
  async loadSample(tables: readonly TableName[], options: SampleOptions = {}): Promise<SampleReport[]> {
    const [{ loadEvents }, sample] = await Promise.all([import('./load/index.js'), import('./load/sample.js')]);
    const warehouse = await this.warehouse();
    const present = await Promise.all(tables.map((table) => sample.sampleRowsIn(warehouse, table)));
    if (!options.replace && present.every((n) => n > 0)) {
      return tables.map((table, i) => ({ table, loaded: 0, already: 0, rejected: 0, lines: 0, rechecked: 0, present: present[i] ?? 0 }));
    }
    const now = this.clock();
    const load = (table: TableName, into?: string) =>
      loadEvents(warehouse, table, sample.sampleChunks(table, now), { ...options, into, onProgress: (report) => options.onProgress?.(table, report) });
    return this.generation.changing(Promise.resolve(), async () => {
      const reports = warehouse.embedded
        ? await sample.loadBeside(warehouse, tables, load, options.signal)
        : // A server's tables may be a cluster's (Distributed over each node's): the sample is deleted and loaded in place, a table at a time.
          await tables.reduce<Promise<LoadReport[]>>(async (done, table, i) => {
            const reports = await done;
            if ((present[i] ?? 0) > 0) await sample.deleteSample(warehouse, table);
            return [...reports, await load(table)];
          }, Promise.resolve([]));
      return reports.map((report, i) => ({ ...report, table: tables[i] as TableName, present: 0 }));
    });
  }

  /** Closes the store and the warehouse; closing again waits for the first close. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      await this.settled();
      this.generation.close();
      // What this process found of the warehouse's hosts reaches the store for the next process first.
      await this.#warehouse.recorded();
      await this.store.close();
      await this.#warehouse.close();
    })();
    return this.#closed;
  }
}

/** How the sample is loaded (Savedq.loadSample). */
export interface SampleOptions extends Pick<LoadOptions, 'batchBytes' | 'signal'> {
  /** Load it anew, as of now, where it is already. */
  readonly replace?: boolean;
  /** Told after each batch of a table is stored. */
  readonly onProgress?: (table: TableName, report: LoadReport) => void;
}

/** What a sample load did to a table: `present` counts the sample's rows already there, when nothing was loaded. */
export interface SampleReport extends LoadReport {
  readonly table: TableName;
  readonly present: number;
}
