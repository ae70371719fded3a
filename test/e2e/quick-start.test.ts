import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadingSqlite } from '../../src/store/sqlite-module.js';
import { logTablesEmpty } from '../../src/warehouse/schema.js';
import { cli, inTerminal, NO_CONFIG, startServe, tempDir, testLibrary } from '../helpers.js';

// What a newcomer meets in the first hour, through the built CLI: the quick start run twice, a load
// that must reach the cache, and sample data that looks like traffic.
const dir = tempDir();
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'cache.sqlite') };
const run = (...args: string[]) => cli(args, { env });

type Row = Record<string, unknown>;
async function rows(...args: string[]): Promise<Row[]> {
  const r = await run('run', ...args, '-f', 'json');
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Row[];
}
/** A saved query of the test's own that counts a table's rows (no built-in does). */
const queries = join(dir, 'queries');
async function count(table: string): Promise<number> {
  const r = await cli(['--queries', queries, 'run', 'count', '-p', `table=${table}`, '--no-cache', '-f', 'json'], { env });
  expect(r.code, r.stderr).toBe(0);
  return Number((JSON.parse(r.stdout) as Row[])[0]?.n);
}

beforeAll(async () => {
  mkdirSync(queries);
  writeFileSync(
    join(queries, 'count.sql'),
    "/*\nparams:\n  table: { allowed: [edge_logs, function_edge_logs], required: true }\n*/\nSELECT count() AS n FROM merge(currentDatabase(), concat('^', @table, '$'))\n",
  );
  const r = await run('load', '--sample');
  expect(r.code, r.stderr).toBe(0);
});

describe('the quick start, run twice', () => {
  it('loads the sample once: a second load --sample adds nothing and says so; --replace loads it anew', async () => {
    // As of one instant: a window that slides between the two runs would lose an event at its edge.
    const asOf = ['--at', new Date(Date.now() + 60_000).toISOString()];
    const before = await rows('usage.api-counts', '-p', 'project=acme-shop', '-p', 'interval=daily', '--no-cache', ...asOf);
    const again = await run('load', '--sample');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toBe(
      'edge_logs holds the sample already (60000 rows): nothing loaded; --replace loads it anew, as of now\n' +
        'function_edge_logs holds the sample already (24000 rows): nothing loaded; --replace loads it anew, as of now\n',
    );
    expect(await count('edge_logs')).toBe(60_000);
    expect(await count('function_edge_logs')).toBe(24_000);
    expect(await rows('usage.api-counts', '-p', 'project=acme-shop', '-p', 'interval=daily', '--no-cache', ...asOf)).toEqual(before);

    const replaced = await run('load', '--sample', '--replace');
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(replaced.stderr).toContain('replaced the sample: loaded 60000 sample rows into edge_logs');
    expect(await count('edge_logs')).toBe(60_000);
    expect(await count('function_edge_logs')).toBe(24_000);
  });

  it('keeps events of your own through --replace, and takes --replace only with --sample', async () => {
    const own = join(dir, 'own.ndjson');
    writeFileSync(own, '{"timestamp":"2026-11-01T00:00:00Z","project":"acme-shop","event_message":"mine","metadata":{}}\n');
    expect((await run('load', 'edge_logs', own)).code).toBe(0);
    expect((await run('load', '--sample', '--replace', 'edge_logs')).code).toBe(0);
    expect(await count('edge_logs')).toBe(60_001);
    const refused = await run('load', 'edge_logs', own, '--replace');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe('savedq: --replace goes with --sample: it loads the sample anew (events of your own are never deleted).\n');
    expect(await count('edge_logs')).toBe(60_001);
  });
});

