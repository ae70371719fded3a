import { Command, Option } from 'commander';
import { resolveConfig, SERVE_SETTINGS, settingHelp, SETTINGS, type ConfigFlags, type ServeFlags } from './config.js';
import { Savedq, type Role } from './library.js';
import { packageVersion } from './package.js';
import { RUN_FORMATS } from './output/index.js';
import type { CliShape, CommandShape, OptionShape } from './commands/completion.js';
import { CHECK_FORMATS, SHELLS, TEST_FORMATS } from './commands/choices.js';
import { hintWidth, note, report, type CommonOptions, type Io } from './commands/io.js';
import { serverLog, type Reporter } from './report.js';
import { TABLES } from './warehouse/schema.js';
import { wrapped } from './output/wrap.js';
import { sayErrors } from './cli/guess.js';
import { collect, examples, formatOption, withSettings } from './cli/help.js';
import { main } from './cli/main.js';
import { afterOutput, commanderThrough, standardOutput, streamsFromNowOn } from './cli/output.js';
import { interrupt, interruptible, servingNow } from './cli/signals.js';

// The command line: each command registered with its options, help and action, which loads the
// command's module when it runs. What commander cannot say is apart (cli/): the help's examples, the
// guesses after an error, the top-level error handler, signals, and a reader of the output going away.

// Standard input is opened only by the commands that read it: a cache hit, which reads none, is mostly
// start-up. Standard output and error become Node's streams only when needed (cli/output.ts).
const io: Io = {
  get stdin() {
    return process.stdin;
  },
  ...standardOutput,
  env: process.env,
};
const version = packageVersion();

type GlobalFlags = ConfigFlags & CommonOptions & { debug?: boolean };

let library: Savedq | undefined;
/** The library, made once a run; what it has to say goes to standard error (`serve`: to its log). */
function lib(flags: GlobalFlags, options: { role?: Role; reporter?: Reporter } = {}): Savedq {
  const reporter: Reporter = options.reporter ?? { warn: (message) => report(io, flags, `warning: ${message}`), note: (message) => note(io, flags, message) };
  if (!library) {
    const config = resolveConfig(flags, io.env);
    // What is wrong with the configuration itself is said even with --quiet: a cron job's mail is where it is read.
    for (const warning of config.warnings) (options.reporter ?? { warn: (w: string) => io.stderr.write(`${wrapped(`warning: ${w}`, 0, 2, hintWidth(io))}\n`) }).warn(warning);
    library = new Savedq(config, { ...options, reporter, signal: interrupt.signal });
  }
  return library;
}

/** A command's action: commander's arguments and options as they come, the global flags first (the command itself is not needed). */
function action<A extends unknown[]>(run: (flags: GlobalFlags, ...args: A) => Promise<void>): (...given: [...A, Command]) => Promise<void> {
  return (...given) => run((given.at(-1) as Command).optsWithGlobals<GlobalFlags>(), ...(given.slice(0, -1) as A));
}

const program = withSettings(
  new Command('savedq').description('Run saved, parameterised analytics queries over platform log data.').version(version, '-V, --version'),
  'url',
  'loadBalance',
  'warehouseConcurrency',
  'passwordFile',
  'dataDir',
  'cacheFile',
  'store',
  'storePasswordFile',
  'queries',
  'lockWait',
  'timeout',
  'cacheMaxMb',
  'memoryMb',
  'sandboxMaxMemoryMb',
)
  .option('--no-color', 'no colour, whatever the terminal')
  .option('--expanded', 'show table rows as records: one block of field/value lines each')
  .option('--no-expanded', 'keep tables as tables even when wider than the terminal (default: records then)')
  .option('--csv-raw', "CSV: write text as it is (default: a cell a spreadsheet would run as a formula starts with ')")
  .option('--verbose', 'report cache status and progress on standard error even when it is not a terminal')
  .option('-q, --quiet', 'report nothing on standard error but errors')
  .option('--debug', 'show stack traces on errors')
  .showSuggestionAfterError(false)
  .exitOverride()
  .addHelpText(
    'after',
    examples(
      'savedq load --sample',
      'savedq list',
      'savedq run usage.api-counts -p project=acme-shop -p interval=daily',
      'savedq run logs.all -p project=acme-shop -f ndjson | jq .event_message',
      'SAVEDQ_API_KEYS=secret savedq serve --port 4000',
    ),
  );

