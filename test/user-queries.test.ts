import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { checkCommand } from '../src/commands/check.js';
import { DefinitionError, InputError } from '../src/errors.js';
import { startServer, type RunningServer } from '../src/http/server.js';
import { builtinQueriesDir } from '../src/package.js';
import { QueryCatalog } from '../src/queries/catalog.js';
import { AT, atOffset, captureIo, DAY, HOUR, load, MINUTE, tempDir, testLibrary, logInto, libraryOf, EVENT_DEADLINE_MS, runProgram , serveOptions } from './helpers.js';

/** The example queries savedq ships (sql/examples), run here like a user's own. */
const examples = fileURLToPath(new URL('../sql/examples/', import.meta.url));
const folder = join(tempDir(), 'queries');
mkdirSync(folder);
for (const f of readdirSync(examples)) copyFileSync(join(examples, f), join(folder, f));
const write = (name: string, text: string) => writeFileSync(join(folder, `${name}.sql`), text);

write(
  'types',
  `/*
description: Every parameter type, bound and returned.
params:
  s: { type: string, required: true }
  r: { type: regex, required: true }
  i: { type: integer, required: true }
  n: { type: number, required: true }
  b: { type: boolean, required: true }
  t: { type: timestamp, required: true }
  d: { type: date, required: true }
  l: { type: 'string[]', required: true }
  oi: { type: integer }
  on: { type: number }
  ob: { type: boolean }
  ot: { type: timestamp }
  od: { type: date }
  os: { type: string }
  ol: { type: 'string[]' }
  top: { type: integer, default: 2, min: 1 }
*/
SELECT
  toTypeName(@s) AS s_type, @s AS s, match('abc', @r) AS r_matches,
  toTypeName(@i) AS i_type, @i AS i, toTypeName(@n) AS n_type, @n AS n,
  toTypeName(@b) AS b_type, @b AS b, toTypeName(@t) AS t_type, @t AS t,
  toTypeName(@d) AS d_type, @d AS d, toTypeName(@l) AS l_type, @l AS l,
  toTypeName(@oi) AS oi_type, @oi AS oi, @on AS on_, @ob AS ob, @ot AS ot, @od AS od,
  toTypeName(@os) AS os_type, @os AS os, @ol AS ol,
  toTypeName(@top) AS top_type, @now AS now
FROM numbers(10)
LIMIT @top
`,
);
write('edited', '/*\ncache: 900\nwarm: 300\n*/\nSELECT 1 AS version\n');
write('echo', '/*\nparams:\n  s: { type: string, required: true }\ncache: 60\n*/\nSELECT @s AS s, length(@s) AS bytes\n');

const lib = testLibrary({ queries: [folder] });
const KEY = 'user-query-key';
let server: RunningServer;

/** Edge events of a project: `n` requests to a path with a status, `ago` ms before AT. */
function requests(project: string, path: string, status: number, n: number, ago: number, method = 'GET'): object[] {
  return Array.from({ length: n }, (_, i) => ({
    timestamp: atOffset(-ago - i),
    project,
    event_message: `${method} ${path}`,
    metadata: { request: { url: `https://${project}.example${path}`, path, method }, response: { status_code: status } },
  }));
}

beforeAll(async () => {
  await load(lib, 'edge_logs', [
    ...requests('shop', '/rest/v1/orders', 500, 5, 2 * HOUR),
    ...requests('shop', '/rest/v1/orders', 404, 3, 3 * HOUR, 'POST'),
    ...requests('shop', '/auth/v1/token', 401, 4, 26 * HOUR),
    ...requests('shop', '/rest/v1/orders', 200, 10, 30 * MINUTE),
    ...requests('shop', '/old', 500, 2, 10 * DAY),
    ...requests('other', '/rest/v1/orders', 500, 7, HOUR),
  ]);
  await load(
    lib,
    'function_edge_logs',
    [
      ...Array.from({ length: 20 }, (_, i) => ({ fn: 'slow', ms: 100 + i * 10, status: i < 2 ? 500 : 200 })),
      ...Array.from({ length: 20 }, (_, i) => ({ fn: 'fast', ms: 1 + i, status: 200 })),
      ...Array.from({ length: 3 }, () => ({ fn: 'rare', ms: 5000, status: 200 })),
    ].map((e, i) => ({
      timestamp: atOffset(-HOUR - i * 1000),
      event_message: 'invocation',
      metadata: { project_ref: 'shop', function_id: e.fn, execution_time_ms: e.ms, response: { status_code: e.status } },
    })),
  );
  server = await startServer(lib, serveOptions({ apiKeys: [KEY] }, { version: 'test', log: logInto() }));
});

