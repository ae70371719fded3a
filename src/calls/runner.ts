import type { CachedResult, ResultsCache } from '../cache/index.js';
import { RecentResults, type RecentResult } from '../cache/recent.js';
import type { NormalisedParams, Row, SavedQuery } from '../queries/types.js';
import type { PreparedCall } from './prepare.js';
import { SharedWork, type Joined } from './sharing.js';
import type { QueryStatistics } from '../warehouse/types.js';

/** Where "now" comes from (epoch ms); tests give a fixed or moving clock. */
export type Clock = () => number;

/**
 * "Cache" names three things, each its own type: what a request asks of the cache (CacheMode), what
 * the cache did for a result (CacheOutcome), and what it holds of a call (cache/index.ts's CacheEntry,
 * a ServedRecord by its key, beside the CachedResult's rows).
 */
/** What a run asks of the results cache. */
export type CacheMode = 'use' | 'bypass' | 'refresh';

/** What the cache did for a result: `hit`, served from it; `miss`, computed and stored; `off`, not cacheable or bypassed. */
export type CacheOutcome = 'hit' | 'miss' | 'off';

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
  inTurn(call: PreparedCall, gone: AbortSignal, caller: string): Promise<RunResult>;
}

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


/**
 * A prepared call's way through the results cache to the warehouse and back: what this process served
 * a moment ago, then the cache file, then the query; identical calls in flight share one lookup and one
 * run; every answer of a cached query is recorded as served (which keeps it in the warm set).
 */
export class CallRunner {
  readonly #cache: ResultsCache;
  readonly #executor: Executor;
  readonly #clock: Clock;
  readonly #recent = new RecentResults();
  /** Shared work, by cache key: runs that bypass the cache, cache lookups, and runs whose result is stored. */
  readonly #uncached = new SharedWork<RunResult>();
  readonly #lookups = new SharedWork<RunResult>();
  readonly #refreshes = new SharedWork<RunResult>();
  readonly #keeps: (call: PreparedCall) => boolean;

  /** @param keeps whether a call's answer, computed now, may be kept (not while a load changes its data). */
  constructor(cache: ResultsCache, executor: Executor, clock: Clock, keeps: (call: PreparedCall) => boolean = () => true) {
    this.#cache = cache;
    this.#executor = executor;
    this.#clock = clock;
    this.#keeps = keeps;
  }

  /** Forgets what was served lately (the saved queries changed). */
  forgetRecent(): void {
    this.#recent.clear();
  }

  /** @param caller who asks (an API key, a token's name), for turns at the engine fair across callers. */
  async run(call: PreparedCall, mode: CacheMode, signal?: AbortSignal, caller = ''): Promise<RunResult> {
    if (call.query.cacheSeconds === 0 || mode === 'bypass') {
      return this.#uncached.join(call.key, (gone) => this.#executor.inTurn(call, gone, caller), signal).work;
    }
    if (mode === 'use') {
      const recent = this.answerRecent(call);
      if (recent) return recent;
    }
    // In 'use' mode the cache lookup is shared too: a request that read the cache before an identical
    // run stored its result would otherwise start that run again after it had finished.
    const joined: Joined<RunResult> = mode === 'use' ? this.#lookups.join(call.key, (gone) => this.#lookup(call, gone, caller), signal) : this.#refresh(call, caller, signal);
    const answer = await joined.work;
    // The caller that ran the query records it as served; those that joined it go by the throttle. An
    // answer not kept (computed while a load ran) is not remembered either.
    if (answer.cache !== 'off') await this.#served(call, answer, this.#clock(), answer.cache === 'miss' && joined.leader);
    return answer;
  }

  /**
   * The answer to a cached call from what this process served in the last moments, without waiting for
   * anything (`serve`'s hot path): undefined when there is none fresh enough. The served record is
   * written in the background.
   */
  answerRecent(call: PreparedCall): RunResult | undefined {
    if (call.query.cacheSeconds === 0) return undefined;
    const now = this.#clock();
    const recent = this.#recent.get(call.key);
    if (!recent || !fresh(call, recent.result, now)) return undefined;
    // Trusted for a moment from when it was read, however often it is served meanwhile; then the cache
    // file is read again while it is still answered, so a result another process (a cron warm) stored
    // is taken a moment later.
    if (this.#recent.reread(recent, now)) void this.#reread(call, recent);
    if (this.#recent.due(recent, now)) void this.#cache.markServed(call.key, { call: call.cached, servedAt: now, computedAt: recent.result.computedAt });
    return result(call, recent.result, 'hit');
  }

  /**
   * Reads the cache file again for a result served from memory past its moment of trust: a fresh entry
   * there takes its place (the one in memory kept when it is the same run's, so its rows stay the same
   * object); none (a cache file that fails yields none), and it is forgotten, so the next request looks
   * the call up itself.
   */
  async #reread(call: PreparedCall, recent: RecentResult): Promise<void> {
    const stored = await this.#cache.get(call.key);
    // A result computed or read meanwhile (a refresh) is newer than what this read began with.
    if (this.#recent.get(call.key) !== recent) return;
    const now = this.#clock();
    if (!stored || !fresh(call, stored, now)) {
      this.#recent.forget(call.key);
      return;
    }
    await this.#served(call, stored.computedAt === recent.result.computedAt ? recent.result : stored, now);
  }

  /** Runs a call and stores its result (warming): shared with an identical run under way. */
  refresh(call: PreparedCall, caller: string): Promise<RunResult> {
    return this.#refresh(call, caller).work;
  }

  async #lookup(call: PreparedCall, gone: AbortSignal, caller: string): Promise<RunResult> {
    const hit = await this.#cache.get(call.key);
    return hit && fresh(call, hit, this.#clock()) ? result(call, hit, 'hit') : this.#refresh(call, caller, gone).work;
  }

  #refresh(call: PreparedCall, caller: string, signal?: AbortSignal): Joined<RunResult> {
    return this.#refreshes.join(
      call.key,
      async (gone) => {
        const computed = await this.#executor.inTurn(call, gone, caller);
        // Asked once the answer is in: a load that began meanwhile may have changed what it read.
        if (!this.#keeps(call)) return { ...computed, cache: 'off' as const };
        await this.#cache.set(call.key, { rows: computed.rows, truncated: computed.truncated, computedAt: computed.computedAt, statistics: computed.statistics });
        return { ...computed, cache: 'miss' as const };
      },
      signal,
    );
  }

  /** Remembers an answer just served, and records it as served when that is due (synchronous when it is not). */
  #served(call: PreparedCall, answer: CachedResult, now: number, force = false): Promise<void> | undefined {
    const due = this.#recent.served(call.key, { rows: answer.rows, truncated: answer.truncated, computedAt: answer.computedAt, statistics: answer.statistics }, now, force);
    return due ? this.#cache.markServed(call.key, { call: call.cached, servedAt: now, computedAt: answer.computedAt }) : undefined;
  }
}

/** Whether a stored result is young enough to serve for this call. */
function fresh(call: PreparedCall, stored: CachedResult, now: number): boolean {
  // An entry stored before savedq kept what its run cost cannot say it: it is computed again.
  return stored.statistics !== undefined && stored.computedAt <= now && now - stored.computedAt < call.query.cacheSeconds * 1000;
}
