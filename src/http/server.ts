import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Access } from '../access/index.js';
import type { Savedq } from '../library.js';
import type { Log } from '../report.js';
import { holdConnections } from './connections.js';
import { clientErrorAnswer, requestLineTooLong } from './answers.js';
import { keyChecker } from './keys.js';
import { serveMetrics } from './metrics.js';
import { RequestPipeline } from './pipeline.js';
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


/** A running server. */
export interface RunningServer {
  readonly url: string;
  readonly server: Server;
  /** Stops accepting, ends MCP sessions, finishes what is in flight, stops warming. */
  close(): Promise<void>;
  /** Tells MCP sessions that the tools changed: the server answers another set of saved queries. */
  toolsChanged(): void;
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
  const pipeline = new RequestPipeline({ routes, access, metrics, log: options.log, logRequests: options.logRequests !== false, cors });

  const server = createServer(
    {
      maxHeaderSize: 16 * 1024,
      // A request's headers must be whole within --header-timeout (slow clients holding connections
      // open); Node looks every second, so such a connection is closed about a second after.
      headersTimeout: headerTimeoutSeconds * 1000,
      connectionsCheckingInterval: 1000,
      requestTimeout: Math.max(options.timeoutSeconds + 30, headerTimeoutSeconds + 1) * 1000,
    },
    (req, res) => pipeline.handle(req, res),
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
    socket.end(clientErrorAnswer(err.code, headerTimeoutSeconds, requestLineTooLong((err as { rawPacket?: Buffer }).rawPacket)), () => socket.destroy());
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
      await pipeline.drained();
      server.closeIdleConnections();
      await closed;
    },
  };
}
