import { request } from 'node:http';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InputError, NotFoundError } from '../../src/errors.js';
import { normaliseParams, parsePairs } from '../../src/queries/params.js';
import { startServer, type RunningServer } from '../../src/http/server.js';
import { parseQueryString } from '../../src/http/query-route.js';
import { parseIsoTimestamp, toIsoMicros } from '../../src/time.js';
import { builtins, endpoints, load, testLibrary, logInto, serveOptions, tempDir, cli } from '../helpers.js';

const lib = testLibrary();
const KEY = 'hostile-test-key';
let server: RunningServer;

const HOSTILE = [
  "'; DROP TABLE edge_logs; --",
  "x' OR '1'='1",
  'back\\slash\\',
  '"double" `tick`',
  '@project',
  '{project:String}',
  '{now:DateTime64(6)}',
  'line\nbreak\ttab\r\u0000nul\u0007bell',
  'ünïcödé 🚀',
  'x'.repeat(100_000),
];

beforeAll(async () => {
  await load(lib, 'edge_logs', [
    { timestamp: new Date().toISOString(), project: "o'brien", metadata: { request: { url: "https://o'brien.example/rest/x", path: '/rest/x' } } },
  ]);
  server = await startServer(lib, serveOptions({ apiKeys: [KEY] }, { version: 't', log: logInto() }));
});
afterAll(() => server?.close());

describe('hostile parameter values', () => {
  it('are bound as values, never SQL: every endpoint answers or refuses, and the tables survive', async () => {
    for (const value of HOSTILE) {
      for (const e of endpoints) {
        const params: Array<[string, string]> = e.params.filter((p) => p.required).map((p) => [p.name, p.allowed?.[0] ?? value]);
        const outcome = await lib.run({ nameOrId: e.name, params, cache: 'skip' }).then(
          (r) => r.rows,
          (err: unknown) => err,
        );
        if (!Array.isArray(outcome)) expect(outcome, `${e.name} ${value.slice(0, 20)}`).toBeInstanceOf(InputError);
        else expect(outcome).toEqual([]);
      }
    }
    const quoted = await lib.run({ nameOrId: 'logs.all', params: [['project', "o'brien"]] });
    expect(quoted.rows).toHaveLength(1);
    expect((await (await lib.warehouse()).query('SELECT count() AS n FROM edge_logs', {}))[0]).toEqual({ n: 1 });
  });

  it('over HTTP get 200 or 400, never a crash', async () => {
    for (const value of HOSTILE.slice(0, -1)) {
      const res = await fetch(`${server.url}/api/endpoints/query/logs.all?project=${encodeURIComponent(value)}`, { headers: { 'X-API-KEY': KEY } });
      expect([200, 400], value).toContain(res.status);
    }
    // Invalid UTF-8, percent-encoded.
    const bad = await fetch(`${server.url}/api/endpoints/query/logs.all?project=%C3%28`, { headers: { 'X-API-KEY': KEY } });
    expect(bad.status).toBe(400);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });

  it('a pathological regular expression returns promptly (RE2 is linear)', async () => {
    await load(lib, 'edge_logs', [
      { timestamp: new Date().toISOString(), project: 'redos', metadata: { request: { url: `https://x/${'a'.repeat(5000)}`, path: '/rest' } } },
    ]);
    const started = Date.now();
    const r = await lib.run({ nameOrId: 'usage.api-counts', params: [['project', '(a+)+$|(a|aa)*c'], ['interval', 'daily']], cache: 'skip' });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(r.rows.reduce((n, row) => n + (row.total_rest_requests as number), 0)).toBe(1);
  });

  it('saved queries run read-only: one that asks the engine to lift it is refused, on the way every run takes', async () => {
    const queries = tempDir();
    writeFileSync(join(queries, 'w.unlock.sql'), '/*\nparams: {}\n*/\nSELECT count() AS n FROM edge_logs SETTINGS readonly = 0\n');
    writeFileSync(join(queries, 'w.bounded.sql'), '/*\nparams: {}\n*/\nSELECT count() AS n FROM edge_logs SETTINGS max_threads = 1\n');
    const dir = tempDir();
    const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'cache.sqlite'), SAVEDQ_QUERIES: queries };
    // Settings other than readonly are the query's to choose (readonly=2), so the refusal is the engine's.
    const bounded = await cli(['run', 'w.bounded', '-f', 'json'], { env });
    expect([bounded.code, JSON.parse(bounded.stdout)]).toEqual([0, [{ n: 0 }]]);
    const unlock = await cli(['run', 'w.unlock', '-f', 'json'], { env });
    expect([unlock.code, unlock.stdout]).toEqual([2, '']);
    expect(unlock.stderr).toMatch(/Cannot modify 'readonly' setting in readonly mode/);
  });
});

