import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Access, Caller } from '../access/index.js';
import { InterruptedError, MethodNotAllowedError, NotFoundError, SandboxRefusedError, UnauthorizedError, UriTooLongError } from '../errors.js';
import { nodeCrypto } from '../lazy.js';
import type { Log } from '../report.js';
import type { OutcomeNames } from '../calls/outcomes.js';
import { errorBody, MAX_URL_LENGTH, send, sendError } from './answers.js';
import type { Metrics } from './metrics.js';
import { QUERY_PREFIX, splitTarget } from './paths.js';
import { READ_METHODS, credentialOf, foreignSchemeRefusal, type Answered, type RequestContext, type Route } from './route.js';
import type { ServeRoutes } from './routes.js';

/** What a page on another origin may read of an answer. */
const EXPOSED_HEADERS = 'X-Cache, Age, X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset';
/** A caller's own request id is used when it is 1–128 of these characters. */
const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** What the pipeline is made of: the routes, who may call, what is counted and logged, which origins may call. */
export interface PipelineParts {
  readonly routes: ServeRoutes;
  readonly access: Access;
  readonly metrics: Metrics;
  readonly log: Log;
  /** Whether each request is logged, or only warnings and failures. */
  readonly logRequests: boolean;
  /** Origins whose pages may call (CORS); undefined: no CORS header at all. */
  readonly cors: ReadonlySet<string> | undefined;
}

/** Where a request goes: its path and query string, and the route that takes the path (none: 404). */
interface Target {
  readonly path: string;
  readonly search: string;
  readonly route: Route | undefined;
}

/** A request admitted: its route, its target, and its credential (read once, at the start). */
interface Admitted {
  readonly route: Route;
  readonly path: string;
  readonly search: string;
  readonly credential: string | undefined;
}

/**
 * serve's requests, each through the same named steps, top-down:
 *
 *   handle: an id → cors (a preflight answered here) → the route's fast path (an answer from memory,
 *   no promise) → admit (the route, its method, then the caller) → answer (the route's) → finish (the
 *   metric and the log line), whatever the answer; a refusal at any step is its answer (refuse).
 *
 * A refusal decided at once is answered without a promise or an abort signal, so that a flood of
 * forged credentials costs serve as little as it can.
 */
export class RequestPipeline {
  /** A fresh request id: this server's random prefix and a count, unique across servers and restarts without random bytes a request. */
  readonly #idPrefix = `${nodeCrypto().randomUUID().slice(0, 13)}-`;
  #requests = 0;
  #inFlight = 0;
  #drained: (() => void) | undefined;

  constructor(private readonly parts: PipelineParts) {}

