import type { OutcomeNames } from '../calls/outcomes.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Caller } from '../access/index.js';
import { PayloadTooLargeError, UnauthorizedError } from '../errors.js';

/** What one request's handling learns on the way, for its answer and its log line. */
export interface RequestContext {
  readonly id: string;
  /** Who asked, once known. */
  caller: Caller | undefined;
  /** The saved query it was for, once found, else its route's label: a metric's label (never a name a client made up). */
  label: string | undefined;
}

/** What a route answered: the word of its log line, and for a saved query's answer what the cache did (as said outside: calls/outcomes.ts). */
export interface Answered {
  readonly what: string;
  readonly outcome?: OutcomeNames | undefined;
}

/** A request as a route gets it: its path and query string split, its caller once the route's credential is checked. */
export interface RouteRequest {
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
export interface Route {
  readonly matches: (path: string) => boolean;
  readonly methods: readonly string[];
  /** Its metric label and log word; none for the query route, labelled by the query it finds ('other' when none). */
  readonly label?: string;
  /**
   * None; none or any caller (the answer is the caller's when one is given, a wrong one refused); open to
   * all, a valid credential shown more and a wrong one taken for none (`/health`: a monitor holding an old
   * key must not see the server as down); any caller; or an API key alone.
   */
  readonly credential: 'none' | 'optional' | 'open' | 'caller' | 'key';
  /** Checked before anything else (/mcp: the Host and Origin a page could forge through DNS rebinding). */
  readonly before?: (req: IncomingMessage) => Promise<void>;
  /** Request headers a page on another origin may send besides the credential's, and answer headers it may read. */
  readonly cors?: { readonly allowHeaders: string; readonly exposeHeaders: string };
  /** Sends the answer; a route of the server's own says nothing back (its log word is its label, no cache). */
  // eslint-disable-next-line @typescript-eslint/no-invalid-void-type -- a route of the server's own returns nothing
  readonly answer: (request: RouteRequest) => Promise<Answered | void>;
  /**
   * Its fast path, when it has one: an answer sent at once from memory, before anything else is
   * decided (no promise, no abort signal); undefined when the full path must answer (admit, then answer).
   */
  readonly answerAtOnce?: (req: IncomingMessage, res: ServerResponse, ctx: RequestContext, credential: string | undefined) => Answered | undefined;
}

export const READ_METHODS = ['GET', 'HEAD'] as const;

/**
 * The credential of a request: `Authorization: Bearer <key or token>`, else `X-API-KEY` (an
 * Authorization of another scheme, a proxy's Basic say, is not one). Whitespace inside it is left for
 * authentication to name, once the credential is not one known.
 */
export function credentialOf(req: IncomingMessage): string | undefined {
  const authorization = req.headers.authorization;
  // "Bearer <credential>", the scheme's name in any case (RFC 7235).
  if (authorization !== undefined && authorization.length > 7 && authorization.slice(0, 7).toLowerCase() === 'bearer ') return authorization.slice(7).trim();
  const key = req.headers['x-api-key'];
  return Array.isArray(key) ? undefined : key;
}

/** An HTTP authentication scheme's name as RFC 7235 spells it (a token), short enough to say back. */
const SCHEME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/;

/**
 * The refusal of a request with no credential but an Authorization of a scheme savedq does not take
 * (Basic, Digest, …), naming it; undefined when it is Bearer or there is none.
 */
export function foreignSchemeRefusal(req: IncomingMessage): UnauthorizedError | undefined {
  const scheme = req.headers.authorization?.trim().split(/\s/, 1)[0] ?? '';
  if (scheme === '' || scheme.toLowerCase() === 'bearer') return undefined;
  const named = SCHEME.test(scheme) ? `Authorization: ${scheme}` : 'an Authorization scheme other than Bearer';
  return new UnauthorizedError(`${named} is not taken: send Authorization: Bearer <key or token>, or the key in X-API-KEY.`);
}

/** The request's body as text, refused past its route's bound (413). */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw new PayloadTooLargeError(`the request body is larger than ${maxBytes / 1024 / 1024} MiB.`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
