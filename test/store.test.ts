import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../src/store/index.js';
import type { CachedResult, ServedRecord, Store, StoreSignal } from '../src/store/types.js';
import { eventually, tempDir } from './helpers.js';
import { startPostgres, type Postgres } from './postgres.mjs';
import { has } from './system.js';

// The store (docs/scaling.md): one interface, two backends, the same tests run against both: the SQLite
// file on a temporary folder, and a real PostgreSQL the tests start.

let postgres: Postgres | undefined;
beforeAll(async () => {
  if (has.postgres) postgres = await startPostgres();
}, 180_000);
afterAll(() => postgres?.remove());

const warnings: string[] = [];
const warn = (message: string) => void warnings.push(message);
let made = 0;

/**
 * A place of each backend, of its own (a file, or a schema in the one cluster), and how to open a store
 * on it: opened twice, two processes sharing it.
 */
const backends: [string, () => () => Store][] = [
  [
    'SQLite file',
    () => {
      const file = join(tempDir(), 'cache.sqlite');
      return () => openStore({ cacheFile: file, store: { kind: 'sqlite' } }, warn, () => undefined);
    },
  ],
  [
    'PostgreSQL',
    () => {
      const pg = postgres as Postgres;
      const schema = `store_test_${++made}`;
      return () => openStore({ cacheFile: '/nonexistent/unused', store: { kind: 'postgres', url: pg.url, shown: pg.shown, schema } }, warn, () => undefined);
    },
  ],
];

const result = (n: number): CachedResult => ({ rows: [{ n }], truncated: false, computedAt: 1_000 + n, statistics: { elapsed: 0.01, rows_read: n, bytes_read: 8 * n } });
const served = (key: string, servedAt: number): ServedRecord => ({ call: { source: 'embedded:/x', query: key, digest: 'd', params: { p: key }, at: '' }, servedAt, computedAt: servedAt - 1 });

