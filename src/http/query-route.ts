import { askedVersion, sunsetHeaders, VERSION_HEADER } from '../queries/version-ref.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ageSeconds, answerFactsOf, fromCache } from '../calls/answer.js';
import { outcomeNames } from '../calls/outcomes.js';
import { BoundedMap, SizedCache } from '../bounded.js';
import { addressOf, addressOfTarget, QUERY_PREFIX } from './paths.js';
import type { Access, Caller } from '../access/index.js';
import { InputError, UnsupportedMediaTypeError } from '../errors.js';
import { SQL_PARAM } from '../queries/sql.js';
import type { PreparedCall, RunResult, Savedq } from '../library.js';
import { render } from '../output/index.js';
import type { RawParams } from '../queries/params.js';
import { JSON_TYPE } from './answers.js';
import type { Metrics } from './metrics.js';
import { READ_METHODS, readBody, type Answered, type RequestContext, type Route, type RouteRequest } from './route.js';


/** Calls kept prepared, by path and query string: for each API key, and for each token (of which there may be thousands). */
const PREPARED_CALLS = 1_000;
const PREPARED_CALLS_A_TOKEN = 64;
/** The largest body a POST to a query may send (docs/sandboxing.md). */
const MAX_POST_BYTES = 1024 * 1024;
/** The JSON renderer takes no width or colour. */
const BODY_OPTIONS = { fields: [], color: false, width: undefined };
/** Results whose rows' JSON is kept, by their call's key (the result of the instant it was computed), at most. */
const BODIES_KEPT = 1_000;

/**
 * An answer's body but its facts: the rows as `run -f json` prints them, made once a result (a result
 * is its key's computed at an instant: the same rows whoever serves them). The facts (calls/answer.ts:
 * truncated, cached, age_seconds, statistics) close it per request, as MCP's result says them.
 */
interface Body {
  /** When the result was computed: a body is its call's result of that instant. */
  readonly computedAt: number;
  readonly head: string;
  /** Its length in bytes. */
  readonly bytes: number;
  /** The whole body last sent, by its facts: a busy server sends the same one for a second. */
  last?: Whole;
}

interface Whole {
  readonly age: number;
  /** Computed now, from the cache, or stale (calls/answer.ts's facts differ in each). */
  readonly from: 'now' | 'cache' | 'stale';
  readonly text: string;
  readonly length: string;
}

/**
 * A body whole: its head, then its facts at `now` (their JSON, its opening brace left out: the head has
 * the envelope's). Only its age and where it came from change while it is served: the
 * facts are made again when either does (a busy server sends the same whole body for a second).
 */
function wholeBody(body: Body, result: RunResult, now: number): Whole {
  const age = ageSeconds(result.computedAt, now);
  const from = result.cache === 'stale' ? 'stale' : fromCache(result) ? 'cache' : 'now';
  const last = body.last;
  if (last !== undefined && last.age === age && last.from === from) return last;
  const tail = JSON.stringify(answerFactsOf(result, now)).slice(1);
  return (body.last = { age, from, text: body.head + tail, length: String(body.bytes + Buffer.byteLength(tail)) });
}

/**
 * A caller's prepared calls by path and query string (at most `max`), the one found last looked at
 * first: a busy caller asks the same call again and again, and comparing its address with the last
 * one's costs less than hashing it for the map, which a new string each request needs.
 */
class PreparedCalls {
  readonly #calls: BoundedMap<string, PreparedCall>;
  #last: { readonly address: string; readonly call: PreparedCall } | undefined;

  constructor(max: number) {
    this.#calls = new BoundedMap(max);
  }

  find(address: string): PreparedCall | undefined {
    const last = this.#last;
    if (last !== undefined && last.address === address) return last.call;
    const call = this.#calls.get(address);
    if (call !== undefined) this.#last = { address, call };
    return call;
  }

  remember(address: string, call: PreparedCall): void {
    this.#calls.set(address, call);
    this.#last = { address, call };
  }
}

/**
 * Parses a query string strictly: `+` is a space, bad percent-encoding is an error (URLSearchParams
 * would silently keep it), and repeated names are kept so the library can refuse them.
 */
