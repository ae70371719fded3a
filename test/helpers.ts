import { spawn, type ChildProcess, type ChildProcessByStdio } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Readable, Writable } from 'node:stream';
import { afterAll } from 'vitest';
import type { Io } from '../src/commands/io.js';
import type { Log } from '../src/report.js';
import { resolveConfig, type Config, type ConfigFlags, type ServeSettings } from '../src/config.js';
import type { ServeOptions } from '../src/http/server.js';
import { Savedq, type Clock, type LibraryOptions } from '../src/library.js';
import { builtinQueriesDir } from '../src/package.js';
import { QueryCatalog } from '../src/queries/catalog.js';
import type { SavedQuery } from '../src/queries/types.js';
import { parseIsoTimestamp, toIsoMicros } from '../src/time.js';
import { loadEvents } from '../src/load/index.js';
import type { TableName } from '../src/warehouse/schema.js';

/** The built-in saved queries alone, as the library knows them. */
export const builtins = new QueryCatalog({ builtin: builtinQueriesDir, user: [] });
/** The built-in saved queries, in file-name order. */
export const endpoints = (await builtins.scan()).queries;
/** A built-in saved query by its name. */
export function findEndpoint(name: string): SavedQuery {
  const found = endpoints.find((e) => e.name === name);
  if (!found) throw new Error(`no built-in query ${name}`);
  return found;
}

/** A configuration folder that does not exist: tests never read the saved queries of whoever runs them. */
export const NO_CONFIG = join(tmpdir(), 'savedq-tests-have-no-config');

/** The fixed instant the engine tests run "as of". */
export const AT = '2026-03-10T12:34:56.789012Z';
export const AT_MICROS = parseIsoTimestamp(AT) as bigint;

/**
 * A temporary directory, removed when the test file ends: after every serve the file left running has
 * stopped (vitest runs a file's afterAll hooks last registered first, so this one comes before the
 * servers' own, and a serve still writing in the folder made its removal fail with ENOTEMPTY).
 */
export function tempDir(prefix = 'savedq-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  afterAll(async () => {
    await stopServers();
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

/**
 * A library on a fresh data directory and cache file. The embedded engine binds one data directory per
 * process, so a test file uses one library and keeps its cases apart by project name.
 */
export function testLibrary(options: { clock?: Clock; queries?: readonly string[] } = {}): Savedq {
  const dir = tempDir();
  return libraryOf({ dataDir: join(dir, 'data'), cacheFile: join(dir, 'cache.sqlite'), queries: options.queries }, options.clock ? { clock: options.clock } : {});
}

/**
 * A library as the command line would make it of these flags (no configuration file, no environment),
 * closed when the test file ends: a second library beside a file's own (another cache file, another
 * clock, a server URL, a time limit), or of a configuration already resolved.
 */
export function libraryOf(flags: ConfigFlags | Config, options: LibraryOptions = {}): Savedq {
  const lib = new Savedq('source' in flags ? flags : resolveConfig(flags, { XDG_CONFIG_HOME: NO_CONFIG }), options);
  afterAll(() => lib.close());
  return lib;
}

/** Loads events (objects) into a table through the same path as `savedq load`. */
export async function load(lib: Savedq, table: TableName, events: readonly object[]): Promise<void> {
  const report = await loadEvents(
    await lib.warehouse(),
    table,
    [events.map((e) => JSON.stringify(e)).join('\n')],
  );
  if (report.rejected > 0) throw new Error(`test events rejected: ${report.rejected}`);
}

/** An ISO instant `ms` milliseconds and `us` microseconds after AT (negative = before). */
export function atOffset(ms: number, us = 0): string {
  return toIsoMicros(AT_MICROS + BigInt(ms) * 1000n + BigInt(us));
}

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

export const binPath = fileURLToPath(new URL('../bin/savedq.js', import.meta.url));

/** The result of running the built CLI as a child process. */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `bin/savedq.js` with arguments, environment additions and optional standard input. */
export function cli(args: readonly string[], options: { env?: Record<string, string>; input?: string } = {}): Promise<CliResult> {
  return startCli(args, options).done;
}

/** Streams for calling a command in-process: standard input from a string, output captured. */
export function captureIo(stdin = ''): Io & { out: () => string; err: () => string } {
  const captured = { out: '', err: '' };
  const sink = (which: 'out' | 'err') =>
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        captured[which] += chunk.toString();
        done();
      },
    });
  return {
    stdin: Readable.from([stdin]),
    stdout: sink('out'),
    stderr: sink('err'),
    env: {},
    out: () => captured.out,
    err: () => captured.err,
  };
}

