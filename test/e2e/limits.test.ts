import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, LONG_TEST_MS, startServe, tempDir } from '../helpers.js';
import { startStandin, type Standin } from '../standin.js';

// A definition's `limits:` (CONTRACT §18) hold its answer's statement, and nothing of savedq's own (the
// engine's check of its plan); a run under a limit answers or names the limit, and what it wrote before
// it failed never reaches the next statement. On the embedded engine and on a server alike.

const dir = tempDir('savedq-limits-');
const queries = join(dir, 'queries');
let host: Standin;

const QUERY = (header: string, sql: string) => `/*\ndescription: for the limits' tests.\n${header}*/\n${sql}\n`;

beforeAll(async () => {
  mkdirSync(queries);
  // One row of a few bytes under a limit of 300 bytes of result: the engine's own check prints more.
  writeFileSync(join(queries, 'small.sql'), QUERY('limits:\n  result_bytes: 300\n', 'SELECT 1 AS one, \'a\' AS letter'));
  // A thousand rows of 100 bytes: past the limit, after its first rows are written.
  writeFileSync(join(queries, 'big.sql'), QUERY('limits:\n  result_bytes: 300\n', "SELECT number AS n, repeat('x', 100) AS pad FROM numbers(1000) SETTINGS max_block_size = 10"));
  // Fails after its first rows, with no limit of its own.
  writeFileSync(join(queries, 'fails.sql'), QUERY('', "SELECT number AS n, throwIf(number = 500, 'stopped half-way') AS t FROM numbers(900) SETTINGS max_block_size = 100, max_threads = 1"));
  host = await startStandin(join(dir, 'host'));
}, LONG_TEST_MS);
afterAll(async () => {
  await host.stop();
});

const warehouses = [
  ['the embedded engine', () => ({ SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'embedded.sqlite'), SAVEDQ_QUERIES: queries })],
  ['a server', () => ({ SAVEDQ_CLICKHOUSE_URL: host.url, SAVEDQ_DATA_DIR: join(dir, 'unused'), SAVEDQ_CACHE_FILE: join(dir, 'server.sqlite'), SAVEDQ_QUERIES: queries })],
] as const;

describe.each(warehouses)('a definition’s limits on %s', (_, envOf) => {
  it('hold its answer alone: a one-row answer under result_bytes 300 is checked ok and answers; a longer one names its limit', async () => {
    const env = envOf();
    const checked = await cli(['check'], { env });
    expect(checked.code, checked.stdout + checked.stderr).toBe(0);
    expect(checked.stdout).toMatch(/^ok +small /m);
    const small = await cli(['run', 'small', '-f', 'json'], { env });
    expect([small.code, small.stdout, small.stderr]).toEqual([0, '[\n{"one":1,"letter":"a"}\n]\n', '']);
    const big = await cli(['run', 'big', '-f', 'json'], { env });
    expect([big.code, big.stderr]).toEqual([2, 'savedq: big passed its limit of 300 bytes of result (limits: result_bytes in its definition).\n']);
  }, LONG_TEST_MS);

  it('never hands what a failed statement wrote to the next: serve answers the next call whole', async () => {
    const serve = await startServe({ ...envOf(), SAVEDQ_API_KEYS: 'key' });
    try {
      const ask = async (name: string) => {
        const answer = await fetch(`${serve.url}/api/endpoints/query/${name}`, { headers: { 'X-API-KEY': 'key' } });
        return [answer.status, ((await answer.json()) as { result?: unknown[]; error?: { message: string } })] as const;
      };
      for (const failing of ['big', 'fails', 'big']) {
        const [status, body] = await ask(failing);
        expect(status, JSON.stringify(body)).toBe(failing === 'big' ? 400 : 502);
        const [after, next] = await ask('small');
        expect([after, next.result], `after ${failing}: ${JSON.stringify(next)}`).toEqual([200, [{ one: 1, letter: 'a' }]]);
      }
    } finally {
      serve.child.kill('SIGTERM');
      await serve.exited;
    }
  }, LONG_TEST_MS);
});