export function parseQueryString(search: string): RawParams {
  if (search === '') return [];
  return search.split('&').filter((part) => part !== '').map((part) => {
    const eq = part.indexOf('=');
    const [rawName, rawValue] = eq < 0 ? [part, ''] : [part.slice(0, eq), part.slice(eq + 1)];
    return [decode(rawName), decode(rawValue)] as const;
  });
}

export function decode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    throw new InputError('the query string has bad percent-encoding.');
  }
}

/** A query string's parameters, and the caller's SQL (`sql=`, once at most) apart from them. */
export function splitSql(search: string): [RawParams, string | undefined] {
  const pairs = parseQueryString(search);
  const sql = pairs.filter(([name]) => name === SQL_PARAM);
  if (sql.length > 1) throw new InputError(`${SQL_PARAM} is given ${sql.length} times; give it once.`);
  return [pairs.filter(([name]) => name !== SQL_PARAM), sql[0]?.[1]];
}

/** W3C Trace Context's traceparent (version 00's shape, and any later version's first fields). */
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-.*)?$/;

/** A caller's trace context, passed on to the warehouse when its traceparent is well formed (tracestate with it). */
export function traceOf(req: IncomingMessage): Record<string, string> | undefined {
  const parent = req.headers.traceparent;
  if (typeof parent !== 'string' || !TRACEPARENT.test(parent)) return undefined;
  const state = req.headers.tracestate;
  return typeof state === 'string' && state.length <= 512 ? { traceparent: parent, tracestate: state } : { traceparent: parent };
}

/** Takes a call from a limited caller's bucket, said in the RateLimit headers; past the limit, its refusal (counted). */
export type TakeCall = (res: ServerResponse, caller: Caller) => void;

export function callTaker(access: Access, metrics: Metrics): TakeCall {
  return (res, caller) => {
    const limit = access.limit(caller);
    if (!limit) return;
    res.setHeader('RateLimit-Limit', String(limit.limit));
    res.setHeader('RateLimit-Remaining', String(limit.remaining));
    res.setHeader('RateLimit-Reset', String(limit.resetSeconds));
    if (!limit.allowed) {
      metrics.rateLimited();
      throw access.refusal(caller, limit);
    }
  };
}

/**
 * `/api/endpoints/query/<name|id>`: a saved query's answer. What is computed once is kept: the call a
 * request's path and query string make, for each caller (a token's carry its scope and fixed
 * parameters; a new set of saved queries after SIGHUP, or a load's new generation, starts afresh), and
 * the body of each result's rows. A request answered a moment ago is answered again without a promise
 * (`answerAtOnce`, the hot path of a busy server).
 */
export class QueryRoute implements Route {
  readonly methods = [...READ_METHODS, 'POST'];
  /** A page on another origin POSTs JSON. */
  readonly cors = { allowHeaders: `Content-Type, ${VERSION_HEADER}`, exposeHeaders: `${VERSION_HEADER}, Deprecation, Sunset` };
  readonly credential = 'caller';
  #preparedFor;
  #calls = new WeakMap<Caller, PreparedCalls>();
  /**
   * Bodies kept, at most BODIES_KEPT and half of --memory-mb, each weighed twice its bytes (its head,
   * and the copy of it in the whole body last sent) in UTF-16: past either, the least recently used go
   * first; one larger than the whole is not kept (made again for each request).
   */
  readonly #bodies: SizedCache<string, Body>;

  constructor(
    private readonly lib: Savedq,
    private readonly access: Access,
    private readonly takeCall: TakeCall,
  ) {
    this.#preparedFor = { queries: lib.catalog, generation: lib.generation.current().current };
    this.#bodies = new SizedCache(BODIES_KEPT, lib.config.memoryBytes / 2, (body) => 64 + 4 * body.bytes);
  }

