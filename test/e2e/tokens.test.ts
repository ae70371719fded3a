import { createHmac } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { Access, secretKeys } from '../../src/access/index.js';
import { UnauthorizedError } from '../../src/errors.js';
import { keyChecker } from '../../src/http/keys.js';
import { cli, eventually, startServe, tempDir, type ServeProcess } from '../helpers.js';

// Signed tokens on a real serve: minted by `savedq token create`, and by hand with node:crypto, so a
// mistake in one is not hidden by the other.
const dir = tempDir();
const queries = join(dir, 'queries');
mkdirSync(queries);
writeFileSync(join(queries, 'by.tags.sql'), '/*\nparams:\n  tags: { type: "string[]" }\n  project: { type: string, required: true }\n*/\nSELECT @project AS project, arrayStringConcat(@tags, \',\') AS tags\n');
const SECRET = 'a-token-secret-of-forty-bytes-0123456789';
const OLD_SECRET = 'an-older-secret-still-listed-0123456789';
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'cache.sqlite'), SAVEDQ_QUERIES: queries, SAVEDQ_TOKEN_SECRETS: `${SECRET},${OLD_SECRET}` };
let server: ServeProcess;

const b64 = (value: object | string) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
/** A JWT made by hand: header and payload as given, HS256 over them with a secret (or no signature). */
function handMade(payload: object, secret: string | undefined = SECRET, header: object = { alg: 'HS256', typ: 'JWT' }): string {
  const body = `${b64(header)}.${b64(payload)}`;
  return `${body}.${secret === undefined ? '' : createHmac('sha256', secret).update(body).digest('base64url')}`;
}
const now = () => Math.floor(Date.now() / 1000);
const acme = (extra: object = {}) => ({ name: 'acme-dashboard', exp: now() + 3600, scopes: [{ query: 'logs.all', fixed_params: { project: 'acme-shop' } }], ...extra });

async function get(path: string, token: string, header: 'bearer' | 'key' = 'bearer') {
  const headers: Record<string, string> = header === 'bearer' ? { Authorization: `Bearer ${token}` } : { 'X-API-KEY': token };
  const res = await fetch(`${server.url}/api/endpoints/query/${path}`, { headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text) as { result?: Record<string, unknown>[]; error?: { code: string; message: string } } };
}

beforeAll(async () => {
  const events = [
    ...Array.from({ length: 3 }, (_, i) => ({ timestamp: new Date(Date.now() - i * 60_000).toISOString(), project: 'acme-shop', event_message: `acme ${i}`, metadata: { request: { url: 'https://acme-shop.example/rest/v1/x', path: '/rest/v1/x' } } })),
    ...Array.from({ length: 2 }, (_, i) => ({ timestamp: new Date(Date.now() - i * 60_000).toISOString(), project: 'globex', event_message: `globex ${i}`, metadata: { request: { url: 'https://globex.example/rest/v1/x', path: '/rest/v1/x' } } })),
    // Other projects whose URLs contain "acme-shop": a pin that is not anchored would count them.
    { timestamp: new Date().toISOString(), project: 'acme-shop-2', event_message: 'acme-shop-2', metadata: { request: { url: 'https://acme-shop-2.example/rest/v1/x', path: '/rest/v1/x' } } },
    { timestamp: new Date().toISOString(), project: 'initech', event_message: 'initech', metadata: { request: { url: 'https://initech.example/rest/v1/acme-shop', path: '/rest/v1/acme-shop' } } },
  ];
  const loaded = await cli(['load', 'edge_logs', '-'], { env, input: events.map((e) => JSON.stringify(e)).join('\n') });
  expect(loaded.code, loaded.stderr).toBe(0);
  server = await startServe({ ...env, SAVEDQ_API_KEYS: 'the-api-key' });
});

