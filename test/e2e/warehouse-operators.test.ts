import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cli, eventually, LONG_TEST_MS, startServe, tempDir, type ServeProcess } from '../helpers.js';
import { startStandin, urlFlags, type Standin } from '../standin.js';

// The warehouse as operators run it (docs/scaling.md): statements side by side on a server, one fair
// and bounded queue for every kind of statement, one deadline a call through every host it tries, and
// what one process learns of a hung host known to the next. Two ClickHouse stand-ins, loaded alike;
// `delay <ms>` holds every statement that long side by side, as a server runs many at once.

const dir = tempDir('savedq-operators-');
const queries = join(dir, 'queries');
let hosts: Standin[] = [];
let files = 0;

/** 400 events of eight projects, the same on every host. */
function events(): string {
  const start = Date.UTC(2026, 10, 30, 12);
  return Array.from({ length: 400 }, (_, i) => JSON.stringify({ timestamp: new Date(start + i * 60_000).toISOString(), project: `p${i % 8}`, event_message: `GET /rest/v1/items/${i}` })).join('\n');
}

const QUERY = (name: string, header: string, sql: string) => `/*\ndescription: ${name}, for the operators' tests.\nparams:\n  project:\n    type: string\n    required: true\n    description: The project.\n${header}*/\n${sql}\n`;

beforeAll(async () => {
  mkdirSync(queries);
  writeFileSync(join(queries, 'count.sql'), QUERY('count', 'cache: 3600\n', 'SELECT count() AS n FROM edge_logs WHERE project = @project'));
  writeFileSync(join(queries, 'within5.sql'), QUERY('within5', 'timeout: 5\n', 'SELECT count() AS n FROM edge_logs WHERE project = @project'));
  writeFileSync(join(dir, 'events.ndjson'), `${events()}\n`);
  hosts = await Promise.all([1, 2].map((i) => startStandin(join(dir, `host-${i}`))));
  for (const host of hosts) {
    const loaded = await cli(['--url', host.url, '--cache-file', join(dir, 'setup.sqlite'), 'load', 'edge_logs', join(dir, 'events.ndjson')]);
    expect(loaded.code, loaded.stderr).toBe(0);
  }
}, LONG_TEST_MS);
afterAll(async () => {
  await Promise.all(hosts.map((h) => h.stop()));
});
let server: ServeProcess | undefined;
afterEach(async () => {
  server?.child.kill('SIGKILL');
  await server?.exited;
  server = undefined;
  await Promise.all(hosts.map((h) => h.reset()));
});

/** A test's own cache file (and with it its own record of hosts found down). */
function env(): Record<string, string> {
  return { SAVEDQ_CACHE_FILE: join(dir, `cache-${++files}.sqlite`), SAVEDQ_QUERIES: queries, SAVEDQ_DATA_DIR: join(dir, 'unused') };
}

/** Calls at once, each answered with its status and how long after the first was sent. */
async function timed(calls: (() => Promise<Response>)[]): Promise<{ status: number; ms: number; body: string }[]> {
  const started = Date.now();
  return Promise.all(calls.map(async (call) => {
    const res = await call();
    const body = await res.text();
    return { status: res.status, ms: Date.now() - started, body };
  }));
}

