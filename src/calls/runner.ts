import type { CachedResult, ResultsCache } from '../cache/index.js';
import { WarehouseUnreachableError } from '../errors.js';
import { RecentResults, type RecentResult } from '../cache/recent.js';
import type { CallTags } from '../queries/run.js';
import type { NormalisedParams, Row, SavedQuery } from '../queries/types.js';
import type { Store } from '../store/types.js';
import type { QueryStatistics } from '../warehouse/types.js';
import type { DataGeneration } from './generation.js';
import type { PreparedCall } from './prepare.js';
import { InFlight, type Joined } from './in-flight.js';

/** Where "now" comes from (epoch ms); tests give a fixed or moving clock. */
export type Clock = () => number;

/**
 * "Cache" names three things, each its own type: what a request asks of the cache (CacheMode), what
 * the cache did for a result (CacheOutcome, said outside the process by calls/outcomes.ts), and what it
 * holds of a call (cache/index.ts's CacheEntry, a ServedRecord by its key, beside the CachedResult's rows).
 */
/** What a run asks of the results cache: use it, skip it (`--no-cache`: neither read nor written), or refresh the entry. */
export type CacheMode = 'use' | 'skip' | 'refresh';

/**
 * What the cache did for a result: `hit`, served from it; `miss`, computed and stored; `shared`,
 * computed by another process for the same key meanwhile, and taken from the cache; `off`, not
 * cacheable, skipped, or not kept (a load was changing the data); `bypass`, the store cannot be
 * reached, so the answer came from the warehouse uncached.
 */
export type CacheOutcome = 'hit' | 'miss' | 'shared' | 'off' | 'bypass' | 'stale';

/** The answer to a run. */
export interface RunResult {
  readonly query: SavedQuery;
  readonly params: NormalisedParams;
  readonly rows: Row[];
  /** The rows' fields as the query documents them; none for a caller's own SQL, which chose them. */
  readonly fields: SavedQuery['fields'];
  /** The query had more rows than its row limit: `rows` stop at it. */
  readonly truncated: boolean;
  readonly cache: CacheOutcome;
  /** When the rows were computed (epoch ms). */
  readonly computedAt: number;
  /** What the run that computed the rows cost (a cached answer's: its run's). */
  readonly statistics: QueryStatistics;
}

/** What runs a call below the cache (calls/execute.ts's CallExecutor): in the caller's turn; told when every caller has gone. */
export interface Executor {
  inTurn(call: PreparedCall, gone: AbortSignal, tags: CallTags): Promise<RunResult>;
}

/** A lease on a key being computed lasts this long, renewed while the computing goes on; a dead holder's is free after it. */
const COMPUTE_LEASE_MS = 5_000;
const RENEW_EVERY_MS = 1_500;
/** How often a process waiting for another's answer looks for it. */
const WAIT_STEP_MS = 100;

/** The fields of a call's rows: its query's, unless a caller's SQL chose them. */
export const fieldsOf = (call: PreparedCall): SavedQuery['fields'] => (call.sql === undefined ? call.query.fields : []);

const result = (call: PreparedCall, stored: CachedResult, cache: RunResult['cache']): RunResult => ({
  query: call.query,
  params: call.params,
  rows: stored.rows,
  fields: fieldsOf(call),
  truncated: stored.truncated ?? false,
  cache,
  computedAt: stored.computedAt,
  // fresh() serves no entry stored without them.
  statistics: stored.statistics as QueryStatistics,
});


/** What a runner works with, handed to it whole: it reaches back into no one. */
export interface RunnerParts {
  readonly cache: ResultsCache;
  /** What is kept between calls: whether it answers, and the leases of the processes sharing it. */
  readonly store: Pick<Store, 'up' | 'lease' | 'leaseReading' | 'release'>;
  readonly executor: Executor;
  /** The generation of the data calls read: an answer is kept only when it read the data of its key. */
  readonly generation: DataGeneration;
  readonly clock: Clock;
  /** This process, as its leases name it to the others sharing the store. */
  readonly owner: string;
  /** The longest a process waits for another's answer before computing it itself (the query's time limit). */
  readonly waitMs: number;
  /** The cached answers' bound (--cache-max-mb), in bytes: kept after each answer stored. */
  readonly maxBytes: number;
  /** The rows of answers kept in memory to give again at once, at most (half of --memory-mb), in bytes. */
  readonly recentBytes: number;
}

/** Who runs a call, and when they stop waiting. */
export interface RunOptions {
  /** When aborted, this caller stops waiting; the query runs on for any identical call that joined it. */
  readonly signal?: AbortSignal | undefined;
  /** Who asks (an API key, a token's name), for turns at the engine fair across callers. */
  readonly caller?: string | undefined;
  /** The request's id and a caller's trace context, which the warehouse's statements carry. */
  readonly requestId?: string | undefined;
  readonly trace?: CallTags['trace'];
}

