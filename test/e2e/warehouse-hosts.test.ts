import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cli, eventually, LONG_TEST_MS, startCli, startServe, tempDir, type ServeProcess } from '../helpers.js';
import { startStandin, urlFlags, type Standin, type StandinStatement } from '../standin.js';

// A warehouse of several hosts (docs/scaling.md, "Several hosts"): three ClickHouse stand-ins (one
// process and one data directory each, the embedded engine behind ClickHouse's HTTP interface), loaded
// with the same rows, with faults a test switches on: refused, hung, a reset half-way, an exception in
// a 200 answer, a slow query that records how it was cancelled. What each test counts is what the hosts
// were asked (each stand-in's log of statements).

const dir = tempDir('savedq-hosts-');
const queries = join(dir, 'queries');
let hosts: Standin[] = [];
let cacheFiles = 0;

/** 300 events of three projects, the same on every host. */
function events(): string {
  const start = Date.UTC(2026, 10, 30, 12);
  return Array.from({ length: 300 }, (_, i) =>
    JSON.stringify({ timestamp: new Date(start + i * 60_000).toISOString(), project: `p${i % 3}`, event_message: `GET /rest/v1/items/${i}`, metadata: { request: { method: 'GET', path: `/rest/v1/items/${i}` }, response: { status_code: i % 7 === 0 ? 500 : 200 } } }),
  ).join('\n');
}

const QUERY = (name: string, header: string, sql: string) => `/*\ndescription: ${name}, for the hosts' tests.\nparams:\n  project:\n    type: string\n    required: true\n    description: The project.\n${header}*/\n${sql}\n`;

beforeAll(async () => {
  mkdirSync(queries);
  // Cached a second, so a test sees it expire; kept stale a day (the default).
  writeFileSync(join(queries, 'count.sql'), QUERY('count', 'cache: 1\n', 'SELECT count() AS n, uniqExact(id) AS ids FROM edge_logs WHERE project = @project'));
  // Cached an hour: a second run finds it however busy the machine.
  writeFileSync(join(queries, 'count-hour.sql'), QUERY('count-hour', 'cache: 3600\n', 'SELECT count() AS n, uniqExact(id) AS ids FROM edge_logs WHERE project = @project'));
  writeFileSync(join(queries, 'never-stale.sql'), QUERY('never-stale', 'cache: 1\nstale_if_error: 0\n', 'SELECT count() AS n FROM edge_logs WHERE project = @project'));
  writeFileSync(join(queries, 'capped.sql'), QUERY('capped', 'cache: 60\nsandbox: true\nlimits:\n  read_rows: 10\n  threads: 2\n', 'SELECT project, count() AS n FROM edge_logs WHERE project = @project GROUP BY project'));
  writeFileSync(join(dir, 'events.ndjson'), `${events()}\n`);
  hosts = await Promise.all([1, 2, 3].map((i) => startStandin(join(dir, `host-${i}`))));
  for (const host of hosts) {
    const loaded = await cli(['--url', host.url, '--cache-file', join(dir, 'setup.sqlite'), 'load', 'edge_logs', join(dir, 'events.ndjson')]);
    expect(loaded.code, loaded.stderr).toBe(0);
  }
}, LONG_TEST_MS);
afterAll(async () => {
  await Promise.all(hosts.map((h) => h.stop()));
});
afterEach(async () => {
  // Every test starts with every host answering, and their logs empty.
  await Promise.all(hosts.map((h) => h.reset()));
});

/** A test's own cache file. */
function env(): Record<string, string> {
  return { SAVEDQ_CACHE_FILE: join(dir, `cache-${++cacheFiles}.sqlite`), SAVEDQ_QUERIES: queries, SAVEDQ_DATA_DIR: join(dir, 'unused') };
}
/** The statements of saved queries a host was asked (not the definition checks around them). */
const asked = async (host: Standin, query: string): Promise<StandinStatement[]> => (await host.log()).filter((s) => (s.log_comment ?? '').includes(`"query":"${query}"`) && !s.query.startsWith('EXPLAIN'));

