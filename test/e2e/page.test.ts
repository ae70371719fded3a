/// <reference lib="dom" />
// The functions given to page.evaluate run in the browser: they see its DOM.
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, startServe, tempDir, type ServeProcess, LONG_TEST_MS, EVENT_DEADLINE_MS } from '../helpers.js';
import { has } from '../system.js';

// serve's page for people, in real headless Chromium (Debian's): the form built from each query's
// parameters, the answer as a table and a chart, the credential kept out of the address, and nothing
// asked of any origin but the server's own.
const CHROMIUM = '/usr/bin/chromium';
const dir = tempDir();
const KEY = 'the-page-key';
const SECRET = 'a-token-secret-of-forty-bytes-0123456789';
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'cache.sqlite'), SAVEDQ_TOKEN_SECRETS: SECRET, SAVEDQ_API_KEYS: KEY };
/** A saved query of the user's whose parameters are of the kinds the built-ins lack: it answers them back. */
const KINDS = `/*
description: Its parameters back, as the server read them.
params:
  flag: { type: boolean, default: false }
  day: { type: date, default: '2026-01-01' }
  n: { type: integer, min: 1, max: 5, default: 2 }
  since: { type: timestamp }
fields:
  flag: { type: boolean }
  day: { type: string }
  n: { type: integer }
  since: { type: string }
*/
SELECT @flag AS flag, toString(@day) AS day, @n AS n, toString(@since) AS since
`;
/** A sandboxed query: the page gives it a box for the caller's own SQL over its answer. */
const SANDBOXED = `/*
description: One project's requests by status.
params:
  project: { type: string, required: true }
fields:
  status_code: { type: integer }
  n: { type: integer }
sandbox: true
*/
SELECT status_code, count() AS n FROM edge_logs WHERE project = @project GROUP BY status_code ORDER BY status_code
`;
/** Integers a double cannot hold, which the table shows with every digit. */
const WIDE = `/*
description: 64-bit integers past 2^53.
fields:
  big: { type: integer }
  neg: { type: integer }
*/
SELECT toUInt64(9007199254740993) AS big, toInt64(-9223372036854775807) AS neg
`;
/** Where the test leaves its screenshot (SAVEDQ_PAGE_SCREENSHOT: also there, as the README's picture is made). */
const SCREENSHOT = join(dir, 'page.png');

let server: ServeProcess;
let browser: Browser;

type Row = Record<string, unknown>;
const api = async (path: string, credential = KEY): Promise<{ status: number; body: { result?: Row[]; error?: { message: string } } }> => {
  const res = await fetch(`${server.url}${path}`, { headers: { Authorization: `Bearer ${credential}` } });
  return { status: res.status, body: (await res.json()) as { result?: Row[]; error?: { message: string } } };
};

/** A fresh tab (its own sessionStorage) that records every request it makes and every error it logs. */
async function openTab(path = '/'): Promise<{ tab: Page; requests: string[]; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1100, height: 1400 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  const tab = await context.newPage();
  const requests: string[] = [];
  const errors: string[] = [];
  tab.on('request', (r) => requests.push(r.url()));
  tab.on('console', (m) => {
    if (m.type() === 'error' && !/status of 40[13]/.test(m.text())) errors.push(m.text());
  });
  tab.on('pageerror', (e) => errors.push(e.message));
  await tab.goto(`${server.url}${path}`);
  await tab.getByLabel('Saved query').locator('option').first().waitFor({ state: 'attached', timeout: EVENT_DEADLINE_MS });
  return { tab, requests, errors };
}

/** Waits for the answer of a run: rows in the table, or a message of failure. */
async function answered(tab: Page): Promise<string> {
  await tab.waitForFunction(() => document.querySelector('#status')?.classList.contains('failed') || !(document.querySelector('#rows') as HTMLElement).hidden, undefined, { timeout: EVENT_DEADLINE_MS });
  return (await tab.locator('#status').textContent()) ?? '';
}

