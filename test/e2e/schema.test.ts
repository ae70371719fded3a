import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { examplesDir } from '../../src/package.js';
import { cli, EVENT_DEADLINE_MS, LONG_TEST_MS, startServe, tempDir, type ServeProcess } from '../helpers.js';

// serve held to its own OpenAPI document: requests made from the document's schemas, for every
// operation, valid and invalid alike. Valid ones go through Prism, the validating proxy (its request
// and response checks on: any answer the document does not declare is an error), and must be answered
// 200; invalid ones go to serve itself (Prism would refuse them first) and must be answered 400, in the
// error envelope the document declares.
const dir = tempDir();
const KEY = 'schema-key';
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'c.sqlite'), SAVEDQ_API_KEYS: KEY, SAVEDQ_QUERIES: examplesDir };

type Schema = Record<string, unknown> & { type?: string | string[]; enum?: unknown[]; examples?: unknown[]; pattern?: string; minimum?: number; maximum?: number; minLength?: number; items?: Schema; contains?: Schema; default?: unknown };
interface Parameter {
  readonly name: string;
  readonly in: string;
  readonly required: boolean;
  readonly schema: Schema;
  readonly 'x-savedq-type'?: string;
}
interface Operation {
  readonly operationId: string;
  readonly parameters?: Parameter[];
  readonly requestBody?: { required: boolean; content: { 'application/json': { schema: { required?: string[]; properties: { params?: { properties: Record<string, Schema>; required?: string[] } } } } } };
  readonly responses: Record<string, { content?: { 'application/json'?: { schema: object } } }>;
  readonly security?: unknown[];
}
type Document = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, object> } };

let server: ServeProcess;
let prism: ChildProcess;
let prismUrl = '';
let doc: Document;

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  const loaded = await cli(['load', '--sample'], { env });
  expect(loaded.code, loaded.stderr).toBe(0);
  server = await startServe(env);
  doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as Document;
  const file = join(dir, 'openapi.json');
  writeFileSync(file, JSON.stringify(doc));
  const port = await freePort();
  prism = spawn(join(process.cwd(), 'node_modules', '.bin', 'prism'), ['proxy', file, server.url, '--errors', '--port', String(port), '--host', '127.0.0.1'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let said = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Prism did not start: ${said}`)), EVENT_DEADLINE_MS);
    const hear = (d: Buffer) => {
      said += d.toString();
      if (/Prism is listening/.test(said)) {
        clearTimeout(timer);
        resolve();
      }
    };
    prism.stdout?.on('data', hear);
    prism.stderr?.on('data', hear);
    prism.on('exit', () => reject(new Error(`Prism exited: ${said}`)));
  });
  prismUrl = `http://127.0.0.1:${port}`;
}, LONG_TEST_MS);
afterAll(() => {
  prism?.kill('SIGKILL');
});

/** A savedq parameter the schema cannot say all of: an RE2 pattern (any text is none), taken as a literal. */
const isPattern = (p: Parameter | undefined) => p?.['x-savedq-type'] === 'regex';

/** Values a schema calls valid. */
function validValues(schema: Schema, pattern: boolean): fc.Arbitrary<unknown> {
  const types = ([] as string[]).concat(schema.type ?? 'string').filter((t) => t !== 'null');
  if (schema.enum) return fc.constantFrom(...schema.enum.filter((v) => v !== null));
  const type = types[0];
  if (type === 'integer') return fc.integer({ min: Math.max(schema.minimum ?? -1_000_000, -1_000_000), max: Math.min(schema.maximum ?? 1_000_000, 1_000_000) });
  if (type === 'number') return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true });
  if (type === 'boolean') return fc.boolean();
  if (type === 'array') {
    const item = schema.items?.enum ? fc.constantFrom(...schema.items.enum) : fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/);
    return fc.array(item, { minLength: schema.contains ? 1 : 0, maxLength: 4 });
  }
  if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern));
  if (pattern) return fc.stringMatching(/^[a-z0-9-]{1,12}$/);
  const text = fc.string({ minLength: schema.minLength ?? 0, maxLength: 30 });
  return schema.examples ? fc.oneof(fc.constantFrom(...schema.examples), text) : text;
}