/** What the warehouse's statements of a call say of who asked. */
const tagsOf = ({ caller, requestId, trace }: RunOptions): CallTags => ({ caller, requestId, trace });

/** How a call is computed and stored (#refresh). */
interface RefreshOptions extends RunOptions {
  /** The key's lease is this process's already (warming took it). */
  readonly leased?: boolean;
  /** Whether a stored answer is one another process stored since this call began (then it is taken). */
  readonly isAnothers?: (stored: CachedResult) => boolean;
}

/**
 * A cached call's whole life, in one place (docs/development.md walks it): what this process served a
 * moment ago, then the store, then the query; identical calls in flight joined, one process a key across
 * those sharing the store; the outcome (`hit`, `miss`, `shared`, `off`, `bypass` when the store does
 * not answer); whether an answer is kept (not when a load changed its data meanwhile); the cache kept
 * within its bound after an answer is stored; and every answer of a cached query recorded as served
 * (which keeps it in the warm set).
 */
export class CallRunner {
  readonly #parts: RunnerParts;
  readonly #recent: RecentResults;
  /** Work in flight, by cache key: runs that skip the cache, cache lookups, and runs whose result is stored. */
  readonly #uncached = new InFlight<RunResult>();
  readonly #lookups = new InFlight<RunResult>();
  readonly #refreshes = new InFlight<RunResult>();
  /**
   * What follows an answer and the answer does not wait for: storing it, then letting go of its key's
   * lease (a process waiting on the lease then reads it), and recording it as served. `settled` waits for it.
   */
  readonly #afterwards = new Set<Promise<void>>();
  /** The cache's bound being kept, once at a time. */
  #bounding: Promise<void> | undefined;

  constructor(parts: RunnerParts) {
    this.#parts = parts;
    this.#recent = new RecentResults(parts.recentBytes);
  }