  /** The bodies kept: about how many bytes, of at most how many. */
  bodiesMemory(): { bytes: number; maxBytes: number } {
    return { bytes: this.#bodies.size, maxBytes: this.#bodies.maxSize };
  }

  matches(path: string): boolean {
    return path.startsWith(QUERY_PREFIX) && path.length > QUERY_PREFIX.length && !path.slice(QUERY_PREFIX.length).includes('/');
  }

  async answer({ req, res, ctx, path, search, gone }: RouteRequest): Promise<Answered> {
    const caller = ctx.caller as Caller;
    // A limited caller's call past its limit costs nothing else: no cache read, no query.
    this.takeCall(res, caller);
    const cacheControl = req.headers['cache-control'];
    const refresh = cacheControl !== undefined && /(^|,)\s*no-cache\s*(,|$)/i.test(cacheControl);
    // The query's time limit is the library's, counted from when the query starts (not while the data
    // directory is awaited: a busy one answers 503 with Retry-After). A client that goes away first
    // stops waiting; its query, when no one else waits for it and it has not begun, is not run.
    // Calls wait for the engine in turns fair across callers: each API key, each token's name.
    const version = versionHeaderOf(req);
    const call = req.method === 'POST' ? await this.#posted(req, caller, path, search, version) : await this.#prepared(caller, path, search, version);
    ctx.label = call.query.name;
    const result = await this.lib.runPrepared(call, refresh ? 'refresh' : 'use', { signal: gone, caller: caller.name, requestId: ctx.id, trace: traceOf(req) });
    return this.#reply(res, ctx, result, await this.#bodyOf(call, result));
  }

  /** A GET answered from what was served a moment ago: no await, no promise; undefined when the full path must answer. */
  answerAtOnce(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, credential: string | undefined): Answered | undefined {
    if (req.method !== 'GET' || req.headers['cache-control'] !== undefined || req.headers[VERSION_HEADER_LOWER] !== undefined) return undefined;
    // Known callers without a limit only: the full path answers the others (401, 429, its headers).
    const caller = this.access.known(credential);
    if (!caller || caller.rps !== undefined || !this.#current()) return undefined;
    const call = this.#calls.get(caller)?.find(addressOfTarget(req.url ?? '/'));
    // A version with a sunset goes the full path, which finds it again (past its sunset: 410).
    if (!call || call.query.sunsetMs !== undefined) return undefined;
    ctx.caller = caller;
    const result = this.lib.answerRecent(call);
    // The call's key is the one string each time (its hash kept by the engine), the map's key.
    const body = result && this.#bodies.get(call.key);
    if (!result || body?.computedAt !== result.computedAt) return undefined;
    return this.#reply(res, ctx, result, body);
  }

  #current(): boolean {
    return this.#preparedFor.queries === this.lib.catalog && this.#preparedFor.generation === this.lib.generation.current().current;
  }

  /** A call as this caller may make it: a token's scopes checked and its fixed parameters applied. */
  async #prepared(caller: Caller, path: string, search: string, version: number | undefined): Promise<PreparedCall> {
    if (!this.#current()) {
      this.#calls = new WeakMap();
      this.#preparedFor = { queries: this.lib.catalog, generation: this.lib.generation.current().current };
    }
    let mine = this.#calls.get(caller);
    if (!mine) {
      mine = new PreparedCalls(caller.kind === 'key' ? PREPARED_CALLS : PREPARED_CALLS_A_TOKEN);
      this.#calls.set(caller, mine);
    }
    const key = version === undefined ? addressOf(path, search) : `${addressOf(path, search)}\n${version}`;
    let call = mine.find(key);
    // A call of a version past its sunset since it was prepared is prepared again: 410.
    if (call?.query.sunsetMs !== undefined && Date.now() >= call.query.sunsetMs) call = undefined;
    if (!call) {
      const [params, sql] = splitSql(search);
      call = await this.lib.prepare({ nameOrId: decode(path.slice(QUERY_PREFIX.length)), params, sql, caller, version, versionInParams: true });
      mine.remember(key, call);
    }
    return call;
  }

