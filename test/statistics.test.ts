import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueryTimeoutError } from '../src/errors.js';
import { startServer, type RunningServer } from '../src/http/server.js';
import { cli, EVENT_DEADLINE_MS, inTerminal, LONG_TEST_MS, load, logInto, NO_CONFIG, runProgram, savedqCommandLine, serveOptions, tempDir, testLibrary } from './helpers.js';
import { has } from './system.js';

// Every answer says whether it is whole, how old it is and what it cost (docs/serve.md), on every
// surface: the HTTP envelope, MCP, run --stats, /metrics, savedq test.
const dir = tempDir();
const folder = join(dir, 'queries');
mkdirSync(folder, { recursive: true });
const numbers = (rows: number, maxRows: number) => `/*\nfields:\n  n: { type: integer }\nmax_rows: ${maxRows}\ncache: 60\n*/\nSELECT number AS n FROM system.numbers LIMIT ${rows}\n`;
writeFileSync(join(folder, 'stats.five.sql'), numbers(5, 3));
writeFileSync(join(folder, 'stats.three.sql'), numbers(3, 3));
writeFileSync(join(folder, 'stats.none.sql'), numbers(0, 3));
// A scan of the whole table: the engine reads every row loaded, a figure known here.
writeFileSync(join(folder, 'stats.scan.sql'), '/*\nfields:\n  chars: { type: integer }\ncache: 60\n*/\nSELECT sum(length(event_message)) AS chars FROM edge_logs\n');
writeFileSync(join(folder, 'stats.slow.sql'), '/*\ntimeout: 1\n*/\nSELECT count() AS n FROM numbers(100000000000)\n');
writeFileSync(join(folder, 'stats.bounded.sql'), '/*\ntimeout: 100\n*/\nSELECT count() AS n FROM numbers(100000000000)\n');
const LOADED = 37;

let now = Date.now();
const lib = testLibrary({ queries: [folder], clock: () => now });
let server: RunningServer;
const KEY = 'k';

beforeAll(async () => {
  await load(lib, 'edge_logs', Array.from({ length: LOADED }, (_, i) => ({ timestamp: new Date(now - 60_000).toISOString(), project: 'stats', event_message: `message ${i}` })));
  server = await startServer(lib, serveOptions({ apiKeys: [KEY] }, { version: 'test', log: logInto() }));
});
afterAll(async () => {
  await server?.close();
});

