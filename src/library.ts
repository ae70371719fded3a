import { cacheKey, ResultsCache, type CachedCall, type CachedResult, type CacheEntry } from './cache/index.js';
import type { Config } from './config.js';
import { InputError } from './errors.js';
import type { LoadInput, LoadOptions, LoadReport } from './load/index.js';
import { builtinQueriesDir } from './package.js';
import { brokenText, QueryCatalog, sourceKey, type DefinitionMemo } from './queries/catalog.js';
import { checkPatterns, normaliseParams, quoteValue, type RawParams } from './queries/params.js';
import type { NormalisedParams, Row, SavedQuery } from './queries/types.js';
import { microsFromDate, parseIsoTimestamp, toIsoMicros, type Micros } from './time.js';
import type { Warehouse, WarehouseOptions } from './warehouse/index.js';
import type { SharedWarehouse } from './warehouse/share.js';
import type { TableName } from './warehouse/schema.js';

/** Where "now" comes from; tests inject a fixed or moving clock. */
export type Clock = () => number;

/** What `run` does with the results cache. */
export type CacheMode = 'use' | 'bypass' | 'refresh';

/** A request to run a saved query. */
export interface RunRequest {
  /** Endpoint name or id. */
  readonly endpoint: string;
  readonly params: RawParams;
  /** ISO 8601 instant to run the query as of; default: now. */
  readonly at?: string | undefined;
  readonly cache?: CacheMode;
  /**
   * When aborted, this caller stops waiting (with the abort's reason). The query itself runs on for any
   * identical call that joined it, and is stored as usual; when every such caller has given up before
   * it began, it is not run.
   */
  readonly signal?: AbortSignal | undefined;
}

/** A validated call: the saved query, its normalised parameters, and the instant it runs as of. */
export interface PreparedCall {
  readonly endpoint: SavedQuery;
  readonly params: NormalisedParams;
  /** The instant given with --at, or undefined for "the time the query runs". */
  readonly at: Micros | undefined;
}

/** The answer to a run. */
export interface RunResult {
  readonly endpoint: SavedQuery;
  readonly params: NormalisedParams;
  readonly rows: Row[];
  /** `hit`: served from the cache; `miss`: computed (and stored); `off`: not cacheable or bypassed. */
  readonly cache: 'hit' | 'miss' | 'off';
  /** When the rows were computed (epoch ms). */
  readonly computedAt: number;
  /** Things the caller should tell the user (a cache that could not be used, say). */
  readonly warnings: readonly string[];
}

/** What `warm` did for one call. */
export interface WarmOutcome {
  readonly call: CachedCall;
  /** Endpoint name, for reports. */
  readonly name: string;
  readonly rows?: number;
  readonly error?: Error;
}

/** A cached call as `cache list` shows it. */
export interface CachedCallView {
  /** The query's name (its id when it is gone). */
  readonly endpoint: string;
  readonly params: NormalisedParams;
  /** The --at instant, or null for "now". */
  readonly at: string | null;
  readonly ageSeconds: number | null;
  readonly servedSecondsAgo: number;
  /** Null when the result will never be served again: its definition has changed or gone. */
  readonly expiresInSeconds: number | null;
}

/**
 * Validates a request against the saved queries without running anything; bad input throws an
 * InputError or a NotFoundError, a broken definition a DefinitionError.
 */
export async function prepareCall(
  queries: QueryCatalog,
  request: Pick<RunRequest, 'endpoint' | 'params' | 'at'>,
  memo?: DefinitionMemo,
): Promise<PreparedCall> {
  const endpoint = await queries.find(request.endpoint, memo);
  const params = normaliseParams(endpoint, request.params);
  let at: Micros | undefined;
  if (request.at !== undefined) {
    at = parseIsoTimestamp(request.at);
    if (at === undefined) {
      throw new InputError(`invalid --at ${quoteValue(request.at)}: expected an ISO 8601 timestamp such as 2026-01-31T12:00:00Z.`);
    }
  }
  return { endpoint, params, at };
}

/** The canonical text of an --at instant, for cache keys and messages. */
export function atText(at: Micros | undefined): string {
  return at === undefined ? '' : toIsoMicros(at);
}

