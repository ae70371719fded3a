import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { binPath, cli, eventually, LONG_TEST_MS, NO_CONFIG, startServe, tempDir, type ServeProcess } from '../helpers.js';

// Versions a caller can pin (docs/queries.md, "Versions"): `savedq version` keeps the current file as
// <name>@<N>.sql and raises the current one's version; every surface finds a version where it finds a
// query (the catalog): run name@N, HTTP ?version= and Savedq-Version, MCP's version argument, tokens,
// alerts, tests, the cache and the lock each take a version as a query of its own. sunset: retires one.

const dir = tempDir('savedq-versions-');
const queries = join(dir, 'queries');
const KEY = 'the-versions-key';
const SECRET = 'a-token-secret-of-forty-bytes-0123456789';
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'cache.sqlite'), SAVEDQ_QUERIES: queries, SAVEDQ_API_KEYS: KEY, SAVEDQ_TOKEN_SECRETS: SECRET };
const file = (name: string) => join(queries, name);

const V1 = `/*
description: Events of a project.
params:
  project: { type: string, required: true }
fields:
  n: { type: integer, description: How many. }
cache: 600
*/
SELECT count() AS n FROM edge_logs WHERE project = @project
`;
// Version 2 breaks its callers: n is now total, a text.
const toV2 = (text: string) => text.replace('  n: { type: integer, description: How many. }', '  total: { type: string }').replace('count() AS n', 'toString(count()) AS total');

const TESTS = (field: string, value: string) => `at: 2026-11-20T12:00:00Z
fixtures:
  edge_logs:
    - { timestamp: 2026-11-20T11:10:00Z, project: p1 }
    - { timestamp: 2026-11-20T11:11:00Z, project: p2 }
cases:
  - name: counts the project's events
    params: { project: p1 }
    rows:
      - { ${field}: ${value} }
`;

/** A query with a parameter of its own named version: ?version= is that parameter, the header pins it. */
const WITH_VERSION_PARAM = `/*
params:
  version: { type: integer, required: true }
fields:
  v: { type: integer }
*/
SELECT @version AS v
`;

const json = <T>(text: string) => JSON.parse(text) as T;
let events = 0;
let lock0 = '';

beforeAll(async () => {
  mkdirSync(queries);
  const loaded = await cli(['load', '--sample', '-q'], { env });
  expect(loaded.code, loaded.stderr).toBe(0);
  writeFileSync(file('counts.sql'), V1);
  writeFileSync(file('counts.test.yaml'), TESTS('n', '1'));
  writeFileSync(file('paramver.sql'), WITH_VERSION_PARAM);
  const first = await cli(['run', 'counts', '-p', 'project=acme-shop', '-f', 'json'], { env });
  expect(first.code, first.stderr).toBe(0);
  events = json<{ n: number }[]>(first.stdout)[0]?.n ?? -1;
  expect(events).toBeGreaterThan(0);
  // The lock as it was before any version: what CI holds the versioned folder to.
  lock0 = join(dir, 'before.lock.json');
  const locked = await cli(['lock', '--lock', lock0], { env });
  expect(locked.code, locked.stderr).toBe(0);
}, LONG_TEST_MS);

