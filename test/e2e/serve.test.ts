import { execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startServer, type RunningServer } from '../../src/http/server.js';
import { keyChecker } from '../../src/http/keys.js';
import { EngineSocketServer } from '../../src/warehouse/engine-socket-server.js';
import { binPath, cli, endpoints, engineQueue, eventually, findEndpoint, load, LONG_TEST_MS, NO_CONFIG, startServe, tempDir, logInto, libraryOf, serveOptions } from '../helpers.js';
import { has } from '../system.js';

const dir = tempDir();
const dataDir = join(dir, 'data');
// The second has dots, as a token has: still a key.
const KEYS = ['first-key-0123456789', 'second.key.abcdefghij'];
const lib = libraryOf({ dataDir, cacheFile: join(dir, 'cache.sqlite') }, { role: 'serve' });
const logLines: string[] = [];
let server: RunningServer;

async function get(path: string, headers: Record<string, string> = { 'X-API-KEY': KEYS[0] as string }, init: RequestInit = {}) {
  const res = await fetch(`${server.url}${path}`, { headers, ...init });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>) };
}

const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString();

beforeAll(async () => {
  await load(lib, 'edge_logs', [
    ...Array.from({ length: 30 }, (_, i) => ({
      timestamp: minutesAgo(i),
      project: 'http-proj',
      event_message: `m${i}`,
      metadata: { request: { url: `https://http-proj.example/rest/v1/t${i}`, path: `/rest/v1/t${i}` } },
    })),
    ...Array.from({ length: 20 }, (_, i) => ({
      timestamp: minutesAgo(1),
      project: `many-${i}`,
      metadata: { request: { url: `https://many-${i}.example/auth/v1/x`, path: '/auth/v1/x' } },
    })),
  ]);
  server = await startServer(lib, serveOptions({ apiKeys: KEYS }, { version: 'test', log: logInto(logLines) }));
});

afterAll(async () => {
  await server?.close();
  await lib.close();
});