afterAll(async () => {
  await server?.close();
});

const run = (nameOrId: string, params: Record<string, string>, at = AT) => lib.run({ nameOrId, params: Object.entries(params), at });

describe('a saved query of the user', () => {
  const all = { s: `it's "quoted"`, r: '^a.c$', i: '-42', n: '2.50', b: '0', t: '2026-03-10T14:34:56.789012+02:00', d: '2024-02-29', l: 'a, b,c' };

  it('binds every parameter type as a typed ClickHouse parameter, and gets typed values back', async () => {
    const { rows } = await run('types', all);
    expect(rows).toHaveLength(2); // LIMIT @top, its default
    expect(rows[0]).toEqual({
      s_type: 'String',
      s: `it's "quoted"`,
      r_matches: 1,
      i_type: 'Int64',
      i: -42,
      n_type: 'Float64',
      n: 2.5,
      b_type: 'Bool',
      b: false,
      t_type: "DateTime64(6, 'UTC')",
      t: '2026-03-10T12:34:56.789012Z',
      d_type: 'Date',
      d: '2024-02-29',
      l_type: 'Array(String)',
      l: ['a', 'b', 'c'],
      oi_type: 'Nullable(Int64)',
      oi: null,
      on_: null,
      ob: null,
      ot: null,
      od: null,
      os_type: 'String',
      os: '',
      ol: [],
      top_type: 'Int64',
      now: AT,
    });
  });

  it('binds optional values when given, and takes @now from --at', async () => {
    const { rows } = await run('types', { ...all, oi: '7', ob: 'true', od: '2026-01-31', ol: 'x', top: '1' }, '2026-01-02T03:04:05Z');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ oi: 7, ob: true, od: '2026-01-31', ol: ['x'], now: '2026-01-02T03:04:05.000000Z' });
  });

  it('refuses a value not of its type before anything runs', async () => {
    const query = vi.spyOn(await lib.warehouse(), 'query');
    await expect(run('types', { ...all, i: '4.2' })).rejects.toThrow(/invalid value "4.2" for parameter 'i': a base-10 integer/);
    await expect(run('types', { ...all, d: '2026-02-30' })).rejects.toThrow(/parameter 'd': a date YYYY-MM-DD/);
    await expect(run('types', { ...all, top: '0' })).rejects.toThrow(/parameter 'top': a base-10 integer at least 1/);
    await expect(run('types', { ...all, r: 'a(' })).rejects.toThrow(InputError);
    expect(query).not.toHaveBeenCalled();
    query.mockRestore();
  });

  it('checks a regular expression before anything runs, whatever the data: the bad one is never cached', async () => {
    const args = { project: '(unclosed', interval: 'daily' };
    await expect(run('usage.api-counts', args)).rejects.toThrow(/parameter 'project': not an RE2 regular expression \(missing closing \)/);
    expect((await lib.cache.entries()).filter((e) => e.call.params.project === '(unclosed')).toEqual([]);
  });
});