program
  .command('run')
  .description('run a saved query and print its rows')
  .argument('<query>', 'saved query name or id')
  .option('-p, --param <name=value>', 'a parameter (repeatable)', collect)
  .addOption(formatOption(RUN_FORMATS))
  .option('--no-cache', 'neither read nor write the results cache')
  .option('--refresh', 'run the query and replace the cached result')
  .option('--at <iso>', "run with the query's @now at this instant: windows are measured back from it, and logs.all and usage.api-counts still count what came after it (no upper bound)")
  .option('--sql <select>', "your own SELECT over the query's answer, which it reads as the table result (queries with sandbox: true)")
  .option('--stats', 'after the answer, one line on standard error: rows, truncated or not, cached and how old, seconds, rows and bytes read')
  .addHelpText(
    'after',
    examples(
      'savedq run usage.api-counts -p project=acme-shop -p interval=hourly',
      'savedq run functions.invocation-stats -p project=acme-shop -p interval=1hr -f table',
      'savedq run usage.api-counts -p project=acme-shop -p interval=minutely -f chart',
      'savedq run logs.all -p project=acme-shop -p project_tier=PRO -p iso_timestamp_start=2026-11-21T00:00:00Z',
      'savedq run 0f4c6b2e-7f3a-4a51-9a8e-3d2b1c5e6f01 -p project=acme-shop --at 2026-11-21T12:00:00Z -f csv',
    ),
  )
  .action(action(async (flags, nameOrId: string, opts: { param?: string[]; format?: string; cache: boolean; refresh?: boolean; at?: string; sql?: string; stats?: boolean }) => {
    const { runCommand } = await import('./commands/run.js');
    await runCommand(
      lib(flags),
      {
        ...flags,
        nameOrId,
        params: opts.param ?? [],
        format: opts.format,
        at: opts.at,
        sql: opts.sql,
        stats: opts.stats,
        cache: !opts.cache ? 'skip' : opts.refresh ? 'refresh' : 'use',
        signal: interrupt.signal,
      },
      io,
    );
  }));

program
  .command('export')
  .description("write a saved query's whole answer, past its row cap, as it streams from the warehouse: NDJSON, CSV, Parquet or Arrow, never cached")
  .argument('<query>', 'saved query name or id')
  .option('-p, --param <name=value>', 'a parameter (repeatable)', collect)
  .addOption(new Option('-f, --format <format>', 'ndjson (default), csv, or the engine\'s parquet or arrow (an Arrow IPC stream)').choices(['ndjson', 'csv', 'parquet', 'arrow']))
  .option('-o, --output <file>', 'write to this file (as FILE.partial, renamed once whole) rather than standard output')
  .option('--at <iso>', "run with the query's @now at this instant")
  .option('--sql <select>', "your own SELECT over the query's answer, which it reads as the table result (queries with sandbox: true)")
  .addHelpText(
    'after',
    examples(
      'savedq export logs.all -p project=acme-shop > logs.ndjson',
      'savedq export usage.api-counts -p project=acme-shop -p interval=minutely -f parquet -o counts.parquet',
      "duckdb -c \"SELECT count(*) FROM 'counts.parquet'\"",
      'savedq export usage.api-counts -p project=acme-shop -p interval=hourly -f csv | head -n 3',
    ),
  )
  .action(action(async (flags, nameOrId: string, opts: { param?: string[]; format?: string; output?: string; at?: string; sql?: string }) => {
    const { exportCommand } = await import('./commands/export.js');
    await exportCommand(lib(flags), { ...flags, nameOrId, params: opts.param ?? [], format: opts.format, output: opts.output, at: opts.at, sql: opts.sql, signal: interrupt.signal }, io);
  }));