describe('statements side by side on a server', () => {
  it('answers four slow distinct misses through serve side by side, not one after another', async () => {
    const [a] = hosts as [Standin];
    server = await startServe({ ...env(), SAVEDQ_API_KEYS: 'k1' }, urlFlags(a));
    const s = server;
    await a.fault('delay 2000');
    const answers = await timed(['p0', 'p1', 'p2', 'p3'].map((p) => () => fetch(`${s.url}/api/endpoints/query/count?project=${p}`, { headers: { 'X-API-KEY': 'k1' } })));
    expect(answers.map((x) => x.status)).toEqual([200, 200, 200, 200]);
    expect(answers.map((x) => (JSON.parse(x.body) as { result: unknown }).result)).toEqual([0, 1, 2, 3].map(() => [{ n: 50 }]));
    // One after another they would take 8 s; side by side each is answered by about 2.
    expect(Math.max(...answers.map((x) => x.ms))).toBeLessThan(4000);
  });

  it("one caller's flood of misses never holds another caller's miss behind it", async () => {
    const [a] = hosts as [Standin];
    server = await startServe({ ...env(), SAVEDQ_API_KEYS: 'k1,k2' }, [...urlFlags(a), '--warehouse-concurrency', '2']);
    const s = server;
    await a.fault('delay 1000');
    const started = Date.now();
    const flood = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7', 'p0x', 'p1x'].map((p) =>
      fetch(`${s.url}/api/endpoints/query/count?project=${p}`, { headers: { 'X-API-KEY': 'k1' } }).then(async (r) => ({ status: r.status, body: await r.text(), at: Date.now() - started })),
    );
    await eventually('the flood to wait for the warehouse', async () => {
      const health = (await (await fetch(`${s.url}/health`)).json()) as { queue: { running: number; waiting: number } };
      return health.queue.running === 2 && health.queue.waiting === 8;
    });
    const asked = Date.now();
    const other = await fetch(`${s.url}/api/endpoints/query/count?project=q9`, { headers: { 'X-API-KEY': 'k2', 'Cache-Control': 'no-cache' } });
    const otherAt = Date.now() - started;
    expect(other.status).toBe(200);
    // The next slot free is the other caller's: within one statement's time (1 s), not after the flood's eight.
    expect(Date.now() - asked).toBeLessThan(2500);
    const answered = await Promise.all(flood);
    expect(answered.every((x) => x.status === 200)).toBe(true);
    expect(answered.filter((x) => x.at > otherAt).length).toBeGreaterThanOrEqual(6);
  });

  it('counts every kind of statement waiting against --max-queue: a run, an export and a check alike; one more is 503 with Retry-After', async () => {
    const [a] = hosts as [Standin];
    server = await startServe({ ...env(), SAVEDQ_API_KEYS: 'k1' }, [...urlFlags(a), '--warehouse-concurrency', '1'], ['--max-queue', '2']);
    const s = server;
    await a.fault('delay 1500');
    const get = (path: string) => fetch(`${s.url}${path}`, { headers: { 'X-API-KEY': 'k1' } });
    const queue = async () => ((await (await fetch(`${s.url}/health`)).json()) as { queue: { running: number; waiting: number } }).queue;
    const running = get('/api/endpoints/query/count?project=p0');
    await eventually('the first to run', async () => (await queue()).running === 1);
    const exported = get('/api/endpoints/export/count?project=p1');
    await eventually('the export to wait', async () => (await queue()).waiting === 1);
    const second = get('/api/endpoints/query/count?project=p2');
    await eventually('the second run to wait', async () => (await queue()).waiting === 2);
    const refused = await get('/api/endpoints/export/count?project=p3');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/statements are waiting for the warehouse/);
    const [r1, r2, r3] = await Promise.all([running, exported, second]);
    expect([r1.status, r2.status, r3.status]).toEqual([200, 200, 200]);
    expect(await r2.text()).toBe('{"n":50}\n');
  });
});

describe('one deadline a call', () => {
  it("a definition's timeout: 5 on a host that answers its pings but not the query: failed at 5 s, stopped within 1 more", async () => {
    const [a] = hosts as [Standin];
    await a.fault('slow');
    const started = Date.now();
    const run = await cli([...urlFlags(a), '--timeout', '30', 'run', 'within5', '-p', 'project=p1'], { env: env() });
    const took = Date.now() - started;
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`savedq: within5 ran past its time limit of 5 s (its own timeout) on ClickHouse at ${a.url}.\n`);
    expect(took).toBeGreaterThan(4900);
    expect(took).toBeLessThan(6500);
    // Stopped on the host: its connection closed, then KILL QUERY of its id.
    const held = (await a.log()).find((s) => s.log_comment?.includes('"within5"') && !s.query.startsWith('EXPLAIN'));
    expect(held?.cancelled).not.toBeNull();
    await eventually('the KILL QUERY of its id', async () => (await a.log()).some((s) => s.kills === held?.query_id));
  });

  it('the same on a host that takes the connection and never answers, its ping neither: failed once the ping is not answered, before the 5 s', async () => {
    const [a] = hosts as [Standin];
    await a.fault('hang');
    const started = Date.now();
    const run = await cli([...urlFlags(a), 'run', 'within5', '-p', 'project=p1'], { env: env() });
    const took = Date.now() - started;
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`savedq: ClickHouse at ${a.url} is hung: no answer begun after 1 s, and none to a ping within 2 s.\n`);
    expect(took).toBeLessThan(5000);
  });

  it('a hung first host: the call goes to the next within its one deadline, once its ping is not answered', async () => {
    const [a, b] = hosts as [Standin, Standin];
    await a.fault('hang');
    const started = Date.now();
    const run = await cli([...urlFlags(a, b), '--timeout', '10', 'run', 'within5', '-p', 'project=p2', '-f', 'json'], { env: env() });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual([{ n: 50 }]);
    expect(run.stderr).toContain(`warning: ClickHouse at ${a.url} is down (did not answer its probe within 2 s); the other hosts answer its calls.`);
    // 1 s without an answer begun, 2 s for the ping, then the next host: well within the 5 s.
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('three fresh processes with the first host hung: the first waits it out, the next two try it last, as the store recorded', async () => {
    const [a, b] = hosts as [Standin, Standin];
    await a.fault('hang');
    const e = env();
    const took: number[] = [];
    for (const project of ['p3', 'p4', 'p5']) {
      const started = Date.now();
      const run = await cli([...urlFlags(a, b), 'run', 'count', '-p', `project=${project}`, '-f', 'json'], { env: e });
      took.push(Date.now() - started);
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual([{ n: 50 }]);
    }
    expect(took[0]).toBeGreaterThan(2900);
    expect(took[1]).toBeLessThan(2500);
    expect(took[2]).toBeLessThan(2500);
    // Back in service, a fresh process probes it (answered, the record goes) and the next uses it first again.
    await a.fault('none');
    await cli([...urlFlags(a, b), 'run', 'count', '-p', 'project=p6'], { env: e });
    await a.forget();
    const back = await cli([...urlFlags(a, b), 'run', 'count', '-p', 'project=p7', '-f', 'json'], { env: e });
    expect(back.code, back.stderr).toBe(0);
    expect((await a.log()).some((s) => s.query.includes('edge_logs') && !s.query.startsWith('EXPLAIN'))).toBe(true);
  });
});

