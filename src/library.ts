import { ResultsCache, type CachedCall, type CacheEntry } from './cache/index.js';
import { hostname } from 'node:os';
import { openStore } from './store/index.js';
import { PostgresStore } from './store/postgres.js';
import { StoreUnreachable } from './store/health.js';
import type { ProcessRecord, Store, StoreProbe } from './store/types.js';
import { prepareCall, withSqlOver, type CallRequest, type PreparedCall } from './calls/prepare.js';
import { CallRunner, type CacheMode, type Clock, type RunResult } from './calls/runner.js';
import { CallExecutor } from './calls/execute.js';
import { FairTurns } from './calls/turns.js';
import { cachedCallViews, dueForWarming, warm, type CachedCallView, type WarmingParts, type WarmOutcome } from './calls/warming.js';
import { redactUrl, type Config } from './config.js';
import { WarehouseHandle } from './warehouse-handle.js';
import { DefinitionError, InputError } from './errors.js';
import { sqlitePathCheck, type Unsafe } from './fs.js';
import type { LoadInput, LoadOptions, LoadReport } from './load/index.js';
import { builtinQueriesDir, examplesDir, packageVersion } from './package.js';
import { brokenText, QueryCatalog, type CatalogScan, type DefinitionMemo } from './queries/catalog.js';
import { fileMemo, memoryMemo, pruneMemo } from './queries/memo.js';
import type { PatternMemo } from './queries/params.js';
import type { SavedQuery } from './queries/types.js';
import { SILENT, type Reporter } from './report.js';
import type { CheckedTestFile, FileResult, TestOptions } from './testing/index.js';
import type { Warehouse } from './warehouse/index.js';
import { beginLoad, GenerationWatch, newGeneration, readGenerationState, type GenerationState } from './warehouse/generation.js';
import type { EngineQueue } from './warehouse/types.js';
import type { TableName } from './warehouse/schema.js';

export type { CallRequest, PreparedCall } from './calls/prepare.js';
export type { CacheMode, CacheOutcome, Clock, RunResult } from './calls/runner.js';
export type { CachedCallView, WarmOutcome } from './calls/warming.js';
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
}

/** How a library is made besides its configuration. */
export interface LibraryOptions {
  readonly clock?: Clock;
  /** The engine is this process's own (`serve`, which shares it with the others). */
  readonly ownsEngine?: boolean;
  /** When aborted, waiting for the data directory ends with the abort reason. */
  readonly signal?: AbortSignal;
  /** The saved queries; default: the built-ins and the configured folders. */
  readonly queries?: QueryCatalog;
  /** Who hears warnings and notes as they happen (default: no one). */
  readonly reporter?: Reporter;
}

/** What the catalog remembers is kept a week after it was written (looked up by its text, so never stale). */
const MEMO_RETENTION_MS = 7 * 24 * 3_600_000;
/** A load into a server marks its data loading for this long, renewed while it runs. */
const LOAD_MARK_MS = 15_000;
/** At most this many files of what the catalog remembers: the newest are kept. */
const MEMO_FILES_KEPT = 5_000;
/** Patterns a server remembers as compiling. */
const PATTERNS_KEPT = 10_000;

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

/** What `savedq status` reports (Savedq.status). */
export interface StatusReport {
  readonly store: { readonly backend: Store['backend']; readonly location: string; readonly probe: StoreProbe };
  /** Where the data is: the data directory, or the server's URL without its password. */
  readonly warehouse: string;
  /** Left out when the store does not answer. */
  readonly data?: GenerationState;
  readonly cached?: { readonly calls: number; readonly bytes: number; readonly maxBytes: number };
  readonly processes?: ProcessRecord[];
}

/**
 * The library: every surface (CLI commands, HTTP) comes in here, and a call reads top-down from it:
 * prepare (calls/prepare.ts: the catalog finds the query, every parameter is checked) → the results
 * cache and identical calls in flight (calls/runner.ts) → the engine below the cache (calls/execute.ts)
 * → the warehouse (warehouse/) → the answer.
 * Warming and `cache list` are calls/warming.ts. It never prints and never exits: what a surface should
 * tell its user reaches it through the Reporter it gave.
 */