program
  .command('list')
  .description('list the saved queries and their parameters (their files as read; only check asks the engine whether it takes each query\'s SQL)')
  .addOption(formatOption())
  .addHelpText('after', examples('savedq list', "savedq list -f json | jq '.[].name'", 'savedq check    # every definition, the engine asked too'))
  .action(action(async (flags, opts: { format?: string }) => {
    const { listCommand } = await import('./commands/list.js');
    await listCommand(lib(flags), { ...flags, format: opts.format }, io);
  }));

program
  .command('load')
  .description('load newline-delimited JSON events into a log table, or sample events with --sample')
  .argument('[table]', 'edge_logs or function_edge_logs')
  .argument('[file]', 'NDJSON file; - or none reads standard input')
  .option('--sample', 'generate realistic sample events for a few projects over the last 90 days (once: a table that holds the sample is left as it is)')
  .option('--replace', 'with --sample: delete the sample a table holds and load it anew, as of now')
  .option('--batch-mb <megabytes>', 'input per insert; smaller batches use less memory (default 32)')
  .addHelpText(
    'after',
    examples('savedq load --sample', 'savedq load --sample --replace', 'savedq load edge_logs events.ndjson', 'zcat functions.ndjson.gz | savedq load function_edge_logs -'),
  )
  .action(action(async (flags, table: string | undefined, file: string | undefined, opts: { sample?: boolean; replace?: boolean; batchMb?: string }) => {
    const { loadCommand } = await import('./commands/load.js');
    await loadCommand(lib(flags), { ...flags, table, file, sample: opts.sample, replace: opts.replace, batchMb: opts.batchMb, signal: interrupt.signal }, io);
  }));

program
  .command('warm')
  .description('refresh cached results people still use (for cron: */5 * * * * savedq warm)')
  .argument('[query]', 'warm only this call: saved query name or id, with its -p parameters')
  .option('-p, --param <name=value>', 'a parameter of the one call to warm (repeatable)', collect)
  .option('--at <iso>', 'the --at instant of the one call to warm')
  .option('--max-time <seconds>', 'stop after this long, the most recently served refreshed first (default 240: a */5 cron never overlaps itself)')
  .addHelpText('after', examples('savedq warm', 'savedq warm usage.api-counts -p project=acme-shop -p interval=daily', '# crontab: */5 * * * * savedq warm --quiet'))
  .action(action(async (flags, nameOrId: string | undefined, opts: { param?: string[]; at?: string; maxTime?: string }) => {
    const { warmCommand } = await import('./commands/warm.js');
    await warmCommand(lib(flags), { ...flags, nameOrId, params: opts.param ?? [], at: opts.at, maxTime: opts.maxTime, signal: interrupt.signal }, io);
  }));

const cache = program
  .command('cache')
  .description('inspect or clear the results cache')
  .addHelpText('after', examples('savedq cache list', 'savedq cache list -f json | jq \'.[] | select(.query == "logs.all")\'', 'savedq cache clear'));
cache
  .command('list')
  .description('list cached calls: query, parameters, age, last served, expiry')
  .addOption(formatOption())
  .addHelpText('after', examples('savedq cache list', 'savedq cache list -f json | jq \'map(select(.served_seconds_ago > 3600)) | length\'', 'savedq --store postgres://savedq@db.internal/savedq cache list -f csv'))
  .action(action(async (flags, opts: { format?: string }) => {
    const { cacheListCommand } = await import('./commands/cache.js');
    await cacheListCommand(lib(flags), { ...flags, format: opts.format }, io);
  }));
cache
  .command('clear')
  .description('remove every cached result')
  .addHelpText('after', examples('savedq cache clear', 'savedq --store postgres://savedq@db.internal/savedq cache clear'))
  .action(action(async (flags) => {
    const { cacheClearCommand } = await import('./commands/cache.js');
    await cacheClearCommand(lib(flags), flags, io);
  }));

program
  .command('status')
  .description("where savedq keeps what it keeps between calls, whether it answers, what is cached, and who shared it in the last minute; exit 1 when the store does not answer")
  .addOption(new Option('-f, --format <format>', 'text, or json for tools').choices(['text', 'json']).default('text'))
  .addHelpText('after', examples('savedq status', 'savedq --store postgres://savedq@db.internal/savedq status -f json | jq .processes'))
  .action(action(async (flags, opts: { format: string }) => {
    const { statusCommand } = await import('./commands/status.js');
    await statusCommand(lib(flags), { ...flags, format: opts.format }, io);
  }));

