import { resolveServeSettings } from '../config.js';
import { DefinitionError, InputError } from '../errors.js';
import { problemText, QueryCatalog } from '../queries/catalog.js';
import { startServer, type RunningServer } from '../http/server.js';
import type { Savedq } from '../library.js';
import type { CommonOptions, Io } from './io.js';

/** Options of `savedq serve`. */
export interface ServeCommandOptions extends CommonOptions {
  readonly host?: string | undefined;
  readonly port?: string | undefined;
  readonly apiKeyFile?: string | undefined;
  readonly version: string;
}

/** Cached results are refreshed in the server process this often. */
export const WARM_EVERY_MS = 300_000;

/**
 * `savedq serve`: the HTTP mode. Resolves when the server has stopped after SIGTERM or SIGINT, having
 * finished the requests in flight.
 */
export async function serveCommand(lib: Savedq, options: ServeCommandOptions, io: Io): Promise<void> {
  const { host, port, apiKeys } = resolveServeSettings(options, io.env);
  // Every definition is read now: a server answers one whole, valid set of saved queries.
  const { queries, broken } = await lib.queries.scan();
  if (broken.length > 0) {
    lib.takeWarnings(); // listed in the error itself
    const lines = broken.flatMap((b) => b.problems.map((p) => `  ${problemText(p)}`));
    throw new DefinitionError(`serve: ${broken.length} saved query ${broken.length === 1 ? 'definition is' : 'definitions are'} broken; fix ${broken.length === 1 ? 'it' : 'them'} first:\n${lines.join('\n')}`);
  }
  const log = (line: string) => {
    if (!options.quiet || line.startsWith('warning') || line.includes('failed')) io.stderr.write(`${line}\n`);
  };
  let server: RunningServer;
  try {
    server = await startServer(lib, {
      host,
      port,
      apiKeys,
      timeoutSeconds: lib.config.queryTimeoutSeconds,
      warmEveryMs: WARM_EVERY_MS,
      version: options.version,
      log,
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new InputError(`cannot listen on ${host}:${port}: ${code ?? String(err)}.`);
  }
  // Said even with --quiet: it is where the server is (with --port 0, the only way to know).
  io.stderr.write(
    `savedq serve listening on ${server.url} (${lib.config.url === undefined ? 'embedded engine' : 'ClickHouse server'}, ${queries.length} saved queries)\n`,
  );
  const onHangup = () => void reloadQueries(lib, log);
  await new Promise<void>((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      // A second signal is the CLI's to act on (it exits at once).
      if (stopping) return;
      stopping = true;
      log(`${signal}: finishing requests in flight, then stopping`);
      process.off('SIGHUP', onHangup);
      void server.close().then(() => {
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
export async function reloadQueries(lib: Savedq, log: (line: string) => void): Promise<boolean> {
  const next = new QueryCatalog(lib.queries.folders);
  const { queries, broken } = await next.scan();
  if (broken.length > 0) {
    for (const b of broken) for (const p of b.problems) log(`reload failed, still serving the previous queries: ${problemText(p)}`);
    return false;
  }
  lib.useQueries(next);
  log(`reloaded: ${queries.length} saved queries`);
  return true;
}