  /** A POST's call, answered as GET answers the same call. Not kept: a body is not a key. */
  async #posted(req: IncomingMessage, caller: Caller, path: string, search: string, version: number | undefined): Promise<PreparedCall> {
    return this.lib.prepare({ nameOrId: decode(path.slice(QUERY_PREFIX.length)), ...(await postedCall(req, search)), caller, version, versionInParams: true });
  }

  /**
   * Sends a query's answer: its body (the part made once a result, then whether it came from the cache
   * and how old it is), and for a cached query X-Cache and Age, in one write with the request id.
   */
  #reply(res: ServerResponse, ctx: RequestContext, result: RunResult, body: Body): Answered {
    ctx.label = result.query.name;
    const whole = wholeBody(body, result, this.lib.clock());
    const outcome = outcomeNames(result);
    const headers = outcome.xCache === undefined ? ['Content-Type', JSON_TYPE, 'Content-Length', whole.length] : ['Content-Type', JSON_TYPE, 'Content-Length', whole.length, 'X-Cache', outcome.xCache, 'Age', String(whole.age)];
    headers.push(VERSION_HEADER, String(result.query.version));
    for (const [name, value] of sunsetHeaders(result.query)) headers.push(name, value);
    if (!res.hasHeader('X-Request-Id')) headers.push('X-Request-Id', ctx.id);
    res.writeHead(200, headers);
    res.end(whole.text);
    return { what: result.query.name, outcome };
  }

  /** The body of a result: its rows as `run -f json` prints them (made once a result). */
  async #bodyOf(call: PreparedCall, result: RunResult): Promise<Body> {
    let body = this.#bodies.get(call.key);
    if (body?.computedAt !== result.computedAt) {
      // The rows as `run -f json` prints them, one a line, the envelope going on after the closing bracket.
      const rows = [...(await render('json', result.rows, BODY_OPTIONS))].join('').trimEnd();
      const head = `{"result":${rows},`;
      body = { computedAt: result.computedAt, head, bytes: Buffer.byteLength(head) };
      this.#bodies.set(call.key, body);
    }
    return body;
  }
}

const VERSION_HEADER_LOWER = VERSION_HEADER.toLowerCase();

/** The version a request's Savedq-Version header pins, if it has one (an InputError when it is no version). */
export function versionHeaderOf(req: IncomingMessage): number | undefined {
  const text = req.headers[VERSION_HEADER_LOWER];
  if (text === undefined) return undefined;
  return askedVersion(Array.isArray(text) ? text.join(',') : text, VERSION_HEADER);
}

/**
 * A POST's call: its body `{"params": {...}, "sql": "..."}` (both optional), with the address's own
 * parameters (a parameter given in both is refused as given twice, as the library refuses it).
 */
export async function postedCall(req: IncomingMessage, search: string): Promise<{ params: RawParams; arguments: Record<string, unknown>; sql: string | undefined }> {
  const type = req.headers['content-type'];
  if (type !== undefined && !/^application\/json\s*(;|$)/i.test(type)) throw new UnsupportedMediaTypeError(`a POST to a query sends JSON (Content-Type: application/json), not ${type.slice(0, 60)}.`);
  const text = await readBody(req, MAX_POST_BYTES);
  let body: unknown;
  try {
    body = text.trim() === '' ? {} : JSON.parse(text);
  } catch {
    throw new InputError('the request body is not JSON: send {"params": {"name": "value"}, "sql": "SELECT …"}.');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InputError('the request body is not a JSON object: send {"params": {...}, "sql": "SELECT …"}.');
  const { params, sql, ...other } = body as Record<string, unknown>;
  const unknown = Object.keys(other);
  if (unknown.length > 0) throw new InputError(`unknown key ${JSON.stringify(unknown[0]?.slice(0, 40))} in the request body; it takes params and sql.`);
  if (params !== undefined && (typeof params !== 'object' || params === null || Array.isArray(params))) throw new InputError('params in the request body is not an object of parameters.');
  if (sql !== undefined && typeof sql !== 'string') throw new InputError('sql in the request body is not a text.');
  const args = (params ?? {}) as Record<string, unknown>;
  if (SQL_PARAM in args) throw new InputError(`${SQL_PARAM} goes beside params in the request body, not among them.`);
  const [inAddress, sqlInAddress] = splitSql(search);
  if (sql !== undefined && sqlInAddress !== undefined) throw new InputError(`${SQL_PARAM} is given in the address and in the body; give it once.`);
  return { params: inAddress, arguments: args, sql: sql ?? sqlInAddress };
}