/** A call's answer from a stored result. */
function hitResult(call: PreparedCall, hit: CachedResult, warnings: readonly string[] = []): RunResult {
  return { endpoint: call.endpoint, params: call.params, rows: hit.rows, cache: 'hit', computedAt: hit.computedAt, warnings };
}

function cachedCall(call: PreparedCall): CachedCall {
  return { endpoint: call.endpoint.id, digest: call.endpoint.digest, params: call.params, at: atText(call.at) };
}

/** Waits for work, or until the signal aborts, whichever comes first; the work itself goes on. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Work shared by identical calls in flight, and whether this caller started it. */
interface Shared<T> {
  readonly work: Promise<T>;
  readonly leader: boolean;
}

/** Identical work in flight, and how many of its callers still wait for it. */
interface InFlight {
  readonly work: Promise<RunResult>;
  /** Aborted when every caller has given up: work that has not begun is then never begun. */
  readonly controller: AbortController;
  waiting: number;
}

/**
 * The endpoint library: every surface (CLI commands, HTTP) goes through it. It opens the warehouse only
 * when a statement must actually run (a cache hit never loads the engine), and closes it on `close()`.
 */
export class Savedq {
  readonly config: Config;
  readonly clock: Clock;
  readonly cache: ResultsCache;
  #queries: QueryCatalog;
  /** The catalog whose broken definitions were last reported, so each is reported once. */
  #reported: QueryCatalog | undefined;
  #warehouse: Promise<Warehouse> | undefined;
  /** Identical work in flight, shared. */
  readonly #inFlight = new Map<string, InFlight>();
  readonly #ownsEngine: boolean;
  #share: Promise<SharedWarehouse | undefined> | undefined;
  readonly #signal: AbortSignal | undefined;
  /**
   * Calls this process served lately (`serve`'s hot path, at most RECENT_ENTRIES): the result, trusted
   * for RECENT_MS, and when the call was last recorded as served, which is done at most every
   * SERVED_EVERY_MS.
   */
  readonly #recent = new Map<string, { result: CachedResult; seenAt: number; markedAt: number }>();

  /**
   * @param options.ownsEngine the engine is this process's own (`serve`, which shares it with the
   *   others): never sent to another process's share.
   * @param options.signal when aborted, waiting for the data directory ends with the abort reason.
   * @param options.queries the saved queries; default: the built-ins and the configured folders.
   */
  constructor(config: Config, options: { clock?: Clock; ownsEngine?: boolean; signal?: AbortSignal; queries?: QueryCatalog } = {}) {
    this.config = config;
    this.clock = options.clock ?? Date.now;
    this.#queries = options.queries ?? new QueryCatalog({ builtin: builtinQueriesDir, user: config.queryFolders });
    this.cache = new ResultsCache(config.cacheFile);
    this.#ownsEngine = options.ownsEngine === true;
    this.#signal = options.signal;
  }

