import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretKeys, signToken } from '../src/access/tokens.js';
import { BadSqlError, ForbiddenError, SandboxDisabledError, SandboxRefusedError } from '../src/errors.js';
import { startServer, type RunningServer } from '../src/http/server.js';
import { readDefinition } from '../src/queries/definition.js';
import { functionDecisions } from '../src/sandbox/check.js';
import { sandboxSettings } from '../src/queries/run.js';
import { examplesDir } from '../src/package.js';
import { cli, load, logInto, NO_CONFIG, tempDir, testLibrary , serveOptions } from './helpers.js';

// A caller's own SQL over a saved query's answer, and nothing beyond it (docs/sandboxing.md): the check on
// the engine's parse, the second wall under it, and every surface that takes SQL.
const dir = tempDir();
const folder = join(dir, 'queries');
mkdirSync(folder, { recursive: true });
/** A sandboxed query: one project's requests by status and path. */
writeFileSync(
  join(folder, 'sb.requests.sql'),
  `/*
description: Requests of one project by status and path.
params:
  project: { type: string, required: true }
fields:
  status_code: { type: integer }
  path: { type: string }
  n: { type: integer }
cache: 300
warm: 60
sandbox: true
*/
SELECT status_code, request_path AS path, count() AS n
FROM edge_logs
WHERE project = @project
GROUP BY status_code, path
ORDER BY n DESC, path -- a comment at the very end
`,
);
let now = Date.now();
const lib = testLibrary({ queries: [folder], clock: () => now });
const SECRET = 'a-sandbox-token-secret-of-forty-bytes-012';
let server: RunningServer;
const logLines: string[] = [];

const edge = (project: string, path: string, status: number) => ({
  timestamp: new Date(Date.now() - 3_600_000).toISOString(),
  project,
  metadata: { request: { method: 'GET', url: `https://${project}.example${path}`, path }, response: { status_code: status } },
});

beforeAll(async () => {
  await load(lib, 'edge_logs', [
    ...Array.from({ length: 3 }, () => edge('sb-a', '/a', 200)),
    ...Array.from({ length: 2 }, () => edge('sb-a', '/b', 500)),
    ...Array.from({ length: 4 }, () => edge('sb-b', '/secret', 200)),
  ]);
  server = await startServer(lib, serveOptions({ apiKeys: ['k'], tokenSecrets: [SECRET] }, { version: 'test', log: logInto(logLines) }));
});
afterAll(async () => {
  await server?.close();
});

const run = (sql: string | undefined, params: Record<string, string> = { project: 'sb-a' }) => lib.run({ nameOrId: 'sb.requests', params: Object.entries(params), sql });
const refusal = async (sql: string): Promise<Error> => {
  try {
    await run(sql);
  } catch (err) {
    return err as Error;
  }
  throw new Error(`not refused: ${sql}`);
};