describe('savedq version', () => {
  it('keeps the current file as <name>@<N>.sql with its tests, and raises the current one', async () => {
    const made = await cli(['version', 'counts'], { env });
    expect(made.code, made.stderr).toBe(0);
    expect(made.stderr).toMatch(/^kept version 1 of counts in \S*counts@1\.sql \(its tests in \S*counts@1\.test\.yaml\); \S*counts\.sql is version 2 now: change it, and callers that must stay call counts@1\n$/);
    expect(readFileSync(file('counts@1.sql'), 'utf8')).toBe(V1);
    expect(readFileSync(file('counts@1.test.yaml'), 'utf8')).toBe(TESTS('n', '1'));
    expect(readFileSync(file('counts.sql'), 'utf8')).toBe(V1.replace('/*\n', '/*\nversion: 2\n'));
    // Again: version 2 is not kept yet, so it is kept now and the current one is 3; then back to two.
    const again = await cli(['version', 'counts@2'], { env });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("savedq version takes a query's name, not a version of it");
    const builtin = await cli(['version', 'usage.api-counts'], { env });
    expect(builtin.code).toBe(2);
    expect(builtin.stderr).toContain('usage.api-counts is a built-in query');
    // Now the change that breaks callers, in version 2 (and its tests).
    writeFileSync(file('counts.sql'), toV2(readFileSync(file('counts.sql'), 'utf8')));
    writeFileSync(file('counts.test.yaml'), TESTS('total', '"1"'));
  }, LONG_TEST_MS);

  it('check and savedq test take each version as a definition of its own', async () => {
    const check = await cli(['check'], { env });
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toMatch(/^ok +counts +\S*counts\.sql$/m);
    expect(check.stdout).toMatch(/^ok +counts@1 +\S*counts@1\.sql$/m);
    const tested = await cli(['test', '-f', 'json'], { env });
    expect(tested.code, tested.stdout + tested.stderr).toBe(0);
    const { files } = json<{ files: { file: string; query: string; cases: { ok: boolean }[] }[] }>(tested.stdout);
    expect(files.map((f) => [f.file.replace(/.*\//, ''), f.query, f.cases.map((c) => c.ok)])).toEqual([
      ['counts.test.yaml', 'counts', [true]],
      ['counts@1.test.yaml', 'counts@1', [true]],
    ]);
    expect(check.stdout).toMatch(/^ok +counts@1 +\S*counts@1\.test\.yaml$/m);
  }, LONG_TEST_MS);
});

describe('a version pinned on the command line', () => {
  it('answers its own shape while the current one answers the new, each its own cache entry, and says its version', async () => {
    const current = await cli(['run', 'counts', '-p', 'project=acme-shop', '-f', 'json', '--stats'], { env });
    expect(current.code, current.stderr).toBe(0);
    expect(json(current.stdout)).toEqual([{ total: String(events) }]);
    // Not the version 1 answer cached before: a version is a query of its own.
    expect(current.stderr).toMatch(/^1 row · computed now · .* · version 2\n$/);
    const pinned = await cli(['run', 'counts@1', '-p', 'project=acme-shop', '-f', 'json', '--stats'], { env });
    expect(pinned.code, pinned.stderr).toBe(0);
    expect(json(pinned.stdout)).toEqual([{ n: events }]);
    expect(pinned.stderr).toMatch(/^1 row · computed now · .* · version 1\n$/);
    const again = await cli(['run', 'counts@1', '-p', 'project=acme-shop', '--stats', '-f', 'json'], { env });
    expect(again.stderr).toMatch(/^1 row · cached \d+ s ago · .* · version 1\n$/);
    const byId = await cli(['run', `${json<{ id: string }[]>((await cli(['list', '-f', 'json'], { env })).stdout).find((q) => (q as unknown as { name: string }).name === 'counts')?.id}@1`, '-p', 'project=acme-shop', '-f', 'json'], { env });
    expect(json(byId.stdout)).toEqual([{ n: events }]);
  }, LONG_TEST_MS);

  it('a version that does not exist is refused, listing those that do', async () => {
    const none = await cli(['run', 'counts@3', '-p', 'project=acme-shop'], { env });
    expect(none.code).toBe(2);
    expect(none.stderr).toBe('savedq: counts has no version 3; its versions: 1, 2 (2 the current one).\n');
    const bad = await cli(['run', 'counts@x', '-p', 'project=acme-shop'], { env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("unknown query 'counts@x'");
  }, LONG_TEST_MS);

  it('list shows each query\'s versions', async () => {
    const listed = json<{ name: string; version: number; versions: number[] }[]>((await cli(['list', '-f', 'json'], { env })).stdout);
    expect(listed.find((q) => q.name === 'counts')).toMatchObject({ version: 2, versions: [1, 2] });
    expect(listed.find((q) => q.name === 'logs.all')).toMatchObject({ version: 1, versions: [1] });
    expect(listed.some((q) => q.name.includes('@'))).toBe(false);
    const table = await cli(['list', '-f', 'csv'], { env });
    expect(table.stdout.split('\r\n')[0]).toBe('name,id,versions,params,cache_seconds,description');
    expect(table.stdout).toMatch(/^counts,[0-9a-f-]+,1 2,project,600,Events of a project\.\r?$/m);
  }, LONG_TEST_MS);
});

describe('versions that cannot be', () => {
  it('are definition errors at their line: no current file, not older than the current, another version or name in the header, sunset on the current', async () => {
    const bad = join(dir, 'bad');
    mkdirSync(bad);
    const q = (header: string) => `/*\n${header}*/\nSELECT 1 AS one\n`;
    writeFileSync(join(bad, 'orphan@1.sql'), q(''));
    writeFileSync(join(bad, 'ahead.sql'), q(''));
    writeFileSync(join(bad, 'ahead@2.sql'), q(''));
    writeFileSync(join(bad, 'said.sql'), q('version: 3\n'));
    writeFileSync(join(bad, 'said@1.sql'), q('description: one\nversion: 2\n'));
    writeFileSync(join(bad, 'named.sql'), q('version: 2\n'));
    writeFileSync(join(bad, 'named@1.sql'), q('name: other\n'));
    writeFileSync(join(bad, 'retired.sql'), q('version: 2\nsunset: 2027-01-31\n'));
    writeFileSync(join(bad, 'retired@1.sql'), q('sunset: someday\n'));
    const check = await cli(['check'], { env: { ...env, SAVEDQ_QUERIES: bad } });
    expect(check.code).toBe(2);
    expect(check.stdout).toContain("orphan@1.sql:1: this file keeps version 1 of 'orphan', but no orphan.sql holds its current version (savedq version orphan makes both).");
    expect(check.stdout).toContain("ahead@2.sql:1: version 2 is not older than the current version 1 of 'ahead'");
    expect(check.stdout).toContain('said@1.sql:3: this file keeps version 1 (its name ends @1), but its header says version: 2.');
    expect(check.stdout).toContain("named@1.sql:2: this file keeps version 1 of 'named' (its name says so), but its header names 'other'");
    expect(check.stdout).toContain('retired.sql:3: sunset: retires an older version kept in its own file');
    expect(check.stdout).toContain('retired@1.sql:2: sunset must be a date (2027-01-31) or an instant (2027-01-31T12:00:00Z).');
    expect(check.stdout).toMatch(/^ok +said +\S*said\.sql$/m);
  }, LONG_TEST_MS);
});

describe('versions over HTTP', () => {
  let server: ServeProcess;
  const get = async (path: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${server.url}${path}`, { headers: { 'X-API-KEY': KEY, ...headers } });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
  };
  let reloads = 0;
  const reload = async () => {
    server.child.kill('SIGHUP');
    reloads += 1;
    await server.waitFor(new RegExp(`(reloaded: \\d+ saved queries[\\s\\S]*){${reloads}}`));
  };

  beforeAll(async () => {
    server = await startServe(env);
  }, LONG_TEST_MS);
  afterAll(async () => {
    server.child.kill('SIGTERM');
    await server.exited;
  });

  it('?version=, Savedq-Version and name@N each pin one; the answer says its version in a header and its body', async () => {
    const current = await get('/api/endpoints/query/counts?project=acme-shop');
    expect(current).toMatchObject({ status: 200, body: { result: [{ total: String(events) }], version: 2 } });
    expect(current.headers.get('savedq-version')).toBe('2');
    expect(current.headers.get('sunset')).toBeNull();
    for (const [path, headers] of [
      ['/api/endpoints/query/counts?project=acme-shop&version=1', {}],
      ['/api/endpoints/query/counts?project=acme-shop', { 'Savedq-Version': '1' }],
      ['/api/endpoints/query/counts@1?project=acme-shop', {}],
    ] as const) {
      const pinned = await get(path, headers);
      expect(pinned, path).toMatchObject({ status: 200, body: { result: [{ n: events }], version: 1 } });
      expect(pinned.headers.get('savedq-version')).toBe('1');
    }
    const posted = await fetch(`${server.url}/api/endpoints/query/counts?version=1`, { method: 'POST', headers: { 'X-API-KEY': KEY, 'Content-Type': 'application/json' }, body: JSON.stringify({ params: { project: 'acme-shop' } }) });
    expect(await posted.json()).toMatchObject({ result: [{ n: events }], version: 1 });
    // An export pins a version as a call does, and says it.
    const exported = await fetch(`${server.url}/api/endpoints/export/counts?project=acme-shop&format=ndjson`, { headers: { 'X-API-KEY': KEY, 'Savedq-Version': '1' } });
    expect([exported.status, exported.headers.get('savedq-version'), await exported.text()]).toEqual([200, '1', `{"n":${events}}\n`]);
  }, LONG_TEST_MS);

  it("each version's answer is one OpenAPI's schema of the answer takes (a validator savedq did not write)", async () => {
    const doc = (await get('/openapi.json')).body as { paths: Record<string, { get: { responses: Record<string, { content: Record<string, { schema: object }> }> } }> };
    const ajv = new Ajv2020({ strict: false });
    formats.default(ajv);
    const valid = ajv.compile(doc.paths['/api/endpoints/query/counts']?.get.responses['200']?.content['application/json']?.schema ?? {});
    for (const version of ['1', '2']) {
      const answer = await get(`/api/endpoints/query/counts?project=acme-shop&version=${version}`);
      expect(valid(answer.body), JSON.stringify(valid.errors)).toBe(true);
    }
    // Not any object: a row of neither version is refused.
    expect(valid({ ...(await get('/api/endpoints/query/counts?project=acme-shop')).body, result: [{ other: 1 }] })).toBe(false);
  }, LONG_TEST_MS);

  it('a version that does not exist is 404 listing those that do; one that is no number, 400; two asked, 400', async () => {
    expect(await get('/api/endpoints/query/counts?project=acme-shop&version=7')).toMatchObject({ status: 404, body: { error: { code: 'not_found', message: 'counts has no version 7; its versions: 1, 2 (2 the current one).' } } });
    expect(await get('/api/endpoints/query/counts?project=acme-shop', { 'Savedq-Version': 'two' })).toMatchObject({ status: 400, body: { error: { message: 'Savedq-Version "two" is not a version: a whole number from 1.' } } });
    expect(await get('/api/endpoints/query/counts?project=acme-shop&version=1', { 'Savedq-Version': '2' })).toMatchObject({ status: 400, body: { error: { message: 'two versions asked: 1 (version=) and 2 (Savedq-Version); ask one.' } } });
  }, LONG_TEST_MS);

  it('a query with a parameter named version takes ?version= as its parameter, and is pinned by the header', async () => {
    expect(await get('/api/endpoints/query/paramver?version=5')).toMatchObject({ status: 200, body: { result: [{ v: 5 }], version: 1 } });
    expect(await get('/api/endpoints/query/paramver?version=5', { 'Savedq-Version': '1' })).toMatchObject({ status: 200, body: { result: [{ v: 5 }] } });
    const doc = (await get('/openapi.json')).body as { paths: Record<string, { get: { parameters: { name: string; in: string; schema: { enum?: number[] } }[] } }> };
    const params = (path: string) => doc.paths[path]?.get.parameters.map((p) => `${p.in}:${p.name}${p.schema.enum ? `=${p.schema.enum.join('|')}` : ''}`);
    expect(params('/api/endpoints/query/paramver')).toEqual(['query:version', 'header:Savedq-Version=1']);
    expect(params('/api/endpoints/query/counts')).toEqual(['query:project', 'query:version=1|2', 'header:Savedq-Version=1|2']);
  }, LONG_TEST_MS);

  it('sunset: in the future, Deprecation and Sunset headers; past it, 410 naming the current version', async () => {
    writeFileSync(file('counts@1.sql'), V1.replace('/*\n', '/*\nsunset: 2099-01-31\n'));
    await reload();
    const deprecated = await get('/api/endpoints/query/counts?project=acme-shop&version=1');
    expect(deprecated.status).toBe(200);
    expect(deprecated.headers.get('sunset')).toBe('Sat, 31 Jan 2099 00:00:00 GMT');
    expect(deprecated.headers.get('deprecation')).toBe(`@${Date.parse('2099-01-31T00:00:00Z') / 1000}`);
    expect((await get('/api/endpoints/query/counts?project=acme-shop')).headers.get('sunset')).toBeNull();
    const run = await cli(['run', 'counts@1', '-p', 'project=acme-shop', '-f', 'json'], { env });
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('warning: version 1 of counts is deprecated: it stops answering on 2099-01-31 (sunset); run counts for the current version.\n');

    writeFileSync(file('counts@1.sql'), V1.replace('/*\n', '/*\nsunset: 2026-01-31\ndeprecated: 2025-12-01\n'));
    await reload();
    expect(await get('/api/endpoints/query/counts?project=acme-shop&version=1')).toMatchObject({ status: 410, body: { error: { code: 'gone', message: 'version 1 of counts was retired on 2026-01-31. The current version is 2: call counts (or counts@2).' } } });
    const gone = await cli(['run', 'counts@1', '-p', 'project=acme-shop'], { env });
    expect(gone.code).toBe(2);
    expect(gone.stderr).toBe('savedq: version 1 of counts was retired on 2026-01-31. The current version is 2: call counts (or counts@2).\n');
    writeFileSync(file('counts@1.sql'), V1);
    await reload();
  }, LONG_TEST_MS);

  it('a server that answered a version before its sunset answers 410 once it passes, without being told (no SIGHUP)', async () => {
    const sunset = new Date(Date.now() + 10_000).toISOString().replace(/\.\d+Z$/, 'Z');
    writeFileSync(file('counts@1.sql'), V1.replace('/*\n', `/*\nsunset: ${sunset}\n`));
    await reload();
    const path = '/api/endpoints/query/counts?project=acme-shop&version=1';
    expect((await get(path)).status).toBe(200);
    expect((await get(path)).status).toBe(200); // the call prepared and remembered
    await eventually('the version to be gone past its sunset', async () => (await get(path)).status === 410);
    expect((await get(path)).body).toMatchObject({ error: { code: 'gone', message: `version 1 of counts was retired on ${sunset.replace('Z', '.000Z')}. The current version is 2: call counts (or counts@2).` } });
    writeFileSync(file('counts@1.sql'), V1);
    await reload();
  }, LONG_TEST_MS);

  it('a token may open one version only', async () => {
    const made = await cli(['token', 'create', '--name', 'pinned-client', '--query', 'counts@1'], { env });
    expect(made.code, made.stderr).toBe(0);
    const bearer = { Authorization: `Bearer ${made.stdout.trim()}`, 'X-API-KEY': '' };
    const call = (path: string) => fetch(`${server.url}${path}`, { headers: { Authorization: bearer.Authorization } }).then(async (r) => ({ status: r.status, body: (await r.json()) as object }));
    expect(await call('/api/endpoints/query/counts?project=acme-shop&version=1')).toMatchObject({ status: 200, body: { version: 1 } });
    expect(await call('/api/endpoints/query/counts?project=acme-shop')).toMatchObject({ status: 403 });
  }, LONG_TEST_MS);
});

describe('versions to an agent (MCP)', () => {
  it("a tool takes the version as an argument, its enum the versions, and its answer says which", async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [binPath, 'mcp'], env: { PATH: process.env.PATH ?? '', XDG_CONFIG_HOME: NO_CONFIG, ...env }, stderr: 'pipe' });
    const client = new Client({ name: 'savedq-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      const tool = tools.find((t) => t.name === 'counts');
      expect((tool?.inputSchema.properties as Record<string, unknown>)['version']).toMatchObject({ type: 'integer', enum: [1, 2] });
      const withParam = tools.find((t) => t.name === 'paramver');
      expect((withParam?.inputSchema.properties as Record<string, { type: string }>)['version']?.type).toBe('integer');
      const pinned = (await client.callTool({ name: 'counts', arguments: { project: 'acme-shop', version: 1 } })) as CallToolResult;
      expect(pinned.structuredContent).toMatchObject({ rows: [{ n: events }], version: 1 });
      const current = (await client.callTool({ name: 'counts', arguments: { project: 'acme-shop' } })) as CallToolResult;
      expect(current.structuredContent).toMatchObject({ rows: [{ total: String(events) }], version: 2 });
      const none = (await client.callTool({ name: 'counts', arguments: { project: 'acme-shop', version: 4 } })) as CallToolResult;
      expect(none.isError).toBe(true);
      expect((none.content[0] as { text: string }).text).toContain('counts has no version 4; its versions: 1, 2');
      const half = (await client.callTool({ name: 'counts', arguments: { project: 'acme-shop', version: 1.5 } })) as CallToolResult;
      expect([half.isError, (half.content[0] as { text: string }).text]).toEqual([true, 'version "1.5" is not a version: a whole number from 1.']);
      const own = (await client.callTool({ name: 'paramver', arguments: { version: 7 } })) as CallToolResult;
      expect(own.structuredContent).toMatchObject({ rows: [{ v: 7 }], version: 1 });
    } finally {
      await client.close();
    }
  }, LONG_TEST_MS);
});

describe('a version as the subject of an alert, the cache and warm', () => {
  it('an alert naming name@N reads that version\'s answer', async () => {
    writeFileSync(file('pinned.alert.yaml'), 'query: counts@1\nparams: { project: acme-shop }\nwhen: n > 0\nevery: 5m\nnotify:\n  - command: ["true"]\n');
    try {
      const checked = await cli(['alerts', 'check'], { env });
      expect(checked.stderr).toContain('firing  pinned (was new): 1 row matched');
    } finally {
      rmSync(file('pinned.alert.yaml'));
    }
  }, LONG_TEST_MS);

  it('cache list names each version\'s calls, and warm refreshes a pinned version as its own', async () => {
    const listed = json<{ query: string }[]>((await cli(['cache', 'list', '-f', 'json'], { env })).stdout);
    expect(listed.map((c) => c.query)).toEqual(expect.arrayContaining(['counts', 'counts@1']));
    const warmed = await cli(['warm', 'counts@1', '-p', 'project=acme-shop'], { env });
    expect(warmed.code, warmed.stderr).toBe(0);
    expect(warmed.stderr).toMatch(/refreshed counts@1\b/);
  }, LONG_TEST_MS);
});

describe('versions and the lock', () => {
  it('a folder versioned before its breaking change passes check --against the lock of before; a kept version is held to what it promised', async () => {
    const against = await cli(['check', '--against', lock0], { env });
    expect(against.code, against.stdout + against.stderr).toBe(0);
    expect(against.stdout).toMatch(/^breaking +counts +field n removed$/m);
    expect(against.stdout).not.toMatch(/^(breaking|compatible) +counts@1 /m);
    // The lock now holds both versions; a kept version changed in a way that breaks its callers fails.
    const lockFile = join(queries, 'savedq.lock.json');
    expect((await cli(['lock'], { env })).code).toBe(0);
    expect(Object.keys(json<{ queries: object }>(readFileSync(lockFile, 'utf8')).queries)).toEqual(expect.arrayContaining(['counts', 'counts@1']));
    writeFileSync(file('counts@1.sql'), V1.replace('  n: {', '  m: {').replace('count() AS n', 'count() AS m'));
    const broken = await cli(['check', '--against', lockFile], { env });
    expect(broken.code).toBe(1);
    expect(broken.stdout).toMatch(/^breaking +counts@1 +field n removed$/m);
    // Removing a version past its sunset breaks no one: it is retired.
    writeFileSync(file('counts@1.sql'), V1.replace('/*\n', '/*\nsunset: 2026-01-31\n'));
    expect((await cli(['lock'], { env })).code).toBe(0);
    rmSync(file('counts@1.sql'));
    rmSync(file('counts@1.test.yaml'));
    const retired = await cli(['check', '--against', lockFile], { env });
    expect(retired.code, retired.stdout + retired.stderr).toBe(0);
    expect(retired.stdout).toMatch(/^compatible +counts@1 +retired \(past its sunset, 2026-01-31\)$/m);
    expect(existsSync(file('counts.sql'))).toBe(true);
  }, LONG_TEST_MS);
});