describe('the example queries', () => {
  it('errors.by-path: error responses per path, most first, for the days and method asked', async () => {
    const { rows } = await run('errors.by-path', { project: 'shop', days: '7' });
    expect(rows.map((r) => [r.path, r.errors, r.server_errors])).toEqual([
      ['/rest/v1/orders', 8, 5],
      ['/auth/v1/token', 4, 0],
    ]);
    expect((await run('errors.by-path', { project: 'shop', days: '30', method: 'POST' })).rows.map((r) => r.errors)).toEqual([3]);
    expect((await run('errors.by-path', { project: 'shop', days: '30', top: '1' })).rows).toHaveLength(1);
    await expect(run('errors.by-path', { project: 'shop', method: 'FETCH' })).rejects.toThrow(/parameter 'method': one of GET, POST/);
  });

  it('functions.slowest: functions by p95, leaving out rare ones', async () => {
    const { rows } = await run('functions.slowest', { project: 'shop', hours: '24' });
    expect(rows.map((r) => [r.function_id, r.invocations, r.p95_ms, r.error_rate])).toEqual([
      ['slow', 20, 290, 0.1],
      ['fast', 20, 20, 0],
    ]);
    const few = await run('functions.slowest', { project: 'shop', min_invocations: '1', slower_than_ms: '100.5' });
    expect(few.rows.map((r) => r.function_id)).toEqual(['rare', 'slow']);
  });

  it('status.classes-hourly: status classes per hour of several projects', async () => {
    const { rows } = await run('status.classes-hourly', { projects: 'shop,other' });
    const total = (key: string) => rows.reduce((sum, r) => sum + Number(r[key]), 0);
    expect([total('ok_2xx'), total('client_4xx'), total('server_5xx')]).toEqual([10, 3, 12]);
    expect(new Set(rows.map((r) => r.project))).toEqual(new Set(['shop', 'other']));
    const narrow = await run('status.classes-hourly', { projects: 'shop', from: atOffset(-4 * HOUR), to: atOffset(-HOUR) });
    expect(narrow.rows.map((r) => [r.server_5xx, r.client_4xx])).toEqual([
      [0, 3],
      [5, 0],
    ]);
  });

  it('traffic.daily: requests per day to URLs matching a pattern, errors only on request', async () => {
    const since = AT.slice(0, 10);
    const all = await run('traffic.daily', { url: '^https://shop\\.', since });
    expect(all.rows.map((r) => [r.day, r.requests, r.projects])).toEqual([[since, 18, 1]]);
    const errors = await run('traffic.daily', { url: 'shop|other', since: '2026-02-01', errors_only: 'true' });
    expect(errors.rows.map((r) => r.requests)).toEqual([2, 4, 15]);
  });
});

describe('the cache and an edited query', () => {
  it('never serves a result of the old text after an edit, and does not warm it', async () => {
    const call = { nameOrId: 'edited', params: [], at: AT } as const;
    expect((await lib.run(call)).cache).toBe('miss');
    expect((await lib.run(call)).cache).toBe('hit');
    write('edited', '/*\ncache: 900\nwarm: 300\n*/\nSELECT 2 AS version\n');
    const after = await lib.run(call);
    expect(after).toMatchObject({ cache: 'miss', rows: [{ version: 2 }] });
    await lib.settled(); // stored after its answer
    // Seen 400 s later, both results are old enough to warm, but only the one of today's text is.
    const later = libraryOf(lib.config, { clock: () => Date.now() + 400_000 });
    const stored = (await later.cache.entries()).filter((e) => e.call.query === after.query.id);
    expect(stored).toHaveLength(2);
    const due = (await later.dueForWarming()).filter((e) => e.call.query === after.query.id);
    expect(due.map((e) => e.call.digest)).toEqual([after.query.digest]);
    await later.close();
  });
});

describe('savedq check', () => {
  it('has the engine parse each query with its parameters bound, and names the file and line it refuses', async () => {
    const dir = join(tempDir(), 'team-queries');
    mkdirSync(dir);
    writeFileSync(join(dir, 'fine.sql'), '/*\nparams:\n  top: { type: integer, default: 5 }\n*/\nSELECT project FROM edge_logs LIMIT @top\n');
    writeFileSync(join(dir, 'typo.sql'), '/*\ndescription: a column that is not there\n*/\nSELECT project,\n  stauts_code\nFROM edge_logs\n');
    writeFileSync(join(dir, 'syntax.sql'), '/*\nparams:\n  p: { type: string }\n*/\nSELECT 1\nFROM edge_logs\nWHERE project = @p AND AND 1\n');
    writeFileSync(join(dir, 'header.sql'), '/*\nparams:\n  p: { type: strnig }\n*/\nSELECT @p\n');
    const team = libraryOf(lib.config, { queries: new QueryCatalog({ builtin: builtinQueriesDir, user: [dir] }) });
    const io = captureIo();
    await expect(checkCommand(team, {}, io)).rejects.toThrow(new DefinitionError('check: 4 ok, 3 broken.'));
    const out = io.out();
    expect(out).toMatch(/^ok {5}fine {2,}.*fine\.sql$/m);
    expect(out).toMatch(/^ok {5}logs\.all {2,}/m);
    expect(out).toMatch(/^error {2}.*typo\.sql:5: the engine refuses the query: .*stauts_code.* \(UNKNOWN_IDENTIFIER\)$/m);
    expect(out).toMatch(/^error {2}.*syntax\.sql:7: the engine cannot parse the query: Syntax error: failed at column 28 \(1\): 1\. Expected .* \(SYNTAX_ERROR\)$/m);
    expect(out).toMatch(/^error {2}.*header\.sql:3: unknown type 'strnig' in parameter 'p'\. Did you mean string\?/m);
    const json = captureIo();
    await expect(checkCommand(team, { format: 'json' }, json)).rejects.toThrow(DefinitionError);
    const report = JSON.parse(json.out()) as { name: string | null; ok: boolean; problems: { line: number }[] }[];
    expect(report.filter((r) => !r.ok).map((r) => r.problems[0]?.line).sort()).toEqual([3, 5, 7]);
    await team.close();
  });
});