export class Savedq {
  readonly config: Config;
  readonly clock: Clock;
  readonly cache: ResultsCache;
  /** What is kept between calls (store/): the SQLite file, or PostgreSQL for a team. */
  readonly store: Store;
  readonly #reporter: Reporter;
  readonly #warehouse: WarehouseHandle;
  readonly #runner: CallRunner;
  /** Turns at the engine, fair across callers (what serve's --max-queue bounds). */
  readonly #turns = new FairTurns();
  #catalog: QueryCatalog;
  /** The catalog whose broken definitions were reported, so each is reported once. */
  #reported: QueryCatalog | undefined;

  #closed: Promise<void> | undefined;
  /** What runs calls on the warehouse below the cache (calls/execute.ts). */
  readonly executor: CallExecutor;
  constructor(config: Config, options: LibraryOptions = {}) {
    this.config = config;
    this.clock = options.clock ?? Date.now;
    this.#reporter = options.reporter ?? SILENT;
    // Whether the cache file's path is one to use (not a folder, a device, a file of other text): looked
    // at once, for the results cache, the memo beside it and the alerts' store.
    this.#cacheFileProblem = sqlitePathCheck(config.cacheFile);
    this.store = openStore(config, (message, kind) => (kind === 'back' ? this.#reporter.note(message) : this.#reporter.warn(message)), this.#cacheFileProblem, options.ownsEngine === true ? 8 : 2);
    this.cache = new ResultsCache(this.store);
    this.#memo = fileMemo(config.cacheFile, this.#cacheFileProblem);
    const patterns = options.ownsEngine === true ? memoryMemo(PATTERNS_KEPT) : this.#memo;
    this.#patterns = { get: (pattern) => patterns.get(`pattern:${pattern}`), set: (pattern) => patterns.set(`pattern:${pattern}`, true) };
    this.#catalog = options.queries ?? new QueryCatalog({ builtin: builtinQueriesDir, user: config.queryFolders }, this.#memo);
    this.#warehouse = new WarehouseHandle(config, { owns: options.ownsEngine === true, signal: options.signal, reporter: this.#reporter });
    this.#generationWatch = options.ownsEngine === true ? new GenerationWatch(config.dataDir) : undefined;
    this.executor = new CallExecutor({
      warehouse: () => this.#warehouse.open(),
      source: config.source,
      timeoutSeconds: config.queryTimeoutSeconds,
      sandboxMaxMemoryBytes: config.sandboxMaxMemoryBytes,
      clock: () => this.clock(),
      memo: this.#memo,
      turns: this.#turns,
    });
    // Unique enough beside the host and pid, and no node:crypto for it (a cache hit loads none).
    this.#owner = `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 10)}`;
    this.#runner = new CallRunner(this.cache, this.executor, () => this.clock(), {
      // An answer is kept only when the data it read is the data of its key: no load under way, none ended since.
      keeps: async (call) => {
        const data = await this.#freshGeneration();
        return this.store.up && !data.loading && data.current === (call.cached.generation ?? '');
      },
      // One process computes a key at a time, across every process sharing the store.
      sharing: this.store,
      owner: this.#owner,
      waitMs: config.queryTimeoutSeconds * 1000,
      // A result stored brings the cache back within --cache-max-mb when it is past it, whoever asked.
      stored: () => this.#keepCacheBounded(),
    });
  }

  /** This process, as its leases name it to the others sharing the store. */
  readonly #owner: string;

  /** What the catalog remembers, and the patterns that compiled: files beside the cache file (queries/memo.ts). */
  readonly #memo: DefinitionMemo;

  /**
   * Patterns RE2 compiled: a hit of a pattern checked before loads no RE2. A server keeps them in memory,
   * bounded: its callers send the patterns, and a file each would let them fill the disk.
   */
  readonly #patterns: PatternMemo;

