import type { RunResult } from './runner.js';

/** How an answer's outcome (calls/runner.ts's CacheOutcome) is said outside the process. */
export interface OutcomeNames {
  /** serve's X-Cache header; none for a query that is never cached. */
  readonly xCache: 'HIT' | 'MISS' | 'BYPASS' | 'STALE' | undefined;
  /** savedq_cache_total's `outcome` label. */
  readonly metric: 'hit' | 'miss' | 'shared' | 'off' | 'bypass' | 'stale';
  /** The word of serve's log line (`cache=`). */
  readonly log: string;
}

/**
 * The one table of what each outcome of a cached query is called: a caller is told `shared` came from
 * the cache (HIT), the log and the metric tell it from a hit; an answer not kept (a load changed its
 * data meanwhile) was computed now (MISS); the store not reached is BYPASS; an expired answer served
 * because no host of the warehouse answered is STALE.
 */
const NAMES: { readonly [O in RunResult['cache']]: OutcomeNames } = {
  hit: { xCache: 'HIT', metric: 'hit', log: 'HIT' },
  shared: { xCache: 'HIT', metric: 'shared', log: 'SHARED' },
  miss: { xCache: 'MISS', metric: 'miss', log: 'MISS' },
  off: { xCache: 'MISS', metric: 'miss', log: 'MISS' },
  bypass: { xCache: 'BYPASS', metric: 'bypass', log: 'BYPASS' },
  stale: { xCache: 'STALE', metric: 'stale', log: 'STALE' },
};

/** A query never cached (`cache: 0`): no X-Cache, `off` in the metric. */
const NEVER_CACHED: OutcomeNames = { xCache: undefined, metric: 'off', log: '-' };

/** What an answer's outcome is called outside the process. */
export function outcomeNames(result: Pick<RunResult, 'cache' | 'query'>): OutcomeNames {
  return result.query.cacheSeconds === 0 ? NEVER_CACHED : NAMES[result.cache];
}
