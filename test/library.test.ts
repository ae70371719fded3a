import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sqlite3 from 'sqlite3';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { cacheKey } from '../src/cache/index.js';
import { InputError, InterruptedError, UnauthorizedError } from '../src/errors.js';
import { AT, eventually, tempDir, testLibrary, libraryOf } from './helpers.js';

// The library's shared work, its cache records and its warming, as every surface meets them.
const folder = join(tempDir(), 'queries');
mkdirSync(folder);
// Slow enough to be caught in flight (a count over a billion generated numbers takes seconds).
writeFileSync(join(folder, 'slow.sql'), '/*\nparams:\n  n: { type: integer, default: 1000000000 }\n*/\nSELECT count() AS n FROM numbers(@n) WHERE number % 7 = 3\n');
writeFileSync(
  join(folder, 'cached.sql'),
  "/*\nparams:\n  p: { type: string, required: true }\n  mode: { allowed: [a, b], other: default, default: a }\ncache: 900\nwarm: 300\n*/\nSELECT @p AS p, @mode AS mode, toUnixTimestamp64Micro(now64(6)) AS at\n",
);

let now = Date.parse(AT);
const lib = testLibrary({ queries: [folder], clock: () => now });
afterAll(() => lib.close());

describe('identical calls that share one query', () => {
  it('one caller giving up does not fail the others: its abort ends its own wait, the query goes on', async () => {
    const call = { nameOrId: 'slow', params: [] as [string, string][], cache: 'skip' as const };
    const impatient = new AbortController();
    const first = lib.run({ ...call, signal: impatient.signal });
    const second = lib.run(call);
    // Given up while the query runs in the engine (a count over a billion numbers: seconds).
    await eventually('the query to run in the engine', () => lib.engineQueue()?.running === 1);
    impatient.abort(new InterruptedError('interrupted (SIGINT).'));
    await expect(first).rejects.toThrow(InterruptedError);
    const answer = await second;
    expect(answer.rows).toEqual([{ n: 142857143 }]);
    expect(lib.engineQueue()?.dropped).toBe(0);
  });

  it('records a miss that 40 identical requests shared as served once, not 40 times', async () => {
    // Prepared first, the 40 reach the cache at once (as serve's requests for one prepared call do).
    const call = await lib.prepare({ nameOrId: 'cached', params: [['p', 'forty']] });
    const execute = vi.spyOn(lib.executor, 'execute');
    const markServed = vi.spyOn(lib.cache, 'markServed');
    const answers = await Promise.all(Array.from({ length: 40 }, () => lib.runPrepared(call)));
    expect(new Set(answers.map((a) => a.cache))).toEqual(new Set(['miss']));
    expect(execute).toHaveBeenCalledTimes(1);
    expect(markServed).toHaveBeenCalledTimes(1);
    execute.mockRestore();
    markServed.mockRestore();
  });

  it('40 identical runs, each reading its definition in its own time, run the query once and record it once', async () => {
    const execute = vi.spyOn(lib.executor, 'execute');
    const markServed = vi.spyOn(lib.cache, 'markServed');
    const answers = await Promise.all(Array.from({ length: 40 }, () => lib.run({ nameOrId: 'cached', params: [['p', 'forty-late']] })));
    // One that finished reading its definition after the result was stored is a hit of that same result.
    expect(answers.filter((a) => a.cache === 'miss').length).toBeGreaterThan(0);
    expect(new Set(answers.map((a) => a.computedAt)).size).toBe(1);
    expect(execute).toHaveBeenCalledTimes(1);
    expect(markServed).toHaveBeenCalledTimes(1);
    execute.mockRestore();
    markServed.mockRestore();
  });
});

