import { callName } from '../queries/version-ref.js';
import { ageSeconds } from './answer.js';
import { asOfStored } from '../time.js';
import { cacheKey, type CacheEntry, type CachedCall, type ResultsCache } from '../cache/index.js';
import type { QueryCatalog } from '../queries/catalog.js';
import type { NormalisedParams } from '../queries/types.js';
import { prepareCall } from './prepare.js';
import type { DataGeneration } from './generation.js';
import type { CallRunner, Clock } from './runner.js';

/** What `warm` did for one call. */
export interface WarmOutcome {
  readonly call: CachedCall;
  /** The query's name (its id when it is gone), for reports. */
  readonly name: string;
  readonly rows?: number;
  readonly error?: Error;
  /**
   * Not refreshed here: the time given to warming ran out first, or a load is changing the data (left
   * for the next run), or another process sharing the store refreshes it.
   */
  readonly left?: 'time' | 'loading' | 'another';
}

/** A cached call as `cache list` shows it. */
export interface CachedCallView {
  /** The query's name (its id when it is gone). */
  readonly query: string;
  /** Whose result it is: the data directory, or the server's URL without its password. */
  readonly source: string;
  readonly params: NormalisedParams;
  /** The --at instant, or null for "now" (AsOf as JSON shows it). */
  readonly at: string | null;
  /** A caller's own SQL over the answer, as the engine spells it; absent for the query's own rows. */
  readonly sql?: string;
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
  /** The generation of the source's data (read fresh before warming), and whether a load is changing it now: nothing computed meanwhile is kept. */
  readonly generation: DataGeneration;
  readonly cache: ResultsCache;
  readonly runner: CallRunner;
  readonly clock: Clock;
}

/** A call of the warm set, with the keys of its records on older data (warming it forgets them). */
export interface DueCall extends CacheEntry {
  readonly older: string[];
}

/**
 * The warm set: cached calls served within their query's cache time whose result is at least its
 * warming age old (or gone). Calls of a definition changed or removed since are left to expire.
 */
export async function dueForWarming({ catalog, source, generation, cache, clock }: WarmingParts): Promise<DueCall[]> {
  const now = clock();
  const current = generation.current().current;
  const { byId } = await catalog.scan();
  // One entry a call, as of the data now: a call served before and after a load has a record of each
  // generation; the one of the data now (else the last served) is the one to keep fresh.
  const calls = new Map<string, DueCall>();
  const onDataNow = (e: CacheEntry) => ((e.call.generation ?? '') === current ? 1 : 0);
  for (const entry of await cache.entries()) {
    if (entry.call.source !== source) continue; // another data directory's or server's, warmed by its own
    if (entry.call.sql !== undefined) continue; // a caller's own SQL over an answer is never warmed (docs/sandboxing.md)
    const call = cacheKey({ ...entry.call, generation: current });
    const seen = calls.get(call);
    if (!seen) calls.set(call, { ...entry, older: [] });
    else if (onDataNow(entry) > onDataNow(seen) || (onDataNow(entry) === onDataNow(seen) && entry.servedAt > seen.servedAt)) {
      calls.set(call, { ...entry, older: [...seen.older, seen.key] });
    } else seen.older.push(entry.key);
  }
  return [...calls.values()].filter((entry) => {
    const query = byId.get(entry.call.query);
    if (!query || query.cacheSeconds === 0 || query.warmSeconds === 0 || query.digest !== entry.call.digest) return false;
    const servedRecently = now - entry.servedAt <= query.cacheSeconds * 1000;
    // Computed before the data's latest load: as good as gone, however young.
    const old = entry.computedAt === undefined || now - entry.computedAt >= query.warmSeconds * 1000 || (entry.call.generation ?? '') !== current;
    return servedRecently && old;
  });
}

/** What a warm did, counted once for every report of it: warm's summary line, serve's log and its metric. */
export function warmCounts(outcomes: readonly WarmOutcome[]): { refreshed: number; failed: number; left: number; loading: boolean; another: number } {
  const failed = outcomes.filter((o) => o.error).length;
  const another = outcomes.filter((o) => o.left === 'another').length;
  const left = outcomes.filter((o) => o.left && o.left !== 'another').length;
  return { refreshed: outcomes.length - failed - left - another, failed, left, loading: outcomes.some((o) => o.left === 'loading'), another };
}

