import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { binPath, cli, startServe, tempDir } from '../helpers.js';

// The built CLI, as a user meets it: an empty folder, `savedq new`, an edit, `check`, `run`, `serve`.
const dir = tempDir();
const queries = join(dir, 'queries');
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'cache.sqlite'), SAVEDQ_QUERIES: queries };
const run = (...args: string[]) => cli(args, { env });

/** A saved query of the user's folder. */
const save = (name: string, text: string) => writeFileSync(join(queries, `${name}.sql`), text);

const BROKEN = `/*
description: a typo in the header
params:
  project:
    type: string
    requird: true
*/
SELECT count() AS n FROM edge_logs WHERE project = @project
`;

/** When the sample was loaded: its events span the 90 days before (a moment after) this instant. */
let loadedAt = '';
beforeAll(async () => {
  loadedAt = new Date().toISOString();
  const r = await run('load', '--sample');
  expect(r.code, r.stderr).toBe(0);
});

describe('from an empty folder to a saved query of your own', () => {
  it('savedq new writes a starter that passes check and runs, with a fresh id, into the folder it makes', async () => {
    expect(existsSync(queries)).toBe(false);
    const made = await run('new', 'status.by-code');
    expect(made.code, made.stderr).toBe(0);
    const file = join(queries, 'status.by-code.sql');
    expect(made.stdout).toBe(`${file}\n`);
    expect(readFileSync(file, 'utf8')).toMatch(/^id: [0-9a-f-]{36} /m);

    const check = await run('check');
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toMatch(/^ok {5}status\.by-code {2,}.*status\.by-code\.sql$/m);

    // As of the load: run later (a busy machine), the oldest events would have left the 90 days.
    const rows = await run('run', 'status.by-code', '-p', 'project=acme-shop', '-p', 'days=90', '--at', loadedAt);
    expect(rows.code, rows.stderr).toBe(0);
    const result = JSON.parse(rows.stdout) as { status_code: number; requests: number }[];
    expect(result.reduce((sum, r) => sum + r.requests, 0)).toBe(24_000); // every sample request of the project (40% of 60,000)
    expect(result[0]?.requests).toBeGreaterThan(result[1]?.requests ?? Infinity);
  });

  it('names a file under HOME as ~/… from HOME or from a folder above it, and relative to a folder below it', () => {
    const top = join(dir, 'paths');
    const home = join(top, 'home');
    const project = join(home, 'project');
    mkdirSync(project, { recursive: true });
    // What `new` says of the test file it wrote beside the query (standard output has the whole path, for scripts).
    const said = (cwd: string, ...args: string[]) =>
      /its test, (\S+):/.exec(
        spawnSync(process.execPath, [binPath, ...args], { cwd, env: { PATH: process.env.PATH ?? '', HOME: home, SAVEDQ_DATA_DIR: join(top, 'data'), SAVEDQ_CACHE_FILE: join(top, 'c.sqlite') }, encoding: 'utf8' }).stderr,
      )?.[1];
    expect(said(top, 'new', 'from.above')).toBe('~/.config/savedq/queries/from.above.test.yaml');
    expect(said(home, 'new', 'from.home')).toBe('~/.config/savedq/queries/from.home.test.yaml');
    expect(said(project, '--queries', 'mine', 'new', 'from.below')).toBe('mine/from.below.test.yaml');
    // From / (cron's and systemd's working directory) a path is whole, never relative to /.
    expect(said('/', '--queries', join(top, 'from-root'), 'new', 'from.root')).toBe(`${join(top, 'from-root')}/from.root.test.yaml`);
  });

  it('savedq new makes a folder that is not there without warning that it is not there, and names both files it wrote', () => {
    const top = join(dir, 'fresh');
    mkdirSync(top);
    const r = spawnSync(process.execPath, [binPath, '--queries', 'new-folder', 'new', 'my.q'], { cwd: top, env: { PATH: process.env.PATH ?? '', HOME: top, SAVEDQ_DATA_DIR: join(top, 'data'), SAVEDQ_CACHE_FILE: join(top, 'c.sqlite') }, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${join(top, 'new-folder', 'my.q.sql')}\n`);
    expect(r.stderr).toBe('wrote a starter definition, ~/new-folder/my.q.sql, and its test, ~/new-folder/my.q.test.yaml: edit them, then savedq check && savedq test my.q\n');
  });

  it('savedq new never overwrites a file nor takes a name in use (exit 2)', async () => {
    const file = join(queries, 'status.by-code.sql');
    const before = readFileSync(file, 'utf8');
    const again = await run('new', 'status.by-code');
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/a saved query named status\.by-code already exists/);
    expect(readFileSync(file, 'utf8')).toBe(before);
    expect((await run('new', 'logs.all')).stderr).toMatch(/a saved query named logs\.all already exists: .*sql\/queries\/logs\.all\.sql/);
    expect((await run('new', 'Bad Name')).stderr).toMatch(/invalid name "Bad Name"/);
  });

  it('list -f json gives each parameter its type and bounds; describe names the file', async () => {
    const list = JSON.parse((await run('list', '-f', 'json')).stdout) as { name: string; params: object[] }[];
    expect(list.map((q) => q.name)).toEqual(['functions.invocation-stats', 'logs.all', 'status.by-code', 'usage.api-counts']);
    expect(list.find((q) => q.name === 'status.by-code')?.params).toEqual([
      { name: 'project', type: 'string', required: true, description: 'Project reference.' },
      { name: 'days', type: 'integer', required: false, default: '1', min: 1, max: 90, description: 'How many days back to count.' },
    ]);
    const described = await run('describe', 'status.by-code');
    expect(described.stdout).toMatch(/^From: .*queries\/status\.by-code\.sql$/m);
    expect(described.stdout).toContain('days  (optional; from 1 to 90; default 1)  integer, bound as Int64');
  });

  it('a name another file’s header takes is one file or an error: run exits 2 naming both files, as list and check call both broken', async () => {
    const clash = join(dir, 'clash');
    mkdirSync(clash);
    writeFileSync(join(clash, 'good.one.sql'), '/*\nparams:\n  n: { type: integer, default: 1 }\n*/\nSELECT @n + 1 AS x\n');
    writeFileSync(join(clash, 'dup.sql'), '/*\nname: good.one\n*/\nSELECT 2 AS x\n');
    const clashEnv = { ...env, SAVEDQ_QUERIES: clash };
    for (const args of [['run', 'good.one', '-f', 'json'], ['run', '1516cc88-635b-5030-9a58-a7aa56d9de80'], ['run', 'good.one', '--no-cache']]) {
      const r = await cli(args, { env: clashEnv });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr.match(/^savedq: .*$/m)?.[0], r.stderr).toMatch(/dup\.sql:2: name 'good\.one' is also defined by .*good\.one\.sql\.$/);
      expect(r.stderr).toMatch(/^.*good\.one\.sql:1: name 'good\.one' is also defined by .*dup\.sql\.$/m);
    }
    const check = await cli(['check'], { env: clashEnv });
    expect(check.code).toBe(2);
    expect(check.stdout.match(/^error .*$/gm)).toHaveLength(2);
  });

  it('completes the user query, its parameters and their values', async () => {
    save('colours', "/*\nparams:\n  colour: { allowed: [red, green] }\n*/\nSELECT @colour AS colour\n");
    const script = (await run('completion', 'bash')).stdout;
    expect(script).toContain('status.by-code');
    expect(script).toContain('colour=red colour=green');
    rmSync(join(queries, 'colours.sql'));
  });
});

describe('a broken definition among good ones', () => {
  beforeAll(() => save('broken', BROKEN));

  it('list, describe, completion and warm warn one line per broken file, naming file and line, and go on', async () => {
    for (const args of [['list', '-f', 'json'], ['describe', 'logs.all'], ['completion', 'bash'], ['warm']]) {
      const r = await run(...args);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      expect(r.stderr, args.join(' ')).toMatch(/^warning: skipped .*queries\/broken\.sql:6: unknown key 'requird' in parameter 'project'\. Did you mean required\?/m);
      expect(r.stderr.split('\n').filter((l) => l.includes('broken.sql')), args.join(' ')).toHaveLength(1);
    }
    expect((await run('list', '-f', 'json')).stdout).toContain('status.by-code');
  });

  it('running the broken one is exit 2 with its error; the good ones still run', async () => {
    const broken = await run('run', 'broken', '-p', 'project=acme-shop');
    expect(broken.code).toBe(2);
    expect(broken.stdout).toBe('');
    expect(broken.stderr).toMatch(/^savedq: .*queries\/broken\.sql:6: unknown key 'requird'/);
    expect(broken.stderr).not.toMatch(/\n\s+at /);
    expect((await run('run', 'status.by-code', '-p', 'project=acme-shop')).code).toBe(0);
  });

  it('check reports every file, ok or its problems, and exits 2', async () => {
    const r = await run('check');
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/^ok {5}status\.by-code +\S*queries\/status\.by-code\.sql$/m);
    expect(r.stdout).toMatch(/^ok {5}logs\.all {2,}built-in$/m);
    expect(r.stdout).toMatch(/^error {2}.*broken\.sql:6: unknown key 'requird'/m);
    // The starter test `new` wrote beside it: read, not run.
    expect(r.stdout).toMatch(/^ok {5}status\.by-code +\S*queries\/status\.by-code\.test\.yaml$/m);
    expect(r.stderr).toBe('savedq: check: 5 ok, 1 broken.\n');
  });

  it('check reports every problem of a file at once, not one round a fix: a definition\'s and an alert file\'s', async () => {
    const folder = join(dir, 'rounds');
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'typos.sql'), '/*\ndescriptio: Typos.\nparms:\n  p: { type: strng }\n  q: { typ: string }\n*/\nSELECT @x AS a, @q AS b\n');
    writeFileSync(join(folder, 'typos.alert.yaml'), 'qeury: usage.api-counts\nwen: total_rest_requests > 0\nevery: 30s\nparams: { project: a, interval: daily, colour: red }\nnotify:\n  - webhook: ftp://x\n');
    const r = await cli(['--queries', folder, 'check'], { env });
    expect(r.code).toBe(2);
    const errors = r.stdout.split('\n').filter((l) => l.startsWith('error')).map((l) => l.replace(/^error {2}\S*\//, ''));
    expect(errors).toEqual([
      "typos.sql:2: unknown key 'descriptio' in the header. Did you mean description?",
      "typos.sql:3: unknown key 'parms' in the header. Did you mean params?",
      "typos.sql:4: unknown type 'strng' in parameter 'p'. Did you mean string?",
      "typos.sql:4: parameter 'p' is declared but the SQL never uses @p.",
      "typos.sql:5: unknown key 'typ' in parameter 'q'. Did you mean type?",
      'typos.sql:7: @x is used but not declared under params. Did you mean @p?',
      "typos.alert.yaml:1: unknown key 'qeury' in the alert file. Did you mean query?",
      "typos.alert.yaml:2: unknown key 'wen' in the alert file. Did you mean when?",
      'typos.alert.yaml:3: every must be at least 1m, not 30s.',
      'typos.alert.yaml:4: unknown parameter "colour" for usage.api-counts. Parameters: project, interval.',
      'typos.alert.yaml:6: webhook must be an http(s) address, not ftp.',
    ]);
  });

  it('serve refuses to start, listing every broken definition (exit 2)', async () => {
    const r = await cli(['serve', '--port', '0'], { env: { ...env, SAVEDQ_API_KEYS: 'k' } });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^savedq: serve: 1 saved query definition is broken; fix it first:\n {2}.*broken\.sql:6: unknown key 'requird'/);
  });
});

describe('a regular expression parameter', () => {
  it('is checked before anything runs, even on an empty data directory, and nothing is cached', async () => {
    const empty = { SAVEDQ_DATA_DIR: join(dir, 'empty'), SAVEDQ_CACHE_FILE: join(dir, 'empty.sqlite') };
    const r = await cli(['run', 'usage.api-counts', '-p', 'project=(unclosed', '-p', 'interval=daily'], { env: empty });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`savedq: invalid value "(unclosed" for parameter 'project': not an RE2 regular expression (missing closing ): \`(unclosed\`).\n`);
    const cached = await cli(['cache', 'list', '-f', 'json'], { env: empty });
    expect(JSON.parse(cached.stdout)).toEqual([]);
  });
});

describe('serve and SIGHUP', () => {
  it('reads the folders again: a valid set replaces the old one; a broken one is refused, the old set kept', async () => {
    const folder = join(dir, 'served');
    mkdirSync(folder);
    writeFileSync(join(folder, 'one.sql'), '/*\ndescription: first\n*/\nSELECT 1 AS n\n');
    const server = await startServe({ ...env, SAVEDQ_QUERIES: folder, SAVEDQ_API_KEYS: 'k' });
    const get = async (name: string) => {
      const res = await fetch(`${server.url}/api/endpoints/query/${name}`, { headers: { 'X-API-KEY': 'k' } });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    expect(await get('one')).toMatchObject({ status: 200, body: { result: [{ n: 1 }] } });
    expect((await get('two')).status).toBe(404);

    writeFileSync(join(folder, 'two.sql'), '/*\ndescription: second\n*/\nSELECT 2 AS n\n');
    writeFileSync(join(folder, 'one.sql'), '/*\ndescription: first, edited\n*/\nSELECT 11 AS n\n');
    server.child.kill('SIGHUP');
    await server.waitFor(/^\d{4}-\d\d-\d\dT[\d:.]+Z reloaded: 5 saved queries$/m);
    expect(await get('two')).toMatchObject({ status: 200, body: { result: [{ n: 2 }] } });
    expect(await get('one')).toMatchObject({ status: 200, body: { result: [{ n: 11 }] } });
    const paths = Object.keys(((await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: object }).paths);
    expect(paths).toContain('/api/endpoints/query/two');

    writeFileSync(join(folder, 'two.sql'), '/*\ndescription: broken now\nparams:\n  x: { type: nope }\n*/\nSELECT @x\n');
    writeFileSync(join(folder, 'three.sql'), '/*\ndescription: third\n*/\nSELECT 3 AS n\n');
    server.child.kill('SIGHUP');
    await server.waitFor(/^\d{4}-\d\d-\d\dT[\d:.]+Z reload failed, still serving the previous queries: .*two\.sql:4: unknown type 'nope'/m);
    expect(await get('two')).toMatchObject({ status: 200, body: { result: [{ n: 2 }] } });
    expect((await get('three')).status).toBe(404);

    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    // Every line of its log has its time: requests, reloads, stopping.
    const lines = server.stderr().trimEnd().split('\n');
    expect(lines.filter((l) => !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \S/.test(l))).toEqual([]);
    expect(lines.some((l) => / SIGTERM: finishing requests in flight, then stopping$/.test(l))).toBe(true);
  });
});

describe('SQL only the engine finds wrong', () => {
  const refused = join(dir, 'refused');
  const withIt = { ...env, SAVEDQ_QUERIES: refused };

  it('is the definition’s mistake: run and check exit 2 naming the file and line and showing that line of your SQL, never the SQL as savedq rewrote it', async () => {
    mkdirSync(refused);
    writeFileSync(join(refused, 'typo.sql'), '/*\ndescription: a missing parenthesis\n*/\nSELECT\n  count( AS n\nFROM edge_logs\n');
    writeFileSync(join(refused, 'misspelt.sql'), '/*\ndescription: cont for count\nparams:\n  project: { required: true }\n*/\nSELECT cont() AS n\nFROM edge_logs\nWHERE project = @project AND timestamp > @now - INTERVAL 1 DAY\n');
    const typo = await cli(['run', 'typo'], { env: withIt });
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/^savedq: .*refused\/typo\.sql:5: the engine cannot parse the query: Syntax error: failed at column 8 \(\(\): \( AS n \(SYNTAX_ERROR\)\n {2}5 \| {3}count\( AS n\n$/);
    const misspelt = await cli(['run', 'misspelt', '-p', 'project=acme-shop'], { env: withIt });
    expect(misspelt.code).toBe(2);
    expect(misspelt.stdout).toBe('');
    expect(misspelt.stderr).toMatch(/^savedq: .*refused\/misspelt\.sql:6: the engine refuses the query: Function with name `cont` does not exist\. Maybe you meant: .*'count'.* \(UNKNOWN_FUNCTION\)\n {2}6 \| SELECT cont\(\) AS n\n$/);
    expect(misspelt.stderr).not.toMatch(/_CAST|SETTINGS|acme-shop/);

    const check = await cli(['check'], { env: withIt });
    expect(check.code).toBe(2);
    expect(check.stdout).toMatch(/^error {2}.*misspelt\.sql:6: the engine refuses the query: Function with name `cont` does not exist.*\n {7}6 \| SELECT cont\(\) AS n$/m);
    expect(check.stdout).not.toMatch(/_CAST|'x'/);
  });

  it('is one file’s problem when the file is not text or not a SELECT: check names each and goes on with the others, run exits 2', async () => {
    const odd = join(dir, 'odd');
    mkdirSync(odd);
    writeFileSync(join(odd, 'binary.sql'), Buffer.from([0xff, 0xfe, 0x00, ...Buffer.from('garbage')]));
    writeFileSync(join(odd, 'nul.sql'), 'SELECT 1 AS one\n\0\n');
    writeFileSync(join(odd, 'drop.sql'), '-- a mistake\nDROP TABLE edge_logs\n');
    writeFileSync(join(odd, 'word.sql'), 'garbage\n');
    writeFileSync(join(odd, 'fine.sql'), 'SELECT 1 AS one\n');
    const check = await cli(['check'], { env: { ...env, SAVEDQ_QUERIES: odd } });
    expect(check.code).toBe(2);
    expect(check.stdout).toMatch(/^error {2}.*odd\/binary\.sql:1: this file is not text a saved query can be: it holds bytes that are not UTF-8\.$/m);
    expect(check.stdout).toMatch(/^error {2}.*odd\/nul\.sql:2: this file is not text a saved query can be: it holds a NUL byte\.$/m);
    expect(check.stdout).toMatch(/^error {2}.*odd\/drop\.sql:1: a saved query is one SELECT \(WITH, UNION ALL and subqueries of its own included\); the engine reads a DROP statement\.$/m);
    expect(check.stdout).toMatch(/^error {2}.*odd\/word\.sql:1: the engine cannot parse the query: Syntax error: failed at column 8 \(end of query\)/m);
    expect(check.stdout).toMatch(/^ok {5}fine /m);
    expect(check.stderr).toBe('savedq: check: 4 ok, 4 broken.\n');
    const list = await cli(['list', '-f', 'json'], { env: { ...env, SAVEDQ_QUERIES: odd } });
    expect((JSON.parse(list.stdout) as { name: string }[]).map((q) => q.name)).not.toContain('binary');
    const run = await cli(['run', 'drop'], { env: { ...env, SAVEDQ_QUERIES: odd } });
    expect(run).toMatchObject({ code: 2, stdout: '' });
    expect(run.stderr).toMatch(/drop\.sql:1: a saved query is one SELECT/);
  });

  it('keeps serve from starting (exit 2, listing each), and is refused on SIGHUP, the old set kept', async () => {
    const started = await cli(['serve', '--port', '0'], { env: { ...withIt, SAVEDQ_API_KEYS: 'k' } });
    expect(started.code).toBe(2);
    expect(started.stderr).toMatch(/^savedq: serve: 2 saved query definitions are broken; fix them first:\n/);
    expect(started.stderr).toMatch(/misspelt\.sql:6: the engine refuses the query: Function with name `cont`.*\n {4}6 \| SELECT cont\(\) AS n/);
    expect(started.stderr).toMatch(/typo\.sql:5: the engine cannot parse the query: Syntax error/);

    const folder = join(dir, 'served-then-refused');
    mkdirSync(folder);
    writeFileSync(join(folder, 'counts.sql'), '/*\ndescription: fine\n*/\nSELECT count() AS n FROM edge_logs\n');
    const server = await startServe({ ...env, SAVEDQ_QUERIES: folder, SAVEDQ_API_KEYS: 'k' });
    const get = () => fetch(`${server.url}/api/endpoints/query/counts`, { headers: { 'X-API-KEY': 'k' } }).then((r) => r.status);
    expect(await get()).toBe(200);
    writeFileSync(join(folder, 'counts.sql'), '/*\ndescription: broken now\n*/\nSELECT cont() AS n FROM edge_logs\n');
    server.child.kill('SIGHUP');
    await server.waitFor(/reload failed, still serving the previous queries: .*counts\.sql:4: the engine refuses the query: Function with name `cont`/);
    expect(await get()).toBe(200);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });
});