  async #closeWarehouse(): Promise<void> {
    const warehouse = this.#warehouse;
    this.#warehouse = undefined;
    if (warehouse) await (await warehouse.catch(() => undefined))?.close();
  }

  /**
   * The warehouse, opened on first use (the engine and the client are imported only then): the engine a
   * `savedq serve` shares on the data directory when one does, else the engine itself. Kept open until
   * `close()`.
   */
  warehouse(): Promise<Warehouse> {
    if (!this.#warehouse) {
      this.#warehouse = this.#engineShare().then(
        async (shared) => shared ?? (await import('./warehouse/index.js')).openWarehouse({ ...this.#engineOptions(), signal: this.#signal, useShared: !this.#ownsEngine }),
      );
      this.#warehouse.catch(() => {
        this.#warehouse = undefined;
      });
    }
    return this.#warehouse;
  }

  /** The engine a `savedq serve` shares on the embedded data directory, if one answers there (asked once). */
  #engineShare(): Promise<SharedWarehouse | undefined> {
    if (this.#share === undefined) {
      const { url, dataDir, queryTimeoutSeconds } = this.config;
      this.#share =
        url !== undefined || this.#ownsEngine
          ? Promise.resolve(undefined)
          : import('./warehouse/share.js').then((m) => m.connectShared(dataDir, queryTimeoutSeconds));
      this.#share.catch(() => (this.#share = undefined));
    }
    return this.#share;
  }

  /** The saved queries this library answers. */
  get queries(): QueryCatalog {
    return this.#queries;
  }

  /**
   * Answers from another set of saved queries from now on (`serve` on SIGHUP). Calls already under way
   * finish with the definition they started with; cache keys carry each definition's digest, so no
   * result of an old text is served for a new one.
   */
  useQueries(queries: QueryCatalog): void {
    this.#queries = queries;
    this.#recent.clear();
  }

  /**
   * Validates a request against the current saved queries, without running anything. Unless told to
   * keep off the results cache, definitions read before are taken from it rather than parsed again.
   */
  async prepare(request: Pick<RunRequest, 'endpoint' | 'params' | 'at'>, options: { cache?: boolean } = {}): Promise<PreparedCall> {
    return prepareCall(this.#queries, request, options.cache === false ? await this.#servedDefinitions() : this.#definitions);
  }

  /**
   * Off the results cache, a running `serve` reads definitions for this process (its YAML parser is
   * loaded and warm, and it is asked for the statements anyway); without one, they are read here.
   */
  async #servedDefinitions(): Promise<DefinitionMemo | undefined> {
    const shared = await this.#engineShare().catch(() => undefined);
    return shared && { get: (source) => shared.ask('definition', source), set: async () => undefined };
  }

  /** The results cache as a memo of definitions read before, keyed by their whole text (exact; no digest to compute). */
  readonly #definitions: DefinitionMemo = {
    get: (source) => this.cache.getDefinition(sourceKey(source)),
    set: (source, reading) => this.cache.setDefinition(sourceKey(source), reading),
  };

  /** Runs a saved query, through the results cache when the endpoint is cached. */
  async run(request: RunRequest): Promise<RunResult> {
    const mode = request.cache ?? 'use';
    const call = await this.prepare(request, { cache: mode !== 'bypass' });
    return this.runPrepared(call, mode, request.signal);
  }

  /** The cache entry and key of a prepared call, made once per call (a server answers one call many times). */
  #keyOf(call: PreparedCall): { cached: CachedCall; key: string } {
    let known = this.#keys.get(call);
    if (!known) {
      const cached = cachedCall(call);
      known = { cached, key: cacheKey(cached) };
      this.#keys.set(call, known);
    }
    return known;
  }

  readonly #keys = new WeakMap<PreparedCall, { cached: CachedCall; key: string }>();

  /**
   * Runs a call already prepared (validated) against the current saved queries: what `run` does after
   * `prepare`. A server that answers the same call again and again keeps the prepared call.
   */
  async runPrepared(call: PreparedCall, mode: CacheMode = 'use', signal?: AbortSignal): Promise<RunResult> {
    const { cached, key } = this.#keyOf(call);
    if (call.endpoint.cacheSeconds === 0 || mode === 'bypass') {
      const result = await untilAborted(this.#shared(`uncached:${key}`, (gone) => this.execute(call, gone), signal).work, signal);
      return { ...result, warnings: this.takeWarnings() };
    }

    if (mode === 'use') {
      const recent = this.answerRecent(call);
      if (recent) return recent;
    }
    // In 'use' mode the cache lookup is shared too: a request that read the cache before an identical
    // run stored its result would otherwise start that run again after it had finished.
    const shared =
      mode === 'use'
        ? this.#shared(
            `lookup:${key}`,
            async (gone) => {
              const hit = await this.cache.get(key);
              return hit && this.#fresh(call, hit, this.clock()) ? hitResult(call, hit) : this.#refresh(key, call, gone).work;
            },
            signal,
          )
        : this.#refresh(key, call, signal);
    const result = await untilAborted(shared.work, signal);
    if (result.cache === 'hit') return this.#answer(key, cached, call, result, this.clock());
    // The caller that ran the query records it as served; those that joined it go by the throttle.
    await this.#served(key, cached, result, this.clock(), shared.leader);
    return { ...result, warnings: this.takeWarnings() };
  }

  /**
   * The answer to a cached call from what this process served in the last moments, without waiting for
   * anything (`serve`'s hot path): undefined when there is none fresh enough. The record that the call
   * was served is written in the background (at most every SERVED_EVERY_MS).
   */
  answerRecent(call: PreparedCall): RunResult | undefined {
    if (call.endpoint.cacheSeconds === 0) return undefined;
    const now = this.clock();
    const { cached, key } = this.#keyOf(call);
    const recent = this.#recent.get(key);
    if (!recent || now - recent.seenAt >= RECENT_MS || !this.#fresh(call, recent.result, now)) return undefined;
    void this.#served(key, cached, recent.result, now);
    const warnings = this.cache.warnings.length > 0 || this.#reported !== this.#queries ? this.takeWarnings() : NO_WARNINGS;
    return hitResult(call, recent.result, warnings);
  }

  /** Whether a stored result is young enough to serve for this call. */
  #fresh(call: PreparedCall, result: CachedResult, now: number): boolean {
    return result.computedAt <= now && now - result.computedAt < call.endpoint.cacheSeconds * 1000;
  }

  /** Serves a result from the cache. */
  async #answer(key: string, cached: CachedCall, call: PreparedCall, hit: CachedResult, now: number): Promise<RunResult> {
    await this.#served(key, cached, hit, now);
    return hitResult(call, hit, this.takeWarnings());
  }

  /** Runs a call and stores its result; identical calls already running share that run. */
  #refresh(key: string, call: PreparedCall, signal?: AbortSignal): Shared<RunResult> {
    return this.#shared(
      key,
      async (gone) => {
        const result = await this.execute(call, gone);
        await this.cache.set(key, { rows: result.rows, computedAt: result.computedAt });
        return { ...result, cache: 'miss' as const };
      },
      signal,
    );
  }

  /**
   * Remembers a result just served, and records the call as served (which keeps it in the warm set);
   * a busy server writes that record at most every SERVED_EVERY_MS per call.
   */
  #served(key: string, call: CachedCall, result: CachedResult, now: number, force = false): Promise<void> | undefined {
    const previous = this.#recent.get(key);
    const due = force || !previous || now < previous.markedAt || now - previous.markedAt >= SERVED_EVERY_MS;
    this.#recent.delete(key);
    this.#recent.set(key, {
      result: { rows: result.rows, computedAt: result.computedAt },
      seenAt: now,
      markedAt: due ? now : (previous?.markedAt ?? now),
    });
    if (this.#recent.size > RECENT_ENTRIES) this.#recent.delete(this.#recent.keys().next().value as string);
    // Synchronous when there is nothing to write: a busy server's hot path makes no promise here.
    return due ? this.cache.markServed(key, { call, servedAt: now, computedAt: result.computedAt }) : undefined;
  }

  /**
   * Identical work already in flight is joined rather than started again. A caller with a signal (an
   * HTTP client, an interruptible command) may give up; when every caller has, the work is told so
   * (`gone`): a query still waiting for its turn in the engine is then never run, and the next
   * identical call starts afresh. A caller without a signal keeps the work going.
   */
  #shared(key: string, work: (gone: AbortSignal) => Promise<RunResult>, signal?: AbortSignal): Shared<RunResult> {
    let entry = this.#inFlight.get(key);
    const leader = entry === undefined;
    if (!entry) {
      const controller = new AbortController();
      const made: InFlight = {
        work: work(controller.signal).finally(() => {
          if (this.#inFlight.get(key) === made) this.#inFlight.delete(key);
        }),
        controller,
        waiting: 0,
      };
      this.#inFlight.set(key, made);
      entry = made;
    }
    const joined = entry;
    joined.waiting += 1;
    if (signal) {
      const leave = () => {
        joined.waiting -= 1;
        if (joined.waiting > 0) return;
        if (this.#inFlight.get(key) === joined) this.#inFlight.delete(key);
        joined.work.catch(() => undefined); // no one is left to hear how it ended
        joined.controller.abort(signal.reason);
      };
      if (signal.aborted) leave();
      else {
        signal.addEventListener('abort', leave, { once: true });
        void joined.work.finally(() => signal.removeEventListener('abort', leave)).catch(() => undefined);
      }
    }
    return { work: joined.work, leader };
  }

  /**
   * Runs a prepared call on the warehouse, bypassing the cache. Its time limit is the engine's (a
   * server's client also gives up a little after it): it counts from when the query starts, never while
   * the data directory is awaited, which is bounded on its own (a busy directory is a BusyError).
   */
  async execute(call: PreparedCall, signal?: AbortSignal): Promise<RunResult> {
    checkPatterns(call.endpoint, call.params);
    // The runner (and the warehouse client's types) is only needed when a query really runs: not on a hit.
    const { executeQuery } = await import('./queries/run.js');
    const warehouse = await this.warehouse();
    const startedAt = this.clock();
    const rows = await executeQuery(warehouse, call.endpoint, call.params, {
      now: call.at ?? microsFromDate(startedAt),
      timeoutSeconds: this.config.queryTimeoutSeconds,
      signal,
    });
    return { endpoint: call.endpoint, params: call.params, rows, cache: 'off', computedAt: startedAt, warnings: [] };
  }

  /**
   * Has the engine parse and plan a saved query with its parameters bound, without running it: its
   * objection, at a line of the query's file, or undefined.
   */
  async explain(query: SavedQuery): Promise<{ line: number; message: string } | undefined> {
    const { explainQuery } = await import('./queries/run.js');
    return explainQuery(await this.warehouse(), query, microsFromDate(this.clock()));
  }

  /**
   * The warm set: cached calls served within their endpoint's cache time whose result is at least its
   * warming age old (or gone). Calls of a definition changed or removed since are left to expire.
   */
  async dueForWarming(): Promise<CacheEntry[]> {
    const now = this.clock();
    const { byId } = await this.#queries.scan();
    return (await this.cache.entries()).filter((entry) => {
      const endpoint = byId.get(entry.call.endpoint);
      if (!endpoint || endpoint.cacheSeconds === 0 || endpoint.warmSeconds === 0 || endpoint.digest !== entry.call.digest) return false;
      const servedRecently = now - entry.servedAt <= endpoint.cacheSeconds * 1000;
      const old = entry.computedAt === undefined || now - entry.computedAt >= endpoint.warmSeconds * 1000;
      return servedRecently && old;
    });
  }

  /**
   * Re-runs the given calls (default: the warm set) and stores fresh results, one after another. A
   * failure is reported in its outcome, never thrown, so one bad call does not stop the others. Each
   * call is normalised again today, and the key refreshed is the one a call of today reads.
   */
  async warm(
    calls?: readonly CachedCall[],
    signal?: AbortSignal,
    onOutcome?: (outcome: WarmOutcome, index: number, total: number) => void,
  ): Promise<WarmOutcome[]> {
    const due = calls === undefined ? await this.dueForWarming() : [];
    const todo = calls ?? due.map((e) => e.call);
    const { byId } = await this.#queries.scan();
    const outcomes: WarmOutcome[] = [];
    for (const [index, call] of todo.entries()) {
      if (signal?.aborted) throw signal.reason;
      let outcome: WarmOutcome;
      const name = byId.get(call.endpoint)?.name ?? call.endpoint;
      try {
        const prepared = await this.prepare({
          endpoint: call.endpoint,
          params: Object.entries(call.params),
          at: call.at === '' ? undefined : call.at,
        });
        const today = cachedCall(prepared);
        const result = await this.#refresh(cacheKey(today), prepared).work;
        // Warming is no one asking: the call keeps the time it was last served, with its new result.
        const servedAt = due[index]?.servedAt;
        if (servedAt !== undefined) await this.cache.markServed(cacheKey(today), { call: today, servedAt, computedAt: result.computedAt });
        outcome = { call, name, rows: result.rows.length };
      } catch (err) {
        outcome = { call, name, error: err instanceof Error ? err : new Error(String(err)) };
      }
      outcomes.push(outcome);
      onOutcome?.(outcome, index, todo.length);
    }
    return outcomes;
  }

  /** The cache entry of a request, validated, for `warm <name> -p …`. */
  async cachedCallOf(request: Pick<RunRequest, 'endpoint' | 'params' | 'at'>): Promise<CachedCall> {
    const call = await this.prepare(request);
    if (call.endpoint.cacheSeconds === 0) throw new InputError(`${call.endpoint.name} is not cached, so it cannot be warmed.`);
    checkPatterns(call.endpoint, call.params);
    return cachedCall(call);
  }

  /** The calls the cache holds, for `cache list`: ages in seconds, by endpoint name. */
  async cachedCalls(): Promise<CachedCallView[]> {
    const now = this.clock();
    const { byId } = await this.#queries.scan();
    const views = (await this.cache.entries()).map((entry): CachedCallView => {
      const query = byId.get(entry.call.endpoint);
      // A result of a definition since changed or removed is never served again: it only waits to expire.
      const current = query?.digest === entry.call.digest ? query : undefined;
      const age = entry.computedAt === undefined ? null : Math.round((now - entry.computedAt) / 1000);
      return {
        endpoint: query?.name ?? entry.call.endpoint,
        params: entry.call.params,
        at: entry.call.at || null,
        ageSeconds: age,
        servedSecondsAgo: Math.round((now - entry.servedAt) / 1000),
        expiresInSeconds: age === null || !current ? null : Math.max(0, current.cacheSeconds - age),
      };
    });
    return views.sort((a, b) => a.endpoint.localeCompare(b.endpoint) || (a.ageSeconds ?? 0) - (b.ageSeconds ?? 0));
  }

  /** Where the warehouse is, as the configuration says. */
  #engineOptions(): Pick<WarehouseOptions, 'url' | 'dataDir' | 'lockWaitMs' | 'timeoutSeconds'> {
    const { url, dataDir, lockWaitMs, queryTimeoutSeconds } = this.config;
    return { url, dataDir, lockWaitMs, timeoutSeconds: queryTimeoutSeconds };
  }

  /** Forgets every cached result; returns how many calls were forgotten. */
  clearCache(): Promise<number> {
    return this.cache.clear();
  }

  /**
   * Loads newline-delimited JSON events into a log table (see load/). The warehouse opens while the
   * first batch is read.
   */
  async load(table: TableName, input: LoadInput, options: LoadOptions = {}): Promise<LoadReport> {
    const { loadEvents } = await import('./load/index.js');
    return loadEvents(this.warehouse(), table, input, options);
  }

  /** Loads sample events for a few projects over the 90 days before now into a table. */
  async loadSample(table: TableName, options: LoadOptions = {}): Promise<LoadReport> {
    const [{ loadEvents }, { sampleChunks }] = await Promise.all([import('./load/index.js'), import('./load/sample.js')]);
    return loadEvents(this.warehouse(), table, sampleChunks(table, this.clock()), options);
  }

  /** The DDL of the log tables, for a server or (with a name) a cluster. */
  async schema(cluster?: string): Promise<string[]> {
    const { schemaDdl } = await import('./warehouse/schema.js');
    return schemaDdl(cluster);
  }

  /** Applies that DDL to the ClickHouse server the configuration names, telling each statement as it goes. */
  async init(cluster: string | undefined, onApplied?: (statement: string) => void): Promise<void> {
    if (this.config.url === undefined) {
      throw new InputError('init needs a ClickHouse server: give --url or SAVEDQ_CLICKHOUSE_URL (the embedded engine creates its tables itself).');
    }
    const [{ openWarehouse }, statements] = await Promise.all([import('./warehouse/index.js'), this.schema(cluster)]);
    const warehouse = await openWarehouse({ ...this.#engineOptions(), createTables: false });
    try {
      for (const statement of statements) {
        await warehouse.command(statement);
        onApplied?.(statement);
      }
    } finally {
      await warehouse.close();
    }
  }

  /**
   * Warnings for the user not yet taken: each broken definition of the saved queries read so far (one
   * line a file), and a cache that could not be used.
   */
  takeWarnings(): string[] {
    const warnings: string[] = [];
    const scanned = this.#queries.scanned();
    if (scanned && this.#reported !== this.#queries) {
      this.#reported = this.#queries;
      warnings.push(...scanned.broken.map((b) => `skipped ${brokenText(b)}`));
    }
    return [...warnings, ...this.cache.warnings.splice(0)];
  }

  /** Releases the warehouse (and with it the embedded data directory) and the cache file. */
  async close(): Promise<void> {
    await this.cache.close();
    await this.#closeWarehouse();
  }
}

/**
 * How long this process trusts a result it has just seen without asking the cache file again. Short, so
 * a result another process (a cron warm) refreshed is picked up within seconds.
 */
const RECENT_MS = 2_000;
const RECENT_ENTRIES = 1_000;
const NO_WARNINGS: readonly string[] = Object.freeze([]);
/** The warm set needs "served in the last 900 s": a record every 30 s per call is plenty. */
const SERVED_EVERY_MS = 30_000;
