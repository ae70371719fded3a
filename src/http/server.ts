import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { Access, type Caller } from '../access/index.js';
import { BusyError, InputError, InterruptedError, MethodNotAllowedError, NotFoundError, OverloadedError, RateLimitedError, SavedqError, UnauthorizedError, UriTooLongError } from '../errors.js';
import type { RawParams } from '../queries/params.js';
import type { PreparedCall, RunResult, Savedq } from '../library.js';
import { render } from '../output/index.js';
import { serveMetrics } from './metrics.js';
import type { Row } from '../queries/types.js';
import { keyChecker } from './keys.js';
import { openApiDocument } from './openapi.js';
import { PAGE_HEADERS, PAGE_PATHS, pageFile } from './page.js';
import type { McpEndpoint } from './mcp.js';
import type { Log } from '../report.js';
import { startUpkeep } from './upkeep.js';

/** How the HTTP mode runs. */
export interface ServeOptions {
  readonly host: string;
  readonly port: number;
  readonly apiKeys: readonly string[];
  /**
   * The library's time limit of a query (the library enforces it): a request's own limit is this and
   * half a minute more, so that a request never ends before the query it waits for does.
   */
  readonly timeoutSeconds: number;
  /** How often to warm the cache in this process; 0 = never. */
  readonly warmEveryMs: number;
  /** How often to prune the cache in this process (retention, --cache-max-mb); 0 or absent = never. */
  readonly pruneEveryMs?: number;
  readonly version: string;
  /** Where log lines go (one per request; never a key or a parameter value). */
  readonly log: Log;
  /** Whether each request is logged (default), or only warnings and failures. */
  readonly logRequests?: boolean;
  /** HTTP connections open at once; past it, a new one is closed at once (default 1000). */
  readonly maxConnections?: number;
  /** Seconds a request's headers may take (default 10). */
  readonly headerTimeoutSeconds?: number;
  /** The token secrets as keys (the first signs, every one verifies); none: tokens are refused. */
  readonly tokenSecrets?: readonly Uint8Array[];
  /** Calls a second for each caller without a limit of its own; undefined: none. */
  readonly rateLimit?: number | undefined;
  /** Origins whose pages may call the server (CORS); `*` any; none: no CORS header at all. */
  readonly corsOrigins?: readonly string[];
  /** The page for people at `/` (default); false: 404 there, as any unknown path. */
  readonly ui?: boolean;
  /** MCP at `/mcp` (default); false: 404 there. */
  readonly mcp?: boolean;
  /** Names /mcp answers a Host header of (--allowed-host), besides addresses and a loopback's localhost. */
  readonly allowedHosts?: readonly string[];
}

/** What a page on another origin may read of an answer. */
const EXPOSED_HEADERS = 'X-Cache, Age, X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset';
/** What a page on another origin may send to /mcp, and read of its answers, besides. */
const MCP_ALLOWED_HEADERS = 'Content-Type, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID';
/** What a route answered: the word of its log line, and the cache's part in it. */
interface Answered {
  readonly what: string;
  readonly cache: string;
}

/** A request as a route gets it: its path and query string split, its caller once the route's credential is checked. */
interface RouteRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly ctx: RequestContext;
  readonly path: string;
  readonly search: string;
  readonly gone: AbortSignal;
  readonly credential: string | undefined;
}

/**
 * One of serve's routes, each said once: which paths are its, the methods it takes (its 405 answers'
 * Allow and its CORS preflight say them), its metric label, what it needs of a credential, and its
 * answer. A path no route takes is 404.
 */
interface Route {
  readonly matches: (path: string) => boolean;
  readonly methods: readonly string[];
  /** Its metric label and log word; none for the query route, labelled by the query it finds ('other' when none). */
  readonly label?: string;
  /** None; none or any caller (the answer is the caller's when one is given); any caller; or an API key alone. */
  readonly credential: 'none' | 'optional' | 'caller' | 'key';
  /** Checked before anything else (/mcp: the Host and Origin a page could forge through DNS rebinding). */
  readonly before?: (req: IncomingMessage) => Promise<void>;
  /** Request headers a page on another origin may send besides the credential's, and answer headers it may read. */
  readonly cors?: { readonly allowHeaders: string; readonly exposeHeaders: string };
  /** Sends the answer; a route of the server's own says nothing back (its log word is its label, no cache). */
  readonly answer: (request: RouteRequest) => Promise<Answered | void>;
}

