import type { IncomingMessage } from 'node:http';
import type { Access, Caller } from '../access/index.js';
import type { SandboxRefusedError } from '../errors.js';
import type { Savedq } from '../library.js';
import { storeProcesses } from '../admin.js';
import type { Log } from '../report.js';
import { send } from './answers.js';
import type { McpEndpoint } from './mcp.js';
import type { Metrics } from './metrics.js';
import { openApiDocument } from './openapi.js';
import { PAGE_HEADERS, PAGE_PATHS, pageFile } from './page.js';
import { ExportRoute } from './export-route.js';
import { QueryRoute, callTaker } from './query-route.js';
import { READ_METHODS, type Route, type RouteRequest } from './route.js';

/** What a page on another origin may send to /mcp, and read of its answers, besides. */
const MCP_ALLOWED_HEADERS = 'Content-Type, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID';

/** What serve's routes are made of. */
export interface RoutesOf {
  readonly lib: Savedq;
  readonly access: Access;
  readonly metrics: Metrics;
  readonly log: Log;
  readonly version: string;
  readonly ui: boolean;
  readonly mcp: boolean;
  /** For /mcp's check of Origin and Host. */
  readonly corsOrigins: ReadonlySet<string> | undefined;
  readonly allowedHosts: readonly string[];
  readonly loopback: boolean;
}

/** serve's routes: the table the answers, the 405s, the preflights and the metric labels are read from. */
export interface ServeRoutes {
  readonly table: readonly Route[];
  /** /mcp's sessions, once its first request made them. */
  mcpEndpoint(): Promise<McpEndpoint> | undefined;
  /** A caller's SQL the sandbox refused, on any route: counted by its query, and logged with who sent it. */
  refusedSql(err: SandboxRefusedError, caller: Caller | undefined, requestId: string): void;
}

export function serveRoutes(of: RoutesOf): ServeRoutes {
  const { lib, access, metrics } = of;
  const takeCall = callTaker(access, metrics);
  const refusedSql = (err: SandboxRefusedError, caller: Caller | undefined, requestId: string) => {
    metrics.sandboxRefused(err.query ?? 'other');
    of.log.warn(`sandbox: refused the SQL of ${caller?.quoted ?? '-'} for ${err.query ?? '-'}: ${err.message} id=${requestId}`);
  };
  // /mcp's sessions, made on its first request (the SDK is loaded then, not before).
  let mcp: Promise<McpEndpoint> | undefined;
  const mcpEndpoint = (): Promise<McpEndpoint> =>
    (mcp ??= import('./mcp.js').then(
      (m) => new m.McpEndpoint({ lib, takeCall, refusedSql, version: of.version, log: of.log, corsOrigins: of.corsOrigins, allowedHosts: of.allowedHosts, loopback: of.loopback }),
    ));
  const openapiText = openapiTexts(lib, of.version);
  const query = new QueryRoute(lib, access, takeCall);
  /** What answers kept in memory take (--memory-mb): their rows, and serve's bodies of them. */
  const answersMemory = () => {
    const [rows, bodies] = [lib.recentMemory(), query.bodiesMemory()];
    return { rows: { bytes: rows.bytes, max_bytes: rows.maxBytes }, bodies: { bytes: bodies.bytes, max_bytes: bodies.maxBytes } };
  };
  const fixedPath = (path: string) => (p: string) => p === path;
  const table: Route[] = [];
  if (of.mcp) {
    table.push({
      matches: fixedPath('/mcp'),
      methods: ['GET', 'POST', 'DELETE'],
      label: '/mcp',
      credential: 'caller',
      before: async (req: IncomingMessage) => (await mcpEndpoint()).checkHostAndOrigin(req),
      cors: { allowHeaders: MCP_ALLOWED_HEADERS, exposeHeaders: 'Mcp-Session-Id' },
      answer: async ({ req, res, ctx, credential }: RouteRequest) => {
        await (await mcpEndpoint()).handle(req, res, ctx.caller as Caller, credential ?? '');
      },
    });
  }
  if (of.ui) {
    for (const path of PAGE_PATHS) {
      table.push({
        matches: fixedPath(path),
        methods: READ_METHODS,
        label: path,
        credential: 'none',
        answer: async ({ res }) => {
          const { body, type } = await pageFile(path);
          res.writeHead(200, { ...PAGE_HEADERS, 'Content-Type': type, 'Content-Length': body.length });
          res.end(body);
        },
      });
    }
  }
  table.push(
    {
      matches: fixedPath('/health'),
      methods: READ_METHODS,
      label: '/health',
      credential: 'open',
      answer: async ({ res, ctx }) => {
        // The warehouse's queue (queue.ts): what an operator (and a test) waits on. The
        // store answers or not (a server without it still answers: 200); where it is and who shares it,
        // to an API key only (an address is not every caller's to learn).
        const queue = lib.engineQueue();
        const store = lib.store.up ? 'ok' : 'unreachable';
        const shared = ctx.caller?.kind === 'key' ? { store_location: lib.store.location, processes: (await storeProcesses(lib)).map((p) => ({ ...p, seen: new Date(p.seen).toISOString() })), memory: answersMemory() } : {};
        // A server warehouse: whether any host answers, to anyone (200 whatever it says: serve still
        // answers from the store, and a balancer must not pull every replica at once); each host, to a key.
        const hosts = lib.warehouseHosts();
        const warehouse = hosts ? { warehouse: hosts.unreachable ? 'unreachable' : 'ok', ...(ctx.caller?.kind === 'key' ? { hosts: hosts.hosts } : {}) } : {};
        send(res, 200, { status: 'ok', store, ...warehouse, queue, ...shared });
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
    query,
    new ExportRoute(lib, takeCall, metrics, of.log),
  );
  return { table, mcpEndpoint: () => mcp, refusedSql };
}

/**
 * The OpenAPI document as text: everyone's (made again only when the server answers another set of
 * saved queries, after SIGHUP), and a caller's own (its queries, its fixed parameters), kept with the
 * caller while it is known.
 */
function openapiTexts(lib: Savedq, version: string): (caller: Caller | undefined) => Promise<string> {
  let everyones = { for: lib.catalog, text: '' };
  const callers = new WeakMap<Caller, { for: typeof lib.catalog; text: string }>();
  return async (caller) => {
    const queries = lib.catalog;
    const kept = caller ? callers.get(caller) : everyones;
    if (kept && kept.for === queries && kept.text !== '') return kept.text;
    const made = { for: queries, text: JSON.stringify(openApiDocument(version, await queries.scan(), caller, lib.executor.shapeOf)) };
    if (caller) callers.set(caller, made);
    else everyones = made;
    return made.text;
  };
}