describe.each(backends)('the store, as the %s', (backend, place) => {
  const runs = backend === 'SQLite file' || has.postgres;
  const make = () => place()();

  it.runIf(runs)('keeps a result and a served record by their key, reads both at once, forgets them together, and lists only the served records', async () => {
    const store = make();
    const key = `q:${'x'.repeat(5000)}:${JSON.stringify({ sql: 'SELECT 1' })}`; // longer than any index takes
    expect(await store.getResult(key)).toBeUndefined();
    await store.setResult(key, result(1), 60_000);
    expect(await store.lookup(key)).toEqual({ result: result(1), servedAt: undefined });
    await store.markServed(key, served(key, 5_000), 60_000);
    expect(await store.getResult(key)).toEqual(result(1));
    // A cache hit's one read: the result and when the call was last recorded as served.
    expect(await store.lookup(key)).toEqual({ result: result(1), servedAt: 5_000 });
    expect(await store.lookup('another')).toEqual({ result: undefined, servedAt: undefined });
    expect(await store.served()).toEqual([served(key, 5_000)]);
    await store.forget(key);
    expect(await store.getResult(key)).toBeUndefined();
    expect(await store.served()).toEqual([]);
    expect(store.up).toBe(true);
    await store.close();
  });

  it.runIf(runs)('prunes what is past its time, then the least recently served while past its bound, and clears all, counting the calls', async () => {
    const store = make();
    await store.setResult('old', result(1), 1);
    await store.markServed('old', served('old', 1), 1);
    const big = { ...result(2), rows: Array.from({ length: 2000 }, (_, i) => ({ i, text: 'y'.repeat(100) })) };
    for (const [i, key] of ['a', 'b', 'c'].entries()) {
      await store.setResult(key, big, 60_000);
      await store.markServed(key, served(key, 10_000 + i), 60_000);
    }
    const before = await store.bytes();
    expect(before).toBeGreaterThan(3 * 200_000);
    // An instant past the short-lived ones, and a bound that holds two of the three: 'old' goes for its
    // time, then the least recently served, with its record.
    const pruned = await store.prune(before - 100_000, Date.now() + 10);
    expect(pruned).toEqual({ expired: 1, evicted: 1 });
    expect(await store.getResult('old')).toBeUndefined();
    expect(await store.getResult('a')).toBeUndefined();
    expect(await store.getResult('c')).toBeDefined();
    expect((await store.served()).map((r) => r.call.query).sort()).not.toContain('a');
    expect(await store.clear()).toBe(2);
    expect(await store.served()).toEqual([]);
    await store.close();
  });

  it.runIf(runs)("keeps a server's generation: the same while a load runs, a new one after it, and a new one when its holder stops renewing", async () => {
    const store = make();
    expect(await store.generation('server:http://ch')).toEqual({ current: '', loading: false });
    await store.changed('server:http://ch');
    const first = (await store.generation('server:http://ch')).current;
    expect(first).not.toBe('');
    await store.changing('server:http://ch', 'me', 60_000);
    expect(await store.generation('server:http://ch')).toEqual({ current: first, loading: true });
    await store.changed('server:http://ch');
    const second = await store.generation('server:http://ch');
    expect(second.loading).toBe(false);
    expect(second.current).not.toBe(first);
    // A load whose holder is gone (it renewed for a moment only): a change of the data.
    await store.changing('server:http://ch', 'gone', 1);
    await eventually('the holder’s moment to pass', async () => !(await store.generation('server:http://ch')).loading);
    expect((await store.generation('server:http://ch')).current).not.toBe(second.current);
    // Another source's is its own.
    expect((await store.generation('server:http://other')).current).toBe('');
    await store.close();
  });

  it.runIf(runs)('leases a name to one owner at a time, again to the same, and to another once released or past its time', async () => {
    // Two stores on one place: two processes.
    const open = place();
    const [a, b] = [open(), open()];
    expect(await a.lease('k', 'one', 60_000)).toBe(true);
    expect(await b.lease('k', 'two', 60_000)).toBe(false);
    expect(await a.lease('k', 'one', 60_000)).toBe(true);
    await b.release('k', 'two'); // not its: nothing
    expect(await b.lease('k', 'two', 60_000)).toBe(false);
    await a.release('k', 'one');
    expect(await b.lease('k', 'two', 1)).toBe(true);
    await eventually('the lease to pass', async () => a.lease('k', 'three', 60_000));
    await Promise.all([a.close(), b.close()]);
  });

  it.runIf(runs)("leases a name and reads a call's result in one statement: the result stored before, none past its time, nothing read when another holds it", async () => {
    const open = place();
    const [a, b] = [open(), open()];
    const key = `q:${'x'.repeat(3000)}`; // PostgreSQL keeps a long key by its hash
    expect(await a.leaseReading('compute:k', 'one', 60_000, key)).toEqual({ taken: true });
    await b.setResult(key, result(7), 60_000);
    // Held by another: not taken, and nothing read.
    expect(await b.leaseReading('compute:k', 'two', 60_000, key)).toEqual({ taken: false });
    await a.release('compute:k', 'one');
    expect(await b.leaseReading('compute:k', 'two', 60_000, key)).toEqual({ taken: true, result: result(7) });
    await b.release('compute:k', 'two');
    await b.setResult('short', result(8), 1);
    await eventually('the short-lived result to be past its time', async () => (await a.getResult('short')) === undefined);
    expect(await a.leaseReading('compute:short', 'one', 60_000, 'short')).toEqual({ taken: true });
    await Promise.all([a.close(), b.close()]);
  });

  it.runIf(runs)('shares a token bucket: what one process takes the next sees, refilled as time passes, owed below zero', async () => {
    const open = place();
    const [a, b] = [open(), open()];
    expect((await a.takeFromBucket('caller', 3, 2, 5))?.tokens).toBeCloseTo(2, 0);
    const owed = await b.takeFromBucket('caller', 5, 2, 5);
    expect(owed?.tokens).toBeLessThan(0);
    // Another caller's bucket is its own, full.
    expect((await b.takeFromBucket('other', 1, 2, 5))?.tokens).toBeCloseTo(4, 0);
    await eventually('the bucket to refill', async () => ((await a.takeFromBucket('caller', 0, 2, 5))?.tokens ?? -1) > 0);
    await Promise.all([a.close(), b.close()]);
  });

  it.runIf(runs)('lists the processes that said they share it within the time asked', async () => {
    const store = make();
    await store.beat({ host: 'h1', pid: 1, version: '0.1.0', role: 'serve' });
    await store.beat({ host: 'h2', pid: 2, version: '0.1.0', role: 'warm' });
    await store.beat({ host: 'h1', pid: 1, version: '0.1.0', role: 'serve' });
    const seen = await store.processes(Date.now() - 60_000);
    expect(seen.map((p) => [p.host, p.pid, p.role])).toEqual([
      ['h1', 1, 'serve'],
      ['h2', 2, 'warm'],
    ]);
    expect(await store.processes(Date.now() + 1_000)).toEqual([]);
    await store.close();
  });

  it.runIf(runs)('tells a listener when the cache was cleared elsewhere', async () => {
    const open = place();
    const [listening, clearing] = [open(), open()];
    const heard: StoreSignal[] = [];
    const stop = listening.listen((what) => heard.push(what));
    await eventually('the listener to have heard a clear', async () => {
      await clearing.clear();
      return heard.some((h) => h.kind === 'cleared');
    });
    stop();
    await Promise.all([listening.close(), clearing.close()]);
  });

  it.runIf(runs)('keeps alerts: a lease an alert, a decision at once with its history and notifications, delivered in order', async () => {
    const store = make();
    const alerts = store.alerts('embedded:/data-a');
    const state = await alerts.lease('a', 'one', 10_000, 1_000, () => false);
    expect(state).toMatchObject({ name: 'a', state: null });
    expect(await alerts.lease('a', 'two', 10_000, 1_000, () => false)).toBeUndefined();
    expect(await alerts.lease('a', 'two', 10_000, 1_000, (owner) => owner === 'one')).toBeDefined(); // the holder is gone
    await alerts.decide({ name: 'a', state: 'firing', since: 1_000, holdingSince: 1_000, evaluatedAt: 1_000, notifiedAt: 1_000, detail: '3 rows' }, { alert: 'a', at: 1_000, oldState: null, newState: 'firing', detail: '3 rows' }, [
      { target: '{"command":["true"]}', payload: '{"n":1}' },
      { target: '{"webhook":"http://x"}', payload: '{"n":1}' },
    ], 1_000);
    expect((await alerts.states()).get('a')).toMatchObject({ state: 'firing', detail: '3 rows' });
    expect(await alerts.owing()).toEqual(['a']);
    const waiting = await alerts.waiting('a');
    expect(waiting.map((d) => d.target)).toEqual(['{"command":["true"]}', '{"webhook":"http://x"}']);
    await alerts.delivered(waiting[0]?.id as number, 2_000);
    await alerts.failed(waiting[1]?.id as number, 'answered 500', 5_000, 2_000);
    expect(await alerts.outboxSummary()).toEqual(new Map([['a', { waiting: 1, lastError: 'answered 500' }]]));
    expect((await alerts.history('a', 10)).map((c) => c.newState)).toEqual(['firing']);
    await alerts.release('a', 'two');
    await alerts.forget('a');
    expect((await alerts.states()).has('a')).toBe(false);
    expect(await alerts.owing()).toEqual([]);
    await store.close();
  });

  it.runIf(runs)("keeps each source's alerts apart: the same alert of another data directory has a state, history and outbox of its own", async () => {
    const store = make();
    const [a, b] = [store.alerts('embedded:/data-a'), store.alerts('embedded:/data-b')];
    await a.lease('fn-errors', 'one', 10_000, 1_000, () => false);
    await a.decide({ name: 'fn-errors', state: 'firing', since: 1_000, holdingSince: 1_000, evaluatedAt: 1_000, notifiedAt: 1_000, detail: '3 rows' }, { alert: 'fn-errors', at: 1_000, oldState: null, newState: 'firing', detail: '3 rows' }, [{ target: '{"command":["true"]}', payload: '{}' }], 1_000);
    // The other source's is new: its lease is free, its state never evaluated, nothing owed, no history.
    expect(await b.lease('fn-errors', 'two', 10_000, 1_000, () => false)).toMatchObject({ name: 'fn-errors', state: null });
    expect([await b.owing(), await b.history('fn-errors', 10)]).toEqual([[], []]);
    await b.decide({ name: 'fn-errors', state: 'ok', since: 2_000, holdingSince: null, evaluatedAt: 2_000, notifiedAt: null, detail: '0 rows' }, { alert: 'fn-errors', at: 2_000, oldState: null, newState: 'ok', detail: '0 rows' }, [], 2_000);
    expect((await a.states()).get('fn-errors')).toMatchObject({ state: 'firing' });
    expect((await b.states()).get('fn-errors')).toMatchObject({ state: 'ok' });
    expect(await a.owing()).toEqual(['fn-errors']);
    await b.forget('fn-errors');
    expect((await a.states()).get('fn-errors')).toMatchObject({ state: 'firing' });
    await store.close();
  });
});