describe('signed tokens', () => {
  it('savedq token create mints a token serve takes; inspect shows its claims, that it verifies, and when it expires', async () => {
    const created = await cli(['token', 'create', '--name', 'acme-dashboard', '--query', 'logs.all', '--fix', 'project=acme-shop', '--ttl', '1h'], { env });
    expect(created.code, created.stderr).toBe(0);
    const token = created.stdout.trim();
    const r = await get('logs.all', token);
    expect(r.status).toBe(200);
    expect(r.body.result?.map((row) => row.event_message)).toEqual(['acme 0', 'acme 1', 'acme 2']);
    const inspected = await cli(['token', 'inspect', token], { env });
    expect(inspected.stdout).toMatch(/"name": "acme-dashboard"/);
    expect(inspected.stdout).toMatch(/^verifies: yes$/m);
    expect(inspected.stdout).toMatch(/^expires: \d{4}-.*Z \(in (59|60) min\)$/m);
    expect(inspected.code).toBe(0);
    // Another secret: it does not verify, exit 1; no secret at all: it cannot tell, exit 2. The claims either way.
    const elsewhere = await cli(['token', 'inspect', token], { env: { ...env, SAVEDQ_TOKEN_SECRETS: 'another-secret-entirely-0123456789abcdef' } });
    expect(elsewhere.stdout).toMatch(/^verifies: no: the token's signature does not verify\.$/m);
    expect(elsewhere).toMatchObject({ code: 1, stderr: "savedq: the token does not verify: the token's signature does not verify.\n" });
    const unknown = await cli(['token', 'inspect', token], { env: { ...env, SAVEDQ_TOKEN_SECRETS: '' } });
    expect(unknown.stdout).toMatch(/"name": "acme-dashboard"[^]*^verifies: cannot tell: no token secret is given$/m);
    expect(unknown).toMatchObject({ code: 2, stderr: 'savedq: cannot tell whether the token verifies: give the secret serve signs with (--token-secret-file, or SAVEDQ_TOKEN_SECRETS).\n' });
    const month = await cli(['token', 'create', '--name', 'm', '--query', 'logs.all', '--fix', 'project=acme-shop', '--ttl', '30d'], { env });
    expect((await cli(['token', 'inspect', month.stdout.trim()], { env })).stdout).toMatch(/^expires: .* \(in 30 days\)$/m);
  });

  it('refuses with 401 and WWW-Authenticate: Bearer what is not a valid token, saying why', async () => {
    const cases: [string, string][] = [
      [handMade(acme(), undefined, { alg: 'none', typ: 'JWT' }), 'the token is not signed with HS256.'],
      [handMade(acme(), SECRET, { alg: 'HS512', typ: 'JWT' }), 'the token is not signed with HS256.'],
      [`${handMade(acme()).split('.').slice(0, 1).join('.')}.${b64({ ...acme(), scopes: [{ query: '*' }] })}.${handMade(acme()).split('.')[2]}`, "the token's signature does not verify."],
      [handMade(acme(), 'a-secret-that-is-no-longer-listed-012345'), "the token's signature does not verify."],
      [handMade(acme({ exp: now() - 10 })), 'token expired.'],
      [handMade(acme({ nbf: now() + 600 })), 'token not yet valid.'],
      [handMade({ name: 'no-exp', scopes: [{ query: 'logs.all' }] }), 'the token has no expiry (exp).'],
      [handMade(acme({ scopes: [] })), 'the token has no scopes.'],
      ['not.a.token', 'the token is malformed.'],
    ];
    for (const [token, message] of cases) {
      const r = await get('logs.all', token);
      expect([r.status, r.headers.get('www-authenticate'), r.body.error?.message], token).toEqual([401, 'Bearer', message]);
    }
    // An older secret still listed verifies; so does a token sent in X-API-KEY.
    expect((await get('logs.all', handMade(acme(), OLD_SECRET))).status).toBe(200);
    expect((await get('logs.all', handMade(acme()), 'key')).status).toBe(200);
  });

  it('a fixed parameter is always the token’s: absent or equal it runs with it, another value is 403 naming it (string, regex, string[])', async () => {
    const pinned = handMade({ name: 'pinned', exp: now() + 600, scopes: [{ query: 'logs.all', fixed_params: { project: 'acme-shop' } }, { query: 'usage.*', fixed_params: { project: '^https://acme-shop\\.' } }, { query: 'by.tags', fixed_params: { tags: 'a,b', project: 'acme-shop' } }] });
    const projects = (r: Awaited<ReturnType<typeof get>>) => [...new Set(r.body.result?.map((row) => (row.event_message as string).split(' ')[0]))];
    expect(projects(await get('logs.all', pinned))).toEqual(['acme']);
    expect(projects(await get('logs.all?project=acme-shop', pinned))).toEqual(['acme']);
    for (const attempt of ['logs.all?project=globex', 'logs.all?project=acme-shop&project=globex', 'logs.all?project=globex&project=acme-shop', 'logs.all?project=', `usage.api-counts?interval=daily&project=${encodeURIComponent('globex')}`, 'by.tags?tags=a,c', 'by.tags?tags=b,a']) {
      const r = await get(attempt, pinned);
      expect([r.status, r.body.error?.code], attempt).toEqual([403, 'forbidden']);
      expect(r.body.error?.message).toMatch(/^parameter '(project|tags)' is fixed by the token/);
    }
    expect((await get('by.tags', pinned)).body.result).toEqual([{ project: 'acme-shop', tags: 'a,b' }]);
    expect((await get('usage.api-counts?interval=daily', pinned)).status).toBe(200);
    // A glob scope opens what it matches, by name or id, and nothing else.
    expect((await get('functions.invocation-stats?project=acme-shop', pinned))).toMatchObject({ status: 403, body: { error: { code: 'forbidden', message: 'the token does not open functions.invocation-stats.' } } });
    // Tried hard: another project's rows by a parameter's other spelling, a header, another query name.
    expect((await get('logs.all?Project=globex', pinned)).status).toBe(400);
    const both = await fetch(`${server.url}/api/endpoints/query/logs.all`, { headers: { Authorization: `Bearer ${pinned}`, 'X-API-KEY': 'the-api-key' } });
    expect(projects({ status: both.status, headers: both.headers, body: (await both.json()) as { result?: Record<string, unknown>[] } })).toEqual(['acme']);
    const ids = JSON.parse((await cli(['list', '-f', 'json'], { env })).stdout) as { name: string; id: string }[];
    const logsAll = ids.find((q) => q.name === 'logs.all')?.id as string;
    expect(projects(await get(`${logsAll}?project=acme-shop`, pinned))).toEqual(['acme']);
    expect((await get(`${logsAll}?project=globex`, pinned)).status).toBe(403);
  });

  it('a burst past the token’s rps: some 429 with Retry-After, the rest 200, RateLimit headers on each; the bucket refills', async () => {
    const limited = handMade({ name: 'limited', exp: now() + 600, scopes: [{ query: 'logs.all', fixed_params: { project: 'acme-shop' } }], limits: { rps: 2 } });
    const burst = await Promise.all(Array.from({ length: 8 }, () => get('logs.all', limited)));
    const refused = burst.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(burst.filter((r) => r.status === 200).length).toBeGreaterThan(0);
    expect(burst.every((r) => r.status === 200 || r.status === 429)).toBe(true);
    for (const r of refused) {
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(r.body.error?.code).toBe('rate_limited');
    }
    for (const r of burst) expect([r.headers.get('ratelimit-limit'), r.headers.get('ratelimit-remaining')]).toEqual(['2', expect.stringMatching(/^\d+$/)]);
    await eventually('the bucket to refill', async () => (await get('logs.all', limited)).status === 200);
  });

  it('every answer carries X-Request-Id: the caller’s own when well formed, else a fresh one; the log names the caller, never the token', async () => {
    const token = handMade(acme());
    const mine = await fetch(`${server.url}/api/endpoints/query/logs.all`, { headers: { Authorization: `Bearer ${token}`, 'X-Request-Id': 'dash-42.a_b' } });
    expect(mine.headers.get('x-request-id')).toBe('dash-42.a_b');
    const bad = await fetch(`${server.url}/health`, { headers: { 'X-Request-Id': 'no spaces allowed' } });
    expect(bad.headers.get('x-request-id')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-z]+$/);
    // Refusals too, those answered at once (an unknown key, a forged token once refused, a path, a method)
    // as those answered later (a token verified first).
    const forged = handMade(acme(), 'not-the-secret-of-this-server-0123456789');
    const refusals: [string, RequestInit, number][] = [
      ['/api/endpoints/query/logs.all', { headers: { 'X-API-KEY': 'no-such-key' } }, 401],
      ['/api/endpoints/query/logs.all', { headers: { Authorization: `Bearer ${forged}` } }, 401],
      ['/api/endpoints/query/logs.all', { headers: { Authorization: `Bearer ${forged}` } }, 401],
      ['/no/such/path', {}, 404],
      ['/api/endpoints/query/logs.all', { method: 'PUT' }, 405],
    ];
    for (const [i, [path, init, status]] of refusals.entries()) {
      const r = await fetch(`${server.url}${path}`, { ...init, headers: { ...(init.headers as Record<string, string> | undefined), 'X-Request-Id': `refused-${i}` } });
      await r.text();
      expect([r.status, r.headers.get('x-request-id')], `${i}`).toEqual([status, `refused-${i}`]);
    }
    await server.waitFor(/GET logs\.all 200 \d+ms cache=- caller="acme-dashboard" id=dash-42\.a_b$/m);
    expect(server.stderr()).not.toContain(token);
    expect(server.stderr()).not.toContain(SECRET);
  });

  it('a token pinned to a project by an anchored pattern counts that project alone; a pin not anchored, made on purpose, counts every URL with the name in it', async () => {
    const restOf = async (token: string) => {
      const r = await get('usage.api-counts?interval=hourly', token);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return (r.body.result ?? []).reduce((sum, row) => sum + Number(row.total_rest_requests), 0);
    };
    const mint = async (...fix: string[]) => {
      const created = await cli(['token', 'create', '--name', 'acme-usage', '--query', 'usage.*', ...fix], { env });
      expect(created.code, created.stderr).toBe(0);
      return created.stdout.trim();
    };
    expect(await restOf(await mint('--fix', 'project=^https://acme-shop\\.'))).toBe(3);
    expect(await restOf(await mint('--fix', 'project=acme-shop', '--fix-unanchored'))).toBe(5);
    // One token for logs.all (an exact project) and usage.* (a pattern): a --fix for each.
    const both = await mint('--query', 'logs.all', '--fix', 'usage.*:project=^https://acme-shop\\.', '--fix', 'logs.all:project=acme-shop');
    expect(await restOf(both)).toBe(3);
    expect((await get('logs.all', both)).body.result).toHaveLength(3);
  });

  it("answers /openapi.json asked with a token as that token sees the server: its queries, its fixed parameters, itself; without a credential, every query; a bad one, 401", async () => {
    const doc = async (headers: Record<string, string> = {}) => {
      const res = await fetch(`${server.url}/openapi.json`, { headers });
      return { status: res.status, body: (await res.json()) as { paths: Record<string, { get?: { parameters?: { name: string; 'x-savedq-fixed'?: string }[] } }>; 'x-savedq-caller'?: object } };
    };
    const token = handMade({ name: 'acme-usage', exp: now() + 600, scopes: [{ query: 'usage.*', fixed_params: { project: '^https://acme-shop\\.' } }] });
    const mine = await doc({ Authorization: `Bearer ${token}` });
    expect(mine.status).toBe(200);
    expect(mine.body['x-savedq-caller']).toEqual({ kind: 'token', name: 'acme-usage' });
    expect(Object.keys(mine.body.paths).filter((p) => p.startsWith('/api/')).sort()).toEqual(['/api/endpoints/query/c3e8f1a0-6b2d-4d7e-a9f5-1e4b8c2d7a23', '/api/endpoints/query/usage.api-counts']);
    expect(mine.body.paths['/api/endpoints/query/usage.api-counts']?.get?.parameters?.find((p) => p.name === 'project')?.['x-savedq-fixed']).toBe('^https://acme-shop\\.');
    const everyone = await doc();
    expect(everyone.body['x-savedq-caller']).toBeUndefined();
    expect(Object.keys(everyone.body.paths).filter((p) => p.startsWith('/api/')).length).toBeGreaterThan(2);
    expect((await doc({ Authorization: `Bearer ${token}x` })).status).toBe(401);
  });

  it('token create refuses what a token could never be used for', async () => {
    const refusals: [string[], RegExp][] = [
      [['--query', 'logs.all'], /required option '--name <name>' not specified/],
      [['--name', 'x'], /give at least one --query/],
      [['--name', 'x', '--query', 'nothing.*'], /matches no saved query/],
      [['--name', 'x', '--query', 'logs.all', '--fix', 'interval=daily'], /logs\.all has no parameter 'interval'/],
      [['--name', 'x', '--query', 'usage.*', '--fix', 'interval=weekly'], /not a value of usage\.api-counts's 'interval'/],
      [['--name', 'x', '--query', 'usage.*', '--fix', 'project=acme-shop'], /'project' is a pattern matched anywhere.*anchor it at the start, e\.g\. --fix 'project=\^https:\/\/acme-shop\\\.' for a host, or give --fix-unanchored/],
      [['--name', 'x', '--query', 'usage.*', '--fix', 'logs.all:project=acme-shop'], /is for --query "logs\.all", which is not given/],
      [['--name', 'x', '--query', 'logs.all', '--ttl', 'forever'], /invalid --ttl "forever"/],
    ];
    for (const [args, message] of refusals) {
      const r = await cli(['token', 'create', ...args], { env });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stdout).toBe('');
    }
    const short = await cli(['token', 'create', '--name', 'x', '--query', 'logs.all'], { env: { ...env, SAVEDQ_TOKEN_SECRETS: 'short' } });
    expect(short).toMatchObject({ code: 2, stderr: expect.stringMatching(/token secret 1 is 5 bytes long; a secret is at least 32/) });
  });
});

