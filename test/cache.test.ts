import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import sqlite3 from 'sqlite3';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { WarehouseError } from '../src/errors.js';
import { Savedq } from '../src/library.js';
import { RecentResults, type RecentResult } from '../src/cache/recent.js';
import { ResultsCache, type CachedResult } from '../src/cache/index.js';
import { SqliteStore } from '../src/store/sqlite.js';
import { CallRunner } from '../src/calls/runner.js';
import { BoundedMap } from '../src/bounded.js';
import { AT, eventually, load, tempDir, testLibrary, libraryOf } from './helpers.js';

let now = Date.parse(AT);
const lib = testLibrary({ clock: () => now });
const cacheFile = lib.config.cacheFile;
const SECOND = 1000;

function event(project: string, timestamp: string): object {
  return { timestamp, project, metadata: { request: { url: `https://${project}.example/rest/v1/x`, path: '/rest/v1/x' } } };
}

const counts = (project: string, cache: 'use' | 'skip' | 'refresh' = 'use', extra: Array<[string, string]> = []) =>
  lib.run({ nameOrId: 'usage.api-counts', params: [['project', project], ['interval', 'hourly'], ...extra], cache });

/** Another library on the same data directory and cache file whose warehouse must not be asked: it can only answer from the cache. */
function cacheOnlyLibrary(): Savedq {
  const other = libraryOf(lib.config, { clock: () => now });
  vi.spyOn(other.executor, 'execute').mockRejectedValue(new WarehouseError('the warehouse was asked.'));
  return other;
}

beforeAll(async () => {
  await load(lib, 'edge_logs', [event('cached', new Date(now - 10 * 60 * SECOND).toISOString())]);
});

