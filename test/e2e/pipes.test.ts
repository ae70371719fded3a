import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { binPath, cli, eventually, NO_CONFIG, savedqCommandLine, tempDir, EVENT_DEADLINE_MS } from '../helpers.js';

/** cli/signals.ts's deadline: a stop that waited for it did not end on the signal. */
const STOP_DEADLINE_MS = 5_000;

// savedq in shell pipelines and on paths that are not what they seem: a reader that stops early, a
// cache file or data directory under /proc, a key file that is a pipe, an interrupt while it waits.
const dir = tempDir();
const queries = join(dir, 'queries');
mkdirSync(queries);
// A query of many rows that needs no data: well over a pipe's 64 KiB in every format.
writeFileSync(
  join(queries, 'many.sql'),
  "/*\nparams:\n  n: { type: integer, default: 20000 }\nmax_rows: 100000\n*/\nSELECT number AS n, repeat('x', 60) AS text, toDateTime64('2026-01-01', 6, 'UTC') + number AS at FROM numbers(@n)\n",
);
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'cache.sqlite'), SAVEDQ_QUERIES: queries };

/** Runs savedq into a reader in a shell pipeline; its exit code and what it wrote on standard error. */
function piped(args: readonly string[], reader: string, extraEnv: Record<string, string> = env): { code: number; stderr: string } {
  const command = savedqCommandLine(args);
  const errFile = join(dir, `stderr-${Math.random().toString(36).slice(2)}`);
  const r = spawnSync('bash', ['-c', `${command} 2>'${errFile}' | ${reader} >/dev/null; echo "\${PIPESTATUS[0]}"; cat '${errFile}'`], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...extraEnv },
    encoding: 'utf8',
    timeout: EVENT_DEADLINE_MS,
  });
  const [code, ...stderr] = r.stdout.split('\n');
  return { code: Number(code), stderr: stderr.join('\n') };
}

describe('a reader that closes the pipe early', () => {
  it('ends savedq quietly (141, as Unix tools), from every format, with output well over 64 KiB', () => {
    for (const format of ['json', 'ndjson', 'csv', 'table']) {
      const args = ['run', 'many', '-f', format, '--no-cache', ...(format === 'table' ? ['-p', 'n=3000'] : [])];
      for (const reader of ['head -c 100', 'head -n 1']) {
        const r = piped(args, reader);
        expect(r, `${format} | ${reader}`).toEqual({ code: 141, stderr: '' });
      }
    }
  });

  it('writes everything when the reader reads everything (exit 0)', () => {
    expect(piped(['run', 'many', '-f', 'ndjson', '--no-cache'], 'wc -l')).toEqual({ code: 0, stderr: '' });
  });

  it('ends quietly from list, completion and check too', () => {
    const lots = join(dir, 'lots');
    mkdirSync(lots);
    for (let i = 0; i < 300; i++) {
      const values = Array.from({ length: 12 }, (_, k) => `value-number-${k}`).join(', ');
      writeFileSync(join(lots, `team.q${i}.sql`), `/*\ndescription: ${'a long description '.repeat(8)}\nparams:\n  v: { allowed: [${values}] }\n*/\nSELECT @v AS v\n`);
    }
    const many = { ...env, SAVEDQ_QUERIES: lots };
    for (const args of [['list', '-f', 'json'], ['completion', 'bash'], ['--quiet', 'check', '-f', 'json']]) {
      // 0 when the reader took it all in one read before it went (head reads up to 128 KiB at once).
      const r = piped(args, 'head -c 10', many);
      expect([0, 141], args.join(' ')).toContain(r.code);
      expect(r.stderr, args.join(' ')).toBe('');
    }
  });

  it("ends quietly from commander's own output: help and the version, to a reader that reads none of it", () => {
    for (const args of [['--help'], ['run', '--help'], ['alerts', 'list', '--help'], ['--version']]) {
      const r = piped(args, 'true');
      expect([0, 141], args.join(' ')).toContain(r.code);
      expect(r.stderr, args.join(' ')).toBe('');
    }
  });
});

