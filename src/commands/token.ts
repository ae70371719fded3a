import { resolveTokenSecrets } from '../config.js';
import { InputError, SavedqError } from '../errors.js';
import { plural } from '../words.js';
import type { Savedq } from '../library.js';
import { checkValue } from '../queries/params.js';
import type { SavedQuery } from '../queries/types.js';
import { readClaims, secretKeys, signToken, verifyToken, type Scope, type TokenClaims } from '../access/index.js';
import { scopeOf } from '../access/scopes.js';
import type { CommonOptions, Io } from './io.js';

/** Options of `savedq token create`. */
export interface TokenCreateOptions extends CommonOptions {
  readonly name?: string | undefined;
  /** Queries the token opens: names, ids or globs. */
  readonly query: readonly string[];
  /** `k=v` parameters every call of the token is made with; `<query>:k=v` for the calls of one --query only. */
  readonly fix: readonly string[];
  /** Allow a `regex` parameter to be fixed to a pattern not anchored at the start. */
  readonly fixUnanchored?: boolean | undefined;
  readonly ttl?: string | undefined;
  readonly rps?: string | undefined;
  /** The token may send its own SQL over sandboxed queries' answers. */
  readonly sql?: boolean | undefined;
  /** The token may export its queries' whole answers. */
  readonly export?: boolean | undefined;
  readonly tokenSecretFile?: string | undefined;
}

/** A duration such as 90s, 15m, 12h, 30d (a bare number is seconds), in seconds. */
export function parseDuration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(s|m|h|d)?$/.exec(text.trim());
  const seconds = m ? Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86_400 }[(m[2] ?? 's') as 's' | 'm' | 'h' | 'd'] : NaN;
  if (!(seconds >= 1 && seconds <= 10 * 365 * 86_400)) throw new InputError(`invalid --ttl ${JSON.stringify(text)}: a duration such as 90s, 15m, 12h or 30d, at most ten years.`);
  return Math.round(seconds);
}

/**
 * `savedq token create`: signs a token with the first secret. Each --fix must be a declared parameter of
 * every query the scopes match, and a valid value of it; a scope that matches no query is refused.
 */
export async function tokenCreateCommand(lib: Savedq, options: TokenCreateOptions, io: Io, now = Date.now()): Promise<string> {
  const name = options.name ?? '';
  if (name.length < 1 || name.length > 128) throw new InputError('--name is required: who the token is for, 1 to 128 characters.');
  if (options.query.length === 0) throw new InputError('give at least one --query: a saved query name, id or glob (errors.*).');
  const { queries, kept } = await lib.savedQueries();
  const fixes = parseFixes(options.fix, options.query);
  const scopes: Scope[] = options.query.map((query) => {
    const fixed = { ...fixes.get(''), ...fixes.get(query) };
    return { query, ...(Object.keys(fixed).length > 0 ? { fixed_params: fixed } : {}) };
  });
  for (const scope of scopes) {
    const matched = [...queries, ...kept].filter((q) => scopeOf([scope], q));
    if (matched.length === 0) throw new InputError(`--query ${JSON.stringify(scope.query)} matches no saved query; see savedq list.`);
    for (const query of matched) checkFixed(query, scope.fixed_params ?? {}, options.fixUnanchored === true);
  }
  const exp = Math.floor(now / 1000) + parseDuration(options.ttl ?? '24h');
  const rps = options.rps === undefined ? undefined : Number(options.rps);
  if (rps !== undefined && !(rps > 0)) throw new InputError(`invalid --rps ${JSON.stringify(options.rps)}: calls a second, more than 0.`);
  const claims: TokenClaims = { name, iat: Math.floor(now / 1000), exp, scopes, ...(rps !== undefined ? { limits: { rps } } : {}), ...(options.sql === true ? { sql: true } : {}), ...(options.export === true ? { export: true } : {}) };
  const token = await signToken(claims, secretKeys(resolveTokenSecrets(options.tokenSecretFile, io.env)));
  io.stdout.write(`${token}\n`);
  return token;
}

/**
 * The --fix pairs by the --query they are for ('' for every one): `name=value`, or `<query>:name=value`
 * where `<query>` is one of the --query values as given (a query's name holds no ':').
 */