const countOf = (stdout: string) => JSON.parse(stdout) as { n: number; ids: number }[];

describe('a warehouse of several hosts', () => {
  it('takes --url again and SAVEDQ_CLICKHOUSE_URL comma-separated as its hosts, in either order one warehouse and one cache', async () => {
    const [a, b] = hosts as [Standin, Standin];
    const e = env();
    const first = await cli([...urlFlags(a, b), 'run', 'count-hour', '-p', 'project=p1', '-f', 'json'], { env: e });
    expect(first.code, first.stderr).toBe(0);
    expect(countOf(first.stdout)).toEqual([{ n: 100, ids: 100 }]);
    expect(await asked(a, 'count-hour')).toHaveLength(1);
    // The other order, given by the variable: the same warehouse, so the same cached answer; no host asked.
    const second = await cli(['run', 'count-hour', '-p', 'project=p1', '-f', 'json', '--stats'], { env: { ...e, SAVEDQ_CLICKHOUSE_URL: `${b.url},${a.url}` } });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toMatch(/cached \d+ s ago/);
    expect((await asked(a, 'count-hour')).length + (await asked(b, 'count-hour')).length).toBe(1);
  });

  it('refuses a malformed URL among them, naming it without its password, and changes nothing', async () => {
    const bad = await cli(['--url', hosts[0]?.url as string, '--url', 'http://ann:s3cret-pw@[bad', 'run', 'count', '-p', 'project=p1'], { env: env() });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^savedq: invalid ClickHouse URL http:\/\/ann@\[bad: not a URL/);
    expect(bad.stderr).not.toContain('s3cret-pw');
    const scheme = await cli(['run', 'count', '-p', 'project=p1'], { env: { ...env(), SAVEDQ_CLICKHOUSE_URL: `${hosts[0]?.url as string},ftp://h` } });
    expect(scheme.code).toBe(2);
    expect(scheme.stderr).toContain('invalid ClickHouse URL ftp://h: expected http:// or https://.');
    // Hosts joined by commas in one flag, as the environment takes them: each its own --url.
    const joined = await cli(['--url', `${hosts[0]?.url as string},${hosts[1]?.url as string}`, 'run', 'count', '-p', 'project=p1'], { env: env() });
    expect([joined.code, joined.stderr]).toEqual([2, expect.stringMatching(/: not a URL; give each host a --url of its own \(SAVEDQ_CLICKHOUSE_URL takes them separated by commas\)\.\n$/)]);
    const balance = await cli([...urlFlags(...hosts), '--load-balance', 'roundrobin', 'run', 'count', '-p', 'project=p1'], { env: env() });
    expect(balance.code).toBe(2);
    expect(balance.stderr).toContain('invalid --load-balance "roundrobin": in-order or random.');
    expect((await hosts[0]?.log())?.length).toBe(0);
  });

  it('sends a read refused by the first host to the next, within the call, with a query id of its own for every attempt and never a session', async () => {
    const [a, b, c] = hosts as [Standin, Standin, Standin];
    await a.fault('refuse');
    const run = await cli([...urlFlags(a, b, c), 'run', 'count', '-p', 'project=p2', '-f', 'json'], { env: env() });
    expect(run.code, run.stderr).toBe(0);
    expect(countOf(run.stdout)).toEqual([{ n: 100, ids: 100 }]);
    expect(run.stderr).toContain(`warning: ClickHouse at ${a.url} is down (connection refused); the other hosts answer its calls.`);
    const statements = [...(await b.log()), ...(await c.log())];
    expect(await asked(b, 'count')).toHaveLength(1);
    expect(statements.every((s) => s.session_id === null)).toBe(true);
    const ids = statements.map((s) => s.query_id);
    expect(ids.every((id) => id !== null && /^[0-9a-f-]{36}$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    // Every read asks to be stopped when its connection closes.
    expect((await asked(b, 'count'))[0]?.settings).toMatchObject({ cancel_http_readonly_queries_on_client_close: '1' });
  });

  it('in order, every process uses the first host that answers; at random, processes spread over the hosts', async () => {
    const [a, b] = hosts as [Standin, Standin];
    const e = env();
    for (let i = 0; i < 3; i++) {
      const run = await cli([...urlFlags(a, b), 'run', 'count', '-p', 'project=p1', '--no-cache'], { env: e });
      expect(run.code, run.stderr).toBe(0);
    }
    expect([(await asked(a, 'count')).length, (await asked(b, 'count')).length]).toEqual([3, 0]);
    // Each process picks one: over enough of them, both hosts (all 30 on one by chance: 2 in a billion).
    for (let i = 0; i < 30 && (await asked(b, 'count')).length === 0; i++) {
      const run = await cli([...urlFlags(a, b), '--load-balance', 'random', 'run', 'count', '-p', 'project=p1', '--no-cache'], { env: e });
      expect(run.code, run.stderr).toBe(0);
    }
    expect((await asked(b, 'count')).length).toBeGreaterThan(0);
  });

  it('answers a reset half-way from another host, the rows whole, under a new query id', async () => {
    const [a, b] = hosts as [Standin, Standin];
    const reference = await cli([...urlFlags(b), 'run', 'logs.all', '-p', 'project=p0', '--at', '2026-11-30T18:00:00Z', '-f', 'json'], { env: env() });
    expect(reference.code, reference.stderr).toBe(0);
    await a.fault('reset');
    const run = await cli([...urlFlags(a, b), 'run', 'logs.all', '-p', 'project=p0', '--at', '2026-11-30T18:00:00Z', '-f', 'json'], { env: env() });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(reference.stdout);
    expect((JSON.parse(run.stdout) as unknown[]).length).toBe(100);
    const [cut] = await asked(a, 'logs.all');
    const answered = await asked(b, 'logs.all');
    expect(cut?.query_id).toBeTruthy();
    expect(answered.at(-1)?.query_id).toBeTruthy();
    expect(answered.at(-1)?.query_id).not.toBe(cut?.query_id);
  });

  for (const fault of ['exception', 'exception-tagged'] as const) {
    it(`reports an error written into a 200 answer (${fault === 'exception' ? 'plainly' : 'framed as 25.11+ does'}) as the engine's, and caches nothing`, async () => {
      const [a] = hosts as [Standin];
      const e = env();
      await a.fault(fault);
      const run = await cli([...urlFlags(a), 'run', 'count', '-p', 'project=p1', '-f', 'json'], { env: e });
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^savedq: ClickHouse at \S+ failed: Memory limit \(total\) exceeded: would use 9\.31 GiB .*\n$/);
      expect(run.stderr).not.toMatch(/JSON|position|control character/i);
      // Nothing was kept: the next run asks the host again, and gets the rows.
      await a.fault('none');
      const again = await cli([...urlFlags(a), 'run', 'count', '-p', 'project=p1', '-f', 'json', '--stats'], { env: e });
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).toContain('computed now');
      expect(countOf(again.stdout)).toEqual([{ n: 100, ids: 100 }]);
    });
  }

  it('stops a query past its time limit on its host: the connection closed and KILL QUERY of its id', async () => {
    const [a] = hosts as [Standin];
    await a.fault('slow');
    const started = Date.now();
    const run = await cli([...urlFlags(a), '--timeout', '1', 'run', 'count', '-p', 'project=p1', '--no-cache'], { env: env() });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/timed out|time limit/);
    expect(Date.now() - started).toBeLessThan(30_000);
    const [held] = await asked(a, 'count');
    expect(held?.cancelled).not.toBeNull();
    await eventually('the KILL QUERY of its id', async () => (await a.log()).some((s) => s.query.startsWith('KILL QUERY') && s.kills === held?.query_id));
  });

  it('stops the query when a run is interrupted (Ctrl-C), and exits within 3 s', async () => {
    const [a] = hosts as [Standin];
    await a.fault('slow');
    const run = startCli([...urlFlags(a), 'run', 'count', '-p', 'project=p0', '--no-cache'], { env: env() });
    const held = await eventually('the query to reach the host', async () => (await asked(a, 'count'))[0]);
    const interrupted = Date.now();
    run.child.kill('SIGINT');
    const done = await run.done;
    expect(Date.now() - interrupted).toBeLessThan(3000);
    expect(done.code).toBe(130);
    expect(done.stderr).not.toMatch(/\n\s+at /);
    await eventually('the host to see the query cancelled', async () => (await a.log()).find((s) => s.query_id === held.query_id)?.cancelled);
  });

  it("tags every statement of a saved query: log_comment names the query, the request, the caller and savedq's version; traceparent is passed on", async () => {
    const [a] = hosts as [Standin];
    const server = await startServe({ ...env(), SAVEDQ_API_KEYS: 'k1' }, urlFlags(a));
    try {
      const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      const res = await fetch(`${server.url}/api/endpoints/query/count?project=p1`, { headers: { 'X-API-KEY': 'k1', 'X-Request-Id': 'req-from-the-caller-1', traceparent } });
      expect(res.status).toBe(200);
      const [statement] = await asked(a, 'count');
      expect(JSON.parse(statement?.log_comment as string)).toEqual({ query: 'count', request_id: 'req-from-the-caller-1', caller: 'key 1', version: expect.stringMatching(/^\d+\.\d+\.\d+/) as unknown });
      expect(statement?.traceparent).toBe(traceparent);
      // A run's own request id.
      const run = await cli([...urlFlags(a), 'run', 'count', '-p', 'project=p2', '--no-cache'], { env: env() });
      expect(run.code, run.stderr).toBe(0);
      const [ran] = await asked(a, 'count').then((s) => s.filter((x) => x.query.includes('count()') && x !== statement && !x.log_comment?.includes('req-from')));
      expect(JSON.parse(ran?.log_comment as string)).toMatchObject({ query: 'count', request_id: expect.stringMatching(/^[0-9a-f-]{36}$/) as unknown, caller: null });
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  });

  it("runs a query under its definition's limits, which no caller lifts: passing one is an error naming it and the query", async () => {
    const [a] = hosts as [Standin];
    const run = await cli([...urlFlags(a), 'run', 'capped', '-p', 'project=p1'], { env: env() });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('savedq: capped passed its limit of 10 rows read (limits: read_rows in its definition).\n');
    const [statement] = await asked(a, 'capped');
    expect(statement?.query).toMatch(/max_rows_to_read = 10\b/);
    expect(statement?.query).toMatch(/max_threads = 2\b/);
    // A caller's own SQL over the answer runs under them too.
    const sql = await cli([...urlFlags(a), 'run', 'capped', '-p', 'project=p1', '--sql', 'SELECT n FROM result'], { env: env() });
    expect(sql.code).toBe(2);
    expect(sql.stderr).toBe('savedq: capped passed its limit of 10 rows read (limits: read_rows in its definition).\n');
  });
});