  /** The rows of answers kept in memory to give again at once: about how many bytes, of at most how many. */
  recentMemory(): { bytes: number; maxBytes: number } {
    return { bytes: this.#recent.bytes, maxBytes: this.#recent.maxBytes };
  }

  /**
   * Waits for what followed the answers given so far (their storing, their served records): before a
   * process ends, or reads the store whole. Not for what follows answers given meanwhile, which a busy
   * server never stops giving.
   */
  async settled(): Promise<void> {
    await Promise.all([...this.#afterwards]);
  }

  /** Work that follows an answer, kept until it ends; its failure is the store's to say (store/health.ts), not the answer's. */
  #after(work: () => Promise<unknown>): void {
    const tracked: Promise<void> = work()
      .then(() => undefined, () => undefined)
      .finally(() => this.#afterwards.delete(tracked));
    this.#afterwards.add(tracked);
  }

  /** Forgets what was served lately (the saved queries changed, or another process cleared the cache). */
  forgetRecent(): void {
    this.#recent.clear();
  }

  /**
   * Runs a call in a mode: its answer, and what the cache did for it. A store that does not answer
   * (before the call, or on the way) makes an answer computed from the warehouse `bypass`: straight
   * from the warehouse, nothing kept. One read from the store before it failed keeps what it is (a
   * hit, another process's answer, an expired one served stale).
   */
  async run(call: PreparedCall, mode: CacheMode, options: RunOptions = {}): Promise<RunResult> {
    const cached = call.query.cacheSeconds > 0 && mode !== 'skip';
    if (cached && !this.#parts.store.up) return { ...(await this.#skipping(call, options)), cache: 'bypass' };
    const result = cached ? await this.#cached(call, mode, options) : await this.#skipping(call, options);
    return cached && !this.#parts.store.up && (result.cache === 'miss' || result.cache === 'off') ? { ...result, cache: 'bypass' } : result;
  }

  /** A call answered from the warehouse alone, shared with an identical one in flight here. */
  #skipping(call: PreparedCall, options: RunOptions): Promise<RunResult> {
    return this.#uncached.join(call.key, (gone) => this.#parts.executor.inTurn(call, gone, tagsOf(options)), options.signal).work;
  }

  async #cached(call: PreparedCall, mode: 'use' | 'refresh', options: RunOptions): Promise<RunResult> {
    if (mode === 'use') {
      const recent = this.answerRecent(call);
      if (recent) return recent;
    }
    // In 'use' mode the cache lookup is shared too: a request that read the cache before an identical
    // run stored its result would otherwise start that run again after it had finished.
    const since = this.#parts.clock();
    const joined: Joined<RunResult> =
      mode === 'use'
        ? this.#lookups.join(call.key, (gone) => this.#lookup(call, { ...options, signal: gone }), options.signal)
        : // --refresh: another process's answer will do only when its run began after this call.
          this.#refresh(call, { ...options, isAnothers: (stored) => stored.computedAt > since });
    const answer = await joined.work;
    // The caller that ran the query records it as served; those that joined it go by the throttle. An
    // answer not kept (computed while a load ran) is not remembered either.
    // A stale answer is not remembered: the next call asks the warehouse again.
    if (answer.cache !== 'off' && answer.cache !== 'stale') this.#served(call, answer, this.#parts.clock(), answer.cache !== 'hit' && joined.leader);
    return answer;
  }

  /**
   * The answer to a cached call from what this process served in the last moments, without waiting for
   * anything (`serve`'s hot path): undefined when there is none fresh enough. The served record is
   * written in the background.
   */
  answerRecent(call: PreparedCall): RunResult | undefined {
    if (call.query.cacheSeconds === 0) return undefined;
    const now = this.#parts.clock();
    const recent = this.#recent.get(call.key);
    if (!recent || !fresh(call, recent.result, now)) return undefined;
    // Trusted for a moment from when it was read, however often it is served meanwhile; then the cache
    // file is read again while it is still answered, so a result another process (a cron warm) stored
    // is taken a moment later.
    if (this.#recent.reread(recent, now)) void this.#reread(call, recent);
    if (this.#recent.due(recent, now)) this.#after(() => this.#parts.cache.markServed(call.key, { call: call.cached, servedAt: now, computedAt: recent.result.computedAt }));
    return result(call, recent.result, 'hit');
  }

  /**
   * Reads the cache file again for a result served from memory past its moment of trust: a fresh entry
   * there takes its place (the one in memory kept when it is the same run's, so its rows stay the same
   * object); none (a cache file that fails yields none), and it is forgotten, so the next request looks
   * the call up itself.
   */
  async #reread(call: PreparedCall, recent: RecentResult): Promise<void> {
    const stored = await this.#parts.cache.get(call.key);
    // A result computed or read meanwhile (a refresh) is newer than what this read began with.
    if (this.#recent.get(call.key) !== recent) return;
    const now = this.#parts.clock();
    if (!stored || !fresh(call, stored, now)) {
      this.#recent.forget(call.key);
      return;
    }
    this.#served(call, stored.computedAt === recent.result.computedAt ? recent.result : stored, now);
  }

  /**
   * Runs a call and stores its result (warming), unless another process is computing it or has
   * computed it since `than` (the computedAt warming saw): then undefined, and nothing is run. Shared
   * with an identical run under way here.
   */
  async refresh(call: PreparedCall, caller: string, than?: number): Promise<RunResult | undefined> {
    const { store, cache, owner } = this.#parts;
    const lease = leaseOf(call);
    if (!(await store.lease(lease, owner, COMPUTE_LEASE_MS))) return undefined;
    const stored = than === undefined ? undefined : await cache.get(call.key);
    if (stored && stored.computedAt > (than ?? Infinity)) {
      await store.release(lease, owner);
      return undefined;
    }
    return this.#refresh(call, { caller, leased: true }).work;
  }

  async #lookup(call: PreparedCall, options: RunOptions): Promise<RunResult> {
    const { result: hit, servedAt } = await this.#parts.cache.lookup(call.key);
    const now = this.#parts.clock();
    if (hit && fresh(call, hit, now)) {
      // The served record is written again only when the one kept is SERVED_EVERY_MS old (recent.ts).
      this.#recent.read(call.key, hit, now, servedAt);
      return result(call, hit, 'hit');
    }
    // Any answer stored since this lookup (none, or the stale one it found) is another process's.
    try {
      return await this.#refresh(call, { ...options, isAnothers: (stored) => stored.computedAt !== hit?.computedAt }).work;
    } catch (err) {
      const stale = err instanceof WarehouseUnreachableError && hit !== undefined ? this.#stale(call, hit) : undefined;
      if (stale) return stale;
      throw err;
    }
  }

  /**
   * The answer the store holds, expired, when no host of the warehouse answers (stale-if-error): while
   * it is within its query's stale_if_error past its expiry (never with 0). It is of the data's current
   * generation, which its key names, so a load still means an old answer is never served.
   */
  #stale(call: PreparedCall, stored: CachedResult): RunResult | undefined {
    const within = call.query.staleIfErrorSeconds;
    if (within === 0 || stored.statistics === undefined) return undefined;
    const age = this.#parts.clock() - stored.computedAt;
    return age >= 0 && age < (call.query.cacheSeconds + within) * 1000 ? result(call, stored, 'stale') : undefined;
  }

  /**
   * Computes a call and stores its answer, one process at a time across those sharing the store: when
   * another holds the key's lease, its answer is waited for (`shared`); when it dies, the lease is
   * free a moment later and taken here.
   */
  #refresh(call: PreparedCall, { signal, leased = false, isAnothers = () => false, ...who }: RefreshOptions): Joined<RunResult> {
    return this.#refreshes.join(
      call.key,
      async (gone) => {
        const { store, owner, executor, cache } = this.#parts;
        const lease = leaseOf(call);
        if (!leased) {
          const shared = await this.#waitForOthers(call, lease, gone, isAnothers);
          if (shared) return shared;
        }
        const renew = setInterval(() => void store.lease(lease, owner, COMPUTE_LEASE_MS), RENEW_EVERY_MS);
        renew.unref();
        let keep: RunResult | undefined;
        try {
          const computed = await executor.inTurn(call, gone, tagsOf(who));
          // Asked once the answer is in: a load that began meanwhile may have changed what it read.
          if (!(await this.#keeps(call))) return { ...computed, cache: 'off' as const };
          keep = computed;
          return { ...computed, cache: 'miss' as const };
        } finally {
          // The answer goes back now. It is stored after, and then the lease let go of (renewed till
          // then): a process waiting on the lease finds the answer once the lease is free.
          const stored = keep;
          this.#after(async () => {
            try {
              if (stored) {
                await cache.set(call.key, { rows: stored.rows, truncated: stored.truncated, computedAt: stored.computedAt, statistics: stored.statistics }, (call.query.cacheSeconds + call.query.staleIfErrorSeconds) * 1000);
                await this.#keepBound();
              }
            } finally {
              clearInterval(renew);
              await store.release(lease, owner);
            }
          });
        }
      },
      signal,
    );
  }