/** Values a schema calls invalid, each with what it breaks; query-string carries text, JSON its own types. */
function invalidValues(schema: Schema, required: boolean, json: boolean): [string, unknown][] {
  const types = ([] as string[]).concat(schema.type ?? 'string');
  const out: [string, unknown][] = [];
  if (schema.enum) out.push(['not in the enum', json && types.includes('boolean') ? 'yes' : 'not-one-of-them']);
  if (schema.minimum !== undefined) out.push(['under the minimum', schema.minimum - 1]);
  if (schema.maximum !== undefined) out.push(['over the maximum', schema.maximum + 1]);
  if (types.includes('integer')) out.push(['not an integer', json ? '12' : '1.5x'], ['a fraction', 1.5]);
  if (types.includes('number')) out.push(['not a number', json ? '2.5' : 'many']);
  // (A list's pattern is that of its other form, a text of comma-separated items: no item is not one.)
  if (schema.pattern && !types.includes('array')) out.push(['not its pattern', '2026-02-30'], ['not its pattern either', 'soon']);
  if (types.includes('string') && !schema.enum && !schema.pattern && json) out.push(['a number for a text', 42], ['a boolean for a text', true]);
  if (required && schema.minLength) out.push(['empty', '']);
  if (required && schema.contains) out.push(['no item', json ? [] : [',']], ['a text of no item', json ? ' , ' : ' ']);
  if (required && json) out.push(['null', null]);
  return out;
}

/** A query string of parameters (a list as one comma-separated value). */
function queryString(values: Record<string, unknown>): string {
  return new URLSearchParams(Object.entries(values).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : String(v)])).toString();
}

const headers = { 'X-API-KEY': KEY };

