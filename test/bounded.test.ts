import { existsSync, mkdirSync, readdirSync, rmSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SizedCache } from '../src/bounded.js';
import { memoDirOf, pruneMemo } from '../src/store/memo.js';
import { cli, startServe, tempDir } from './helpers.js';

// Everything savedq writes stays bounded whichever surface a call comes through: the cache by
// --cache-max-mb after every result stored, what it remembers by count, and nothing a file per value
// a caller sends.
const dir = tempDir();
const queries = join(dir, 'queries');
mkdirSync(queries);
// About 600 KB of rows a call: two of them pass a bound of 1 MB.
writeFileSync(
  join(queries, 'wide.rows.sql'),
  "/*\nparams:\n  n: { type: integer, required: true }\n  pattern: { type: regex }\ncache: 900\nfields:\n  n: { type: integer }\n  pad: { type: string }\n*/\nSELECT @n + number AS n, repeat('x', 1200) AS pad FROM numbers(500) WHERE match('x', @pattern)\n",
);
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'cache', 'results.sqlite'), SAVEDQ_QUERIES: queries, SAVEDQ_API_KEYS: 'k', SAVEDQ_CACHE_MAX_MB: '1' };

describe('what serve writes', () => {
  it('keeps the cache within --cache-max-mb after every answer it stores, and no file for a pattern a caller sends', async () => {
    const server = await startServe(env);
    try {
      for (let n = 0; n < 8; n++) {
        const res = await fetch(`${server.url}/api/endpoints/query/wide.rows?n=${n}&pattern=${encodeURIComponent(`x|caller-${n}`)}`, { headers: { 'X-API-KEY': 'k' } });
        expect(res.status).toBe(200);
        expect(res.headers.get('x-cache')).toBe('MISS');
        await res.arrayBuffer();
      }
      const listed = JSON.parse((await cli(['cache', 'list', '-f', 'json'], { env })).stdout) as unknown[];
      expect(listed.length).toBeLessThanOrEqual(2);
      const memo = memoDirOf(env.SAVEDQ_CACHE_FILE);
      const remembered = readdirSync(memo).map((f) => readFileSync(join(memo, f), 'utf8'));
      expect(remembered.length).toBeGreaterThan(0);
      expect(remembered.filter((text) => text.includes('"pattern:'))).toEqual([]);
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  });
});

describe('what the catalog remembers', () => {
  it('is pruned by age, then to the newest files past a count, and only its own files', () => {
    const cacheFile = join(dir, 'pruned.sqlite');
    const memo = memoDirOf(cacheFile);
    mkdirSync(memo);
    const now = Date.now();
    const files = [...Array.from({ length: 10 }, (_, i) => `m${i}-x.json`), 'old-notes.txt', 'readme.json', 'm9-x.json.123.tmp'];
    for (const [i, name] of files.entries()) {
      const file = join(memo, name);
      writeFileSync(file, '{}');
      const at = (now - i * 60_000) / 1000; // m0 the newest
      utimesSync(file, at, at);
    }
    expect(pruneMemo(cacheFile, 8.5 * 60_000, 3, now)).toBe(8);
    expect(readdirSync(memo).sort()).toEqual(['m0-x.json', 'm1-x.json', 'm2-x.json', 'old-notes.txt', 'readme.json']);
  });

  it('writes nothing beside a cache file that is a folder', async () => {
    const folder = join(dir, 'a-folder');
    mkdirSync(folder);
    const r = await cli(['run', 'wide.rows', '-p', 'n=1', '-f', 'json'], { env: { ...env, SAVEDQ_CACHE_FILE: folder } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/is a folder, not a file/);
    expect(readdirSync(dir)).not.toContain('a-folder-definitions');
    expect(readdirSync(dir)).not.toContain('definitions');
  });

  it.each(['/dev/null', '/dev/zero'])('writes nothing beside a device given as the cache file (%s), whoever runs it', async (device) => {
    const r = await cli(['run', 'wide.rows', '-p', 'n=1', '-f', 'json'], { env: { ...env, SAVEDQ_CACHE_FILE: device } });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toHaveLength(500);
    expect(r.stderr).toMatch(/is a device or a pipe, not a file/);
    // The tests run as root in CI, who could write there (and a broken build's folder is taken away).
    const made = existsSync(memoDirOf(device));
    rmSync(memoDirOf(device), { recursive: true, force: true });
    expect(made).toBe(false);
  });
});

describe('SizedCache', () => {
  it('keeps at most its entries and its size, the least recently used going first, a read making one recent; one too large is not kept', () => {
    const cache = new SizedCache<string, string>(3, 10, (v) => v.length);
    cache.set('a', 'aaaa');
    cache.set('b', 'bbbb');
    expect(cache.get('a')).toBe('aaaa');
    // Past the size: b, read least lately, goes.
    cache.set('c', 'cccc');
    expect([cache.get('a'), cache.get('b'), cache.get('c'), cache.size]).toEqual(['aaaa', undefined, 'cccc', 8]);
    // Past the entries: a (read before c) goes.
    cache.set('d', 'd');
    cache.set('e', 'e');
    expect([cache.get('a'), cache.size]).toEqual([undefined, 6]);
    // Set again: its size counted once, as it is now.
    cache.set('c', 'cc');
    expect(cache.size).toBe(4);
    // Larger than the whole: not kept, and what it replaced is gone.
    cache.set('c', 'x'.repeat(11));
    expect([cache.get('c'), cache.size]).toEqual([undefined, 2]);
    cache.clear();
    expect([cache.get('d'), cache.size]).toEqual([undefined, 0]);
  });
});
