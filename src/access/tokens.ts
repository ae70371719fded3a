import type * as Jose from 'jose';
import { InputError, UnauthorizedError } from '../errors.js';
import { lazyRequire } from '../lazy.js';

/** jose (JWS with HS256): loaded by serve and `token` only, a bundle of its own (never on a run's path). */
const jose = lazyRequire<typeof Jose>('jose', 'jose.cjs');

/** The one algorithm savedq signs and accepts: HMAC with SHA-256 over a shared secret (at least 32 bytes: config.ts). */
const ALGORITHM = 'HS256';

/** One scope of a token: the queries it opens (a name, an id or a glob such as `errors.*`), and the parameters it fixes. */
export interface Scope {
  readonly query: string;
  readonly fixed_params?: Readonly<Record<string, string>>;
}

/** What a signed token says (README, "Handing serve to others"). */
export interface TokenClaims {
  /** Who it is for: in the access log and metrics, and its rate-limit bucket. */
  readonly name: string;
  readonly exp: number;
  readonly nbf?: number;
  readonly iat?: number;
  readonly scopes: readonly Scope[];
  readonly limits?: { readonly rps?: number };
  /** The token may send its own SQL over a sandboxed query's answer (`token create --sql`). */
  readonly sql?: boolean;
  /** The token may export its queries' whole answers (`token create --export`, CONTRACT §19). */
  readonly export?: boolean;
}

/** The secrets of the configuration as keys: the first signs, every one verifies (rotation without a gap). */
export function secretKeys(secrets: readonly string[]): Uint8Array[] {
  return secrets.map((s) => new TextEncoder().encode(s));
}

/** The claims of a payload, checked: an UnauthorizedError saying what is wrong. */
function checkClaims(payload: Record<string, unknown>): TokenClaims {
  const { name, exp, scopes, limits, sql } = payload;
  if (sql !== undefined && typeof sql !== 'boolean') throw new UnauthorizedError('the token has an sql claim that is not true or false.');
  if (payload.export !== undefined && typeof payload.export !== 'boolean') throw new UnauthorizedError('the token has an export claim that is not true or false.');
  if (typeof name !== 'string' || name.length < 1 || name.length > 128) throw new UnauthorizedError('the token has no name of 1 to 128 characters.');
  if (typeof exp !== 'number') throw new UnauthorizedError('the token has no expiry (exp).');
  if (!Array.isArray(scopes) || scopes.length === 0) throw new UnauthorizedError('the token has no scopes.');
  for (const scope of scopes as unknown[]) {
    const s = scope as Record<string, unknown> | null;
    if (typeof s !== 'object' || s === null || typeof s.query !== 'string' || s.query === '') throw new UnauthorizedError('a scope of the token names no query.');
    const fixed = s.fixed_params;
    if (fixed !== undefined && (typeof fixed !== 'object' || fixed === null || Array.isArray(fixed) || Object.values(fixed).some((v) => typeof v !== 'string'))) {
      throw new UnauthorizedError('a scope of the token has fixed parameters that are not texts.');
    }
  }
  if (limits !== undefined) {
    const rps = typeof limits === 'object' && limits !== null ? (limits as { rps?: unknown }).rps : undefined;
    if (typeof limits !== 'object' || limits === null || (rps !== undefined && (typeof rps !== 'number' || !(rps > 0)))) throw new UnauthorizedError('the token has limits that are not a positive rps.');
  }
  return payload as unknown as TokenClaims;
}

/**
 * Verifies a token with every configured secret (HS256 only: `none` and every other algorithm are
 * refused), its times with `now` (seconds), and its claims. A failure is an UnauthorizedError that says
 * why ("token expired"), never which secret was tried.
 */
export async function verifyToken(token: string, keys: readonly Uint8Array[], now = Math.floor(Date.now() / 1000)): Promise<TokenClaims> {
  const { jwtVerify, errors } = jose();
  let lastError: unknown;
  for (const key of keys) {
    try {
      const { payload } = await jwtVerify(token, key, { algorithms: [ALGORITHM], currentDate: new Date(now * 1000), requiredClaims: ['exp'] });
      return checkClaims(payload);
    } catch (err) {
      if (err instanceof UnauthorizedError) throw err;
      lastError = err;
      // Only a signature that does not verify is worth trying with the next secret.
      if (!(err instanceof errors.JWSSignatureVerificationFailed)) break;
    }
  }
  throw new UnauthorizedError(reasonOf(lastError, errors));
}

function reasonOf(err: unknown, errors: typeof Jose.errors): string {
  if (err instanceof errors.JWTExpired) return 'token expired.';
  if (err instanceof errors.JWTClaimValidationFailed && err.claim === 'nbf') return 'token not yet valid.';
  if (err instanceof errors.JWTClaimValidationFailed && err.claim === 'exp') return 'the token has no expiry (exp).';
  if (err instanceof errors.JOSEAlgNotAllowed) return 'the token is not signed with HS256.';
  if (err instanceof errors.JWSSignatureVerificationFailed) return "the token's signature does not verify.";
  return 'the token is malformed.';
}

/** Signs claims with the first secret (`savedq token create`). */
export async function signToken(claims: TokenClaims, keys: readonly Uint8Array[]): Promise<string> {
  const [key] = keys;
  if (!key) throw new InputError('no token secret: give --token-secret-file or SAVEDQ_TOKEN_SECRETS.');
  const { SignJWT } = jose();
  return new SignJWT({ ...claims }).setProtectedHeader({ alg: ALGORITHM, typ: 'JWT' }).sign(key);
}

/** A token's claims without verifying it (`savedq token inspect` shows them beside whether it verifies). */
export function readClaims(token: string): Record<string, unknown> {
  try {
    return jose().decodeJwt(token);
  } catch {
    throw new InputError('not a token: expected a JWT (three base64url parts separated by dots).');
  }
}

/** Whether a credential looks like a JWT rather than an API key (three base64url parts). */
export function looksLikeToken(credential: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(credential);
}
