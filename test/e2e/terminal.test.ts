import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadCommand } from '../../src/commands/load.js';
import { resolveColor as useColor, SETTINGS, type Setting } from '../../src/config.js';
import { render } from '../../src/output/index.js';
import { examplesDir } from '../../src/package.js';
import { schemaDdl } from '../../src/warehouse/schema.js';
import { captureIo, cli, endpoints, findEndpoint, inTerminal, NO_CONFIG, tempDir, testLibrary } from '../helpers.js';
import { has } from '../system.js';

const lib = testLibrary();
const dir = tempDir();
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'c.sqlite') };

describe('help that teaches', () => {
  /** Every command's help, walked from savedq's own as a user would (each group's Commands: section): none kept by hand. */
  const everyHelp = async (): Promise<Map<string, string>> => {
    const helps = new Map<string, string>();
    const walk = async (path: string[]): Promise<void> => {
      const h = await cli([...path, '--help']);
      const name = ['savedq', ...path].join(' ');
      expect(h.code, name).toBe(0);
      helps.set(name, h.stdout);
      const listed = /\nCommands:\n([^]*?)\n\n/.exec(h.stdout)?.[1] ?? '';
      const subcommands = [...listed.matchAll(/^ {2}([a-z]+)/gm)].map((m) => m[1] as string).filter((c) => c !== 'help');
      await Promise.all(subcommands.map((c) => walk([...path, c])));
    };
    await walk([]);
    return helps;
  };

  it('gives every command a purpose, options and examples of itself', async () => {
    const helps = await everyHelp();
    // The walk found the groups' commands as well as the top level's.
    expect([...helps.keys()]).toEqual(expect.arrayContaining(['savedq run', 'savedq serve', 'savedq cache list', 'savedq cache clear', 'savedq alerts list', 'savedq token inspect']));
    expect(helps.size).toBeGreaterThan(20);
    for (const [name, help] of helps) {
      expect(help, name).toMatch(new RegExp(`^Usage: ${name} .*\n\n\\S.{10,}`));
      expect(help, name).toContain('Options:');
      expect(help, name).not.toContain('(default: [])'); // a repeatable option's empty list is no default to tell
      // Examples fit the help's width (80 in a pipe), broken with ` \` as a shell reads one line, an option with its value;
      // no word of one (a URL) is longer than a line, for a terminal to cut.
      expect(help.split('\n').filter((line) => line.length > 80), name).toEqual([]);
      const examples = /\nExamples:\n([^]*)$/.exec(help)?.[1]?.replace(/ \\\n +/g, ' ') ?? '';
      const shown = examples.split('\n').filter((line) => line.startsWith('  $ '));
      expect(shown.length, `${name} has examples`).toBeGreaterThan(0);
      // One of them at least is of the command itself (its words in order; global options may come between).
      const words = name.split(' ').slice(1);
      expect(shown.some((line) => new RegExp(`savedq (?:-\\S+ \\S+ )*${words.join(' ')}`).test(line)), `${name}: ${shown.join(' | ')}`).toBe(true);
    }
    const run = helps.get('savedq run') ?? '';
    expect(run).toContain('  $ savedq run logs.all -p project=acme-shop -p project_tier=PRO \\\n      -p iso_timestamp_start=2026-11-21T00:00:00Z\n');
    expect(run.replace(/ \\\n +/g, ' ')).toContain('$ savedq run 0f4c6b2e-7f3a-4a51-9a8e-3d2b1c5e6f01 -p project=acme-shop --at 2026-11-21T12:00:00Z -f csv\n');
    expect(run).toContain('--no-cache');
    // list reads the files; a query the engine refuses is found by check, which list's help names.
    expect(helps.get('savedq list')?.replace(/\s+/g, ' ')).toContain("only check asks the engine whether it takes each query's SQL");
    expect(helps.get('savedq serve')).toMatch(/--port <port>\s+port to listen on \(0 = any free port; default\s+4000\)/);
  });

  it('names every setting with its default and its variable, as the one table of settings says them', async () => {
    const help = (await Promise.all([cli(['--help']), cli(['serve', '--help'])])).map((h) => h.stdout).join('\n').replace(/\s+/g, ' ');
    for (const [name, setting] of Object.entries(SETTINGS) as [string, Setting][]) {
      expect(help, name).toContain(setting.flag);
      if (setting.env) expect(help, name).toContain(`env ${setting.env}`);
      const shown = setting.shown ?? setting.default;
      if (shown) expect(help, name).toContain(`default ${shown}`);
    }
  });

  it('prints the version and suggests the closest command for a typo', async () => {
    const version = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
    expect((await cli(['--version'])).stdout).toBe(`${version}\n`);
    const typo = await cli(['lsit']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('Did you mean list?');
  });
});

describe('shell completion', () => {
  const script = async (shell: string) => {
    const r = await cli(['completion', shell]);
    expect(r.code, r.stderr).toBe(0);
    return r.stdout;
  };
  /** What bash's completion offers for a command line, with the script savedq writes. */
  const completer = async () => {
    const bash = await script('bash');
    return (line: string) =>
      // _savedq is called as bash's completion calls it, but outside a completion, where bash's compopt
      // says "not currently executing completion function": that one line is no failure, anything else is.
      spawnSync('bash', ['-c', `${bash}\nCOMP_WORDS=(${line}); COMP_CWORD=$((\${#COMP_WORDS[@]}-1)); _savedq; printf '%s\\n' "\${COMPREPLY[@]}"`], { encoding: 'utf8' })
        .stdout.trim()
        .split('\n');
  };

  it('writes bash and zsh scripts that parse, naming commands, endpoints, ids and parameter values', async () => {
    for (const shell of ['bash', 'zsh']) {
      const script = await cli(['completion', shell]).then((r) => r.stdout);
      const check = spawnSync('bash', ['-n'], { input: script });
      expect(check.status, `${shell}: ${check.stderr.toString()}`).toBe(0);
      for (const e of endpoints) {
        expect(script).toContain(e.name);
        expect(script).toContain(e.id);
      }
      expect(script).toContain('interval=minutely');
      expect(script).toContain('project_tier=ENTERPRISE');
    }
    const fish = await script('fish');
    expect(fish).toContain("complete -c savedq -n '__fish_use_subcommand' -a run -d 'run a saved query and print its rows'");
    const tcsh = await cli(['completion', 'tcsh']);
    expect(tcsh).toMatchObject({ code: 2, stderr: 'savedq: unknown shell "tcsh": one of bash, zsh, fish.\n' });
  });

  it('makes bash complete an endpoint and its parameter values', async () => {
    const complete = await completer();
    expect(complete('savedq run usage.')).toEqual(['usage.api-counts']);
    expect(complete("savedq run usage.api-counts -p interval=h")).toEqual(['interval=hourly']);
    // As bash breaks the words at '=': the name's values after it.
    expect(complete("savedq run usage.api-counts -p interval = ''")).toEqual(['minutely', 'hourly', 'daily']);
    expect(complete('savedq run usage.api-counts -p interval = h')).toEqual(['hourly']);
    expect(complete('savedq run usage.api-counts -p interval =')).toEqual(['minutely', 'hourly', 'daily']);
    expect(complete("savedq run logs.all --param project_tier = P")).toEqual(['PRO', 'PAYG']);
    expect(complete("savedq run logs.all -p project = ''")).toEqual(['']);
    expect(complete('savedq ca')).toEqual(['cache']);
    expect(complete("savedq load ''")).toEqual(['edge_logs', 'function_edge_logs']);
    expect(complete("savedq run logs.all -f ''")).toEqual(['table', 'json', 'ndjson', 'csv', 'chart']);
    expect(complete("savedq list -f ''")).toEqual(['table', 'json', 'ndjson', 'csv']);
    expect(complete("savedq check -f ''")).toEqual(['text', 'json']);
    expect(complete("savedq cache ''")).toEqual(['list', 'clear']);
  });

  it('completes every command and every option that --help lists, as the CLI defines them', async () => {
    // Read from the built CLI's help, not from the code that writes the script: what it lists is the truth.
    const complete = await completer();
    const help = (await cli(['--help'])).stdout;
    const commands = [...help.slice(help.indexOf('Commands:')).matchAll(/^ {2}([a-z]+)\b/gm)].map((m) => m[1] as string).filter((c) => c !== 'help');
    expect(commands.length).toBeGreaterThan(10);
    for (const command of commands) {
      expect(complete(`savedq ${command.slice(0, -1)}`), command).toContain(command);
      const options = [...(await cli([command, '--help'])).stdout.matchAll(/^ {2}(?:-\w, )?(--[a-z-]+)/gm)].map((m) => m[1] as string);
      const offered = complete(`savedq ${command} --`);
      for (const option of options) expect(offered, `${command} ${option}`).toContain(option);
    }
  });
});

describe('progress and colour', () => {
  it('shows load progress on a terminal, and none in a pipe or under CI', async () => {
    const tty = captureIo();
    (tty.stderr as { isTTY?: boolean }).isTTY = true;
    await loadCommand(lib, { sample: true, table: 'function_edge_logs' }, tty);
    const clearLine = '\r\u001b[K';
    expect(tty.err()).toContain(`${clearLine}loading function_edge_logs: `);
    expect(tty.err()).toMatch(/loading function_edge_logs: [\d,]+ rows, [\d,]+ rows\/s, \d+%/);

    const ci = captureIo();
    (ci.stderr as { isTTY?: boolean }).isTTY = true;
    await loadCommand(lib, { sample: true, replace: true, table: 'function_edge_logs' }, { ...ci, env: { CI: 'true' } });
    expect(ci.err()).toBe('replaced the sample: loaded 24000 sample rows into function_edge_logs\n');

    const piped = await cli(['load', '--sample'], { env });
    expect(piped.stderr).toBe('loaded 60000 sample rows into edge_logs\nloaded 24000 sample rows into function_edge_logs\n');
    expect((await cli(['--quiet', 'load', 'edge_logs', '-'], { env, input: '{"timestamp":"2026-01-01","project":"q"}\n' })).stderr).toBe('');
  });

  it('colours only on a terminal, and follows NO_COLOR, FORCE_COLOR and --no-color', async () => {
    expect(useColor(undefined, true, {})).toBe(true);
    expect(useColor(undefined, false, {})).toBe(false);
    expect(useColor(undefined, true, { NO_COLOR: '1' })).toBe(false);
    expect(useColor(undefined, false, { FORCE_COLOR: '1' })).toBe(true);
    expect(useColor(false, true, { FORCE_COLOR: '1' })).toBe(false);
    const args = ['list', '-f', 'table'];
    expect((await cli(args, { env: { ...env, FORCE_COLOR: '1' } })).stdout).toContain('\u001b[');
    expect((await cli(['--no-color', ...args], { env: { ...env, FORCE_COLOR: '1' } })).stdout).not.toContain('\u001b[');
    expect((await cli(args, { env: { ...env, FORCE_COLOR: '1', NO_COLOR: '1' } })).stdout).not.toContain('\u001b[');
  });

  it('fits tables to the terminal width, right-aligns numbers and counts rows', async () => {
    const rows = [
      { id: 'a', timestamp: '2026-01-01T00:00:00.000001Z', event_message: 'short', metadata: { long: 'x'.repeat(40) } },
    ];
    const fields = findEndpoint('logs.all').fields;
    const text = [...(await render('table', rows, { fields, color: false, width: 80 }))].join('');
    for (const line of text.split('\n')) expect(line.length).toBeLessThanOrEqual(80);
    expect(text).toContain('2026-01-01 00:00:00.000001');
    expect(text).toContain('…');
    expect(text).toMatch(/1 row\n$/);
    // Shortened to less than half of itself, a value says nothing: records instead, every value whole.
    const long = [{ ...rows[0], metadata: { long: 'x'.repeat(300) } }];
    const records = [...(await render('table', long, { fields, color: false, width: 80 }))].join('');
    expect(records).toMatch(/^─\[ record 1 \]/);
    expect(records.replace(/\n {14}│ /g, '')).toContain(`{"long":"${'x'.repeat(300)}"}`);
    const numbers = [...(await render('table', [{ count: 5 }, { count: 12345 }], { fields: [{ name: 'count', type: 'integer' }], color: false, width: 80 }))].join('');
    expect(numbers).toContain('│     5 │');
  });

  it("rounds a row's figures alike, so that its minimum never shows above its maximum", async () => {
    // A bucket of one call (min = max = avg = 78.4) among buckets whose maxima are in the hundreds: each
    // column rounded by its own middle made the minimum 78.4 and the maximum 78.
    const fields = findEndpoint('functions.invocation-stats').fields;
    const bucket = (hour: number, min: number, max: number) => ({
      timestamp: `2026-11-20T${String(hour).padStart(2, '0')}:00:00Z`,
      min_execution_time: min,
      max_execution_time: max,
      avg_execution_time: (min + max) / 2,
      p95_execution_time: max,
      p99_execution_time: max,
      count: 3,
      error_count: 0,
    });
    const rows = [bucket(1, 78.4, 78.4), bucket(2, 12.25, 865.5), bucket(3, 17.75, 808.25), bucket(4, 21.5, 412.75)];
    const text = [...(await render('table', rows, { fields, color: false, width: 70, expanded: false }))].join('');
    expect(text).toContain('numbers rounded to fit');
    for (const line of text.split('\n').filter((l) => /^│ 2026/.test(l))) {
      const [min, max, avg] = line.split('│').slice(2, 5).map((cell) => Number(cell.trim()));
      expect(min, line).toBeLessThanOrEqual(max as number);
      expect(min, line).toBeLessThanOrEqual(avg as number);
      expect(avg, line).toBeLessThanOrEqual(max as number);
    }
  });

  it('describes an endpoint with its parameters and SQL', async () => {
    const r = await cli(['describe', 'functions.invocation-stats']);
    expect(r.stdout).toContain('interval  (optional; usually 5min, 15min, 1hr, 1day, 7day; default 1day)');
    expect(r.stdout).toContain('Cache: 900 s, warmed when 300 s old');
    expect(r.stdout).toContain('FROM function_edge_logs');
  });
});

describe('growing past one machine', () => {
  it('prints DDL for a server and for a cluster that ClickHouse parses', async () => {
    const warehouse = await lib.warehouse();
    const plain = schemaDdl();
    const cluster = schemaDdl('analytics');
    expect(cluster).toHaveLength(4);
    expect(cluster[0]).toMatch(/CREATE TABLE IF NOT EXISTS edge_logs_local ON CLUSTER analytics[\s\S]*ENGINE = ReplicatedMergeTree\('\/clickhouse\/tables\/\{shard\}\/\{database\}\/edge_logs_local', '\{replica\}'\)/);
    expect(cluster[1]).toBe(
      "CREATE TABLE IF NOT EXISTS edge_logs ON CLUSTER analytics AS edge_logs_local\nENGINE = Distributed('analytics', currentDatabase(), 'edge_logs_local', cityHash64(project))",
    );
    for (const statement of [...plain, ...cluster]) {
      const [row] = await warehouse.query('SELECT formatQuery({q:String}) AS f', { q: statement });
      expect(String(row?.f), statement).toMatch(/^CREATE TABLE IF NOT EXISTS/);
    }
    const printed = await cli(['schema', '--cluster', 'analytics']);
    expect(printed.stdout).toBe(`${cluster.join(';\n\n')};\n`);
  });

  it('init refuses to run without a server URL or a store, and --cluster without a server', async () => {
    const r = await cli(['init'], { env });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/init needs a ClickHouse server \(--url or SAVEDQ_CLICKHOUSE_URL\) or a store \(--store or SAVEDQ_STORE_URL\)/);
    const cluster = await cli(['--store', 'postgres://savedq@127.0.0.1:1/x', 'init', '--cluster', 'analytics'], { env: { HOME: tempDir() } });
    expect(cluster.code).toBe(2);
    expect(cluster.stderr).toContain('--cluster needs a ClickHouse server');
  });
});

