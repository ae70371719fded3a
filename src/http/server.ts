import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Access } from '../access/index.js';
import type { Savedq } from '../library.js';
import type { Log } from '../report.js';
import type { ServeSettings } from '../config.js';
import { holdConnections } from './connections.js';
import { clientErrorAnswer, requestLineTooLong } from './answers.js';
import { keyChecker } from './keys.js';
import { serveMetrics } from './metrics.js';
import { RequestPipeline } from './pipeline.js';
import { serveRoutes } from './routes.js';
import { keepTickShape } from './tick-shape.js';
import { startUpkeep } from './upkeep.js';

/** How the HTTP mode runs: serve's settings, resolved once (config.ts), and what the command decides besides. */
export interface ServeOptions {
  readonly settings: ServeSettings;
  /** How often to warm the cache in this process; 0 = never. */
  readonly warmEveryMs: number;
  /** How often to prune the cache in this process (retention, --cache-max-mb); 0 = never. */
  readonly pruneEveryMs: number;
  /** How often to evaluate the alerts that are due; 0 = never. */
  readonly alertsEveryMs: number;
  readonly version: string;
  /** Where log lines go (one per request; never a key or a parameter value). */
  readonly log: Log;
  /** Whether each request is logged, or only warnings and failures. */
  readonly logRequests: boolean;
  /** The page for people at `/`; false: 404 there, as any unknown path. */
  readonly ui: boolean;
  /** MCP at `/mcp`; false: 404 there. */
  readonly mcp: boolean;
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
  const { settings } = options;
  const cors = settings.corsOrigins.length > 0 ? new Set(settings.corsOrigins) : undefined;
  const metrics = await serveMetrics(() => lib.engineQueue(), lib.store, () => lib.warehouseHosts());
  await keepTickShape();
  const access = new Access({
    isKey: keyChecker(settings.apiKeys),
    secrets: settings.tokenSecrets.map((s) => new TextEncoder().encode(s)),
    rateLimit: settings.rateLimit,
    clock: () => lib.clock(),
    // A caller's limit holds across every serve that shares the store.
    sharedBuckets: (bucket, used, rps, burst) => lib.store.takeFromBucket(bucket, used, rps, burst),
  });
  const { headerTimeoutSeconds } = settings;
  const routes = serveRoutes({
    lib,
    access,
    metrics,
    log: options.log,
    version: options.version,
    ui: options.ui,
    mcp: options.mcp,
    corsOrigins: cors,
    allowedHosts: settings.allowedHosts,
    loopback: /^(127\.|::1$|localhost$)/.test(settings.host),
  });
  const pipeline = new RequestPipeline({ routes, access, metrics, log: options.log, logRequests: options.logRequests, cors });

  const server = createServer(
    {
      maxHeaderSize: 16 * 1024,
      // A request's headers must be whole within --header-timeout (slow clients holding connections
      // open); Node looks every second, so such a connection is closed about a second after.
      headersTimeout: headerTimeoutSeconds * 1000,
      connectionsCheckingInterval: 1000,
      // A request's own limit is the query's and half a minute more: a request never ends before the query it waits for.
      requestTimeout: Math.max(lib.config.queryTimeoutSeconds + 30, headerTimeoutSeconds + 1) * 1000,
    },
    (req, res) => pipeline.handle(req, res),
  );
  holdConnections(server, settings.maxConnections);
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
    server.listen(settings.port, settings.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  const upkeep = startUpkeep(lib, options.log, metrics, { warmMs: options.warmEveryMs, pruneMs: options.pruneEveryMs, alertsMs: options.alertsEveryMs });
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