function parseFixes(pairs: readonly string[], queries: readonly string[]): Map<string, Record<string, string>> {
  const fixes = new Map<string, Record<string, string>>();
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const colon = pair.slice(0, Math.max(eq, 0)).indexOf(':');
    const [scope, name] = colon === -1 ? ['', pair.slice(0, eq)] : [pair.slice(0, colon), pair.slice(colon + 1, eq)];
    if (eq <= 0 || name === '') throw new InputError(`invalid --fix ${JSON.stringify(pair)}: expected name=value, or <query>:name=value for one --query.`);
    if (scope !== '' && !queries.includes(scope)) {
      throw new InputError(`--fix ${JSON.stringify(pair)} is for --query ${JSON.stringify(scope)}, which is not given (${queries.map((q) => JSON.stringify(q)).join(', ')}).`);
    }
    fixes.set(scope, { ...fixes.get(scope), [name]: pair.slice(eq + 1) });
  }
  return fixes;
}

/**
 * A fixed value must be one the query's parameter takes, as a URL's value would be checked; a fixed
 * pattern must be anchored at the start, since a pattern matched anywhere pins nothing: `acme-shop`
 * matches acme-shop-2's URLs, and any URL with acme-shop in its path.
 */
function checkFixed(query: SavedQuery, fixed: Readonly<Record<string, string>>, unanchored: boolean): void {
  for (const [param, value] of Object.entries(fixed)) {
    const declared = query.params.find((p) => p.name === param);
    if (!declared) throw new InputError(`--fix ${param}: ${query.name} has no parameter '${param}' (it takes ${query.params.map((p) => p.name).join(', ') || 'none'}).`);
    const checked = checkValue(declared, value);
    if ('reason' in checked) throw new InputError(`--fix ${param}=${value}: not a value of ${query.name}'s '${param}': ${checked.reason}.`);
    if (declared.type === 'regex' && !value.startsWith('^') && !unanchored) {
      const anchored = `^https://${value.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')}\\.`;
      throw new InputError(
        `--fix ${param}=${value}: ${query.name}'s '${param}' is a pattern matched anywhere, so it would also open other projects' rows (${value}-2, a path with ${value} in it); anchor it at the start, e.g. --fix '${param}=${anchored}' for a host, or give --fix-unanchored to mean it.`,
      );
    }
  }
}

/**
 * `savedq token inspect <token>`: its claims, whether it verifies with the configured secrets, and when
 * it expires. Exits 1 when it does not verify, and 2 when no secret says (the claims printed either way).
 */
export async function tokenInspectCommand(token: string, options: { tokenSecretFile?: string | undefined }, io: Io, now = Date.now()): Promise<void> {
  const claims = readClaims(token);
  const secrets = resolveTokenSecrets(options.tokenSecretFile, io.env);
  let failure: SavedqError | undefined;
  let verdict = 'yes';
  if (secrets.length === 0) {
    verdict = 'cannot tell: no token secret is given';
    failure = new InputError("cannot tell whether the token verifies: give the secret serve signs with (--token-secret-file, or SAVEDQ_TOKEN_SECRETS).");
  } else {
    try {
      await verifyToken(token, secretKeys(secrets), Math.floor(now / 1000));
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      verdict = `no: ${reason}`;
      failure = new SavedqError(`the token does not verify: ${reason}`);
    }
  }
  const exp = typeof claims.exp === 'number' ? claims.exp : undefined;
  const expires = exp === undefined ? 'never (no exp: refused)' : `${new Date(exp * 1000).toISOString()} (${exp * 1000 > now ? `in ${spanText(exp * 1000 - now)}` : `${spanText(now - exp * 1000)} ago`})`;
  io.stdout.write(`${JSON.stringify(claims, null, 2)}\nverifies: ${verdict}\nexpires: ${expires}\n`);
  if (failure) throw failure;
}

/** A span of time as a person says it, to its largest unit: `30 days`, `5 h`, `12 min`, `40 s`. */
function spanText(ms: number): string {
  const units: [number, string][] = [[86_400_000, 'day'], [3_600_000, 'h'], [60_000, 'min'], [1000, 's']];
  const [size, unit] = units.find(([u]) => ms >= 2 * u) ?? [1000, 's'];
  const n = Math.round(ms / size);
  return unit === 'day' ? plural(n, 'day') : `${n} ${unit}`;
}