describe('a sandboxed saved query', () => {
  it('says so in its header (sandbox: true), which no built-in does; a parameter may not be named sql', async () => {
    const scan = await lib.savedQueries();
    expect(scan.queries.find((q) => q.name === 'sb.requests')?.sandbox).toBe(true);
    expect(scan.queries.filter((q) => q.builtin).map((q) => q.sandbox)).toEqual([false, false, false]);
    const wrong = readDefinition(join(dir, 'wrong.sql'), '/*\nsandbox: maybe\n*/\nSELECT 1', 'wrong', false);
    expect(JSON.stringify(wrong)).toMatch(/sandbox/);
    const reserved = readDefinition(join(dir, 'reserved.sql'), '/*\nparams:\n  sql: {}\n*/\nSELECT @sql', 'reserved', false);
    expect(JSON.stringify(reserved)).toMatch(/'sql' is reserved/);
  });

  it("answers a caller's SELECT over its answer, the table result, with the query's own LIMIT and comment intact", async () => {
    const whole = await run(undefined);
    expect(whole.rows).toEqual([
      { status_code: 200, path: '/a', n: 3 },
      { status_code: 500, path: '/b', n: 2 },
    ]);
    const grouped = await run('SELECT status_code >= 500 AS failed, sum(n) AS requests FROM result GROUP BY failed ORDER BY failed');
    expect(grouped.rows).toEqual([
      { failed: 0, requests: 3 },
      { failed: 1, requests: 2 },
    ]);
    expect(grouped.fields).toEqual([]);
    // Its own WITH, a JOIN and UNION ALL of its own, all over result.
    const own = await run('WITH busy AS (SELECT path FROM result WHERE n > 2) SELECT r.path, r.n FROM result AS r INNER JOIN busy USING (path) UNION ALL SELECT \'total\', sum(n) FROM result');
    expect(own.rows).toEqual(expect.arrayContaining([{ path: '/a', n: 3 }, { path: 'total', n: 5 }]));
  });

  it('caches an answer by the SQL as the engine spells it: spacing, keyword case and comments make no new entry', async () => {
    const first = await run('SELECT count() AS paths FROM result');
    expect(first.cache).toBe('miss');
    const again = await run('select   count()   as paths\nfrom result -- the same question');
    expect([again.cache, again.rows]).toEqual(['hit', first.rows]);
    expect((await run('SELECT count() AS paths FROM result WHERE n > 2')).cache).toBe('miss');
    // Never warmed: once all are old enough, warm refreshes the query's own answer, and no answer to SQL.
    await run(undefined);
    expect((await lib.cachedCalls()).filter((e) => e.sql !== undefined).length).toBeGreaterThan(1);
    now += 120_000;
    const warmed = await lib.warm();
    expect(warmed.map((o) => o.call.sql)).toEqual([undefined]);
  });

  it("applies the parameters first: no SQL reaches a row the query would not return for them", async () => {
    const everything = await run("SELECT groupArray(path) AS paths FROM result", { project: 'sb-a' });
    expect(everything.rows).toEqual([{ paths: ['/a', '/b'] }]);
    // The caller's own WITH names, over result; one used outside its WITH is the engine's error, read nowhere.
    expect((await run('WITH mine AS (SELECT * FROM result) SELECT count() AS n FROM mine')).rows).toEqual([{ n: 2 }]);
    expect(await refusal('SELECT * FROM (WITH mine AS (SELECT 1) SELECT 1) AS a, mine')).toBeInstanceOf(BadSqlError);
  });

  it('refuses SQL for a query that is not sandboxed, and says what went wrong in the engine as bad_sql', async () => {
    await expect(lib.run({ nameOrId: 'logs.all', params: [['project', 'sb-a']], sql: 'SELECT 1' })).rejects.toThrow(SandboxDisabledError);
    const bad = await refusal('SELECT nope FROM result');
    expect(bad).toBeInstanceOf(BadSqlError);
    expect(bad.message).toMatch(/nope/);
    expect(bad.message).not.toMatch(/\/tmp|edge_logs/);
    expect(await refusal('SELECT (')).toBeInstanceOf(BadSqlError);
    expect(await refusal('  ')).toBeInstanceOf(BadSqlError);
    const long = await refusal(`SELECT ${'1 + '.repeat(6000)}1 FROM result`);
    expect([long.constructor, long.message]).toEqual([SandboxRefusedError, expect.stringMatching(/16 KiB/)]);
    // 16 KiB exactly is taken.
    const edge = `SELECT count() AS n FROM result WHERE path != '${'x'.repeat(16 * 1024 - 48)}'`;
    expect(Buffer.byteLength(edge)).toBe(16 * 1024);
    expect((await run(edge)).rows).toEqual([{ n: 2 }]);
  });

  it('lets a token send SQL only when it was made with --sql, and applies its fixed parameters first', async () => {
    const caller = (sql: boolean) => ({ kind: 'token' as const, name: 't', quoted: '"t"', scopes: [{ query: 'sb.*', fixed_params: { project: 'sb-a' } }], ...(sql ? { sql: true } : {}) });
    await expect(lib.run({ nameOrId: 'sb.requests', params: [], sql: 'SELECT 1 FROM result', caller: caller(false) })).rejects.toThrow(ForbiddenError);
    const answer = await lib.run({ nameOrId: 'sb.requests', params: [], sql: 'SELECT sum(n) AS n FROM result', caller: caller(true) });
    expect(answer.rows).toEqual([{ n: 5 }]);
    await expect(lib.run({ nameOrId: 'sb.requests', params: [['project', 'sb-b']], sql: 'SELECT sum(n) AS n FROM result', caller: caller(true) })).rejects.toThrow(ForbiddenError);
  });
});