const tableRows = (tab: Page) => tab.$$eval('#rows tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
/** How many pixels of the chart's canvas are drawn on. */
const drawnPixels = (tab: Page) =>
  tab.$eval('#chart canvas', (canvas) => {
    const c = canvas as HTMLCanvasElement;
    const data = c.getContext('2d')?.getImageData(0, 0, c.width, c.height).data ?? new Uint8ClampedArray();
    let drawn = 0;
    for (let i = 3; i < data.length; i += 4) if ((data[i] ?? 0) > 0) drawn += 1;
    return drawn;
  });

beforeAll(async () => {
  const loaded = await cli(['load', '--sample'], { env });
  expect(loaded.code, loaded.stderr).toBe(0);
  mkdirSync(join(dir, 'queries'), { recursive: true });
  writeFileSync(join(dir, 'queries', 'page.kinds.sql'), KINDS);
  writeFileSync(join(dir, 'queries', 'page.sandboxed.sql'), SANDBOXED);
  writeFileSync(join(dir, 'queries', 'page.wide.sql'), WIDE);
  server = await startServe(env, ['--queries', join(dir, 'queries')]);
  if (has.chromium) {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  }
}, LONG_TEST_MS);
afterAll(async () => {
  await browser?.close();
});

describe('the page at /', () => {
  it('is sent with a strict Content-Security-Policy and nosniff, as is everything it loads; --no-ui answers 404 there', async () => {
    for (const path of ['/', '/ui/app.js', '/ui/style.css', '/ui/icon.svg']) {
      const res = await fetch(`${server.url}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-security-policy'), path).toMatch(/^default-src 'self';/);
      expect(res.headers.get('x-content-type-options'), path).toBe('nosniff');
    }
    const html = await (await fetch(`${server.url}/`)).text();
    // No inline script or style: the CSP would refuse them.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/);
    expect(html).not.toMatch(/https?:\/\//);
    const script = await (await fetch(`${server.url}/ui/app.js`)).text();
    expect(script).not.toMatch(/https?:\/\/(?!www\.w3\.org\/)/); // uPlot names the SVG namespace, and fetches nothing
    expect(statSync(new URL('../../dist/page/app.js', import.meta.url)).size).toBeLessThan(100_000);

    const off = await startServe({ ...env, SAVEDQ_DATA_DIR: join(dir, 'no-ui-data'), SAVEDQ_CACHE_FILE: join(dir, 'no-ui.sqlite') }, [], ['--no-ui']);
    try {
      for (const path of ['/', '/ui/app.js']) expect((await fetch(`${off.url}${path}`)).status, path).toBe(404);
      expect((await fetch(`${off.url}/health`)).status).toBe(200);
    } finally {
      off.child.kill('SIGTERM');
      await off.exited;
    }
  });

  it.runIf(has.chromium)('runs usage.api-counts from its form: the table has the rows the API gives, a chart is drawn, and no request leaves the origin', async () => {
    const { tab, requests, errors } = await openTab();
    await tab.getByLabel('Saved query').selectOption('usage.api-counts');
    // The form follows the parameters' types: `interval`'s allowed values as a list, project as text.
    expect(await tab.getByLabel('interval', { exact: true }).evaluate((e) => e.tagName)).toBe('SELECT');
    expect(await tab.getByLabel('interval', { exact: true }).locator('option').allTextContents()).toEqual(['minutely', 'hourly', 'daily']);
    await tab.getByLabel('interval', { exact: true }).selectOption('minutely');
    await tab.getByLabel('project', { exact: true }).fill('acme-shop');
    expect(await tab.getByLabel('API key or token').getAttribute('type')).toBe('password');
    await tab.getByLabel('API key or token').fill(KEY);
    await tab.getByRole('button', { name: 'Run usage.api-counts' }).click();
    expect(await answered(tab)).toMatch(/^\d+ rows in \d+ ms · cache (miss|hit)/);

    const { body } = await api('/api/endpoints/query/usage.api-counts?project=acme-shop&interval=minutely');
    const rows = body.result ?? [];
    expect(rows.length).toBeGreaterThan(10);
    // Minute buckets in UTC, to the minute.
    const minute = (iso: unknown) => `${String(iso).replace('T', ' ').slice(0, 16)}Z`;
    expect(await tableRows(tab)).toEqual(rows.map((r) => [minute(r.timestamp), r.total_rest_requests, r.total_storage_requests, r.total_auth_requests, r.total_realtime_requests].map(String)));
    expect(await drawnPixels(tab)).toBeGreaterThan(2_000);
    expect(await tab.locator('.u-legend .u-series').allTextContents()).toEqual(expect.arrayContaining([expect.stringContaining('total_rest_requests')]));

    // The address is a link to share: the query and its parameters, never the credential.
    expect(new URL(tab.url()).hash).toBe('#usage.api-counts?project=acme-shop&interval=minutely');
    expect(tab.url()).not.toContain(KEY);
    expect(await tab.locator('#as-run').textContent()).toBe('savedq run usage.api-counts -p project=acme-shop -p interval=minutely');
    expect(await tab.locator('#as-curl').textContent()).toBe(`curl -H "Authorization: Bearer $SAVEDQ_KEY" '${server.url}/api/endpoints/query/usage.api-counts?project=acme-shop&interval=minutely'`);
    await tab.getByRole('button', { name: 'Copy as savedq run' }).click();
    expect(await tab.evaluate(() => navigator.clipboard.readText())).toBe('savedq run usage.api-counts -p project=acme-shop -p interval=minutely');

    await tab.screenshot({ path: SCREENSHOT });
    if (process.env.SAVEDQ_PAGE_SCREENSHOT) await tab.screenshot({ path: process.env.SAVEDQ_PAGE_SCREENSHOT, clip: { x: 0, y: 0, width: 1100, height: 1060 } });
    expect(statSync(SCREENSHOT).size).toBeGreaterThan(10_000);
    expect(new Set(requests.map((u) => new URL(u).origin))).toEqual(new Set([server.url]));
    expect(errors).toEqual([]);
    await tab.context().close();
  });

  it.runIf(has.chromium)("asks a sandboxed query the caller's own SQL from a box of its own, in a POST, and shows the SQL's fields; other queries have no box", async () => {
    const { tab, requests, errors } = await openTab();
    await tab.getByLabel('API key or token').fill(KEY);
    await tab.getByLabel('Saved query').selectOption('logs.all');
    expect(await tab.locator('#query-sql').count()).toBe(0);
    await tab.getByLabel('Saved query').selectOption('page.sandboxed');
    await tab.getByLabel('project', { exact: true }).fill('acme-shop');
    const sql = 'SELECT status_code >= 500 AS failed, sum(n) AS requests FROM result GROUP BY failed ORDER BY failed';
    await tab.getByLabel('Your SQL over result (optional)').fill(sql);
    expect(await tab.locator('#query-sql-help').textContent()).toMatch(/table `result` \(its fields: status_code, n\)/);
    await tab.getByRole('button', { name: 'Run page.sandboxed' }).click();
    expect(await answered(tab)).toMatch(/^2 rows in \d+ ms/);
    const { body } = await api(`/api/endpoints/query/page.sandboxed?project=acme-shop&sql=${encodeURIComponent(sql)}`);
    expect(await tab.$$eval('#rows thead th', (ths) => ths.map((th) => th.textContent))).toEqual(['failed', 'requests']);
    expect(await tableRows(tab)).toEqual((body.result ?? []).map((r) => [String(r.failed), String(r.requests)]));
    expect(await tab.locator('#as-run').textContent()).toBe(`savedq run page.sandboxed -p project=acme-shop --sql '${sql}'`);
    expect(requests.filter((u) => u.includes('/api/endpoints/query/page.sandboxed'))).toEqual([`${server.url}/api/endpoints/query/page.sandboxed`]);
    // Refused SQL: the server's words.
    await tab.getByLabel('Your SQL over result (optional)').fill('SELECT * FROM edge_logs');
    await tab.getByRole('button', { name: 'Run page.sandboxed' }).click();
    expect(await answered(tab)).toMatch(/^400 sandbox_refused: refused: the table edge_logs/);
    expect(errors.filter((e) => !/status of 400/.test(e))).toEqual([]);
    await tab.context().close();
  });

  it.runIf(has.chromium)('answers the call run and warm made from the same cache entry, draws a chart a unit with ISO UTC times, and shows defaults', async () => {
    const call = ['functions.invocation-stats', '-p', 'project=acme-shop'];
    const ran = await cli(['run', ...call, '--verbose'], { env });
    expect(ran.code).toBe(0);
    const warmed = await cli(['warm', ...call], { env });
    expect(warmed.code).toBe(0);
    const { tab, errors } = await openTab('/#functions.invocation-stats?project=acme-shop');
    await tab.getByLabel('API key or token').fill(KEY);
    expect(await tab.locator('#param-interval-help').textContent()).toContain('Default: 1day.');
    await tab.getByRole('button', { name: 'Run functions.invocation-stats' }).click();
    // Once, under two busy loops on Node 24, a miss: what run, warm and serve said, for the next time.
    const said = `run said:\n${ran.stderr}\nwarm said:\n${warmed.stderr}\nserve's log, its end:\n${server.stderr().slice(-4000)}`;
    expect(await answered(tab), said).toMatch(/^\d+ rows in \d+ ms · cache hit, \d+ s old · read [\d,]+ rows$/);
    const listed = JSON.parse((await cli(['cache', 'list', '-f', 'json'], { env })).stdout) as { query: string }[];
    expect(listed.filter((e) => e.query === 'functions.invocation-stats')).toHaveLength(1);

    // Milliseconds and counts on axes of their own: a chart a unit.
    const labels = await tab.locator('#chart .chart').evaluateAll((charts) => charts.map((c) => c.getAttribute('aria-label')));
    expect(labels).toEqual([
      expect.stringMatching(/^Chart of count, error_count by timestamp \(UTC\), \d{4}-\d\d-\d\d \d\d:00:00 to \d{4}-\d\d-\d\d \d\d:00:00, \d+ points/),
      expect.stringMatching(/^Chart of min_execution_time, max_execution_time, avg_execution_time, p95_execution_time, p99_execution_time by timestamp \(UTC\)/),
    ]);
    expect(await tab.locator('#chart canvas').count()).toBe(2);
    // A timestamp cell keeps its line, to its unit and in UTC; every column fits the page, headers
    // wrapped at their _, decimals alike in a column.
    expect(await tab.locator('#rows td.time').first().evaluate((td) => getComputedStyle(td).whiteSpace)).toBe('nowrap');
    expect(await tab.locator('#rows td.time').first().textContent()).toMatch(/^\d{4}-\d\d-\d\d \d\d:00Z$/);
    const box = await tab.locator('#table-box').evaluate((b) => ({ scroll: b.scrollWidth, client: b.clientWidth }));
    expect(box.scroll, JSON.stringify(box)).toBeLessThanOrEqual(box.client);
    const averages = await tab.locator('#rows tbody tr td:nth-child(4)').allTextContents();
    expect(new Set(averages.map((a) => a.split('.')[1]?.length ?? 0)).size).toBe(1);
    await tab.screenshot({ path: join(dir, 'page-units.png'), fullPage: true });
    if (process.env.SAVEDQ_PAGE_SCREENSHOT_UNITS) await tab.screenshot({ path: process.env.SAVEDQ_PAGE_SCREENSHOT_UNITS, fullPage: true });
    expect(errors).toEqual([]);
    await tab.context().close();
  });

  it.runIf(has.chromium)('labels every field with its parameter, and is used from the keyboard alone: Enter in a field runs the query', async () => {
    const { tab, errors } = await openTab('/#functions.invocation-stats?project=acme-shop&interval=1hr');
    const unlabelled = await tab.$$eval('form input, form select', (controls) => controls.filter((c) => (c as HTMLInputElement).labels?.length !== 1).map((c) => c.id));
    expect(unlabelled).toEqual([]);
    // Filled from the address; nothing runs without a credential.
    expect(await tab.getByLabel('project', { exact: true }).inputValue()).toBe('acme-shop');
    expect(await tab.getByLabel('interval', { exact: true }).inputValue()).toBe('1hr');
    expect(await tab.locator('#status').textContent()).toBe('');
    // Tab from the top reaches the credential, the query, each parameter and the button, in that order.
    const order: string[] = [];
    await tab.locator('body').focus();
    for (let i = 0; i < 12; i++) {
      await tab.keyboard.press('Tab');
      order.push(await tab.evaluate(() => document.activeElement?.id || document.activeElement?.textContent || ''));
    }
    expect(order.slice(1, 7)).toEqual(['credential', 'query', 'param-project', 'param-function_id', 'param-interval', 'run']);
    await tab.getByLabel('API key or token').focus();
    await tab.keyboard.type(KEY);
    await tab.keyboard.press('Enter');
    expect(await answered(tab)).toMatch(/^\d+ rows/);
    const { body } = await api('/api/endpoints/query/functions.invocation-stats?project=acme-shop&interval=1hr');
    expect((await tableRows(tab)).length).toBe(body.result?.length);
    expect(await drawnPixels(tab)).toBeGreaterThan(2_000);
    // A result that is not a time series: a table, and no chart.
    await tab.getByLabel('Saved query').selectOption('logs.all');
    await tab.getByLabel('project', { exact: true }).fill('acme-shop');
    await tab.getByLabel('project', { exact: true }).press('Enter');
    expect(await answered(tab)).toMatch(/^100 rows/);
    expect(await tab.locator('#chart canvas').count()).toBe(0);
    expect(errors).toEqual([]);
    await tab.context().close();
  });

  it.runIf(has.chromium)('builds each control from its parameter: a checkbox, a date, a bounded number, a UTC timestamp, and checks them before asking', async () => {
    const { tab, requests, errors } = await openTab();
    await tab.getByLabel('API key or token').fill(KEY);
    await tab.getByLabel('Saved query').selectOption('page.kinds');
    const kind = (name: string) => tab.getByLabel(name, { exact: true }).evaluate((e) => [e.tagName, e.getAttribute('type'), e.getAttribute('min'), e.getAttribute('max'), e.getAttribute('step')]);
    expect(await kind('flag')).toEqual(['INPUT', 'checkbox', null, null, null]);
    expect(await kind('day')).toEqual(['INPUT', 'date', null, null, null]);
    expect(await kind('n')).toEqual(['INPUT', 'number', '1', '5', '1']);
    expect(await kind('since')).toEqual(['INPUT', 'datetime-local', null, null, '1']);
    // A number past its bound is refused in the page, naming the field: nothing is asked of the server.
    await tab.getByLabel('n', { exact: true }).fill('9');
    const asked = requests.length;
    await tab.getByRole('button', { name: 'Run page.kinds' }).click();
    expect(await answered(tab), requests.slice(asked).join(' ')).toMatch(/^n: /);
    expect(requests.length).toBe(asked);
    await tab.getByLabel('n', { exact: true }).fill('4');
    await tab.getByLabel('flag', { exact: true }).check();
    await tab.getByLabel('day', { exact: true }).fill('2026-02-03');
    await tab.getByLabel('since', { exact: true }).fill('2026-11-20T10:30');
    await tab.getByRole('button', { name: 'Run page.kinds' }).click();
    expect(await answered(tab)).toMatch(/^1 row/);
    expect(new URL(tab.url()).hash).toBe('#page.kinds?flag=true&day=2026-02-03&n=4&since=2026-11-20T10%3A30%3A00Z');
    const { body } = await api('/api/endpoints/query/page.kinds?flag=true&day=2026-02-03&n=4&since=2026-11-20T10:30:00Z');
    expect(body.result).toEqual([{ flag: true, day: '2026-02-03', n: 4, since: expect.stringMatching(/^2026-11-20 10:30:00/) }]);
    expect(await tableRows(tab)).toEqual((body.result ?? []).map((r) => [r.flag, r.day, r.n, r.since].map(String)));
    expect(errors).toEqual([]);
    await tab.context().close();
  });

  it.runIf(has.chromium)('shows a 64-bit integer past 2^53 with every digit', async () => {
    const { tab, errors } = await openTab('/#page.wide');
    await tab.getByLabel('API key or token').fill(KEY);
    await tab.getByRole('button', { name: 'Run page.wide' }).click();
    expect(await answered(tab)).toMatch(/^1 row/);
    expect(await tableRows(tab)).toEqual([['9007199254740993', '-9223372036854775807']]);
    expect(errors).toEqual([]);
    await tab.context().close();
  });

  it.runIf(has.chromium)("shows the server's message for a wrong key, and a token fixed to a project sees that project only", async () => {
    const { tab, errors } = await openTab('/#usage.api-counts?project=acme-shop&interval=daily');
    await tab.getByLabel('API key or token').fill('not-a-key');
    await tab.getByRole('button', { name: 'Run usage.api-counts' }).click();
    const refused = await api('/api/endpoints/query/usage.api-counts?project=acme-shop&interval=daily', 'not-a-key');
    expect(refused.status).toBe(401);
    expect(await answered(tab)).toBe(`401 unauthorized: ${refused.body.error?.message}`);
    expect(await tab.locator('#rows').isHidden()).toBe(true);
    await tab.context().close();

    const created = await cli(['token', 'create', '--name', 'acme-dashboard', '--query', 'usage.*', '--fix', 'project=^https://acme-shop\\.'], { env });
    expect(created.code, created.stderr).toBe(0);
    const token = created.stdout.trim();
    // Its link asks for another project: the token's value is the one the form shows, read-only, and the one the rows are of.
    const pinned = await openTab('/#usage.api-counts?project=globex-api&interval=daily');
    await pinned.tab.getByLabel('API key or token').fill(token);
    await pinned.tab.getByLabel('API key or token').press('Tab');
    // What the token sees is the server's answer (its own OpenAPI document), not read off the token.
    await pinned.tab.locator('#token-note').waitFor({ state: 'visible', timeout: EVENT_DEADLINE_MS });
    expect(await pinned.tab.locator('#token-note').textContent()).toMatch(/^This token opens 1 of \d+ saved queries, some parameters fixed\.$/);
    expect(await pinned.tab.getByLabel('Saved query').locator('option').allTextContents()).toEqual(['usage.api-counts']);
    expect(await pinned.tab.getByLabel('project', { exact: true }).inputValue()).toBe('^https://acme-shop\\.');
    expect(await pinned.tab.getByLabel('project', { exact: true }).getAttribute('readonly')).toBe('');
    await pinned.tab.getByRole('button', { name: 'Run usage.api-counts' }).click();
    expect(await answered(pinned.tab)).toMatch(/^\d+ rows/);
    const acme = await api(`/api/endpoints/query/usage.api-counts?project=${encodeURIComponent('^https://acme-shop\\.')}&interval=daily`);
    const globex = await api('/api/endpoints/query/usage.api-counts?project=globex-api&interval=daily');
    // Day buckets: the day alone.
    expect(await tableRows(pinned.tab)).toEqual((acme.body.result ?? []).map((r) => [String(r.timestamp).slice(0, 10), r.total_rest_requests, r.total_storage_requests, r.total_auth_requests, r.total_realtime_requests].map(String)));
    expect(acme.body.result).not.toEqual(globex.body.result);
    // Asked by hand for another project, the server refuses and the page says what it said.
    await pinned.tab.evaluate(() => document.getElementById('param-project')?.removeAttribute('readonly'));
    await pinned.tab.evaluate(() => delete (document.getElementById('param-project') as HTMLElement).dataset.fixed);
    await pinned.tab.getByLabel('project', { exact: true }).fill('globex-api');
    await pinned.tab.getByRole('button', { name: 'Run usage.api-counts' }).click();
    expect(await answered(pinned.tab)).toBe(`403 forbidden: parameter 'project' is fixed by the token; it cannot be "globex-api".`);
    expect(errors.concat(pinned.errors)).toEqual([]);
    await pinned.tab.context().close();
  });
});
