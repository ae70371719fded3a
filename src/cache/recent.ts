import { SizedCache } from '../bounded.js';
import type { CachedResult } from './index.js';

/**
 * How long this process trusts a result it has just seen without asking the cache file again. Short, so
 * a result another process (a cron warm) refreshed is picked up within seconds.
 */
const RECENT_MS = 2_000;
const RECENT_ENTRIES = 1_000;
/** The warm set needs "served in the last 900 s": a record every 30 s per call is plenty. */
const SERVED_EVERY_MS = 30_000;

/** Whether `now` is less than `ms` after `since`: a clock set back meanwhile counts as past it. */
const within = (since: number, now: number, ms: number): boolean => now >= since && now - since < ms;

/** A result this process served lately, and when its served record was last written. */
export interface RecentResult {
  readonly result: CachedResult;
  /** About the bytes its rows take in memory (sizeOfValue). */
  readonly bytes: number;
  /** When the result was read from the cache file or computed: it is trusted RECENT_MS from then. */
  readonly seenAt: number;
  markedAt: number;
  /** The cache file is being read again for it (it is past RECENT_MS). */
  rereading: boolean;
}

/**
 * What this process served lately, by cache key (`serve`'s hot path): the result, trusted for
 * RECENT_MS, and when the call was last recorded as served, which a busy server does at most every
 * SERVED_EVERY_MS per call. Past RECENT_MS a result is still answered while it is fresh, and the cache
 * file is read again meanwhile, once: no request waits for the file while an answer is at hand (under
 * load, the one that did waited behind every other request of a few turns of the event loop).
 */
export class RecentResults {
  readonly #recent: SizedCache<string, RecentResult>;

  /**
   * At most `maxBytes` of rows (as sizeOfValue counts them) and RECENT_ENTRIES results: past either,
   * the least recently used go first; a result larger than the whole is not kept (each call of it
   * reads the cache file).
   */
  constructor(readonly maxBytes: number) {
    this.#recent = new SizedCache(RECENT_ENTRIES, maxBytes, (recent) => recent.bytes);
  }

  /** What the results kept take now, about. */
  get bytes(): number {
    return this.#recent.size;
  }

  /** The result served for a key lately, if any, however long ago it was read (see `reread`). */
  get(key: string): RecentResult | undefined {
    return this.#recent.get(key);
  }

  /** Whether the cache file is to be read again for a recent result now (past RECENT_MS); if so, it counts as being read. */
  reread(recent: RecentResult, now: number): boolean {
    if (recent.rereading || within(recent.seenAt, now, RECENT_MS)) return false;
    recent.rereading = true;
    return true;
  }

  /** Whether a recent result's served record is due to be written now; if so, it counts as written. */
  due(recent: RecentResult, now: number): boolean {
    if (within(recent.markedAt, now, SERVED_EVERY_MS)) return false;
    recent.markedAt = now;
    return true;
  }

  /**
   * Remembers a result just read from the cache file, whose served record the file says was written at
   * `markedAt` (by this process or another): a run of the CLI a second then writes nothing.
   */
  read(key: string, result: CachedResult, now: number, markedAt: number | undefined): void {
    this.#recent.set(key, { result, bytes: sizeOfValue(result.rows), seenAt: now, markedAt: markedAt ?? Number.NEGATIVE_INFINITY, rereading: false });
  }

  /**
   * Remembers a result just read from the cache file or computed; whether the served record is due to
   * be written (always when `force`: the caller that computed the result records it).
   */
  served(key: string, result: CachedResult, now: number, force = false): boolean {
    const previous = this.#recent.get(key);
    const due = force || !previous || !within(previous.markedAt, now, SERVED_EVERY_MS);
    const bytes = previous?.result === result ? previous.bytes : sizeOfValue(result.rows);
    this.#recent.set(key, { result, bytes, seenAt: now, markedAt: due ? now : (previous?.markedAt ?? now), rereading: false });
    return due;
  }

  /** Forgets a key's result (the cache file no longer holds it fresh). */
  forget(key: string): void {
    this.#recent.delete(key);
  }

  clear(): void {
    this.#recent.clear();
  }
}

/**
 * About the bytes a value read from JSON takes in memory: a text two bytes a character, a number or a
 * flag eight, and a little for each object, array and key. Not exact (V8 does not say): near enough to
 * bound what is kept by what it weighs, not by how many.
 */
export function sizeOfValue(value: unknown): number {
  if (typeof value === 'string') return 16 + 2 * value.length;
  if (Array.isArray(value)) {
    let size = 16 + 8 * value.length;
    for (const item of value) size += sizeOfValue(item);
    return size;
  }
  if (value !== null && typeof value === 'object') {
    let size = 32;
    for (const key in value) size += 16 + 2 * key.length + sizeOfValue((value as Record<string, unknown>)[key]);
    return size;
  }
  return 8;
}
