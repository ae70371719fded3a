/** What a limited caller is told on every answer (the IETF RateLimit header fields), and on a refusal when to try again. */
export interface RateState {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  /** Seconds until the bucket is full again. */
  readonly resetSeconds: number;
  /** Seconds until one more call is allowed (whole, at least 1), when refused. */
  readonly retryAfterSeconds: number;
}

/**
 * What the processes sharing a store keep of each caller's bucket: takes `used` calls from it and says
 * what is left (below zero: owed), or undefined when the store does not answer.
 */
export type SharedBuckets = (bucket: string, used: number, rps: number, burst: number) => Promise<{ tokens: number } | undefined>;

/** How often a process tells the shared buckets what its callers took, and learns what is left. */
const SHARE_EVERY_MS = 100;

/**
 * Token buckets, one a caller: `rps` calls a second on average, bursts of up to `rps` (at least 1). A
 * call takes a token; a bucket refills continuously. Buckets of callers not seen for a minute are
 * forgotten (they would be full).
 *
 * With `shared` (several serve replicas on one store, docs/scaling.md), a caller's bucket is the fleet's:
 * each process decides at once from its own copy, and every tenth of a second hands the store what
 * its callers took and takes back what is left of their shared buckets, owed tokens included. So a
 * caller sent to every replica in turn gets its limit across them (what one tenth of a second lets
 * through twice is paid back after), not once a replica. A caller new to a process has its burst
 * there at once: the first burst a replica gives it is paid back in the same way.
 */
export class RateLimits {
  readonly #buckets = new Map<string, { tokens: number; at: number; rps: number; used: number }>();
  readonly #clock: () => number;
  readonly #shared: SharedBuckets | undefined;
  #sharing: NodeJS.Timeout | undefined;

  constructor(clock: () => number = Date.now, shared?: SharedBuckets) {
    this.#clock = clock;
    this.#shared = shared;
  }

  /** Takes one call from a caller's bucket of `rps`. */
  take(caller: string, rps: number): RateState {
    const now = this.#clock();
    const capacity = Math.max(1, rps);
    let bucket = this.#buckets.get(caller);
    if (!bucket || bucket.rps !== rps) {
      bucket = { tokens: capacity, at: now, rps, used: 0 };
      this.#buckets.set(caller, bucket);
    }
    bucket.tokens = Math.min(capacity, bucket.tokens + ((now - bucket.at) / 1000) * rps);
    bucket.at = now;
    const allowed = bucket.tokens >= 1;
    if (allowed) {
      bucket.tokens -= 1;
      bucket.used += 1;
      this.#share();
    }
    if (this.#buckets.size > 10_000) this.#forget(now);
    return {
      allowed,
      limit: capacity,
      remaining: Math.max(0, Math.floor(bucket.tokens)),
      resetSeconds: Math.ceil((capacity - bucket.tokens) / rps),
      retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / rps)),
    };
  }

  /** Hands the store what was taken, a tenth of a second from now (one statement a caller a tenth). */
  #share(): void {
    if (!this.#shared || this.#sharing) return;
    this.#sharing = setTimeout(() => void this.#exchange(), SHARE_EVERY_MS);
    this.#sharing.unref();
  }

  async #exchange(): Promise<void> {
    const shared = this.#shared as SharedBuckets;
    for (const [caller, bucket] of this.#buckets) {
      if (bucket.used === 0) continue;
      const used = bucket.used;
      bucket.used = 0;
      const left = await shared(`rate:${caller}`, used, bucket.rps, Math.max(1, bucket.rps)).catch(() => undefined);
      // What the fleet has left, less what was taken here since the store was asked.
      if (left) {
        bucket.tokens = left.tokens - bucket.used;
        bucket.at = this.#clock();
      }
    }
    this.#sharing = undefined;
    if ([...this.#buckets.values()].some((b) => b.used > 0)) this.#share();
  }

  #forget(now: number): void {
    for (const [caller, bucket] of this.#buckets) if (now - bucket.at > 60_000 && bucket.used === 0) this.#buckets.delete(caller);
  }
}