describe('an empty answer before anything is loaded', () => {
  const fresh = { SAVEDQ_DATA_DIR: join(dir, 'never-loaded'), SAVEDQ_CACHE_FILE: join(dir, 'never-loaded.sqlite') };
  const call = ['run', 'usage.api-counts', '-p', 'project=acme-shop', '-p', 'interval=daily'];
  const why = `(the log tables of the embedded engine at ${fresh.SAVEDQ_DATA_DIR} hold no events yet: savedq load --sample loads sample ones)`;

  it('says why on a terminal, computed or from the cache, and with --verbose in a pipe; never inside what a pipe prints', async () => {
    for (const status of [/kept in the cache for 900 s/, /from cache, computed \d+ s ago/]) {
      const shown = await inTerminal(call, { columns: 200, env: { ...fresh, XDG_CONFIG_HOME: NO_CONFIG, NO_COLOR: '1' } });
      expect(shown.code, shown.stdout).toBe(0);
      expect(shown.stdout).toMatch(status);
      expect(shown.stdout).toContain(`0 rows\n`);
      expect(shown.stdout).toContain(`\n${why}\n`);
    }
    const verbose = await cli([...call, '--verbose'], { env: fresh });
    expect(verbose.stdout).toBe('[]\n');
    expect(verbose.stderr).toContain(`${why}\n`);
    const piped = await cli(call, { env: fresh });
    expect(piped.code, piped.stderr).toBe(0);
    expect([piped.stdout, piped.stderr]).toEqual(['[]\n', '']);
    expect((await cli([...call, '--verbose', '--quiet'], { env: fresh })).stderr).toBe('');
  });

  it('says nothing of the kind once events are loaded, when a call matches none of them', async () => {
    // logs.all keeps nothing in the cache, which the tests below count.
    const shown = await inTerminal(['run', 'logs.all', '-p', 'project=no-such-project'], { columns: 200, env: { ...env, XDG_CONFIG_HOME: NO_CONFIG, NO_COLOR: '1' } });
    expect(shown.code, shown.stdout).toBe(0);
    // The table's count, said once.
    expect(shown.stdout.match(/0 rows/g)).toEqual(['0 rows']);
    expect(shown.stdout).not.toContain('hold no events');
  });

  // The library under the note, in this process (the file's other engines are the CLI's, in theirs).
  const inProcess = testLibrary();
  const tablesThere = async () => Number((await (await inProcess.warehouse()).query("SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name IN ('edge_logs', 'function_edge_logs')", {}))[0]?.n);

  it('is given only when both log tables exist and hold no row, and asking makes no table', async () => {
    expect(await inProcess.emptyWarehouse()).toBeUndefined();
    expect(await tablesThere()).toBe(0);
    await inProcess.run({ nameOrId: 'logs.all', params: [['project', 'x']], cache: 'skip' }); // a query makes them
    expect(await tablesThere()).toBe(2);
    expect(await inProcess.emptyWarehouse()).toMatch(/^the embedded engine at \/.+\/data$/);
    const line = JSON.stringify({ timestamp: new Date().toISOString(), project: 'x', event_message: 'one', metadata: {} });
    expect((await inProcess.load('edge_logs', [`${line}\n`])).loaded).toBe(1);
    // A load names a new generation: asked no more, and the engine would say the same.
    expect(await inProcess.emptyWarehouse()).toBeUndefined();
    expect(await logTablesEmpty(await inProcess.warehouse())).toBe(false);
  });
});

/** An event of acme-shop now: a REST request to a host that is not the sample's. */
const event = (message: string) => JSON.stringify({ timestamp: new Date().toISOString(), project: 'acme-shop', event_message: message, metadata: { request: { url: 'https://acme-shop.example.com/rest/v1/x', path: '/rest/v1/x' } } });

describe('a load reaches the cache', () => {
  // As of a minute from now, so that no event leaves the window between two runs.
  const call = ['usage.api-counts', '-p', 'project=^https://acme-shop\\.', '-p', 'interval=hourly', '--at', new Date(Date.now() + 60_000).toISOString()];
  const rest = (answer: Row[]) => answer.reduce((sum, r) => sum + Number(r.total_rest_requests), 0);

  it('serves no answer computed before a load: the next run counts the new events', async () => {
    const first = await rows(...call);
    expect(await rows(...call)).toEqual(first); // a cache hit, before any load

    const file = join(dir, 'three.ndjson');
    writeFileSync(file, `${[event('a'), event('b'), event('c')].join('\n')}\n`);
    expect((await run('load', 'edge_logs', file)).code).toBe(0);
    // cache list says the answer from before the load will never be served again.
    const listed = JSON.parse((await run('cache', 'list', '-f', 'json')).stdout) as Row[];
    expect(listed.filter((e) => e.query === 'usage.api-counts').map((e) => e.expires_in_seconds)).toEqual([null]);
    expect(rest(await rows(...call))).toBe(rest(first) + 3);
  });

  it('has warm refresh what was served before a load, once a call, and forget the older entries', async () => {
    await rows('functions.invocation-stats', '-p', 'project=acme-shop', '-p', 'interval=1hr');
    const calls = async () => ((JSON.parse((await run('cache', 'list', '-f', 'json')).stdout) as Row[]).map((e) => JSON.stringify([e.query, e.params, e.at])));
    const served = new Set(await calls());
    writeFileSync(join(dir, 'one.ndjson'), `${event('d')}\n`);
    expect((await run('load', 'edge_logs', join(dir, 'one.ndjson'))).code).toBe(0);
    const warmed = await run('warm');
    expect(warmed.code, warmed.stderr).toBe(0);
    expect(warmed.stderr).toContain(`warm: ${served.size} refreshed, 0 failed`);
    expect(warmed.stderr).toContain('refreshed functions.invocation-stats project=acme-shop interval=1hr');
    expect((await calls()).sort()).toEqual([...served].sort());
    // Everything is fresh now: nothing is due again.
    expect((await run('warm')).stderr).toContain('warm: 0 refreshed');
  });
});