describe('a new SQLite file', () => {
  it("is used by both of a process's connections when both are first asked at once, as serve asks at its start", async () => {
    // serve's first moment: the data's generation and the cache's signals (keyv's connection) and its
    // beat (savedq's tables' connection). Both making the new file at once, one was refused 'database
    // is locked' (about one start in twenty), and the file went unused for the life of the process.
    const down: string[] = [];
    for (let i = 0; i < 100; i++) {
      const warned: string[] = [];
      const store = openStore({ cacheFile: join(tempDir(), 'cache.sqlite'), store: { kind: 'sqlite' } }, (m) => void warned.push(m), () => undefined);
      const stop = store.listen(() => undefined);
      await Promise.all([store.generation('server:http://ch'), store.beat({ host: 'h', pid: 1, version: 'v', role: 'serve' })]);
      expect(await store.lease('k', 'me', 1_000)).toBe(true);
      if (!store.up) down.push(warned.join(' '));
      stop();
      await store.close();
    }
    expect(down).toEqual([]);
  });
});

describe('alert records kept by a savedq from before alerts had a source', () => {
  it("are taken over by the first source to evaluate the alert, its state, history and outbox whole, in the SQLite file", async () => {
    const file = join(tempDir(), 'before.sqlite');
    // The file as a savedq from before made it: an alert's state by its name alone.
    const sqlite3 = (await import('sqlite3')).default;
    const db = new sqlite3.Database(file);
    const exec = (sql: string) => new Promise<void>((resolve, reject) => db.exec(sql, (err) => (err ? reject(err) : resolve())));
    await exec(`
      CREATE TABLE savedq_alert_state (name TEXT PRIMARY KEY, state TEXT, since INTEGER, holding_since INTEGER, evaluated_at INTEGER, notified_at INTEGER, detail TEXT, lease_owner TEXT, lease_until INTEGER);
      CREATE TABLE savedq_alert_history (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, at INTEGER NOT NULL, old_state TEXT, new_state TEXT NOT NULL, detail TEXT NOT NULL);
      CREATE INDEX savedq_alert_history_name ON savedq_alert_history (name, id);
      CREATE TABLE savedq_alert_outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, target TEXT NOT NULL, payload TEXT NOT NULL, created_at INTEGER NOT NULL, next_at INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT, delivered_at INTEGER, given_up_at INTEGER);
      INSERT INTO savedq_alert_state (name, state, since, evaluated_at, detail) VALUES ('fn-errors', 'firing', 1000, 1000, '3 rows');
      INSERT INTO savedq_alert_history (name, at, old_state, new_state, detail) VALUES ('fn-errors', 1000, NULL, 'firing', '3 rows');
      INSERT INTO savedq_alert_outbox (name, target, payload, created_at, next_at) VALUES ('fn-errors', '{"command":["true"]}', '{}', 1000, 1000);
    `);
    await new Promise<void>((resolve) => db.close(() => resolve()));
    const store = openStore({ cacheFile: file, store: { kind: 'sqlite' } }, warn, () => undefined);
    const [a, b] = [store.alerts('embedded:/data-a'), store.alerts('embedded:/data-b')];
    // Listed for any source until one evaluates it; then that source's alone.
    expect((await b.states()).get('fn-errors')).toMatchObject({ state: 'firing' });
    expect(await a.lease('fn-errors', 'one', 10_000, 2_000, () => false)).toMatchObject({ state: 'firing', detail: '3 rows' });
    expect([await a.owing(), (await a.history('fn-errors', 10)).map((c) => c.newState)]).toEqual([['fn-errors'], ['firing']]);
    expect([(await b.states()).has('fn-errors'), await b.owing()]).toEqual([false, []]);
    await store.close();
  });

  it.runIf(has.postgres)('are brought to version 2 in a PostgreSQL store, and taken over the same way', async () => {
    const pg = postgres as Postgres;
    const schema = 'from_version_1';
    pg.psql(`CREATE SCHEMA ${schema};
      CREATE TABLE ${schema}.meta (key text PRIMARY KEY, value text NOT NULL);
      INSERT INTO ${schema}.meta VALUES ('version', '1');
      CREATE TABLE ${schema}.keyv (key text PRIMARY KEY, value text NOT NULL, expires bigint GENERATED ALWAYS AS (CAST(substring(right(value, 40) FROM '"expires":([0-9]+)}$') AS bigint)) STORED, served_at bigint GENERATED ALWAYS AS (CASE WHEN key LIKE 'savedq:served:%' THEN CAST(CAST(value AS jsonb) #>> '{value,servedAt}' AS bigint) END) STORED, bytes integer GENERATED ALWAYS AS (octet_length(key) + octet_length(value)) STORED);
      CREATE TABLE ${schema}.leases (name text PRIMARY KEY, owner text NOT NULL, until bigint NOT NULL);
      CREATE TABLE ${schema}.buckets (name text PRIMARY KEY, tokens double precision NOT NULL, at bigint NOT NULL);
      CREATE TABLE ${schema}.processes (id text PRIMARY KEY, host text NOT NULL, pid integer NOT NULL, version text NOT NULL, role text NOT NULL, seen bigint NOT NULL);
      CREATE TABLE ${schema}.alert_state (name text PRIMARY KEY, state text, since bigint, holding_since bigint, evaluated_at bigint, notified_at bigint, detail text, lease_owner text, lease_until bigint);
      CREATE TABLE ${schema}.alert_history (id bigserial PRIMARY KEY, name text NOT NULL, at bigint NOT NULL, old_state text, new_state text NOT NULL, detail text NOT NULL);
      CREATE INDEX alert_history_name ON ${schema}.alert_history (name, id);
      CREATE TABLE ${schema}.alert_outbox (id bigserial PRIMARY KEY, name text NOT NULL, target text NOT NULL, payload text NOT NULL, created_at bigint NOT NULL, next_at bigint NOT NULL, attempts integer NOT NULL DEFAULT 0, last_error text, delivered_at bigint, given_up_at bigint);
      CREATE INDEX alert_outbox_waiting ON ${schema}.alert_outbox (name, id) WHERE delivered_at IS NULL AND given_up_at IS NULL;
      INSERT INTO ${schema}.alert_state (name, state, since, evaluated_at, detail) VALUES ('fn-errors', 'firing', 1000, 1000, '3 rows');
      INSERT INTO ${schema}.alert_outbox (name, target, payload, created_at, next_at) VALUES ('fn-errors', '{"command":["true"]}', '{}', 1000, 1000);`);
    const store = openStore({ cacheFile: '/nonexistent', store: { kind: 'postgres', url: pg.url, shown: pg.shown, schema } }, warn, () => undefined);
    const a = store.alerts('embedded:/data-a');
    expect(await a.lease('fn-errors', 'one', 10_000, 2_000, () => false)).toMatchObject({ state: 'firing', detail: '3 rows' });
    expect(pg.psql(`SELECT value FROM ${schema}.meta WHERE key = 'version'`).trim()).toBe('2');
    expect(await a.owing()).toEqual(['fn-errors']);
    expect((await store.alerts('embedded:/data-b').states()).has('fn-errors')).toBe(false);
    await store.close();
  });
});