  readonly #cacheFileProblem: () => Unsafe;

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
    for (const broken of scan.broken) if (!told.includes(broken.file)) this.#reporter.warn(`skipped ${brokenText(broken)}`);
  }

  /** Checks a request against the saved queries, without running anything. */
  async prepare(request: CallRequest): Promise<PreparedCall> {
    try {
      await this.#freshGeneration();
      const call = await prepareCall(this.#catalog, { name: this.config.source, generation: this.generation() }, request, this.#patterns, (sql) => this.executor.checkSql(sql));
      this.#reportBroken();
      return call;
    } catch (err) {
      // Broken definitions read on the way may be why.
      this.#reportBroken(err instanceof DefinitionError ? err.files : []);
      throw err;
    }
  }

  /**
   * An alert's call (alerts/): its saved query's call, prepared as any run's, with the alert's condition
   * over the answer, checked on the engine's parse as a caller's SQL is: `when`, an expression over a
   * row; `whenSql`, a SELECT over `result`.
   */
  async withCondition(call: PreparedCall, condition: { readonly when?: string | undefined; readonly whenSql?: string | undefined }): Promise<PreparedCall> {
    const sql = condition.when !== undefined ? await this.executor.checkCondition(condition.when) : await this.executor.checkSql(condition.whenSql ?? '');
    return withSqlOver(call, sql);
  }

  /**
   * The door every surface calls a saved query through (the command line, `savedq mcp`, serve's /mcp):
   * the query found, the caller's grant applied, the parameters checked, then the cache or the engine.
   * serve's HTTP keeps the calls it prepared, and runs them with runPrepared.
   */
  async run(request: RunRequest): Promise<RunResult> {
    return this.runPrepared(await this.prepare(request), request.cache ?? 'use', request.signal, request.caller?.name);
  }

  /**
   * Runs a call already prepared: what `run` does after `prepare` (a server keeps the calls it
   * prepared). `caller` names who asks (serve: an API key), for turns at the engine fair across callers.
   * What follows the answer (storing it, recording it as served) is done after it (`settled`).
   */
  async runPrepared(call: PreparedCall, mode: CacheMode = 'use', signal?: AbortSignal, caller = ''): Promise<RunResult> {
    // A store that cannot be reached: the answer straight from the warehouse, said so (BYPASS).
    if (!this.store.up && call.query.cacheSeconds > 0 && mode !== 'bypass') {
      const answered = await this.#runner.run(call, 'bypass', signal, caller);
      return { ...answered, cache: 'bypass' };
    }
    const result = await this.#runner.run(call, mode, signal, caller);
    // It failed on the way: the answer came from the warehouse, and nothing of it was kept.
    if (!this.store.up && result.cache !== 'hit' && call.query.cacheSeconds > 0) return { ...result, cache: 'bypass' };
    return result;
  }

  /** The cache's bound checked (the pages in use, one statement), and kept by pruning when past it: once at a time, after an answer is stored. */
  #keepCacheBounded(): Promise<void> {
    this.#bounding ??= (async () => {
      // After an answer is stored, among what follows answers: so not pruneCache, which waits for that.
      if ((await this.cache.liveBytes()) > this.config.cacheMaxBytes) await this.#prune();
    })().finally(() => (this.#bounding = undefined));
    return this.#bounding;
  }

  #bounding: Promise<void> | undefined;

  /** At most this many calls wait for the engine; one more is refused (serve's --max-queue). */
  limitQueue(maxWaiting: number): void {
    this.#turns.limit(maxWaiting);
  }

  /** The answer from what this process served a moment ago, without waiting (serve's hot path), if any. */
  answerRecent(call: PreparedCall): RunResult | undefined {
    return this.#runner.answerRecent(call);
  }

  /** The embedded engine's queue of statements, when this process has the engine open (serve's /health). */
  engineQueue(): EngineQueue | undefined {
    const lane = this.#warehouse.queue();
    if (!lane) return undefined;
    // Calls waiting for their turn here, and the statements queued in the engine's lane (the others' too).
    const turns = this.#turns.state();
    return { running: lane.running, waiting: lane.waiting + turns.waiting, dropped: lane.dropped + turns.dropped };
  }

  /** The warehouse, opened on first use and kept until `close()`. */
  warehouse(): Promise<Warehouse> {
    return this.#warehouse.open();
  }

  /** The engine's objection to a saved query (parsed and planned, not run), at a line of its file, or undefined. */
  explain(query: SavedQuery): Promise<{ line: number; message: string } | undefined> {
    return this.executor.explain(query);
  }

  /** The engine's objections to a set of saved queries (serve, at start and on SIGHUP): one error a refused query. */
  refusals(queries: readonly SavedQuery[]): Promise<DefinitionError[]> {
    return this.executor.refusals(queries);
  }

  /**
   * Waits for what followed the answers given so far: their results stored and their calls recorded as
   * served (which the answers did not wait for).
   */
  settled(): Promise<void> {
    return this.#runner.settled();
  }

  /** What warming works with (what was served so far recorded), the generation of the data read now. */
  async #warming(): Promise<WarmingParts> {
    await this.settled();
    await this.#freshGeneration();
    return { catalog: this.#catalog, source: this.config.source, generation: () => this.generation(), loading: () => this.#generationState().loading, cache: this.cache, runner: this.#runner, clock: this.clock };
  }

  /**
   * The generation of the data this library reads, as last read: an embedded data directory's (its
   * file, which serve watches), or a server's (in the store, as loads through savedq set it: read
   * before each call, and kept fresh by serve's watch).
   */
  generation(): string {
    return this.#generationState().current;
  }

  /** The generation as last read, and whether a load is changing the data now (then no answer computed is kept). */
  #generationState(): GenerationState {
    if (this.config.url !== undefined) return this.#serverData;
    return this.#generationWatch ? this.#generationWatch.current() : readGenerationState(this.config.dataDir);
  }

  /** The generation read now: a server's asked of the store (unless serve's watch keeps it fresh). */
  async #freshGeneration(): Promise<GenerationState> {
    if (this.config.url !== undefined && !this.#watchingServer) this.#serverData = await this.store.generation(this.config.source);
    return this.#generationState();
  }

  readonly #generationWatch: GenerationWatch | undefined;
  /** A server's generation, as last read from the store. */
  #serverData: GenerationState = { current: '', loading: false };
  #watchingServer = false;

  /**
   * Keeps what this long-lived process (serve) knows of the data and the cache fresh: a server's
   * generation read from the store every half second (and at once when another process signals a
   * change), and what it served a moment ago forgotten when another process clears the cache.
   * Returns how to stop.
   */
  watchStore(): () => void {
    const read = async () => {
      if (this.config.url === undefined) return;
      const data = await this.store.generation(this.config.source);
      if (this.store.up) this.#serverData = data;
    };
    this.#watchingServer = this.config.url !== undefined;
    void read();
    const timer = setInterval(() => void read(), 500);
    timer.unref();
    const stopListening = this.store.listen((what) => {
      if (what.kind === 'cleared') this.#runner.forgetRecent();
      else if (what.source === this.config.source) void read();
    });
    return () => {
      clearInterval(timer);
      stopListening();
      this.#watchingServer = false;
    };
  }

  /** The warm set: cached calls served lately whose result is old enough to refresh. */
  async dueForWarming(): Promise<CacheEntry[]> {
    const due = await dueForWarming(await this.#warming());
    this.#reportBroken();
    return due;
  }

  /** Re-runs the given calls (default: the warm set) and stores fresh results; see calls/warming.ts. */
  async warm(
    calls?: readonly CachedCall[],
    signal?: AbortSignal,
    onOutcome?: (outcome: WarmOutcome, index: number, total: number) => void,
    maxTimeMs = Infinity,
  ): Promise<WarmOutcome[]> {
    const outcomes = await warm(await this.#warming(), calls, signal, onOutcome, Date.now() + maxTimeMs);
    this.#reportBroken();
    await this.pruneCache();
    return outcomes;
  }

  /**
   * Keeps the cache file bounded: deletes what is past its retention, then the least recently served
   * results while the entries take more than --cache-max-mb (warm, serve every ten minutes, and a run
   * that finds the pages in use over it).
   */
  async pruneCache(): Promise<{ expired: number; evicted: number }> {
    await this.settled();
    return this.#prune();
  }

  #prune(): Promise<{ expired: number; evicted: number }> {
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

  /** The processes that said they share the store in the last minute. */
  storeProcesses(): Promise<ProcessRecord[]> {
    return this.store.processes(Date.now() - 60_000);
  }

  /**
   * What `savedq status` says: the store asked now (where, whether and how fast it answers, its tables'
   * version), where the data is and its generation, what is cached, and who shared the store in the
   * last minute. What only the store knows is left out when it does not answer. Opens no warehouse.
   */
  async status(): Promise<StatusReport> {
    await this.settled();
    const probe = await this.store.probe();
    const store = { backend: this.store.backend, location: this.store.location, probe };
    const warehouse = this.config.url === undefined ? this.config.dataDir : redactUrl(this.config.url);
    // Tables not made yet: nothing kept to tell (and asking would make them: savedq init --store's work).
    if (!probe.up || (probe.tables !== undefined && probe.tables.version === undefined)) return { store, warehouse };
    const [data, served, bytes, processes] = await Promise.all([this.#freshGeneration(), this.store.served(), this.cache.size(), this.storeProcesses()]);
    return { store, warehouse, data, cached: { calls: served.length, bytes, maxBytes: this.config.cacheMaxBytes }, processes };
  }

  /** The calls the cache holds, for `cache list`. */
  async cachedCalls(): Promise<CachedCallView[]> {
    const views = await cachedCallViews(await this.#warming());
    this.#storeAnswered('nothing to list');
    this.#reportBroken();
    return views;
  }

  /** Forgets every cached result; returns how many calls were forgotten. */
  async clearCache(): Promise<number> {
    await this.settled(); // an answer stored after the clear would outlive it
    const cleared = await this.cache.clear();
    this.#storeAnswered('nothing was cleared');
    return cleared;
  }

  /** What reads or changes the store itself (not a call, which answers without it) fails when it did not answer. */
  #storeAnswered(consequence: string): void {
    if (!this.store.up) throw new StoreUnreachable(`the cache at ${this.store.location} cannot be used now: ${consequence}.`);
  }

  /**
   * Where the data is, when its log tables hold no event at all (an empty answer's likely cause on a new
   * machine), else undefined. An embedded data directory savedq has loaded into (its generation says
   * so, without the engine) is taken to hold some; otherwise the engine's catalog is asked.
   */
  async withoutEvents(): Promise<string | undefined> {
    if (this.generation() !== '') return undefined;
    const [{ logTablesEmpty }, warehouse] = await Promise.all([import('./warehouse/schema.js'), this.warehouse()]);
    return (await logTablesEmpty(warehouse)) ? warehouse.location : undefined;
  }

  /**
   * Loads newline-delimited JSON events into a log table (see load/). The warehouse opens while the
   * first batch is read.
   */
  async load(table: TableName, input: LoadInput, options: LoadOptions = {}): Promise<LoadReport> {
    const { loadEvents } = await import('./load/index.js');
    return this.#changingData((warehouse) => loadEvents(warehouse, table, input, options));
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
    return this.#changingData(async () => {
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

  /**
   * Runs a change of the warehouse's data: an embedded data directory's data is marked loading as it
   * starts (once the directory is open), so that answers from before it are still served while it
   * runs and none computed meanwhile is kept, and gets a new generation as it ends, so that no answer
   * computed before or during it is served from the cache after it.
   */
  async #changingData<T>(change: (warehouse: Promise<Warehouse>) => Promise<T>): Promise<T> {
    if (this.config.url !== undefined) return this.#changingServer(change);
    const opening = this.warehouse().then((warehouse) => {
      beginLoad(this.config.dataDir);
      return warehouse;
    });
    try {
      return await change(opening);
    } finally {
      if (await opening.then(() => true, () => false)) newGeneration(this.config.dataDir);
    }
  }

  /**
   * A change of a server's data: marked loading in the store while it runs (renewed, so that a load
   * whose process dies is a change of the data a moment later), a new generation when it ends.
   */
  async #changingServer<T>(change: (warehouse: Promise<Warehouse>) => Promise<T>): Promise<T> {
    const source = this.config.source;
    await this.store.changing(source, this.#owner, LOAD_MARK_MS);
    const renew = setInterval(() => void this.store.changing(source, this.#owner, LOAD_MARK_MS), LOAD_MARK_MS / 3);
    renew.unref();
    try {
      return await change(this.warehouse());
    } finally {
      clearInterval(renew);
      await this.store.changed(source);
    }
  }

  /**
   * Runs saved queries' tests (`savedq test`), each test file on a warehouse of its own in an embedded
   * engine started for the run on a temporary data directory, whatever the configuration's warehouse:
   * nothing of this library's data directory, server or cache is read or written.
   */
  async test(options: Omit<TestOptions, 'limits'>): Promise<FileResult[]> {
    const { runTests } = await import('./testing/index.js');
    const folders = { builtin: builtinQueriesDir, examples: examplesDir, user: this.config.queryFolders };
    const limits = { timeoutSeconds: this.config.queryTimeoutSeconds, sandboxMaxMemoryBytes: this.config.sandboxMaxMemoryBytes };
    return runTests(folders, { ...options, limits });
  }

  /** The test files of the user's folders, read and matched with their queries, nothing run (`check`). */
  async checkTests(): Promise<CheckedTestFile[]> {
    const { checkTestFiles } = await import('./testing/index.js');
    return checkTestFiles(this.#catalog);
  }

  /** The DDL of the log tables, for a server or (with a name) a cluster. */
  async schema(cluster?: string): Promise<string[]> {
    const { schemaDdl } = await import('./warehouse/schema.js');
    return schemaDdl(cluster);
  }

  /**
   * Makes savedq's tables in a PostgreSQL store (when one is given), then applies the log tables' DDL to
   * the ClickHouse server the configuration names (when one is given), telling each step as it goes.
   */
  async init(cluster: string | undefined, onApplied?: (step: string) => void): Promise<void> {
    const store = this.store instanceof PostgresStore ? this.store : undefined;
    if (this.config.url === undefined && store === undefined) {
      throw new InputError(
        'init needs a ClickHouse server (--url or SAVEDQ_CLICKHOUSE_URL) or a store (--store or SAVEDQ_STORE_URL): the embedded engine and the cache file make their tables themselves.',
      );
    }
    if (cluster !== undefined && this.config.url === undefined) throw new InputError('--cluster needs a ClickHouse server: give --url or SAVEDQ_CLICKHOUSE_URL.');
    if (store !== undefined) {
      const made = await store.create();
      const done = { made: "made savedq's tables", upgraded: "brought savedq's tables up to this version", there: "savedq's tables are there already" }[made];
      onApplied?.(`store ${store.location}: ${done} (schema ${store.schema})`);
    }
    if (this.config.url === undefined) return;
    const [{ openWarehouse }, statements] = await Promise.all([import('./warehouse/index.js'), this.schema(cluster)]);
    const warehouse = await openWarehouse({ ...this.#warehouse.options(), createTables: false });
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
   * Lets go of the warehouse (the embedded data directory) until the next call needs it: a process
   * that lives long but calls now and then (`savedq mcp`) never holds the engine between calls.
   */
  releaseEngine(): Promise<void> {
    return this.#warehouse.close();
  }

  /**
   * The alerts of the queries folders (alerts/): each runs its saved query's call through this library,
   * the cache included, and keeps its state in the cache file. Made on first use.
   */
  async alerts(): Promise<import('./alerts/index.js').Alerts> {
    this.#alerts ??= import('./alerts/index.js').then(
      ({ Alerts }) =>
        new Alerts({
          folders: this.config.queryFolders,
          records: this.store.alerts(this.config.source),
          clock: () => this.clock(),
          prepare: (request) => this.prepare(request),
          withCondition: (call, condition) => this.withCondition(call, condition),
          run: (call) => this.runPrepared(call, 'use', undefined, 'alerts'),
          explain: (call) => this.executor.explainOver(call),
          env: process.env,
          userAgent: `savedq/${packageVersion()}`,
        }),
    );
    return this.#alerts;
  }

  #alerts: Promise<import('./alerts/index.js').Alerts> | undefined;

  /** Closes the alerts' store, the cache and the warehouse; closing again waits for the first close. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      await this.settled();
      this.#generationWatch?.close();
      await this.store.close();
      await this.#warehouse.close();
    })();
    return this.#closed;
  }
}