describe('results cache', () => {
  it('serves a repeated call from the cache without touching the warehouse', async () => {
    const first = await counts('cached');
    expect(first.cache).toBe('miss');
    now += 10 * SECOND;
    const other = cacheOnlyLibrary();
    const second = await other.run({ nameOrId: 'usage.api-counts', params: [['interval', 'hourly'], ['project', 'cached']] });
    await other.close();
    expect(second.cache).toBe('hit');
    expect(second.rows).toEqual(first.rows);
    expect(second.computedAt).toBe(first.computedAt);
  });

  it('shares one entry between equivalent spellings of the parameters', async () => {
    const stats = (params: Array<[string, string]>) => lib.run({ nameOrId: 'functions.invocation-stats', params });
    expect((await stats([['project', 'eq']])).cache).toBe('miss');
    expect((await stats([['interval', '1day'], ['project', 'eq']])).cache).toBe('hit');
    expect((await stats([['project', 'eq'], ['function_id', ''], ['interval', 'nonsense']])).cache).toBe('hit');
    expect((await stats([['project', 'eq'], ['interval', '1hr']])).cache).toBe('miss');
  });

  it('keys on --at', async () => {
    const at = (instant: string) =>
      lib.run({ nameOrId: 'usage.api-counts', params: [['project', 'at'], ['interval', 'daily']], at: instant });
    expect((await at('2026-03-01T00:00:00Z')).cache).toBe('miss');
    expect((await at('2026-03-01T01:00:00+01:00')).cache).toBe('hit');
    expect((await at('2026-03-02T00:00:00Z')).cache).toBe('miss');
  });

  it('never caches logs.all', async () => {
    const r = await lib.run({ nameOrId: 'logs.all', params: [['project', 'cached']] });
    expect(r.cache).toBe('off');
    await lib.settled(); // what would have been stored is stored by now
    expect((await lib.cache.entries()).some((e) => e.call.query === r.query.id)).toBe(false);
  });

  it('--no-cache neither reads nor writes; --refresh recomputes and replaces', async () => {
    // Nothing cached: a skipped run writes nothing (the next run is a miss, not a hit).
    expect((await counts('modes', 'skip')).cache).toBe('off');
    const first = await counts('modes');
    expect(first.cache).toBe('miss');
    // An answer cached that the data no longer says: a skipped run does not read it (it has the new row)…
    await load(lib, 'edge_logs', [event('modes', new Date(now - 5 * SECOND).toISOString())]);
    now += SECOND;
    const skipped = await counts('modes', 'skip');
    expect([skipped.cache, skipped.rows.length]).toEqual(['off', 1]);
    // …nor write its answer over it: the cached answer is the one from before the row, as it was computed.
    const stale = await counts('modes');
    expect([stale.cache, stale.rows, stale.computedAt]).toEqual(['hit', [], first.computedAt]);
    const fresh = await counts('modes', 'refresh');
    expect(fresh.cache).toBe('miss');
    expect(fresh.rows).toHaveLength(1);
    expect((await counts('modes')).rows).toEqual(fresh.rows);
  });

  it('runs a call once when an identical call read the cache just before the first stored its result', async () => {
    const execute = vi.spyOn(lib.executor, 'execute');
    const lease = vi.spyOn(lib.store, 'lease');
    const get = lib.cache.get.bind(lib.cache);
    let first: Promise<unknown> | undefined;
    // The second call's lookup reads the cache at once but answers only when the first call is done
    // (the first call's own second read, once it holds the key's lease, is not held back).
    const lookup = vi.spyOn(lib.cache, 'get').mockImplementation(async (key) => {
      const second = lookup.mock.calls.length === 2 && lease.mock.calls.length === 0;
      const found = await get(key);
      if (second) await first;
      return found;
    });
    try {
      first = counts('racing');
      const results = await Promise.all([first, counts('racing')]);
      expect(execute).toHaveBeenCalledTimes(1);
      expect(results.map((r) => (r as { rows: unknown }).rows)).toEqual([[], []]);
    } finally {
      lookup.mockRestore();
      lease.mockRestore();
      execute.mockRestore();
    }
  });

  it('expires a result 900 seconds after it was computed', async () => {
    expect((await counts('expiry')).cache).toBe('miss');
    now += 899 * SECOND;
    expect((await counts('expiry')).cache).toBe('hit');
    now += 1 * SECOND;
    expect((await counts('expiry')).cache).toBe('miss');
  });

  it('warms what was served in the last 900 s and is 300 s old, and lets the rest expire', async () => {
    await lib.cache.clear();
    await counts('warm-a'); // computed and served at t0
    now += 200 * SECOND;
    await counts('warm-b'); // computed and served at t0+200
    now += 100 * SECOND; // t0+300: a is due, b is too young
    expect((await lib.dueForWarming()).map((e) => e.call.params.project)).toEqual(['warm-a']);
    const outcomes = await lib.warm();
    expect(outcomes.map((o) => [o.name, o.call.params.project, o.rows, o.error])).toEqual([['usage.api-counts', 'warm-a', 0, undefined]]);
    expect((await lib.dueForWarming()).map((e) => e.call.params.project)).toEqual([]);
    now += 300 * SECOND; // t0+600: both 300 s old or more, both served within 900 s
    expect((await lib.dueForWarming()).map((e) => e.call.params.project).sort()).toEqual(['warm-a', 'warm-b']);
    now += 301 * SECOND; // t0+901: a was last served 901 s ago, b 701 s ago
    expect((await lib.dueForWarming()).map((e) => e.call.params.project)).toEqual(['warm-b']);
  });

  it('reports a failed refresh without stopping the others', async () => {
    await counts('fails-to-warm');
    await counts('warms-fine');
    now += 300 * SECOND;
    const original = lib.executor.execute.bind(lib.executor);
    const execute = vi.spyOn(lib.executor, 'execute').mockImplementation(async (call, signal) => {
      if (call.params.project === 'fails-to-warm') throw new WarehouseError('the warehouse failed.');
      return original(call, signal);
    });
    const outcomes = await lib.warm();
    execute.mockRestore();
    expect(outcomes.map((o) => [o.call.params.project, o.error?.message])).toEqual(
      expect.arrayContaining([['fails-to-warm', 'the warehouse failed.'], ['warms-fine', undefined]]),
    );
  });
});

describe('a result belongs to its source', () => {
  it('a server that cannot be reached is not answered from the embedded engine’s result', async () => {
    await counts('source-b');
    const server = libraryOf({ url: 'http://user:secret@127.0.0.1:9', cacheFile }, { clock: () => now });
    await expect(server.run({ nameOrId: 'usage.api-counts', params: [['project', 'source-b'], ['interval', 'hourly']] })).rejects.toThrow(/cannot reach ClickHouse at http:\/\/user@127\.0\.0\.1:9/);
    await server.close();
  });

  it('cache list names each entry’s source; warm refreshes only the entries of the source it runs against', async () => {
    await counts('listed-source');
    const views = await lib.cachedCalls();
    expect(views.find((v) => v.params.project === 'listed-source')?.source).toBe(realpathSync(lib.config.dataDir));
    const other = libraryOf({ dataDir: join(tempDir(), 'other'), cacheFile }, { clock: () => now + 400 * SECOND });
    expect(await other.dueForWarming()).toEqual([]);
    await other.close();
  });
});