describe.runIf(has.postgres)('a PostgreSQL store', () => {
  it('makes its tables in a schema of its own on first use, and refuses tables of a newer savedq by name', async () => {
    const pg = postgres as Postgres;
    const schema = 'versioned';
    const store = openStore({ cacheFile: '/nonexistent', store: { kind: 'postgres', url: pg.url, shown: pg.shown, schema } }, warn, () => undefined);
    await store.setResult('k', result(1), 60_000);
    expect(pg.psql(`SELECT value FROM ${schema}.meta WHERE key = 'version'`).trim()).toBe('2');
    await store.close();
    pg.psql(`UPDATE ${schema}.meta SET value = '99' WHERE key = 'version'`);
    const newer = openStore({ cacheFile: '/nonexistent', store: { kind: 'postgres', url: pg.url, shown: pg.shown, schema } }, warn, () => undefined);
    await expect(newer.getResult('k')).rejects.toThrow(`the store ${pg.shown} holds savedq's tables of a newer savedq (version 99; this one knows 2): upgrade savedq.`);
    await newer.close();
  });

  it('refuses a user that may not make its tables, naming what to grant', async () => {
    const pg = postgres as Postgres;
    pg.psql("CREATE ROLE limited LOGIN PASSWORD 'limited-pw'; REVOKE CREATE ON DATABASE postgres FROM PUBLIC; REVOKE CREATE ON SCHEMA public FROM PUBLIC;");
    const url = `postgres://limited:limited-pw@127.0.0.1:${pg.port}/postgres`;
    const store = openStore({ cacheFile: '/nonexistent', store: { kind: 'postgres', url, shown: `postgres://limited@127.0.0.1:${pg.port}/postgres`, schema: 'not_yours' } }, warn, () => undefined);
    await expect(store.getResult('k')).rejects.toThrow(/its user may not make savedq's tables .*; GRANT CREATE ON DATABASE postgres TO limited, or run savedq init --store as one who may\.$/);
    await store.close();
  });

  it('refuses a second user of tables another made, naming the grants that let it use them; granted, it uses them', async () => {
    const pg = postgres as Postgres;
    const schema = 'owned_by_savedq';
    const owner = openStore({ cacheFile: '/nonexistent', store: { kind: 'postgres', url: pg.url, shown: pg.shown, schema } }, warn, () => undefined);
    await owner.setResult('k', result(1), 60_000);
    await owner.close();
    pg.psql("CREATE ROLE second LOGIN PASSWORD 'second-pw'");
    const url = `postgres://second:second-pw@127.0.0.1:${pg.port}/postgres`;
    const open = () => openStore({ cacheFile: '/nonexistent', store: { kind: 'postgres', url, shown: `postgres://second@127.0.0.1:${pg.port}/postgres`, schema } }, warn, () => undefined);
    const refused = open();
    const advice = await refused.getResult('k').then(() => '', (err: unknown) => (err as Error).message);
    await refused.close();
    expect(advice).toMatch(/its user may not use savedq's tables \(permission denied for schema owned_by_savedq\); as their owner, GRANT USAGE ON SCHEMA owned_by_savedq TO second; .*\.$/);
    // The advice, taken word for word, is enough.
    pg.psql(advice.slice(advice.indexOf('GRANT')).replace(/\.$/, ';'));
    const granted = open();
    expect(await granted.getResult('k')).toEqual(result(1));
    await granted.setResult('k2', result(2), 60_000);
    const alerts = granted.alerts('embedded:/x');
    await alerts.lease('a', 'me', 10_000, 1_000, () => false);
    await alerts.decide({ name: 'a', state: 'ok', since: 1_000, holdingSince: null, evaluatedAt: 1_000, notifiedAt: null, detail: '' }, { alert: 'a', at: 1_000, oldState: null, newState: 'ok', detail: '' }, [{ target: '{}', payload: '{}' }], 1_000);
    expect(await alerts.owing()).toEqual(['a']);
    await granted.close();
  });

  it('says that a store asks for a password when none was given, rather than what the driver said', async () => {
    const pg = postgres as Postgres;
    const store = openStore({ cacheFile: '/nonexistent', store: { kind: 'postgres', url: pg.url.replace(`:${pg.password}@`, '@'), shown: pg.shown, schema: 'no_password' } }, warn, () => undefined);
    await expect(store.getResult('k')).rejects.toThrow(`the store ${pg.shown} asks for a password: give --store-password-file (or SAVEDQ_STORE_PASSWORD_FILE), or put it in the URL.`);
    await store.close();
  });

  it('answers its fallbacks when the server is gone, says so once, and is up again within seconds of its return', async () => {
    const pg = postgres as Postgres;
    const said: string[] = [];
    const store = openStore({ cacheFile: '/nonexistent', store: { kind: 'postgres', url: pg.url, shown: pg.shown, schema: 'gone_and_back' } }, (m) => void said.push(m), () => undefined);
    await store.setResult('k', result(1), 600_000);
    pg.stop();
    try {
      const started = Date.now();
      expect(await store.getResult('k')).toBeUndefined();
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(store.up).toBe(false);
      expect(await store.lease('x', 'me', 1_000)).toBe(true); // no one to share with: compute it yourself
      expect(await store.getResult('k')).toBeUndefined();
      expect(said).toEqual([expect.stringMatching(new RegExp(`^the store ${pg.shown.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} cannot be reached \\(.*\\); answering from the warehouse, uncached, until it can\\.$`))]);
      expect(said.join('\n')).not.toContain(pg.password);
    } finally {
      pg.start();
    }
    await eventually('the store to answer again', async () => (await store.getResult('k')) !== undefined);
    expect(store.up).toBe(true);
    expect(said.at(-1)).toBe(`the store ${pg.shown} answers again: answers are cached again.`);
    await store.close();
  }, 120_000);
});