describe('savedq serve', () => {
  it('answers 200 {"result": rows} as JSON with what they are and cost, by name and by id alike', async () => {
    const byName = await get('/api/endpoints/query/logs.all?project=http-proj');
    expect(byName.status).toBe(200);
    expect(byName.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect((byName.body?.result as unknown[]).length).toBe(30);
    // Not cached: each answer is its own run's, with its own statistics.
    expect(byName.body).toMatchObject({ truncated: false, cached: false, age_seconds: 0, statistics: { elapsed: expect.any(Number), rows_read: expect.any(Number), bytes_read: expect.any(Number) } });
    const byId = await get(`/api/endpoints/query/${findEndpoint('logs.all').id}?project=http-proj`);
    expect(byId.body?.result).toEqual(byName.body?.result);
    expect(byName.headers.get('x-cache')).toBeNull(); // logs.all is not cached
  });

  it('answers the same rows as the CLI for the same call', async () => {
    const http = await get('/api/endpoints/query/usage.api-counts?project=http-proj&interval=hourly', {
      'X-API-KEY': KEYS[1] as string,
      'Cache-Control': 'no-cache',
    });
    // The server keeps the engine and shares it: the CLI's statements run here, not after a wait.
    const share = await EngineSocketServer.listen(await lib.warehouse(), dataDir, logInto());
    const fromCli = await cli(['run', 'usage.api-counts', '-p', 'project=http-proj', '-p', 'interval=hourly', '--no-cache'], {
      env: { SAVEDQ_DATA_DIR: dataDir, SAVEDQ_CACHE_FILE: join(dir, 'cli.sqlite') },
    });
    await share.close();
    expect(fromCli.code, fromCli.stderr).toBe(0);
    expect(http.body?.result).toEqual(JSON.parse(fromCli.stdout));
  });

  it('says whether a result came from the cache and how old it is; no-cache refreshes', async () => {
    const path = '/api/endpoints/query/functions.invocation-stats?project=cache-http&interval=1hr';
    const first = await get(path);
    const computed = Date.now();
    expect([first.headers.get('x-cache'), first.headers.get('age')]).toEqual(['MISS', '0']);
    const second = await get(path);
    expect(second.headers.get('x-cache')).toBe('HIT');
    // Whole seconds since the result was computed: present, and no more than have passed.
    expect(second.headers.get('age')).toMatch(/^\d+$/);
    expect(Number(second.headers.get('age'))).toBeLessThanOrEqual(Math.ceil((Date.now() - computed) / 1000));
    const refreshed = await get(path, { 'X-API-KEY': KEYS[0] as string, 'Cache-Control': 'no-cache' });
    expect(refreshed.headers.get('x-cache')).toBe('MISS');
  });

  it('refuses a missing key, a wrong key of the same length and of another length, and one shaped as a token, with 401', async () => {
    const path = '/api/endpoints/query/logs.all?project=http-proj';
    const sameLength = (KEYS[0] as string).replace(/.$/, 'X');
    const none = 'no credential: send an API key or a token in X-API-KEY or Authorization: Bearer.';
    const spaced = 'the credential holds whitespace: send the key or the token alone.';
    const attempts: [Record<string, string>, string][] = [
      [{}, none],
      [{ 'X-API-KEY': sameLength }, 'unknown API key.'],
      [{ 'X-API-KEY': 'short' }, 'unknown API key.'],
      [{ 'X-API-KEY': '' }, none],
      [{ Authorization: `Bearer ${sameLength}` }, 'unknown API key.'],
      // Another scheme is named; one that is not a scheme's name is not said back.
      [{ Authorization: 'Basic dXNlcjpwYXNz' }, 'Authorization: Basic is not taken: send Authorization: Bearer <key or token>, or the key in X-API-KEY.'],
      [{ Authorization: 'Digest username="me"' }, 'Authorization: Digest is not taken: send Authorization: Bearer <key or token>, or the key in X-API-KEY.'],
      [{ Authorization: '{x} y' }, 'an Authorization scheme other than Bearer is not taken: send Authorization: Bearer <key or token>, or the key in X-API-KEY.'],
      [{ Authorization: 'Bearer' }, none],
      // A credential is one word: whitespace inside it, of any kind a header can hold, is named.
      [{ Authorization: `Bearer ${KEYS[1] as string} ${KEYS[1] as string}` }, spaced],
      [{ Authorization: `Bearer ${KEYS[1] as string}\t${KEYS[1] as string}` }, spaced],
      [{ Authorization: `Bearer ${KEYS[1] as string}\u00a0x` }, spaced],
      [{ 'X-API-KEY': `${KEYS[0] as string} x` }, spaced],
      // A mistyped key with dots may have been meant as either; this server takes no tokens.
      [{ 'X-API-KEY': (KEYS[1] as string).replace(/.$/, 'X') }, 'unknown API key, and this server takes no tokens (no token secret is configured).'],
    ];
    for (const [headers, message] of attempts) {
      const r = await get(path, headers);
      expect(r.status).toBe(401);
      expect(r.headers.get('www-authenticate')).toBe('Bearer');
      expect(r.body).toEqual({ error: { code: 'unauthorized', message } });
    }
    expect((await get(path, { 'X-API-KEY': KEYS[1] as string })).status).toBe(200);
    expect((await get(path, { Authorization: `Bearer ${KEYS[1] as string}` })).status).toBe(200);
    // A proxy's Basic leaves the key its turn, and the public document public.
    expect((await get(path, { Authorization: 'Basic dXNlcjpwYXNz', 'X-API-KEY': KEYS[1] as string })).status).toBe(200);
    expect((await get('/openapi.json', { Authorization: 'Basic dXNlcjpwYXNz' })).status).toBe(200);
  });

  it('answers 400 naming the parameter, for bad percent-encoding and for a parameter given twice', async () => {
    const missing = await get('/api/endpoints/query/usage.api-counts?project=x');
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({
      error: { code: 'bad_request', message: "missing parameter 'interval' for usage.api-counts: one of minutely, hourly, daily." },
    });
    expect((await get('/api/endpoints/query/logs.all?project=%E0%A4%A')).status).toBe(400);
    const twice = await get('/api/endpoints/query/logs.all?project=a&project=b');
    expect([twice.status, (twice.body?.error as { message: string }).message]).toEqual([400, "parameter 'project' is given more than once."]);
    const regex = await get('/api/endpoints/query/usage.api-counts?project=%28&interval=daily');
    expect(regex.status).toBe(400);
    expect(JSON.stringify(regex.body)).not.toMatch(/SELECT|FROM|edge_logs/);
  });

  it('answers 404 for an unknown endpoint or path, 405 for other methods, 414 and 431 for oversized requests', async () => {
    expect((await get('/api/endpoints/query/logs.everything?project=x')).status).toBe(404);
    expect((await get('/api/endpoints/query/logs.everything')).body).toMatchObject({ error: { code: 'not_found' } });
    expect((await get('/nothing/here')).status).toBe(404);
    const put = await get('/api/endpoints/query/logs.all?project=x', { 'X-API-KEY': KEYS[0] as string }, { method: 'PUT' });
    expect([put.status, put.headers.get('allow')]).toEqual([405, 'GET, HEAD, POST']);
    expect((await get(`/api/endpoints/query/logs.all?project=${'x'.repeat(9000)}`)).status).toBe(414);
    expect((await get('/health', { 'X-Big': 'y'.repeat(20_000) })).status).toBe(431);
  });

  it('serves /health and /openapi.json without a key', async () => {
    expect(await get('/health', {})).toMatchObject({ status: 200, body: { status: 'ok' } });
    // A monitor holding an old key, or a token that does not verify, still sees the server up; only a valid key sees more.
    for (const headers of [{ 'X-API-KEY': 'wrong' }, { Authorization: 'Bearer abc' }, { Authorization: 'Basic dTpw' }] as Record<string, string>[]) {
      const health = await get('/health', headers);
      expect(health, JSON.stringify(headers)).toMatchObject({ status: 200, body: { status: 'ok' } });
      expect(health.body, JSON.stringify(headers)).not.toHaveProperty('store_location');
    }
    const doc = (await get('/openapi.json', {})).body as { openapi: string; paths: Record<string, { get: { parameters: Array<{ name: string; required: boolean; schema: Record<string, unknown> }> } }> };
    expect(doc.openapi).toBe('3.1.0');
    for (const e of endpoints) {
      for (const path of [`/api/endpoints/query/${e.name}`, `/api/endpoints/query/${e.id}`]) {
        const op = doc.paths[path]?.get;
        expect(op, path).toBeDefined();
        // The query's parameters, then the version pin: ?version= and the Savedq-Version header, neither required.
        expect(op?.parameters.map((p) => [p.name, p.required])).toEqual([...e.params.map((p) => [p.name, p.required]), ['version', false], ['Savedq-Version', false]]);
      }
    }
    const interval = doc.paths['/api/endpoints/query/usage.api-counts']?.get.parameters.find((p) => p.name === 'interval');
    expect(interval?.schema.enum).toEqual(['minutely', 'hourly', 'daily']);
  });

  it('runs 40 identical concurrent requests as one query with one body', async () => {
    const execute = vi.spyOn(lib.executor, 'execute');
    const path = `/api/endpoints/query/usage.api-counts?project=${randomUUID()}&interval=daily`;
    const answers = await Promise.all(Array.from({ length: 40 }, () => get(path)));
    expect(execute).toHaveBeenCalledTimes(1);
    execute.mockRestore();
    // One run: one set of rows and one run's statistics in every answer (how old each is, said apart).
    const whole = answers.map((a) => {
      const body = JSON.parse(a.text) as Record<string, unknown>;
      return `${a.status} ${JSON.stringify([body.result, body.truncated, body.statistics])}`;
    });
    expect(new Set(whole).size).toBe(1);
  });

  it('answers many different concurrent requests each with its own rows', async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => get(`/api/endpoints/query/usage.api-counts?project=^https://many-${i}\\.&interval=hourly`)),
    );
    for (const a of answers) {
      expect(a.status).toBe(200);
      const rows = a.body?.result as Array<Record<string, number>>;
      expect(rows.reduce((n, r) => n + (r.total_auth_requests ?? 0), 0)).toBe(1);
    }
  });

  it('logs one line per request without keys or parameter values', async () => {
    const before = logLines.length;
    await get('/api/endpoints/query/logs.all?project=http-proj');
    await get('/api/endpoints/query/usage.api-counts?project=many-1&interval=hourly', { 'X-API-KEY': KEYS[1] as string });
    await get('/api/endpoints/query/usage.api-counts?project=many-1&interval=hourly', { 'X-API-KEY': KEYS[1] as string });
    const lines = logLines.slice(before);
    expect(lines).toEqual([
      expect.stringMatching(/^GET logs\.all 200 \d+ms cache=- caller="key 1" id=[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-z]+$/),
      expect.stringMatching(/^GET usage\.api-counts 200 \d+ms cache=MISS caller="key 2" id=[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-z]+$/),
      expect.stringMatching(/^GET usage\.api-counts 200 \d+ms cache=HIT caller="key 2" id=[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-z]+$/),
    ]);
    for (const secret of [...KEYS, 'http-proj', 'many-1']) expect(lines.join('\n')).not.toContain(secret);
    // A fresh id for each request.
    expect(new Set(lines.map((l) => l.split(' id=')[1])).size).toBe(3);
  });

  it.runIf(has.curl)('works with curl', async () => {
    const { stdout } = await promisify(execFile)('curl', [
      '-sS',
      '-H',
      `X-API-KEY: ${KEYS[0]}`,
      `${server.url}/api/endpoints/query/logs.all?project=http-proj&iso_timestamp_start=${encodeURIComponent(minutesAgo(2.5))}`,
    ]);
    expect((JSON.parse(stdout) as { result: unknown[] }).result).toHaveLength(3);
  });
});