describe('a broken cache never breaks a query', () => {
  const dir = tempDir();

  /** A library on another cache file, and the warnings it has reported so far (as it reported them, in order). */
  function libraryWithCache(file: string): { other: Savedq; warnings: string[] } {
    const warnings: string[] = [];
    // Same data directory as the main library: this process has the engine open already.
    const reporter = { warn: (message: string) => warnings.push(message), note: () => undefined };
    return { other: libraryOf({ dataDir: lib.config.dataDir, cacheFile: file }, { clock: () => now, reporter }), warnings };
  }

  it('leaves a file that was never a database as it is: one warning, the answer, no cache', async () => {
    const file = join(dir, 'notes.txt');
    const text = 'this is not a SQLite database, just some text that is long enough to have a header'.repeat(20);
    writeFileSync(file, text, { mode: 0o644 });
    chmodSync(file, 0o644);
    const { other, warnings } = libraryWithCache(file);
    const r = await other.run({ nameOrId: 'usage.api-counts', params: [['project', 'cached'], ['interval', 'hourly']] });
    expect(r.rows).toHaveLength(1);
    expect(warnings).toEqual([`results cache ${file} is not usable (${file} is not a SQLite file; move it away or give --cache-file another path); answering without it.`]);
    expect(readFileSync(file, 'utf8')).toBe(text);
    // Not moved aside, its mode as it was, nothing beside it.
    expect(readdirSync(dir).filter((f) => f.startsWith('notes.txt'))).toEqual(['notes.txt']);
    expect(statSync(file).mode & 0o777).toBe(0o644);
  });

  it('moves a damaged cache file aside, warns once, answers, and caches again', async () => {
    const file = join(dir, 'damaged.sqlite');
    // SQLite's header, then what no database holds (a page size of 1).
    writeFileSync(file, Buffer.concat([Buffer.from('SQLite format 3\0', 'latin1'), Buffer.alloc(4000, 1)]));
    const { other, warnings } = libraryWithCache(file);
    const r = await other.run({ nameOrId: 'usage.api-counts', params: [['project', 'cached'], ['interval', 'hourly']] });
    expect(r.rows).toHaveLength(1);
    expect(warnings).toEqual([expect.stringMatching(/was damaged; moved it aside and started a new one/)]);
    expect(readdirSync(dir).some((f) => f.startsWith('damaged.sqlite.corrupt-'))).toBe(true);
    const again = await other.run({ nameOrId: 'usage.api-counts', params: [['project', 'cached'], ['interval', 'hourly']] });
    expect(again.cache).toBe('hit');
    expect(warnings).toHaveLength(1);
  });

  it('answers with a warning when the cache file cannot be created', async () => {
    const blocker = join(dir, 'a-file');
    writeFileSync(blocker, '');
    const { other, warnings } = libraryWithCache(join(blocker, 'cache.sqlite'));
    const r = await other.run({ nameOrId: 'usage.api-counts', params: [['project', 'cached'], ['interval', 'hourly']] });
    expect(r.rows).toHaveLength(1);
    // From the warehouse, and said so: nothing could be kept.
    expect(r.cache).toBe('bypass');
    expect(warnings).toEqual([expect.stringMatching(/results cache .*a-file\/cache.sqlite is not usable/)]);
    expect(existsSync(join(blocker, 'cache.sqlite'))).toBe(false);
  });
});