/** Every table function the engine knows, each a way out. */
const tableFunctions = await (async () => (await (await lib.warehouse()).query('SELECT name FROM system.table_functions ORDER BY name', {})).map((r) => String(r.name)))();
const tables = ['system.tables', 'system.one', 'system.settings', 'information_schema.tables', 'INFORMATION_SCHEMA.COLUMNS', 'edge_logs', 'function_edge_logs', 'default.edge_logs', '`default`.`edge_logs`', '"edge_logs"', 'default.result', 'system.query_log', 'system.text_log'];
/** A table function's call as the parser takes it: the view functions take a query. */
const CALLS: Record<string, string> = {
  view: 'view(SELECT * FROM edge_logs)',
  viewIfPermitted: "viewIfPermitted(SELECT * FROM edge_logs ELSE null('x UInt8'))",
  viewExplain: "viewExplain('EXPLAIN', '', (SELECT * FROM edge_logs))",
};
const callOf = (f: string) => CALLS[f] ?? `${f}('x')`;
/** [what it tries, the SQL]: refused, each one. */
const ESCAPES: [string, string][] = [
  ...tableFunctions.map((f): [string, string] => [`table function ${f} in FROM`, `SELECT * FROM ${callOf(f)}`]),
  ...['file', 'url', 'remote', 's3', 'numbers', 'executable', 'mysql', 'input', 'format', 'generateRandom', 'clusterAllReplicas', 'merge', 'dictionary', 'view'].flatMap((f): [string, string][] => [
    [`${f} in a JOIN`, `SELECT * FROM result AS r JOIN ${callOf(f)} AS t ON 1 = 1`],
    [`${f} in IN`, `SELECT * FROM result WHERE path IN (SELECT * FROM ${callOf(f)})`],
    [`${f} in a scalar subquery`, `SELECT (SELECT count() FROM ${callOf(f)}) AS n FROM result`],
    [`${f} in a WITH`, `WITH t AS (SELECT * FROM ${callOf(f)}) SELECT * FROM t`],
  ]),
  ...tables.flatMap((t): [string, string][] => [
    [`${t} in FROM`, `SELECT * FROM ${t}`],
    [`${t} in a JOIN`, `SELECT * FROM result JOIN ${t} USING (path)`],
    [`${t} as IN's table`, `SELECT * FROM result WHERE path IN ${t}`],
    [`${t} in IN's subquery`, `SELECT * FROM result WHERE path IN (SELECT path FROM ${t})`],
    [`${t} in a scalar subquery`, `SELECT (SELECT count() FROM ${t}) AS n FROM result`],
    [`${t} in a WITH`, `WITH w AS (SELECT * FROM ${t}) SELECT * FROM w`],
    [`${t} in EXISTS`, `SELECT * FROM result WHERE EXISTS (SELECT 1 FROM ${t})`],
    [`${t} in UNION ALL`, `SELECT path FROM result UNION ALL SELECT name FROM ${t}`],
  ]),
  ...['dictGet', 'dictGetString', 'dictHas', 'joinGet', 'hasColumnInTable', 'getSetting', 'getServerSetting', 'currentUser', 'currentDatabase', 'hostName', 'FQDN', 'version', 'uptime', 'getMacro', 'file', 'filesystemAvailable', 'sleep', 'sleepEachRow', 'serverUUID', 'tcpPort', 'catboostEvaluate', 'regionToName', 'addressToLine', 'initialQueryID', 'queryID', 'globalIn', 'transactionID', 'getClientHTTPHeader', 'shardNum', 'blockNumber'].map((f): [string, string] => [`the function ${f}`, `SELECT ${f}('x', 'y') FROM result`]),
  // A refused function however it is written and wherever it stands.
  ...['HOSTNAME()', 'hostname()', 'HoStNaMe()', 'upper(hostName())', 'concat(path, version())', 'sumIf(n, hostName() = path)', "arrayMap(x -> hostName(), [1])", "arrayFilter(x -> currentUser() = x, ['a'])", 'groupArrayIf(getSetting(\'readonly\'), 1)'].map((call): [string, string] => [`${call} in the SELECT list`, `SELECT ${call} FROM result`]),
  ['a refused function in ORDER BY', 'SELECT path FROM result ORDER BY hostName()'],
  ['a refused function in HAVING', 'SELECT path, sum(n) AS s FROM result GROUP BY path HAVING s > length(version())'],
  ['a refused function in LIMIT BY', 'SELECT path FROM result LIMIT 1 BY (path, currentDatabase())'],
  ['a refused function in a window', 'SELECT sum(n) OVER (PARTITION BY hostName() ORDER BY n ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM result'],
  ['a refused function in WHERE', 'SELECT * FROM result WHERE path = uptime()'],
  ['a refused function in a JOIN condition', 'SELECT * FROM result AS a JOIN result AS b ON a.path = hostName()'],
  ['sleep as a waste of time', 'SELECT sleepEachRow(3) FROM result'],
  ['a table behind a comment', 'SELECT * FROM /* result */ system.tables'],
  ['a table behind an escaped quote', "SELECT 'it\\'s' AS x FROM system.tables"],
  ['a table in backquotes', 'SELECT * FROM `edge_logs`'],
  ['a table with a zero-width space in its name', 'SELECT * FROM `edge\u200b_logs`'],
  ['a table in fullwidth letters', 'SELECT * FROM `\uff53\uff59\uff53\uff54\uff45\uff4d`.tables'],
  ['a table after a unicode comment', 'SELECT * FROM /* r\u00e9sultat */ edge_logs'],
  ['a table in ARRAY JOIN\'s subquery', 'SELECT * FROM result ARRAY JOIN (SELECT groupArray(name) FROM system.tables) AS names'],
  ['a table deep in subqueries', `SELECT * FROM ${'(SELECT * FROM '.repeat(20)}system.one${') AS t'.repeat(20)}`],
  ['a subquery in FROM holding a table function (logflare #3642)', "SELECT * FROM (SELECT * FROM url('http://127.0.0.1:9/', 'LineAsString'))"],
  ['url() in a JOIN (snuba #8289)', "SELECT * FROM result AS r JOIN url('http://169.254.169.254/latest/meta-data/', 'LineAsString') AS m ON 1"],
  ['remote() reading any table (snuba #8289)', "SELECT * FROM remote('127.0.0.1', system.users)"],
  ['a table function given a table function (logflare #3645)', "SELECT * FROM file(url('http://127.0.0.1:9/'), 'LineAsString')"],
  ['16 KiB and one byte', `SELECT * FROM result WHERE path != '${'x'.repeat(16 * 1024 - 'SELECT * FROM result WHERE path != \'\''.length + 1)}'`],
  ['SETTINGS', 'SELECT * FROM result SETTINGS readonly = 0'],
  ['SETTINGS in a subquery', 'SELECT * FROM (SELECT * FROM result SETTINGS max_memory_usage = 0)'],
  ['FORMAT', 'SELECT * FROM result FORMAT JSON'],
  ['INTO OUTFILE', `SELECT * FROM result INTO OUTFILE '${join(dir, 'out.txt')}'`],
  ['a query parameter', 'SELECT {p:String} FROM result'],
  ['two statements', 'SELECT 1 FROM result; SELECT 2'],
  ['a statement after a comment', 'SELECT * FROM result -- x\n; DROP TABLE edge_logs'],
  ['DROP', 'DROP TABLE edge_logs'],
  ['INSERT', "INSERT INTO edge_logs (project) VALUES ('x')"],
  ['CREATE', 'CREATE TABLE t (x Int8) ENGINE = Memory'],
  ['ALTER', 'ALTER TABLE edge_logs DELETE WHERE 1'],
  ['TRUNCATE', 'TRUNCATE TABLE edge_logs'],
  ['SYSTEM', 'SYSTEM DROP MARK CACHE'],
  ['OPTIMIZE', 'OPTIMIZE TABLE edge_logs'],
  ['SHOW', 'SHOW TABLES'],
  ['DESCRIBE', 'DESCRIBE TABLE edge_logs'],
  ['EXPLAIN', 'EXPLAIN SELECT * FROM edge_logs'],
  ['SET', 'SET readonly = 0'],
  ['USE', 'USE system'],
  ['KILL', "KILL QUERY WHERE user = 'x'"],
  ['GRANT', 'GRANT ALL ON *.* TO default'],
  ['a WITH named result', 'WITH result AS (SELECT * FROM edge_logs) SELECT * FROM result'],
  ["a WITH of a subquery used outside it", 'SELECT * FROM (WITH edge_logs AS (SELECT 1) SELECT 1) AS a, edge_logs'],
  ["a WITH named as a table of the engine's", 'WITH edge_logs AS (SELECT * FROM result) SELECT count() FROM edge_logs'],
  ['a WITH with a quoted name', 'WITH `system.tables` AS (SELECT * FROM result) SELECT * FROM `system.tables`'],
  ['a table named inside quoted text', "SELECT 'edge_logs AS (SELECT' AS x FROM edge_logs"],
  ['a dictionary', 'SELECT * FROM dictionary(\'d\')'],
  ['SAMPLE', 'SELECT * FROM result SAMPLE 1 / 10'],
];