describe.runIf(has.script)('tables and charts in a real terminal', () => {
  const termEnv = { SAVEDQ_DATA_DIR: join(dir, 'term-data'), SAVEDQ_CACHE_FILE: join(dir, 'term.sqlite') };
  beforeAll(async () => {
    const r = await cli(['load', '--sample'], { env: termEnv });
    expect(r.code, r.stderr).toBe(0);
  });

  /** What a terminal of `columns` shows of a command (through `script`, a real pseudo-terminal), without colour codes. */
  async function shownIn(columns: number, args: readonly string[], { raw = false } = {}): Promise<string> {
    const shown = await inTerminal(args, { columns, rows: 50, env: { HOME: process.env.HOME ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...termEnv } });
    expect(shown.code, shown.stderr).toBe(0);
    // eslint-disable-next-line no-control-regex
    return raw ? shown.stdout : shown.stdout.replace(/\u001b\[[\d;]*m/g, '');
  }
  const widest = (text: string) => Math.max(...text.split('\n').map((line) => Array.from(line).length));
  const stats = ['run', 'functions.invocation-stats', '-p', 'project=acme-shop', '-p', 'interval=7day'];

  it('never draws a line wider than the terminal, at 80, 100 and 200 columns, an empty answer too', async () => {
    for (const columns of [80, 100, 200]) {
      for (const args of [['list'], stats, ['run', 'logs.all', '-p', 'project=acme-shop'], ['run', 'usage.api-counts', '-p', 'project=acme', '-p', 'interval=daily'], ['run', 'functions.invocation-stats', '-p', 'project=nobody']]) {
        const text = await shownIn(columns, args);
        expect(widest(text), `${columns}: ${args.join(' ')}\n${text}`).toBeLessThanOrEqual(columns);
        expect(text, args.join(' ')).toMatch(/^\d+ rows?(; numbers rounded to fit .*)?$/m);
      }
    }
  });

  it('wraps what describe says to the terminal, each piece under its first word, and the SQL\'s comments, its code left as written', async () => {
    const text = await shownIn(60, ['describe', 'usage.api-counts']);
    const [prose = '', sql = ''] = text.split('\nSQL:\n');
    expect(widest(prose), prose).toBeLessThanOrEqual(60);
    // The interval's description, cut at a word break, its second line under its first.
    expect(prose).toMatch(/\n {6}minutely: last 60 minutes by minute; hourly: last hour\r?\n {6}by hour; daily: last 7 days by day\.\r?\n/);
    expect(sql).toContain("    multiIf(@interval = 'minutely', 'minute',\n            @interval = 'hourly', 'hour',\n");
    // A comment too long for the terminal is one paragraph wrapped again, every line a comment still.
    const comments = sql.split('\n').filter((l) => l.startsWith('--'));
    expect(widest(comments.join('\n')), sql).toBeLessThanOrEqual(60);
    expect(comments.map((l) => l.slice(3)).join(' ')).toContain('`project` is an RE2 pattern matched against the request URL');
    // The built-ins' code fits 80 columns as written.
    for (const name of ['functions.invocation-stats', 'logs.all', 'usage.api-counts']) {
      const code = (await shownIn(80, ['describe', name])).split('\nSQL:\n')[1] ?? '';
      expect(widest(code), code).toBeLessThanOrEqual(80);
    }
    // Piped, each piece is one line, whatever COLUMNS says.
    const piped = await cli(['describe', 'usage.api-counts'], { env: { ...termEnv, COLUMNS: '60' } });
    expect(piped.stdout).toContain('\n      minutely: last 60 minutes by minute; hourly: last hour by hour; daily: last 7 days by day.\n');
  });

  it("breaks help's examples at the terminal's width, between words, as a shell reads one line", async () => {
    const examples = (await shownIn(60, ['warm', '--help'])).split('Examples:')[1] ?? '';
    expect(widest(examples), examples).toBeLessThanOrEqual(60);
    expect(examples).toMatch(/\$ savedq warm usage\.api-counts -p project=acme-shop \\\r?\n {6}-p interval=daily\r?\n/);
  });

  it('wraps the saved queries named for a run without one to the terminal, under the bracket', async () => {
    const shown = await inTerminal(['run'], { columns: 60, env: { HOME: process.env.HOME ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...termEnv } });
    expect(shown.code).toBe(2);
    expect(widest(shown.stdout), shown.stdout).toBeLessThanOrEqual(60);
    expect(shown.stdout).toMatch(/\n\(the saved queries: functions\.invocation-stats, logs\.all,\n usage\.api-counts; savedq list shows what each takes\)\n/);
  });

  it("wraps check's problems under their first word on a terminal, and keeps each one line when piped", async () => {
    const folder = join(dir, 'typo-queries');
    mkdirSync(folder);
    writeFileSync(join(folder, 'team.errors.sql'), "/*\nparams:\n  project: { type: strng, required: true }\n*/\nSELECT @project AS p\n");
    const env = { HOME: process.env.HOME ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...termEnv, SAVEDQ_QUERIES: folder };
    const shown = await inTerminal(['check'], { columns: 60, env });
    expect(shown.code).toBe(2);
    // More than one line (a temporary folder's path is long), each after the first under its first word.
    const problem = /\nerror {2}.*\n(?: {7}.*\n)+/.exec(shown.stdout)?.[0] ?? '';
    expect(problem.replace(/\n {7}/g, ' ')).toContain("unknown type 'strng' in parameter 'project'. Did you mean string?");
    expect(widest(shown.stdout), shown.stdout).toBeLessThanOrEqual(60);
    const piped = await inTerminal(['check'], { columns: 60, env, piped: true });
    expect(piped.stdout).toMatch(/\nerror {2}\S*team\.errors\.sql:3: unknown type 'strng' in parameter 'project'\. Did you mean string\?\n/);
  });

  it('wraps every message at word breaks to an 80-column terminal, on standard error and standard output: no line the terminal would cut mid-word', async () => {
    // A folder whose path makes check's and test's lines long, with a query and its test.
    const folder = join(dir, 'a-folder-whose-name-is-long-enough-to-wrap-lines', 'team-queries');
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'status.classes-of-the-day.sql'), "/*\nparams:\n  days: { type: integer, default: 1, min: 1, max: 90 }\n*/\nSELECT @days AS days\n");
    writeFileSync(join(folder, 'status.classes-of-the-day.test.yaml'), 'at: 2026-11-20T12:00:00Z\ncases:\n  - name: a case whose name is long enough to reach past the edge of the terminal\n    params: {}\n    rows: [{ days: 1 }]\n');
    const env = { HOME: process.env.HOME ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...termEnv, SAVEDQ_QUERIES: folder };
    const commands: [string[], string[]][] = [
      [['load', '--sample'], ['--replace', 'holds the sample already']],
      [['run', 'status.classes-of-the-day', '-p', 'days=365'], ['invalid value "365"', '90.']],
      [['check'], ['status.classes-of-the-day.test.yaml']],
      [['test'], ['a case whose name is long enough to reach past the edge of the terminal']],
      [['status'], []],
      [['cache', 'list'], ['(at most about 512 MB)']],
    ];
    for (const [args, words] of commands) {
      const shown = await inTerminal(args, { columns: 80, env });
      // eslint-disable-next-line no-control-regex
      const text = shown.stdout.replace(/\u001b\[[\d;]*m/g, '');
      expect(widest(text), `${args.join(' ')}\n${text}`).toBeLessThanOrEqual(80);
      // Each phrase whole once its wrapped lines are joined again: broken between words only.
      const joined = text.replace(/\n +/g, ' ');
      for (const phrase of words) expect(joined, `${args.join(' ')}: ${phrase}\n${text}`).toContain(phrase);
    }
  });

  it('keeps the key columns whole: every name and id in list, every timestamp in run', async () => {
    for (const columns of [80, 100, 200]) {
      const list = await shownIn(columns, ['list']);
      for (const e of endpoints) {
        expect(list, `${columns}`).toContain(e.name);
        expect(list, `${columns}`).toContain(e.id);
      }
      const logs = await shownIn(columns, ['run', 'logs.all', '-p', 'project=acme-shop']);
      expect(logs.match(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}/g)?.length, `${columns}`).toBe(100);
    }
  });

  it('shows records when the columns cannot fit, a table when they can, and obeys --expanded and --no-expanded', async () => {
    const narrow = await shownIn(60, stats);
    expect(narrow).toMatch(/^─\[ record 1 \]─+\ntimestamp {10}│ \d{4}-\d\d-\d\d\nmin_execution_time │ [\d.]+\n/m);
    // At 80, numbers rounded and headers cut before a table gives way, with a rule under the header.
    const eighty = await shownIn(80, stats);
    expect(eighty).toMatch(/^│ timestamp +│ +min │ +max │ +avg │ +p95 │ +p99 │ count │ error │\n│ +│ +execu/m);
    expect(eighty).toMatch(/^├─+┼/m);
    expect(eighty).toMatch(/^\d+ rows; numbers rounded to fit \(--expanded shows every digit\)$/m);
    expect(await shownIn(100, stats)).toMatch(/^│ timestamp {2}│ +min │ +max │/m); // headers wrap at _ to fit
    const wide = await shownIn(200, stats);
    expect(wide).toMatch(/^│ timestamp +│ min_execution_time │/m);
    expect(wide).toMatch(/│ +\d+ │ +\d+ │\n/); // numbers right-aligned
    expect(await shownIn(200, ['--expanded', ...stats])).toMatch(/^─\[ record 1 \]/m);
    const forced = await shownIn(60, ['--no-expanded', ...stats]);
    expect(forced).toMatch(/^│ timestamp/m);
    expect(widest(forced)).toBeGreaterThan(60);
  });

  it('shows logs.all at 80 columns as records, each message and metadata whole', async () => {
    const logs = await shownIn(80, ['run', 'logs.all', '-p', 'project=acme-shop']);
    expect(logs).toMatch(/^─\[ record 1 \]─+\nid {12}│ [0-9a-f-]{36}\ntimestamp {5}│ \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}Z\nevent_message │ [A-Z]+ \| \d{3} \| /m);
    expect(logs).not.toContain('…');
  });

  it('says how old a cached answer is only when both outputs are the terminal: never inside what a pipe prints', async () => {
    const call = ['run', 'usage.api-counts', '-p', 'project=acme-shop', '-p', 'interval=hourly'];
    await shownIn(80, call); // cached now
    expect(await shownIn(80, call)).toMatch(/^usage\.api-counts: from cache, computed \d+ s ago$/m);
    const piped = await inTerminal(call, { piped: true, env: { HOME: process.env.HOME ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...termEnv } });
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout).not.toContain('from cache');
    expect(JSON.parse(piped.stdout)).toBeInstanceOf(Array);
  });

  // One instant for every chart below, so a terminal's picture and a pipe's are of the same rows.
  const at = new Date().toISOString();
  const traffic = ['run', 'usage.api-counts', '-p', 'project=acme-shop', '-p', 'interval=minutely', '--at', at, '-f', 'chart'];
  const counters = ['total_rest_requests', 'total_storage_requests', 'total_auth_requests', 'total_realtime_requests'];
  // Minute buckets: the axis shows them to the minute.
  const shownTime = (iso: string) => iso.replace('T', ' ').slice(0, 16);

  it('charts a time series at 80, 100 and 200 columns: a chart a numeric field, headed by its figures, the time axis labelled at both ends', async () => {
    const json = await cli(['run', 'usage.api-counts', '-p', 'project=acme-shop', '-p', 'interval=minutely', '--at', at, '-f', 'json'], { env: termEnv });
    const rows = JSON.parse(json.stdout) as Record<string, number | string>[];
    expect(rows.length).toBeGreaterThan(10);
    for (const columns of [80, 100, 200]) {
      const text = await shownIn(columns, traffic);
      expect(widest(text), `${columns}\n${text}`).toBeLessThanOrEqual(columns);
      for (const field of counters) {
        const values = rows.map((r) => r[field] as number);
        // The heading's figures are the rows' own.
        expect(text, `${columns} ${field}`).toContain(`${field}  min ${Math.min(...values)}  max ${Math.max(...values)}  last ${values[values.length - 1]}`);
      }
      expect(text.match(/[╭╮╯╰─│]/g)?.length, `${columns}`).toBeGreaterThan(counters.length * 20);
      // Both ends on one line; or, a plot too narrow for both (fewer minutes with traffic than that), one under the other.
      const [start, end] = [shownTime(rows[0]?.timestamp as string), shownTime(rows[rows.length - 1]?.timestamp as string)];
      const axis = new RegExp(`^ +${start}( +${end}| …\n +… ${end})$`, 'gm');
      expect(text.match(axis)?.length, `${columns}\n${text}`).toBe(counters.length);
      expect(text).toContain(`${rows.length} rows by timestamp`);
    }
  });

  it('draws the same chart in a pipe, without a colour code; colour only on a terminal', async () => {
    const piped = await cli(traffic, { env: termEnv });
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout).not.toContain('\u001b');
    expect(await shownIn(80, ['--quiet', ...traffic])).toBe(piped.stdout); // --quiet: the terminal shows standard error too
    expect(await shownIn(80, traffic, { raw: true })).toContain('\u001b[1mtotal_rest_requests');
    expect(await shownIn(80, ['--no-color', ...traffic], { raw: true })).not.toContain('\u001b');
  });

  it('draws a text field and numbers as bars, one a row, the value at its end', async () => {
    const args = ['run', 'errors.by-path', '--queries', examplesDir, '-p', 'project=acme-shop', '--at', at];
    const rows = JSON.parse((await cli([...args, '-f', 'json'], { env: termEnv })).stdout) as { path: string; errors: number }[];
    expect(rows.length).toBeGreaterThan(3);
    for (const columns of [80, 100, 200]) {
      const text = await shownIn(columns, [...args, '-f', 'chart']);
      expect(widest(text), `${columns}\n${text}`).toBeLessThanOrEqual(columns);
      const block = text.slice(text.indexOf('errors\n') + 7, text.indexOf('\n\nserver_errors'));
      const bars = block.split('\n').map((line) => /^(\S+) +([█▏▎▍▌▋▊▉]*) (\d+)$/.exec(line));
      expect(bars.map((b) => b && [b[1], Number(b[3])]), `${columns}\n${text}`).toEqual(rows.map((r) => [r.path.length > columns * 0.4 ? expect.stringMatching(/…$/) : r.path, r.errors]));
      // The longest bar is the largest value's, and a bar's length follows its value.
      const lengths = bars.map((b) => Array.from(b?.[2] ?? '').length);
      expect(Math.max(...lengths)).toBe(lengths[rows.findIndex((r) => r.errors === Math.max(...rows.map((x) => x.errors)))]);
      expect(text).toMatch(/^server_errors$/m);
    }
  });

  it('fits a long series to the width: each column the highest of the buckets in it, the peak kept', async () => {
    const start = Date.parse('2026-11-01T00:00:00Z');
    const rows = Array.from({ length: 500 }, (_, i) => ({ minute: new Date(start + i * 60_000).toISOString(), calls: i === 333 ? 900 : 10 + (i % 7) }));
    const fields = [{ name: 'minute', type: 'timestamp' as const }, { name: 'calls', type: 'integer' as const }];
    const text = [...(await render('chart', rows, { fields, color: false, width: 80 }))].join('');
    expect(widest(text)).toBeLessThanOrEqual(80);
    expect(text).toMatch(/^calls {2}min 10 {2}max 900 {2}last 12$/m);
    expect(text).toMatch(/^900 ┼ *╭╮$/m); // the one peak, a column wide, at the top
    expect(text).toContain('2026-11-01 00:00');
    expect(text).toContain('2026-11-01 08:19');
    expect(text).toContain('500 rows by minute, 1 min each; each column is the highest of up to 7 buckets');
  });

  /** The plot lines of a chart's first block: what is right of the axis, by line. */
  const plotOf = (text: string) => text.split('\n\n')[0]?.split('\n').slice(1, -1).map((line) => line.replace(/^ *[\d.-]+ [┤┼]/, '')) ?? [];

  it('draws no line where a bucket has no row: a gap, said under the chart', async () => {
    const start = Date.parse('2026-11-21T11:00:00Z');
    // 17 minutes of 60 have a row: the first five, the last twelve.
    const minutes = [...Array.from({ length: 5 }, (_, i) => i), ...Array.from({ length: 12 }, (_, i) => 48 + i)];
    const rows = minutes.map((m) => ({ timestamp: new Date(start + m * 60_000).toISOString(), requests: 1 + (m % 2) }));
    const fields = [{ name: 'timestamp', type: 'timestamp' as const }, { name: 'requests', type: 'integer' as const }];
    const text = [...(await render('chart', rows, { fields, color: false, width: 80 }))].join('');
    expect(text).toContain('17 rows by timestamp, 1 min each; 43 of 60 buckets have no row: gaps');
    const plot = plotOf(text);
    // The columns of minutes 10 to 40 are empty on every line; the ends are drawn.
    const columns = plot.map((line) => line.slice(Math.round((10 / 60) * 75), Math.round((40 / 60) * 75)));
    expect(columns.every((c) => c.trim() === ''), text).toBe(true);
    expect(plot.some((line) => line.slice(0, 5).trim() !== '') && plot.some((line) => line.slice(-5).trim() !== '')).toBe(true);
    // An empty value is a gap too, never the lowest value drawn.
    const nulls = [...(await render('chart', rows.map((r, i) => ({ ...r, requests: i === 2 ? null : r.requests })), { fields, color: false, width: 80 }))].join('');
    expect(nulls).toMatch(/requests {2}min 1 {2}max 2/);
  });

  it('gives counts whole-number axis labels, a step apart, and uses the width', async () => {
    const start = Date.parse('2026-11-20T00:00:00Z');
    const fields = [{ name: 'hour', type: 'timestamp' as const }, { name: 'calls', type: 'integer' as const }];
    for (const [high, step] of [[7, 1], [9, 2], [40, 5], [1000, 125]] as const) {
      const rows = Array.from({ length: 24 }, (_, i) => ({ hour: new Date(start + i * 3_600_000).toISOString(), calls: Math.round((high * ((i * 7) % 24)) / 23) }));
      rows[5] = { ...(rows[5] as { hour: string; calls: number }), calls: high };
      rows[6] = { ...(rows[6] as { hour: string; calls: number }), calls: 0 };
      const text = [...(await render('chart', rows, { fields, color: false, width: 80 }))].join('');
      const labels = text.split('\n').map((l) => /^ *(-?\d+) [┤┼]/.exec(l)?.[1]).filter((l) => l !== undefined).map(Number);
      expect(labels.slice(1).map((l, i) => (labels[i] as number) - l), `${high}\n${text}`).toEqual(labels.slice(1).map(() => step));
      expect(labels.at(-1), text).toBe(0);
      // 24 hours across the plot's whole width, not a few columns an hour and the rest empty.
      const widest = Math.max(...plotOf(text).map((line) => line.trimEnd().length));
      expect(widest, text).toBeGreaterThanOrEqual(80 - 8);
    }
  });

  it('refuses to chart what is not a time series or bars, saying what a chart needs', async () => {
    const logs = await cli(['run', 'logs.all', '-p', 'project=acme-shop', '-f', 'chart'], { env: termEnv });
    expect(logs).toMatchObject({ code: 2, stdout: '' });
    expect(logs.stderr).toBe(
      'savedq: nothing to chart: no numeric field among id, timestamp, event_message, metadata; a chart needs numbers over a timestamp or date field (a time series: one row an instant) or numbers by one text field (bars: one row a value).\n',
    );
    const none = await cli(['run', 'usage.api-counts', '-p', 'project=nobody-at-all', '-p', 'interval=daily', '-f', 'chart'], { env: termEnv });
    expect(none).toMatchObject({ code: 2, stdout: '', stderr: 'savedq: nothing to chart: the query returned no rows.\n' });
    const shared = await cli(['run', 'status.classes-hourly', '--queries', examplesDir, '-p', 'projects=acme-shop,globex-api', '--at', at, '-f', 'chart'], { env: termEnv });
    expect(shared).toMatchObject({ code: 2, stdout: '' });
    expect(shared.stderr).toMatch(/^savedq: nothing to chart: several rows share a value of hour, and several rows share a value of project; a chart needs/);
    expect((await cli(['list', '-f', 'chart'], { env: termEnv })).code).toBe(2);
  });
});