describe('HTTP under hostile load', () => {
  it('answers 300 concurrent wrong-key requests with 401 and keeps serving', async () => {
    const url = `${server.url}/api/endpoints/query/logs.all?project=x`;
    const statuses = await Promise.all(
      Array.from({ length: 300 }, (_, i) => fetch(url, { headers: { 'X-API-KEY': `wrong-${i}` } }).then((r) => r.status)),
    );
    expect(new Set(statuses)).toEqual(new Set([401]));
    expect((await fetch(url, { headers: { 'X-API-KEY': KEY } })).status).toBe(200);
  });

  it('does not let a slow client hold others up', async () => {
    const { port } = new URL(server.url);
    const slow = connect(Number(port), '127.0.0.1');
    slow.write('GET /health HTTP/1.1\r\nHost: x\r\n'); // and then nothing more, for now
    const started = Date.now();
    const res = await fetch(`${server.url}/health`);
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(2000);
    slow.destroy();
  });

  it('answers an oversized header with 431 on a raw connection', async () => {
    const { port } = new URL(server.url);
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/health', headers: { 'X-Big': 'b'.repeat(40_000) } }, (res) => resolve(res.statusCode));
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(431);
  });

  it('answers every request line too long with 414, whatever its length, sent whole or in pieces; long headers after a short line with 431', async () => {
    const { port } = new URL(server.url);
    /** What a raw connection is answered when it sends these pieces, one after the other. */
    const answered = (pieces: string[]) =>
      new Promise<number>((resolve, reject) => {
        const socket = connect(Number(port), '127.0.0.1');
        let text = '';
        socket.setEncoding('latin1').on('data', (d: string) => (text += d));
        socket.on('error', () => undefined); // the server may close before all is sent
        socket.on('close', () => {
          const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1];
          if (status) resolve(Number(status));
          else reject(new Error(`no answer: ${JSON.stringify(text.slice(0, 200))}`));
        });
        socket.on('connect', () => {
          for (const piece of pieces) socket.write(piece);
        });
      });
    for (const length of [9_000, 17_000, 40_000, 200_000]) {
      const path = `/api/endpoints/query/logs.all?project=${'x'.repeat(length)}`;
      expect(await answered([`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`]), `${length}`).toBe(414);
      // A line that reaches the server in pieces.
      expect(await answered([`GET ${path.slice(0, 1000)}`, `${path.slice(1000)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`]), `${length} in pieces`).toBe(414);
    }
    expect(await answered([`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`])).toBe(431);
  });
});

describe('properties (fast-check)', () => {
  it('normalising parameters either throws an input error or returns exactly the declared names', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...endpoints),
        fc.array(fc.tuple(fc.oneof(fc.constantFrom('project', 'interval', 'function_id', 'project_tier', 'iso_timestamp_start'), fc.string()), fc.string())),
        (endpoint, raw) => {
          try {
            const params = normaliseParams(endpoint, raw);
            expect(Object.keys(params)).toEqual(endpoint.params.map((p) => p.name));
            for (const p of endpoint.params) if (p.required) expect(params[p.name]).not.toBe('');
          } catch (err) {
            expect(err).toBeInstanceOf(InputError);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('name=value pairs parse back to what was joined', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }).filter((s) => !s.includes('=')), fc.string(), (name, value) => {
        expect(parsePairs([`${name}=${value}`])).toEqual([[name, value]]);
      }),
    );
  });

  it('ISO timestamps round-trip to the microsecond, with any offset', () => {
    const min = Date.UTC(1900, 0, 2);
    const max = Date.UTC(2299, 11, 30);
    fc.assert(
      fc.property(fc.integer({ min, max }), fc.integer({ min: 0, max: 999 }), fc.integer({ min: -14 * 60, max: 14 * 60 }), (ms, us, offset) => {
        const micros = BigInt(ms) * 1000n + BigInt(us);
        const iso = toIsoMicros(micros);
        expect(parseIsoTimestamp(iso)).toBe(micros);
        const local = new Date(ms + offset * 60_000).toISOString().slice(0, 23);
        const sign = offset < 0 ? '-' : '+';
        const zone = `${sign}${String(Math.floor(Math.abs(offset) / 60)).padStart(2, '0')}:${String(Math.abs(offset) % 60).padStart(2, '0')}`;
        expect(parseIsoTimestamp(`${local}${String(us).padStart(3, '0')}${zone}`)).toBe(micros);
      }),
    );
  });

  it('the timestamp parser never throws, whatever the text', () => {
    fc.assert(fc.property(fc.string(), (text) => void parseIsoTimestamp(text)), { numRuns: 2000 });
  });

  it('query strings decode to the pairs that were encoded, and bad encoding is an input error', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string({ minLength: 1 }), fc.string())), (pairs) => {
        const qs = pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
        expect(parseQueryString(qs)).toEqual(pairs);
      }),
    );
    fc.assert(
      fc.property(fc.string(), (text) => {
        try {
          parseQueryString(text);
        } catch (err) {
          expect(err).toBeInstanceOf(InputError);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('an unknown endpoint is always a not-found error', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string().filter((s) => !endpoints.some((e) => e.name === s.trim() || e.id === s.trim().toLowerCase())), async (name) => {
        await expect(builtins.find(name)).rejects.toThrow(NotFoundError);
      }),
    );
  });
});