/** How a warm runs. */
export interface WarmOptions {
  /** The calls to refresh; default: the warm set. */
  readonly calls?: readonly CachedCall[] | undefined;
  /** When aborted, warming stops before its next call. */
  readonly signal?: AbortSignal | undefined;
  /** Told of each call's outcome as it comes, with its place among them. */
  readonly onOutcome?: ((outcome: WarmOutcome, index: number, total: number) => void) | undefined;
  /** How long warming may take (ms): the calls left then are left for the next run. Default: no end. */
  readonly maxTimeMs?: number | undefined;
}

/**
 * Re-runs the given calls (default: the warm set) and stores fresh results, one after another. A
 * failure is reported in its outcome, never thrown, so one bad call does not stop the others. Each
 * call is prepared again today (its parameters checked and normalised), and the key refreshed is the
 * one a call of today reads.
 */
export async function warm(parts: WarmingParts, { calls, signal, onOutcome, maxTimeMs = Infinity }: WarmOptions = {}): Promise<WarmOutcome[]> {
  const untilMs = Date.now() + maxTimeMs;
  // The most recently served first: when the time runs out, what people use most has been refreshed.
  const due = calls === undefined ? (await dueForWarming(parts)).sort((a, b) => b.servedAt - a.servedAt) : [];
  const todo = calls ?? due.map((e) => e.call);
  const { byId } = await parts.catalog.scan();
  const outcomes: WarmOutcome[] = [];
  for (const [index, call] of todo.entries()) {
    if (signal?.aborted) throw signal.reason;
    let outcome: WarmOutcome;
    const known = byId.get(call.query);
    const name = known ? callName(known) : call.query;
    // While a load changes the data, nothing computed would be kept: the next run warms it.
    const left = Date.now() >= untilMs ? 'time' : parts.generation.current().loading ? 'loading' : undefined;
    if (left) {
      outcomes.push({ call, name, left });
      continue;
    }
    try {
      const prepared = await prepareCall(parts.catalog, { name: parts.source, generation: parts.generation.current().current }, { nameOrId: call.query, params: Object.entries(call.params), at: asOfStored(call.at) });
      // One process a cycle refreshes a call: one that another is refreshing, or has since the due
      // entry was computed, is left to it.
      const result = await parts.runner.refresh(prepared, 'warm', calls === undefined ? (due[index]?.computedAt ?? 0) : undefined);
      if (result === undefined) {
        outcomes.push({ call, name, left: 'another' });
        continue;
      }
      if (result.cache === 'off') {
        outcomes.push({ call, name, left: 'loading' });
        continue;
      }
      // Warming is no one asking: the call keeps the time it was last served, with its new result.
      const servedAt = due[index]?.servedAt;
      if (servedAt !== undefined) await parts.cache.markServed(prepared.key, { call: prepared.cached, servedAt, computedAt: result.computedAt });
      // Warmed on the data now: the entries of older data are never served again.
      for (const old of [...(due[index]?.older ?? []), due[index]?.key]) if (old !== undefined && old !== prepared.key) await parts.cache.forget(old);
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
export async function cachedCallViews({ catalog, source, generation, cache, clock }: WarmingParts): Promise<CachedCallView[]> {
  const now = clock();
  const data = generation.current().current;
  const { byId, byName } = await catalog.scan();
  const views = (await cache.entries()).map((entry): CachedCallView => {
    const query = byId.get(entry.call.query);
    // A result of a definition since changed or removed, or of this source's data before a load, is
    // never served again: it only waits to expire.
    const stale = entry.call.source === source && (entry.call.generation ?? '') !== data;
    const current = query?.digest === entry.call.digest && !stale ? query : undefined;
    const age = entry.computedAt === undefined ? null : ageSeconds(entry.computedAt, now);
    return {
      query: query ? callName(query) : entry.call.query,
      source: entry.call.source.replace(/^(embedded|server):/, ''),
      params: entry.call.params,
      at: asOfStored(entry.call.at) ?? null,
      ...(entry.call.sql === undefined ? {} : { sql: entry.call.sql }),
      ageSeconds: age,
      servedSecondsAgo: ageSeconds(entry.servedAt, now),
      expiresInSeconds: age === null || !current ? null : Math.max(0, current.cacheSeconds - age),
    };
  });
  // What has no result any more, or one past its time, is no cached call: its served record only waits to go.
  const past = (v: CachedCallView) => v.ageSeconds === null || v.expiresInSeconds === 0 || v.ageSeconds >= (byName.get(v.query)?.cacheSeconds ?? Infinity);
  return views.filter((v) => !past(v)).sort((a, b) => a.query.localeCompare(b.query) || (a.ageSeconds ?? 0) - (b.ageSeconds ?? 0));
}