describe('a credential decided at once', () => {
  // serve answers a refusal decided at once without a promise or an abort signal (http/server.ts),
  // which makes a flood of forged tokens much cheaper. What is decided at once, and what waits for a
  // verification; each case on an Access of its own, a token first shown once where the case says so.
  const good = handMade(acme());
  const forged = handMade(acme(), 'not-the-secret-of-this-server-0123456789');
  /** An Access taking these API keys, and tokens signed with SECRET. */
  const accessOf = (keys = ['a-key']) => new Access({ isKey: keyChecker(keys), secrets: secretKeys([SECRET]) });
  /** A credential's caller or refusal as a promise, whether it is decided at once (returned or thrown) or later. */
  const decide = async (access: Access, credential: string) => access.authenticate(credential);

  it.each([
    ['an API key', 'a-key', false, 'caller'],
    ['an unknown key', 'not-a-key', false, 'refused'],
    ['a token not seen before', good, false, 'promise'],
    ['a token verified before', good, true, 'caller'],
    ['a forged token not seen before', forged, false, 'promise'],
    ['a forged token refused before', forged, true, 'refused'],
  ] as const)('%s', async (_what, credential, shownBefore, expected) => {
    const access = accessOf();
    if (shownBefore) await decide(access, credential).catch(() => undefined);
    let decided: 'caller' | 'refused' | 'promise' | undefined;
    try {
      const caller = access.authenticate(credential);
      decided = caller instanceof Promise ? 'promise' : 'caller';
      await caller;
    } catch (err) {
      if (!(err instanceof UnauthorizedError)) throw err;
      decided ??= 'refused';
    }
    expect(decided).toBe(expected);
  });

  it.each([
    ['a key with a word after it', 'a-key x'],
    ['a token with a space inside', `${good.slice(0, 20)} ${good.slice(20)}`],
    ['a token with a tab inside', `${good.slice(0, 20)}\t${good.slice(20)}`],
  ])('names whitespace inside a credential: %s', async (_what, credential) => {
    await expect(decide(accessOf(), credential)).rejects.toThrow('the credential holds whitespace: send the key or the token alone.');
  });

  it('takes a key that holds a space (a key file may give one) as any other key', () => {
    expect(accessOf(['a-key', 'a spaced key']).authenticate('a spaced key')).toMatchObject({ kind: 'key', name: 'key 2' });
  });

  it('a token made to end as one decided before (its signature kept, its claims changed) is verified as any other', async () => {
    const access = accessOf();
    expect((await decide(access, good)).name).toBe('acme-dashboard');
    const [header, , signature] = good.split('.');
    const widened = `${header}.${b64(acme({ scopes: [{ query: '*' }] }))}.${signature}`;
    expect(access.known(widened)).toBeUndefined();
    await expect(decide(access, widened)).rejects.toThrow("the token's signature does not verify.");
    expect(access.known(good)?.name).toBe('acme-dashboard');
    // Refused for what it says (not yet valid); the same signature under other claims is not refused for that.
    const early = handMade(acme({ nbf: now() + 600 }));
    await expect(decide(access, early)).rejects.toThrow('token not yet valid.');
    const [earlyHeader, , earlySignature] = early.split('.');
    await expect(decide(access, `${earlyHeader}.${b64(acme())}.${earlySignature}`)).rejects.toThrow("the token's signature does not verify.");
    await expect(decide(access, early)).rejects.toThrow('token not yet valid.');
  });
});
