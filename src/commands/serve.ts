import { resolveServeSettings, type ServeFlags } from '../config.js';
import { DefinitionError, InputError } from '../errors.js';
import { problemText } from '../queries/catalog.js';
import { startServer, type RunningServer } from '../http/server.js';
import type { EngineSocketServer } from '../warehouse/engine-socket-server.js';
import type { Savedq } from '../library.js';
import type { CommonOptions, Io } from './io.js';
import type { Log, ServerLog } from '../report.js';

/** Options of `savedq serve`: its settings' flags (config.ts SERVE_SETTINGS), and the switches of its parts. */
export interface ServeCommandOptions extends CommonOptions, ServeFlags {
  /** False for --no-ui: no page at `/`. */
  readonly ui?: boolean | undefined;
  /** False for --no-mcp: no MCP at `/mcp`. */
  readonly mcp?: boolean | undefined;
  /** False for --no-alerts: the alerts are left to `savedq alerts check`. */
  readonly alerts?: boolean | undefined;
  readonly version: string;
  /** The server's log (serverLog), which the library's warnings go to as well. */
  readonly log: ServerLog;
  /** Called once the server listens: from then on, a signal drains it rather than interrupting its start. */
  readonly onListening?: () => void;
}

/** Cached results are refreshed in the server process this often. */
export const WARM_EVERY_MS = 300_000;
/** The cache is pruned (retention, size) in the server process this often. */
const PRUNE_EVERY_MS = 600_000;
/** The alerts that are due are evaluated this often (an alert's `every` is a minute at least). */
const ALERTS_EVERY_MS = 30_000;

/**
 * `savedq serve`: the HTTP mode. Resolves when the server has stopped after SIGTERM or SIGINT, having
 * finished the requests in flight.
 */
export async function serveCommand(lib: Savedq, options: ServeCommandOptions, io: Io): Promise<void> {
  const settings = resolveServeSettings(options, io.env);
  lib.limitQueue(settings.maxQueue);
  lib.limitExports(settings.maxExports);
  // Every definition is read now: a server answers one whole, valid set of saved queries.
  const { queries, kept, broken } = await lib.catalog.scan();
  const refused = broken.length > 0 ? [] : await lib.executor.refusals([...queries, ...kept]);
  if (broken.length + refused.length > 0) {
    const lines = [...broken.flatMap((b) => b.problems.map((p) => `  ${problemText(p)}`)), ...refused.map((e) => `  ${e.message.replace(/\n/g, '\n  ')}`)];
    const n = broken.length + refused.length;
    throw new DefinitionError(`serve: ${n} saved query ${n === 1 ? 'definition is' : 'definitions are'} broken; fix ${n === 1 ? 'it' : 'them'} first:\n${lines.join('\n')}`);
  }
  const log = options.log;
  // The engine is opened now and kept while the server runs: no request waits for it to start, and every
  // other savedq process on this data directory sends its statements here instead of waiting its turn.
  let share: EngineSocketServer | undefined;
  if (lib.config.urls.length === 0) {
    const warehouse = await lib.warehouse();
    const { EngineSocketServer } = await import('../warehouse/engine-socket-server.js');
    share = await EngineSocketServer.listen(warehouse, lib.config.dataDir, log, () => lib.exportSlot());
  } else {
    // A server's hosts are known (and watched) from the start: /health lists them before the first call.
    await lib.warehouse();
  }
  let server: RunningServer;
  try {
    server = await startServer(lib, {
      settings,
      ui: options.ui !== false,
      mcp: options.mcp !== false,
      warmEveryMs: WARM_EVERY_MS,
      // Past retention and past --cache-max-mb, the cache is pruned every ten minutes while serve runs.
      pruneEveryMs: PRUNE_EVERY_MS,
      alertsEveryMs: options.alerts === false ? 0 : ALERTS_EVERY_MS,
      version: options.version,
      log,
      logRequests: options.quiet !== true,
    });
  } catch (err) {
    await share?.close();
    const code = (err as NodeJS.ErrnoException).code;
    throw new InputError(`cannot listen on ${settings.host}:${settings.port}: ${code ?? String(err)}.`);
  }
  options.onListening?.();
  // What the others sharing the store change reaches this server within a second; it says it is here every 20 s.
  const stopWatching = lib.watchStore();
  void lib.announce('serve');
  const announcing = setInterval(() => void lib.announce('serve'), 20_000);
  announcing.unref();
  // Said even with --quiet: it is where the server is (with --port 0, the only way to know).
  log.always(`savedq serve listening on ${server.url} (${lib.config.urls.length === 0 ? 'embedded engine' : lib.config.urls.length === 1 ? 'ClickHouse server' : `ClickHouse server, ${lib.config.urls.length} hosts`}, ${queries.length} saved queries)`);
  // A new set of saved queries is new tools: MCP sessions are told.
  const onHangup = () => void reloadQueries(lib, log).then((taken) => (taken ? server.toolsChanged() : undefined));
  await new Promise<void>((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      // A second signal is the CLI's to act on (it exits at once).
      if (stopping) return;
      stopping = true;
      log.info(`${signal}: finishing requests in flight, then stopping`);
      process.off('SIGHUP', onHangup);
      clearInterval(announcing);
      stopWatching();
      void server
        .close()
        .then(() => share?.close())
        .then(() => {
          process.off('SIGTERM', onSignal);
          process.off('SIGINT', onSignal);
          resolve();
        });
    };
    // Stay subscribed while draining: the lock library's signal-exit re-raises a signal that no one
    // else listens to, which would kill the server mid-drain.
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    process.on('SIGHUP', onHangup);
  });
}

/**
 * SIGHUP: reads the query folders again and answers from the new set when every definition in it is
 * valid; otherwise keeps answering from the old set and logs why. Requests under way finish with the
 * definition they started with.
 */
export async function reloadQueries(lib: Savedq, log: Log): Promise<boolean> {
  const next = lib.catalog.reread();
  const { queries, kept, broken } = await next.scan();
  const refused = broken.length > 0 ? [] : await lib.executor.refusals([...queries, ...kept]);
  if (broken.length + refused.length > 0) {
    for (const b of broken) for (const p of b.problems) log.error(`reload failed, still serving the previous queries: ${problemText(p)}`);
    for (const e of refused) log.error(`reload failed, still serving the previous queries: ${e.message.split('\n')[0]}`);
    return false;
  }
  lib.useQueries(next);
  log.info(`reloaded: ${queries.length} saved queries`);
  return true;
}
