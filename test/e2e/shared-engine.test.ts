import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { binPath, cli, engineQueue, eventually, NO_CONFIG, startServe, tempDir, type ServeProcess, LONG_TEST_MS, EVENT_DEADLINE_MS } from '../helpers.js';
import { has } from '../system.js';

// One engine per data directory: while `savedq serve` runs it owns the embedded engine and every other
// savedq process sends its statements there. Real processes throughout: serve, a polling client, the CLI.
const dir = tempDir();
const queries = join(dir, 'queries');
mkdirSync(queries);
writeFileSync(join(queries, 'slow.sql'), 'SELECT count() AS n FROM numbers(20000000000) WHERE number % 7 = 3\n');
// Two seconds, whatever the machine: four rows, half a second each.
writeFileSync(join(queries, 'nap.sql'), 'SELECT sleepEachRow(0.5) AS z FROM numbers(4)\n');
writeFileSync(join(queries, 'nap.again.sql'), 'SELECT sleepEachRow(0.5) AS again FROM numbers(4)\n');
// An answer of about 4 MB: over a frame's header limit, and nothing the socket may refuse.
writeFileSync(join(queries, 'big.sql'), "/*\nmax_rows: 1000\n*/\nSELECT number, repeat('x', 20000) AS pad FROM numbers(200)\n");
writeFileSync(join(queries, 'counted.sql'), '/*\nparams:\n  p: { type: string, required: true }\ncache: 900\n*/\nSELECT count() AS n FROM edge_logs WHERE project = @p\n');
writeFileSync(join(queries, 'rows.of.sql'), '/*\nparams:\n  p: { type: string, required: true }\n*/\nSELECT count() AS n, uniqExact(id) AS ids FROM edge_logs WHERE project = @p\n');
// A second's lock wait: a command that waited for the data directory rather than use serve would fail.
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'cache.sqlite'), SAVEDQ_QUERIES: queries, SAVEDQ_LOCK_WAIT: '1' };
const KEY = 'shared-engine-key';

/** An NDJSON file of `n` events of a project, over the last hours. */
function events(file: string, project: string, n: number): string {
  const now = Date.now();
  const lines = Array.from({ length: n }, (_, i) =>
    JSON.stringify({ id: randomUUID(), timestamp: new Date(now - (i % 36_000) * 1000).toISOString(), project, event_message: `e${i}`, metadata: { request: { path: `/rest/v1/t${i % 50}` } } }),
  );
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

async function rowsOf(project: string): Promise<{ n: number; ids: number }> {
  const r = await cli(['run', 'rows.of', '-p', `p=${project}`, '--no-cache'], { env });
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { n: number; ids: number }[])[0] as { n: number; ids: number };
}