describe('savedq serve faults', () => {
  it('answers 502 when the warehouse is unreachable, never showing the password', async () => {
    const broken = libraryOf({ url: 'http://u:hunter2@127.0.0.1:9', cacheFile: join(dir, 'b.sqlite') });
    const logged: string[] = [];
    const s = await startServer(broken, serveOptions({ apiKeys: KEYS }, { version: 't', log: logInto(logged) }));
    const res = await fetch(`${s.url}/api/endpoints/query/logs.all?project=x`, { headers: { 'X-API-KEY': KEYS[0] as string } });
    const text = await res.text();
    await s.close();
    await broken.close();
    expect(res.status).toBe(502);
    // The caller learns what went wrong for it, not the server's address or user; the log has it all.
    expect(JSON.parse(text)).toEqual({ error: { code: 'warehouse_error', message: 'the warehouse cannot be reached (connection refused).' } });
    expect(logged).toContain('cannot reach ClickHouse at http://u@127.0.0.1:9: connection refused.');
    expect(logged.join('\n')).not.toContain('hunter2');
  });

  it('answers 504 when a query runs past the time limit', async () => {
    // The limit is the query's own (--timeout), which the engine enforces: a count over ten billion numbers.
    const queries = join(dir, 'slow-queries');
    mkdirSync(queries, { recursive: true });
    writeFileSync(join(queries, 'slow.sql'), 'SELECT count() AS n FROM numbers(10000000000)\n');
    const slow = libraryOf({ dataDir, cacheFile: join(dir, 'slow.sqlite'), timeout: '0.3', queries: [queries] });
    const s = await startServer(slow, serveOptions({ apiKeys: KEYS }, { version: 't', log: logInto() }));
    const res = await fetch(`${s.url}/api/endpoints/query/slow`, { headers: { 'X-API-KEY': KEYS[0] as string } });
    const body = (await res.json()) as unknown;
    await s.close();
    await slow.close();
    expect(res.status).toBe(504);
    expect(body).toEqual({ error: { code: 'timeout', message: 'slow ran past its time limit of 0.3 s (--timeout).' } });
  });

  it('answers 503 with Retry-After while another process holds the data directory, not 504 for the wait', async () => {
    // The time limit counts from when the query starts: the wait for the directory is bounded by --lock-wait.
    const held = join(dir, 'held');
    const holder = spawn(process.execPath, [binPath, '--data-dir', held, 'load', 'edge_logs', '-'], { env: { PATH: process.env.PATH ?? '' }, stdio: ['pipe', 'ignore', 'ignore'] });
    holder.stdin.on('error', () => undefined);
    holder.stdin.write('{"timestamp":"2026-01-01T00:00:00Z","project":"p"}\n');
    await eventually('the other process to hold the directory', () => existsSync(join(held, '.savedq.owner')));
    const waiting = libraryOf({ dataDir: held, cacheFile: join(dir, 'held.sqlite'), lockWait: '1.5', timeout: '0.5' });
    const s = await startServer(waiting, serveOptions({ apiKeys: KEYS }, { version: 't', log: logInto() }));
    try {
      const res = await fetch(`${s.url}/api/endpoints/query/logs.all?project=p`, { headers: { 'X-API-KEY': KEYS[0] as string } });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('busy');
    } finally {
      await s.close();
      await waiting.close();
      holder.kill('SIGKILL');
    }
  });

  it('refuses to start without an API key (exit 2)', async () => {
    const r = await cli(['serve', '--port', '0'], { env: { SAVEDQ_DATA_DIR: join(dir, 'd2') } });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('savedq: serve needs at least one API key: set SAVEDQ_API_KEYS or give --api-key-file.\n');
  });

  it('refuses a key longer than it can compare (exit 2, naming which); takes one just short of it', async () => {
    const long = 'k'.repeat(600);
    const r = await cli(['serve', '--port', '0'], { env: { SAVEDQ_DATA_DIR: join(dir, 'd3'), SAVEDQ_API_KEYS: `short,${long}` } });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('savedq: API key 2 is 600 bytes long; a key is at most 511.\n');
    // 511 bytes, some of them in characters of two bytes: accepted whole, and only whole.
    const key = `${'é'.repeat(100)}${'x'.repeat(311)}`;
    expect(Buffer.byteLength(key)).toBe(511);
    const isKey = keyChecker([key, 'other']);
    expect([isKey(key), isKey(key.slice(0, -1)), isKey(`${key}x`), isKey(long), isKey('other'), isKey('')]).toEqual([0, undefined, undefined, undefined, 1, undefined]);
  });

  // Keys are compared in buffers as long as the longest needs, in blocks of 64 bytes: 63 bytes fit one.
  const k63 = 'k'.repeat(63);
  const k62e = `${'k'.repeat(61)}é`;
  it.each([
    ['the key itself', k63, 0],
    ['the other key', 'short', 1],
    ['one byte more (64: the whole buffer)', `${k63}k`, undefined],
    ['a character of two bytes past the end', `${k63}é`, undefined],
    ['a prefix', k63.slice(0, 40), undefined],
    ['a key and a zero (the padding)', 'short\0', undefined],
    ['a key of two-byte characters, whole', k62e, 2],
    ['that key cut before its last character', k62e.slice(0, -1), undefined],
    ['a prefix of the short key', 'shor', undefined],
  ])('an API key compared in constant time: %s', (_what, presented, expected) => {
    const isKey = keyChecker([k63, 'short', k62e]);
    // Each after a long presented key, whose bytes must not stay in the buffer.
    isKey('x'.repeat(200));
    expect(isKey(presented)).toBe(expected);
  });

  // A query that takes two seconds, whatever the machine: in flight long enough to be seen running.
  const napQueries = join(dir, 'nap-queries');
  mkdirSync(napQueries, { recursive: true });
  writeFileSync(join(napQueries, 'nap.sql'), '/*\ncache: 900\n*/\nSELECT sleepEachRow(0.5) AS z FROM numbers(4)\n');
  /** `savedq serve` as a child process on a data directory of its own, once it listens. */
  const serveProcess = (name: string) =>
    startServe({ SAVEDQ_API_KEYS: 'k', SAVEDQ_DATA_DIR: join(dir, name), SAVEDQ_CACHE_FILE: join(dir, `${name}.sqlite`), SAVEDQ_QUERIES: napQueries });
  const countsPath = '/api/endpoints/query/usage.api-counts?project=x&interval=daily';
  const napPath = '/api/endpoints/query/nap';

  it('on SIGTERM finishes the request in flight, then exits 0', async () => {
    const server = await serveProcess('d3');
    const inFlight = fetch(`${server.url}${napPath}`, { headers: { 'X-API-KEY': 'k' } });
    await eventually('the request to run in the engine', async () => (await engineQueue(server.url)).running === 1);
    server.child.kill('SIGTERM');
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ result: [{ z: 0 }, { z: 0 }, { z: 0 }, { z: 0 }] });
    expect(await server.exited).toBe(0);
    expect(server.stderr()).toContain('SIGTERM: finishing requests in flight');
  });

  it('on SIGTERM after it has opened the engine and locked the data directory, still stops cleanly with 0', async () => {
    // The lock library (proper-lockfile, through signal-exit) re-raised a signal nobody else listened
    // to: once the server had stopped listening for it, a SIGTERM killed it mid-drain (exit 143).
    const server = await serveProcess('d4');
    // A connection of its own for each request: closing an idle keep-alive connection is part of stopping.
    expect((await fetch(`${server.url}${countsPath}`, { headers: { 'X-API-KEY': 'k', Connection: 'close' } })).status).toBe(200);
    const inFlight = fetch(`${server.url}${napPath}`, { headers: { 'X-API-KEY': 'k', 'Cache-Control': 'no-cache', Connection: 'close' } });
    await eventually('the request to run in the engine', async () => (await engineQueue(server.url)).running === 1);
    server.child.kill('SIGTERM');
    expect((await inFlight).status).toBe(200);
    expect(await server.exited).toBe(0);
  });
});

