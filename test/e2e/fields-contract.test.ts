import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cli, LONG_TEST_MS, startServe, tempDir } from '../helpers.js';

// Fields are a contract (docs/queries.md): check asks the engine to describe each query's answer and
// holds its columns to the declared fields; a run, serve's start and its SIGHUP refuse a query whose
// answer breaks them; check --write-fields writes them from the engine's answer.

const dir = tempDir('savedq-fields-');
const queries = join(dir, 'queries');
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'cache.sqlite'), SAVEDQ_QUERIES: queries };

const header = (fields: string) => `/*\ndescription: events of a project.\nparams:\n  project: { type: string, required: true }\nfields:\n${fields}*/\n`;
const SQL = 'SELECT count() AS n, max(timestamp) AS last FROM edge_logs WHERE project = @project\n';
const FILES: Record<string, string> = {
  // As declared: ok.
  'kept.sql': header('  n: { type: integer, description: How many. }\n  last: { type: timestamp }\n') + SQL,
  // n renamed cnt in the SQL.
  'renamed.sql': header('  n: { type: integer, description: How many. }\n  last: { type: timestamp }\n') + SQL.replace('AS n', 'AS cnt'),
  // n turned into text.
  'retyped.sql': header('  n: { type: integer, description: How many. }\n  last: { type: timestamp }\n') + SQL.replace('count() AS n', 'toString(count()) AS n'),
  // last no longer answered.
  'dropped.sql': header('  n: { type: integer, description: How many. }\n  last: { type: timestamp }\n') + SQL.replace(', max(timestamp) AS last', ''),
  // a column the fields never mention.
  'added.sql': header('  n: { type: integer, description: How many. }\n  last: { type: timestamp }\n') + SQL.replace('AS last', 'AS last, any(project) AS p'),
};

beforeAll(async () => {
  mkdirSync(queries);
  const loaded = await cli(['load', '--sample', '-q'], { env });
  expect(loaded.code, loaded.stderr).toBe(0);
}, LONG_TEST_MS);

describe('savedq check holds each answer to its fields', () => {
  it('names a field renamed, retyped, dropped, and a column added, each at its line; a query as declared is ok', async () => {
    for (const [name, text] of Object.entries(FILES)) writeFileSync(join(queries, name), text);
    const check = await cli(['check'], { env });
    expect(check.code).toBe(2);
    expect(check.stdout).toMatch(/^ok {5}kept +\S*kept\.sql$/m);
    expect(check.stdout).toContain('renamed.sql:6: field n is declared, but the answer has no column n (it has cnt: renamed?).');
    expect(check.stdout).toContain('retyped.sql:6: field n: declared integer, but the engine answers String (string).');
    expect(check.stdout).toContain('dropped.sql:7: field last is declared, but the answer has no column last (its columns: n).');
    expect(check.stdout).toContain('added.sql:5: the answer has a column p (String) that fields: does not declare.');
    expect(check.stderr).toBe('savedq: check: 4 ok, 4 broken.\n');
  }, LONG_TEST_MS);

  it('refuses to run a query whose answer breaks its fields, naming the line, as often as it is asked', async () => {
    for (let i = 0; i < 2; i++) {
      const run = await cli(['run', 'retyped', '-p', 'project=acme-shop', '-f', 'json'], { env: { ...env, PWD: dir } });
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/retyped\.sql:6: field n: declared integer, but the engine answers String \(string\)\.\n$/);
    }
    const kept = await cli(['run', 'kept', '-p', 'project=acme-shop', '-f', 'json'], { env });
    expect(kept.code, kept.stderr).toBe(0);
    expect(Object.keys((JSON.parse(kept.stdout) as object[])[0] ?? {})).toEqual(['n', 'last']);
  }, LONG_TEST_MS);

  it('serve refuses to start with such a query, and a SIGHUP that brings one keeps the queries it had', async () => {
    const started = await cli(['serve', '--port', '0'], { env: { ...env, SAVEDQ_API_KEYS: 'k' } });
    expect(started.code).toBe(2);
    expect(started.stderr).toContain('retyped.sql:6: field n: declared integer, but the engine answers String (string).');
    // Only the kept one: serve starts; then the renamed one comes, and SIGHUP keeps what it had.
    for (const name of Object.keys(FILES)) if (name !== 'kept.sql') writeFileSync(join(queries, name), FILES['kept.sql']?.replace('description: events', 'name: spare-' + name.replace('.sql', '') + '\ndescription: events') ?? '');
    const server = await startServe({ ...env, SAVEDQ_API_KEYS: 'k' });
    writeFileSync(join(queries, 'renamed.sql'), FILES['renamed.sql'] ?? '');
    server.child.kill('SIGHUP');
    await server.waitFor(/reload failed, still serving the previous queries: .*renamed\.sql:5: the answer has a column cnt \(UInt64\) that fields: does not declare/);
    const res = await fetch(`${server.url}/api/endpoints/query/spare-renamed?project=acme-shop`, { headers: { 'X-API-KEY': 'k' } });
    expect(res.status).toBe(200);
    server.child.kill('SIGTERM');
    await server.exited;
  }, LONG_TEST_MS);
});

