import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DefinitionError, InputError, NotFoundError } from '../src/errors.js';
import { builtinQueriesDir } from '../src/package.js';
import { brokenText, QueryCatalog } from '../src/queries/catalog.js';
import { derivedId, readDefinition } from '../src/queries/definition.js';
import { bindValue, clickhouseType } from '../src/queries/param-types.js';
import { checkPatterns, normaliseParams } from '../src/queries/params.js';
import type { SavedQuery } from '../src/queries/types.js';
import { eventually, tempDir } from './helpers.js';

/** A definition file's text: a header of YAML lines, then SQL. */
const definition = (header: string, sql: string) => `/*\n${header}\n*/\n${sql}\n`;

function read(text: string, name = 'q'): SavedQuery {
  const r = readDefinition(`/queries/${name}.sql`, text, name, false);
  if (!r.query) throw new Error(r.problems.map((p) => `${p.line}: ${p.message}`).join('\n'));
  return r.query;
}

function problems(text: string): string[] {
  const r = readDefinition('/queries/q.sql', text, 'q', false);
  return r.problems?.map((p) => `${p.line}: ${p.message}`) ?? [];
}

/** A one-parameter query of a type, for the value tests. */
function withParam(param: string): SavedQuery {
  return read(definition(`params:\n  v:\n${param.replace(/^/gm, '    ')}`, 'SELECT @v AS v'));
}

