import { cacheKey, type CachedCall } from '../cache/index.js';
import { grantOf, withFixed, type Caller } from '../access/index.js';
import { ForbiddenError, InputError } from '../errors.js';
import type { QueryCatalog } from '../queries/catalog.js';
import { checkPatterns, normaliseParams, quoteValue, type PatternMemo, type RawParams } from '../queries/params.js';
import type { NormalisedParams, SavedQuery } from '../queries/types.js';
import { parseIsoTimestamp, storedAsOf, type AsOf, type Micros } from '../time.js';

/** A request to run a saved query, as a surface received it. */
export interface CallRequest {
  /** The saved query's name or id. */
  readonly nameOrId: string;
  readonly params: RawParams;
  /** The instant to run the query as of; absent: now. */
  readonly at?: AsOf;
  /**
   * Who asks, when a surface authenticated someone (serve's keys and tokens): a token calls only the
   * queries its scopes open, with their fixed parameters. Absent: this machine's own user, every query.
   */
  readonly caller?: Caller | undefined;
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
  /** The call as the cache records it, and its key there. */
  readonly cached: CachedCall;
  readonly key: string;
}

/** The data a call reads: its source (Config.source) and the generation of its data now. */
export interface DataSource {
  readonly name: string;
  readonly generation: string;
}

/**
 * Checks a request against the saved queries, for a data source (whose results, as of its data's
 * generation, the call's cache key names), without running anything: an unknown query is a
 * NotFoundError, one the caller may not call a ForbiddenError (as is a fixed parameter given another
 * value), a bad value an InputError, a broken definition a DefinitionError.
 */
export async function prepareCall(catalog: QueryCatalog, source: DataSource, request: CallRequest, patterns?: PatternMemo): Promise<PreparedCall> {
  const query = await catalog.find(request.nameOrId);
  const grant = grantOf(request.caller, query);
  if (!grant) throw new ForbiddenError(`the token does not open ${query.name}.`);
  const params = normaliseParams(query, withFixed(request.params, grant.fixed));
  await checkPatterns(query, params, patterns);
  let at: Micros | undefined;
  if (request.at !== undefined) {
    at = parseIsoTimestamp(request.at);
    if (at === undefined) {
      throw new InputError(`invalid --at ${quoteValue(request.at)}: expected an ISO 8601 timestamp such as 2026-01-31T12:00:00Z.`);
    }
  }
  const cached: CachedCall = {
    source: source.name,
    query: query.id,
    digest: query.digest,
    params,
    at: storedAsOf(at),
    ...(source.generation === '' ? {} : { generation: source.generation }),
  };
  return { query, params, at, cached, key: cacheKey(cached) };
}