describe('a user query over HTTP', () => {
  it('is in an OpenAPI document that redocly lint passes with its recommended rules, without a warning', async () => {
    const file = join(tempDir(), 'openapi.json');
    writeFileSync(file, await (await fetch(`${server.url}/openapi.json`)).text());
    const redocly = fileURLToPath(new URL('../node_modules/.bin/redocly', import.meta.url));
    const lint = await runProgram(redocly, ['lint', file, '--format=json'], {
      // No telemetry, no update check: tests talk to 127.0.0.1 only.
      env: { PATH: process.env.PATH ?? '', HOME: tempDir(), REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      timeoutMs: EVENT_DEADLINE_MS,
    });
    const report = JSON.parse(lint.stdout) as { totals: object; problems: { ruleId: string; message: string }[] };
    expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
    expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 });
    expect(lint.code).toBe(0);
  });

  it("is in an OpenAPI document that Stoplight Spectral's spectral:oas rules pass without a warning", async () => {
    const dir = tempDir();
    const file = join(dir, 'openapi.json');
    writeFileSync(file, await (await fetch(`${server.url}/openapi.json`)).text());
    writeFileSync(join(dir, '.spectral.yaml'), 'extends: ["spectral:oas"]\n');
    const spectral = fileURLToPath(new URL('../node_modules/.bin/spectral', import.meta.url));
    const lint = await runProgram(spectral, ['lint', file, '--ruleset', join(dir, '.spectral.yaml'), '--format', 'json', '--fail-severity', 'hint', '--quiet'], {
      env: { PATH: process.env.PATH ?? '', HOME: dir },
      timeoutMs: EVENT_DEADLINE_MS,
    });
    const results = JSON.parse(lint.stdout || '[]') as { code: string; message: string; path: string[] }[];
    expect(results.map((r) => `${r.code}: ${r.message} (${r.path.join('.')})`)).toEqual([]);
    expect(lint.code, lint.stderr).toBe(0);
  });

  const get = async (path: string) => {
    const res = await fetch(`${server.url}${path}`, { headers: { 'X-API-KEY': KEY } });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
  };

  it('answers by name and by id, with the cache headers of its definition', async () => {
    const byName = await get('/api/endpoints/query/errors.by-path?project=shop&days=7');
    expect(byName.status).toBe(200);
    expect(byName.headers.get('x-cache')).toBe('MISS');
    const id = (await lib.catalog.find('errors.by-path')).id;
    const byId = await get(`/api/endpoints/query/${id}?project=shop&days=7`);
    // The same entry: its rows and its run's statistics; now from the cache.
    expect(byName.body).toMatchObject({ cached: false });
    expect(byId).toMatchObject({ status: 200, body: { ...(byName.body as object), age_seconds: expect.any(Number), cached: true } });
    expect(byId.headers.get('x-cache')).toBe('HIT');
  });

  it('sends text beyond ASCII whole, its Content-Length in bytes, on a miss and on a hit', async () => {
    const text = 'héllo – ✓ 😀 ñ';
    for (const cache of ['MISS', 'HIT']) {
      const res = await fetch(`${server.url}/api/endpoints/query/echo?s=${encodeURIComponent(text)}`, { headers: { 'X-API-KEY': KEY } });
      const raw = Buffer.from(await res.arrayBuffer());
      expect(res.headers.get('x-cache')).toBe(cache);
      expect(res.headers.get('content-length')).toBe(String(raw.length));
      expect(JSON.parse(raw.toString('utf8'))).toMatchObject({ result: [{ s: text, bytes: Buffer.byteLength(text) }] });
    }
  });

  it('refuses a value not of its type with 400, naming the parameter', async () => {
    const r = await get('/api/endpoints/query/errors.by-path?project=shop&days=ninety');
    expect(r).toMatchObject({ status: 400, body: { error: { code: 'bad_request', message: expect.stringMatching(/parameter 'days': a base-10 integer from 1 to 90/) } } });
    const list = await get('/api/endpoints/query/status.classes-hourly?projects=shop,other&from=2026-03-10T00:00:00Z');
    expect(list.status).toBe(200);
  });

  it('describes its typed parameters and row fields in /openapi.json', async () => {
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
      paths: Record<string, { get: { parameters: { name: string; required: boolean; schema: object; style?: string; explode?: boolean }[]; responses: Record<string, unknown> } }>;
    };
    const id = (await lib.catalog.find('types')).id;
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/api/endpoints/query/types', `/api/endpoints/query/${id}`, '/api/endpoints/query/errors.by-path']));
    const params = Object.fromEntries(doc.paths['/api/endpoints/query/types']?.get.parameters.map((p) => [p.name, p]) ?? []);
    expect(params.i?.schema).toEqual({ type: 'integer', format: 'int64' });
    expect(params.top?.schema).toEqual({ type: 'integer', format: 'int64', minimum: 1, default: 2 });
    expect(params.n?.schema).toEqual({ type: 'number', format: 'double' });
    // As wide as what the server takes: 1 and 0 for a boolean, a timestamp with no zone.
    expect(params.b?.schema).toEqual({ type: 'string', enum: ['true', 'false', '1', '0'] });
    expect(params.t?.schema).toMatchObject({ type: 'string', pattern: expect.stringMatching(/^\^/) });
    expect(new RegExp((params.t?.schema as { pattern: string }).pattern).test('2026-11-20T12:00:00')).toBe(true);
    // The dates a ClickHouse Date holds, exactly: 1970-01-01 to 2149-06-06, a real day of its month.
    expect(params.d?.schema).toMatchObject({ type: 'string', format: 'date', pattern: expect.stringMatching(/^\^/) });
    const date = new RegExp((params.d?.schema as { pattern: string }).pattern);
    expect(['1970-01-01', '2149-06-06', '2024-02-29', '2000-02-29'].filter((d) => !date.test(d))).toEqual([]);
    expect(['1969-12-31', '2149-06-07', '2100-02-29', '2023-02-29', '2026-04-31'].filter((d) => date.test(d))).toEqual([]);
    // A required text may not be empty: empty is missing.
    expect(params.s?.schema).toEqual({ type: 'string', minLength: 1 });
    expect(params.l).toMatchObject({ style: 'form', explode: false, schema: { type: 'array', items: { type: 'string' } } });
    expect(params.s).toMatchObject({ required: true, schema: { type: 'string' } });
    const byPath = Object.fromEntries(doc.paths['/api/endpoints/query/errors.by-path']?.get.parameters.map((p) => [p.name, p.schema]) ?? []);
    expect(byPath.days).toEqual({ type: 'integer', format: 'int64', minimum: 1, maximum: 90, default: 7 });
    expect(byPath.method).toMatchObject({ enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] });
    const rows = doc.paths['/api/endpoints/query/errors.by-path']?.get.responses['200'] as {
      content: { 'application/json': { schema: { properties: { result: { items: { properties: Record<string, object> } } } } } };
    };
    expect(rows.content['application/json'].schema.properties.result.items.properties).toEqual({
      path: { type: 'string', description: 'Request path.' },
      errors: { type: 'integer', description: 'Responses with status 400 or more.' },
      server_errors: { type: 'integer', description: 'Of which status 500 or more.' },
      last_seen: { type: 'string', format: 'date-time', description: 'The latest of them.' },
    });
  });
});
