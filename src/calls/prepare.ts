import { cacheKey, type CachedCall } from '../cache/index.js';
import { grantOf, withFixed, type Caller } from '../access/index.js';
import { ForbiddenError, InputError, SandboxDisabledError, SandboxRefusedError } from '../errors.js';
import { argumentsAsParams } from '../queries/arguments.js';
import { askedVersion, callRef, VERSION_HEADER } from '../queries/version-ref.js';
import type { QueryCatalog } from '../queries/catalog.js';
import { checkPatterns, normaliseParams, quoteValue, type PatternMemo, type RawParams } from '../queries/params.js';
import type { NormalisedParams, SavedQuery } from '../queries/types.js';
import { isoTimestampProblem, parseIsoTimestamp, storedAsOf, type AsOf, type Micros } from '../time.js';

/** A request to run a saved query, as a surface received it. */
export interface CallRequest {
  /** The saved query's name or id (`@N` for a version of it). */
  readonly nameOrId: string;
  /** The version asked apart from the name (HTTP's Savedq-Version, MCP's argument); absent: the current one. */
  readonly version?: number | undefined;
  /**
   * Whether a parameter `version` the query does not declare asks for a version (HTTP's ?version=):
   * a query with a parameter of that name takes it as its own, and is pinned by the header.
   */
  readonly versionInParams?: boolean | undefined;
  readonly params: RawParams;
  /** Parameters as JSON (an MCP tool call's arguments, a POST body's params), read once the query is found. */
  readonly arguments?: Readonly<Record<string, unknown>> | undefined;
  /** The instant to run the query as of; absent: now. */
  readonly at?: AsOf;
  /**
   * Who asks, when a surface authenticated someone (serve's keys and tokens): a token calls only the
   * queries its scopes open, with their fixed parameters. Absent: this machine's own user, every query.
   */
  readonly caller?: Caller | undefined;
  /** The caller's own SELECT over the query's answer (a sandboxed query's: docs/sandboxing.md). */
  readonly sql?: string | undefined;
}

/**
 * A call checked against its saved query, everything a run needs decided once: the query, every
 * parameter checked (patterns included) and normalised, the instant, and its cache key.
 */
export interface PreparedCall {
  readonly query: SavedQuery;
  readonly params: NormalisedParams;
  /** The instant given with --at, or undefined for "the time the query runs". */
  readonly at: Micros | undefined;
  /** The caller's SQL over the answer as the engine spells it, checked; absent: the query's own rows. */
  readonly sql?: string | undefined;
  /** The call as the cache records it, and its key there. */
  readonly cached: CachedCall;
  readonly key: string;
}

/** Checks a caller's SQL on the engine's parse (sandbox/check.ts): the engine's spelling of it, or the refusal thrown. */
export type SqlCheck = (sql: string) => Promise<string>;

/** The data a call reads: its source (Config.source) and the generation of its data now. */
export interface DataSource {
  readonly name: string;
  readonly generation: string;
}

/** The instant a call runs as of (--at), checked: undefined for "now", an InputError for text that is no ISO 8601 instant. */
export function asOfMicros(at: AsOf): Micros | undefined {
  if (at === undefined) return undefined;
  const micros = parseIsoTimestamp(at);
  if (micros === undefined) throw new InputError(`invalid --at ${quoteValue(at)}: expected ${isoTimestampProblem(at)}.`);
  return micros;
}

/**
 * Checks a request against the saved queries, for a data source (whose results, as of its data's
 * generation, the call's cache key names), without running anything: an unknown query is a
 * NotFoundError, one the caller may not call a ForbiddenError (as is a fixed parameter given another
 * value), a bad value an InputError, a broken definition a DefinitionError. A caller's SQL is checked
 * (`checkSql`) after everything else: SQL for a query that is not sandboxed is a SandboxDisabledError,
 * from a token made without --sql a ForbiddenError.
 */
export async function prepareCall(catalog: QueryCatalog, source: DataSource, asked: CallRequest, patterns?: PatternMemo, checkSql?: SqlCheck): Promise<PreparedCall> {
  const request = await withVersionAsked(catalog, asked);
  const query = await catalog.find(request.nameOrId, request.version);
  const grant = grantOf(request.caller, query);
  if (!grant) throw new ForbiddenError(`the token does not open ${query.name}.`);
  if (request.sql !== undefined) {
    if (!query.sandbox) throw new SandboxDisabledError(`${query.name} takes no SQL of yours: it is not sandboxed (its author may add sandbox: true to its header).`);
    if (!grant.sql) throw new ForbiddenError('this token may not send SQL (it was made without --sql).');
  }
  const given = request.arguments === undefined ? request.params : [...request.params, ...argumentsAsParams(query, request.arguments)];
  const params = normaliseParams(query, withFixed(given, grant.fixed));
  await checkPatterns(query, params, patterns);
  const at = asOfMicros(request.at);
  let sql: string | undefined;
  if (request.sql !== undefined) {
    if (!checkSql) throw new SandboxDisabledError('this surface takes no SQL.');
    try {
      sql = await checkSql(request.sql);
    } catch (err) {
      // The check is remembered by text, its refusal too: each call's refusal names its own query.
      throw err instanceof SandboxRefusedError ? Object.assign(new SandboxRefusedError(err.message), { query: query.name }) : err;
    }
  }
  const cached: CachedCall = {
    source: source.name,
    query: callRef(query),
    digest: query.digest,
    params,
    at: storedAsOf(at),
    ...(source.generation === '' ? {} : { generation: source.generation }),
    ...(sql === undefined ? {} : { sql }),
  };
  return { query, params, at, ...(sql === undefined ? {} : { sql }), cached, key: cacheKey(cached) };
}

/** The request with the version its `version` parameter asks for (when it may ask one) taken out of its parameters. */
async function withVersionAsked(catalog: QueryCatalog, request: CallRequest): Promise<CallRequest> {
  if (request.versionInParams !== true) return request;
  const asked = request.params.filter(([name]) => name === 'version');
  if (asked.length === 0) return request;
  const query = await catalog.find(request.nameOrId, request.version);
  if (query.params.some((p) => p.name === 'version')) return request;
  if (asked.length > 1) throw new InputError('version is given twice; give it once.');
  const version = askedVersion(asked[0]?.[1] ?? '', 'version');
  if (request.version !== undefined && request.version !== version) throw new InputError(`two versions asked: ${version} (version=) and ${request.version} (${VERSION_HEADER}); ask one.`);
  return { ...request, version, params: request.params.filter(([name]) => name !== 'version') };
}

/**
 * A prepared call with SQL over its answer that savedq checked itself (an alert's condition): the
 * query need not be sandboxed, as the alert's author is the queries folder's, not a caller.
 */
export function withSqlOver(call: PreparedCall, sql: string): PreparedCall {
  const cached: CachedCall = { ...call.cached, sql };
  return { ...call, sql, cached, key: cacheKey(cached) };
}