const get = async (name: string) => {
  const res = await fetch(`${server.url}/api/endpoints/query/${name}`, { headers: { 'X-API-KEY': KEY } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

describe('an answer', () => {
  it('says truncated: true with max_rows rows over more, false over exactly max_rows, over HTTP', async () => {
    expect((await get('stats.five')).body).toMatchObject({ result: [{ n: 0 }, { n: 1 }, { n: 2 }], truncated: true });
    expect((await get('stats.three')).body).toMatchObject({ result: [{ n: 0 }, { n: 1 }, { n: 2 }], truncated: false });
  });

  it.each([
    ['stats.three', '{"result":[\n{"n":0},\n{"n":1},\n{"n":2}\n],"version":1,"truncated":false,"cached":'],
    ['stats.none', '{"result":[],"version":1,"truncated":false,"cached":'],
  ])('%s reads as curl shows it: a row a line, the envelope going on after the closing bracket', async (name, start) => {
    const text = await (await fetch(`${server.url}/api/endpoints/query/${name}`, { headers: { 'X-API-KEY': KEY } })).text();
    expect(text.startsWith(start)).toBe(true);
    // The facts in the order every answer says them (calls/answer.ts), as MCP's result does.
    expect(text).toMatch(/"cached":(true|false),"age_seconds":\d+,"statistics":\{"elapsed":[\d.e-]+,"rows_read":\d+,"bytes_read":\d+\}\}$/);
  });

  it("carries the engine's own figures: a scan of the table reads every row loaded", async () => {
    const { body } = await get('stats.scan');
    expect(body.statistics).toEqual({ elapsed: expect.any(Number), rows_read: LOADED, bytes_read: expect.any(Number) });
    const { elapsed, bytes_read } = body.statistics as { elapsed: number; bytes_read: number };
    expect(elapsed).toBeGreaterThan(0);
    expect(bytes_read).toBeGreaterThan(0);
  });

  it("from the cache grows older with the clock and keeps its run's statistics", async () => {
    now += 1_000;
    const first = (await get('stats.three')).body;
    expect(first).toMatchObject({ cached: true, age_seconds: 1 });
    now += 5_000;
    const later = (await get('stats.three')).body;
    expect(later).toMatchObject({ cached: true, age_seconds: 6, statistics: first.statistics });
  });

  it('is counted in /metrics once a run, not once a cache hit', async () => {
    const read = async () => Number(/savedq_rows_read_total\{query="stats.scan"\} (\d+)/.exec(await (await fetch(`${server.url}/metrics`, { headers: { 'X-API-KEY': KEY } })).text())?.[1] ?? 0);
    const before = await read();
    await fetch(`${server.url}/api/endpoints/query/stats.scan`, { headers: { 'X-API-KEY': KEY, 'Cache-Control': 'no-cache' } });
    await get('stats.scan');
    await get('stats.scan');
    expect(await read()).toBe(before + LOADED);
    expect(await (await fetch(`${server.url}/metrics`, { headers: { 'X-API-KEY': KEY } })).text()).toMatch(/savedq_bytes_read_total\{query="stats.scan"\} [1-9]/);
  });

  it('says the same to an agent', async () => {
    const client = new Client({ name: 'savedq-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${KEY}` } } }));
    try {
      const five = (await client.callTool({ name: 'stats_five', arguments: {} })) as CallToolResult;
      expect(five.structuredContent).toMatchObject({ rows: [{ n: 0 }, { n: 1 }, { n: 2 }], truncated: true, statistics: { rows_read: expect.any(Number) } });
      const scan = (await client.callTool({ name: 'stats_scan', arguments: {} })) as CallToolResult;
      expect(scan.structuredContent).toMatchObject({ cached: true, statistics: { rows_read: LOADED } });
    } finally {
      await client.close();
    }
  });
});

describe('a query of its own timeout', () => {
  it('stops its runs there, below the global --timeout, naming the query and its limit (504)', async () => {
    const err = await lib.run({ nameOrId: 'stats.slow', params: [] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(QueryTimeoutError);
    expect((err as QueryTimeoutError).forCaller).toBe('stats.slow ran past its time limit of 1 s (its own timeout).');
    const res = await get('stats.slow');
    expect(res).toEqual({ status: 504, body: { error: { code: 'timeout', message: 'stats.slow ran past its time limit of 1 s (its own timeout).' } } });
  });

  it('never above --timeout: exit 1, naming the global limit', async () => {
    const env = { XDG_CONFIG_HOME: NO_CONFIG, SAVEDQ_DATA_DIR: join(dir, 'cli-data'), SAVEDQ_CACHE_FILE: join(dir, 'cli.sqlite') };
    const r = await cli(['--queries', folder, '--timeout', '0.5', 'run', 'stats.bounded'], { env });
    expect([r.code, r.stderr]).toEqual([1, expect.stringMatching(/^savedq: stats\.bounded ran past its time limit of 0\.5 s \(--timeout\) on the embedded engine at \S+\.\n$/)]);
  });
});

describe('on the command line', () => {
  const env = { XDG_CONFIG_HOME: NO_CONFIG, SAVEDQ_DATA_DIR: join(dir, 'cli-data'), SAVEDQ_CACHE_FILE: join(dir, 'cli.sqlite') };

  it('--stats writes one line on standard error after the answer; standard output stays the rows', async () => {
    const piped = await cli(['--queries', folder, 'run', 'stats.five', '-f', 'json'], { env });
    expect([piped.stdout, piped.stderr]).toEqual(['[\n{"n":0},\n{"n":1},\n{"n":2}\n]\n', '']);
    const stats = await cli(['--queries', folder, 'run', 'stats.five', '-f', 'json', '--stats'], { env });
    expect(stats.stdout).toBe(piped.stdout);
    expect(stats.stderr).toMatch(/^wrote only the first 3 rows: the query has more \(max_rows 3\); every row:\n {2}savedq export stats\.five\n3 rows \(truncated at max_rows 3\) · cached \d+ s ago · \d+\.\d{3} s · read [\d,]+ rows?, [\d.]+ k?B · version 1\n$/);
    const whole = await cli(['--queries', folder, 'run', 'stats.three', '-f', 'csv', '--stats', '--no-cache'], { env });
    expect([whole.stdout, whole.stderr]).toEqual(['n\r\n0\r\n1\r\n2\r\n', expect.stringMatching(/^3 rows · computed now · \d+\.\d{3} s · read [\d,]+ rows?, [\d.]+ k?B · version 1\n$/)]);
  });

  it.runIf(has.script)('says a cut answer in a terminal without being asked, and when the rows go to a file or a pipe from one', async () => {
    const shown = await inTerminal(['--queries', folder, 'run', 'stats.five'], { env });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^showing the first 3 rows: the query has more \(max_rows 3\); every row:\n {2}savedq export stats\.five$/m);
    const piped = await inTerminal(['--queries', folder, 'run', 'stats.five', '-f', 'csv'], { env, piped: true });
    expect(piped.stdout).toMatch(/^wrote only the first 3 rows: the query has more \(max_rows 3\); every row:\n {2}savedq export stats\.five$/m);
    const file = join(dir, 'five.csv');
    const written = await runProgram('script', ['-qec', `${savedqCommandLine(['--queries', folder, 'run', 'stats.five', '-f', 'csv'])} > ${file}`, '/dev/null'], { env: { PATH: process.env.PATH ?? '', ...env }, timeoutMs: EVENT_DEADLINE_MS });
    expect(written.stdout.replace(/\r/g, '')).toMatch(/^wrote only the first 3 rows: the query has more \(max_rows 3\); every row:\n {2}savedq export stats\.five\n/);
    expect(readFileSync(file, 'utf8')).toBe('n\r\n0\r\n1\r\n2\r\n');
  });

  it('savedq test expects truncated, and says when it is not as expected', async () => {
    const spec = 'at: 2026-11-20T12:00:00Z\ncases:\n  - name: cut\n    truncated: true\n  - name: whole\n    truncated: false\n';
    writeFileSync(join(folder, 'stats.five.test.yaml'), spec);
    const r = await cli(['--queries', folder, 'test', 'stats.five'], { env });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^ok +stats\.five +cut/m);
    expect(r.stdout).toMatch(/^FAIL +stats\.five +whole/m);
    expect(r.stdout).toMatch(/more rows than its max_rows, where truncated: false was expected/);
  });
});

describe('the OpenAPI document', () => {
  it('lets a generated client (openapi-typescript) read statistics.rows_read with no cast', async () => {
    const doc = join(dir, 'openapi.json');
    writeFileSync(doc, await (await fetch(`${server.url}/openapi.json`)).text());
    const bin = fileURLToPath(new URL('../node_modules/.bin/', import.meta.url));
    const made = await runProgram(join(bin, 'openapi-typescript'), [doc, '-o', join(dir, 'api.d.ts')], { timeoutMs: LONG_TEST_MS });
    expect(made.code, made.stderr).toBe(0);
    writeFileSync(
      join(dir, 'client.ts'),
      `import type { paths } from './api';
type Answer = paths['/api/endpoints/query/stats.scan']['get']['responses'][200]['content']['application/json'];
export const rowsRead = (a: Answer): number => a.statistics.rows_read + (a.truncated ? 0 : 0) + a.age_seconds;
export const chars = (a: Answer): number | undefined => a.result[0]?.chars;
`,
    );
    const checked = await runProgram(join(bin, 'tsc'), ['--ignoreConfig', '--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext', join(dir, 'client.ts')], { timeoutMs: LONG_TEST_MS });
    expect(checked.code, checked.stdout).toBe(0);
  }, LONG_TEST_MS);
});
