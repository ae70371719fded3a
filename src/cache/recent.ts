import { BoundedMap } from '../bounded.js';
import type { CachedResult } from './index.js';

/**
 * How long this process trusts a result it has just seen without asking the cache file again. Short, so
 * a result another process (a cron warm) refreshed is picked up within seconds.
 */
const RECENT_MS = 2_000;
const RECENT_ENTRIES = 1_000;
/** The warm set needs "served in the last 900 s": a record every 30 s per call is plenty. */
const SERVED_EVERY_MS = 30_000;

/**
 * What this process served lately, by cache key (`serve`'s hot path): the result, trusted for
 * RECENT_MS, and when the call was last recorded as served, which a busy server does at most every
 * SERVED_EVERY_MS per call.
 */
/** A result this process served lately, and when its served record was last written. */
export interface RecentResult {
  readonly result: CachedResult;
  /** When the result was read from the cache file or computed: it is trusted RECENT_MS from then. */
  readonly seenAt: number;
  markedAt: number;
}

export class RecentResults {
  readonly #recent = new BoundedMap<string, RecentResult>(RECENT_ENTRIES);

  /** The result served for a key in the last moments (read or computed less than RECENT_MS ago), if any. */
  get(key: string, now: number): RecentResult | undefined {
    const recent = this.#recent.get(key);
    return recent && now - recent.seenAt < RECENT_MS ? recent : undefined;
  }

  /** Whether a recent result's served record is due to be written now; if so, it counts as written. */
  due(recent: RecentResult, now: number): boolean {
    if (now >= recent.markedAt && now - recent.markedAt < SERVED_EVERY_MS) return false;
    recent.markedAt = now;
    return true;
  }

  /**
   * Remembers a result just read from the cache file or computed; whether the served record is due to
   * be written (always when `force`: the caller that computed the result records it).
   */
  served(key: string, result: CachedResult, now: number, force = false): boolean {
    const previous = this.#recent.get(key);
    const due = force || !previous || now < previous.markedAt || now - previous.markedAt >= SERVED_EVERY_MS;
    this.#recent.set(key, { result, seenAt: now, markedAt: due ? now : (previous?.markedAt ?? now) });
    return due;
  }

  clear(): void {
    this.#recent.clear();
  }
}