describe('a load reaches serve', () => {
  it("answers a token caller and a key with the load's events at once, not the cached answer from before it", async () => {
    const secrets = { SAVEDQ_TOKEN_SECRETS: 'a-token-secret-of-forty-bytes-0123456789' };
    const server = await startServe({ ...env, ...secrets, SAVEDQ_API_KEYS: 'k' });
    try {
      // The events of this test file's own host only: none leaves the last hour while the test runs.
      const own = '^https://acme-shop\\.example\\.com/';
      const created = await cli(['token', 'create', '--name', 'dash', '--query', 'usage.*', '--fix', `project=${own}`], { env: { ...env, ...secrets } });
      expect(created.code, created.stderr).toBe(0);
      const ask = async (credential: string) => {
        const res = await fetch(`${server.url}/api/endpoints/query/usage.api-counts?project=${encodeURIComponent(own)}&interval=hourly`, { headers: { Authorization: `Bearer ${credential}` } });
        const body = (await res.json()) as { result: Row[] };
        return { cache: res.headers.get('x-cache'), rest: body.result.reduce((sum, r) => sum + Number(r.total_rest_requests), 0) };
      };
      for (const credential of ['k', created.stdout.trim()]) {
        const before = await ask(credential);
        expect((await ask(credential)).cache).toBe('HIT');
        const file = join(dir, `served-${credential.length}.ndjson`);
        writeFileSync(file, `${[event('s1'), event('s2')].join('\n')}\n`);
        const loaded = await run('load', 'edge_logs', file);
        expect(loaded.code, loaded.stderr).toBe(0);
        const after = await ask(credential);
        expect(after.cache).toBe('MISS');
        expect(after.rest).toBe(before.rest + 2);
      }
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  });
});

describe('the sample looks like traffic', () => {
  const now = new Date().toISOString();

  it('arrives at a steady rate up to the moment of the load: the newest 100 entries span minutes, not a burst', async () => {
    const newest = await rows('logs.all', '-p', 'project=acme-shop');
    expect(newest).toHaveLength(100);
    const times = newest.map((r) => Date.parse(String(r.timestamp)));
    // Minutes, whatever the hour: a project is busiest at its own hour of the day (at acme-shop's, the
    // newest 100 span about a quarter of an hour; 13.4 minutes in one CI run), and a burst is seconds.
    const span = (times[0] as number) - (times[99] as number);
    expect(span).toBeGreaterThan(5 * 60_000);
    expect(Date.now() - (times[0] as number)).toBeLessThan(15 * 60_000);
  });

  it('keeps the last hour busy, whatever the hour of the day, and has errors in bursts', async () => {
    // Every sample project: each is busiest at its own hour, so together they are busy at any hour.
    const minutely = await rows('usage.api-counts', '-p', 'project=\\.savedq\\.dev/', '-p', 'interval=minutely', '--at', now);
    const active = minutely.filter((r) => Number(r.total_rest_requests) + Number(r.total_auth_requests) + Number(r.total_storage_requests) > 0);
    expect(active.length).toBeGreaterThan(30);
    // Each project has calls in every minute of its last hour (the window's first minute may be cut),
    // and acme-shop's incident of 35 minutes before the load is its busiest minute.
    for (const project of ['acme-shop', 'globex-api', 'initech-crm', 'umbrella-labs']) {
      const own = await rows('usage.api-counts', '-p', `project=^https://${project}\\.`, '-p', 'interval=minutely', '--at', now);
      expect(own.length, project).toBeGreaterThanOrEqual(60);
    }
    const acme = await rows('usage.api-counts', '-p', 'project=^https://acme-shop\\.', '-p', 'interval=minutely', '--at', now);
    const busiest = acme.reduce((a, b) => (Number(b.total_rest_requests) > Number(a.total_rest_requests) ? b : a));
    const minutesAgo = (Date.parse(now) - Date.parse(String(busiest.timestamp))) / 60_000;
    expect(minutesAgo, JSON.stringify(busiest)).toBeGreaterThan(28);
    expect(minutesAgo, JSON.stringify(busiest)).toBeLessThan(37);
    const hours = await rows('functions.invocation-stats', '-p', 'project=acme-shop', '-p', 'interval=1day', '--at', now);
    const byRate = hours.map((r) => ({ errors: Number(r.error_count), count: Number(r.count) })).sort((a, b) => a.errors / a.count - b.errors / b.count);
    // The other hours' rate, all their calls together (6 % of calls fail outside incidents): an hour alone
    // holds a few dozen calls, so the median hour's rate strayed past 0.1 now and then (0.105 once in CI).
    const others = byRate.slice(0, -2);
    const typical = others.reduce((sum, h) => sum + h.errors, 0) / others.reduce((sum, h) => sum + h.count, 0);
    const worst = byRate.at(-1) as { errors: number; count: number };
    // An incident's hour (one began 20 hours before the load) stands out, wherever its 25 minutes fall
    // (across two hours at most: both are left out of the others). Seen: 0.27–0.44; the others together
    // 0.06–0.08.
    expect(typical).toBeLessThan(0.1);
    expect(worst.errors / worst.count).toBeGreaterThan(Math.max(0.15, 2 * typical));
  });

  it('has a few slow functions: resize-image takes many times what webhook does', async () => {
    const stats = await Promise.all(
      ['8e2d3b0f-1c5a-4d4b-8f66-3a7b2e9c4d01', '8e2d3b0f-1c5a-4d4b-8f66-3a7b2e9c4d02'].map((id) =>
        rows('functions.invocation-stats', '-p', 'project=globex-api', '-p', `function_id=${id}`, '-p', 'interval=7day', '--at', now),
      ),
    );
    const [quick, slow] = stats.map((r) => r.reduce((sum, row) => sum + Number(row.avg_execution_time) * Number(row.count), 0) / r.reduce((sum, row) => sum + Number(row.count), 0));
    expect((slow as number) / (quick as number)).toBeGreaterThan(8);
  });
});

describe('installing', () => {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const manifest = (folder: string) => JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as { name: string; scripts?: Record<string, string>; allowScripts?: Record<string, boolean>; scarfSettings?: { enabled?: boolean } };
  /** Every installed package's folder, nested ones and scoped ones too. */
  function packages(modules: string): string[] {
    if (!existsSync(modules)) return [];
    return readdirSync(modules).flatMap((name) => {
      if (name.startsWith('.')) return [];
      if (name.startsWith('@')) return packages(join(modules, name));
      const folder = join(modules, name);
      return existsSync(join(folder, 'package.json')) ? [folder, ...packages(join(folder, 'node_modules'))] : [];
    });
  }

  it("names in package.json's allowScripts every package whose install runs a script (npm 12 runs no other): sqlite3 is built, Scarf's telemetry is not sent", () => {
    const own = manifest(root);
    const scripted = [...new Set(packages(join(root, 'node_modules')).flatMap((folder) => {
      const { name, scripts = {} } = manifest(folder);
      // npm runs node-gyp for a binding.gyp of a package with no install script of its own.
      const runs = ['preinstall', 'install', 'postinstall'].some((hook) => scripts[hook] !== undefined) || existsSync(join(folder, 'binding.gyp'));
      return runs ? [name] : [];
    }))].sort();
    expect(scripted).toContain('sqlite3');
    expect(scripted.filter((name) => own.allowScripts?.[name] === undefined), 'not in allowScripts').toEqual([]);
    expect(own.allowScripts?.sqlite3).toBe(true);
    expect([own.allowScripts?.['@scarf/scarf'], own.scarfSettings?.enabled]).toEqual([false, false]);
  });

  it('says in one line that SQLite has no build here, and what to do, rather than the paths the loader tried', async () => {
    // The very loader sqlite3 uses, asked for a build that is not there.
    const bindings = createRequire(createRequire(import.meta.url).resolve('sqlite3'))('bindings') as (options: object) => unknown;
    let failure: unknown;
    try {
      bindings({ bindings: 'no_such_module.node', module_root: tempDir() });
    } catch (err) {
      failure = err;
    }
    expect(String(failure)).toMatch(/Could not locate the bindings file/);
    const said = await loadingSqlite(Promise.reject(failure as Error)).catch((err: unknown) => err as Error);
    expect(said.message).toBe(`SQLite's native module, sqlite3, has no build for Node ${process.version} here: run npm rebuild sqlite3 where savedq is installed.`);
    expect(said.cause).toBe(failure);
    // Any other failure is left as it is.
    const busy = new Error('SQLITE_BUSY: database is locked');
    await expect(loadingSqlite(Promise.reject(busy))).rejects.toBe(busy);
  });
});
