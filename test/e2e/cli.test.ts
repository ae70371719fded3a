import { chmodSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cli, eventually, tempDir } from '../helpers.js';

const dir = tempDir();
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'cache.sqlite') };
const run = (...args: string[]) => cli(args, { env });

/** Bad input: exit 2, one short line on standard error, nothing on standard output. */
async function expectBadInput(args: string[], message: RegExp): Promise<void> {
  const r = await run(...args);
  expect(r.code, r.stderr).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr.trim().split('\n').length, r.stderr).toBeLessThanOrEqual(2);
  expect(r.stderr).toMatch(message);
  expect(r.stderr).not.toMatch(/\n\s+at /);
}

beforeAll(async () => {
  const r = await run('load', '--sample');
  expect(r.code, r.stderr).toBe(0);
  expect(r.stderr).toMatch(/loaded 60000 sample rows into edge_logs/);
});

describe('savedq (the built CLI)', () => {
  it('prints rows as a JSON array when standard output is not a terminal, nothing else on it', async () => {
    const r = await run('run', 'usage.api-counts', '-p', 'project=acme-shop', '-p', 'interval=daily');
    expect(r.code, r.stderr).toBe(0);
    const rows = JSON.parse(r.stdout) as Record<string, unknown>[];
    expect(rows.length).toBeGreaterThan(0);
    expect(Object.keys(rows[0] ?? {})).toEqual([
      'timestamp',
      'total_rest_requests',
      'total_storage_requests',
      'total_auth_requests',
      'total_realtime_requests',
    ]);
    expect(r.stderr).toBe('');
  });

  it('prints ndjson, csv and table on request', async () => {
    const args = ['run', 'functions.invocation-stats', '-p', 'project=acme-shop', '-p', 'interval=7day'];
    /** Standard output of a run that must succeed (its standard error is the message when it does not). */
    const output = async (...more: string[]) => {
      const r = await run(...args, ...more);
      expect(r.code, r.stderr).toBe(0);
      return r.stdout;
    };
    const json = JSON.parse(await output('-f', 'json')) as unknown[];
    const ndjson = (await output('-f', 'ndjson')).trim().split('\n').map((l) => JSON.parse(l) as unknown);
    expect(ndjson).toEqual(json);
    const csv = (await output('-f', 'csv')).split('\r\n');
    expect(csv[0]).toBe('timestamp,min_execution_time,max_execution_time,avg_execution_time,p95_execution_time,p99_execution_time,count,error_count');
    expect(csv.filter((l) => l !== '')).toHaveLength(json.length + 1);
    // A table fits 80 columns unless COLUMNS says otherwise; eight columns fit 200.
    const table = (await cli([...args, '-f', 'table'], { env: { ...env, COLUMNS: '200' } })).stdout;
    expect(table).toContain('│ timestamp');
    expect(table).toMatch(new RegExp(`${json.length} rows\\n$`));
    expect(table).not.toContain('\u001b['); // no colour when not on a terminal
    // At 80, still a table: numbers rounded and headers cut to fit, and said so; --expanded gives records.
    const narrow = (await run(...args, '-f', 'table')).stdout;
    expect(narrow).toContain('│ timestamp');
    expect(narrow).toMatch(new RegExp(`${json.length} rows; numbers rounded to fit \\(--expanded shows every digit\\)\\n$`));
    const records = (await run('--expanded', ...args, '-f', 'table')).stdout;
    expect(records).toMatch(/^─\[ record 1 \]/);
    expect(records).toMatch(new RegExp(`${json.length} rows\\n$`));
  });

  it('writes nested metadata as JSON text inside a CSV cell', async () => {
    const r = await run('run', 'logs.all', '-p', 'project=acme-shop', '-f', 'csv');
    expect(r.stdout.split('\r\n')[0]).toBe('id,timestamp,event_message,metadata');
    expect(r.stdout.split('\r\n')[1]).toMatch(/,"\{""request"":\{/);
  });

  it('lists the endpoints as JSON with their parameters', async () => {
    const r = await run('list', '-f', 'json');
    const list = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    // By name: saved queries are files now, and users look for a name among many.
    expect(list.map((e) => e.name)).toEqual(['functions.invocation-stats', 'logs.all', 'usage.api-counts']);
    expect(list[2]).toMatchObject({
      id: 'c3e8f1a0-6b2d-4d7e-a9f5-1e4b8c2d7a23',
      max_rows: 1000,
      cache_seconds: 900,
      warm_seconds: 300,
      params: [
        { name: 'project', required: true },
        { name: 'interval', required: true, allowed: ['minutely', 'hourly', 'daily'] },
      ],
    });
    expect(list[1]).toMatchObject({ cache_seconds: 0 });
  });

  it('runs an endpoint by id as by name', async () => {
    const args = ['-p', 'project=acme', '-p', 'interval=hourly', '--at', '2026-01-01T00:00:00Z'];
    const byId = await run('run', 'c3e8f1a0-6b2d-4d7e-a9f5-1e4b8c2d7a23', ...args);
    const byName = await run('run', 'usage.api-counts', ...args);
    expect(byId.code).toBe(0);
    expect(byId.stdout).toBe(byName.stdout);
  });

  it('gives exit 2 and one line for every kind of bad input', async () => {
    await expectBadInput(['run', 'logs.al', '-p', 'project=x'], /^savedq: unknown query 'logs.al'. Did you mean logs.all\?/);
    await expectBadInput(['run', 'logs.all'], /missing parameter 'project' for logs.all/);
    await expectBadInput(['run', 'usage.api-counts'], /^savedq: missing parameters for usage.api-counts: 'project' \(.*\) and 'interval' \(one of minutely, hourly, daily\)\.$/m);
    await expectBadInput(['run', 'logs.all', '-p', 'project=x', '-p', 'tier=PRO'], /unknown parameter "tier"/);
    await expectBadInput(['run', 'logs.all', '-p', 'project'], /invalid parameter "project": expected name=value/);
    await expectBadInput(['run', 'logs.all', '-p', 'project=x', '-p', 'iso_timestamp_start=soon'], /'iso_timestamp_start': an ISO 8601/);
    await expectBadInput(['run', 'usage.api-counts', '-p', 'project=x', '-p', 'interval=weekly'], /one of minutely, hourly, daily/);
    await expectBadInput(['run', 'usage.api-counts', '-p', 'project=(', '-p', 'interval=daily'], /parameter 'project': not an RE2/);
    await expectBadInput(['run', 'logs.all', '-p', 'project=x', '--at', 'tomorrow'], /invalid --at "tomorrow"/);
    await expectBadInput(['run', 'logs.all', '-p', 'project=x', '-f', 'xml'], /xml.*Allowed choices are table, json, ndjson, csv/);
    await expectBadInput(['run', 'logs.all', '--frobnicate'], /^savedq: unknown option '--frobnicate'\n$/);
    // A flag that starts one the command takes is guessed, as commander guesses a typo.
    await expectBadInput(['serve', '--api-key', 'x'], /^savedq: unknown option '--api-key'\n\(Did you mean --api-key-file\?\)\n$/);
    await expectBadInput(['run', 'logs.all', '--formt', 'json'], /^savedq: unknown option '--formt'\n\(Did you mean --format\?\)\n$/);
    await expectBadInput(['run', 'logs.all', '--f', 'json'], /^savedq: unknown option '--f'\n\(Did you mean --format\?\)\n$/);
    // Two short words with little in common are not a guess (`--x` is not --at).
    await expectBadInput(['run', 'logs.all', '--x'], /^savedq: unknown option '--x'\n$/);
    // A flag named as a parameter of the query (or close to one) is said as the -p it means.
    await expectBadInput(['run', 'logs.all', '--project', 'acme'], /^savedq: unknown option '--project'\n\(Did you mean -p project=acme\?\)\n$/);
    await expectBadInput(['run', 'usage.api-counts', '--intervl=daily'], /^savedq: unknown option '--intervl=daily'\n\(Did you mean -p interval=daily\?\)\n$/);
    await expectBadInput(['run', 'usage.api-counts', '--project', 'acme', '--interval', 'daily'], /^savedq: unknown option '--project'\n\(Did you mean -p project=acme -p interval=daily\?\)\n$/);
    await expectBadInput(['run', 'logs.all', '--project', 'a b', '-f', 'csv'], /^savedq: unknown option '--project'\n\(Did you mean -p project='a b'\?\)\n$/);
    await expectBadInput(['run', 'logs.all', '--frobnicate', '--project', 'acme'], /^savedq: unknown option '--frobnicate'\n$/);
    await expectBadInput(['warm', '--project'], /^savedq: unknown option '--project'\n\(Did you mean -p project=…\?\)\n$/);
    // So is a name=value given without its -p, and an argument given as a flag after it.
    await expectBadInput(['run', 'usage.api-counts', 'project=acme', 'interval=daily'], /^savedq: too many arguments for 'run'\. Expected 1 argument but got 3\.\n\(Did you mean -p project=acme -p interval=daily\?\)\n$/);
    await expectBadInput(['run', 'usage.api-counts', 'projct=a b', '--interval', 'daily'], /^savedq: unknown option '--interval'\n\(Did you mean -p project='a b' -p interval=daily\?\)\n$/);
    await expectBadInput(['warm', 'usage.api-counts', 'project=acme'], /^savedq: too many arguments for 'warm'\. Expected 1 argument but got 2\.\n\(Did you mean -p project=acme\?\)\n$/);
    // A bare word is no parameter: the values alone are not guessed at.
    await expectBadInput(['run', 'usage.api-counts', 'acme', 'daily'], /^savedq: too many arguments for 'run'\. Expected 1 argument but got 3\.\n$/);
    await expectBadInput(['run', 'logs.all', 'interval=daily'], /^savedq: too many arguments for 'run'\. Expected 1 argument but got 2\.\n$/);
    // Not a parameter of this query (logs.all has no interval), nor of a command without -p.
    await expectBadInput(['run', 'logs.all', '--interval', 'daily'], /^savedq: unknown option '--interval'\n$/);
    await expectBadInput(['list', '--project', 'acme'], /^savedq: unknown option '--project'\n$/);
    await expectBadInput(['schema', '--cluster', ''], /^savedq: --cluster is empty: give the name of a cluster of the server \(system.clusters\)\.\n$/);
    await expectBadInput(['runn'], /^savedq: unknown command 'runn'\n\(Did you mean run\?\)\n$/);
    // Two letters the wrong way round are one slip.
    await expectBadInput(['rnu'], /^savedq: unknown command 'rnu'\n\(Did you mean run\?\)\n$/);
    // A command missing its query names the saved queries (the first few of many).
    const named = /^savedq: missing required argument 'query'\n\(the saved queries: functions\.invocation-stats, logs\.all, usage\.api-counts; savedq list shows what each takes\)\n$/;
    await expectBadInput(['run'], named);
    await expectBadInput(['describe'], named);
    const many = join(dir, 'many');
    for (const name of ['a.one', 'a.two', 'a.three', 'a.four']) expect((await run('--queries', many, 'new', name)).code).toBe(0);
    await expectBadInput(['--queries', many, 'run', '-p', 'project=x'], /^savedq: missing required argument 'query'\n\(the saved queries: a\.four, a\.one, a\.three, a\.two, functions\.invocation-stats, … \(7 in all\); savedq list/);
    // A query just written with a typo is not among them: the line says a file was left out, and where to look.
    const typo = join(dir, 'typo');
    mkdirSync(typo);
    writeFileSync(join(typo, 'my.status.sql'), '/*\nid: 22222222-3333-4444-8555-666666666666\nparams:\n  project: { type: strng }\n*/\nSELECT 1 AS n\n');
    await expectBadInput(['--queries', typo, 'describe'], /\(the saved queries: functions\.invocation-stats, logs\.all, usage\.api-counts; 1 broken file left out, savedq check says why; savedq list/);
    await expectBadInput(['cache', 'clr'], /^savedq: unknown command 'clr'\n\(Did you mean clear\?\)\n$/);
    await expectBadInput(['load', 'edge_log', '-'], /unknown table "edge_log"/);
    await expectBadInput(['load', 'edge_logs', join(dir, 'nope.ndjson')], /no such file/);
    await expectBadInput(['load', 'edge_logs', dir], /cannot read .*: a directory\./);
  });

  it('reports rejected lines of a load by number on standard error with exit 2', async () => {
    const file = join(dir, 'bad.ndjson');
    writeFileSync(file, `${JSON.stringify({ timestamp: '2026-01-01T00:00:00Z', project: 'p' })}\n{oops\n`);
    const r = await run('load', 'edge_logs', file);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('line 2: not valid JSON');
    expect(r.stderr).toContain('loaded 1 row into edge_logs, rejected 1 line');
  });

  it('reads events from standard input', async () => {
    const r = await cli(['load', 'edge_logs'], { env, input: `${JSON.stringify({ timestamp: '2026-01-01T00:00:00Z', project: 'stdin' })}\n` });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('loaded 1 row into edge_logs, rejected 0 lines');
  });

  it('fails with exit 1 and a clear line when the warehouse is unreachable, never showing the password', async () => {
    const r = await cli(['run', 'logs.all', '-p', 'project=x'], { env: { ...env, SAVEDQ_CLICKHOUSE_URL: 'http://reader:s3cret@127.0.0.1:9/' } });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^savedq: cannot reach ClickHouse at http:\/\/reader@127.0.0.1:9: connection refused\.\n$/);
    expect(r.stderr).not.toContain('s3cret');
  });

  it('warns once that a password in --url can be read by every user, and names the other ways; takes one from --password-file', async () => {
    const inUrl = await run('--url', 'http://reader:s3cret@127.0.0.1:9/', 'run', 'logs.all', '-p', 'project=x');
    expect(inUrl.code).toBe(1);
    expect(inUrl.stderr.split('\n')[0]).toBe('warning: a password in --url can be read by every user of this machine (ps); give it in SAVEDQ_CLICKHOUSE_URL or with --password-file instead.');
    expect(inUrl.stderr).not.toContain('s3cret');
    const file = join(dir, 'password');
    writeFileSync(file, 's3cret\n', { mode: 0o644 });
    chmodSync(file, 0o644);
    const open = await run('--url', 'http://reader@127.0.0.1:9/', '--password-file', file, 'run', 'logs.all', '-p', 'project=x');
    expect(open).toMatchObject({ code: 2, stderr: `savedq: password file ${file} can be read by other users; run chmod 600 ${file}.\n` });
    chmodSync(file, 0o600);
    const given = await run('--url', 'http://reader@127.0.0.1:9/', '--password-file', file, 'run', 'logs.all', '-p', 'project=x');
    expect(given.code).toBe(1);
    expect(given.stderr).toBe('savedq: cannot reach ClickHouse at http://reader@127.0.0.1:9: connection refused.\n');
  });

  it('reads every secret file by one rule: refused while others can read it, naming it and the fix', async () => {
    const secret = (name: string, text: string) => {
      const file = join(dir, name);
      writeFileSync(file, text);
      chmodSync(file, 0o640);
      return file;
    };
    const keys = secret('keys', 'a-key\n');
    const secrets = secret('secrets', `${'s'.repeat(40)}\n`);
    const storePassword = secret('store-password', 'pw\n');
    const cases: [string, string, string[]][] = [
      ['API key file', keys, ['serve', '--port', '0', '--api-key-file', keys]],
      ['token secret file', secrets, ['token', 'create', '--name', 'reader', '--query', 'logs.all', '--token-secret-file', secrets]],
      ['password file', storePassword, ['--store', 'postgres://savedq@127.0.0.1:9/savedq', '--store-password-file', storePassword, 'status']],
    ];
    for (const [what, file, args] of cases) {
      // A store is in place of the cache file: this test's is not named.
      const r = await cli(args, { env: { ...env, SAVEDQ_CACHE_FILE: '' } });
      expect(r, what).toMatchObject({ code: 2, stdout: '', stderr: `savedq: ${what} ${file} can be read by other users; run chmod 600 ${file}.\n` });
    }
  });

  it('a data directory of its own does not answer with another directory’s rows from a shared cache file: it runs the query on its own data', async () => {
    const cacheFile = join(dir, 'shared-cache.sqlite');
    const [a, b] = [join(dir, 'source-a'), join(dir, 'source-b')];
    const event = { timestamp: new Date(Date.now() - 600_000).toISOString(), project: 'source-a', metadata: { request: { url: 'https://source-a.example/rest/v1/x', path: '/rest/v1/x' } } };
    expect((await cli(['load', 'edge_logs', '-'], { env: { ...env, SAVEDQ_DATA_DIR: a, SAVEDQ_CACHE_FILE: cacheFile }, input: JSON.stringify(event) })).code).toBe(0);
    const args = ['run', 'usage.api-counts', '-p', 'project=source-a', '-p', 'interval=hourly', '-f', 'json', '--verbose'];
    const first = await cli(args, { env: { ...env, SAVEDQ_DATA_DIR: a, SAVEDQ_CACHE_FILE: cacheFile } });
    expect(first.code, first.stderr).toBe(0);
    expect((JSON.parse(first.stdout) as unknown[]).length).toBeGreaterThan(0);
    // The same call on an empty data directory, the same cache file: computed there (no rows), and kept.
    const other = await cli(args, { env: { ...env, SAVEDQ_DATA_DIR: b, SAVEDQ_CACHE_FILE: cacheFile } });
    expect(other.code, other.stderr).toBe(0);
    expect(JSON.parse(other.stdout)).toEqual([]);
    expect(other.stderr).toMatch(/usage\.api-counts: 0 rows, kept in the cache/);
  });

  it('a data directory removed under a cache file that ran its queries before is made anew, its tables with it, by every query', async () => {
    const place = { ...env, SAVEDQ_DATA_DIR: join(dir, 'emptied'), SAVEDQ_CACHE_FILE: join(dir, 'emptied.sqlite') };
    for (const query of [['logs.all', '-p', 'project=p'], ['usage.api-counts', '-p', 'project=p', '-p', 'interval=daily'], ['functions.invocation-stats', '-p', 'project=p']]) {
      expect((await cli(['run', ...query, '--no-cache'], { env: place })).code).toBe(0);
    }
    rmSync(place.SAVEDQ_DATA_DIR, { recursive: true });
    // The cache file remembers that the engine took each query: no check runs first to make the tables.
    for (const query of [['logs.all', '-p', 'project=p'], ['usage.api-counts', '-p', 'project=p', '-p', 'interval=daily'], ['functions.invocation-stats', '-p', 'project=p']]) {
      const r = await cli(['run', ...query, '--no-cache'], { env: place });
      expect(r, query[0]).toMatchObject({ code: 0, stdout: '[]\n' });
      rmSync(place.SAVEDQ_DATA_DIR, { recursive: true });
    }
  });

  it('names a data directory that cannot be used', async () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    const r = await cli(['run', 'logs.all', '-p', 'project=x'], { env: { ...env, SAVEDQ_DATA_DIR: file } });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`savedq: refusing data directory ${file}: it is a file, not a directory; give a directory.\n`);
  });

  it('says on standard error, with --verbose, that a result came from the cache and how old it is', async () => {
    const args = ['run', 'usage.api-counts', '-p', 'project=verbose', '-p', 'interval=daily'];
    expect((await run('--verbose', ...args)).stderr).toBe('usage.api-counts: 0 rows, kept in the cache for 900 s\n');
    const hit = await run('--verbose', ...args);
    expect(hit.stderr).toMatch(/^usage.api-counts: from cache, computed \d+ s ago\n$/);
    expect(hit.stdout).toBe('[]\n');
    expect((await run(...args)).stderr).toBe(''); // pipelines stay quiet
  });

  it('loads no node:crypto for a cache hit (Node 22 and 24 start without it: 5–10 ms a run)', async () => {
    const args = ['run', 'usage.api-counts', '-p', 'project=crypto', '-p', 'interval=daily'];
    expect((await run(...args)).code).toBe(0);
    const modules = join(dir, 'modules.txt');
    const preload = join(dir, 'modules.cjs');
    writeFileSync(preload, `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(modules)}, process.moduleLoadList.join('\\n')));`);
    const hit = await cli(['--verbose', ...args], { env: { ...env, NODE_OPTIONS: `--require ${preload}` } });
    expect(hit.stderr).toMatch(/^usage.api-counts: from cache/);
    const loaded = readFileSync(modules, 'utf8').split('\n');
    expect(loaded).toContain('NativeModule vm'); // the launcher's: the list is this run's
    expect(loaded.filter((m) => m.includes('crypto'))).toEqual([]);
  });

  it('lists and clears the cache', async () => {
    await run('run', 'functions.invocation-stats', '-p', 'project=listed', '-p', 'interval=5min');
    const list = JSON.parse((await run('cache', 'list', '-f', 'json')).stdout) as Array<Record<string, unknown>>;
    expect(list).toContainEqual({
      query: 'functions.invocation-stats',
      params: { project: 'listed', function_id: '', interval: '5min' },
      at: null,
      sql: null,
      age_seconds: expect.any(Number),
      served_seconds_ago: expect.any(Number),
      expires_in_seconds: expect.any(Number),
      source: realpathSync(env.SAVEDQ_DATA_DIR),
    });
    // In a table, as -p takes them, the empty ones left out.
    const table = await cli(['cache', 'list', '-f', 'table'], { env: { ...env, COLUMNS: '160' } });
    expect(table.stdout).toMatch(/│ functions\.invocation-stats +│ project=listed interval=5min +│/);
    const cleared = await run('cache', 'clear');
    expect(cleared.code).toBe(0);
    expect(cleared.stderr).toMatch(/^cache cleared: \d+ entr(y|ies) removed\n$/);
    expect(JSON.parse((await run('cache', 'list', '-f', 'json')).stdout)).toEqual([]);
  });

  it('lists each answer to a caller\'s SQL apart, by its SQL, and no answer past its time', async () => {
    const queries = join(dir, 'listed-queries');
    mkdirSync(queries, { recursive: true });
    writeFileSync(join(queries, 'per.minute.sql'), "/*\nparams:\n  p: { type: string, required: true }\ncache: 60\nsandbox: true\n*/\nSELECT toStartOfMinute(timestamp) AS minute, count() AS n FROM edge_logs WHERE project = @p GROUP BY minute\n");
    writeFileSync(join(queries, 'brief.sql'), '/*\ncache: 1\n*/\nSELECT 1 AS one\n');
    const own = (...args: string[]) => cli(['--queries', queries, ...args], { env: { ...env, SAVEDQ_CACHE_FILE: join(dir, 'listed.sqlite') } });
    const sqls = ['SELECT count() AS c FROM result', 'SELECT max(n) AS m FROM result', 'SELECT min(n) AS m FROM result', 'SELECT sum(n) AS s FROM result'];
    for (const sql of sqls) expect((await own('run', 'per.minute', '-p', 'p=acme-shop', '--sql', sql)).code).toBe(0);
    expect((await own('run', 'brief')).code).toBe(0);
    const listed = JSON.parse((await own('cache', 'list', '-f', 'json')).stdout) as { query: string; sql: string | null }[];
    expect(listed.filter((e) => e.query === 'per.minute').map((e) => e.sql).sort()).toEqual([...sqls].sort());
    const table = await own('cache', 'list', '-f', 'table');
    expect(table.stdout).toContain('SELECT max(n) AS m FROM result');
    // The one cached for a second goes from the list once its second is past, though its record stays for warming.
    await eventually('brief\'s answer to expire', async () => !(JSON.parse((await own('cache', 'list', '-f', 'json')).stdout) as { query: string }[]).some((e) => e.query === 'brief'));
    expect(JSON.parse((await own('cache', 'list', '-f', 'json')).stdout)).toHaveLength(4);
  });

  it('warms one given call, and exits 1 when a refresh fails', async () => {
    const args = ['usage.api-counts', '-p', 'project=acme', '-p', 'interval=hourly'];
    const ok = await run('warm', ...args);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stderr).toMatch(/\[1\/1\] refreshed usage.api-counts project=acme interval=hourly \(\d+ rows\)\nwarm: 1 refreshed, 0 failed\n/);
    const failed = await run('--url', 'http://127.0.0.1:9', 'warm', ...args);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('[1/1] failed usage.api-counts project=acme interval=hourly: cannot reach ClickHouse');
    expect(failed.stderr).toContain('warm: 0 refreshed, 1 failed');
    await expectBadInput(['warm', 'logs.all', '-p', 'project=x'], /logs.all is not cached, so it cannot be warmed/);
  });

  it('prints help with usage and exits 0', async () => {
    const r = await run('run', '--help');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Usage: savedq run \[options\] <query>/);
  });
});