  /** One request, from its arrival to its log line. */
  handle(req: IncomingMessage, res: ServerResponse): void {
    const started = performance.now();
    const ctx: RequestContext = { id: this.#requestId(req), caller: undefined, label: undefined };
    const target = this.#target(req.url ?? '/');
    if (this.parts.cors !== undefined && this.#cors(req, res, ctx, target, this.parts.cors)) {
      this.#finish(req, ctx, started, 'preflight', undefined, res.statusCode);
      return;
    }
    const credential = credentialOf(req);
    const fast = target.route?.answerAtOnce?.(req, res, ctx, credential);
    if (fast) {
      this.#finish(req, ctx, started, fast.what, fast.outcome, 200);
      return;
    }
    let admitted: Admitted | Promise<Admitted>;
    try {
      admitted = this.#admit(req, ctx, target, credential);
    } catch (err) {
      this.#refuse(res, ctx, err);
      this.#finish(req, ctx, started, wordOf(target.path), undefined, res.statusCode);
      return;
    }
    // Answers other than a query's rows (its route sends the id itself) are sent with the headers set so far: the id too.
    res.setHeader('X-Request-Id', ctx.id);
    this.#inFlight += 1;
    let answered: Answered = { what: '-' };
    const gone = new AbortController();
    res.once('close', () => {
      if (!res.writableEnded) gone.abort(new InterruptedError('the client closed the connection before the answer.'));
    });
    Promise.resolve(admitted)
      .then((asked) => this.#answer(req, res, ctx, asked, gone.signal))
      .then((r) => (answered = r))
      .catch((err: unknown) => this.#refuse(res, ctx, err))
      .finally(() => {
        // 499, as nginx logs it: the client closed the connection before the answer.
        this.#finish(req, ctx, started, answered.what === '-' ? wordOf(target.path) : answered.what, answered.outcome, gone.signal.aborted ? 499 : res.statusCode);
        this.#inFlight -= 1;
        if (this.#inFlight === 0) this.#drained?.();
      });
  }

  /** Resolves once no request is in flight. */
  drained(): Promise<void> {
    return this.#inFlight === 0 ? Promise.resolve() : new Promise((resolve) => (this.#drained = resolve));
  }

  /**
   * The caller's own request id when it is well formed, else a fresh one: on every answer and its log
   * line. Joined, it is one flat string; added, a pair that Node's check of a header value would have V8
   * flatten through its runtime.
   */
  #requestId(req: IncomingMessage): string {
    const given = req.headers['x-request-id'];
    return typeof given === 'string' && REQUEST_ID.test(given) ? given : [this.#idPrefix, (this.#requests += 1).toString(36)].join('');
  }

  #target(rawUrl: string): Target {
    const { path, search } = splitTarget(rawUrl);
    return { path, search, route: this.parts.routes.table.find((r) => r.matches(path)) };
  }

  /**
   * Browsers on other origins, when --cors-origin names some: their headers set, and a preflight
   * answered (true). What a page on another origin may send and read is its route's (a path no route
   * takes: a query's).
   */
  #cors(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, { route }: Target, cors: ReadonlySet<string>): boolean {
    const origin = req.headers.origin;
    const allowed = origin !== undefined && (cors.has('*') || cors.has(origin));
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
    return true;
  }

  /**
   * Decides a request's route, its method and its caller, in that order, or throws the refusal: at once
   * whenever it can (all but /mcp's check of Host and Origin, and a token not seen before, verified in
   * a promise).
   */
  #admit(req: IncomingMessage, ctx: RequestContext, { path, search, route }: Target, credential: string | undefined): Admitted | Promise<Admitted> {
    if ((req.url ?? '').length > MAX_URL_LENGTH) throw new UriTooLongError(`the request URL is longer than ${MAX_URL_LENGTH} bytes.`);
    if (!route) throw new NotFoundError('no such path; queries are at /api/endpoints/query/<name|id>.');
    ctx.label = route.label;
    const asked: Admitted = { route, path, search, credential };
    return route.before ? route.before(req).then(() => this.#caller(req, ctx, asked)) : this.#caller(req, ctx, asked);
  }

  /** A request's method, then its caller, as its route takes them. */
  #caller(req: IncomingMessage, ctx: RequestContext, asked: Admitted): Admitted | Promise<Admitted> {
    const { route, credential } = asked;
    if (!route.methods.includes(req.method ?? '')) {
      throw new MethodNotAllowedError(`${req.method ?? 'this method'} is not allowed here; use ${route.methods.filter((m) => m !== 'HEAD').join(' or ')}.`, route.methods.join(', '));
    }
    if (route.credential === 'none' || ((route.credential === 'optional' || route.credential === 'open') && credential === undefined)) return asked;
    const foreign = credential === undefined ? foreignSchemeRefusal(req) : undefined;
    if (foreign) throw foreign;
    const known = (caller: Caller): Admitted => {
      ctx.caller = caller;
      if (route.credential === 'key') this.parts.access.authorizeMetrics(caller);
      return asked;
    };
    if (route.credential === 'open') {
      // A credential that is not one known is taken for none: the answer is everyone's.
      const anyone = (err: unknown): Admitted => {
        if (err instanceof UnauthorizedError) return asked;
        throw err;
      };
      try {
        const caller = this.parts.access.authenticate(credential);
        return caller instanceof Promise ? caller.then(known, anyone) : known(caller);
      } catch (err) {
        return anyone(err);
      }
    }
    const caller = this.parts.access.authenticate(credential);
    return caller instanceof Promise ? caller.then(known) : known(caller);
  }

  /** The answer of an admitted request: its route's. */
  async #answer(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, asked: Admitted, gone: AbortSignal): Promise<Answered> {
    const { route, path, search, credential } = asked;
    return (await route.answer({ req, res, ctx, path, search, gone, credential })) ?? { what: route.label ?? path };
  }

  /** A refusal's answer (sendError's, the request id with its own headers); SQL the sandbox refused is counted by its query too. */
  #refuse(res: ServerResponse, ctx: RequestContext, err: unknown): void {
    if (err instanceof SandboxRefusedError) {
      ctx.label = err.query ?? ctx.label;
      this.parts.routes.refusedSql(err, ctx.caller, ctx.id);
    }
    sendError(res, err, this.parts.log, { 'X-Request-Id': ctx.id });
  }

  /** A request's metric and log line, once it is answered. */
  #finish(req: IncomingMessage, ctx: RequestContext, started: number, what: string, outcome: OutcomeNames | undefined, status: number): void {
    const seconds = (performance.now() - started) / 1000;
    // A query's name once it was found, else its route's: the label never takes what a client made up.
    this.parts.metrics.request(ctx.label ?? 'other', status, seconds, outcome);
    if (!this.parts.logRequests) return;
    const caller = ctx.caller;
    this.parts.log.info(`${req.method} ${what} ${status} ${Math.round(seconds * 1000)}ms cache=${outcome?.log ?? '-'} caller=${caller ? caller.quoted : '-'} id=${ctx.id}`);
  }
}

/** The log word of a request no query answered: the name asked for, else the path (both cut short). */
function wordOf(path: string): string {
  return path.startsWith(QUERY_PREFIX) ? path.slice(QUERY_PREFIX.length, QUERY_PREFIX.length + 64) : path.slice(0, 64);
}