const alerts = program
  .command('alerts')
  .description('alerts: saved queries that tell someone when their answer crosses a line (<name>.alert.yaml)')
  .addHelpText(
    'after',
    examples('savedq alerts', 'savedq alerts check', '# crontab: * * * * * savedq alerts check --quiet', 'savedq alerts test fn-errors', 'savedq alerts -f json | jq \'.[] | select(.state == "firing")\''),
  );
alerts
  .command('list', { isDefault: true })
  .description('each alert, its state and since when, its last evaluation (what savedq alerts does)')
  .addOption(formatOption(['table', 'json', 'ndjson', 'csv']))
  .addHelpText('after', examples('savedq alerts list', 'savedq alerts list -f json | jq -r \'.[] | select(.state != "ok") | .alert\''))
  .action(action(async (flags, opts: { format?: string }) => {
    const { alertsListCommand } = await import('./commands/alerts.js');
    await alertsListCommand(lib(flags), { ...flags, format: opts.format }, io);
  }));
alerts
  .command('check')
  .description('evaluate the alerts that are due, notify on each change of state; exit 1 when any is firing or in error, or kept but its file gone (for cron)')
  .argument('[alerts...]', 'only these alerts (default: every one that is due)')
  .option('--at <iso>', 'evaluate as of this instant, as if the clock said it (to try an alert on past data)')
  .option('--force', 'evaluate the alerts even when they are not due')
  .addOption(new Option('-f, --format <format>', 'text (lines on standard error), or json on standard output').choices(['text', 'json']).default('text'))
  .addHelpText('after', examples('savedq alerts check', '# crontab: * * * * * savedq alerts check --quiet', 'savedq alerts check fn-errors --force'))
  .action(action(async (flags, names: string[], opts: { at?: string; force?: boolean; format: string }) => {
    const { alertsCheckCommand } = await import('./commands/alerts.js');
    await alertsCheckCommand(lib(flags), { ...flags, names: names.length > 0 ? names : undefined, at: opts.at, force: opts.force, format: opts.format, signal: interrupt.signal }, io);
  }));
alerts
  .command('history')
  .description("an alert's latest changes of state, newest first")
  .argument('<alert>', "the alert's name")
  .addOption(formatOption(['table', 'json', 'ndjson', 'csv']))
  .option('-n, --limit <n>', 'how many changes (default 20, at most 1000)')
  .addHelpText('after', examples('savedq alerts history fn-errors', 'savedq alerts history fn-errors -n 100 -f csv'))
  .action(action(async (flags, name: string, opts: { format?: string; limit?: string }) => {
    const { alertsHistoryCommand } = await import('./commands/alerts.js');
    await alertsHistoryCommand(lib(flags), { ...flags, name, format: opts.format, limit: opts.limit }, io);
  }));
alerts
  .command('test')
  .description('evaluate one alert now and print the JSON it would send; sends nothing, changes nothing')
  .argument('<alert>', 'the alert\'s name (its file is <name>.alert.yaml)')
  .option('--at <iso>', 'evaluate as of this instant')
  .addHelpText('after', examples('savedq alerts test fn-errors', 'savedq alerts test fn-errors | jq .text'))
  .action(action(async (flags, name: string, opts: { at?: string }) => {
    const { alertsTestCommand } = await import('./commands/alerts.js');
    await alertsTestCommand(lib(flags), { ...flags, name, at: opts.at }, io);
  }));
alerts
  .command('forget')
  .description('drop what savedq keeps of an alert whose file was removed (its state, history, undelivered notifications)')
  .argument('<alert>', "the alert's name")
  .addHelpText('after', examples('savedq alerts forget fn-errors'))
  .action(action(async (flags, name: string) => {
    const { alertsForgetCommand } = await import('./commands/alerts.js');
    await alertsForgetCommand(lib(flags), { ...flags, name }, io);
  }));

