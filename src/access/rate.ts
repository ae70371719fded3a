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
 * Token buckets, one a caller: `rps` calls a second on average, bursts of up to `rps` (at least 1). A
 * call takes a token; a bucket refills continuously. Buckets of callers not seen for a minute are
 * forgotten (they would be full).
 */
export class RateLimits {
  readonly #buckets = new Map<string, { tokens: number; at: number; rps: number }>();
  readonly #clock: () => number;

  constructor(clock: () => number = Date.now) {
    this.#clock = clock;
  }

  /** Takes one call from a caller's bucket of `rps`. */
  take(caller: string, rps: number): RateState {
    const now = this.#clock();
    const capacity = Math.max(1, rps);
    let bucket = this.#buckets.get(caller);
    if (!bucket || bucket.rps !== rps) {
      bucket = { tokens: capacity, at: now, rps };
      this.#buckets.set(caller, bucket);
    }
    bucket.tokens = Math.min(capacity, bucket.tokens + ((now - bucket.at) / 1000) * rps);
    bucket.at = now;
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    if (this.#buckets.size > 10_000) this.#forget(now);
    return {
      allowed,
      limit: capacity,
      remaining: Math.floor(bucket.tokens),
      resetSeconds: Math.ceil((capacity - bucket.tokens) / rps),
      retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / rps)),
    };
  }

  #forget(now: number): void {
    for (const [caller, bucket] of this.#buckets) if (now - bucket.at > 60_000) this.#buckets.delete(caller);
  }
}
