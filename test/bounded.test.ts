import { mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pruneMemo } from '../src/queries/memo.js';
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
      const remembered = readdirSync(join(dir, 'cache', 'definitions')).map((f) => readFileSync(join(dir, 'cache', 'definitions', f), 'utf8'));
      expect(remembered.filter((text) => text.includes('"pattern:'))).toEqual([]);
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  });
});

describe('what the catalog remembers', () => {
  it('is pruned by age, then to the newest files past a count', () => {
    const memo = join(dir, 'memo');
    mkdirSync(memo);
    const now = Date.now();
    for (let i = 0; i < 10; i++) {
      const file = join(memo, `m${i}.json`);
      writeFileSync(file, '{}');
      const at = (now - i * 60_000) / 1000; // m0 the newest
      utimesSync(file, at, at);
    }
    expect(pruneMemo(memo, 8.5 * 60_000, 3, now)).toBe(7);
    expect(readdirSync(memo).sort()).toEqual(['m0.json', 'm1.json', 'm2.json']);
  });
});