describe('the log in a file', () => {
  it('has every request line, in order, and the last ones written before serve exits (written off the event loop)', async () => {
    const logFile = join(dir, 'serve.log');
    const fd = openSync(logFile, 'w');
    const child = spawn(process.execPath, [binPath, 'serve', '--port', '0'], {
      env: { PATH: process.env.PATH ?? '', XDG_CONFIG_HOME: NO_CONFIG, SAVEDQ_DATA_DIR: join(dir, 'logged-data'), SAVEDQ_CACHE_FILE: join(dir, 'logged.sqlite'), SAVEDQ_API_KEYS: 'k' },
      stdio: ['ignore', 'ignore', fd],
    });
    closeSync(fd);
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const url = await eventually('serve to say where it listens', () => /listening on (http:\S+)/.exec(readFileSync(logFile, 'utf8'))?.[1]);
    const asked = 300;
    for (let i = 0; i < asked; i += 30) {
      await Promise.all(Array.from({ length: 30 }, () => fetch(`${url}/health`).then((r) => r.text())));
    }
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const lines = readFileSync(logFile, 'utf8').split('\n');
    const ids = lines.filter((l) => / GET \/health 200 /.test(l)).map((l) => parseInt(/ id=[0-9a-f]+-[0-9a-f]+-([0-9a-z]+)$/.exec(l)?.[1] ?? '', 36));
    expect(ids).toHaveLength(asked);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(lines.some((l) => /SIGTERM: finishing requests in flight, then stopping$/.test(l))).toBe(true);
  });
});