describe('every host down', () => {
  let server: ServeProcess | undefined;
  afterEach(async () => {
    server?.child.kill('SIGTERM');
    await server?.exited;
    server = undefined;
  });

  it('counts a failover when a statement moved off a host is answered by the next', async () => {
    const [a, b] = hosts as [Standin, Standin];
    await a.fault('refuse');
    server = await startServe({ ...env(), SAVEDQ_API_KEYS: 'k1' }, urlFlags(a, b));
    const s = server;
    const answer = await fetch(`${s.url}/api/endpoints/query/count?project=p2`, { headers: { 'X-API-KEY': 'k1' } });
    expect(answer.status).toBe(200);
    const metrics = await (await fetch(`${s.url}/metrics`, { headers: { 'X-API-KEY': 'k1' } })).text();
    expect(metrics).toContain(`savedq_warehouse_failovers_total{host="${a.url}"} 1`);
    expect(metrics).toContain(`savedq_warehouse_failovers_total{host="${b.url}"} 0`);
  });

  it('serve answers what it holds, marked stale; a call never seen, stale_if_error: 0 and logs.all fail naming the warehouse; /health and /metrics say so; a host back, the next call is computed anew', async () => {
    const [a, b] = hosts as [Standin, Standin];
    server = await startServe({ ...env(), SAVEDQ_API_KEYS: 'k1' }, urlFlags(a, b));
    const s = server;
    const get = (path: string, headers: Record<string, string> = {}) => fetch(`${s.url}${path}`, { headers: { 'X-API-KEY': 'k1', ...headers } });
    const fresh = await get('/api/endpoints/query/count?project=p1');
    expect(fresh.headers.get('x-cache')).toBe('MISS');
    const body = (await fresh.json()) as { result: unknown };
    expect((await get('/api/endpoints/query/never-stale?project=p1')).status).toBe(200);
    await Promise.all([a.fault('refuse'), b.fault('refuse')]);
    // Past the answers' second of cache, every host refused.
    const stale = await eventually('the answer to be served stale', async () => {
      const res = await get('/api/endpoints/query/count?project=p1');
      return res.headers.get('x-cache') === 'STALE' && res;
    });
    expect(stale.status).toBe(200);
    expect(Number(stale.headers.get('age'))).toBeGreaterThanOrEqual(1);
    const staleBody = (await stale.json()) as { result: unknown; cached: boolean; stale: boolean; age_seconds: number };
    expect(staleBody).toMatchObject({ result: body.result, cached: true, stale: true });
    expect(staleBody.age_seconds).toBeGreaterThanOrEqual(1);
    // never-stale's answer, stored a moment after count's, is past its second too once it is not served.
    await eventually('never-stale to expire', async () => (await get('/api/endpoints/query/never-stale?project=p1')).status === 502);
    for (const path of ['/api/endpoints/query/count?project=p0', '/api/endpoints/query/never-stale?project=p1', '/api/endpoints/query/logs.all?project=p1']) {
      const res = await get(path);
      expect(res.status, path).toBe(502);
      expect(((await res.json()) as { error: { message: string } }).error.message, path).toContain('the warehouse cannot be reached');
    }
    const health = (await (await get('/health')).json()) as { status: string; warehouse: string; hosts: { host: string; state: string; last_error?: string }[] };
    expect(health).toMatchObject({ status: 'ok', warehouse: 'unreachable' });
    expect(health.hosts.map((h) => [h.host, h.state, h.last_error])).toEqual([
      [a.url, 'down', 'connection refused'],
      [b.url, 'down', 'connection refused'],
    ]);
    expect(await (await fetch(`${s.url}/health`)).json()).toEqual({ status: 'ok', store: 'ok', warehouse: 'unreachable', queue: { running: 0, waiting: 0, dropped: 0 } });
    const metrics = await (await get('/metrics')).text();
    expect(metrics).toContain(`savedq_warehouse_up{host="${a.url}"} 0`);
    expect(metrics).toMatch(/savedq_answers_stale_total\{query="count"\} [1-9]/);
    // A statement moved to a host that was down too is no failover: none answered it.
    expect(metrics).toContain(`savedq_warehouse_failovers_total{host="${a.url}"} 0`);
    // Logged once a host, not once a call.
    expect(s.stderr().split(`ClickHouse at ${a.url} is down`).length - 1).toBe(1);
    // One host back: its probe finds it, and the next call is computed anew.
    await b.fault('accept');
    await s.waitFor(new RegExp(`ClickHouse at ${b.url.replace(/\./g, '\\.')} answers again`));
    const again = await get('/api/endpoints/query/count?project=p1');
    expect(again.headers.get('x-cache')).toBe('MISS');
    expect((await (await get('/health')).json()) as object).toMatchObject({ warehouse: 'ok' });
  });

  it('an answer served stale keeps its mark when the store fails on the way too (a partition that cuts both)', async () => {
    const [a] = hosts as [Standin];
    const e = env();
    const first = await cli([...urlFlags(a), 'run', 'count', '-p', 'project=p0', '-f', 'json'], { env: e });
    expect(first.code, first.stderr).toBe(0);
    await a.fault('refuse');
    await eventually('the answer to be served stale', async () => (await cli([...urlFlags(a), 'run', 'count', '-p', 'project=p0', '-f', 'json'], { env: e })).stderr.includes('did not answer'));
    // The cache file's writes held by another process: the answer is read, then the store fails the
    // call's next step (its lease) and is taken as down while the warehouse refuses.
    const holder = spawn('python3', ['-c', "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('BEGIN IMMEDIATE'); print('held', flush=True); sys.stdin.read()", e.SAVEDQ_CACHE_FILE as string], { stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      await new Promise((resolve) => holder.stdout.once('data', resolve));
      const stale = await cli([...urlFlags(a), 'run', 'count', '-p', 'project=p0', '-f', 'json', '--stats'], { env: e });
      expect(stale.code, stale.stderr).toBe(0);
      expect(stale.stdout).toBe(first.stdout);
      expect(stale.stderr).toMatch(/warning: the warehouse did not answer \(no host of it\); this is count's answer from the cache/);
      expect(stale.stderr).toMatch(/· cached \d+ s ago, stale \(the warehouse did not answer\) ·/);
    } finally {
      holder.stdin.end();
    }
  }, LONG_TEST_MS);

  it('a run answers from the cache, exit 0, saying on standard error that the warehouse did not answer and how old the answer is', async () => {
    const [a] = hosts as [Standin];
    const e = env();
    const first = await cli([...urlFlags(a), 'run', 'count', '-p', 'project=p2', '-f', 'json'], { env: e });
    expect(first.code, first.stderr).toBe(0);
    await a.fault('refuse');
    const stale = await eventually('the answer to expire', async () => {
      const run = await cli([...urlFlags(a), 'run', 'count', '-p', 'project=p2', '-f', 'json'], { env: e });
      return run.stderr.includes('did not answer') && run;
    });
    expect(stale.code).toBe(0);
    expect(stale.stdout).toBe(first.stdout);
    expect(stale.stderr).toMatch(/^warning: the warehouse did not answer \(no host of it\); this is count's answer from the cache, computed \d+ s ago and expired/);
    // savedq status asks each host, and says which answer.
    const status = await cli([...urlFlags(a, hosts[1] as Standin), 'status'], { env: e });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`^warehouse +${a.url.replace(/\./g, '\\.')}: does not answer \\(connection refused\\)$`, 'm'));
    expect(status.stdout).toMatch(new RegExp(`^ +${(hosts[1] as Standin).url.replace(/\./g, '\\.')}: answers$`, 'm'));
    const never = await cli([...urlFlags(a), 'run', 'count', '-p', 'project=p0'], { env: e });
    expect(never.code).toBe(1);
    expect(never.stderr).toBe(`savedq: cannot reach ClickHouse at ${a.url}: connection refused.\n`);
  });

  it('a host that takes the connection and never answers costs only the call in flight: once its probe fails, calls go to another host in under 3 s', async () => {
    const [a, b] = hosts as [Standin, Standin];
    server = await startServe({ ...env(), SAVEDQ_API_KEYS: 'k1' }, [...urlFlags(a, b), '--timeout', '2']);
    const s = server;
    const get = (project: string) => fetch(`${s.url}/api/endpoints/query/count?project=${project}`, { headers: { 'X-API-KEY': 'k1', 'Cache-Control': 'no-cache' } });
    await a.fault('hang');
    const inFlight = await get('p0');
    expect([504, 502]).toContain(inFlight.status);
    const hung = await eventually('the hung host to be marked down', async () => {
      const first = ((await (await fetch(`${s.url}/health`, { headers: { 'X-API-KEY': 'k1' } })).json()) as { hosts: { state: string; last_error?: string }[] }).hosts[0];
      return first?.state === 'down' && first;
    });
    expect(hung.last_error).toBe('did not answer its probe within 2 s');
    for (const project of ['p1', 'p2']) {
      const started = Date.now();
      const res = await get(project);
      expect(res.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(3000);
    }
    expect((await asked(b, 'count')).length).toBeGreaterThanOrEqual(2);
  });
});