describe('a definition file', () => {
  it('reads the header of the contract: name, id, description, typed parameters, fields, rows and cache', () => {
    const q = read(
      definition(
        `name: errors.by-path            # optional
id: 1B4E28BA-2FA1-41D2-883F-0016D3CCA427
description: Error responses per request path of one project.
params:
  project:
    type: string
    required: true
    description: Project reference.
  days:
    type: integer
    default: 7
    min: 1
    max: 90
  method:
    type: string
    allowed: [GET, POST, PUT, PATCH, DELETE]
    other: reject
fields:
  path: { type: string, description: Request path. }
  errors: { type: integer }
max_rows: 500
cache: 900
warm: 300`,
        `SELECT request_path AS path, count() AS errors
FROM edge_logs
WHERE project = @project AND status_code >= 400
  AND (@method = '' OR request_method = @method)
  AND timestamp > @now - toIntervalDay(@days)
GROUP BY path ORDER BY errors DESC;`,
      ),
    );
    expect(q).toMatchObject({
      name: 'errors.by-path',
      id: '1b4e28ba-2fa1-41d2-883f-0016d3cca427',
      description: 'Error responses per request path of one project.',
      maxRows: 500,
      cacheSeconds: 900,
      warmSeconds: 300,
      sqlLine: 26,
      fields: [
        { name: 'path', type: 'string', description: 'Request path.' },
        { name: 'errors', type: 'integer', description: '' },
      ],
    });
    expect(q.params.map((p) => [p.name, p.type, p.required, p.default, p.min, p.max, p.allowed?.length])).toEqual([
      ['project', 'string', true, undefined, undefined, undefined, undefined],
      ['days', 'integer', false, '7', 1, 90, undefined],
      ['method', 'string', false, undefined, undefined, undefined, 5],
    ]);
    // The final ; goes, and every @name is a typed parameter: required or defaulted ones plain.
    expect(q.boundSql).toContain('project = {project:String}');
    expect(q.boundSql).toContain('toIntervalDay({days:Int64})');
    expect(q.boundSql).toContain('{now:DateTime64(6, \'UTC\')}');
    expect(q.boundSql).not.toContain(';');
  });

  it('takes its name from the file, and an id derived from the name (UUID v5 of savedq:<name>, URL namespace)', () => {
    const q = read(definition('description: x', 'SELECT 1'), 'errors.by-path');
    expect(q.name).toBe('errors.by-path');
    // Python: uuid.uuid5(uuid.NAMESPACE_URL, 'savedq:errors.by-path')
    expect(q.id).toBe('c18dbb39-601e-5c99-8e4b-77bf9db45451');
    expect(derivedId('errors.by-path')).toBe(q.id);
    expect(q).toMatchObject({ maxRows: 1000, cacheSeconds: 0, warmSeconds: 0, params: [], fields: [] });
  });

  it('needs no header at all: plain SQL is a query without parameters', () => {
    expect(read('-- just SQL\nSELECT 1 AS one\n', 'plain')).toMatchObject({ name: 'plain', description: '', sql: '-- just SQL\nSELECT 1 AS one' });
  });

  it.each([
    ['a banner of comments', '---\n-- daily counts\n---\nSELECT 1 AS one'],
    ['YAML-like lines that are no header', '---\n-- owner: data team\n---\nSELECT 1 AS one'],
  ])('takes SQL between --- comment lines as SQL: %s', (_, text) => {
    expect(read(`${text}\n`, 'plain').sql).toBe(text);
  });

  it('tells a --- header apart without a warning of the YAML library on standard error (an unknown tag in it)', async () => {
    const warned: Error[] = [];
    const onWarning = (warning: Error) => warned.push(warning);
    process.on('warning', onWarning);
    try {
      expect(problems('---\nname: !daily x\n---\nSELECT 1\n')).toEqual([expect.stringMatching(/^1: a header between --- lines is read as SQL: put it in a \/\* … \*\/ comment/)]);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warned.map((w) => w.message)).toEqual([]);
  });

  const lineCases: [string, string][] = [
    [definition('description: a\ndescription: b', 'SELECT 1'), '3: the header is not valid YAML: Map keys must be unique'],
    [definition('params:\n  v: {type: integer', 'SELECT 1'), '3: the header is not valid YAML'],
    [definition('params:\n  v: { type: string[] }', 'SELECT @v'), "3: the header is not valid YAML: Unexpected flow-seq-start at node end. (inside { } write 'string[]' in quotes)"],
    [definition('description: x\nparms:\n  v: {}', 'SELECT 1'), "3: unknown key 'parms' in the header. Did you mean params?"],
    [definition('params:\n  v:\n    type: int', 'SELECT @v'), "4: unknown type 'int' in parameter 'v'. Did you mean integer?"],
    [definition('params:\n  v:\n    type: integer\n    default: seven', 'SELECT @v'), `5: default of parameter 'v' "seven" is not a base-10 integer`],
    [definition('params:\n  v:\n    type: integer\n    default: 100\n    max: 90', 'SELECT @v'), `5: default of parameter 'v' "100" is not a base-10 integer at most 90`],
    [definition('params:\n  v:\n    allowed: [a, b]\n    default: c', 'SELECT @v'), `5: default of parameter 'v' "c" is not one of a, b`],
    [definition('params:\n  v:\n    allowed: [a, b]\n    other: default', 'SELECT @v'), "5: other: default of parameter 'v' needs a default value"],
    [definition('params:\n  v:\n    other: default', 'SELECT @v'), "4: other of parameter 'v' needs allowed"],
    [definition('params:\n  v:\n    type: string\n    min: 1', 'SELECT @v'), "5: min applies only to integer and number parameters"],
    [definition('params:\n  v:\n    required: true\n    default: x', 'SELECT @v'), "5: parameter 'v' is required, so a default would never be used"],
    [definition('params:\n  v:\n    required: yes', 'SELECT @v'), "4: required of parameter 'v' must be true or false, not text"],
    [definition('params:\n  v:\n    type: regex\n    default: "(unclosed"', 'SELECT @v'), `5: default of parameter 'v' "(unclosed" is not an RE2 regular expression (missing closing )`],
    [definition('name: Errors By Path', 'SELECT 1'), "2: invalid name 'Errors By Path'"],
    [definition('id: 42', 'SELECT 1'), '2: id must be text, not a number'],
    [definition('id: not-a-uuid', 'SELECT 1'), "2: invalid id 'not-a-uuid': expected a UUID"],
    [definition('params:\n  now: {}', 'SELECT @now'), "3: 'now' is reserved"],
    [definition('params:\n  v: {}', 'SELECT 1\nFROM t\nWHERE x = @w'), '7: @w is used but not declared under params. Did you mean @v?'],
    [definition('params:\n  v: {}', 'SELECT 1'), "3: parameter 'v' is declared but the SQL never uses @v"],
    [definition('cache: 60\nwarm: 60', 'SELECT 1'), '3: warm (60 s) must be less than cache (60 s)'],
    [definition('warm: 60', 'SELECT 1'), '2: warm needs cache'],
    [definition('max_rows: 0', 'SELECT 1'), '2: max_rows must be a whole number from 1 to 1000000, not 0'],
    [definition('fields:\n  a: { type: text }', 'SELECT 1'), "3: unknown type 'text' in field 'a'"],
    [definition('description: x', 'SELECT 1;\nDROP TABLE edge_logs'), '4: a saved query is one statement'],
    [definition('description: x', '  '), '3: no SQL after the header'],
    ['\n\n/* description: x\nSELECT 1\n', '3: the header comment never ends'],
    [definition('- a list', 'SELECT 1'), '2: the header must be YAML keys'],
    ['\n---\nname: daily\nparams:\n  project: {}\n---\nSELECT @project\n', '2: a header between --- lines is read as SQL: put it in a /* … */ comment before the SQL.'],
  ];
  // Named by the problem each case expects.
  it.each(lineCases.map(([text, expected]) => [expected, text]))('names the line of every problem: %s', (expected, text) => {
    const found = problems(text);
    expect(found.some((p) => p.startsWith(expected)), `${expected}\n  got: ${found.join('\n        ')}`).toBe(true);
  });

  it('reads stale_if_error (a day unless said; 0: never) and limits, each key said when misspelled or out of bounds', () => {
    expect(read(definition('cache: 60', 'SELECT 1')).staleIfErrorSeconds).toBe(86_400);
    expect(read(definition('cache: 60', 'SELECT 1')).limits).toEqual({});
    const capped = read(definition('stale_if_error: 0\nlimits:\n  read_rows: 1000\n  read_bytes: 2000000\n  result_bytes: 500\n  threads: 2', 'SELECT 1'));
    expect(capped.staleIfErrorSeconds).toBe(0);
    expect(capped.limits).toEqual({ read_rows: 1000, read_bytes: 2_000_000, result_bytes: 500, threads: 2 });
    expect(problems(definition('stale_if_eror: 0\nlimits:\n  read_row: 5\n  threads: 0', 'SELECT 1'))).toEqual([
      "2: unknown key 'stale_if_eror' in the header. Did you mean stale_if_error?",
      "4: unknown key 'read_row' in limits. Did you mean read_rows?",
      '5: limits: threads must be a whole number from 1 to 1024, not 0.',
    ]);
  });

  it('lists a file’s problems in the order of its lines', () => {
    // The SQL's ; and undeclared @dayz (line 8) are found before the unused `days` (line 3) is.
    const found = problems(definition('params:\n  days: { type: integer, default: 7 }\ndescription: x', 'SELECT 1\nFROM t\nWHERE x > @dayz;\nSELECT 2'));
    expect(found.map((p) => Number(p.split(':')[0]))).toEqual([3, 8, 8]);
  });

  it('reports every problem of a file, not just the first', () => {
    const found = problems(definition('parms: {}\nparams:\n  v:\n    type: int\n  w: {}', 'SELECT @w, @x'));
    // The SQL is checked against every parameter the header names, those with a problem too, at once:
    // parms (2), v's type (5), v never used (4), @x not declared (8).
    expect(found.map((p) => p.split(':')[0])).toEqual(['2', '4', '5', '8']);
  });

  it('gives an edited query a new digest, but not an edited description', () => {
    const base = read(definition('description: a\nparams:\n  v: { type: integer, default: 1 }', 'SELECT @v'));
    expect(read(definition('description: b\nparams:\n  v: { type: integer, default: 1, description: d }', 'SELECT @v')).digest).toBe(base.digest);
    expect(read(definition('description: a\nparams:\n  v: { type: integer, default: 1 }', 'SELECT @v + 1')).digest).not.toBe(base.digest);
    expect(read(definition('description: a\nparams:\n  v: { type: integer, default: 2 }', 'SELECT @v')).digest).not.toBe(base.digest);
    expect(read(definition('description: a\nmax_rows: 5\nparams:\n  v: { type: integer, default: 1 }', 'SELECT @v')).digest).not.toBe(base.digest);
  });
});