withSettings(
  program
    .command('serve')
    .description('serve the saved queries over HTTP at /api/endpoints/query/<name|id>, behind X-API-KEY'),
  ...SERVE_SETTINGS,
)
  .option('--no-ui', "no page for people at / (default: a form for each saved query, its answer as a table and a chart)")
  .option('--no-mcp', 'no MCP for agents at /mcp (default: every saved query a tool, with the caller\'s key or token)')
  .option('--no-alerts', 'leave the alerts to savedq alerts check (default: serve evaluates them on their schedule)')
  .addHelpText(
    'after',
    examples(
      'SAVEDQ_API_KEYS=secret savedq serve    # then open http://127.0.0.1:4000/',
      "curl -H 'X-API-KEY: secret' -G http://127.0.0.1:4000/api/endpoints/query/usage.api-counts -d project=acme-shop -d interval=daily",
    ),
  )
  .action(action(async (flags, opts: ServeFlags & { ui: boolean; mcp: boolean; alerts: boolean }) => {
    const { serveCommand } = await import('./commands/serve.js');
    streamsFromNowOn();
    const log = serverLog(io.stderr, flags.quiet === true);
    // The server owns the engine while it runs, and shares it with every other savedq process.
    const reporter: Reporter = { warn: (message) => log.warn(`warning: ${message}`), note: (message) => log.info(message) };
    await serveCommand(lib(flags, { role: 'serve', reporter }), { ...flags, ...opts, version, log, onListening: servingNow }, io);
  }));

program
  .command('mcp')
  .description('serve the saved queries as MCP tools to a coding agent, over standard input and output')
  .addHelpText(
    'after',
    examples(
      'claude mcp add savedq -- savedq mcp',
      'savedq --queries ~/my-queries mcp',
      'npx @modelcontextprotocol/inspector --cli savedq mcp --method tools/list',
    ),
  )
  .action(action(async (flags) => {
    const { mcpCommand } = await import('./commands/mcp.js');
    streamsFromNowOn();
    await mcpCommand(lib(flags), { ...flags, version, signal: interrupt.signal }, io);
  }));

const token = program
  .command('token')
  .description('signed tokens for serve: one project, some queries, a rate limit')
  .addHelpText(
    'after',
    examples(
      'TOKEN=$(savedq token create --name acme-dashboard --query logs.all --fix project=acme-shop --ttl 30d)',
      'savedq token inspect "$TOKEN"',
    ),
  );
token
  .command('create')
  .description('print a signed token that opens some saved queries, with parameters fixed and a rate limit')
  .requiredOption('--name <name>', 'who it is for (in the access log and metrics; its rate-limit bucket)')
  .option('--query <name|glob>', 'a saved query it opens: a name, an id or a glob such as errors.* (repeatable)', collect)
  .option('--fix <[query:]name=value>', 'a parameter every call of it is made with; query: for one --query only (repeatable); a pattern must be anchored (^…)', collect)
  .option('--fix-unanchored', 'allow a --fix pattern not anchored at the start (it matches anywhere)')
  .option('--ttl <duration>', 'how long it is valid: 90s, 15m, 12h, 30d (default 24h)')
  .option('--rps <n>', 'calls a second it may make')
  .option('--sql', "it may send its own SQL over the answers of sandboxed queries (sandbox: true)")
  .option('--export', 'it may export the whole answers of its queries (/api/endpoints/export/…), past their row caps')
  .option(SETTINGS.tokenSecretFile.flag, settingHelp(SETTINGS.tokenSecretFile))
  .addHelpText(
    'after',
    examples(
      "TOKEN=$(savedq token create --token-secret-file ~/.config/savedq/token-secrets --name acme-dashboard --query 'usage.*' --query logs.all --fix 'usage.*:project=^https://acme-shop\\.' --fix logs.all:project=acme-shop --ttl 30d --rps 5)",
      "curl -H \"Authorization: Bearer $TOKEN\" -G http://127.0.0.1:4000/api/endpoints/query/usage.api-counts -d interval=daily",
    ),
  )
  .action(action(async (flags, opts: { name: string; query?: string[]; fix?: string[]; fixUnanchored?: boolean; ttl?: string; rps?: string; sql?: boolean; export?: boolean; tokenSecretFile?: string }) => {
    const { tokenCreateCommand } = await import('./commands/token.js');
    await tokenCreateCommand(lib(flags), { ...flags, ...opts, query: opts.query ?? [], fix: opts.fix ?? [] }, io);
  }));