describe('an answer written to the descriptor (cli/output.ts)', () => {
  const many = ['run', 'many', '-f', 'ndjson', '--no-cache'];
  const run = (stdout: number | 'pipe') => spawnSync(process.execPath, [binPath, ...many], { env: { PATH: process.env.PATH ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...env }, stdio: ['ignore', stdout, 'pipe'], maxBuffer: 1 << 26, encoding: 'utf8', timeout: EVENT_DEADLINE_MS });

  it('is the same whole text in a pipe and in a file', () => {
    const piped = run('pipe');
    const file = join(dir, 'answer.ndjson');
    const fd = openSync(file, 'w');
    const filed = run(fd);
    closeSync(fd);
    expect([piped.status, filed.status, piped.stderr, filed.stderr]).toEqual([0, 0, '', '']);
    expect(piped.stdout.split('\n')).toHaveLength(20_001);
    expect(readFileSync(file, 'utf8')).toBe(piped.stdout);
  });

  it('reaches a reader whole through a pipe another process made non-blocking, once savedq has waited on it', () => {
    // The answer (2 MB) is more than the pipe holds, and it is not read until savedq, past its first bytes,
    // waits in its event loop (its main thread in epoll): a write to the pipe found it would block
    // (EAGAIN), and Node's stream, which took the rest, waits for it to drain. Python makes the pipe
    // (Node has no call that sets O_NONBLOCK).
    const reader = `
import array, fcntl, os, subprocess, sys, termios, time
r, w = os.pipe()
fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)
child = subprocess.Popen(sys.argv[1:], stdout=w, stderr=subprocess.PIPE)
os.close(w)
deadline = time.monotonic() + 60
def waiting_on_pipe():
  held = array.array('i', [0])
  fcntl.ioctl(r, termios.FIONREAD, held)
  with open('/proc/%d/wchan' % child.pid) as f:
    return held[0] > 0 and 'epoll' in f.read()
# Seen once is enough: its main thread wakes now and then (a timer), and a second look may catch it so.
waited = False
while child.poll() is None and time.monotonic() < deadline:
  if waiting_on_pipe():
    waited = True
    break
  time.sleep(0.01)
data = b''
while True:
  chunk = os.read(r, 1 << 16)
  if not chunk: break
  data += chunk
child.wait()
print(waited, child.returncode, data.count(b'\\n'), repr(child.stderr.read().decode()))
`;
    const r = spawnSync('python3', ['-c', reader, process.execPath, binPath, ...many], { env: { PATH: process.env.PATH ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...env }, encoding: 'utf8', timeout: EVENT_DEADLINE_MS });
    expect(r.stdout.trim()).toBe("True 0 20000 ''");
  });
});

describe('paths that are not what they seem', () => {
  it('a cache file under /proc: one warning line and the answer, at once', async () => {
    const started = Date.now();
    // A cached query: one that is not never opens the cache file.
    const r = await cli(['run', 'usage.api-counts', '-p', 'project=x', '-p', 'interval=daily'], { env: { ...env, SAVEDQ_CACHE_FILE: '/proc/savedq/results.sqlite' } });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(expect.any(Array));
    expect(r.stderr).toMatch(/^warning: results cache \/proc\/savedq\/results\.sqlite is not usable \(no such file\); answering without it\.\n$/);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('a data directory under /proc: a clear error (exit 1), at once', async () => {
    const r = await cli(['run', 'many', '--no-cache'], { env: { ...env, SAVEDQ_DATA_DIR: '/proc/savedq/data' } });
    expect(r).toMatchObject({ code: 1, stdout: '' });
    expect(r.stderr).toBe('savedq: cannot use data directory /proc/savedq/data: no such directory.\n');
  });

  it('a key file that is a pipe: refused (exit 2), not read forever', async () => {
    const fifo = join(dir, 'keys.fifo');
    spawnSync('mkfifo', [fifo]);
    expect(existsSync(fifo)).toBe(true);
    const r = await cli(['serve', '--port', '0', '--api-key-file', fifo], { env });
    expect(r).toMatchObject({ code: 2, stderr: `savedq: cannot read API key file ${fifo}: not a regular file.\n` });
  });
});

describe('an interrupt', () => {
  /** Starts `savedq load` reading a pipe that stays open and quiet; resolves with its exit code and how long it took after `signal`. */
  async function interruptQuietLoad(args: readonly string[], signal: NodeJS.Signals, cwd = dir): Promise<{ code: number | null; ms: number; stderr: string }> {
    const child = spawn(process.execPath, [binPath, ...args, 'load', 'edge_logs', '-'], {
      cwd,
      env: { PATH: process.env.PATH ?? '', XDG_CONFIG_HOME: NO_CONFIG, SAVEDQ_CACHE_FILE: join(dir, 'load.sqlite') },
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.stdin.on('error', () => undefined);
    child.stdin.write('{"timestamp":"2026-01-01T00:00:00Z","project":"p"}\n'); // then nothing more, and no end
    // Once it holds the data directory (its owner file names it), it is reading: what a signal interrupts.
    const dataDir = args[args.indexOf('--data-dir') + 1] as string;
    const owner = join(resolve(cwd, dataDir), '.savedq.owner');
    await eventually('the load to hold its data directory', () => existsSync(owner) && readFileSync(owner, 'utf8').includes(`PID: ${child.pid}`));
    const sent = Date.now();
    child.kill(signal);
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    child.stdin.destroy();
    return { code, ms: Date.now() - sent, stderr };
  }

  it('ends a load waiting on a quiet pipe at once (exit 130), SIGINT or SIGTERM', async () => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      const r = await interruptQuietLoad(['--data-dir', join(dir, `quiet-${signal}`)], signal);
      expect(r.code, r.stderr).toBe(130);
      // On the signal, not at the 5 s deadline a stuck stop meets (cli/signals.ts): about 0.5 s on an
      // idle machine (closing the engine), 3.2 s seen beside a busy loop on each core.
      expect(r.ms, signal).toBeLessThan(STOP_DEADLINE_MS - 500);
      expect(r.stderr).toContain(`savedq: interrupted (${signal}); stopping.`);
    }
  });

  it('is not mistaken for serve’s when a path on the command line is named serve', async () => {
    // It was decided from the words of the command line: `--data-dir serve` made load ignore the first Ctrl-C.
    const r = await interruptQuietLoad(['--data-dir', 'serve'], 'SIGINT');
    expect(r.code, r.stderr).toBe(130);
    expect(r.ms).toBeLessThan(STOP_DEADLINE_MS - 500);
  });
});