describe('the cache stays bounded', () => {
  const dir = tempDir();
  const folder = join(dir, 'queries');
  mkdirSync(folder);
  // About 300 KB a result.
  writeFileSync(join(folder, 'big.sql'), "/*\nparams:\n  p: { type: string, required: true }\ncache: 900\n*/\nSELECT @p AS p, repeat('x', 300000) AS big\n");

  it('past --cache-max-mb, the least recently served results go first, and the file stays within about that size', async () => {
    const small = libraryOf({ dataDir: lib.config.dataDir, cacheFile: join(dir, 'small.sqlite'), cacheMaxMb: '1', queries: [folder] }, { clock: () => now });
    const big = (p: string) => small.run({ nameOrId: 'big', params: [['p', p]] });
    for (const p of ['1', '2', '3', '4', '5', '6']) {
      expect((await big(p)).cache).toBe('miss');
      now += SECOND;
    }
    expect(await small.cache.size()).toBeLessThan(3 * 2 ** 20);
    const kept = (await small.cachedCalls()).map((c) => c.params.p).sort();
    expect(kept.length).toBeLessThan(6);
    expect(kept).toContain('6'); // the most recently served stays
    expect(kept).not.toContain('1'); // the least recently served went first
    await small.close();
  });

  it('deletes entries past their retention, and damaged ones', async () => {
    const file = join(dir, 'retention.sqlite');
    const other = libraryOf({ dataDir: lib.config.dataDir, cacheFile: file }, { clock: () => now });
    await other.run({ nameOrId: 'usage.api-counts', params: [['project', 'old'], ['interval', 'hourly']] });
    await other.run({ nameOrId: 'usage.api-counts', params: [['project', 'kept'], ['interval', 'hourly']] });
    const db = new sqlite3.Database(file);
    const exec = (sql: string) => new Promise<void>((resolve, reject) => db.run(sql, (e: Error | null) => (e ? reject(e) : resolve())));
    await exec(`UPDATE keyv SET value = json_set(value, '$.expires', 1) WHERE key LIKE 'savedq:%"old"%'`);
    // A damaged entry, which can never be read: a result and a served record whose values are not JSON.
    await exec(`INSERT INTO keyv (key, value) VALUES ('savedq:result:damaged', '{"value": tru'), ('savedq:served:damaged', 'not json')`);
    const left = () =>
      new Promise<string[]>((resolve, reject) => {
        const reader = new sqlite3.Database(file);
        reader.all("SELECT key FROM keyv WHERE key LIKE 'savedq:%damaged%'", (e: Error | null, rows: { key: string }[]) => {
          reader.close();
          if (e) reject(e);
          else resolve(rows.map((r) => r.key));
        });
      });
    await new Promise<void>((resolve) => db.close(() => resolve()));
    expect(await left()).toHaveLength(2);
    const pruned = await other.pruneCache();
    expect(pruned.expired).toBe(2); // two calls: the old one (its result and its served record), and the damaged one
    expect(await left()).toEqual([]);
    expect((await other.cachedCalls()).map((c) => c.params.project)).toEqual(['kept']);
    await other.close();
  });

  it('warm stops when --max-time is up, the most recently served refreshed first, and says how many it left', async () => {
    const other = libraryOf({ dataDir: lib.config.dataDir, cacheFile: join(dir, 'warm.sqlite') }, { clock: () => now });
    for (const project of ['w1', 'w2', 'w3']) {
      await other.run({ nameOrId: 'usage.api-counts', params: [['project', project], ['interval', 'hourly']] });
      now += SECOND;
    }
    now += 300 * SECOND;
    const none = await other.warm({ maxTimeMs: 0 });
    expect(none.map((o) => [o.call.params.project, o.left])).toEqual([['w3', 'time'], ['w2', 'time'], ['w1', 'time']]);
    const all = await other.warm();
    expect(all.map((o) => o.call.params.project)).toEqual(['w3', 'w2', 'w1']);
    await other.close();
  });
});

