import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import type { Caller } from '../access/index.js';
import { ForbiddenError, type SandboxRefusedError } from '../errors.js';
import { nodeCrypto } from '../lazy.js';
import type { Savedq } from '../library.js';
import { loadSdk, type Sdk } from '../mcp/load.js';
import { mcpServer } from '../mcp/session.js';
import type { Log } from '../report.js';
import { readBody } from './route.js';

/** What serve's /mcp needs of serve. */
export interface McpEndpointOptions {
  readonly lib: Savedq;
  /** Takes one call from the caller's rate limit (serve's: its headers, its refusal, its metric). */
  readonly takeCall: (res: ServerResponse, caller: Caller) => void;
  /** A caller's SQL the sandbox refused in a tool call (serve's metric and log line). */
  readonly refusedSql: (err: SandboxRefusedError, caller: Caller | undefined, requestId: string) => void;
  readonly version: string;
  readonly log: Log;
  /** Origins --cors-origin allows (`*` any), besides serve's own. */
  readonly corsOrigins: ReadonlySet<string> | undefined;
  /** Names a Host header may carry (--allowed-host), a port or not. */
  readonly allowedHosts: readonly string[];
  /** serve listens on a loopback address: `localhost` is its name too. */
  readonly loopback: boolean;
}

/** A request's body is read whole (JSON-RPC), up to this. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** Sessions kept at once; one more closes the one idle longest. */
const MAX_SESSIONS = 1_000;
/** A session nobody has used for this long is closed. */
const IDLE_MS = 3_600_000;

interface Session {
  readonly transport: InstanceType<Sdk['StreamableHTTPServerTransport']>;
  readonly server: InstanceType<Sdk['Server']>;
  /** A digest of the credential that opened it: only that credential may use it. */
  readonly owner: string;
  lastSeen: number;
}

type Message = { id?: unknown; method?: unknown };

/**
 * serve's MCP endpoint (Streamable HTTP): the same tools as `savedq mcp`, for serve's callers. An API
 * key sees every query; a token its scopes, its fixed parameters applied and its rate limit counting
 * every JSON-RPC request. Host and Origin are checked first, against DNS rebinding: a page on another
 * site cannot reach a local serve through a name of its own that resolves to 127.0.0.1.
 */
export class McpEndpoint {
  readonly #options: McpEndpointOptions;
  readonly #sessions = new Map<string, Session>();
  readonly #sweep: NodeJS.Timeout;