describe('parameter types', () => {
  // [parameter header, value given, canonical value or the error it gives]
  const cases: [string, string, string | RegExp][] = [
    ['type: string', 'any text, even \' and "', 'any text, even \' and "'],
    ['type: regex', '^https://acme\\.', '^https://acme\\.'],
    ['type: integer', '+0042', '42'],
    ['type: integer', '-9223372036854775808', '-9223372036854775808'],
    ['type: integer', '9223372036854775808', /a base-10 integer within the 64-bit range/],
    ['type: integer', '4.0', /invalid value "4.0" for parameter 'v': a base-10 integer\./],
    ['type: integer', '1e3', /a base-10 integer/],
    ['type: integer\nmin: 1\nmax: 90', '91', /a base-10 integer from 1 to 90/],
    ['type: integer\nmin: 1\nmax: 90', '0', /from 1 to 90/],
    ['type: integer\nmin: 1\nmax: 90', '90', '90'],
    ['type: number', '1.50', '1.5'],
    ['type: number', '-.5e1', '-5'],
    ['type: number', 'NaN', /a decimal number/],
    ['type: number', 'Infinity', /a decimal number/],
    ['type: number', '0x10', /a decimal number/],
    ['type: number\nmin: 0.5', '0.25', /a decimal number at least 0.5/],
    ['type: boolean', '1', 'true'],
    ['type: boolean', 'false', 'false'],
    ['type: boolean', 'yes', /true, false, 1 or 0/],
    ['type: timestamp', '2026-03-10T14:00:00+02:00', '2026-03-10T12:00:00.000000Z'],
    ['type: timestamp', 'yesterday', /an ISO 8601 timestamp/],
    ['type: date', '2024-02-29', '2024-02-29'],
    ['type: date', '2026-02-29', /a date YYYY-MM-DD/],
    ['type: date', '2026-3-1', /a date YYYY-MM-DD/],
    ['type: date', '1969-12-31', /from 1970-01-01 to 2149-06-06/],
    ['type: string[]', ' a, b ,,c ', 'a,b,c'],
    ['type: string[]\nallowed: [a, b]', 'a,b', 'a,b'],
    ['type: string[]\nallowed: [a, b]', 'a,z', /comma-separated items, each one of a, b/],
    ['allowed: [x, y]', 'z', /invalid value "z" for parameter 'v': one of x, y\./],
    ['allowed: [x, y]\nother: default\ndefault: y', 'z', 'y'],
    ['allowed: [x, y]\nother: reject\ndefault: y', 'z', /one of x, y/],
    ['type: integer\nallowed: [1, 5, 15]', '05', '5'],
  ];

  it.each(cases)('takes a value of each type in canonical form, or refuses it naming the parameter and what it takes: %j %j', (param, value, expected) => {
    const run = () => normaliseParams(withParam(param), [['v', value]]).v;
    if (typeof expected === 'string') expect(run()).toBe(expected);
    else expect(run).toThrow(expected);
  });

  it('checks a regular expression with RE2 before anything runs, and remembers a pattern that compiles', async () => {
    const q = withParam('type: regex');
    const known = new Set<string>();
    const memo = { get: async (p: string) => known.has(p), set: async (p: string) => void known.add(p) };
    await expect(checkPatterns(q, normaliseParams(q, [['v', '(unclosed']]), memo)).rejects.toThrow(
      /invalid value "\(unclosed" for parameter 'v': not an RE2 regular expression \(missing closing \)/,
    );
    await checkPatterns(q, normaliseParams(q, [['v', '(a|b)+$']]), memo);
    expect([...known]).toEqual(['(a|b)+$']);
  });

  it('binds as typed ClickHouse parameters, Nullable only when optional without a default', () => {
    const types = (param: string) => clickhouseType(withParam(param).params[0] as SavedQuery['params'][number]);
    expect(types('type: integer')).toBe('Nullable(Int64)');
    expect(types('type: integer\ndefault: 10')).toBe('Int64');
    expect(types('type: integer\nrequired: true')).toBe('Int64');
    expect(types('type: number')).toBe('Nullable(Float64)');
    expect(types('type: boolean')).toBe('Nullable(Bool)');
    expect(types('type: timestamp')).toBe("Nullable(DateTime64(6, 'UTC'))");
    expect(types('type: date')).toBe('Nullable(Date)');
    // Text and lists are never NULL: absent is '' and [].
    expect(types('type: string')).toBe('String');
    expect(types('type: regex')).toBe('String');
    expect(types('type: string[]')).toBe('Array(String)');
    const list = withParam('type: string[]').params[0] as SavedQuery['params'][number];
    expect(bindValue(list, '')).toEqual([]);
    expect(bindValue(list, 'a,b')).toEqual(['a', 'b']);
    expect(bindValue(withParam('type: integer').params[0] as SavedQuery['params'][number], '')).toBeNull();
  });
});

