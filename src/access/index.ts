import { BoundedMap } from '../bounded.js';
import { ForbiddenError, RateLimitedError, UnauthorizedError } from '../errors.js';
import type { SavedQuery } from '../queries/types.js';
import { RateLimits, type RateState, type SharedBuckets } from './rate.js';
import { scopeOf } from './scopes.js';
import { looksLikeToken, verifyToken, type Scope, type TokenClaims } from './tokens.js';

export { readClaims, secretKeys, signToken, verifyToken, type Scope, type TokenClaims } from './tokens.js';
export { withFixed } from './scopes.js';

/** Who is asking: an API key (every query, /metrics) or a signed token (its scopes, its limits). */
export interface Caller {
  readonly kind: 'key' | 'token';
  /** For the access log, metrics and the rate-limit bucket: `key 2`, or the token's name. */
  readonly name: string;
  /** The name as the access log writes it: quoted, escaped (a token's name is anyone's text). */
  readonly quoted: string;
  readonly scopes?: readonly Scope[];
  /** Calls a second, when the caller is limited. */
  readonly rps?: number;
  /** When a token stops being valid (seconds since the epoch). */
  readonly exp?: number;
  /** A token made with --sql: it may send SQL to sandboxed queries (a key always may). */
  readonly sql?: boolean;
  /** A token made with --export: it may export its queries' whole answers (a key always may). */
  readonly export?: boolean;
}

/** How `serve` decides who may call what (README, "Handing serve to others"): decided here, for HTTP (and MCP). */
export interface AccessOptions {
  /** Checks a presented API key in constant time: its index, or undefined. */
  readonly isKey: (presented: string) => number | undefined;
  /** The token secrets as keys (the first signs, every one verifies); none: tokens are refused. */
  readonly secrets: readonly Uint8Array[];
  /** Calls a second for every caller without a limit of its own (--rate-limit); undefined: none. */
  readonly rateLimit?: number | undefined;
  /** The buckets the processes sharing a store keep of each caller: limits that hold across replicas. */
  readonly sharedBuckets?: SharedBuckets | undefined;
  readonly clock?: () => number;
}

/** Verified tokens remembered until they expire, so a token costs its verification once (at most this many). */
const VERIFIED_TOKENS = 10_000;
/** A refused token is refused again without verifying it for this long (one not yet valid may become so). */
const REFUSED_FOR_MS = 10_000;
/**
 * What is remembered of tokens (verified, refused), at most `max` of them. A token is looked up by its
 * last characters, the end of its signature, then compared whole: hashing all of a token (some 250
 * characters) for the lookup costs every request more than the rest of its lookup. Two tokens that
 * verify share such an end only if their HMAC-SHA256 signatures share 132 bits; a credential made to
 * share one is compared, found different, and decided as any other.
 */
class ByToken<V> {
  static readonly TAIL = 22;
  readonly #entries: BoundedMap<string, { readonly token: string; readonly value: V }>;

  constructor(max: number) {
    this.#entries = new BoundedMap(max);
  }

  get(token: string): V | undefined {
    const entry = this.#entries.get(token.slice(-ByToken.TAIL));
    return entry?.token === token ? entry.value : undefined;
  }

  set(token: string, value: V): void {
    this.#entries.set(token.slice(-ByToken.TAIL), { token, value });
  }
}

/** What a caller may do with a query it may call: the parameters fixed for it. */
export interface Grant {
  /** By the parameter's name: a Map, as every map of names a caller sends (`constructor` is a name too). */
  readonly fixed: ReadonlyMap<string, string>;
  /** Whether the caller may send its own SQL over the query's answer, when the query is sandboxed. */
  readonly sql: boolean;
}

/**
 * The one rule of who sees what: whether a caller may call a query, and with which parameters fixed.
 * An API key, and a local agent (no caller: `savedq mcp`), every query with none; a token, the queries
 * its scopes open, with the first matching scope's fixed parameters, and SQL of its own only when made
 * with --sql. HTTP's calls and MCP's tool list both ask here.
 */
export function grantOf(caller: Caller | undefined, query: Pick<SavedQuery, 'name' | 'id' | 'version'>): Grant | undefined {
  if (caller === undefined || caller.kind === 'key') return NOTHING_FIXED;
  const scope = scopeOf(caller.scopes ?? [], query);
  return scope ? { fixed: fixedOf(scope), sql: caller.sql === true } : undefined;
}

const NOTHING_FIXED: Grant = { fixed: new Map(), sql: true };

/** A scope's fixed parameters as a Map, made once a scope (a verified token's are kept while it is). */
const fixedMaps = new WeakMap<object, ReadonlyMap<string, string>>();
function fixedOf(scope: { readonly fixed_params?: Readonly<Record<string, string>> | undefined }): ReadonlyMap<string, string> {
  let fixed = fixedMaps.get(scope);
  if (fixed === undefined) {
    fixed = new Map(Object.entries(scope.fixed_params ?? {}));
    fixedMaps.set(scope, fixed);
  }
  return fixed;
}