/** A `savedq serve` child process, once it listens. */
export interface ServeProcess {
  readonly child: ChildProcess;
  readonly url: string;
  readonly exited: Promise<number | null>;
  /** Everything it has written on standard error so far. */
  stderr(): string;
  /** Waits until its standard error matches. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
}

/**
 * Every serve a test file started and that still runs, killed when the file ends (a hook registered
 * inside a test would not be), and when the process does.
 */
const servers = new Set<ChildProcess>();
afterAll(stopServers);

/** Every serve this file started and left running, killed, and waited for until it has exited. */
async function stopServers(): Promise<void> {
  // A server leaves the set as it exits, so every one still in it is running.
  const running = [...servers];
  const gone = running.map((child) => new Promise<void>((resolve) => child.once('exit', () => resolve())));
  for (const child of running) child.kill('SIGKILL');
  await Promise.all(gone);
}
process.on('exit', () => {
  for (const child of servers) child.kill('SIGKILL');
});

/** Starts `savedq serve --port 0` with this environment (and PATH); resolves once it listens. */
export async function startServe(env: Record<string, string>, args: readonly string[] = [], serveArgs: readonly string[] = [], wrapper: readonly string[] = []): Promise<ServeProcess> {
  const command = [...wrapper, process.execPath, binPath, ...args, 'serve', '--port', '0', ...serveArgs];
  const child = spawn(command[0] as string, command.slice(1), { env: { PATH: process.env.PATH ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...env } });
  servers.add(child);
  child.on('exit', () => servers.delete(child));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let stderr = '';
  const waiters: { pattern: RegExp; resolve: () => void }[] = [];
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    for (const w of waiters.filter((w) => w.pattern.test(stderr))) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  });
  const waitFor = (pattern: RegExp, timeoutMs = EVENT_DEADLINE_MS) =>
    new Promise<void>((resolve, reject) => {
      if (pattern.test(stderr)) { resolve(); return; }
      const timer = setTimeout(() => reject(new Error(`serve never printed ${pattern}; it printed:\n${stderr}`)), timeoutMs);
      waiters.push({
        pattern,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
      void exited.then(() => setTimeout(() => reject(new Error(`serve exited; it printed:\n${stderr}`)), 50));
    });
  await waitFor(/listening on http:\S+/);
  const url = /listening on (http:\S+)/.exec(stderr)?.[1] as string;
  return { child, url, exited, stderr: () => stderr, waitFor };
}

/** How long a test waits for an event before it calls it a hang: generous, so only a real hang reaches it. */
export const EVENT_DEADLINE_MS = 60_000;
/** How long a test that waits for several events in turn (a load, a server's start and answers) may take: vitest's bound past the default one. */
export const LONG_TEST_MS = 4 * EVENT_DEADLINE_MS;

/**
 * Waits for an event: asks `probe` every few milliseconds until it gives something other than
 * undefined or false, and resolves with that. Past the deadline it fails, saying what it waited for.
 */
export async function eventually<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, deadlineMs = EVENT_DEADLINE_MS): Promise<T> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const found = await probe();
    if (found !== undefined && found !== false) return found;
    if (Date.now() > until) throw new Error(`gave up after ${deadlineMs / 1000} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A running serve's engine queue, from /health. */
export async function engineQueue(url: string): Promise<{ running: number; waiting: number; dropped: number }> {
  const body = (await (await fetch(`${url}/health`)).json()) as { queue?: { running: number; waiting: number; dropped: number } };
  return body.queue ?? { running: 0, waiting: 0, dropped: 0 };
}

/** A CLI child process under way: what it has printed so far, and its result once it ends. */
export interface RunningCli {
  readonly child: ChildProcess;
  stderr(): string;
  /** Waits until its standard error matches (an event it says it has reached). */
  waitFor(pattern: RegExp): Promise<void>;
  readonly done: Promise<CliResult>;
}

/**
 * Starts `bin/savedq.js` with arguments, environment additions and standard input (empty unless
 * given), for a test to follow as it goes.
 */
export function startCli(args: readonly string[], options: { env?: Record<string, string>; input?: string } = {}): RunningCli {
  const child = spawn(process.execPath, [binPath, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
    // A command that never ends (a serve a failed test started, say) is not left running after the tests.
    timeout: LONG_TEST_MS,
    killSignal: 'SIGKILL',
  });
  child.stdin.on('error', () => undefined); // a command that exits without reading its input
  child.stdin.end(options.input ?? '');
  const { done, stderr } = gathered(child);
  return {
    child,
    stderr,
    waitFor: async (pattern) => {
      await eventually(`${args.join(' ')} to print ${pattern}`, () => {
        if (pattern.test(stderr())) return true;
        if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited before printing ${pattern}; it printed:\n${stderr()}`);
        return false;
      });
    },
    done,
  };
}

