import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { examplesDir } from '../../src/package.js';
import { cli, tempDir, LONG_TEST_MS } from '../helpers.js';

// `savedq test` through the built CLI, on real fixtures: each test file on a warehouse of its own in an
// embedded engine on a temporary data directory, never the user's.
const dir = tempDir();
const env = { SAVEDQ_DATA_DIR: join(dir, 'data'), SAVEDQ_CACHE_FILE: join(dir, 'cache', 'cache.sqlite'), SAVEDQ_QUERIES: '' };

/** A folder of saved queries and tests, made from files given by name. */
function folder(name: string, files: Record<string, string>): string {
  const path = join(dir, name);
  mkdirSync(path, { recursive: true });
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(path, file, '..'), { recursive: true });
    writeFileSync(join(path, file), text);
  }
  return path;
}

/** `savedq test` on a folder of queries. */
const test = (queries: string, ...args: string[]) => cli(['--queries', queries, 'test', ...args], { env });

/** A query of one project's errors per path, as the examples have it. */
const ERRORS = readFileSync(join(examplesDir, 'errors.by-path.sql'), 'utf8');

/** Two requests of p1 (one an error), one error of p2. */
const EVENTS = `
fixtures:
  edge_logs:
    - { timestamp: 2026-11-20T11:00:00Z, project: p1, metadata: { request: { path: /a }, response: { status_code: 500 } } }
    - { timestamp: 2026-11-20T10:00:00Z, project: p1, metadata: { request: { path: /b }, response: { status_code: 200 } } }
    - { timestamp: 2026-11-20T10:00:00Z, project: p2, metadata: { request: { path: /a }, response: { status_code: 404 } } }
`;

const json = <T>(text: string) => JSON.parse(text) as T;
type JsonReport = {
  ok: boolean;
  passed: number;
  failed: number;
  broken: number;
  files: { file: string; query: string | null; problems: { file: string; line: number; message: string }[]; cases: { name: string; ok: boolean; rows_read: number | null; failures: { expectation: string; message: string }[] }[] }[];
};

