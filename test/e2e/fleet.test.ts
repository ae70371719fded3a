import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, eventually, LONG_TEST_MS, startServe, tempDir, type ServeProcess } from '../helpers.js';
import { startPostgres, type Postgres } from '../postgres.mjs';
import { startStandin, type Standin } from '../standin.js';
import { has } from '../system.js';

// The fleet (docs/scaling.md), as a team runs it: one PostgreSQL store (Debian's, started here), one
// warehouse URL (the ClickHouse stand-in over the embedded engine), several real `savedq serve`
// replicas, a cron box's commands and laptops' (CLI processes with a HOME each). What each test counts
// is what the warehouse was asked (the stand-in's statements) and what a webhook receiver was sent.

const dir = tempDir('savedq-fleet-');
const queries = join(dir, 'queries');
const KEY = 'fleet-key';
let postgres: Postgres & { ca?: string };
let standin: Standin;
let schemas = 0;

/** A query that counts the events, sleeping first for `pause` seconds: a call takes as long as a test needs. */
const QUERY = `/*
description: Events counted, taking a while (the fleet's tests).
params:
  tag:
    type: string
    required: true
    description: Tells calls apart.
  pause:
    type: number
    default: 0
    description: Seconds the engine sleeps first (at most 3).
cache: 60
warm: 1
*/
SELECT @tag AS tag, count() AS n, sleep(@pause) AS slept -- fleet_marker
FROM edge_logs
`;

beforeAll(async () => {
  if (!has.postgres) return;
  [postgres, standin] = await Promise.all([startPostgres({ tls: has.tutorialTools }), startStandin(join(dir, 'warehouse'))]);
  mkdirSync(queries);
  writeFileSync(join(queries, 'fleet.q.sql'), QUERY);
  const events = Array.from({ length: 50 }, (_, i) => JSON.stringify({ timestamp: new Date(Date.now() - i * 60_000).toISOString(), project: 'fleet', event_message: 'GET /', metadata: { request: { method: 'GET', path: '/' }, response: { status_code: 200 } } }));
  writeFileSync(join(dir, 'events.ndjson'), `${events.join('\n')}\n`);
  const loaded = await cli(['--url', standin.url, '--cache-file', join(dir, 'setup.sqlite'), 'load', 'edge_logs', join(dir, 'events.ndjson')]);
  expect(loaded.code, loaded.stderr).toBe(0);
}, LONG_TEST_MS);
afterAll(async () => {
  await standin?.stop();
  postgres?.remove();
});

/** A store of a test's own: the one cluster, a schema of its own (the URL's search_path names it). */
function newStore(): string {
  return `${postgres.url}?options=${encodeURIComponent(`-c search_path=fleet_${++schemas}`)}`;
}

/** What every process of a fleet is given: the warehouse, the store, the queries, a HOME of its own. */
function fleetEnv(store: string, folder = queries): Record<string, string> {
  return { HOME: tempDir('savedq-fleet-home-'), SAVEDQ_CLICKHOUSE_URL: standin.url, SAVEDQ_STORE_URL: store, SAVEDQ_QUERIES: folder, SAVEDQ_API_KEYS: KEY };
}

/** `n` serve replicas on one store, started together. */
function replicas(n: number, store: string, serveArgs: readonly string[] = ['--no-alerts'], folder = queries): Promise<ServeProcess[]> {
  return Promise.all(Array.from({ length: n }, () => startServe(fleetEnv(store, folder), [], serveArgs)));
}

function stop(servers: readonly ServeProcess[]): Promise<unknown> {
  return Promise.all(
    servers.map((s) => {
      if (s.child.exitCode !== null) return Promise.resolve(s.child.exitCode);
      s.child.kill('SIGKILL');
      return s.exited;
    }),
  );
}

/** A call of fleet.q on a replica: its status, X-Cache and rows. */
async function call(server: ServeProcess, tag: string, pause = 0): Promise<{ status: number; cache: string | null; body: { result?: { n: number; tag: string }[] } }> {
  const res = await fetch(`${server.url}/api/endpoints/query/fleet.q?tag=${tag}&pause=${pause}`, { headers: { 'X-API-KEY': KEY } });
  return { status: res.status, cache: res.headers.get('x-cache'), body: (await res.json()) as { result?: { n: number; tag: string }[] } };
}