describe('what a caller\'s SQL may not reach', () => {
  it('is tried at least a hundred ways', () => {
    expect(ESCAPES.length).toBeGreaterThanOrEqual(100);
  });

  it.each(ESCAPES)('refuses %s', async (_what, sql) => {
    const err = await refusal(sql);
    expect(err, err.message).toBeInstanceOf(SandboxRefusedError);
    expect(err.message).not.toMatch(/\/tmp|127\.0\.0\.1/);
  });

  it('left everything as it was: the tables and their rows, no file written', async () => {
    const [row] = await (await lib.warehouse()).query("SELECT count() AS n FROM edge_logs WHERE project LIKE 'sb-%'", {});
    expect(Number(row?.n)).toBe(9);
    expect(existsSync(join(dir, 'out.txt'))).toBe(false);
  });

  it('has a second wall: what the check let by, the engine refuses under the sandbox\'s settings (readonly = 1)', async () => {
    const query = (await lib.catalog.find('sb.requests'));
    const settings = sandboxSettings(query, 30, 2 ** 30);
    const warehouse = await lib.warehouse();
    await expect(warehouse.query("SELECT * FROM file('/etc/hostname', 'LineAsString')", {}, settings)).rejects.toThrow(/READONLY|readonly/i);
    await expect(warehouse.query('SELECT * FROM url(\'http://127.0.0.1:9/\', LineAsString)', {}, settings)).rejects.toThrow(/READONLY|readonly/i);
  });
});