describe('serve --quiet', () => {
  it('keeps warnings and errors by their level, whatever they say: a query past its time limit is in the log, a request line is not', async () => {
    const queries = join(dir, 'quiet-queries');
    mkdirSync(queries, { recursive: true });
    writeFileSync(join(queries, 'endless.sql'), 'SELECT count() AS n FROM numbers(100000000000)\n');
    const server = await startServe({ SAVEDQ_DATA_DIR: join(dir, 'quiet-data'), SAVEDQ_CACHE_FILE: join(dir, 'quiet.sqlite'), SAVEDQ_QUERIES: queries, SAVEDQ_API_KEYS: 'k', SAVEDQ_TIMEOUT: '0.5' }, ['--quiet']);
    try {
      const res = await fetch(`${server.url}/api/endpoints/query/endless`, { headers: { 'X-API-KEY': 'k' } });
      expect(res.status).toBe(504);
      await server.waitFor(/Z endless ran past its time limit of 0\.5 s \(--timeout\) on the embedded engine at \S+\.$/m);
      expect(server.stderr()).not.toMatch(/ GET endless 504 /);
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  });
});

describe('what serve keeps in memory of its answers', () => {
  it('stays within --memory-mb however many large answers it gives: the least recently used go first, and each is answered whole', async () => {
    const folder = join(dir, 'large-answers');
    mkdirSync(folder, { recursive: true });
    // About 2 MB of rows an answer (4 MB in memory), a call a value of p.
    writeFileSync(join(folder, 'large.sql'), "/*\nparams:\n  p: { type: string, required: true }\ncache: 900\n*/\nSELECT @p AS p, number AS n, repeat('x', 20000) AS pad FROM numbers(100)\n");
    const serve = await startServe({ SAVEDQ_DATA_DIR: join(dir, 'large-data'), SAVEDQ_CACHE_FILE: join(dir, 'large.sqlite'), SAVEDQ_API_KEYS: 'key', XDG_CONFIG_HOME: NO_CONFIG }, ['--queries', folder, '--memory-mb', '8']);
    try {
      const ask = async (path: string) => (await fetch(`${serve.url}${path}`, { headers: { 'X-API-KEY': 'key' } })).json() as Promise<Record<string, unknown>>;
      const resident = async () => Number(/^process_resident_memory_bytes (\d+)/m.exec(await (await fetch(`${serve.url}/metrics`, { headers: { 'X-API-KEY': 'key' } })).text())?.[1]);
      // Each call twice: computed, then from what serve kept (or the cache file, once it let it go).
      let early = 0;
      for (let i = 0; i < 80; i++) {
        if (i === 10) early = await resident();
        for (let twice = 0; twice < 2; twice++) {
          const body = (await ask(`/api/endpoints/query/large?p=${i}`)) as { result: { p: string; n: number }[] };
          expect([body.result.length, body.result[99]?.p, body.result[99]?.n]).toEqual([100, String(i), 99]);
        }
      }
      type Kept = { bytes: number; max_bytes: number };
      const { memory } = (await ask('/health')) as { memory: { rows: Kept; bodies: Kept } };
      expect([memory.rows.max_bytes, memory.bodies.max_bytes]).toEqual([4 * 2 ** 20, 4 * 2 ** 20]);
      expect(memory.rows.bytes).toBeLessThanOrEqual(memory.rows.max_bytes);
      expect(memory.bodies.bytes).toBeLessThanOrEqual(memory.bodies.max_bytes);
      expect(memory.rows.bytes).toBeGreaterThan(0);
      // Held whole, the 70 answers since the tenth would take over 300 MB more (their rows in UTF-16, and
      // their bodies): 350 MB more was measured so; within the bound, 15 MB more or 25 less.
      expect((await resident()) - early).toBeLessThan(150 * 2 ** 20);
    } finally {
      serve.child.kill('SIGTERM');
      await serve.exited;
    }
  }, LONG_TEST_MS);
});