/** `savedq load edge_logs -`, reading from a pipe the test writes. */
function pipedLoad(batchMb: string) {
  const child = spawn(process.execPath, [binPath, 'load', 'edge_logs', '-', '--batch-mb', batchMb], {
    env: { PATH: process.env.PATH ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...env },
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.stdin.on('error', () => undefined); // what the load had not read when it stopped
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  started.push({ child, exited });
  return { child, exited, stderr: () => stderr };
}

/** Waits until some rows of a project are stored. */
async function untilRows(project: string): Promise<void> {
  await eventually(`rows of ${project} to be stored`, async () => (await rowsOf(project)).n > 0);
}

beforeAll(async () => {
  const r = await cli(['load', '--sample'], { env });
  expect(r.code, r.stderr).toBe(0);
});

/** The processes a test started: each test stops its own, or they are killed after it if it failed first. */
const started: { child: ChildProcess; exited: Promise<unknown> }[] = [];
afterEach(async () => {
  for (const { child, exited } of started.splice(0)) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    child.kill('SIGKILL');
    await exited;
  }
});

async function serve(extra: Record<string, string> = {}): Promise<ServeProcess> {
  const server = await startServe({ ...env, SAVEDQ_API_KEYS: KEY, ...extra });
  started.push(server);
  return server;
}

describe('a running serve shares its engine', () => {
  it('run, warm, load, check and cache list all succeed while a client polls through serve, no lock wait, no error anywhere', async () => {
    const server = await serve();
    const socket = statSync(join(env.SAVEDQ_DATA_DIR, 'savedq.sock'));
    expect(socket.isSocket()).toBe(true);
    expect(socket.mode & 0o777).toBe(0o600);

    // A dashboard polling every 100 ms: however fast the commands below, several polls meet them.
    const polled: { status: number; started: number; ms: number }[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const started = Date.now();
        const res = await fetch(`${server.url}/api/endpoints/query/logs.all?project=acme-shop&project_tier=PAYG`, { headers: { 'X-API-KEY': KEY } });
        await res.arrayBuffer();
        polled.push({ status: res.status, started, ms: Date.now() - started });
        await new Promise((r) => setTimeout(r, 100));
      }
    })();

    const file = events(join(dir, 'shared.ndjson'), 'shared-load', 60_000);
    const commandsStarted = Date.now();
    const [run, counts, warm, load, check, cacheList] = await Promise.all([
      cli(['run', 'logs.all', '-p', 'project=acme-shop', '-p', 'project_tier=PAYG', '--no-cache'], { env }),
      cli(['run', 'usage.api-counts', '-p', 'project=acme', '-p', 'interval=daily'], { env }),
      cli(['warm'], { env }),
      cli(['load', 'edge_logs', file, '--batch-mb', '1'], { env }),
      cli(['check'], { env }),
      cli(['cache', 'list', '-f', 'json'], { env }),
    ]);
    const commandsEnded = Date.now();
    polling = false;
    await poller;
    for (const [name, r] of Object.entries({ run, counts, warm, load, check, cacheList })) expect(r.code, `${name}: ${r.stderr}`).toBe(0);
    expect(load.stderr).toBe('loaded 60000 rows into edge_logs, rejected 0 lines\n');
    expect(await rowsOf('shared-load')).toEqual({ n: 60_000, ids: 60_000 });
    // The same rows through the CLI as through serve.
    const http = await fetch(`${server.url}/api/endpoints/query/logs.all?project=acme-shop&project_tier=PAYG`, { headers: { 'X-API-KEY': KEY } });
    expect(((await http.json()) as { result: unknown[] }).result).toEqual(JSON.parse(run.stdout));
    // The poller was never refused, and its queries got their turn between the load's batches.
    expect(polled.filter((p) => p.started >= commandsStarted && p.started < commandsEnded).length).toBeGreaterThanOrEqual(2);
    expect(polled.filter((p) => p.status !== 200)).toEqual([]);
    expect(Math.max(...polled.map((p) => p.ms))).toBeLessThan(5_000);
    expect(server.stderr()).not.toMatch(/failed|error/i);

    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, LONG_TEST_MS);

  it('carries an answer of any size to a run beside serve: the same bytes as without it', async () => {
    const alone = await cli(['run', 'big', '--no-cache', '-f', 'csv'], { env });
    expect(alone.code, alone.stderr).toBe(0);
    expect(alone.stdout.length).toBeGreaterThan(4_000_000);
    const server = await serve();
    const beside = await cli(['run', 'big', '--no-cache', '-f', 'csv'], { env });
    expect(beside.code, beside.stderr).toBe(0);
    expect(beside.stdout).toBe(alone.stdout);
    expect(server.stderr()).not.toMatch(/closed a connection/);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, LONG_TEST_MS);

  it('while a load runs, an answer cached before it is still served, with no engine; after it, no answer from before it', async () => {
    const counted = ['run', 'counted', '-p', 'p=during-load'];
    const generationFile = join(env.SAVEDQ_DATA_DIR, 'savedq-generation');
    const before = await cli(counted, { env });
    expect(before.code, before.stderr).toBe(0);
    expect(JSON.parse(before.stdout)).toEqual([{ n: 0 }]);
    // A load that holds the directory, reading a pipe that stays open.
    const load = pipedLoad('1');
    await eventually('the load to mark the data loading', () => existsSync(generationFile) && readFileSync(generationFile, 'utf8').includes('\nloading '));
    // A second's lock wait: the answer comes from the cache, without the engine the load holds.
    const hit = await cli(['--verbose', ...counted], { env });
    expect(hit.code, hit.stderr).toBe(0);
    expect(hit.stderr).toMatch(/^counted: from cache, computed \d+ s ago$/m);
    expect(hit.stdout).toBe(before.stdout);
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
    const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'counted', arguments: { p: 'during-load' } } };
    const mcp = await cli(['mcp'], { env, input: `${JSON.stringify(initialize)}\n${JSON.stringify(call)}\n` });
    expect(JSON.parse(mcp.stdout.trim().split('\n')[1] ?? '{}')).toMatchObject({ id: 2, result: { structuredContent: { cached: true, rows: [{ n: 0 }] } } });
    // The load's rows arrive, and it ends: the answer from before it is served no more.
    load.child.stdin.end(readFileSync(events(join(dir, 'during.ndjson'), 'during-load', 500)));
    expect(await load.exited, load.stderr()).toBe(0);
    const after = await cli(['--verbose', ...counted], { env });
    expect(after.stderr).toMatch(/^counted: 1 row, kept in the cache/m);
    expect(JSON.parse(after.stdout)).toEqual([{ n: 500 }]);
  }, LONG_TEST_MS);

  it('through serve, an answer computed while a load runs is not kept, and a load killed midway is a change of the data', async () => {
    const server = await serve();
    const ask = async () => {
      const res = await fetch(`${server.url}/api/endpoints/query/counted?p=serve-load`, { headers: { 'X-API-KEY': KEY } });
      return { cache: res.headers.get('x-cache'), n: ((await res.json()) as { result: { n: number }[] }).result[0]?.n };
    };
    expect(await ask()).toEqual({ cache: 'MISS', n: 0 });
    expect(await ask()).toEqual({ cache: 'HIT', n: 0 });
    // More than a batch of 1 MiB: the first batches are stored while the load waits for the rest.
    const load = pipedLoad('1');
    load.child.stdin.write(readFileSync(events(join(dir, 'serve-load.ndjson'), 'serve-load', 12_000)));
    await eventually('the first rows of the load to be stored', async () => (await rowsOf('serve-load')).n > 0);
    const stored = (await rowsOf('serve-load')).n;
    expect(readFileSync(join(env.SAVEDQ_DATA_DIR, 'savedq-generation'), 'utf8')).toContain('\nloading ');
    // The answer from before the load, as it was.
    expect(await ask()).toEqual({ cache: 'HIT', n: 0 });
    // A refresh during the load is answered on the data as it is, and not kept: the cache still has the one from before.
    const refreshed = await cli(['run', 'counted', '-p', 'p=serve-load', '--refresh'], { env });
    expect(refreshed.code, refreshed.stderr).toBe(0);
    expect(JSON.parse(refreshed.stdout)).toEqual([{ n: stored }]);
    expect(await ask()).toEqual({ cache: 'HIT', n: 0 });
    // The load is killed: the data is half changed, and no answer from before it is served.
    load.child.kill('SIGKILL');
    await load.exited;
    expect(await ask()).toEqual({ cache: 'MISS', n: stored });
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, LONG_TEST_MS);

  it('a load through serve interrupted with Ctrl-C, then run again, stores every row once', async () => {
    const server = await serve();
    const file = events(join(dir, 'interrupted.ndjson'), 'interrupted-load', 300_000);
    const lines = readFileSync(file);
    const half = lines.indexOf(0x0a, lines.length >> 1) + 1;
    // The first half through a pipe that then stays open: the load stores what it has and waits for more.
    const load = pipedLoad('2');
    load.child.stdin.write(lines.subarray(0, half));
    await untilRows('interrupted-load');
    load.child.kill('SIGINT');
    expect(await load.exited, load.stderr()).toBe(130);
    const partial = await rowsOf('interrupted-load');
    expect(partial.n).toBeGreaterThan(0);
    expect(partial.n).toBeLessThan(300_000);
    const again = await cli(['load', 'edge_logs', file, '--batch-mb', '2'], { env });
    expect(again.code, again.stderr).toBe(0);
    expect(await rowsOf('interrupted-load')).toEqual({ n: 300_000, ids: 300_000 });
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, LONG_TEST_MS);

  it('a serve killed under a request leaves the client a clear error (exit 1) at once; the next command opens the engine itself', async () => {
    const server = await serve();
    const started = Date.now();
    const pending = cli(['run', 'slow', '--no-cache'], { env: { ...env, SAVEDQ_TIMEOUT: '120' } });
    await eventually('the query to run in serve', async () => (await engineQueue(server.url)).running === 1);
    server.child.kill('SIGKILL');
    const r = await pending;
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^savedq: savedq serve at .* stopped answering \(it closed the connection\); run the command again\.\n$/);
    expect(Date.now() - started).toBeLessThan(15_000);
    // The socket and the lock the killed serve left behind do not hold the next command up.
    const next = Date.now();
    expect(await rowsOf('shared-load')).toEqual({ n: 60_000, ids: 60_000 });
    expect(Date.now() - next).toBeLessThan(5_000);
  });

  it('a serve killed under a load sent to it: the load exits 1 at once; run again without serve, every row is stored once', async () => {
    const server = await serve();
    const file = events(join(dir, 'orphaned.ndjson'), 'orphaned-load', 300_000);
    const lines = readFileSync(file);
    // All of it, in 1 MiB batches: the load is busy storing them when serve goes.
    const load = pipedLoad('1');
    load.child.stdin.end(lines);
    await untilRows('orphaned-load');
    server.child.kill('SIGKILL');
    expect(await server.exited).toBe(null);
    expect(await load.exited).toBe(1);
    expect(load.stderr()).toMatch(/savedq: savedq serve at .* stopped answering \(it closed the connection\); run the command again\.\n$/);
    const again = await cli(['load', 'edge_logs', file, '--batch-mb', '1'], { env });
    expect(again.code, again.stderr).toBe(0);
    expect(await rowsOf('orphaned-load')).toEqual({ n: 300_000, ids: 300_000 });
  }, LONG_TEST_MS);

  it('a command waiting for the directory beside a socket no one answers waits without spinning, then names the holder', async () => {
    // A load holds the directory, reading a pipe that stays quiet; beside it, a socket a killed serve left.
    const { child: holder, exited } = pipedLoad('32');
    const owner = join(env.SAVEDQ_DATA_DIR, '.savedq.owner');
    await eventually('the load to hold the directory', () => existsSync(owner) && readFileSync(owner, 'utf8').includes(`PID: ${holder.pid}`));
    const socket = join(env.SAVEDQ_DATA_DIR, 'savedq.sock');
    spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(socket)}, () => process.exit(0))`]);
    expect(statSync(socket).isSocket()).toBe(true);

    const waited = spawnSync('bash', ['--norc', '--noprofile', '-c', `TIMEFORMAT='cpu %U %S'; time ${process.execPath} ${binPath} run logs.all -p project=acme-shop --no-cache --lock-wait 6`], {
      env: { PATH: process.env.PATH ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...env },
      encoding: 'utf8',
      timeout: EVENT_DEADLINE_MS, // it used to spin for good, past its lock wait
    });
    expect(waited.stderr).toMatch(new RegExp(`^savedq: data directory .* is in use by process ${holder.pid} .*; gave up after 6 s \\(see --lock-wait\\)\\.\n`));
    // Spinning, it burnt a core for the whole 6 s (connecting to the dead socket over and over); waiting,
    // it spends its start and a look every 100 ms. CPU time, not wall time: a busy machine slows both alike.
    const [user, sys] = (/cpu ([\d.]+) ([\d.]+)/.exec(waited.stderr) ?? []).slice(1).map(Number);
    expect((user ?? 99) + (sys ?? 99)).toBeLessThan(3);
    holder.kill('SIGINT');
    expect(await exited).toBe(130);
  });

  it('a query whose HTTP client went away while it waited its turn is not run; the log says 499', async () => {
    const server = await serve();
    const get = (what: string, signal?: AbortSignal) => fetch(`${server.url}/api/endpoints/query/${what}`, { headers: { 'X-API-KEY': KEY }, signal });
    const first = get('nap'); // runs 2 s
    await eventually('the first nap to run', async () => (await engineQueue(server.url)).running === 1);
    const impatient = new AbortController();
    const second = get('nap.again', impatient.signal).catch((err: unknown) => err);
    await eventually('the second to wait its turn', async () => (await engineQueue(server.url)).waiting === 1);
    impatient.abort();
    expect(await second).toBeInstanceOf(Error);
    // When its turn comes, the engine is not given it: no one waits for its answer.
    await eventually('the second to be dropped at its turn', async () => (await engineQueue(server.url)).dropped === 1);
    expect((await first).status).toBe(200);
    const quick = await get('rows.of?p=acme-shop');
    expect(quick.status).toBe(200);
    expect((await engineQueue(server.url)).dropped).toBe(1);
    await server.waitFor(/^\d{4}-\d\d-\d\dT[\d:.]+Z GET nap\.again 499 \d+ms cache=- caller="key 1" id=\S+$/m);
    // The same query asked again is run afresh, not joined to the one given up.
    const again = await get('nap.again');
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ result: [{ again: 0 }, { again: 0 }, { again: 0 }, { again: 0 }] });
  });

  it('a query whose process was killed while it waited its turn in serve is not run', async () => {
    const server = await serve();
    const first = cli(['run', 'nap', '--no-cache'], { env }); // runs 2 s in serve
    await eventually('the first nap to run in serve', async () => (await engineQueue(server.url)).running === 1);
    const waiting = spawn(process.execPath, [binPath, 'run', 'nap', '--no-cache'], { env: { PATH: process.env.PATH ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...env }, stdio: 'ignore' });
    await eventually('the second to wait its turn in serve', async () => (await engineQueue(server.url)).waiting === 1);
    waiting.kill('SIGKILL');
    await eventually('the killed process’s query to be dropped at its turn', async () => (await engineQueue(server.url)).dropped === 1);
    expect((await first).code).toBe(0);
    const quick = await cli(['run', 'rows.of', '-p', 'p=acme-shop', '--no-cache'], { env });
    expect(quick.code, quick.stderr).toBe(0);
    expect((await engineQueue(server.url)).dropped).toBe(1);
  });

  it('a second serve on the directory says at once that one already serves it (exit 1), and the first keeps serving', async () => {
    const server = await serve();
    const started = Date.now();
    const second = await cli(['serve', '--port', '0'], { env: { ...env, SAVEDQ_API_KEYS: KEY, SAVEDQ_LOCK_WAIT: '30' } });
    expect(second.code).toBe(1);
    expect(second.stderr).toBe(
      `savedq: data directory ${env.SAVEDQ_DATA_DIR} is already served by a running savedq serve: one serve a data directory (stop that one, or give this one a --data-dir of its own).\n`,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(statSync(join(env.SAVEDQ_DATA_DIR, 'savedq.sock')).isSocket()).toBe(true);
    expect(await rowsOf('shared-load')).toEqual({ n: 60_000, ids: 60_000 });
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });

  it('shares a data directory whose socket path is too long for a socket address, from inside it', async () => {
    const parent = join(dir, 'a'.repeat(60), 'b'.repeat(40));
    const deep = { ...env, SAVEDQ_DATA_DIR: join(parent, 'data') };
    expect(Buffer.byteLength(join(deep.SAVEDQ_DATA_DIR, 'savedq.sock'))).toBeGreaterThan(107);
    const server = await serve(deep);
    expect(statSync(join(deep.SAVEDQ_DATA_DIR, 'savedq.sock')).isSocket()).toBe(true);
    // With serve holding the directory and a second's lock wait, only the socket can answer this.
    const r = await cli(['run', 'logs.all', '-p', 'project=acme-shop', '--no-cache'], { env: deep });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('[]\n');
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    // Nothing was made beside the data directory (Node would have bound a cut-short path there).
    expect(readdirSync(parent)).toEqual(['data']);
    expect(existsSync(join(deep.SAVEDQ_DATA_DIR, 'savedq.sock'))).toBe(false);
  });

  it.runIf(has.root)('refuses the socket to another user', () => {
    const open = join(dir, 'open');
    mkdirSync(open);
    // Directories anyone may pass through, so that only the socket's own permission stands in the way.
    for (const d of [dir, open]) chmodSync(d, 0o755);
    const data = join(open, 'data');
    const server = spawnSync('sh', ['-c', `SAVEDQ_API_KEYS=k SAVEDQ_DATA_DIR=${data} XDG_CONFIG_HOME=${NO_CONFIG} timeout 30 ${process.execPath} ${binPath} serve --port 0 & for i in $(seq 100); do [ -S ${data}/savedq.sock ] && break; sleep 0.2; done; ls -l ${data}/savedq.sock; setpriv --reuid=nobody --regid=nogroup --clear-groups ${process.execPath} -e "require('net').connect('${data}/savedq.sock').on('connect', () => { console.log('CONNECTED'); process.exit(0); }).on('error', (e) => { console.log(e.code); process.exit(0); })"; kill %1`], { encoding: 'utf8', timeout: EVENT_DEADLINE_MS });
    expect(server.stdout).toMatch(/^srw------- /m);
    expect(server.stdout).toMatch(/^EACCES$/m);
    expect(server.stdout).not.toContain('CONNECTED');
  }, LONG_TEST_MS);
});