describe('the embedded engine', () => {
  const engineDir = join(dir, 'embedded');
  const engineQueries = join(dir, 'embedded-queries');
  const engineEnv = () => ({ SAVEDQ_DATA_DIR: join(engineDir, 'data'), SAVEDQ_CACHE_FILE: join(engineDir, `cache-${++files}.sqlite`), SAVEDQ_QUERIES: engineQueries, SAVEDQ_API_KEYS: 'k1' });
  const NUMBER = (name: string, sql: string) => `/*\ndescription: ${name}, for the operators' tests.\nparams:\n  n:\n    type: integer\n    required: true\n    description: A number.\n*/\n${sql}\n`;
  beforeAll(() => {
    mkdirSync(engineQueries, { recursive: true });
    writeFileSync(join(engineQueries, 'half-second.sql'), NUMBER('half-second', 'SELECT @n AS n, sleep(0.5) AS slept'));
    writeFileSync(join(engineQueries, 'numbers.sql'), NUMBER('numbers', "SELECT number, repeat('x', 200) AS pad FROM numbers(@n)"));
  });

  it('still runs one statement at a time: four distinct misses of half a second take two', async () => {
    server = await startServe(engineEnv());
    const s = server;
    const answers = await timed([1, 2, 3, 4].map((n) => () => fetch(`${s.url}/api/endpoints/query/half-second?n=${n}`, { headers: { 'X-API-KEY': 'k1' } })));
    expect(answers.map((x) => x.status)).toEqual([200, 200, 200, 200]);
    expect(Math.max(...answers.map((x) => x.ms))).toBeGreaterThanOrEqual(2000);
  });

  it("counts a command's export through serve's engine against --max-exports, as serve's own", async () => {
    const e = engineEnv();
    server = await startServe(e, [], ['--max-exports', '1']);
    const s = server;
    // An export of 2 million rows that is not read: it holds its slot.
    const held = new AbortController();
    const res = await fetch(`${s.url}/api/endpoints/export/numbers?n=2000000`, { headers: { 'X-API-KEY': 'k1' }, signal: held.signal });
    expect(res.status).toBe(200);
    try {
      const other = await cli(['export', 'numbers', '-p', 'n=10', '-o', join(engineDir, 'other.ndjson')], { env: e });
      expect(other.code).toBe(1);
      expect(other.stderr).toBe('savedq: 1 export is under way, the most serve\'s --max-exports lets run at once; try again shortly.\n');
    } finally {
      held.abort();
    }
    // Its slot given back once the caller has gone: the command's export runs.
    await eventually('the export to run', async () => (await cli(['export', 'numbers', '-p', 'n=10', '-o', join(engineDir, 'other.ndjson')], { env: e })).code === 0);
  });
});