describe('the functions a caller may call', () => {
  it('are decided for every function the engine knows: allowed, or refused with a reason (a new one fails this until decided)', async () => {
    const decided = functionDecisions();
    const known = (await (await lib.warehouse()).query('SELECT name FROM system.functions', {})).map((r) => String(r.name));
    const undecided = known.filter((name) => !decided.allowed.includes(name) && !Object.hasOwn(decided.refused, name));
    expect(undecided, 'run node scripts/sandbox-functions.mjs and read the difference').toEqual([]);
    expect(decided.allowed.filter((name) => Object.hasOwn(decided.refused, name))).toEqual([]);
    for (const name of ['hostName', 'dictGet', 'file', 'sleep', 'getSetting', 'currentUser', 'joinGet']) expect(decided.refused[name], name).toBeDefined();
    for (const name of ['count', 'sum', 'toStartOfHour', 'quantile', 'if', 'arrayMap', 'JSONExtractString', 'now']) expect(decided.allowed, name).toContain(name);
  });
});

describe('over HTTP', () => {
  const url = (path: string) => `${server.url}/api/endpoints/query/${path}`;
  const key = { 'X-API-KEY': 'k' };
  const json = async (r: Response) => ({ status: r.status, body: (await r.json()) as Record<string, unknown>, cache: r.headers.get('x-cache') });

  it('takes ?sql= on GET and a JSON body on POST, and answers both alike, one cache entry between them', async () => {
    const sql = 'SELECT path, n FROM result WHERE n >= 2 ORDER BY path';
    const get = await json(await fetch(url(`sb.requests?project=sb-a&sql=${encodeURIComponent(sql)}`), { headers: key }));
    expect(get.body).toMatchObject({ result: [{ path: '/a', n: 3 }, { path: '/b', n: 2 }], truncated: false, cached: false });
    const post = await json(await fetch(url('sb.requests'), { method: 'POST', headers: { ...key, 'Content-Type': 'application/json' }, body: JSON.stringify({ params: { project: 'sb-a' }, sql: sql.toLowerCase().replace('sb', 'sb') }) }));
    expect(post).toEqual({ status: 200, body: { ...get.body, cached: true, age_seconds: expect.any(Number) }, cache: 'HIT' });
    // POST takes every query, with or without SQL.
    const plain = await json(await fetch(url('logs.all'), { method: 'POST', headers: { ...key, 'Content-Type': 'application/json' }, body: JSON.stringify({ params: { project: 'sb-b' } }) }));
    expect(plain.status).toBe(200);
  });

  it('answers each kind of refusal with its status and code, never a 500', async () => {
    const status = async (init: RequestInit & { path: string }) => {
      const r = await json(await fetch(url(init.path), { ...init, headers: { ...key, ...(init.headers as Record<string, string>) } }));
      return [r.status, (r.body.error as { code: string } | undefined)?.code];
    };
    expect(await status({ path: `sb.requests?project=sb-a&sql=${encodeURIComponent('SELECT * FROM system.tables')}` })).toEqual([400, 'sandbox_refused']);
    expect(await status({ path: `sb.requests?project=sb-a&sql=${encodeURIComponent('SELECT nope FROM result')}` })).toEqual([400, 'bad_sql']);
    expect(await status({ path: `logs.all?project=sb-a&sql=${encodeURIComponent('SELECT 1')}` })).toEqual([400, 'sandbox_disabled']);
    expect(await status({ path: 'sb.requests?project=sb-a&sql=SELECT+1&sql=SELECT+2' })).toEqual([400, 'bad_request']);
    expect(await status({ path: 'sb.requests', method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: '{}' })).toEqual([415, 'unsupported_media_type']);
    expect(await status({ path: 'sb.requests', method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"params": ' })).toEqual([400, 'bad_request']);
    expect(await status({ path: 'sb.requests', method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ params: { project: 'sb-a' }, sql: 'x'.repeat(1024 * 1024) }) })).toEqual([413, 'payload_too_large']);
    const metrics = await (await fetch(`${server.url}/metrics`, { headers: key })).text();
    expect(metrics).toMatch(/savedq_sandbox_refused_total\{query="sb.requests"\} [1-9]/);
    expect(logLines.join('\n')).toMatch(/sandbox: refused the SQL of "key 1" for sb.requests/);
  });

  it('lets a token made with --sql send SQL, and refuses one made without (403)', async () => {
    const made = await cli(['--queries', folder, 'token', 'create', '--name', 'analyst', '--query', 'sb.*', '--fix', 'project=sb-a', '--sql'], { env: { SAVEDQ_TOKEN_SECRETS: SECRET, XDG_CONFIG_HOME: NO_CONFIG, SAVEDQ_DATA_DIR: join(dir, 'unused'), SAVEDQ_CACHE_FILE: join(dir, 'unused.sqlite') } });
    expect(made.code, made.stderr).toBe(0);
    const without = await signToken({ name: 'viewer', exp: Math.floor(Date.now() / 1000) + 600, scopes: [{ query: 'sb.*', fixed_params: { project: 'sb-a' } }] }, secretKeys([SECRET]));
    const ask = (token: string) => fetch(url(`sb.requests?sql=${encodeURIComponent('SELECT sum(n) AS n FROM result')}`), { headers: { Authorization: `Bearer ${token}` } });
    expect(await json(await ask(made.stdout.trim()))).toMatchObject({ status: 200, body: { result: [{ n: 5 }] } });
    expect((await ask(without)).status).toBe(403);
  });

  it('declares the sql parameter, the POST body and open rows in OpenAPI for a sandboxed query only', async () => {
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { parameters?: { name: string }[]; requestBody?: unknown; responses: Record<string, unknown> }>> };
    const sandboxed = doc.paths['/api/endpoints/query/sb.requests'];
    expect(sandboxed?.get?.parameters?.map((p) => p.name)).toEqual(['project', 'sql', 'version', 'Savedq-Version']);
    expect(JSON.stringify(sandboxed?.post?.requestBody)).toMatch(/"sql"/);
    expect(JSON.stringify(sandboxed?.get?.responses['200'])).not.toMatch(/"required":\["status_code"/);
    expect(doc.paths['/api/endpoints/query/logs.all']?.get?.parameters?.map((p) => p.name)).not.toContain('sql');
  });

  it("gives an agent's tool of a sandboxed query an sql argument, described, and answers it", async () => {
    const client = new Client({ name: 'savedq-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { Authorization: 'Bearer k' } } }));
    try {
      const { tools } = await client.listTools();
      const tool = tools.find((t) => t.title === 'sb.requests');
      const sql = (tool?.inputSchema.properties as Record<string, { description: string }> | undefined)?.sql;
      expect(sql?.description).toMatch(/table `result`.*status_code, path, n/);
      expect(tools.find((t) => t.title === 'logs.all')?.inputSchema.properties).not.toHaveProperty('sql');
      const answer = (await client.callTool({ name: tool?.name ?? '', arguments: { project: 'sb-a', sql: 'SELECT max(n) AS most FROM result' } })) as CallToolResult;
      expect((answer.structuredContent as { rows: unknown[] }).rows).toEqual([{ most: 3 }]);
      const counted = async () => Number(/savedq_sandbox_refused_total\{query="sb.requests"\} (\d+)/.exec(await (await fetch(`${server.url}/metrics`, { headers: { 'X-API-KEY': 'k' } })).text())?.[1] ?? 0);
      const before = await counted();
      const refused = (await client.callTool({ name: tool?.name ?? '', arguments: { project: 'sb-a', sql: 'SELECT * FROM edge_logs' } })) as CallToolResult;
      expect([refused.isError, (refused.content[0] as { text: string }).text]).toEqual([true, expect.stringMatching(/the table edge_logs/)]);
      // Counted and logged as a refusal over HTTP is.
      expect(await counted()).toBe(before + 1);
      expect(logLines.join('\n')).toMatch(/sandbox: refused the SQL of "key 1" for sb.requests: refused: the table edge_logs.* id=mcp/);
    } finally {
      await client.close();
    }
  });
});

describe('on the command line', () => {
  it('takes run --sql, prints the answer as any run, and exits 2 with one line for a refusal', async () => {
    const env = { XDG_CONFIG_HOME: NO_CONFIG, SAVEDQ_DATA_DIR: join(dir, 'cli-data'), SAVEDQ_CACHE_FILE: join(dir, 'cli.sqlite') };
    const args = ['--queries', examplesDir, 'run', 'traffic.daily', '-p', 'url=.', '-p', 'since=2026-01-01'];
    const counted = await cli([...args, '--sql', 'SELECT count() AS days FROM result', '-f', 'json'], { env });
    expect([counted.code, JSON.parse(counted.stdout)]).toEqual([0, [{ days: 0 }]]);
    const refused = await cli([...args, '--sql', "SELECT * FROM file('/etc/passwd', 'LineAsString')"], { env });
    expect([refused.code, refused.stdout, refused.stderr]).toEqual([2, '', "savedq: refused: the table function file: SQL sent to a query reads only result (its answer) and its own WITH names.\n"]);
    const disabled = await cli(['run', 'logs.all', '-p', 'project=x', '--sql', 'SELECT 1'], { env });
    expect([disabled.code, disabled.stderr]).toEqual([2, expect.stringMatching(/logs.all takes no SQL of yours/)]);
    const described = await cli(['--queries', examplesDir, 'describe', 'traffic.daily'], { env });
    expect(described.stdout).toMatch(/Sandbox: yes/);
    const listed = JSON.parse((await cli(['--queries', examplesDir, 'list', '-f', 'json'], { env })).stdout) as { name: string; sandbox: boolean }[];
    expect(Object.fromEntries(listed.map((q) => [q.name, q.sandbox]))).toMatchObject({ 'traffic.daily': true, 'logs.all': false });
    expect(readFileSync(join(examplesDir, 'traffic.daily.sql'), 'utf8')).toMatch(/^sandbox: true$/m);
  });
});

describe('in savedq test', () => {
  it('runs a case with sql: over the answer, and fails one that sends SQL to a query that is not sandboxed, saying why', async () => {
    const tests = join(dir, 'tests');
    mkdirSync(tests, { recursive: true });
    const definition = (sandbox: boolean) => `/*\nfields:\n  n: { type: integer }\n${sandbox ? 'sandbox: true\n' : ''}*/\nSELECT number AS n FROM system.numbers LIMIT 4\n`;
    const spec = 'at: 2026-11-20T12:00:00Z\ncases:\n  - name: sums\n    sql: SELECT sum(n) AS total FROM result\n    rows:\n      - { total: 6 }\n';
    writeFileSync(join(tests, 'open.sql'), definition(true));
    writeFileSync(join(tests, 'open.test.yaml'), spec);
    writeFileSync(join(tests, 'closed.sql'), definition(false));
    writeFileSync(join(tests, 'closed.test.yaml'), spec);
    const env = { XDG_CONFIG_HOME: NO_CONFIG, SAVEDQ_DATA_DIR: join(dir, 'test-data'), SAVEDQ_CACHE_FILE: join(dir, 'test.sqlite') };
    const r = await cli(['--queries', tests, 'test', 'open', 'closed'], { env });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^ok +open +sums/m);
    expect(r.stdout).toMatch(/^FAIL +closed +sums/m);
    expect(r.stdout).toMatch(/closed takes no SQL of yours/);
  });
});
