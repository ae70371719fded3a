import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Access, type Caller } from '../access/index.js';
import { InterruptedError, MethodNotAllowedError, NotFoundError, SandboxRefusedError, UriTooLongError } from '../errors.js';
import { nodeCrypto } from '../lazy.js';
import type { Savedq } from '../library.js';
import type { Log } from '../report.js';
import { holdConnections } from './connections.js';
import { clientErrorAnswer, errorBody, send, sendError } from './answers.js';
import { keyChecker } from './keys.js';
import { serveMetrics } from './metrics.js';
import { QUERY_PREFIX } from './query-route.js';
import { READ_METHODS, credentialOf, foreignSchemeRefusal, type Answered, type RequestContext, type Route } from './route.js';
import { serveRoutes } from './routes.js';
import { keepTickShape } from './tick-shape.js';
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
  /** How often to evaluate the alerts that are due; 0 or absent = never. */
  readonly alertsEveryMs?: number;
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
/** A caller's own request id is used when it is 1–128 of these characters. */
const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;
const MAX_URL_LENGTH = 8192;

/** A running server. */
export interface RunningServer {
  readonly url: string;
  readonly server: Server;
  /** Stops accepting, ends MCP sessions, finishes what is in flight, stops warming. */
  close(): Promise<void>;
  /** Tells MCP sessions that the tools changed: the server answers another set of saved queries. */
  toolsChanged(): void;
}

/** A request decided: its route, the path and query string it asked for, and its credential. */
interface Admitted {
  readonly route: Route;
  readonly path: string;
  readonly search: string;
  readonly credential: string | undefined;
}

