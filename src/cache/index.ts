import { statSync } from 'node:fs';
import type { CachedCall, CachedResult, Lookup, ServedRecord, Store } from '../store/types.js';

export type { CachedCall, CachedResult, ServedRecord } from '../store/types.js';

/** A served call, by its cache key. */
export interface CacheEntry extends ServedRecord {
  readonly key: string;
}

/** Entries are kept a little longer than they are served, so a slow warm can still see them. */
const RETENTION_MS = 3_600_000;

/**
 * The cache key of a call: the query's id and the digest of its definition, then its data source,
 * normalised parameters, --at, the data's generation and a caller's SQL (when it sent some) as JSON.
 * Exact text: the SQLite file keeps it so; PostgreSQL keeps its SHA-256 (a caller's SQL may be longer
 * than an index entry can be), store/postgres.ts.
 */
export function cacheKey(call: CachedCall): string {
  const parts = [call.source, Object.entries(call.params), call.at, call.generation ?? ''];
  return `${call.query}:${call.digest}:${JSON.stringify(call.sql === undefined ? parts : [...parts, call.sql])}`;
}

/** The results cache: results and served records of calls, in the store (store/). */
export class ResultsCache {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  /** Where the store is, as people may be shown it (the file, or the URL without its password). */
  get location(): string {
    return this.#store.location;
  }

  /** The stored result of a call, if any (fresh or not: the caller judges its age). */
  get(key: string): Promise<CachedResult | undefined> {
    return this.#store.getResult(key);
  }

  /** The stored result of a call and when any process last recorded it as served: a cache hit's one read. */
  lookup(key: string): Promise<Lookup> {
    return this.#store.lookup(key);
  }

  /**
   * Stores a result, kept at least the retention, and as long as `servableMs` (its query's cache time
   * and stale_if_error: an answer that may be served while the warehouse is down is kept that long).
   */
  set(key: string, result: CachedResult, servableMs = 0): Promise<void> {
    return this.#store.setResult(key, result, Math.max(RETENTION_MS, servableMs));
  }

  /** Records that a call was served (which keeps it in the warm set), and when its result was computed. */
  markServed(key: string, record: ServedRecord): Promise<void> {
    return this.#store.markServed(key, record, RETENTION_MS);
  }

  /** Forgets one call: its result and its served record (a call warmed under a newer key). */
  forget(key: string): Promise<void> {
    return this.#store.forget(key);
  }

  /**
   * Every served call, for `cache list` and `warm`: the served records alone are read, never the
   * results' rows. A record of an older savedq (another shape) is left to expire.
   */
  async entries(): Promise<CacheEntry[]> {
    const records = await this.#store.served();
    return records.filter((record) => typeof record.call?.query === 'string' && typeof record.call.source === 'string').map((record) => ({ key: cacheKey(record.call), ...record }));
  }

  /**
   * Deletes what is past its retention (results, served records), then, while the entries take more
   * than `maxBytes`, the least recently served results with their records.
   */
  prune(maxBytes: number, now = Date.now()): Promise<{ expired: number; evicted: number }> {
    return this.#store.prune(maxBytes, now);
  }

  /** Bytes of what is kept: what a run compares with the bound. */
  liveBytes(): Promise<number> {
    return this.#store.bytes();
  }

  /** What `cache list` says the store takes: the SQLite file's size on disk (with its journal), or what the tables hold. */
  async size(): Promise<number> {
    if (this.#store.backend !== 'sqlite') return this.#store.bytes();
    const size = (f: string) => {
      try {
        return statSync(f).size;
      } catch {
        return 0; // not there (yet), or not reachable: nothing to count
      }
    };
    return size(this.#store.location) + size(`${this.#store.location}-wal`);
  }

  /** Removes every entry; returns how many calls were forgotten. */
  clear(): Promise<number> {
    return this.#store.clear();
  }
}
