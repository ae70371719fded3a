import type { CacheEntry, CachedCall, ResultsCache } from '../cache/index.js';
import type { QueryCatalog } from '../queries/catalog.js';
import type { NormalisedParams } from '../queries/types.js';
import { prepareCall } from './prepare.js';
import type { CallRunner, Clock } from './runner.js';

/** What `warm` did for one call. */
export interface WarmOutcome {
  readonly call: CachedCall;
  /** The query's name (its id when it is gone), for reports. */
  readonly name: string;
  readonly rows?: number;
  readonly error?: Error;
  /** Not refreshed: the time given to warming ran out first (the next run takes it). */
  readonly left?: boolean;
}

/** A cached call as `cache list` shows it. */
export interface CachedCallView {
  /** The query's name (its id when it is gone). */
  readonly query: string;
  /** Whose result it is: the data directory, or the server's URL without its password. */
  readonly source: string;
  readonly params: NormalisedParams;
  /** The --at instant, or null for "now". */
  readonly at: string | null;
  readonly ageSeconds: number | null;
  readonly servedSecondsAgo: number;
  /** Null when the result will never be served again: its definition has changed or gone. */
  readonly expiresInSeconds: number | null;
}

/** What warming works with: the library's catalog, cache, runner and clock. */
export interface WarmingParts {
  readonly catalog: QueryCatalog;
  /** The data source this library reads: only its entries are warmed. */
  readonly source: string;
  readonly cache: ResultsCache;
  readonly runner: CallRunner;
  readonly clock: Clock;
}

/**
 * The warm set: cached calls served within their query's cache time whose result is at least its
 * warming age old (or gone). Calls of a definition changed or removed since are left to expire.
 */
export async function dueForWarming({ catalog, source, cache, clock }: WarmingParts): Promise<CacheEntry[]> {
  const now = clock();
  const { byId } = await catalog.scan();
  return (await cache.entries()).filter((entry) => {
    if (entry.call.source !== source) return false; // another data directory's or server's, warmed by its own
    const query = byId.get(entry.call.query);
    if (!query || query.cacheSeconds === 0 || query.warmSeconds === 0 || query.digest !== entry.call.digest) return false;
    const servedRecently = now - entry.servedAt <= query.cacheSeconds * 1000;
    const old = entry.computedAt === undefined || now - entry.computedAt >= query.warmSeconds * 1000;
    return servedRecently && old;
  });
}

/**
 * Re-runs the given calls (default: the warm set) and stores fresh results, one after another. A
 * failure is reported in its outcome, never thrown, so one bad call does not stop the others. Each
 * call is prepared again today (its parameters checked and normalised), and the key refreshed is the
 * one a call of today reads.
 */
export async function warm(
  parts: WarmingParts,
  calls: readonly CachedCall[] | undefined,
  signal: AbortSignal | undefined,
  onOutcome?: (outcome: WarmOutcome, index: number, total: number) => void,
  untilMs = Infinity,
): Promise<WarmOutcome[]> {
  // The most recently served first: when the time runs out, what people use most has been refreshed.
  const due = calls === undefined ? (await dueForWarming(parts)).sort((a, b) => b.servedAt - a.servedAt) : [];
  const todo = calls ?? due.map((e) => e.call);
  const { byId } = await parts.catalog.scan();
  const outcomes: WarmOutcome[] = [];
  for (const [index, call] of todo.entries()) {
    if (signal?.aborted) throw signal.reason;
    let outcome: WarmOutcome;
    const name = byId.get(call.query)?.name ?? call.query;
    if (Date.now() >= untilMs) {
      outcomes.push({ call, name, left: true });
      continue;
    }
    try {
      const prepared = await prepareCall(parts.catalog, parts.source, { nameOrId: call.query, params: Object.entries(call.params), at: call.at === '' ? undefined : call.at });
      const result = await parts.runner.refresh(prepared, 'warm');
      // Warming is no one asking: the call keeps the time it was last served, with its new result.
      const servedAt = due[index]?.servedAt;
      if (servedAt !== undefined) await parts.cache.markServed(prepared.key, { call: prepared.cached, servedAt, computedAt: result.computedAt });
      outcome = { call, name, rows: result.rows.length };
    } catch (err) {
      outcome = { call, name, error: err instanceof Error ? err : new Error(String(err)) };
    }
    outcomes.push(outcome);
    onOutcome?.(outcome, index, todo.length);
  }
  return outcomes;
}

/** The calls the cache holds, for `cache list`: ages in seconds, by query name. */
export async function cachedCallViews({ catalog, cache, clock }: WarmingParts): Promise<CachedCallView[]> {
  const now = clock();
  const { byId } = await catalog.scan();
  const views = (await cache.entries()).map((entry): CachedCallView => {
    const query = byId.get(entry.call.query);
    // A result of a definition since changed or removed is never served again: it only waits to expire.
    const current = query?.digest === entry.call.digest ? query : undefined;
    const age = entry.computedAt === undefined ? null : Math.round((now - entry.computedAt) / 1000);
    return {
      query: query?.name ?? entry.call.query,
      source: entry.call.source.replace(/^(embedded|server):/, ''),
      params: entry.call.params,
      at: entry.call.at || null,
      ageSeconds: age,
      servedSecondsAgo: Math.round((now - entry.servedAt) / 1000),
      expiresInSeconds: age === null || !current ? null : Math.max(0, current.cacheSeconds - age),
    };
  });
  return views.sort((a, b) => a.query.localeCompare(b.query) || (a.ageSeconds ?? 0) - (b.ageSeconds ?? 0));
}