/** Starts `savedq serve`: the thin HTTP mode over the library. */
export async function startServer(lib: Savedq, options: ServeOptions): Promise<RunningServer> {
  const cors = options.corsOrigins && options.corsOrigins.length > 0 ? new Set(options.corsOrigins) : undefined;
  const metrics = await serveMetrics(() => lib.engineQueue(), lib.store);
  await keepTickShape();
  const access = new Access({
    isKey: keyChecker(options.apiKeys),
    secrets: options.tokenSecrets ?? [],
    rateLimit: options.rateLimit,
    clock: () => lib.clock(),
    // A caller's limit holds across every serve that shares the store.
    sharedBuckets: (bucket, used, rps, burst) => lib.store.takeFromBucket(bucket, used, rps, burst),
  });
  const headerTimeoutSeconds = options.headerTimeoutSeconds ?? 10;
  // A fresh request id: this server's random prefix and a count, unique across servers and restarts
  // without drawing random bytes for every request.
  const idPrefix = `${nodeCrypto().randomUUID().slice(0, 13)}-`;
  let requestCount = 0;
  let inFlight = 0;
  let drained: (() => void) | undefined;
  const routes = serveRoutes({
    lib,
    access,
    metrics,
    log: options.log,
    version: options.version,
    ui: options.ui !== false,
    mcp: options.mcp !== false,
    corsOrigins: cors,
    allowedHosts: options.allowedHosts ?? [],
    loopback: /^(127\.|::1$|localhost$)/.test(options.host),
  });
  const routeOf = (path: string): Route | undefined => routes.table.find((r) => r.matches(path));
  const pathOf = (rawUrl: string) => rawUrl.split('?')[0] ?? '';

  /**
   * Decides a request's route, its method and its caller, in that order, or throws the refusal: at once
   * whenever it can (all but /mcp's check of Host and Origin, and a token not seen before, verified in
   * a promise). A refusal decided at once is answered without a promise or an abort signal (onRequest),
   * so that a flood of forged credentials costs serve as little as it can.
   */
  function admit(req: IncomingMessage, ctx: RequestContext): Admitted | Promise<Admitted> {
    const rawUrl = req.url ?? '/';
    if (rawUrl.length > MAX_URL_LENGTH) throw new UriTooLongError(`the request URL is longer than ${MAX_URL_LENGTH} bytes.`);
    const q = rawUrl.indexOf('?');
    const path = q < 0 ? rawUrl : rawUrl.slice(0, q);
    const search = q < 0 ? '' : rawUrl.slice(q + 1);
    const route = routeOf(path);
    if (!route) throw new NotFoundError('no such path; queries are at /api/endpoints/query/<name|id>.');
    ctx.label = route.label;
    const asked: Admitted = { route, path, search, credential: credentialOf(req) };
    return route.before ? route.before(req).then(() => allowed(req, ctx, asked)) : allowed(req, ctx, asked);
  }

  /** A request's method, then its caller, as its route takes them. */
  function allowed(req: IncomingMessage, ctx: RequestContext, asked: Admitted): Admitted | Promise<Admitted> {
    const { route, credential } = asked;
    if (!route.methods.includes(req.method ?? '')) {
      throw new MethodNotAllowedError(`${req.method ?? 'this method'} is not allowed here; use ${route.methods.filter((m) => m !== 'HEAD').join(' or ')}.`, route.methods.join(', '));
    }
    if (route.credential === 'none' || (route.credential === 'optional' && credential === undefined)) return asked;
    const foreign = credential === undefined ? foreignSchemeRefusal(req) : undefined;
    if (foreign) throw foreign;
    const known = (caller: Caller): Admitted => {
      ctx.caller = caller;
      if (route.credential === 'key') access.authorizeMetrics(caller);
      return asked;
    };
    const caller = access.authenticate(credential);
    return caller instanceof Promise ? caller.then(known) : known(caller);
  }

  /** The answer of an admitted request: its route's. */
  async function answer(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, asked: Admitted, gone: AbortSignal): Promise<Answered> {
    const { route, path, search, credential } = asked;
    return (await route.answer({ req, res, ctx, path, search, gone, credential })) ?? { what: route.label ?? path, cache: '-' };
  }

  /** A refusal's answer (sendError's, the request id with its own headers); SQL the sandbox refused is counted by its query too. */
  function refuse(res: ServerResponse, ctx: RequestContext, err: unknown): void {
    if (err instanceof SandboxRefusedError) {
      ctx.label = err.query ?? ctx.label;
      routes.refusedSql(err, ctx.caller, ctx.id);
    }
    sendError(res, err, options.log, { 'X-Request-Id': ctx.id });
  }

  /** The log word of a request no query answered: the name asked for, else the path (both cut short). */
  function wordOf(rawUrl: string): string {
    const path = pathOf(rawUrl);
    return path.startsWith(QUERY_PREFIX) ? path.slice(QUERY_PREFIX.length, QUERY_PREFIX.length + 64) : path.slice(0, 64);
  }

  /** A request's metric and log line, once it is answered. */
  function finish(req: IncomingMessage, ctx: RequestContext, started: number, what: string, cache: string, status: number): void {
    const seconds = (performance.now() - started) / 1000;
    // A query's name once it was found, else its route's: the label never takes what a client made up.
    metrics.request(ctx.label ?? 'other', status, seconds, cache);
    if (options.logRequests === false) return;
    const caller = ctx.caller;
    options.log.info(`${req.method} ${what} ${status} ${Math.round(seconds * 1000)}ms cache=${cache} caller=${caller ? caller.quoted : '-'} id=${ctx.id}`);
  }

  /** Browsers on other origins, when --cors-origin names some: their headers set, and a preflight answered (true). */
  function answerCors(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, started: number, cors: ReadonlySet<string>): boolean {
    const origin = req.headers.origin;
    const allowed = origin !== undefined && (cors.has('*') || cors.has(origin));
    // What a page on another origin may send and read is its route's (a path no route takes: a query's).
    const route = routeOf(pathOf(req.url ?? '/'));
    if (allowed) {
      const extra = route?.cors?.exposeHeaders;
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Vary', 'Origin');
      res.setHeader('Access-Control-Expose-Headers', extra ? `${EXPOSED_HEADERS}, ${extra}` : EXPOSED_HEADERS);
    }
    if (req.method !== 'OPTIONS') return false;
    res.setHeader('X-Request-Id', ctx.id);
    ctx.label = 'preflight';
    if (allowed) {
      res.writeHead(204, {
        'Access-Control-Allow-Methods': (route?.methods ?? READ_METHODS).join(', '),
        'Access-Control-Allow-Headers': `Authorization, X-API-KEY, Cache-Control${route?.cors ? `, ${route.cors.allowHeaders}` : ''}`,
        'Access-Control-Max-Age': '600',
      });
      res.end();
    } else send(res, 403, errorBody('forbidden', 'this origin may not call this server (see --cors-origin).'));
    finish(req, ctx, started, 'preflight', '-', res.statusCode);
    return true;
  }

  /**
   * One request: its id, CORS, the fast path, else its route (a refusal decided at once is answered at
   * once); its metric and log line whatever the answer.
   */
  function onRequest(req: IncomingMessage, res: ServerResponse): void {
    const started = performance.now();
    // The caller's own request id when it is well formed, else a fresh one: on every answer and its log
    // line. Joined, it is one flat string; added, a pair that Node's check of a header value would have
    // V8 flatten through its runtime (1,300 instructions, 830 for the join).
    const given = req.headers['x-request-id'];
    const requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : [idPrefix, (requestCount += 1).toString(36)].join('');
    const ctx: RequestContext = { id: requestId, caller: undefined, label: undefined };
    if (cors !== undefined && answerCors(req, res, ctx, started, cors)) return;
    const answered = routes.query.answerAtOnce(req, res, ctx);
    if (answered) {
      finish(req, ctx, started, answered.what, answered.cache, 200);
      return;
    }
    let admitted: Admitted | Promise<Admitted>;
    try {
      admitted = admit(req, ctx);
    } catch (err) {
      refuse(res, ctx, err);
      finish(req, ctx, started, wordOf(req.url ?? '/'), '-', res.statusCode);
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
    Promise.resolve(admitted)
      .then((asked) => answer(req, res, ctx, asked, gone.signal))
      .then((r) => ({ what, cache } = r))
      .catch((err: unknown) => refuse(res, ctx, err))
      .finally(() => {
        // 499, as nginx logs it: the client closed the connection before the answer.
        finish(req, ctx, started, what === '-' ? wordOf(req.url ?? '/') : what, cache, gone.signal.aborted ? 499 : res.statusCode);
        inFlight -= 1;
        if (inFlight === 0) drained?.();
      });
  }

  const server = createServer(
    {
      maxHeaderSize: 16 * 1024,
      // A request's headers must be whole within --header-timeout (slow clients holding connections
      // open); Node looks every second, so such a connection is closed about a second after.
      headersTimeout: headerTimeoutSeconds * 1000,
      connectionsCheckingInterval: 1000,
      requestTimeout: Math.max(options.timeoutSeconds + 30, headerTimeoutSeconds + 1) * 1000,
    },
    onRequest,
  );
  holdConnections(server, options.maxConnections ?? 1000);
  // Requests Node cannot parse never reach the handler: oversized headers get 431, anything else 400.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    // In the JSON error envelope, as every other answer; closed for good once the answer is written:
    // a client that never reads must not hold the slot.
    socket.end(clientErrorAnswer(err.code, headerTimeoutSeconds), () => socket.destroy());
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  const upkeep = startUpkeep(lib, options.log, metrics, { warmMs: options.warmEveryMs, pruneMs: options.pruneEveryMs ?? 0, alertsMs: options.alertsEveryMs ?? 0 });
  // What the engine read, counted once a run: warming's and other surfaces' runs in this process too.
  const stopCounting = lib.executor.onRun((query, s) => metrics.ran(query.name, s.rows_read, s.bytes_read));

  return {
    url: `http://${host}:${address.port}`,
    server,
    toolsChanged() {
      void routes.mcpEndpoint()?.then((endpoint) => endpoint.toolsChanged());
    },
    async close() {
      upkeep.stop();
      stopCounting();
      // An MCP session's notification stream is a request that never ends on its own.
      await (await routes.mcpEndpoint())?.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      if (inFlight > 0) await new Promise<void>((resolve) => (drained = resolve));
      server.closeIdleConnections();
      await closed;
    },
  };
}