describe('what a process served a moment ago', () => {
  it('is trusted for a moment from when it was read, however often it is served meanwhile; then the cache file is to be read again, once', () => {
    const recent = new RecentResults(2 ** 20);
    const stored = { rows: [], computedAt: 0 };
    const entry = (): RecentResult => {
      const found = recent.get('k');
      expect(found?.result).toBe(stored);
      return found as RecentResult;
    };
    recent.served('k', stored, 1_000);
    // Served from memory every 100 ms: its served record is written when due, never its trust renewed.
    for (let now = 1_000; now < 3_000; now += 100) {
      expect(recent.reread(entry(), now), `at ${now}`).toBe(false);
      recent.due(entry(), now);
    }
    expect(recent.reread(entry(), 3_000)).toBe(true);
    // Asked while that read is under way: not again.
    expect(recent.reread(entry(), 3_100)).toBe(false);
    // Read again: trusted anew for its moment, then read again once more.
    recent.served('k', stored, 3_200);
    expect(recent.reread(entry(), 5_100)).toBe(false);
    expect(recent.reread(entry(), 5_200)).toBe(true);
  });

  it('takes a clock set back as past its moment: the file read again, the served record written', () => {
    const recent = new RecentResults(2 ** 20);
    recent.served('k', { rows: [], computedAt: 0 }, 10_000);
    const entry = recent.get('k') as RecentResult;
    expect(recent.reread(entry, 9_000)).toBe(true);
    expect(recent.due(entry, 9_000)).toBe(true);
    expect(recent.served('k', { rows: [], computedAt: 0 }, 8_000)).toBe(true);
  });

  it('is answered past its moment of trust without waiting, while the cache file is read again: a result another process stored there is taken, and none there is forgotten', async () => {
    const params: Array<[string, string]> = [['project', 'moment'], ['interval', 'hourly']];
    const call = await lib.prepare({ nameOrId: 'usage.api-counts', params });
    const first = await lib.runPrepared(call);
    expect(first.cache).toBe('miss');
    // Another process (a cron warm) computes the call again and stores it.
    now += SECOND;
    const other = libraryOf(lib.config, { clock: () => now });
    const stored = await other.run({ nameOrId: 'usage.api-counts', params, cache: 'refresh' });
    await other.settled(); // stored in the file (after its answer)
    expect(stored.computedAt).toBeGreaterThan(first.computedAt);
    // Within its moment of trust, this process answers what it has.
    expect(lib.answerRecent(call)?.computedAt).toBe(first.computedAt);
    // Past it, the same, at once, and the file is read meanwhile: what the other process stored is answered next.
    now += 2 * SECOND;
    expect(lib.answerRecent(call)?.computedAt).toBe(first.computedAt);
    await eventually('the result the other process stored, answered', () => lib.answerRecent(call)?.computedAt === stored.computedAt);
    // The file emptied by the other process: answered once more while it is read, then looked up again.
    expect(await other.clearCache()).toBeGreaterThan(0);
    await other.close();
    now += 3 * SECOND;
    expect(lib.answerRecent(call)?.computedAt).toBe(stored.computedAt);
    await eventually('the emptied file read', () => lib.answerRecent(call) === undefined);
    expect((await lib.runPrepared(call)).cache).toBe('miss');
  });
});

/** A results cache whose next read, once asked to, reads the file at once and keeps its answer back until let go. */
class HeldRead extends ResultsCache {
  #held: { read: () => void; release: Promise<void> } | undefined;

  /** Holds the next read: `read` settles once the file was read, `release` lets its answer go. */
  holdNext(): { read: Promise<void>; release: () => void } {
    let read!: () => void;
    let release!: () => void;
    const wasRead = new Promise<void>((resolve) => (read = resolve));
    this.#held = { read, release: new Promise<void>((resolve) => (release = resolve)) };
    return { read: wasRead, release };
  }

  override async get(key: string): Promise<CachedResult | undefined> {
    const held = this.#held;
    this.#held = undefined;
    const stored = await super.get(key);
    if (held) {
      held.read();
      await held.release;
    }
    return stored;
  }
}

describe('a re-read of the cache file', () => {
  it('that ends after a newer result was computed leaves the newer one answered, not the older it read', async () => {
    const store = new SqliteStore(join(tempDir(), 'cache.sqlite'), () => undefined);
    const cache = new HeldRead(store);
    const runner = new CallRunner({ cache, store, executor: lib.executor, generation: lib.generation, clock: () => now, owner: 'test', waitMs: 30_000, maxBytes: 512 * 2 ** 20, recentBytes: 64 * 2 ** 20 });
    const call = await lib.prepare({ nameOrId: 'usage.api-counts', params: [['project', 'race'], ['interval', 'hourly']] });
    const first = await runner.run(call, 'use');
    expect(first.cache).toBe('miss');
    // Past its moment of trust: answered at once, and the file read again, that read's answer held back.
    now += 3 * SECOND;
    const held = cache.holdNext();
    expect(runner.answerRecent(call)?.computedAt).toBe(first.computedAt);
    await held.read;
    // Meanwhile the call is run again (Cache-Control: no-cache), its newer result answered from then on.
    const second = await runner.run(call, 'refresh');
    expect(second.computedAt).toBeGreaterThan(first.computedAt);
    expect(runner.answerRecent(call)?.computedAt).toBe(second.computedAt);
    // The re-read ends with what it read before the run: it does not put that older result back.
    held.release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(runner.answerRecent(call)?.computedAt).toBe(second.computedAt);
    await store.close();
  });
});

describe('a bounded map', () => {
  it('keeps at most its bound, the oldest set going first, a key set again the newest', () => {
    const kept = new BoundedMap<string, number>(2);
    kept.set('a', 1).set('b', 2).set('a', 3).set('c', 4);
    expect([...kept]).toEqual([['a', 3], ['c', 4]]);
  });
});