/** Decides who a request's credential is, what it may call, with which fixed parameters, and how often. */
export class Access {
  readonly #options: AccessOptions;
  readonly #clock: () => number;
  readonly #limits: RateLimits;
  readonly #verified = new ByToken<Caller>(VERIFIED_TOKENS);
  readonly #refused = new ByToken<{ message: string; until: number }>(VERIFIED_TOKENS);
  readonly #keyCallers: Caller[] = [];

  constructor(options: AccessOptions) {
    this.#options = options;
    this.#clock = options.clock ?? Date.now;
    this.#limits = new RateLimits(this.#clock, options.sharedBuckets);
  }

  /**
   * The caller of a credential, from what was verified before when it is still valid (synchronous:
   * serve's hot path), else undefined.
   */
  known(credential: string | undefined): Caller | undefined {
    if (credential === undefined || credential === '') return undefined;
    // A token verified before is found by its text first (a token holds dots: a key without any is not
    // looked up); comparing with every key, in constant time, is for the rest.
    const verified = credential.includes('.') ? this.#verified.get(credential) : undefined;
    if (verified && (verified.exp ?? 0) > this.#clock() / 1000) return verified;
    const index = this.#options.isKey(credential);
    return index === undefined ? undefined : this.#keyCaller(index);
  }

  /**
   * The caller of a credential: an API key, or a token that verifies; else an UnauthorizedError saying
   * why. Decided at once (the caller returned, the error thrown) for a key, a token verified or refused
   * before, and a credential that is neither a key nor shaped as a token; a token not seen before is
   * verified in a promise.
   */
  authenticate(credential: string | undefined): Caller | Promise<Caller> {
    if (credential === undefined || credential === '') throw new UnauthorizedError('no credential: send an API key or a token in X-API-KEY or Authorization: Bearer.');
    const known = this.known(credential);
    if (known) return known;
    if (hasWhitespace(credential)) throw new UnauthorizedError('the credential holds whitespace: send the key or the token alone.');
    if (!looksLikeToken(credential)) throw new UnauthorizedError('unknown API key.');
    if (this.#options.secrets.length === 0) throw new UnauthorizedError('unknown API key, and this server takes no tokens (no token secret is configured).');
    // A token refused a moment ago is refused again without verifying it: a flood of bad tokens costs a lookup each.
    const refused = this.#refused.get(credential);
    if (refused && refused.until > this.#clock()) throw new UnauthorizedError(refused.message);
    return this.#verify(credential);
  }

  /** A token's caller once its signature and claims verify (remembered either way, for a while). */
  async #verify(credential: string): Promise<Caller> {
    let claims: TokenClaims;
    try {
      claims = await verifyToken(credential, this.#options.secrets, Math.floor(this.#clock() / 1000));
    } catch (err) {
      if (err instanceof UnauthorizedError) {
        this.#refused.set(credential, { message: err.message, until: this.#clock() + REFUSED_FOR_MS });
      }
      throw err;
    }
    const caller = tokenCaller(claims, this.#options.rateLimit);
    this.#verified.set(credential, caller);
    return caller;
  }

  /** An API key's caller, made once (serve's hot path allocates nothing for it). */
  #keyCaller(index: number): Caller {
    let caller = this.#keyCallers[index];
    if (!caller) {
      const rps = this.#options.rateLimit;
      caller = { kind: 'key', name: `key ${index + 1}`, quoted: `"key ${index + 1}"`, ...(rps !== undefined ? { rps } : {}) };
      this.#keyCallers[index] = caller;
    }
    return caller;
  }

  /** /metrics is an API key's. */
  authorizeMetrics(caller: Caller): void {
    if (caller.kind !== 'key') throw new ForbiddenError('/metrics takes an API key, not a token.');
  }

  /** Takes one call from a limited caller's bucket: its state (undefined for a caller without a limit). */
  limit(caller: Caller): RateState | undefined {
    return caller.rps === undefined ? undefined : this.#limits.take(caller.name, caller.rps);
  }

  /** The refusal of a call past its caller's limit. */
  refusal(caller: Caller, state: RateState): RateLimitedError {
    return new RateLimitedError(`${caller.kind === 'key' ? 'this key' : 'this token'} is past its rate limit of ${caller.rps ?? 0} calls a second.`, state.retryAfterSeconds);
  }
}

function tokenCaller(claims: TokenClaims, rateLimit: number | undefined): Caller {
  const rps = claims.limits?.rps ?? rateLimit;
  return { kind: 'token', name: claims.name, quoted: JSON.stringify(claims.name), scopes: claims.scopes, exp: claims.exp, ...(rps !== undefined ? { rps } : {}), ...(claims.sql === true ? { sql: true } : {}), ...(claims.export === true ? { export: true } : {}) };
}

/**
 * Whether a credential holds whitespace (what `\s` matches in a header's value): a space, a tab or a
 * no-break space, the only whitespace a value can hold, since Node's parser refuses the other control
 * characters and gives a value's bytes one character each (none past U+00FF). Looked for a character
 * at a time, which V8 does as memchr does (`/\s/` over a token of 250 characters: 2,500 instructions).
 */
function hasWhitespace(value: string): boolean {
  return value.includes(' ') || value.includes('\t') || value.includes('\u00a0');
}