  /** Whether an answer computed now may be kept: the store answers, and no load changed its data (none under way, none ended since it was keyed). */
  async #keeps(call: PreparedCall): Promise<boolean> {
    const data = await this.#parts.generation.fresh();
    return this.#parts.store.up && !data.loading && data.current === (call.cached.generation ?? '');
  }

  /** The cache brought back within its bound when an answer stored took it past (the pages in use: one statement), once at a time. */
  #keepBound(): Promise<void> {
    this.#bounding ??= (async () => {
      const { cache, maxBytes } = this.#parts;
      if ((await cache.liveBytes()) > maxBytes) await cache.prune(maxBytes);
    })().finally(() => (this.#bounding = undefined));
    return this.#bounding;
  }

  /**
   * Takes the key's lease, or, while another process holds it, waits for the answer it stores: that
   * answer, or undefined once the lease is this process's (the other finished without storing one, or
   * died) or the wait has lasted the query's time limit. The store is read once the lease is taken too,
   * in the same statement (Store.leaseReading): the other may have stored its answer and let go of the
   * lease between two looks.
   */
  async #waitForOthers(call: PreparedCall, lease: string, gone: AbortSignal, isAnothers: (stored: CachedResult) => boolean): Promise<RunResult | undefined> {
    const { store, cache, owner, waitMs, clock } = this.#parts;
    const until = Date.now() + waitMs;
    for (;;) {
      const read = await store.leaseReading(lease, owner, COMPUTE_LEASE_MS, call.key);
      const taken = read.taken;
      const stored = taken ? read.result : await cache.get(call.key);
      if (stored && isAnothers(stored) && fresh(call, stored, clock())) {
        if (taken) await store.release(lease, owner);
        return result(call, stored, 'shared');
      }
      if (taken || Date.now() >= until) return undefined;
      await new Promise((resolve) => setTimeout(resolve, WAIT_STEP_MS));
      gone.throwIfAborted();
    }
  }

  /** Remembers an answer just served, and records it as served when that is due (after the answer). */
  #served(call: PreparedCall, answer: CachedResult, now: number, force = false): void {
    const due = this.#recent.served(call.key, { rows: answer.rows, truncated: answer.truncated, computedAt: answer.computedAt, statistics: answer.statistics }, now, force);
    if (due) this.#after(() => this.#parts.cache.markServed(call.key, { call: call.cached, servedAt: now, computedAt: answer.computedAt }));
  }
}

/** The lease of a key being computed, across the processes sharing the store. */
const leaseOf = (call: PreparedCall) => `compute:${call.key}`;

/** Whether a stored result is young enough to serve for this call. */
function fresh(call: PreparedCall, stored: CachedResult, now: number): boolean {
  // An entry stored before savedq kept what its run cost cannot say it: it is computed again.
  return stored.statistics !== undefined && stored.computedAt <= now && now - stored.computedAt < call.query.cacheSeconds * 1000;
}