token
  .command('inspect')
  .description('show a token\'s claims, whether it verifies with the configured secrets, and when it expires')
  .argument('<token>', 'the token')
  .option(SETTINGS.tokenSecretFile.flag, settingHelp(SETTINGS.tokenSecretFile))
  .addHelpText('after', examples('savedq token inspect "$TOKEN"', 'savedq token inspect --token-secret-file ~/.config/savedq/token-secrets "$TOKEN"'))
  .action(async (value: string, opts: { tokenSecretFile?: string }) => {
    const { tokenInspectCommand } = await import('./commands/token.js');
    await tokenInspectCommand(value, opts, io);
  });

program
  .command('describe')
  .description('show what a saved query does: parameters, row fields, cache settings and its SQL')
  .argument('<query>', 'saved query name or id')
  .addHelpText('after', examples('savedq describe usage.api-counts'))
  .action(action(async (flags, nameOrId: string) => {
    const { describeCommand } = await import('./commands/describe.js');
    await describeCommand(lib(flags), nameOrId, flags, io);
  }));

program
  .command('check')
  .description("check every saved query definition, have the engine parse each query and hold its answer's columns to its fields; exit 2 if any is broken")
  .addOption(new Option('-f, --format <format>', 'text, or json for tools').choices(CHECK_FORMATS).default('text'))
  .option('--write-fields', "write each of your queries' fields: from the engine's description of its answer, keeping the descriptions written")
  .option('--against <lock>', 'compare the queries with a lock (savedq lock): each change breaking or compatible; exit 1 on a breaking one whose version was not raised')
  .addHelpText('after', examples('savedq check', 'savedq --queries ./queries check -f json', 'savedq check --write-fields', 'savedq check --against queries/savedq.lock.json    # in CI'))
  .action(action(async (flags, opts: { format: string; writeFields?: boolean; against?: string }) => {
    const { checkCommand } = await import('./commands/check.js');
    await checkCommand(lib(flags), { ...flags, format: opts.format, writeFields: opts.writeFields, against: opts.against, signal: interrupt.signal }, io);
  }));

program
  .command('lock')
  .description('write savedq.lock.json: what each saved query promises its callers (its id, version, parameters and fields), for version control')
  .option('--lock <file>', 'the lock file (default: savedq.lock.json in the first queries folder)')
  .addHelpText('after', examples('savedq lock', 'git add queries/savedq.lock.json', 'savedq check --against queries/savedq.lock.json'))
  .action(action(async (flags, opts: { lock?: string }) => {
    const { lockCommand } = await import('./commands/lock.js');
    await lockCommand(lib(flags), { ...flags, lock: opts.lock }, io);
  }));

program
  .command('version')
  .description("keep a saved query's current version callable as <name>@<N>.sql and raise its version, before a change that breaks its callers")
  .argument('<query>', 'saved query name')
  .addHelpText('after', examples('savedq version traffic    # keeps traffic@1.sql; traffic.sql is version 2', 'savedq run traffic@1', 'curl -H "Savedq-Version: 1" …/api/endpoints/query/traffic'))
  .action(action(async (flags, nameOrId: string) => {
    const { versionCommand } = await import('./commands/version.js');
    await versionCommand(lib(flags), nameOrId, flags, io);
  }));

