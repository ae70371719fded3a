import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, eventually, startServe, tempDir, type ServeProcess, EVENT_DEADLINE_MS } from '../helpers.js';
import { has } from '../system.js';

// serve handed to a browser and to operators: CORS for the origins --cors-origin names (and a real page
// in headless Chromium on another origin), and /metrics after known traffic.
const CHROMIUM = '/usr/bin/chromium';
const dir = tempDir();
const SECRET = 'a-token-secret-of-forty-bytes-0123456789';
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'cache.sqlite'), SAVEDQ_TOKEN_SECRETS: SECRET };
let page: Server;
let pageOrigin: string;
let server: ServeProcess;
let token: string;

/** A dashboard's page: it fetches a query from serve with a token and shows its rows, or what stopped it. */
function dashboard(serveUrl: string, bearer: string): string {
  return `<!doctype html><html><body><p id="out">loading</p><script>
fetch(${JSON.stringify(`${serveUrl}/api/endpoints/query/logs.all`)}, { headers: { Authorization: ${JSON.stringify(`Bearer ${bearer}`)} } })
  .then(async (r) => { const body = await r.json(); document.getElementById('out').textContent = r.status + ' ' + body.result.map((row) => row.event_message).join(',') + ' id=' + r.headers.get('X-Request-Id'); })
  .catch((e) => { document.getElementById('out').textContent = 'blocked: ' + e.message; });
</script></body></html>`;
}

beforeAll(async () => {
  const events = Array.from({ length: 2 }, (_, i) => ({ timestamp: new Date(Date.now() - i * 60_000).toISOString(), project: 'acme-shop', event_message: `acme ${i}` }));
  const loaded = await cli(['load', 'edge_logs', '-'], { env, input: events.map((e) => JSON.stringify(e)).join('\n') });
  expect(loaded.code, loaded.stderr).toBe(0);
  let serveUrl = '';
  page = createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(dashboard(serveUrl, token));
  });
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
  pageOrigin = `http://127.0.0.1:${(page.address() as AddressInfo).port}`;
  server = await startServe({ ...env, SAVEDQ_API_KEYS: 'the-api-key' }, [], ['--cors-origin', pageOrigin]);
  serveUrl = server.url;
  token = (await cli(['token', 'create', '--name', 'dashboard', '--query', 'logs.all', '--fix', 'project=acme-shop', '--rps', '1'], { env })).stdout.trim();
});
afterAll(() => new Promise<void>((resolve) => page.close(() => resolve())));

describe('browsers on another origin', () => {
  it('answers a preflight from an allowed origin with 204 and what it allows, from any other with 403 and no CORS header', async () => {
    const preflight = (origin: string) => fetch(`${server.url}/api/endpoints/query/logs.all`, { method: 'OPTIONS', headers: { Origin: origin, 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'authorization' } });
    const ok = await preflight(pageOrigin);
    expect(ok.status).toBe(204);
    expect(Object.fromEntries([...ok.headers].filter(([k]) => k.startsWith('access-control') || k === 'vary'))).toEqual({
      'access-control-allow-origin': pageOrigin,
      'access-control-allow-methods': 'GET, HEAD, POST',
      'access-control-allow-headers': 'Authorization, X-API-KEY, Cache-Control, Content-Type, Savedq-Version',
      'access-control-max-age': '600',
      'access-control-expose-headers': 'X-Cache, Age, X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Savedq-Version, Deprecation, Sunset',
      vary: 'Origin',
    });
    const refused = await preflight('http://evil.example');
    expect(refused.status).toBe(403);
    expect([...refused.headers.keys()].filter((k) => k.startsWith('access-control'))).toEqual([]);
    // An actual request from an allowed origin carries the headers; from another, none.
    const actual = await fetch(`${server.url}/health`, { headers: { Origin: pageOrigin } });
    expect(actual.headers.get('access-control-allow-origin')).toBe(pageOrigin);
    expect((await fetch(`${server.url}/health`, { headers: { Origin: 'http://evil.example' } })).headers.get('access-control-allow-origin')).toBeNull();
  });

  it.runIf(has.chromium)('a real page in headless Chromium on an allowed origin fetches a query with a token and shows its rows; on another origin it is blocked', async () => {
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    try {
      const tab = await browser.newPage();
      await tab.goto(`${pageOrigin}/`);
      await tab.waitForFunction("document.getElementById('out').textContent !== 'loading'", undefined, { timeout: EVENT_DEADLINE_MS });
      expect(await tab.textContent('#out')).toMatch(/^200 acme 0,acme 1 id=[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-z]+$/);
      // The same page from another origin (localhost is not 127.0.0.1 to a browser): CORS blocks it.
      const other = await browser.newPage();
      const said: string[] = [];
      other.on('console', (message) => said.push(message.text()));
      await other.goto(pageOrigin.replace('127.0.0.1', 'localhost'));
      await other.waitForFunction("document.getElementById('out').textContent !== 'loading'", undefined, { timeout: EVENT_DEADLINE_MS });
      expect(await other.textContent('#out')).toMatch(/^blocked: /);
      // Blocked by CORS, as the browser says, not by any other failure of the fetch.
      await eventually('the browser to say why', () => said.some((text) => /has been blocked by CORS policy/.test(text)));
    } finally {
      await browser.close();
    }
  });
});