describe('the catalog of saved queries', () => {
  function folder(files: Record<string, string>): string {
    const dir = join(tempDir(), 'q');
    mkdirSync(dir, { recursive: true });
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    return dir;
  }
  const good = (sql = 'SELECT 1') => definition('description: fine', sql);

  it('holds the built-ins and every *.sql directly in the user folders, in order', async () => {
    const a = folder({ 'one.sql': good(), 'notes.txt': 'not a query' });
    mkdirSync(join(a, 'nested'));
    writeFileSync(join(a, 'nested', 'deep.sql'), good());
    const b = folder({ 'two.sql': good() });
    const { queries, broken } = await new QueryCatalog({ builtin: builtinQueriesDir, user: [a, b] }).scan();
    expect(queries.map((q) => [q.name, q.builtin])).toEqual([
      ['functions.invocation-stats', true],
      ['logs.all', true],
      ['usage.api-counts', true],
      ['one', false],
      ['two', false],
    ]);
    expect(broken).toEqual([]);
  });

  it('breaks both files of a name defined twice, naming each other, and a user file that takes a built-in name', async () => {
    const a = folder({ 'dup.sql': good(), 'logs.all.sql': good() });
    const b = folder({ 'other.sql': definition('name: dup', 'SELECT 2') });
    const catalog = new QueryCatalog({ builtin: builtinQueriesDir, user: [a, b] });
    const { queries, broken } = await catalog.scan();
    expect(queries.map((q) => q.name)).toEqual(['functions.invocation-stats', 'logs.all', 'usage.api-counts']);
    expect(queries.find((q) => q.name === 'logs.all')?.builtin).toBe(true);
    const lines = broken.map(brokenText);
    expect(lines).toContainEqual(expect.stringMatching(/dup\.sql:1: name 'dup' is also defined by .*other\.sql\.$/));
    expect(lines).toContainEqual(expect.stringMatching(/other\.sql:2: name 'dup' is also defined by .*dup\.sql\.$/));
    expect(lines).toContainEqual(expect.stringMatching(/logs\.all\.sql:1: name 'logs\.all' is also defined by the built-in query/));
    await expect(catalog.find('dup')).rejects.toThrow(DefinitionError);
    expect((await catalog.find('logs.all')).builtin).toBe(true);
  });

  it('breaks both files of an id defined twice', async () => {
    const id = 'id: 1b4e28ba-2fa1-41d2-883f-0016d3cca427';
    const dir = folder({ 'a.sql': definition(id, 'SELECT 1'), 'b.sql': definition(id, 'SELECT 2') });
    const { broken } = await new QueryCatalog({ builtin: builtinQueriesDir, user: [dir] }).scan();
    expect(broken.map(brokenText)).toEqual([
      expect.stringMatching(/a\.sql:2: id '1b4e28ba-2fa1-41d2-883f-0016d3cca427' is also defined by .*b\.sql\./),
      expect.stringMatching(/b\.sql:2: id '1b4e28ba-.*' is also defined by .*a\.sql\./),
    ]);
  });

  it('finds a query by its name, one named in its header, or by id; a name another header takes is a clash of both files', async () => {
    const dir = folder({ 'mine.sql': good(), 'broken.sql': '/* parms: */ SELECT 1', 'x.sql': definition('name: renamed', 'SELECT 3'), 'good.one.sql': good(), 'dup.sql': definition('name: good.one', 'SELECT 2') });
    const catalog = new QueryCatalog({ builtin: builtinQueriesDir, user: [dir] });
    expect((await catalog.find('mine')).name).toBe('mine');
    expect((await catalog.find('renamed')).file).toBe(join(dir, 'x.sql'));
    expect((await catalog.find(derivedId('mine'))).name).toBe('mine');
    const clash = await catalog.find('good.one').catch((e: unknown) => e);
    expect(clash).toBeInstanceOf(DefinitionError);
    expect((clash as DefinitionError).files).toEqual([join(dir, 'dup.sql'), join(dir, 'good.one.sql')]);
    expect((clash as Error).message.split('\n')).toEqual([
      expect.stringMatching(/dup\.sql:2: name 'good\.one' is also defined by .*good\.one\.sql\.$/),
      expect.stringMatching(/good\.one\.sql:1: name 'good\.one' is also defined by .*dup\.sql\.$/),
    ]);
    expect(catalog.scanned()?.broken.map((b) => b.file).sort()).toEqual([join(dir, 'broken.sql'), join(dir, 'dup.sql'), join(dir, 'good.one.sql')]);
  });

  it('once the folders have settled, finds a query through the memo’s index: its own file read, the others only stat’ed', async () => {
    const dir = folder({ 'mine.sql': good(), 'other.sql': definition('name: another', 'SELECT 3'), 'good.one.sql': good(), 'dup.sql': definition('name: good.one', 'SELECT 2') });
    const stored = new Map<string, unknown>();
    const asked: string[] = [];
    const memo = { get: async (key: string) => (asked.push(key), stored.get(key)), set: async (key: string, value: unknown) => void stored.set(key, value) };
    // Files written a moment ago are not trusted to an index (a second write in the same tick would not show).
    await eventually('the folder to settle and its index to be made', async () => {
      await new QueryCatalog({ builtin: builtinQueriesDir, user: [dir] }, memo).find('mine');
      return [...stored.keys()].some((k) => k.startsWith('index:'));
    });
    asked.length = 0;
    const catalog = new QueryCatalog({ builtin: builtinQueriesDir, user: [dir] }, memo);
    expect((await catalog.find('mine')).file).toBe(join(dir, 'mine.sql'));
    expect(asked.filter((k) => k.startsWith('definition:'))).toHaveLength(1);
    expect(catalog.scanned()).toBeUndefined();
    // The clash is in the index too: both files are broken, and the error says so.
    await expect(catalog.find('good.one')).rejects.toThrow(/dup\.sql:2: name 'good\.one' is also defined by/);
    // An edit, even at the same size, changes the files' identity: the index is not used for it.
    writeFileSync(join(dir, 'mine.sql'), good().replace('SELECT', 'select'));
    expect((await new QueryCatalog({ builtin: builtinQueriesDir, user: [dir] }, memo).find('mine')).sql).toMatch(/^select/);
  });

  it('answers a broken query with its file and line (exit 2), an unknown one with a suggestion (exit 2)', async () => {
    const dir = folder({ 'bad.sql': definition('params:\n  v: { type: int }', 'SELECT @v') });
    const catalog = new QueryCatalog({ builtin: builtinQueriesDir, user: [dir] });
    const err = await catalog.find('bad').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DefinitionError);
    expect((err as DefinitionError).exitCode).toBe(2);
    expect((err as Error).message).toMatch(/bad\.sql:3: unknown type 'int' in parameter 'v'\. Did you mean integer\?/);
    await expect(catalog.find('bd')).rejects.toThrow(NotFoundError);
    await expect(catalog.find('logs.al')).rejects.toThrow(/Did you mean logs\.all\?/);
  });

  const ids = 'name: errs.daily\nid: 1b4e28ba-2fa1-41d2-883f-0016d3cca427';
  it.each([
    ['its header', 'name', 'errs.daily', `${ids}\ndescripton: errors a day\nparams:\n  p: {type: strng}`, 'SELECT @p', /typo\.sql:4: unknown key 'descripton' in the header\. Did you mean description\? \(and 1 more; see savedq check\)$/],
    ['its header', 'id', '1B4E28BA-2FA1-41D2-883F-0016D3CCA427', `${ids}\ndescripton: errors a day\nparams:\n  p: {type: strng}`, 'SELECT @p', /typo\.sql:4: unknown key 'descripton' in the header\./],
    ['its SQL', 'name', 'errs.daily', `${ids}\nparams:\n  project: {type: string}`, 'SELECT @projct', /typo\.sql:5: parameter 'project' is declared but the SQL never uses @project\. \(and 1 more; see savedq check\)$/],
    ['its SQL', 'id', '1b4e28ba-2fa1-41d2-883f-0016d3cca427', `${ids}\nparams:\n  project: {type: string}`, 'SELECT @projct', /typo\.sql:5: parameter 'project' is declared/],
  ])('answers a query broken in %s, asked for by the %s its header gives, with its file and line', async (_, __, asked, header, sql, message) => {
    const catalog = new QueryCatalog({ builtin: builtinQueriesDir, user: [folder({ 'typo.sql': definition(header, sql) })] });
    await expect(catalog.find(asked)).rejects.toThrow(message);
  });

  it('reports a queries folder that cannot be read, and goes on with the others', async () => {
    const missing = join(tempDir(), 'no-such-folder');
    const { queries, broken } = await new QueryCatalog({ builtin: builtinQueriesDir, user: [missing] }).scan();
    expect(queries).toHaveLength(3);
    expect(broken.map(brokenText)).toEqual([`${missing}: cannot read the queries folder: no such directory.`]);
  });

  it('refuses an unknown parameter of a user query, naming those it takes', async () => {
    const q = withParam('type: integer');
    expect(() => normaliseParams(q, [['w', '1']])).toThrow(InputError);
    expect(() => normaliseParams(q, [['w', '1']])).toThrow(/unknown parameter "w" for q\. Did you mean v\? Parameters: v\./);
  });
});