program
  .command('test')
  .description("run saved queries' tests (<name>.test.yaml beside <name>.sql) on throwaway warehouses: no server, none of your data")
  .argument('[queries...]', 'names or ids of the queries whose tests run (default: every test file of your queries folders)')
  .addOption(new Option('-f, --format <format>', 'text, json for tools, or junit (JUnit XML) for CI').choices(TEST_FORMATS).default('text'))
  .option('--builtin', 'also run the tests shipped with the built-in queries and the examples')
  .option('--update', 'rewrite the rows, rows_unordered and row_count of failing cases with what the query returned')
  .addHelpText(
    'after',
    examples('savedq test', 'savedq --queries ./queries test errors.by-path', 'savedq check && savedq test -f junit > savedq-tests.xml', 'savedq test errors.by-path --update'),
  )
  .action(action(async (flags, names: string[], opts: { format: string; builtin?: boolean; update?: boolean }) => {
    const { testCommand } = await import('./commands/test.js');
    await testCommand(lib(flags), { ...flags, names, format: opts.format, builtin: opts.builtin, update: opts.update, signal: interrupt.signal }, io);
  }));

program
  .command('new')
  .description('write a starter saved query <name>.sql, with a fresh id, into your first queries folder')
  .argument('<name>', 'the query\'s name: lowercase letters, digits, ".", "_" and "-"')
  .addHelpText('after', examples('savedq new errors.by-path', 'savedq --queries ./queries new slow.functions'))
  .action(action(async (flags, name: string) => {
    const { newCommand } = await import('./commands/new.js');
    await newCommand(lib(flags), { ...flags, name }, io);
  }));

program
  .command('schema')
  .description('print the ClickHouse DDL of the two log tables, for a server or (--cluster) a cluster')
  .option('--cluster <name>', 'DDL for this cluster: ReplicatedMergeTree local tables, Distributed tables over them')
  .addHelpText('after', examples('savedq schema', 'savedq schema --cluster analytics | clickhouse-client --multiquery'))
  .action(action(async (flags, opts: { cluster?: string }) => {
    const { schemaCommand } = await import('./commands/schema.js');
    await schemaCommand({ ...flags, cluster: opts.cluster }, io);
  }));

program
  .command('init')
  .description("create savedq's tables in the store given by --store, and the log tables on the ClickHouse server (or, with --cluster, cluster) given by --url")
  .option('--cluster <name>', 'create them ON CLUSTER, replicated and distributed')
  .addHelpText(
    'after',
    examples(
      'savedq init --url http://default:secret@clickhouse:8123/logs',
      'savedq init --url http://clickhouse:8123 --cluster analytics',
      'savedq init --store postgres://savedq@db.internal/savedq --store-password-file ~/.config/savedq/store-password',
    ),
  )
  .action(action(async (flags, opts: { cluster?: string }) => {
    const { initCommand } = await import('./commands/schema.js');
    await initCommand(lib(flags), { ...flags, cluster: opts.cluster }, io);
  }));

program
  .command('completion')
  .description('print a shell completion script')
  .argument('<shell>', 'bash, zsh or fish')
  .addHelpText('after', examples('eval "$(savedq completion bash)"', 'savedq completion fish | source'))
  .action(action(async (flags, shell: string) => {
    const { completionCommand } = await import('./commands/completion.js');
    await completionCommand(lib(flags), shell, cliShape(), flags, io);
  }));

/** Values of arguments that are a fixed list, for completion. */
const ARGUMENT_CHOICES: Record<string, readonly string[]> = { table: TABLES, shell: SHELLS };

/** The commands, their options and arguments, as completion knows them: read from the definitions above. */
function cliShape(): CliShape {
  const optionShape = (o: Option): OptionShape => ({
    flags: [o.short, o.long].filter((f): f is string => f !== undefined),
    choices: o.argChoices,
    takesValue: o.required || o.optional,
  });
  const commandShape = (c: Command): CommandShape => ({
    name: c.name(),
    description: c.description(),
    options: c.options.map(optionShape),
    args: c.registeredArguments.map((a) => ({ name: a.name(), choices: a.argChoices ?? ARGUMENT_CHOICES[a.name()] })),
    subcommands: c.commands.map(commandShape),
  });
  return { commands: program.commands.map(commandShape), globalOptions: program.options.map(optionShape) };
}

commanderThrough(program);
sayErrors(program);
interruptible(io.stderr);
void main(program, process.argv, io, (command) => lib(command.optsWithGlobals<GlobalFlags>()).catalog, async () => library?.close()).then((code) => {
  process.exitCode = afterOutput(code, io.stderr);
});