describe('savedq test', () => {
  it('runs the tests shipped with the built-in queries and the examples, and they pass', async () => {
    const r = await cli(['test', '--builtin', '-f', 'json'], { env });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const report = json<JsonReport>(r.stdout);
    expect(report.files.map((f) => f.query).sort()).toEqual([
      'errors.by-path',
      'functions.invocation-stats',
      'functions.slowest',
      'logs.all',
      'status.classes-hourly',
      'traffic.daily',
      'usage.api-counts',
    ]);
    expect(report.passed).toBeGreaterThanOrEqual(40);
    expect(report.failed + report.broken).toBe(0);
  });

  it('prints a line per case, ok with the query, the case and its milliseconds, and exits 0', async () => {
    const queries = folder('passing', {
      'errors.by-path.sql': ERRORS,
      'errors.by-path.test.yaml': `at: 2026-11-20T12:00:00Z\n${EVENTS}
cases:
  - name: counts the project's errors
    params: { project: p1 }
    rows:
      - { path: /a, errors: 1, server_errors: 1, last_seen: "2026-11-20T11:00:00.000000Z" }
  - name: a day out of range is refused
    params: { project: p1, days: 365 }
    error: input
`,
    });
    const r = await test(queries);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^ok +errors\.by-path {2}counts the project's errors {2}\d+ ms$/m);
    expect(r.stdout).toMatch(/^ok +errors\.by-path {2}a day out of range is refused {2}\d+ ms$/m);
    expect(r.stderr).toMatch(/test: 2 passed \(1 file, [\d.]+ s\)/);
  });

  it('shows the first row and field that differ, expected beside actual, and exits 1', async () => {
    const queries = folder('failing', {
      'errors.by-path.sql': ERRORS,
      'errors.by-path.test.yaml': `at: 2026-11-20T12:00:00Z\n${EVENTS}
cases:
  - name: a field differs
    params: { project: p1 }
    rows:
      - { path: /a, errors: 2, server_errors: 1, last_seen: "2026-11-20T11:00:00.000000Z" }
  - name: a row is missing
    params: { project: p1 }
    rows:
      - { path: /a, errors: 1, server_errors: 1, last_seen: "2026-11-20T11:00:00.000000Z" }
      - { path: /b, errors: 1, server_errors: 0, last_seen: "2026-11-20T10:00:00.000000Z" }
  - name: unordered rows differ
    params: { project: p2 }
    rows_unordered:
      - { path: /a, errors: 1, server_errors: 1, last_seen: "2026-11-20T10:00:00.000000Z" }
  - name: the count differs
    params: { project: p1 }
    row_count: 3
  - name: an error that does not come
    params: { project: p1 }
    error: input
  - name: another kind of error
    params: { project: p1, days: 0 }
    error: definition
  - name: a call that fails unexpectedly
    params: { project: p1, top: many }
    row_count: 1
  - name: passes
    params: { project: p2 }
    row_count: 1
`,
    });
    const r = await test(queries);
    expect(r.code, r.stderr).toBe(1);
    const out = r.stdout;
    expect(out).toMatch(/^FAIL +errors\.by-path {2}a field differs {2}\d+ ms\n +row 1, field errors: expected 2, got 1\n +expected: \{"path":"\/a","errors":2,.*\}\n +actual: +\{"path":"\/a","errors":1,.*\}$/m);
    expect(out).toMatch(/a row is missing.*\n +row 2 is missing \(expected 2 rows, got 1\)\n +expected: \{"path":"\/b"/);
    expect(out).toMatch(/unordered rows differ.*\n +1 expected row not returned, 1 row returned but not expected\n +expected: .*"server_errors":1.*\n +actual: .*"server_errors":0/);
    expect(out).toMatch(/the count differs.*\n +expected 3 rows, got 1$/m);
    expect(out).toMatch(/an error that does not come.*\n +expected an input error, but the call returned 1 row$/m);
    expect(out).toMatch(/another kind of error.*\n +expected a definition error, got an input error: invalid value "0" for parameter 'days'/);
    expect(out).toMatch(/a call that fails unexpectedly.*\n +the call failed \(input error\): invalid value "many" for parameter 'top'/);
    expect(out).toMatch(/^ok +errors\.by-path {2}passes/m);
    expect(r.stderr).toMatch(/savedq: test: 1 passed, 7 failed \(1 file, [\d.]+ s\)\./);
  });

  it('holds a query to reading its project only: max_rows_read catches one that reads every project', async () => {
    const lines = Array.from({ length: 6000 }, (_, i) => JSON.stringify({ timestamp: `2026-11-20T0${i % 10}:00:00Z`, project: `other-${i % 3}`, metadata: { request: { path: '/x' }, response: { status_code: 500 } } }));
    const testText = `at: 2026-11-20T12:00:00Z
fixtures:
  edge_logs: fixtures/noise.ndjson
cases:
  - name: reads only the project's part of the table
    params: { project: a-project }
    rows: []
    max_rows_read: 2048
`;
    // An edit that makes the project case-insensitive: the same rows, but the table's order can no longer skip the other projects.
    const unfiltered = ERRORS.replace('WHERE project = @project', 'WHERE lower(project) = lower(@project)');
    const queries = folder('reads', {
      'errors.by-path.sql': ERRORS,
      'errors.by-path.test.yaml': testText,
      'fixtures/noise.ndjson': `${lines.join('\n')}\n`,
    });
    const good = await test(queries, '-f', 'json');
    expect(good.code, good.stdout + good.stderr).toBe(0);
    expect(json<JsonReport>(good.stdout).files[0]?.cases[0]?.rows_read).toBeLessThanOrEqual(2048);

    writeFileSync(join(queries, 'errors.by-path.sql'), unfiltered);
    const reads = await test(queries);
    expect(reads.code, reads.stdout).toBe(1);
    expect(reads.stdout).toMatch(/FAIL +errors\.by-path {2}reads only the project's part of the table.*\n +the query read 6000 rows, more than max_rows_read 2048$/m);
  });

  it("runs a case as run runs its call: the query's own timeout, and --sandbox-max-memory-mb for a case's SQL", async () => {
    const queries = folder('limits', {
      // Far more than a second of work: only the query's own timeout ends it soon.
      'endless.sql': '/*\ntimeout: 1\n*/\nSELECT count() AS n FROM numbers(100000000000)\n',
      'endless.test.yaml': 'at: 2026-11-20T12:00:00Z\ncases:\n  - name: ends at its own timeout\n    row_count: 1\n',
      'numbers.sql': '/*\nsandbox: true\n*/\nSELECT number AS n FROM numbers(5000000)\n',
      // Five million distinct values: well over 16 MiB to count exactly, well under the default limit.
      'numbers.test.yaml': 'at: 2026-11-20T12:00:00Z\ncases:\n  - name: counts every distinct value\n    sql: SELECT uniqExact(n) AS distinct_values FROM result\n    rows: [{ distinct_values: 5000000 }]\n',
    });
    const failuresOf = (report: JsonReport, query: string) => report.files.find((f) => f.query === query)?.cases[0]?.failures.map((f) => f.message);
    const limited = await cli(['--queries', queries, '--timeout', '600', '--sandbox-max-memory-mb', '16', 'test', '-f', 'json'], { env });
    expect(limited.code, limited.stderr).toBe(1);
    const report = json<JsonReport>(limited.stdout);
    expect(failuresOf(report, 'endless')).toEqual(['the call failed (the engine): endless ran past its time limit of 1 s (its own timeout).']);
    expect(failuresOf(report, 'numbers')).toEqual([expect.stringMatching(/^the call failed \(the engine\): .*memory/i)]);
    // The same SQL under the default limit: it passes.
    const unlimited = await cli(['--queries', queries, 'test', 'numbers', '-f', 'json'], { env });
    expect(unlimited.code, unlimited.stdout + unlimited.stderr).toBe(0);
  });

  it('gives each test file its own warehouse: two files with conflicting fixtures of one table each see only their own', async () => {
    const counts = (n: number) =>
      `at: 2026-11-20T12:00:00Z
fixtures:
  edge_logs:
${Array.from({ length: n }, (_, i) => `    - { timestamp: 2026-11-20T11:0${i}:00Z, project: p1, metadata: { request: { path: /a }, response: { status_code: 500 } } }`).join('\n')}
cases:
  - name: sees its own ${n} events
    params: { project: p1 }
    rows:
      - { path: /a, errors: ${n}, server_errors: ${n}, last_seen: "2026-11-20T11:0${n - 1}:00.000000Z" }
`;
    const queries = folder('apart', {
      'errors.by-path.sql': ERRORS,
      'errors.by-path.test.yaml': counts(2),
      'same.sql': ERRORS.replace('description:', 'name: errors.again\ndescription:'),
      'same.test.yaml': counts(3),
      // The same fixtures as the first file's: the same warehouse, which the cases only read.
      'twin.sql': ERRORS.replace('description:', 'name: errors.twin\ndescription:'),
      'twin.test.yaml': counts(2),
    });
    const r = await test(queries);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^ok +errors\.by-path {2}sees its own 2 events/m);
    expect(r.stdout).toMatch(/^ok +errors\.again {2}sees its own 3 events/m);
    expect(r.stdout).toMatch(/^ok +errors\.twin {2}sees its own 2 events/m);
  });

  it('names the file and line of a broken test file, runs the others, and exits 2', async () => {
    const good = `at: 2026-11-20T12:00:00Z\ncases:\n  - name: runs\n    params: { project: p1 }\n    rows: []\n`;
    const queries = folder('broken', {
      'a.sql': ERRORS.replace('description:', 'name: a\ndescription:'),
      'a.test.yaml': 'at: 2026-11-20T12:00:00Z\ncases:\n  - name: x\n    params: { project: [p1\n',
      'b.sql': ERRORS.replace('description:', 'name: b\ndescription:'),
      'b.test.yaml': 'at: 2026-11-20T12:00:00Z\ncases:\n  - name: x\n    params: { project: p1 }\n    rowz: []\n',
      'c.sql': ERRORS.replace('description:', 'name: c\ndescription:'),
      'c.test.yaml': 'cases:\n  - name: x\n    params: { project: p1 }\n    rows: []\n',
      'd.test.yaml': good,
      'e.sql': ERRORS.replace('description:', 'name: e\ndescription:'),
      'e.test.yaml': 'at: 2026-11-20T12:00:00Z\nfixtures:\n  edge_logs: e.ndjson\ncases:\n  - name: x\n    params: { project: p1 }\n    rows: []\n',
      'e.ndjson': '{"timestamp":"2026-11-20T11:00:00Z","project":"p1"}\n{"timestamp":"yesterday","project":"p1"}\n',
      'f.sql': ERRORS.replace('description:', 'name: f\ndescription:'),
      'f.test.yaml': 'at: 2026-11-20T12:00:00Z\nfixtures:\n  edge_logs:\n    - { timestamp: 2026-11-20T11:00:00Z, project: p1 }\n    - { timestamp: 2026-11-20T11:00:00Z }\ncases:\n  - name: x\n    params: { project: p1 }\n    rows: []\n',
      'g.sql': ERRORS.replace('description:', 'name: g\ndescription:'),
      'g.test.yaml': good,
    });
    const r = await test(queries);
    expect(r.code, r.stdout + r.stderr).toBe(2);
    const out = r.stdout;
    expect(out).toMatch(/^error +.*broken\/a\.test\.yaml:4: not valid YAML: /m);
    expect(out).toMatch(/^error +.*broken\/b\.test\.yaml:5: unknown key 'rowz' in case 'x'\. Did you mean rows\?$/m);
    expect(out).toMatch(/^error +.*broken\/c\.test\.yaml:1: no at: /m);
    expect(out).toMatch(/^error +.*broken\/d\.test\.yaml:1: no .*broken\/d\.sql beside it/m);
    expect(out).toMatch(/^error +.*broken\/e\.ndjson:2: the load refuses this event of the edge_logs fixture: invalid timestamp/m);
    expect(out).toMatch(/^error +.*broken\/f\.test\.yaml:5: the load refuses this event of the edge_logs fixture: missing project\.$/m);
    expect(out).toMatch(/^ok +g {2}runs/m);
    expect(r.stderr).toMatch(/savedq: test: 1 passed, 6 broken files/);
  }, LONG_TEST_MS);

  it('rewrites only the failing expectations with --update, keeping comments, order and the other cases', async () => {
    const before = `# The errors of p1.
at: 2026-11-20T12:00:00Z   # fixed
${EVENTS}
cases:
  # The rows are wrong: --update mends them.
  - name: rows
    params: { project: p1 }
    rows:
      - { path: /a, errors: 9, server_errors: 9, last_seen: "2026-11-20T11:00:00.000000Z" }  # wrong
    # and so is the count
    row_count: 7
  - name: untouched
    params: { project: p2, days: 1 }
    rows: [ { path: /a, errors: 1, server_errors: 0, last_seen: "2026-11-20T10:00:00.000000Z" } ]
  - name: still failing
    params: { project: p1 }
    error: input
`;
    const queries = folder('update', { 'errors.by-path.sql': ERRORS, 'errors.by-path.test.yaml': before });
    const r = await test(queries, '--update');
    expect(r.code, r.stdout + r.stderr).toBe(1); // an error expected is the user's to change
    expect(r.stdout).toMatch(/^updated +errors\.by-path {2}rows/m);
    expect(r.stdout).toMatch(/^FAIL +errors\.by-path {2}still failing/m);
    const after = readFileSync(join(queries, 'errors.by-path.test.yaml'), 'utf8');
    expect(after).toBe(
      before
        .replace('- { path: /a, errors: 9, server_errors: 9, last_seen: "2026-11-20T11:00:00.000000Z" }', '- { path: /a, errors: 1, server_errors: 1, last_seen: 2026-11-20T11:00:00.000000Z }')
        .replace('row_count: 7', 'row_count: 1'),
    );
    const again = await test(queries);
    expect(again.stdout).toMatch(/^ok +errors\.by-path {2}rows/m);
    expect(again.stdout).toMatch(/^ok +errors\.by-path {2}untouched/m);
  });

  it('writes JUnit XML that an XML parser reads: a suite a file, a case a case, failures and broken files', async () => {
    const queries = folder('junit', {
      'errors.by-path.sql': ERRORS,
      'errors.by-path.test.yaml': `at: 2026-11-20T12:00:00Z\n${EVENTS}\ncases:\n  - name: passes & "quotes" <too>\n    params: { project: p1 }\n    row_count: 1\n  - name: fails\n    params: { project: p1 }\n    row_count: 2\n`,
      'lost.test.yaml': 'at: 2026-11-20T12:00:00Z\ncases:\n  - name: x\n    row_count: 1\n',
    });
    const r = await test(queries, '-f', 'junit');
    expect(r.code).toBe(2);
    // fast-xml-parser's own validator (deprecated there for a package apart, which savedq does not install).
    // eslint-disable-next-line @typescript-eslint/no-deprecated
    expect(XMLValidator.validate(r.stdout)).toBe(true);
    const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' }).parse(r.stdout) as {
      testsuites: { tests: string; failures: string; errors: string; testsuite: { name: string; testcase: { name: string; failure?: { message: string } } | { name: string; failure?: { message: string } }[] }[] };
    };
    expect(xml.testsuites).toMatchObject({ tests: '3', failures: '1', errors: '1' });
    const [suite, lost] = xml.testsuites.testsuite;
    expect(suite?.name).toBe('errors.by-path');
    const cases = suite?.testcase as { name: string; failure?: { message: string } }[];
    expect(cases.map((c) => c.name)).toEqual(['passes & "quotes" <too>', 'fails']);
    expect(cases[1]?.failure?.message).toBe('expected 2 rows, got 1');
    expect(lost?.name).toMatch(/lost\.test\.yaml$/);
  });

  it('never reads or writes the user\'s data directory or cache, and never the server of --url', async () => {
    const data = join(dir, 'data');
    const load = await cli(['load', 'edge_logs', '-'], { env, input: '{"timestamp":"2026-11-20T11:00:00Z","project":"p1"}\n' });
    expect(load.code, load.stderr).toBe(0);
    const snapshot = () => {
      const files: Record<string, string> = {};
      const walk = (path: string) => {
        for (const name of readdirSync(path)) {
          const file = join(path, name);
          const stat = statSync(file);
          if (stat.isDirectory()) walk(file);
          else files[file] = `${stat.mtimeMs}:${createHash('sha256').update(readFileSync(file)).digest('hex')}`;
        }
      };
      walk(data);
      return files;
    };
    const before = snapshot();
    const cacheDir = join(dir, 'cache');
    const cacheBefore = existsSync(cacheDir) ? readdirSync(cacheDir) : [];
    const r = await cli(['--url', 'http://127.0.0.1:9', 'test', '--builtin', '--verbose'], { env });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stderr).toMatch(/tests run on the embedded engine, in a warehouse of their own/);
    expect(snapshot()).toEqual(before);
    expect(existsSync(cacheDir) ? readdirSync(cacheDir) : []).toEqual(cacheBefore);
  });

  it('tells a query without tests, and an unknown one, apart from a failure (exit 2)', async () => {
    const queries = folder('named', { 'errors.by-path.sql': ERRORS });
    const none = await test(queries, 'errors.by-path');
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^savedq: errors\.by-path has no tests: write them in .*named\/errors\.by-path\.test\.yaml\.$/m);
    const unknown = await test(queries, 'errors.by-pth');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown query 'errors\.by-pth'\. Did you mean errors\.by-path\?/);
    const empty = await test(queries);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/no test files in .*named: a query's tests are <name>\.test\.yaml beside its <name>\.sql/);
    const builtin = await test(queries, 'logs.all');
    expect(builtin.code, builtin.stderr).toBe(0);
  });

  it('check reads test files (their structure and their query) and savedq new writes a starter test that passes', async () => {
    const queries = join(dir, 'new');
    const made = await cli(['--queries', queries, 'new', 'my.starter'], { env });
    expect(made.code, made.stderr).toBe(0);
    expect(existsSync(join(queries, 'my.starter.test.yaml'))).toBe(true);
    const passes = await test(queries);
    expect(passes.code, passes.stdout + passes.stderr).toBe(0);
    expect(passes.stdout.match(/^ok /gm)).toHaveLength(3);

    copyFileSync(join(queries, 'my.starter.test.yaml'), join(queries, 'orphan.test.yaml'));
    writeFileSync(join(queries, 'typo.test.yaml'), 'at: 2026-11-20T12:00:00Z\ncases:\n  - name: x\n    param: {}\n    rows: []\n');
    writeFileSync(join(queries, 'typo.sql'), ERRORS.replace('description:', 'name: typo\ndescription:'));
    const check = await cli(['--queries', queries, 'check'], { env });
    expect(check.code).toBe(2);
    expect(check.stdout).toMatch(/^ok +my\.starter +.*my\.starter\.test\.yaml$/m);
    expect(check.stdout).toMatch(/^error +.*orphan\.test\.yaml:1: no .*orphan\.sql beside it/m);
    expect(check.stdout).toMatch(/^error +.*typo\.test\.yaml:4: unknown key 'param' in case 'x'\. Did you mean params\?$/m);
  });
});