describe('operators', () => {
  it('GET /metrics (an API key only) counts what was sent, in the Prometheus text format', async () => {
    const key = { 'X-API-KEY': 'the-api-key' };
    const counts = `${server.url}/api/endpoints/query/usage.api-counts?project=metrics&interval=daily`;
    for (let i = 0; i < 3; i++) expect((await fetch(`${server.url}/api/endpoints/query/logs.all?project=metrics`, { headers: key })).status).toBe(200);
    expect((await fetch(counts, { headers: key })).status).toBe(200);
    expect((await fetch(counts, { headers: key })).status).toBe(200);
    expect((await fetch(`${server.url}/api/endpoints/query/logs.all`, { headers: { 'X-API-KEY': 'wrong' } })).status).toBe(401);
    const limited = { Authorization: `Bearer ${token}` };
    const burst = await Promise.all(Array.from({ length: 3 }, () => fetch(`${server.url}/api/endpoints/query/logs.all`, { headers: limited })));
    const refused = burst.filter((r) => r.status === 429).length;
    expect(refused).toBeGreaterThan(0);
    expect((await fetch(`${server.url}/metrics`, { headers: limited })).status).toBe(403);

    const res = await fetch(`${server.url}/metrics`, { headers: key });
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const lines = (await res.text()).split('\n');
    const value = (series: string) => Number(lines.find((l) => l.startsWith(`${series} `))?.split(' ')[1]);
    expect(value('savedq_requests_total{query="logs.all",status="200"}')).toBeGreaterThanOrEqual(3);
    expect(value('savedq_requests_total{query="usage.api-counts",status="200"}')).toBe(2);
    expect(value('savedq_cache_total{query="usage.api-counts",outcome="miss"}')).toBe(1);
    expect(value('savedq_cache_total{query="usage.api-counts",outcome="hit"}')).toBe(1);
    expect(value('savedq_requests_total{query="other",status="401"}')).toBe(1);
    expect(value('savedq_rate_limited_total')).toBe(refused);
    expect(value('savedq_request_duration_seconds_count{query="usage.api-counts"}')).toBe(2);
    expect(value('savedq_engine_queue_depth')).toBe(0);
    expect(lines.some((l) => l.startsWith('process_cpu_seconds_total '))).toBe(true);
    expect(lines.some((l) => l.startsWith('nodejs_heap_size_used_bytes '))).toBe(true);
    expect(lines.filter((l) => l.startsWith('# TYPE savedq_')).map((l) => l.split(' ').slice(2).join(' '))).toEqual(
      expect.arrayContaining(['savedq_requests_total counter', 'savedq_request_duration_seconds histogram', 'savedq_cache_total counter', 'savedq_rate_limited_total counter', 'savedq_warm_total counter', 'savedq_engine_queue_depth gauge']),
    );
  });
});