/** How many times the warehouse was asked fleet.q since the stand-in last forgot. */
async function warehouseQueries(): Promise<number> {
  return (await standin.statements()).filter((s) => s.includes('fleet_marker')).length;
}

async function metric(server: ServeProcess, line: RegExp): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`, { headers: { 'X-API-KEY': KEY } })).text();
  return text
    .split('\n')
    .filter((l) => line.test(l))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

/** A webhook receiver: what it was sent; `hold` keeps requests unanswered while it says so. */
async function receiver() {
  const got: { body: Record<string, unknown>; headers: IncomingHttpHeaders }[] = [];
  const held: ServerResponse[] = [];
  const state = { hold: false };
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8').on('data', (c: string) => (text += c));
    req.on('end', () => {
      got.push({ body: JSON.parse(text) as Record<string, unknown>, headers: req.headers });
      if (state.hold) held.push(res);
      else res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  afterAll(() => {
    for (const res of held) res.destroy();
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got, state };
}

/** An alert on fleet.q that fires (there are events), in a queries folder of its own beside the query. */
function alertFolder(name: string, url: string): string {
  const folder = join(dir, `alerts-${name}`);
  mkdirSync(folder);
  writeFileSync(join(folder, 'fleet.q.sql'), QUERY);
  writeFileSync(join(folder, `${name}.alert.yaml`), `description: There are events.\nquery: fleet.q\nparams: { tag: ${name} }\nwhen: n > 0\nevery: 1h\nnotify:\n  - webhook: ${url}\n`);
  return folder;
}

describe.runIf(has.postgres)('a fleet on one store', () => {
  it('init --store makes savedq\'s tables (once), status names the store without its password and who shares it', async () => {
    const store = newStore();
    const env = fleetEnv(store);
    const before = await cli(['status'], { env });
    expect(before.code).toBe(0);
    expect(before.stdout).toContain(`${postgres.shown}?options=`);
    expect(before.stdout).toContain('(PostgreSQL)');
    expect(before.stdout).toMatch(/no tables of savedq's yet in schema fleet_\d+/);
    const made = await cli(['init'], { env });
    expect(made.stderr).toMatch(/made savedq's tables \(schema fleet_\d+\)/);
    const again = await cli(['init'], { env });
    expect(again.stderr).toContain("savedq's tables are there already");
    const ran = await cli(['run', 'fleet.q', '-p', 'tag=status', '-f', 'json'], { env });
    expect(ran.code, ran.stderr).toBe(0);
    const status = await cli(['status', '-f', 'json'], { env });
    expect(status.code).toBe(0);
    const json = JSON.parse(status.stdout) as { store: Record<string, unknown>; cached: { calls: number }; processes: { role: string; pid: number }[]; warehouse: string };
    expect(json.store).toMatchObject({ backend: 'postgres', location: expect.stringContaining(`${postgres.shown}?options=`), up: true, tables_version: 2 });
    expect(json.warehouse).toBe(standin.url);
    expect(json.cached.calls).toBe(1);
    expect(json.processes.map((p) => p.role)).toEqual(['run']);
    for (const r of [before, made, again, ran, status]) expect(r.stdout + r.stderr).not.toContain(postgres.password);
  });

  it('status exits 1 naming a store that does not answer; a password on the command line is warned about and never shown', async () => {
    const port = new URL(postgres.url).port;
    const closed = postgres.url.replace(`:${port}/`, ':1/');
    const down = await cli(['--store', closed, 'status'], { env: { HOME: tempDir() } });
    expect(down.code).toBe(1);
    expect(down.stdout).toContain('does not answer: connection refused');
    expect(down.stderr).toContain('a password in --store can be read by every user of this machine (ps)');
    expect(down.stderr).toContain('savedq: the store postgres://savedq@127.0.0.1:1/postgres does not answer (connection refused).');
    expect(down.stdout + down.stderr).not.toContain(postgres.password);
    // init names the store it could not reach.
    const init = await cli(['init'], { env: { HOME: tempDir(), SAVEDQ_STORE_URL: closed } });
    expect(init).toMatchObject({ code: 1, stderr: 'savedq: the store postgres://savedq@127.0.0.1:1/postgres cannot be reached (connection refused).\n' });
    // What reads or changes the store itself says it could not, and fails.
    for (const command of [['cache', 'list'], ['cache', 'clear']]) {
      const refused = await cli(command, { env: { HOME: tempDir(), SAVEDQ_STORE_URL: closed } });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/savedq: the cache at postgres:\/\/savedq@127\.0\.0\.1:1\/postgres cannot be used now: nothing (to list|was cleared)\./);
      expect(refused.stdout).toBe('');
    }
    // warm too: cron's monitor sees a failure, not "0 refreshed, 0 failed".
    const warm = await cli(['warm'], { env: { HOME: tempDir(), SAVEDQ_STORE_URL: closed } });
    expect(warm.code, warm.stderr).toBe(1);
    expect(warm.stderr).toContain('savedq: the cache at postgres://savedq@127.0.0.1:1/postgres cannot be used now: nothing was warmed.');
    // The password from a file of the user's own instead: no warning, the same store.
    const file = join(tempDir(), 'store-password');
    writeFileSync(file, `${postgres.password}\n`, { mode: 0o600 });
    const fromFile = await cli(['--store', postgres.shown, '--store-password-file', file, 'status'], { env: { HOME: tempDir() } });
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(fromFile.stderr).toBe('');
  });

  it.runIf(has.tutorialTools)('TLS when the URL asks for it, sslmode as libpq reads it', async () => {
    const env = { HOME: tempDir() };
    const status = async (query: string) => cli(['status', '-f', 'json'], { env: { ...env, SAVEDQ_STORE_URL: `${postgres.url}?${query}` } });
    // require: encrypted, the certificate not verified (none given to verify it against).
    const required = await status('sslmode=require');
    expect(required.code, required.stderr).toBe(0);
    expect(required.stderr).toBe('');
    // A replica on it holds its connections encrypted, as the server sees them.
    const [server] = (await replicas(1, `${newStore()}&sslmode=require`)) as [ServeProcess];
    expect((await call(server, 'tls')).status).toBe(200);
    const encrypted = () => postgres.psql(`SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'savedq' AND s.ssl`);
    expect(Number(encrypted())).toBeGreaterThan(0);
    await stop([server]);
    // verify-full: the test's self-signed certificate cannot be verified: the store does not answer, said why.
    const verified = await status('sslmode=verify-full');
    expect(verified.code).toBe(1);
    // (Newer Node versions add a hint of their own after the reason.)
    expect(verified.stderr).toMatch(/does not answer \(self-signed certificate[;)]/);
    // verify-ca against the certificate itself: verified (the name is not checked).
    const ca = await status(`sslmode=verify-ca&sslrootcert=${encodeURIComponent(postgres.ca as string)}`);
    expect(ca.code, ca.stderr).toBe(0);
    const noCa = await status('sslmode=verify-ca');
    expect(noCa.code).toBe(2);
    expect(noCa.stderr).toContain('sslmode=verify-ca in the store URL needs sslrootcert=<file>');
  });

  it("a laptop's run answers from what a cron box's warm stored, without asking the warehouse", async () => {
    const store = newStore();
    const warmed = await cli(['warm', 'fleet.q', '-p', 'tag=cron'], { env: fleetEnv(store) });
    expect(warmed.code, warmed.stderr).toBe(0);
    // A store that answers a busy machine's new process slower than its second is passed by (the run
    // says so, and asks the warehouse): what that run shows is the store's deadline, not sharing, so the
    // laptop asks again until the store has answered it.
    const laptop = await eventually('a laptop run the store answered', async () => {
      await standin.forget();
      const run = await cli(['run', 'fleet.q', '-p', 'tag=cron', '-f', 'json', '--stats'], { env: fleetEnv(store) });
      expect(run.code, run.stderr).toBe(0);
      return !/the store not reached/.test(run.stderr) && run;
    });
    expect(laptop.stderr).toMatch(/cached \d+ s ago/);
    expect(JSON.parse(laptop.stdout)).toEqual([{ tag: 'cron', n: 50, slept: 0 }]);
    expect(await warehouseQueries()).toBe(0);
  });

  it(
    'three replicas asked the same uncached calls at once ask the warehouse once a call; the others wait for its answer',
    async () => {
      const servers = await replicas(3, newStore());
      // /health names the store and who shares it to an API key (never the password), the store's state to anyone.
      type Health = { store: string; store_location: string; processes: { role: string; pid: number; seen: string }[] };
      const pids = servers.map((s) => s.child.pid).sort();
      // Each replica says it shares the store once it listens (not before: a store that does not answer would hold it up).
      const health = await eventually('every replica to say it shares the store', async () => {
        const h = (await (await fetch(`${servers[0]?.url}/health`, { headers: { 'X-API-KEY': KEY } })).json()) as Health;
        return JSON.stringify(h.processes.map((p) => p.pid).sort()) === JSON.stringify(pids) && h;
      });
      expect(health.store).toBe('ok');
      expect(health.store_location).toContain(postgres.shown);
      expect(health.processes.every((p) => p.role === 'serve' && !Number.isNaN(Date.parse(p.seen)))).toBe(true);
      expect(JSON.stringify(health)).not.toContain(postgres.password);
      expect(await (await fetch(`${servers[0]?.url}/health`)).json()).toEqual({ status: 'ok', store: 'ok', warehouse: 'ok', queue: { running: 0, waiting: 0, dropped: 0 } });
      await standin.forget();
      const tags = Array.from({ length: 6 }, (_, i) => `once-${i}`);
      const answers = await Promise.all(tags.flatMap((tag) => servers.map((s) => call(s, tag, 0.2))));
      for (const a of answers) expect(a.status).toBe(200);
      expect(await warehouseQueries()).toBe(tags.length);
      // Each call: one replica computed it (MISS), the two others had its answer (HIT, counted as shared).
      for (const [i, tag] of tags.entries()) {
        const caches = answers.slice(i * 3, i * 3 + 3).map((a) => a.cache);
        expect(caches.sort(), tag).toEqual(['HIT', 'HIT', 'MISS']);
      }
      const shared = (await Promise.all(servers.map((s) => metric(s, /^savedq_cache_total\{.*outcome="shared"/)))).reduce((a, b) => a + b, 0);
      expect(shared).toBe(2 * tags.length);
      // The store's operations timed, by operation: each replica leased the calls it computed or waited for.
      expect(await metric(servers[0] as ServeProcess, /^savedq_store_seconds_count\{operation="lease"\}/)).toBeGreaterThan(0);
      expect(await metric(servers[0] as ServeProcess, /^savedq_store_seconds_count\{operation="get"\}/)).toBeGreaterThan(0);
      // A call asked of the others while one replica's query of it is under way (two seconds long).
      await standin.forget();
      const [a, b, c] = servers as [ServeProcess, ServeProcess, ServeProcess];
      const computing = call(a, 'later', 2);
      await eventually('the warehouse to be running the call', async () => (await warehouseQueries()) === 1);
      const later = await Promise.all([call(b, 'later', 2), call(c, 'later', 2)]);
      expect(later.map((l) => l.cache)).toEqual(['HIT', 'HIT']);
      expect((await computing).cache).toBe('MISS');
      expect(await warehouseQueries()).toBe(1);
      await stop(servers);
    },
    LONG_TEST_MS,
  );

  it(
    'three warms at once refresh each due call once',
    async () => {
      const store = newStore();
      const servers = await replicas(1, store);
      for (const tag of ['due-1', 'due-2']) expect((await call(servers[0] as ServeProcess, tag)).status).toBe(200);
      // fleet.q is warmed once an answer is a second old.
      await eventually('the answers to be due for warming', async () => {
        const listed = await cli(['cache', 'list', '-f', 'json'], { env: fleetEnv(store) });
        const rows = JSON.parse(listed.stdout) as { age_seconds: number }[];
        return rows.length === 2 && rows.every((r) => r.age_seconds >= 2);
      });
      await standin.forget();
      const warms = await Promise.all([1, 2, 3].map(() => cli(['warm'], { env: fleetEnv(store) })));
      for (const w of warms) expect(w.code, w.stderr).toBe(0);
      expect(await warehouseQueries()).toBe(2);
      // Each due call refreshed by one of the three: the others say another process did it, or (a warm
      // that started once both were done) find nothing due.
      const refreshed = warms.map((w) => Number(/warm: (\d+) refreshed/.exec(w.stderr)?.[1] ?? NaN));
      expect(refreshed.reduce((a, b) => a + b, 0), warms.map((w) => w.stderr).join('\n')).toBe(2);
      await stop(servers);
    },
    LONG_TEST_MS,
  );

  it(
    'a load through savedq and a cache clear reach every replica: none serves an answer of before',
    async () => {
      const store = newStore();
      const servers = await replicas(2, store);
      const [a, b] = servers as [ServeProcess, ServeProcess];
      const before = (await call(a, 'load')).body.result?.[0]?.n as number;
      expect((await call(b, 'load')).cache).toBe('HIT');
      const more = join(dir, 'more.ndjson');
      writeFileSync(more, `${JSON.stringify({ timestamp: new Date().toISOString(), project: 'fleet', event_message: 'GET /more', metadata: {} })}\n`);
      const loaded = await cli(['load', 'edge_logs', more], { env: fleetEnv(store) });
      expect(loaded.code, loaded.stderr).toBe(0);
      // The load has ended: each replica answers the data of now.
      for (const server of servers) {
        const after = await call(server, 'load');
        expect(after.body.result?.[0]?.n, 'an answer from before the load').toBe(before + 1);
      }
      expect((await call(a, 'load')).cache).toBe('HIT');
      const cleared = await cli(['cache', 'clear'], { env: fleetEnv(store) });
      // The answer of before the load and the one of after: two entries.
      expect(cleared.stderr).toContain('cache cleared: 2 entries removed');
      await standin.forget();
      await eventually('a replica to compute the call again after the clear', async () => (await call(b, 'load')).cache === 'MISS');
      expect(await warehouseQueries()).toBe(1);
      await stop(servers);
    },
    LONG_TEST_MS,
  );

  it(
    "a caller's rate limit holds across three replicas (within 20 %)",
    async () => {
      const rps = 10;
      const servers = await replicas(3, newStore(), ['--no-alerts', '--rate-limit', String(rps)]);
      for (const s of servers) await call(s, 'rate');
      // Callers hitting the replicas in turn for eight seconds; counted past the first three (each
      // replica's first burst paid back by then).
      const counts = { ok: 0, limited: 0 };
      const started = Date.now();
      const [from, until] = [started + 3_000, started + 8_000];
      const loop = async (offset: number) => {
        for (let i = offset; ; i++) {
          const at = Date.now();
          if (at >= until) return;
          const status = (await call(servers[i % 3] as ServeProcess, 'rate')).status;
          if (status !== 200 && status !== 429) throw new Error(`status ${status}`);
          if (at >= from) counts[status === 200 ? 'ok' : 'limited'] += 1;
        }
      };
      await Promise.all([0, 1, 2, 3, 4, 5].map(loop));
      const seconds = (until - from) / 1000;
      expect(counts.limited).toBeGreaterThan(0);
      expect(counts.ok, JSON.stringify(counts)).toBeLessThanOrEqual(Math.ceil(rps * seconds * 1.2));
      expect(counts.ok).toBeGreaterThan(rps * seconds * 0.5);
      await stop(servers);
    },
    LONG_TEST_MS,
  );

  it('three alerts checks at once: the alert is evaluated by one of them, its notification sent once', async () => {
    const hook = await receiver();
    const env = fleetEnv(newStore(), alertFolder('once', hook.url));
    const checks = await Promise.all([1, 2, 3].map(() => cli(['alerts', 'check'], { env })));
    for (const c of checks) expect(c.code, c.stderr).not.toBe(2);
    expect(checks.filter((c) => /firing\s+once \(was new\)/.test(c.stderr))).toHaveLength(1);
    expect(hook.got).toHaveLength(1);
    const history = await cli(['alerts', 'history', 'once', '-f', 'json'], { env });
    expect((JSON.parse(history.stdout) as unknown[]).length).toBe(1);
  });

  it(
    'three replicas evaluate the alerts on their timers: one does the work, one notification',
    async () => {
      const hook = await receiver();
      const folder = alertFolder('replicated', hook.url);
      const servers = await replicas(3, newStore(), [], folder);
      // Each replica has had its first turn of the alerts (it says the alert's state in its metrics).
      for (const server of servers) {
        await eventually('a turn of the alerts', async () => (await (await fetch(`${server.url}/metrics`, { headers: { 'X-API-KEY': KEY } })).text()).includes('savedq_alert_state{alert="replicated"'));
      }
      await eventually('the notification', () => hook.got.length >= 1);
      expect(hook.got).toHaveLength(1);
      // The log is written off the event loop: the line may come after the notification.
      const saidFiring = () => servers.filter((s) => s.stderr().includes('alert replicated: new -> firing')).length;
      await eventually('a replica to log the change', () => saidFiring() >= 1);
      expect(saidFiring()).toBe(1);
      await stop(servers);
    },
    LONG_TEST_MS,
  );

  it(
    'a replica killed while it delivers leaves the notification to another, which sends it with the same Idempotency-Key',
    async () => {
      const hook = await receiver();
      hook.state.hold = true;
      const folder = alertFolder('delivered', hook.url);
      const store = newStore();
      const [first] = (await replicas(1, store, [], folder)) as [ServeProcess];
      await eventually('the first delivery to reach the receiver', () => hook.got.length === 1);
      first.child.kill('SIGKILL');
      await first.exited;
      hook.state.hold = false;
      const [second] = (await replicas(1, store, [], folder)) as [ServeProcess];
      await eventually('the notification delivered by the other replica', () => hook.got.length === 2);
      const [a, b] = hook.got as [(typeof hook.got)[number], (typeof hook.got)[number]];
      expect(b.headers['idempotency-key']).toBe(a.headers['idempotency-key']);
      expect(b.body).toEqual(a.body);
      await second.waitFor(/alert delivered: notified firing/);
      // Delivered: nothing more is sent.
      const check = await cli(['alerts', 'check', '--force'], { env: fleetEnv(store, folder) });
      expect(check.stderr).toContain('alerts: 1 evaluated');
      expect(hook.got).toHaveLength(2);
      await stop([second]);
    },
    LONG_TEST_MS,
  );

  it(
    'a replica killed while it computes a call: another computes it once the lease of the dead one has run out',
    async () => {
      const [a, b] = (await replicas(2, newStore())) as [ServeProcess, ServeProcess];
      await standin.forget();
      const lost = call(a, 'killed', 2).catch(() => undefined);
      await eventually('the warehouse to be running the call', async () => (await warehouseQueries()) === 1);
      a.child.kill('SIGKILL');
      await Promise.all([lost, a.exited]);
      const answer = await call(b, 'killed', 2);
      expect(answer.status).toBe(200);
      expect(answer.cache).toBe('MISS');
      expect(answer.body.result).toEqual([{ tag: 'killed', n: expect.any(Number), slept: 0 }]);
      expect(await warehouseQueries()).toBe(2);
      await stop([b]);
    },
    LONG_TEST_MS,
  );

  it(
    'the store stopped under load: answers from the warehouse (BYPASS), /health and /metrics say so, one warning; cached again once it is back',
    async () => {
      const servers = await replicas(2, newStore());
      for (const s of servers) expect((await call(s, 'pg')).status).toBe(200);
      // Callers keep calling while the store goes and comes back: every one is answered.
      const load = { running: true, statuses: [] as number[] };
      const calling = Promise.all(
        servers.map(async (s, n) => {
          for (let i = 0; load.running; i++) load.statuses.push((await call(s, `load-${n}-${i % 20}`)).status);
        }),
      );
      postgres.stop();
      try {
        for (const s of servers) {
          // Calls this replica has not answered lately (what it answered in the last 2 s it still may).
          for (let i = 0; i < 10; i++) {
            const answer = await call(s, `pg-${i}`);
            expect(answer.status).toBe(200);
            expect(answer.cache).toBe('BYPASS');
            expect(answer.body.result?.[0]?.tag).toBe(`pg-${i}`);
          }
          const health = await fetch(`${s.url}/health`);
          expect(health.status).toBe(200);
          expect(await health.json()).toMatchObject({ status: 'ok', store: 'unreachable' });
          expect(await metric(s, /^savedq_store_up /)).toBe(0);
          expect(await metric(s, /^savedq_cache_total\{.*outcome="bypass"/)).toBeGreaterThanOrEqual(10);
          // One warning (the log is written off the event loop: waited for, then counted).
          await eventually('the warning that the store cannot be reached', () => /cannot be reached/.test(s.stderr()));
          expect(s.stderr().match(/cannot be reached/g)).toHaveLength(1);
          expect(s.stderr()).not.toContain(postgres.password);
        }
      } finally {
        postgres.start();
      }
      const back = Date.now();
      for (const s of servers) {
        await eventually('answers cached again', async () => (await call(s, 'pg-back')).cache === 'HIT');
        expect(await metric(s, /^savedq_store_up /)).toBe(1);
        expect(await (await fetch(`${s.url}/health`)).json()).toMatchObject({ store: 'ok' });
        await s.waitFor(/answers again/);
        // News, not a warning.
        expect(s.stderr()).toMatch(/Z the store \S+ answers again: answers are cached again\.$/m);
      }
      expect(Date.now() - back).toBeLessThan(30_000);
      load.running = false;
      await calling;
      expect(load.statuses.length).toBeGreaterThan(20);
      expect(load.statuses.filter((status) => status !== 200)).toEqual([]);
      await stop(servers);
    },
    LONG_TEST_MS,
  );

  it(
    'a replica cut off from the store (its packets dropped, not refused): answers within seconds from the warehouse, cached again once the way is open',
    async () => {
      const link = await tcpLink(postgres.port);
      const store = newStore().replace(`:${postgres.port}/`, `:${link.port}/`);
      const [server] = (await replicas(1, store)) as [ServeProcess];
      expect((await call(server, 'cut')).cache).toBe('MISS');
      expect((await call(server, 'cut')).cache).toBe('HIT');
      link.cut = true;
      const started = Date.now();
      const answer = await call(server, 'cut-off');
      expect(answer.status).toBe(200);
      expect(answer.cache).toBe('BYPASS');
      // The store's deadline is a second (and the next operation is not tried for a few).
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(await (await fetch(`${server.url}/health`)).json()).toMatchObject({ store: 'unreachable' });
      link.cut = false;
      await eventually('answers cached again', async () => (await call(server, 'cut-back')).cache === 'HIT');
      await stop([server]);
      link.close();
    },
    LONG_TEST_MS,
  );
});

/**
 * A way to PostgreSQL through 127.0.0.1 that a test can cut: while `cut`, nothing passes either way and
 * new connections are taken but go nowhere (a network that drops packets, not one that refuses them).
 */
async function tcpLink(port: number): Promise<{ port: number; cut: boolean; close(): void }> {
  const sockets = new Set<Socket>();
  const link = { port: 0, cut: false, close: (): void => undefined };
  const server = createTcpServer((client) => {
    sockets.add(client);
    client.on('error', () => undefined);
    if (link.cut) return;
    const upstream = connect(port, '127.0.0.1');
    sockets.add(upstream);
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('data', (d: Buffer) => {
      if (!link.cut) upstream.write(d);
    });
    upstream.on('data', (d: Buffer) => {
      if (!link.cut) client.write(d);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  link.port = (server.address() as AddressInfo).port;
  link.close = () => {
    for (const s of sockets) s.destroy();
    server.close();
  };
  return link;
}