const READ_METHODS = ['GET', 'HEAD'] as const;

/** What one request's handling learns on the way, for its answer and its log line. */
interface RequestContext {
  readonly id: string;
  /** Who asked, once known. */
  caller: Caller | undefined;
  /** The saved query it was for, once found: a metric's label (never a name a client made up). */
  label: string | undefined;
}

/** A caller's own request id is used when it is 1–128 of these characters. */
const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** The credential of a request: `Authorization: Bearer <key or token>`, else `X-API-KEY`. */
function credentialOf(req: IncomingMessage): string | undefined {
  const authorization = req.headers.authorization;
  if (authorization !== undefined) {
    // "Bearer <credential>", the scheme's name in any case (RFC 7235).
    const credential = authorization.slice(7).trim();
    return authorization.length > 7 && authorization.slice(0, 7).toLowerCase() === 'bearer ' && !/\s/.test(credential) ? credential : '';
  }
  const key = req.headers['x-api-key'];
  return Array.isArray(key) ? undefined : key;
}

/** A running server. */
export interface RunningServer {
  readonly url: string;
  readonly server: Server;
  /** Stops accepting, ends MCP sessions, finishes what is in flight, stops warming. */
  close(): Promise<void>;
  /** Tells MCP sessions that the tools changed: the server answers another set of saved queries. */
  toolsChanged(): void;
}

const QUERY_PREFIX = '/api/endpoints/query/';
/** Calls kept prepared, by path and query string: for each API key, and for each token (of which there may be thousands). */
const PREPARED_CALLS = 1_000;
const PREPARED_CALLS_A_TOKEN = 64;
const JSON_TYPE = 'application/json; charset=utf-8';
const MAX_URL_LENGTH = 8192;
/** The JSON renderer takes no width or colour. */
const BODY_OPTIONS = { fields: [], color: false, width: undefined };

/** An answer's body, and its length in bytes as Content-Length says it. */
interface Body {
  readonly text: string;
  readonly length: string;
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

function decode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    throw new InputError('the query string has bad percent-encoding.');
  }
}

/** Answers with a JSON body (an object, or JSON text already serialised). */
function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': JSON_TYPE,
    'Content-Length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function errorBody(code: string, message: string): object {
  return { error: { code, message } };
}

/**
 * The one place errors become HTTP answers: the family's status and code in the JSON envelope (and
 * Retry-After for a busy data directory); anything else is a 500 with no detail, logged.
 */
function sendError(res: ServerResponse, err: unknown, log: Log): void {
  if (!(err instanceof SavedqError)) {
    log.error(`internal error: ${err instanceof Error ? err.message : String(err)}`);
    send(res, 500, errorBody('internal', 'internal error.'));
    return;
  }
  // Which file, which address, which user, what the engine quoted of the SQL: for the server's owner
  // (the log), not its callers, who are told what went wrong for them.
  if (err.forCaller !== err.message) log.error(err.message);
  if (err instanceof MethodNotAllowedError) res.setHeader('Allow', err.allowed);
  if (err instanceof UnauthorizedError) res.setHeader('WWW-Authenticate', 'Bearer');
  const headers: Record<string, string> =
    err instanceof BusyError || err instanceof OverloadedError || err instanceof RateLimitedError ? { 'Retry-After': String(err.retryAfterSeconds) } : {};
  send(res, err.httpStatus, errorBody(err.code, err.forCaller), headers);
}