  constructor(options: McpEndpointOptions) {
    this.#options = options;
    this.#sweep = setInterval(() => {
      const now = Date.now();
      for (const [id, s] of this.#sessions) if (now - s.lastSeen > IDLE_MS) void this.#end(id);
    }, 60_000);
    this.#sweep.unref();
  }

  /** Answers a request to /mcp whose caller is known (serve authenticated it). */
  async handle(req: IncomingMessage, res: ServerResponse, caller: Caller, credential: string): Promise<void> {
    const owner = nodeCrypto().createHash('sha256').update(credential).digest('base64url');
    const id = req.headers['mcp-session-id'];
    const sessionId = typeof id === 'string' ? id : undefined;
    const session = sessionId === undefined ? undefined : this.#sessions.get(sessionId);
    if (sessionId !== undefined && !session) { jsonRpcError(res, 404, -32001, 'no such session (it ended, or the server restarted): initialize again.'); return; }
    if (session && session.owner !== owner) throw new ForbiddenError('this MCP session was opened with another credential.');
    const sdk = await loadSdk();
    let body: unknown;
    if (req.method === 'POST') {
      const text = await readBody(req, MAX_BODY_BYTES);
      try {
        body = JSON.parse(text);
      } catch {
        jsonRpcError(res, 400, -32700, 'parse error: the body is not JSON.'); return;
      }
      // JSON that is no JSON-RPC message is JSON-RPC's Invalid Request (-32600), not a parse error.
      if (!(Array.isArray(body) ? body.length > 0 && body.every((m) => sdk.JSONRPCMessageSchema.safeParse(m).success) : sdk.JSONRPCMessageSchema.safeParse(body).success)) {
        jsonRpcError(res, 400, -32600, 'Invalid Request: the body is not a JSON-RPC 2.0 message (jsonrpc "2.0", and a method with an id, or a result or an error).'); return;
      }
      // Every JSON-RPC request counts against the caller's limit; notifications and the stream do not.
      const requests = (Array.isArray(body) ? body : [body]).filter((m: Message) => typeof m === 'object' && m !== null && m.id !== undefined && typeof m.method === 'string').length;
      for (let i = 0; i < requests; i++) this.#options.takeCall(res, caller);
    }
    if (session) {
      session.lastSeen = Date.now();
      await session.transport.handleRequest(req, res, body);
      return;
    }
    const initializing = req.method === 'POST' && (Array.isArray(body) ? body.some((m) => sdk.isInitializeRequest(m)) : sdk.isInitializeRequest(body));
    if (!initializing) { jsonRpcError(res, 400, -32000, 'no session: send initialize first, then the Mcp-Session-Id it answers with.'); return; }
    await this.#open(sdk, caller, owner).transport.handleRequest(req, res, body);
  }

  /** Refuses a request whose Host or Origin is not this server's (or one it was told to take). */
  checkHostAndOrigin(req: IncomingMessage): void {
    const host = (req.headers.host ?? '').toLowerCase();
    const name = host.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
    // A rebinding attack needs a DNS name: an address is never one, nor is a loopback's localhost.
    const known = isIP(name) !== 0 || (this.#options.loopback && name === 'localhost') || this.#options.allowedHosts.some((h) => h === host || h === name);
    if (!known) throw new ForbiddenError(`the Host ${JSON.stringify(host.slice(0, 100))} is not this server's name; start serve with --allowed-host ${name.slice(0, 100) || '<name>'} to answer it.`);
    const origin = req.headers.origin;
    if (origin === undefined) return;
    const cors = this.#options.corsOrigins;
    if (origin !== `http://${host}` && !cors?.has('*') && !cors?.has(origin)) {
      throw new ForbiddenError(`a page of ${JSON.stringify(origin.slice(0, 100))} may not call /mcp (see --cors-origin).`);
    }
  }

  /** Tells every session that the tools changed (serve took a new set of saved queries). */
  toolsChanged(): void {
    for (const s of this.#sessions.values()) s.server.sendToolListChanged().catch(() => undefined);
  }

  /** Ends every session. */
  async close(): Promise<void> {
    clearInterval(this.#sweep);
    await Promise.all([...this.#sessions.keys()].map((id) => this.#end(id)));
  }

  #open(sdk: Sdk, caller: Caller, owner: string): Session {
    if (this.#sessions.size >= MAX_SESSIONS) {
      const idlest = [...this.#sessions.entries()].sort((a, b) => a[1].lastSeen - b[1].lastSeen)[0];
      if (idlest) void this.#end(idlest[0]);
    }
    const { lib, version, log, refusedSql } = this.#options;
    const server = mcpServer(sdk, { lib, version, caller, log, refusedSql: (err) => refusedSql(err, caller, 'mcp') });
    const session: Session = {
      server,
      owner,
      lastSeen: Date.now(),
      transport: new sdk.StreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (id) => void this.#sessions.set(id, session),
      }),
    };
    session.transport.onclose = () => {
      const id = session.transport.sessionId;
      if (id !== undefined) this.#sessions.delete(id);
    };
    void server.connect(session.transport);
    return session;
  }

  async #end(id: string): Promise<void> {
    const session = this.#sessions.get(id);
    this.#sessions.delete(id);
    await session?.server.close().catch(() => undefined);
  }
}

/** A JSON-RPC error answer of the transport's kind (no request id to answer). */
function jsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  const text = JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}