describe("serve's answers, held to its own OpenAPI document", () => {
  it('answers every valid request made from each operation\'s schemas with 200, which Prism finds as the document declares it', async () => {
    const operations = Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).filter(([m]) => m === 'get' || m === 'post').map(([method, op]) => ({ path, method, op })));
    // Seven saved queries, by name and by id, GET and POST; /health, /openapi.json.
    expect(operations.length).toBeGreaterThanOrEqual(7 * 2 * 2 + 1);
    let seed = 1;
    const failures: string[] = [];
    for (const { path, method, op } of operations) {
      const byName = doc.paths[path.replace(/[0-9a-f-]{36}$/, '')]?.get?.parameters;
      const paramsOf = method === 'get' ? (op.parameters ?? []) : Object.entries(op.requestBody?.content['application/json'].schema.properties.params?.properties ?? {}).map(([name, schema]) => ({ name, in: 'body', required: op.requestBody?.content['application/json'].schema.properties.params?.required?.includes(name) ?? false, schema }));
      // The caller's own SQL is asked for by another test (sandboxing's): here its absence.
      const params = paramsOf.filter((p) => p.name !== 'sql');
      const samples = fc.sample(
        fc.record(Object.fromEntries(params.map((p) => [p.name, validValues(p.schema, isPattern(p.in === 'body' ? (op.parameters ?? byName ?? []).find((g) => g.name === p.name) ?? findGet(path, p.name) : p))])), { requiredKeys: params.filter((p) => p.required).map((p) => p.name) }),
        { numRuns: params.length === 0 ? 1 : 5, seed: seed++ },
      );
      // A header parameter (Savedq-Version) goes in the headers.
      const inHeader = new Set(params.filter((p) => p.in === 'header').map((p) => p.name));
      for (const sample of samples) {
        const values = Object.fromEntries(Object.entries(sample).filter(([k]) => !inHeader.has(k)));
        const sent = { ...headers, ...Object.fromEntries(Object.entries(sample).filter(([k]) => inHeader.has(k)).map(([k, v]) => [k, String(v)])) };
        const url = `${prismUrl}${path}${method === 'get' && Object.keys(values).length > 0 ? `?${queryString(values)}` : ''}`;
        const res = await fetch(url, method === 'get' ? { headers: sent } : { method: 'POST', headers: { ...sent, 'Content-Type': 'application/json' }, body: JSON.stringify({ params: values }) });
        const text = await res.text();
        if (res.status !== 200) failures.push(`${method.toUpperCase()} ${path} ${JSON.stringify(values).slice(0, 300)}: ${res.status} ${text.slice(0, 400)}`);
      }
    }
    expect(failures).toEqual([]);
  }, LONG_TEST_MS);

  it('answers every request that breaks one of its schemas with 400, in the error envelope the document declares', async () => {
    const ajv = new Ajv2020({ strict: false });
    formats.default(ajv);
    const envelope = ajv.compile(doc.components.schemas.Error as object);
    const failures: string[] = [];
    const queries = Object.entries(doc.paths).filter(([path]) => path.startsWith('/api/endpoints/query/'));
    for (const [path, methods] of queries) {
      for (const [method, op] of Object.entries(methods).filter(([m]) => m === 'get' || m === 'post')) {
        const json = method === 'post';
        const params = json ? Object.entries(op.requestBody?.content['application/json'].schema.properties.params?.properties ?? {}).map(([name, schema]) => ({ name, required: op.requestBody?.content['application/json'].schema.properties.params?.required?.includes(name) ?? false, schema })) : (op.parameters ?? []).filter((p) => p.name !== 'sql' && p['x-savedq-type'] !== undefined);
        // (The version pin is not a parameter of the query: a version that is not one is 404, versions.test.ts.)
        // A valid call to start from: each required parameter its default, first example or first value.
        const base = Object.fromEntries(params.filter((p) => p.required).map((p) => [p.name, fc.sample(validValues(p.schema, isPattern(findGet(path, p.name))), { numRuns: 1, seed: 7 })[0]]));
        const broken: [string, Record<string, unknown>][] = [
          ...params.flatMap((p) => invalidValues(p.schema, p.required, json).map(([what, value]): [string, Record<string, unknown>] => [`${p.name}: ${what}`, { ...base, [p.name]: value }])),
          ...params.filter((p) => p.required).map((p): [string, Record<string, unknown>] => [`${p.name} missing`, Object.fromEntries(Object.entries(base).filter(([k]) => k !== p.name))]),
          ...['constructor', 'unknown_name'].map((name): [string, Record<string, unknown>] => [`an unknown ${name}`, { ...base, [name]: 'x' }]),
        ];
        for (const [what, values] of broken) {
          const res = await fetch(
            `${server.url}${path}${!json && Object.keys(values).length > 0 ? `?${queryString(values)}` : ''}`,
            json ? { method: 'POST', headers: { ...headers, 'Content-Type': 'application/json' }, body: JSON.stringify({ params: values }) } : { headers },
          );
          const body = (await res.json()) as unknown;
          if (res.status !== 400 || !envelope(body)) failures.push(`${method.toUpperCase()} ${path} (${what}) ${JSON.stringify(values).slice(0, 200)}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
        }
      }
    }
    expect(failures).toEqual([]);
  }, LONG_TEST_MS);
});

/** The GET parameter of a query's path by its name (POST's body carries no savedq type). */
function findGet(path: string, name: string): Parameter | undefined {
  return doc.paths[path]?.get?.parameters?.find((p) => p.name === name);
}

describe('timestamps at the edges of what the engine holds, and what the document says of them', () => {
  const ajv = new Ajv2020({ strict: false });
  formats.default(ajv);
  const start = () => findGet('/api/endpoints/query/logs.all', 'iso_timestamp_start') as Parameter;

  it('takes an optional timestamp left empty as left out, as its schema says; and says a regex is RE2', async () => {
    expect(ajv.validate(start().schema, '')).toBe(true);
    const empty = await fetch(`${server.url}/api/endpoints/query/logs.all?project=acme-shop&iso_timestamp_start=`, { headers });
    expect(empty.status).toBe(200);
    const project = findGet('/api/endpoints/query/usage.api-counts', 'project') as Parameter;
    expect(project.schema.description).toMatch(/RE2 regular expression.*refused/);
  });

  it('refuses an instant outside the engine’s range once its offset is applied: 400 on GET, POST and export, an error MCP and run say, never 500', async () => {
    const ranged = /a timestamp from 1900-01-01T00:00:00Z to 2299-12-31T23:59:59\.999999Z in UTC \(its offset applied\), the range the engine holds/;
    for (const value of ['1900-01-01T00:00:00+05:00', '2299-12-31T23:59:59-00:01']) {
      // The pattern admits the text; the instant is what the server checks.
      expect(ajv.validate(start().schema, value)).toBe(true);
      const query = `project=acme-shop&iso_timestamp_start=${encodeURIComponent(value)}`;
      for (const path of [`/api/endpoints/query/logs.all?${query}`, `/api/endpoints/export/logs.all?${query}`]) {
        const res = await fetch(`${server.url}${path}`, { headers });
        expect([res.status, ((await res.json()) as { error: { message: string } }).error.message], path).toEqual([400, expect.stringMatching(ranged)]);
      }
      const posted = await fetch(`${server.url}/api/endpoints/query/logs.all`, { method: 'POST', headers: { ...headers, 'Content-Type': 'application/json' }, body: JSON.stringify({ params: { project: 'acme-shop', iso_timestamp_start: value } }) });
      expect(posted.status).toBe(400);
      const mcp = new Client({ name: 'schema-test', version: '0' });
      await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers } }));
      try {
        const called = (await mcp.callTool({ name: 'logs_all', arguments: { project: 'acme-shop', iso_timestamp_start: value } })) as CallToolResult;
        expect([called.isError, (called.content[0] as { text: string }).text]).toEqual([true, expect.stringMatching(ranged)]);
      } finally {
        await mcp.close();
      }
      const run = await cli(['run', 'logs.all', '-p', 'project=acme-shop', '-p', `iso_timestamp_start=${value}`], { env });
      expect([run.code, run.stderr]).toEqual([2, expect.stringMatching(ranged)]);
    }
  });
});