/** Starts `savedq serve`: the thin HTTP mode over the library. */
export async function startServer(lib: Savedq, options: ServeOptions): Promise<RunningServer> {
  const cors = options.corsOrigins && options.corsOrigins.length > 0 ? new Set(options.corsOrigins) : undefined;
  const metrics = await serveMetrics(() => lib.engineQueue());
  const access = new Access({ isKey: keyChecker(options.apiKeys), secrets: options.tokenSecrets ?? [], rateLimit: options.rateLimit, clock: () => lib.clock() });
  /** A query's answer sends the request id with its other headers, in one write, unless it was set already. */
  const idHeader = (res: ServerResponse, ctx: RequestContext): string[] => (res.hasHeader('X-Request-Id') ? [] : ['X-Request-Id', ctx.id]);
  const headerTimeoutSeconds = options.headerTimeoutSeconds ?? 10;
  // A fresh request id: this server's random prefix and a count, unique across servers and restarts
  // without drawing random bytes for every request.
  const idPrefix = `${randomUUID().slice(0, 13)}-`;
  let requestCount = 0;
  // Made again only when the server answers another set of saved queries (after SIGHUP).
  let openapi = { for: lib.catalog, text: '' };
  // A caller's own document (its queries, its fixed parameters), kept with the caller while it is known.
  const callersOpenapi = new WeakMap<Caller, { for: typeof lib.catalog; text: string }>();
  const openapiText = async (caller: Caller | undefined): Promise<string> => {
    const queries = lib.catalog;
    const kept = caller ? callersOpenapi.get(caller) : openapi;
    if (kept && kept.for === queries && kept.text !== '') return kept.text;
    const made = { for: queries, text: JSON.stringify(openApiDocument(options.version, (await queries.scan()).queries, caller)) };
    if (caller) callersOpenapi.set(caller, made);
    else openapi = made;
    return made.text;
  };
  /** Takes a call from a limited caller's bucket, said in the RateLimit headers; past the limit, its refusal (counted). */
  const takeCall = (res: ServerResponse, caller: Caller): void => {
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
  let inFlight = 0;
  let drained: (() => void) | undefined;
  // /mcp's sessions, made on its first request (the SDK is loaded then, not before).
  let mcp: Promise<McpEndpoint> | undefined;
  const loopback = /^(127\.|::1$|localhost$)/.test(options.host);
  const mcpEndpoint = (): Promise<McpEndpoint> =>
    (mcp ??= import('./mcp.js').then(
      (m) => new m.McpEndpoint({ lib, takeCall, version: options.version, log: options.log, corsOrigins: cors, allowedHosts: options.allowedHosts ?? [], loopback }),
    ));

  // What is computed once and kept: the call a request's path and query string make (for the saved
  // queries in use: a new set after SIGHUP starts afresh), and the body of each result's rows.
  // A call's cache key names the data's generation: after a load, every call is prepared again.
  let preparedFor = { queries: lib.catalog, generation: lib.generation() };
  const current = () => preparedFor.queries === lib.catalog && preparedFor.generation === lib.generation();
  /** Each caller's prepared calls (a token's carry its scope and fixed parameters), by path and query string. */
  let calls = new WeakMap<Caller, Map<string, PreparedCall>>();
  const callsOf = (caller: Caller): Map<string, PreparedCall> | undefined => (current() ? calls.get(caller) : undefined);
  /** A call as this caller may make it: a token's scopes checked and its fixed parameters applied. */
  const prepared = async (caller: Caller, path: string, search: string): Promise<PreparedCall> => {
    if (!current()) {
      calls = new WeakMap();
      preparedFor = { queries: lib.catalog, generation: lib.generation() };
    }
    let mine = calls.get(caller);
    if (!mine) {
      mine = new Map();
      calls.set(caller, mine);
    }
    const key = `${path}?${search}`;
    let call = mine.get(key);
    if (!call) {
      call = await lib.prepare({ nameOrId: decode(path.slice(QUERY_PREFIX.length)), params: parseQueryString(search), caller });
      if (mine.size >= (caller.kind === 'key' ? PREPARED_CALLS : PREPARED_CALLS_A_TOKEN)) mine.delete(mine.keys().next().value as string);
      mine.set(key, call);
    }
    return call;
  };
  /**
   * Sends a query's answer: its rows' body (made once a result, and kept with it), and for a cached query
   * X-Cache and Age.
   */
  const reply = (res: ServerResponse, ctx: RequestContext, result: RunResult, body: Body): { what: string; cache: string } => {
    ctx.label = result.query.name;
    if (result.query.cacheSeconds === 0) {
      res.writeHead(200, ['Content-Type', JSON_TYPE, 'Content-Length', body.length, ...idHeader(res, ctx)]);
      res.end(body.text);
      return { what: result.query.name, cache: '-' };
    }
    const cache = result.cache === 'hit' ? 'HIT' : 'MISS';
    const age = String(Math.max(0, Math.floor((lib.clock() - result.computedAt) / 1000)));
    res.writeHead(200, ['Content-Type', JSON_TYPE, 'Content-Length', body.length, 'X-Cache', cache, 'Age', age, ...idHeader(res, ctx)]);
    res.end(body.text);
    return { what: result.query.name, cache };
  };
  const bodies = new WeakMap<readonly Row[], Body>();
  /** The body of rows: the JSON renderer's array, as `run -f json` prints it, in the envelope. */
  const bodyOf = async (rows: Row[]): Promise<Body> => {
    let body = bodies.get(rows);
    if (!body) {
      const text = `{"result":${[...(await render('json', rows, BODY_OPTIONS))].join('')}}`;
      body = { text, length: String(Buffer.byteLength(text)) };
      bodies.set(rows, body);
    }
    return body;
  };

  /** serve's routes: the table the answers, the 405s, the preflights and the metric labels are read from. */
  const fixedPath = (path: string) => (p: string) => p === path;
  const routes: readonly Route[] = [
    ...(options.mcp !== false
      ? [
          {
            matches: fixedPath('/mcp'),
            methods: ['GET', 'POST', 'DELETE'],
            label: '/mcp',
            credential: 'caller',
            before: async (req: IncomingMessage) => (await mcpEndpoint()).checkHostAndOrigin(req),
            cors: { allowHeaders: MCP_ALLOWED_HEADERS, exposeHeaders: 'Mcp-Session-Id' },
            answer: async ({ req, res, ctx, credential }: RouteRequest) => {
              await (await mcpEndpoint()).handle(req, res, ctx.caller as Caller, credential ?? '');
            },
          } satisfies Route,
        ]
      : []),
    ...(options.ui !== false
      ? [...PAGE_PATHS].map(
          (path): Route => ({
            matches: fixedPath(path),
            methods: READ_METHODS,
            label: path,
            credential: 'none',
            answer: async ({ res }) => {
              const { body, type } = await pageFile(path);
              res.writeHead(200, { ...PAGE_HEADERS, 'Content-Type': type, 'Content-Length': body.length });
              res.end(body);
            },
          }),
        )
      : []),
    {
      matches: fixedPath('/health'),
      methods: READ_METHODS,
      label: '/health',
      credential: 'none',
      answer: async ({ res }) => {
        // The engine's queue, when this server has it open: what an operator (and a test) waits on.
        const queue = lib.engineQueue();
        send(res, 200, queue ? { status: 'ok', queue } : { status: 'ok' });
      },
    },
    {
      matches: fixedPath('/openapi.json'),
      methods: READ_METHODS,
      label: '/openapi.json',
      credential: 'optional',
      answer: async ({ res, ctx }) => {
        send(res, 200, await openapiText(ctx.caller));
      },
    },
    {
      matches: fixedPath('/metrics'),
      methods: READ_METHODS,
      label: '/metrics',
      credential: 'key',
      answer: async ({ res }) => {
        const { body, contentType } = await metrics.text();
        res.writeHead(200, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) });
        res.end(body);
      },
    },
    {
      matches: (path) => path.startsWith(QUERY_PREFIX) && path.length > QUERY_PREFIX.length && !path.slice(QUERY_PREFIX.length).includes('/'),
      methods: READ_METHODS,
      credential: 'caller',
      answer: async ({ req, res, ctx, path, search, gone }) => {
        const caller = ctx.caller as Caller;
        // A limited caller's call past its limit costs nothing else: no cache read, no query.
        takeCall(res, caller);
        const cacheControl = req.headers['cache-control'];
        const refresh = cacheControl !== undefined && /(^|,)\s*no-cache\s*(,|$)/i.test(cacheControl);
        // The query's time limit is the library's, counted from when the query starts (not while the data
        // directory is awaited: a busy one answers 503 with Retry-After). A client that goes away first
        // stops waiting; its query, when no one else waits for it and it has not begun, is not run.
        // Calls wait for the engine in turns fair across callers: each API key, each token's name.
        const call = await prepared(caller, path, search);
        ctx.label = call.query.name;
        const result = await lib.runPrepared(call, refresh ? 'refresh' : 'use', gone, caller.name);
        return reply(res, ctx, result, await bodyOf(result.rows));
      },
    },
  ];
  const routeOf = (path: string): Route | undefined => routes.find((r) => r.matches(path));
  const pathOf = (rawUrl: string) => rawUrl.split('?')[0] ?? '';

  async function handle(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, gone: AbortSignal): Promise<Answered> {
    const rawUrl = req.url ?? '/';
    if (rawUrl.length > MAX_URL_LENGTH) throw new UriTooLongError(`the request URL is longer than ${MAX_URL_LENGTH} bytes.`);
    const q = rawUrl.indexOf('?');
    const path = q < 0 ? rawUrl : rawUrl.slice(0, q);
    const search = q < 0 ? '' : rawUrl.slice(q + 1);
    const route = routeOf(path);
    if (!route) throw new NotFoundError('no such path; queries are at /api/endpoints/query/<name|id>.');
    ctx.label = route.label;
    await route.before?.(req);
    if (!route.methods.includes(req.method ?? '')) {
      throw new MethodNotAllowedError(`${req.method ?? 'this method'} is not allowed here; use ${route.methods.filter((m) => m !== 'HEAD').join(' or ')}.`, route.methods.join(', '));
    }
    const credential = credentialOf(req);
    if (route.credential !== 'none' && (route.credential !== 'optional' || credential !== undefined)) {
      ctx.caller = await access.authenticate(credential);
      if (route.credential === 'key') access.authorizeMetrics(ctx.caller);
    }
    return (await route.answer({ req, res, ctx, path, search, gone, credential })) ?? { what: route.label ?? path, cache: '-' };
  }

  /** A query answered from what was served a moment ago: no await, no promise (the hot path of a busy server). */
  const answerAtOnce = (req: IncomingMessage, res: ServerResponse, ctx: RequestContext): { what: string; cache: string } | undefined => {
    const rawUrl = req.url ?? '/';
    if (req.method !== 'GET' || !rawUrl.startsWith(QUERY_PREFIX) || req.headers['cache-control'] !== undefined) return undefined;
    // Known callers without a limit only: the full path answers the others (401, 429, its headers).
    const caller = access.known(credentialOf(req));
    if (!caller || caller.rps !== undefined) return undefined;
    const q = rawUrl.indexOf('?');
    const call = callsOf(caller)?.get(q < 0 ? `${rawUrl}?` : rawUrl);
    if (!call) return undefined;
    ctx.caller = caller;
    const result = lib.answerRecent(call);
    const body = result && bodies.get(result.rows);
    if (!result || !body) return undefined;
    return reply(res, ctx, result, body);
  };

  const server = createServer(
    {
      maxHeaderSize: 16 * 1024,
      // A request's headers must be whole within --header-timeout (slow clients holding connections
      // open); Node looks every second, so such a connection is closed about a second after.
      headersTimeout: headerTimeoutSeconds * 1000,
      connectionsCheckingInterval: 1000,
      requestTimeout: Math.max(options.timeoutSeconds + 30, headerTimeoutSeconds + 1) * 1000,
    },
    (req, res) => {
    const started = performance.now();
    // The caller's own request id when it is well formed, else a fresh one: on every answer and its log line.
    const given = req.headers['x-request-id'];
    const requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : `${idPrefix}${(requestCount += 1).toString(36)}`;
    const ctx: RequestContext = { id: requestId, caller: undefined, label: undefined };
    const done = (what: string, cache: string, status = res.statusCode) => {
      // A query's name once it was found, else its route's: the label never takes what a client made up.
      const label = ctx.label ?? 'other';
      metrics.request(label, status, (performance.now() - started) / 1000, cache);
      if (options.logRequests === false) return;
      const ms = Math.round(performance.now() - started);
      const caller = ctx.caller;
      options.log.info(`${req.method} ${what} ${status} ${ms}ms cache=${cache} caller=${caller ? caller.quoted : '-'} id=${requestId}`);
    };
    // Browsers on other origins: CORS only for the origins --cors-origin names.
    const origin = req.headers.origin;
    const allowed = origin !== undefined && cors !== undefined && (cors.has('*') || cors.has(origin));
    // What a page on another origin may send and read is its route's (a path no route takes: a query's).
    const corsOf = () => (cors === undefined ? undefined : routeOf(pathOf(req.url ?? '/')));
    if (allowed) {
      const extra = corsOf()?.cors?.exposeHeaders;
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Vary', 'Origin');
      res.setHeader('Access-Control-Expose-Headers', extra ? `${EXPOSED_HEADERS}, ${extra}` : EXPOSED_HEADERS);
    }
    if (req.method === 'OPTIONS' && cors !== undefined) {
      res.setHeader('X-Request-Id', requestId);
      ctx.label = 'preflight';
      if (allowed) {
        const route = corsOf();
        res.writeHead(204, {
          'Access-Control-Allow-Methods': (route?.methods ?? READ_METHODS).join(', '),
          'Access-Control-Allow-Headers': `Authorization, X-API-KEY, Cache-Control${route?.cors ? `, ${route.cors.allowHeaders}` : ''}`,
          'Access-Control-Max-Age': '600',
        });
        res.end();
      } else send(res, 403, errorBody('forbidden', 'this origin may not call this server (see --cors-origin).'));
      done('preflight', '-');
      return;
    }
    const quick = answerAtOnce(req, res, ctx);
    if (quick) {
      done(quick.what, quick.cache);
      return;
    }
    // Answers other than a query's rows (reply's) are sent with the headers set so far: the id too.
    res.setHeader('X-Request-Id', requestId);
    inFlight += 1;
    let what = '-';
    let cache = '-';
    const gone = new AbortController();
    res.once('close', () => {
      if (!res.writableEnded) gone.abort(new InterruptedError('the client closed the connection before the answer.'));
    });
    handle(req, res, ctx, gone.signal)
      .then((r) => ({ what, cache } = r))
      .catch((err: unknown) => sendError(res, err, options.log))
      .finally(() => {
        if (what === '-') {
          const path = pathOf(req.url ?? '/');
          what = path.startsWith(QUERY_PREFIX) ? path.slice(QUERY_PREFIX.length, QUERY_PREFIX.length + 64) : path.slice(0, 64);
        }
        // 499, as nginx logs it: the client closed the connection before the answer.
        done(what, cache, gone.signal.aborted ? 499 : res.statusCode);
        inFlight -= 1;
        if (inFlight === 0) drained?.();
      });
    },
  );
  server.maxConnections = options.maxConnections ?? 1000;
  // Requests Node cannot parse never reach the handler: oversized headers get 431, anything else 400.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    // In the JSON error envelope, as every other answer (the OpenAPI document declares them).
    const [status, code, message] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? ['431 Request Header Fields Too Large', 'headers_too_large', 'the request headers are larger than 16 KiB.']
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? ['408 Request Timeout', 'request_timeout', `the request headers did not arrive within ${headerTimeoutSeconds} s.`]
          : ['400 Bad Request', 'bad_request', 'the request is not valid HTTP.'];
    const body = JSON.stringify(errorBody(code, message));
    // Closed for good once the answer is written: a client that never reads must not hold the slot.
    socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Type: ${JSON_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, () => socket.destroy());
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  const upkeep = startUpkeep(lib, options.log, metrics, { warmMs: options.warmEveryMs, pruneMs: options.pruneEveryMs ?? 0 });

  return {
    url: `http://${host}:${address.port}`,
    server,
    toolsChanged() {
      void mcp?.then((endpoint) => endpoint.toolsChanged());
    },
    async close() {
      upkeep.stop();
      // An MCP session's notification stream is a request that never ends on its own.
      await (await mcp)?.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      if (inFlight > 0) await new Promise<void>((resolve) => (drained = resolve));
      server.closeIdleConnections();
      await closed;
    },
  };
}