describe('the cache records', () => {
  it('cache list and warm read the served records only, never the results’ rows', async () => {
    await lib.run({ nameOrId: 'cached', params: [['p', 'listed']] });
    await lib.settled(); // stored after its answer
    const get = vi.spyOn(lib.cache, 'get');
    // A result whose stored text is damaged: reading the rows would fail; the records alone read fine.
    const key = cacheKey((await lib.cache.entries()).find((e) => e.call.params.p === 'listed')?.call ?? ({} as never));
    const db = new sqlite3.Database(lib.config.cacheFile);
    await new Promise<void>((resolve, reject) => db.run('UPDATE keyv SET value = ? WHERE key = ?', ['{"not json', `savedq:result:${key}`], (e) => (e ? reject(e) : resolve())));
    await new Promise<void>((resolve) => db.close(() => resolve()));
    const listed = await lib.cachedCalls();
    expect(listed.find((c) => c.params.p === 'listed')).toMatchObject({ query: 'cached', ageSeconds: 0, expiresInSeconds: 900 });
    now += 400_000;
    expect((await lib.dueForWarming()).map((e) => e.call.params.p)).toContain('listed');
    expect(get).not.toHaveBeenCalled();
    get.mockRestore();
  });

  it('warm refreshes the key of the call as normalised today, the one a call of today reads', async () => {
    // A record of the call as an older savedq stored it: its parameters not in today's canonical form.
    const today = await lib.cachedCallOf({ nameOrId: 'cached', params: [['p', 'old']] });
    const stale = { ...today, params: { p: 'old', mode: 'nonsense' } };
    await lib.cache.markServed(cacheKey(stale), { call: stale, servedAt: now - 1000, computedAt: now - 400_000 });
    const outcomes = await lib.warm({ calls: [stale] });
    expect(outcomes).toMatchObject([{ name: 'cached', rows: 1 }]);
    const later = await lib.run({ nameOrId: 'cached', params: [['p', 'old'], ['mode', 'nonsense']] });
    expect(later).toMatchObject({ cache: 'hit', rows: [{ p: 'old', mode: 'a' }] });
  });
});

describe('a cache hit in a process of its own (a run of the CLI)', () => {
  it('writes no served record when the one kept is under 30 s old, whichever process wrote it; one when it is older', async () => {
    await lib.run({ nameOrId: 'cached', params: [['p', 'each-run']] }); // a miss: computed, recorded as served
    await lib.settled(); // the record is written after the answer
    /** A run of the CLI: a library of its own on the same files, with nothing served in its memory. */
    const aRun = async (at: number) => {
      const other = libraryOf(lib.config, { clock: () => at });
      const markServed = vi.spyOn(other.cache, 'markServed');
      const answer = await other.run({ nameOrId: 'cached', params: [['p', 'each-run']] });
      await other.close();
      return { cache: answer.cache, wrote: markServed.mock.calls.map(([, record]) => record.servedAt) };
    };
    const servedAt = async () => (await lib.cache.entries()).find((e) => e.call.params.p === 'each-run')?.servedAt;
    const first = await servedAt();
    expect(first).toBe(now);
    expect(await aRun(now + 29_000)).toEqual({ cache: 'hit', wrote: [] });
    expect(await servedAt()).toBe(first);
    expect(await aRun(now + 30_000)).toEqual({ cache: 'hit', wrote: [now + 30_000] });
    expect(await servedAt()).toBe(now + 30_000);
    expect(await aRun(now + 31_000)).toEqual({ cache: 'hit', wrote: [] });
  });
});

describe('the one way in', () => {
  it('a library on another catalog and config is a value, not a module constant', async () => {
    const other = libraryOf({ ...lib.config, queryFolders: [] });
    await expect(other.run({ nameOrId: 'cached', params: [['p', 'x']] })).rejects.toThrow(/unknown query 'cached'/);
    await other.close();
  });
});

describe('the error family', () => {
  // An answer carries no stack (none is ever shown, and a refused request paid for the walk); a fault
  // that is not savedq's keeps its own, and the limit every other error is captured with is left as it was.
  it.each([
    ['InputError', () => new InputError('bad')],
    ['UnauthorizedError', () => new UnauthorizedError('unknown API key.')],
    ['InterruptedError', () => new InterruptedError('stopped')],
  ])('%s captures no frames', (name, make) => {
    const limit = Error.stackTraceLimit;
    const err = make();
    expect(err.stack).toBe(`${name}: ${err.message}`);
    expect(Error.stackTraceLimit).toBe(limit);
    expect(new Error('a fault').stack).toMatch(/\n\s+at /);
  });
});
