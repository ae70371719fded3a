import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { examplesDir } from '../../src/package.js';
import { binPath, cli, DAY, eventually, HOUR, MINUTE, NO_CONFIG, startServe, tempDir, type ServeProcess, LONG_TEST_MS } from '../helpers.js';

// Saved queries as tools for agents, through the built CLI with the SDK's own client: `savedq mcp` over
// standard input and output, and serve's /mcp over Streamable HTTP.
const dir = tempDir();
const userQueries = join(dir, 'queries');
const KEY = 'the-mcp-key';
const SECRET = 'a-token-secret-of-forty-bytes-0123456789';
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'cache.sqlite'), SAVEDQ_TOKEN_SECRETS: SECRET, SAVEDQ_API_KEYS: KEY };
const queriesArgs = ['--queries', userQueries];

/** A saved query of the user's: three rows, at most `maxRows` of them returned. */
const limited = (maxRows: number) => `/*
description: Three numbers.
fields:
  n: { type: integer }
max_rows: ${maxRows}
*/
SELECT number AS n FROM system.numbers LIMIT 3
`;

type Row = Record<string, unknown>;
let stdio: Client;
let stdioStderr = '';

async function stdioClient(args: readonly string[] = queriesArgs): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [binPath, ...args, 'mcp'],
    env: { PATH: process.env.PATH ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...env },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (d: Buffer) => (stdioStderr += d.toString()));
  const client = new Client({ name: 'savedq-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

async function httpClient(url: string, credential: string): Promise<Client> {
  const client = new Client({ name: 'savedq-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${credential}` } } }));
  return client;
}

const call = (client: Client, name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args }) as Promise<CallToolResult>;
const rowsOf = (result: CallToolResult) => (result.structuredContent as { rows: Row[] }).rows;
const textOf = (result: CallToolResult) => (result.content[0] as { text: string }).text;
/** What `run` says of the same call on standard error, without its "savedq: " and newline. */
const runSays = async (args: readonly string[]) => {
  const r = await cli([...queriesArgs, 'run', ...args], { env });
  expect(r.code, r.stdout).toBe(2);
  return r.stderr.replace(/^savedq: /, '').trimEnd();
};

beforeAll(async () => {
  mkdirSync(userQueries, { recursive: true });
  writeFileSync(join(userQueries, 'capped.three.sql'), limited(2));
  writeFileSync(join(userQueries, 'capped.exact.sql'), limited(3));
  // Events well inside every window the comparisons below use, so a second later they answer the same.
  const now = Date.now();
  const edge = Array.from({ length: 40 }, (_, i) => {
    const project = i % 2 === 0 ? 'acme-shop' : 'globex-api';
    const path = ['/rest/v1/items', '/auth/v1/token', '/storage/v1/object/a', '/realtime/v1/ws'][i % 4] as string;
    return { timestamp: new Date(now - DAY - i * HOUR).toISOString(), project, event_message: `GET ${path}`, metadata: { request: { method: 'GET', url: `https://${project}.savedq.dev${path}`, path }, response: { status_code: i % 5 === 0 ? 500 : 200 } } };
  });
  const recent = Array.from({ length: 6 }, (_, i) => ({ timestamp: new Date(now - (2 + i) * HOUR).toISOString(), project: 'acme-shop', event_message: `recent ${i}` }));
  const functions = Array.from({ length: 30 }, (_, i) => ({
    timestamp: new Date(now - DAY - i * 20 * MINUTE).toISOString(),
    event_message: 'POST | 200',
    metadata: { project_ref: 'acme-shop', function_id: `f-${i % 3}`, execution_time_ms: 10 + i, response: { status_code: i % 7 === 0 ? 500 : 200 } },
  }));
  for (const [table, events] of [['edge_logs', [...edge, ...recent]], ['function_edge_logs', functions]] as const) {
    const r = await cli(['load', table, '-'], { env, input: events.map((e) => JSON.stringify(e)).join('\n') });
    expect(r.code, r.stderr).toBe(0);
  }
  stdio = await stdioClient();
}, LONG_TEST_MS);
afterAll(async () => {
  await stdio?.close();
});

describe('savedq mcp: the tools', () => {
  it('lists a tool a saved query, as list -f json declares it, with schemas a JSON Schema 2020-12 validator compiles', async () => {
    const { tools } = await stdio.listTools();
    const listed = JSON.parse((await cli([...queriesArgs, 'list', '-f', 'json'], { env })).stdout) as {
      name: string;
      description: string;
      params: { name: string; type: string; required: boolean; allowed?: string[]; default?: string; min?: number; max?: number }[];
    }[];
    expect(tools.map((t) => t.name).sort()).toEqual(listed.map((q) => q.name.replace(/\./g, '_')).sort());
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    formats.default(ajv);
    const jsonType: Record<string, string> = { string: 'string', regex: 'string', integer: 'integer', number: 'number', boolean: 'boolean', timestamp: 'string', date: 'string', 'string[]': 'array' };
    for (const q of listed) {
      const tool = tools.find((t) => t.name === q.name.replace(/\./g, '_')) as Tool;
      expect(tool.title).toBe(q.name);
      expect(tool.description).toContain(q.description);
      expect(tool.annotations).toMatchObject({ readOnlyHint: true, idempotentHint: true, openWorldHint: false, destructiveHint: false });
      ajv.compile(tool.inputSchema);
      ajv.compile(tool.outputSchema as object);
      const props = tool.inputSchema.properties as Record<string, { type: string | string[]; enum?: unknown[]; examples?: unknown[]; minimum?: number; maximum?: number; default?: unknown }>;
      expect(Object.keys(props)).toEqual(q.params.map((p) => p.name));
      expect(tool.inputSchema.required ?? []).toEqual(q.params.filter((p) => p.required).map((p) => p.name));
      for (const p of q.params) {
        const schema = props[p.name];
        // A list is a list or a text of comma-separated items; an optional value may be null (left out).
        const type = [jsonType[p.type], ...(p.type === 'string[]' ? ['string'] : []), ...(p.required ? [] : ['null'])];
        expect(schema?.type, `${q.name}.${p.name}`).toEqual(type.length === 1 ? type[0] : type);
        // Other values refused: an enum (and null when optional); taken as the default: examples.
        if (p.allowed && p.type !== 'string[]') expect(schema?.enum ?? schema?.examples).toEqual(schema?.enum && !p.required ? [...p.allowed, null] : p.allowed);
        expect(schema?.minimum).toBe(p.min);
        expect(schema?.maximum).toBe(p.max);
        if (p.default !== undefined) expect(String(schema?.default)).toBe(p.default);
      }
    }
    const counts = tools.find((t) => t.name === 'usage_api-counts');
    expect(counts?.inputSchema).toMatchObject({ type: 'object', additionalProperties: false, required: ['project', 'interval'], properties: { interval: { type: 'string', enum: ['minutely', 'hourly', 'daily'] } } });
  });

  it("answers each built-in with run -f json's rows for the same arguments, cached the second time", async () => {
    const cases: [string, Record<string, string>][] = [
      ['usage.api-counts', { project: 'acme-shop', interval: 'daily' }],
      ['logs.all', { project: 'acme-shop' }],
      ['functions.invocation-stats', { project: 'acme-shop', interval: '7day' }],
    ];
    for (const [name, args] of cases) {
      const first = await call(stdio, name.replace(/\./g, '_'), args);
      expect(first.isError, textOf(first)).toBeFalsy();
      const run = await cli(['run', name, '--no-cache', '-f', 'json', ...Object.entries(args).flatMap(([k, v]) => ['-p', `${k}=${v}`])], { env });
      expect(run.code, run.stderr).toBe(0);
      const rows = JSON.parse(run.stdout) as Row[];
      expect(rows.length, name).toBeGreaterThan(0);
      expect(rowsOf(first), name).toEqual(rows);
      expect(first.structuredContent).toMatchObject({ row_count: rows.length, truncated: false, cached: false, age_seconds: 0 });
      expect(JSON.parse(textOf(first))).toEqual(first.structuredContent);
      if (name !== 'logs.all') {
        const second = await call(stdio, name.replace(/\./g, '_'), args);
        expect(second.structuredContent).toMatchObject({ rows, cached: true });
      }
    }
  });

  it('says truncated when a query had more rows than its row limit, not when they just fill it', async () => {
    const cut = await call(stdio, 'capped_three', {});
    expect(cut.structuredContent).toMatchObject({ rows: [{ n: 0 }, { n: 1 }], row_count: 2, truncated: true });
    const whole = await call(stdio, 'capped_exact', {});
    expect(whole.structuredContent).toMatchObject({ row_count: 3, truncated: false });
  });

  it("answers each kind of bad argument as an error result in run's words, and an unknown tool as a protocol error", async () => {
    const refused = async (args: Record<string, unknown>, tool = 'usage_api-counts') => {
      const r = await call(stdio, tool, args);
      expect(r.isError, JSON.stringify(args).slice(0, 80)).toBe(true);
      return textOf(r);
    };
    // A value of another JSON type than its schema says is refused as the schema refuses it.
    expect(await refused({ project: 'acme-shop', interval: 5 })).toBe("parameter 'interval' takes a text, not a number.");
    expect(await refused({ project: 'acme-shop', interval: 'weekly' })).toBe(await runSays(['usage.api-counts', '-p', 'project=acme-shop', '-p', 'interval=weekly']));
    expect(await refused({ project: '(unclosed', interval: 'daily' })).toBe(await runSays(['usage.api-counts', '-p', 'project=(unclosed', '-p', 'interval=daily']));
    expect(await refused({ interval: 'daily' })).toBe(await runSays(['usage.api-counts', '-p', 'interval=daily']));
    expect(await refused({ projet: 'acme-shop', interval: 'daily' })).toBe(await runSays(['usage.api-counts', '-p', 'projet=acme-shop', '-p', 'interval=daily']));
    expect(await refused({ projet: 'acme-shop' })).toMatch(/Did you mean project\?/);
    expect(await refused({ project: 'x'.repeat(1024 * 1024), interval: 'daily' })).toBe("parameter 'project' is 1048576 characters long; a value is at most 8192.");
    expect(await refused({ project: { $ne: null }, interval: 'daily' })).toBe("parameter 'project' takes a text (an RE2 pattern), not an object.");
    expect(await refused({ project: ['acme-shop', 'globex-api'], interval: 'daily' })).toBe("parameter 'project' takes a text (an RE2 pattern), not a list.");
    const unknown = await stdio.callTool({ name: 'usage_api-count', arguments: {} }).then(
      () => 'answered',
      (err: unknown) => (err as Error).message,
    );
    // The client says the code once; the server's message does not say it again.
    expect(unknown).toMatch(/^MCP error -32602: unknown tool "usage_api-count"\. Did you mean usage_api-counts\?/);
    expect(stdioStderr).not.toMatch(/at .*\.js:\d+/); // no stack trace anywhere
  });

  it('answers a line that is not JSON, or not JSON-RPC, with JSON-RPC\'s error (id null), and goes on', async () => {
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
    const r = await cli([...queriesArgs, 'mcp'], { env, input: `hello\n{"jsonrpc":"2.0","foo":1}\n${JSON.stringify(initialize)}\n` });
    expect(r.code, r.stderr).toBe(0);
    const answers = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { id: unknown; error?: { code: number; message: string }; result?: unknown });
    expect(answers.slice(0, 2)).toEqual([
      { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: a line that is not JSON.' } },
      { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request: a line that is not a JSON-RPC message.' } },
    ]);
    expect(answers[2]).toMatchObject({ id: 1, result: { serverInfo: { name: 'savedq' } } });
  });

  it('refuses a number out of its bounds or of the wrong type as run does, and takes a list as a list (the examples)', async () => {
    const examples = await stdioClient(['--queries', examplesDir]);
    try {
      const r = await call(examples, 'functions_slowest', { project: 'acme-shop', hours: 0 });
      expect(r.isError).toBe(true);
      const run = await cli(['--queries', examplesDir, 'run', 'functions.slowest', '-p', 'project=acme-shop', '-p', 'hours=0'], { env });
      expect(textOf(r)).toBe(run.stderr.replace(/^savedq: /, '').trimEnd());
      const wrongType = await call(examples, 'functions_slowest', { project: 'acme-shop', hours: 'many' });
      expect(textOf(wrongType)).toBe("parameter 'hours' takes a number (an integer), not a text.");
      expect(textOf(await call(examples, 'functions_slowest', { project: 'acme-shop', hours: 2.5 }))).toBe("invalid value \"2.5\" for parameter 'hours': a base-10 integer from 1 to 2160.");
      // A list as a list: both projects' rows, the rows run gives for the same call (from and to fixed).
      const [from, to] = [new Date(Date.now() - 3 * DAY).toISOString(), new Date().toISOString()];
      const list = await call(examples, 'status_classes-hourly', { projects: ['acme-shop', 'globex-api'], from, to });
      expect(list.isError, textOf(list)).toBeFalsy();
      const listed = (list.structuredContent as { rows: { project: string }[] }).rows;
      expect(new Set(listed.map((r) => r.project))).toEqual(new Set(['acme-shop', 'globex-api']));
      const runList = await cli(['--queries', examplesDir, 'run', 'status.classes-hourly', '-p', 'projects=acme-shop,globex-api', '-p', `from=${from}`, '-p', `to=${to}`, '-f', 'json', '--no-cache'], { env });
      expect(listed).toEqual(JSON.parse(runList.stdout));
    } finally {
      await examples.close();
    }
  });

  it("tells an agent what is true: logs_all names the 100 rows its SQL stops at; a failing query's engine reason, a refused one's line, never a path", async () => {
    const logs = (await stdio.listTools()).tools.find((t) => t.name === 'logs_all');
    expect(logs?.description).toMatch(/^The newest 100 edge log entries of one project.*Its SQL stops at 100 entries \(truncated stays false\)/);
    expect(logs?.description).toContain("A limit written in the query's own SQL is the query's answer, not a cut");

    const odd = join(dir, 'odd-queries');
    mkdirSync(odd, { recursive: true });
    writeFileSync(join(odd, 'fails.sql'), "/*\ndescription: fails on purpose\n*/\nSELECT throwIf(number = 0, 'deliberate failure') AS x FROM system.numbers LIMIT 1\n");
    writeFileSync(join(odd, 'typo.sql'), '/*\ndescription: a typo\n*/\nSELECT\n  cont() AS n\n');
    const client = await stdioClient(['--queries', odd]);
    try {
      const failed = await call(client, 'fails', {});
      expect(failed.isError).toBe(true);
      expect(textOf(failed)).toBe('the query failed in the engine: deliberate failure (FUNCTION_THROW_IF_VALUE_IS_NON_ZERO).');
      const typo = await call(client, 'typo', {});
      expect(typo.isError).toBe(true);
      expect(textOf(typo)).toMatch(/^typo's SQL, line 5: the engine refuses the query: Function with name `cont` does not exist\. Maybe you meant: .*'count'.* \(UNKNOWN_FUNCTION\)$/);
      expect(textOf(failed) + textOf(typo)).not.toContain(dir);
    } finally {
      await client.close();
    }
  });

  it('leaves out two queries that would share a tool name, and a broken one, with one warning each', async () => {
    const clash = join(dir, 'clash');
    mkdirSync(clash, { recursive: true });
    writeFileSync(join(clash, 'clash.one.sql'), limited(5));
    writeFileSync(join(clash, 'clash_one.sql'), limited(5));
    writeFileSync(join(clash, 'fine.sql'), limited(5));
    writeFileSync(join(clash, 'typo.one.sql'), limited(5).replace('fields:', 'params:\n  projct: { type: string }\nfields:'));
    const before = stdioStderr.length;
    const client = await stdioClient(['--queries', clash]);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('fine');
      expect(names.filter((n) => n.startsWith('clash'))).toEqual([]);
      await client.listTools();
      const warnings = stdioStderr.slice(before).split('\n').filter((l) => l.includes('clash_one'));
      expect(warnings).toEqual(['warning: saved queries clash.one and clash_one would both be the tool clash_one; neither is offered to agents (rename one).']);
      // A definition with a typo is no tool, and standard error says why, once.
      expect(names).not.toContain('typo_one');
      expect(stdioStderr.slice(before).split('\n').filter((l) => l.includes('typo.one.sql'))).toEqual([expect.stringMatching(/^warning: skipped .*typo\.one\.sql:\d+: parameter 'projct' is declared but the SQL never uses @projct\./)]);
    } finally {
      await client.close();
    }
  });

  it('writes nothing but JSON-RPC messages on standard output, whatever it is sent', async () => {
    const lines = [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'usage_api-counts', arguments: { project: 'acme-shop', interval: 'daily' } } },
      { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'nope', arguments: {} } },
      { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'logs_all', arguments: { project: 7 } } },
      { jsonrpc: '2.0', id: 6, method: 'resources/read', params: { uri: 'savedq://queries/logs.all' } },
      { jsonrpc: '2.0', id: 7, method: 'no/such/method' },
    ];
    const child = spawn(process.execPath, [binPath, ...queriesArgs, 'mcp'], { env: { PATH: process.env.PATH ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...env } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stdin.end(`${lines.map((l) => JSON.stringify(l)).join('\n')}\nthis is not json\n`);
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(0);
    const messages = out.trimEnd().split('\n').map((line) => JSON.parse(line) as { jsonrpc: string; id?: number; result?: unknown; error?: unknown });
    expect(messages.every((m) => m.jsonrpc === '2.0')).toBe(true);
    // Every request answered, and the line that is not JSON answered with JSON-RPC's parse error.
    expect(messages.filter((m) => m.id !== undefined).map((m) => m.id)).toEqual(expect.arrayContaining([1, 2, 3, 4, 5, 6, 7, null]));
    expect(messages.filter((m) => m.id !== undefined)).toHaveLength(8);
    const resource = messages.find((m) => m.id === 6)?.result as { contents: { text: string }[] };
    expect(resource.contents[0]?.text).toMatch(/^logs\.all {2}0f4c6b2e-/);
    expect(resource.contents[0]?.text).toContain('From: logs.all.sql (built-in)');
    expect(resource.contents[0]?.text).not.toContain('/'.concat('sql/queries'));
  });

  it("never holds the engine between calls: the user's own run beside an open session answers at once", async () => {
    // An uncached call opens the engine; after it, a run that may not wait a moment for the data directory still runs.
    const r = await call(stdio, 'usage_api-counts', { project: 'globex-api', interval: 'daily' });
    expect(r.isError, textOf(r)).toBeFalsy();
    const run = await cli(['run', 'usage.api-counts', '-p', 'project=globex-api', '-p', 'interval=daily', '--no-cache'], { env: { ...env, SAVEDQ_LOCK_WAIT: '0' } });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual(rowsOf(r));
  });
});

describe('/mcp on serve', () => {
  let server: ServeProcess;
  beforeAll(async () => {
    await stdio.close(); // serve owns the engine: the stdio session above is done
    server = await startServe(env, queriesArgs, ['--rate-limit', '1000']);
  });

  it("gives an API key every tool, with the same rows as over standard input", async () => {
    const client = await httpClient(server.url, KEY);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(['capped_exact', 'capped_three', 'functions_invocation-stats', 'logs_all', 'usage_api-counts']);
      const r = await call(client, 'usage_api-counts', { project: 'acme-shop', interval: 'daily' });
      const run = await cli(['run', 'usage.api-counts', '-p', 'project=acme-shop', '-p', 'interval=daily', '-f', 'json'], { env });
      expect(rowsOf(r)).toEqual(JSON.parse(run.stdout));
      const resource = await client.readResource({ uri: 'savedq://queries/usage.api-counts' });
      expect((resource.contents[0] as { text: string }).text).toContain('SQL:\n');
    } finally {
      await client.close();
    }
  });

  it("gives a token only its scopes: its fixed project is not an input, is always applied, and cannot be changed by any argument", async () => {
    const created = await cli(['token', 'create', '--name', 'agent-acme', '--query', 'usage.*', '--fix', 'project=^https://acme-shop\\.', '--rps', '1000'], { env });
    expect(created.code, created.stderr).toBe(0);
    const client = await httpClient(server.url, created.stdout.trim());
    const keyed = await httpClient(server.url, KEY);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(['usage_api-counts']);
      expect(tools[0]?.inputSchema).toMatchObject({ required: ['interval'] });
      expect(Object.keys(tools[0]?.inputSchema.properties ?? {})).toEqual(['interval']);
      const acme = rowsOf(await call(keyed, 'usage_api-counts', { project: '^https://acme-shop\\.', interval: 'daily' }));
      const globex = rowsOf(await call(keyed, 'usage_api-counts', { project: 'globex-api', interval: 'daily' }));
      expect(acme).not.toEqual(globex);
      expect(rowsOf(await call(client, 'usage_api-counts', { interval: 'daily' }))).toEqual(acme);
      // The same project given anyway is taken; any other value, pattern or shape is refused.
      expect(rowsOf(await call(client, 'usage_api-counts', { interval: 'daily', project: '^https://acme-shop\\.' }))).toEqual(acme);
      for (const project of ['globex-api', 'acme-shop', '.*', 'acme-shop|globex-api', '', ' ^https://acme-shop\\.', ['acme-shop'], { a: 1 }]) {
        const r = await call(client, 'usage_api-counts', { interval: 'daily', project });
        expect(r.isError, JSON.stringify(project)).toBe(true);
        expect(r.structuredContent).toBeUndefined();
      }
      expect(textOf(await call(client, 'usage_api-counts', { interval: 'daily', project: 'globex-api' }))).toBe(`parameter 'project' is fixed by the token; it cannot be "globex-api".`);
      // Another query, by tool name or by its definition: not there.
      await expect(call(client, 'logs_all', { project: 'globex-api' })).rejects.toThrow(/unknown tool "logs_all"/);
      await expect(client.readResource({ uri: 'savedq://queries/logs.all' })).rejects.toThrow(/no such resource/);
    } finally {
      await client.close();
      await keyed.close();
    }
  });

  it("counts a token's every JSON-RPC request against its rate limit", async () => {
    const limited = async () => {
      const text = await (await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${KEY}` } })).text();
      return Number(/^savedq_rate_limited_total (\d+)$/m.exec(text)?.[1]);
    };
    const before = await limited();
    const created = await cli(['token', 'create', '--name', 'slow-agent', '--query', 'usage.*', '--rps', '0.01'], { env });
    const client = await httpClient(server.url, created.stdout.trim()).catch((err: unknown) => err as Error);
    // initialize took the one call of its burst: the next request is refused, and counted as serve counts its refusals.
    const refused = client instanceof Error ? client : await client.listTools().then(() => undefined, (err: unknown) => err as Error);
    expect(refused?.message).toMatch(/429|rate limit/);
    expect(await limited()).toBe(before + 1);
  });

  /** A session of /mcp opened by hand, and each message posted to it answered as JSON. */
  async function rawSession(credential = KEY): Promise<(message: unknown) => Promise<{ status: number; body: { id?: unknown; result?: unknown; error?: { code: number; message: string } } }>> {
    const headers = { Authorization: `Bearer ${credential}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
    const init = await fetch(`${server.url}/mcp`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } }) });
    const session = init.headers.get('mcp-session-id') as string;
    await init.text();
    await fetch(`${server.url}/mcp`, { method: 'POST', headers: { ...headers, 'Mcp-Session-Id': session }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    return async (message) => {
      const res = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { ...headers, 'Mcp-Session-Id': session }, body: typeof message === 'string' ? message : JSON.stringify(message) });
      return { status: res.status, body: JSON.parse(await res.text()) as { id?: unknown; result?: unknown; error?: { code: number; message: string } } };
    };
  }

  it('refuses a parameter named like a property of every JavaScript object as the unknown parameter it is, on every surface', async () => {
    const names = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];
    const post = await rawSession();
    for (const name of names) {
      const unknown = new RegExp(`unknown parameter "${name}"`);
      const get = await fetch(`${server.url}/api/endpoints/query/usage.api-counts?project=acme-shop&interval=daily&${name}=x`, { headers: { 'X-API-KEY': KEY } });
      expect([get.status, ((await get.json()) as { error: { message: string } }).error.message], name).toEqual([400, expect.stringMatching(unknown)]);
      // JSON.parse keeps "__proto__" as a key of its own, as a client sends it.
      const body = `{"params":{"project":"acme-shop","interval":"daily","${name}":"x"}}`;
      const posted = await fetch(`${server.url}/api/endpoints/query/usage.api-counts`, { method: 'POST', headers: { 'X-API-KEY': KEY, 'Content-Type': 'application/json' }, body });
      expect([posted.status, ((await posted.json()) as { error: { message: string } }).error.message], name).toEqual([400, expect.stringMatching(unknown)]);
      const called = await post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"usage_api-counts","arguments":{"project":"acme-shop","interval":"daily","${name}":"x"}}}`);
      expect(called.body.result, name).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(unknown) }] });
      const stdioCalled = await stdioClient().then(async (client) => {
        try {
          return await call(client, 'usage_api-counts', JSON.parse(`{"project":"acme-shop","interval":"daily","${name}":"x"}`) as Record<string, unknown>);
        } finally {
          await client.close();
        }
      }).catch((err: unknown) => ({ isError: true, content: [{ type: 'text', text: String(err) }] }));
      expect(stdioCalled, name).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(unknown) }] });
    }
  }, LONG_TEST_MS);

  it("answers what is not a JSON-RPC message with -32600, and a tools/call without a name or with arguments that are no object with -32602 and one short sentence", async () => {
    const post = await rawSession();
    const notRpc = await post('{"hello":"world"}');
    expect([notRpc.status, notRpc.body.error?.code]).toEqual([400, -32600]);
    const parseError = await post('{"hello"');
    expect(parseError.body.error?.code).toBe(-32700);
    const invalid = [
      { name: 'usage_api-counts', arguments: ['acme-shop', 'daily'] },
      { name: 'usage_api-counts', arguments: 'project=acme-shop' },
      { name: 42, arguments: {} },
      undefined,
    ];
    for (const params of invalid) {
      const answer = await post({ jsonrpc: '2.0', id: 7, method: 'tools/call', ...(params ? { params } : {}) });
      expect(answer.body.error?.code, JSON.stringify(params)).toBe(-32602);
      expect(answer.body.error?.message, JSON.stringify(params)).toMatch(/^tools\/call (needs params\.name|takes params\.arguments as an object)[^\n]*\.$/);
    }
  });

  it('answers a method /mcp does not take with 405 and the methods it does take', async () => {
    const res = await fetch(`${server.url}/mcp`, { method: 'PUT', headers: { Authorization: `Bearer ${KEY}` } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, POST, DELETE');
  });

  it('refuses no credential or a Basic one (401), a foreign Origin or Host (403); --no-mcp answers 404', async () => {
    const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '0' } } });
    const post = (headers: Record<string, string>, url = server.url) => fetch(`${url}/mcp`, { method: 'POST', body: init, headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers } });
    const none = await post({});
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    const basic = await post({ Authorization: 'Basic dXNlcjpwYXNz' });
    expect(basic.status).toBe(401);
    expect(((await basic.json()) as { error: { message: string } }).error.message).toMatch(/^Authorization: Basic is not taken/);
    const foreign = await post({ Authorization: `Bearer ${KEY}`, Origin: 'http://evil.example' });
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as { error: { message: string } }).error.message).toMatch(/may not call \/mcp/);
    const own = await post({ Authorization: `Bearer ${KEY}`, Origin: server.url });
    expect(own.status).toBe(200);
    const { port } = new URL(server.url);
    const rebound = await new Promise<number>((resolve, reject) => {
      // fetch will not send another Host; a raw request does, as a rebound browser would.
      const req = request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', headers: { Host: `rebind.evil.example:${port}`, Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end(init);
    });
    expect(rebound).toBe(403);
    const off = await startServe({ ...env, SAVEDQ_DATA_DIR: join(dir, 'no-mcp'), SAVEDQ_CACHE_FILE: join(dir, 'no-mcp.sqlite') }, [], ['--no-mcp']);
    try {
      expect((await post({ Authorization: `Bearer ${KEY}` }, off.url)).status).toBe(404);
    } finally {
      off.child.kill('SIGTERM');
      await off.exited;
    }
  });

  it('tells an open session that the tools changed after SIGHUP, and lists the new ones', async () => {
    const client = await httpClient(server.url, KEY);
    try {
      let changed = false;
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        changed = true;
      });
      await client.listTools();
      writeFileSync(join(userQueries, 'fresh.one.sql'), limited(5));
      // The client opens its notification stream on its own after initialize: a reload before it is
      // open is told to no one, so the server is told to reload until the client hears of one.
      await eventually('notifications/tools/list_changed', () => {
        if (!changed) server.child.kill('SIGHUP');
        return changed;
      });
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('fresh_one');
    } finally {
      await client.close();
    }
  });
});
