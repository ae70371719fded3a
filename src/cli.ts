import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { resolveConfig, type ConfigFlags } from './config.js';
import { SavedqError } from './errors.js';
import { Savedq } from './library.js';
import type { CommonOptions, Io } from './commands/io.js';

const io: Io = { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env };
const version = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
  .version;

type GlobalFlags = ConfigFlags & CommonOptions & { debug?: boolean };

let library: Savedq | undefined;
function lib(flags: GlobalFlags, options: { idleCloseMs?: number } = {}): Savedq {
  library ??= new Savedq(resolveConfig(flags, io.env), options);
  return library;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

const program = new Command('savedq')
  .description('Run saved, parameterised analytics queries over platform log data.')
  .version(version, '-V, --version')
  .option('--url <url>', 'ClickHouse server URL (default: the embedded engine; env SAVEDQ_CLICKHOUSE_URL)')
  .option('--data-dir <dir>', 'embedded engine data directory (env SAVEDQ_DATA_DIR)')
  .option('--cache-file <file>', 'results cache file (env SAVEDQ_CACHE_FILE)')
  .option('--lock-wait <seconds>', 'how long to wait for another process using the data directory (default 30)')
  .option('--timeout <seconds>', 'per-query time limit (default 30)')
  .option('--no-color', 'no colour, whatever the terminal')
  .option('--verbose', 'report cache status and progress on standard error even when it is not a terminal')
  .option('-q, --quiet', 'report nothing on standard error but errors')
  .option('--debug', 'show stack traces on errors')
  .showSuggestionAfterError()
  .exitOverride()
  .configureOutput({ outputError: (text, write) => write(`savedq: ${text.replace(/^error: /, '')}`) });

program
  .command('run')
  .description('run a saved query and print its rows')
  .argument('<endpoint>', 'endpoint name or id')
  .option('-p, --param <name=value>', 'a parameter (repeatable)', collect, [])
  .addOption(new Option('-f, --format <format>', 'output format (default: table on a terminal, else json)').choices(['table', 'json', 'ndjson', 'csv']))
  .option('--no-cache', 'neither read nor write the results cache')
  .option('--refresh', 'run the query and replace the cached result')
  .option('--at <iso>', 'run the query as of this instant instead of now')
  .action(async (endpoint: string, opts: { param: string[]; format?: string; cache: boolean; refresh?: boolean; at?: string }, cmd: Command) => {
    const flags = cmd.optsWithGlobals<GlobalFlags>();
    const { runCommand } = await import('./commands/run.js');
    await runCommand(
      lib(flags),
      {
        ...flags,
        endpoint,
        params: opts.param,
        format: opts.format,
        at: opts.at,
        cache: !opts.cache ? 'bypass' : opts.refresh ? 'refresh' : 'use',
      },
      io,
    );
  });

program
  .command('list')
  .description('list the saved queries and their parameters')
  .addOption(new Option('-f, --format <format>', 'output format (default: table on a terminal, else json)').choices(['table', 'json', 'ndjson', 'csv']))
  .action(async (opts: { format?: string }, cmd: Command) => {
    const { listCommand } = await import('./commands/list.js');
    await listCommand({ ...cmd.optsWithGlobals<GlobalFlags>(), format: opts.format }, io);
  });

program
  .command('load')
  .description('load newline-delimited JSON events into a log table, or sample events with --sample')
  .argument('[table]', 'edge_logs or function_edge_logs')
  .argument('[file]', 'NDJSON file; - or none reads standard input')
  .option('--sample', 'generate realistic sample events for a few projects over the last 90 days')
  .action(async (table: string | undefined, file: string | undefined, opts: { sample?: boolean }, cmd: Command) => {
    const flags = cmd.optsWithGlobals<GlobalFlags>();
    const { loadCommand } = await import('./commands/load.js');
    await loadCommand(lib(flags), { ...flags, table, file, sample: opts.sample }, io);
  });

program
  .command('warm')
  .description('refresh cached results people still use (for cron: */5 * * * * savedq warm)')
  .argument('[endpoint]', 'warm only this call: endpoint name or id, with its -p parameters')
  .option('-p, --param <name=value>', 'a parameter of the one call to warm (repeatable)', collect, [])
  .option('--at <iso>', 'the --at instant of the one call to warm')
  .action(async (endpoint: string | undefined, opts: { param: string[]; at?: string }, cmd: Command) => {
    const flags = cmd.optsWithGlobals<GlobalFlags>();
    const { warmCommand } = await import('./commands/warm.js');
    await warmCommand(lib(flags), { ...flags, endpoint, params: opts.param, at: opts.at }, io);
  });

const cache = program.command('cache').description('inspect or clear the results cache');
cache
  .command('list')
  .description('list cached calls: endpoint, parameters, age, last served, expiry')
  .addOption(new Option('-f, --format <format>', 'output format (default: table on a terminal, else json)').choices(['table', 'json', 'ndjson', 'csv']))
  .action(async (opts: { format?: string }, cmd: Command) => {
    const flags = cmd.optsWithGlobals<GlobalFlags>();
    const { cacheListCommand } = await import('./commands/cache.js');
    await cacheListCommand(lib(flags), { ...flags, format: opts.format }, io);
  });
cache
  .command('clear')
  .description('remove every cached result')
  .action(async (_opts: unknown, cmd: Command) => {
    const flags = cmd.optsWithGlobals<GlobalFlags>();
    const { cacheClearCommand } = await import('./commands/cache.js');
    await cacheClearCommand(lib(flags), flags, io);
  });

program
  .command('serve')
  .description('serve the endpoints over HTTP at /api/endpoints/query/<name|id>, behind X-API-KEY')
  .option('--host <host>', 'address to bind', '127.0.0.1')
  .option('--port <port>', 'port to listen on (0 = any free port)', '4000')
  .option('--api-key-file <file>', 'file of accepted API keys, one a line (else env SAVEDQ_API_KEYS, comma-separated)')
  .action(async (opts: { host: string; port: string; apiKeyFile?: string }, cmd: Command) => {
    const flags = cmd.optsWithGlobals<GlobalFlags>();
    const { serveCommand } = await import('./commands/serve.js');
    // Between requests the server lets go of the embedded data directory, so cron jobs and runs get turns.
    await serveCommand(lib(flags, { idleCloseMs: 2000 }), { ...flags, ...opts, version }, io);
  });

/** The one place errors become messages and exit codes. */
async function main(argv: string[]): Promise<number> {
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0) return 0;
      return 2;
    }
    const debug = program.opts<GlobalFlags>().debug === true;
    if (err instanceof SavedqError) {
      io.stderr.write(`savedq: ${err.message}\n`);
      if (debug && err.cause instanceof Error) io.stderr.write(`${err.cause.stack ?? err.cause.message}\n`);
      return err.exitCode;
    }
    io.stderr.write(`savedq: unexpected error: ${err instanceof Error ? err.message : String(err)}\n`);
    if (debug && err instanceof Error) io.stderr.write(`${err.stack}\n`);
    return 1;
  } finally {
    await library?.close().catch(() => undefined);
  }
}

process.exitCode = await main(process.argv);