describe('savedq check --write-fields', () => {
  it("writes each query's fields from the engine's answer, keeping descriptions; a file already right is left alone", async () => {
    for (const [name, text] of Object.entries(FILES)) writeFileSync(join(queries, name), text);
    const before = statSync(join(queries, 'kept.sql')).mtimeMs;
    const write = await cli(['check', '--write-fields'], { env });
    expect(write.code, write.stdout + write.stderr).toBe(0);
    for (const name of ['renamed', 'retyped', 'dropped', 'added']) expect(write.stderr).toMatch(new RegExp(`wrote the fields of \\S*${name}\\.sql from the engine's answer\\n`));
    expect(write.stderr).not.toContain('kept.sql');
    expect(statSync(join(queries, 'kept.sql')).mtimeMs).toBe(before);
    expect(readFileSync(join(queries, 'retyped.sql'), 'utf8')).toBe(FILES['retyped.sql']?.replace('n: { type: integer, description: How many. }', 'n: { type: string, description: How many. }'));
    expect(readFileSync(join(queries, 'added.sql'), 'utf8')).toContain('  last: { type: timestamp }\n  p: { type: string }\n*/');
    expect(readFileSync(join(queries, 'dropped.sql'), 'utf8')).toContain('fields:\n  n: { type: integer, description: How many. }\n*/');
    const again = await cli(['check'], { env });
    expect(again.code, again.stdout).toBe(0);
  }, LONG_TEST_MS);
});

describe('savedq lock and check --against', () => {
  it('locks what each query promises; a breaking change fails CI until its version is raised, a compatible one passes', async () => {
    for (const [name, text] of Object.entries(FILES)) writeFileSync(join(queries, name), name === 'kept.sql' ? text : FILES['kept.sql']?.replace('description: events', `name: spare-${name.replace('.sql', '')}\ndescription: events`) ?? '');
    const lock = join(queries, 'savedq.lock.json');
    const wrote = await cli(['lock'], { env });
    expect(wrote.code, wrote.stderr).toBe(0);
    expect(wrote.stderr).toMatch(/^wrote \S*savedq\.lock\.json: 8 saved queries\n$/);
    const text = readFileSync(lock, 'utf8');
    const locked = JSON.parse(text) as { queries: Record<string, { version: number; fields: object; params: object }> };
    expect(Object.keys(locked.queries)).toEqual(['functions.invocation-stats', 'kept', 'logs.all', 'spare-added', 'spare-dropped', 'spare-renamed', 'spare-retyped', 'usage.api-counts']);
    expect(locked.queries['kept']).toMatchObject({ version: 1, params: { project: { type: 'string', required: true } }, fields: { last: { type: 'timestamp', nullable: false }, n: { type: 'integer', nullable: false } } });
    // Again, unchanged: the same bytes.
    expect((await cli(['lock'], { env })).stderr).toMatch(/^unchanged /);
    expect(readFileSync(lock, 'utf8')).toBe(text);

    // A field retyped (its fields written to match, so check itself is happy), and a field added elsewhere.
    writeFileSync(join(queries, 'kept.sql'), FILES['retyped.sql']?.replace('n: { type: integer,', 'n: { type: string,') ?? '');
    writeFileSync(join(queries, 'added.sql'), (FILES['added.sql'] ?? '').replace('description: events', 'name: spare-added\ndescription: events').replace('  last: { type: timestamp }\n', '  last: { type: timestamp }\n  p: { type: string }\n'));
    const against = await cli(['check', '--against', lock], { env });
    expect(against.code, against.stderr).toBe(1);
    expect(against.stdout).toContain('breaking    kept         field n: integer → string\n');
    expect(against.stdout).toContain('compatible  spare-added  field p added\n');
    expect(against.stderr).toMatch(/check: 1 breaking, 1 compatible against \S*savedq\.lock\.json; kept breaks its callers with its version not raised: raise it \(version: in the header\), or keep the change compatible, then savedq lock\.\n$/);
    const asJson = await cli(['check', '--against', lock, '-f', 'json'], { env });
    expect(JSON.parse(asJson.stdout.slice(asJson.stdout.indexOf('\n]\n') + 3))).toEqual([
      { query: 'kept', kind: 'breaking', what: 'field n: integer → string' },
      { query: 'spare-added', kind: 'compatible', what: 'field p added' },
    ]);

    // Its version raised: the change is still said, and passes.
    writeFileSync(join(queries, 'kept.sql'), (readFileSync(join(queries, 'kept.sql'), 'utf8')).replace('/*\n', '/*\nversion: 2\n'));
    const raised = await cli(['check', '--against', lock], { env });
    expect(raised.code, raised.stderr).toBe(0);
    expect(raised.stdout).toContain('breaking    kept         field n: integer → string\ncompatible  kept         version 1 → 2\n');
    // A lock that is not one: said, exit 2.
    writeFileSync(join(dir, 'bad.json'), '{"queries": 1}');
    const bad = await cli(['check', '--against', join(dir, 'bad.json')], { env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/bad\.json is not a savedq lock: write one with savedq lock\.\n$/);
    // A lock that cannot be written: why, and nothing changed.
    const unwritable = await cli(['lock', '--lock', '/proc/savedq.lock.json'], { env });
    expect(unwritable.code).toBe(2);
    expect(unwritable.stderr).toBe('savedq: cannot write the lock /proc/savedq.lock.json: no file can be made in /proc.\n');
  }, LONG_TEST_MS);
});