/** A child's standard output and error as they come, and its end with both whole. */
function gathered(child: ChildProcessByStdio<Writable | null, Readable, Readable>): { stderr: () => string; done: Promise<CliResult> } {
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const done = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  return { stderr: () => stderr, done };
}

/**
 * Runs another program (a linter, a generator, a compiler) to its end, killed past `timeoutMs`, in this
 * process's environment unless `env` is given. Not spawnSync where the test file has a server: a test
 * process held up for seconds keeps its server's timers and its client's from running, and the server
 * then closes a kept-alive connection in the very turn the next fetch takes it up ("other side
 * closed", ECONNRESET; seen beside busy loops).
 */
export function runProgram(command: string, args: readonly string[], options: { env?: Record<string, string>; cwd?: string; timeoutMs: number }): Promise<CliResult> {
  const child = spawn(command, args, { env: options.env, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'], timeout: options.timeoutMs, killSignal: 'SIGKILL' });
  return gathered(child).done;
}

/** savedq run with `args`, as a POSIX shell's command line: each word in single quotes, its own quotes escaped. */
export function savedqCommandLine(args: readonly string[]): string {
  return [process.execPath, binPath, ...args].map((word) => `'${word.replace(/'/g, "'\\''")}'`).join(' ');
}

/**
 * savedq run with `args` in a real terminal (a pseudo-terminal `script` makes) of `columns` × `rows`,
 * in `env` (and the PATH); what the terminal shows, without its carriage returns. With `piped`, its
 * standard output goes into a pipe (`| cat`) and only standard error stays the terminal.
 */
export async function inTerminal(args: readonly string[], { columns = 80, rows = 40, env = {}, piped = false }: { columns?: number; rows?: number; env?: Record<string, string>; piped?: boolean } = {}): Promise<CliResult> {
  const command = savedqCommandLine(args);
  const line = piped ? `stty cols ${columns} rows ${rows}; ${command} | cat` : `stty cols ${columns} rows ${rows}; exec ${command}`;
  const shown = await runProgram('script', ['-qec', line, '/dev/null'], { env: { PATH: process.env.PATH ?? '', ...env }, timeoutMs: EVENT_DEADLINE_MS });
  return { ...shown, stdout: shown.stdout.replace(/\r/g, '') };
}

/** A log that keeps every line, whatever its level, in `lines` (none given: a log that keeps nothing). */
export function logInto(lines?: string[]): Log {
  const keep = (line: string) => void lines?.push(line);
  return { info: keep, warn: keep, error: keep };
}

/** serve's options for a server a test starts in its own process: its settings as resolved by default, but those given. */
export function serveOptions(settings: Partial<ServeSettings> & Pick<ServeSettings, 'apiKeys'>, options: Partial<Omit<ServeOptions, 'settings'>> = {}): ServeOptions {
  return {
    settings: { host: '127.0.0.1', port: 0, maxConnections: 1000, headerTimeoutSeconds: 10, maxQueue: 64, maxExports: 2, tokenSecrets: [], rateLimit: undefined, corsOrigins: [], allowedHosts: [], ...settings },
    warmEveryMs: 0,
    pruneEveryMs: 0,
    alertsEveryMs: 0,
    version: 'test',
    log: logInto(),
    logRequests: true,
    ui: true,
    mcp: true,
    ...options,
  };
}
