import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtinQueriesDir, examplesDir } from '../src/package.js';
import { QueryCatalog } from '../src/queries/catalog.js';
import { readDefinition } from '../src/queries/definition.js';
import { columnShape, keepsType, shapeProblems } from '../src/queries/shape.js';
import { withFieldsWritten } from '../src/queries/write-fields.js';
import { testLibrary } from './helpers.js';

// Fields as a contract (docs/queries.md): the engine's types as savedq's field types, one table; a
// query's declared fields held against the columns the engine describes; check --write-fields.

describe("the engine's types as field types", () => {
  it('maps each family, Nullable(T) as T and null allowed, LowCardinality(T) as T', () => {
    const cases: [string, string | undefined, boolean][] = [
      ['UInt64', 'integer', false],
      ['Int8', 'integer', false],
      ['Int256', 'integer', false],
      ['Float64', 'number', false],
      ['Decimal(18, 2)', 'number', false],
      ['Bool', 'boolean', false],
      ["DateTime64(6, 'UTC')", 'timestamp', false],
      ['DateTime', 'timestamp', false],
      ['Date32', 'date', false],
      ['String', 'string', false],
      ['FixedString(4)', 'string', false],
      ['UUID', 'string', false],
      ["Enum8('a' = 1)", 'string', false],
      ['IPv6', 'string', false],
      ['Map(String, UInt8)', 'object', false],
      ['Tuple(UInt8, String)', 'object', false],
      ['JSON', 'object', false],
      ['Array(UInt8)', 'array', false],
      ['Nullable(UInt8)', 'integer', true],
      ['LowCardinality(String)', 'string', false],
      ['LowCardinality(Nullable(String))', 'string', true],
      ['Nullable(Nothing)', undefined, true],
      ['Dynamic', undefined, false],
    ];
    for (const [engine, type, nullable] of cases) expect([engine, columnShape(engine)]).toEqual([engine, { type, nullable }]);
  });

  it('keeps a declared number for an integer and an object or array for JSON text; nothing else crosses', () => {
    expect(keepsType('number', 'UInt64')).toBe(true);
    expect(keepsType('integer', 'Float64')).toBe(false);
    expect(keepsType('object', 'String')).toBe(true);
    expect(keepsType('array', 'LowCardinality(String)')).toBe(true);
    expect(keepsType('integer', 'String')).toBe(false);
    expect(keepsType('string', "DateTime64(6, 'UTC')")).toBe(false);
    expect(keepsType('timestamp', 'String')).toBe(false);
  });
});

const FILE = `/*
description: counts
params:
  project: { type: string, required: true }
fields:
  n: { type: integer, description: How many. }
  last: { type: timestamp }
  name: { type: integer }
*/
SELECT count() AS cnt, max(timestamp) AS last, toString(count()) AS name, any(project) AS extra
FROM edge_logs WHERE project = @project
`;

describe("a query's fields against its answer", () => {
  const read = readDefinition('/q/n5.sql', FILE, 'n5', false);
  const query = read.query;
  if (!query) throw new Error(JSON.stringify(read.problems));
  const columns = [
    { name: 'cnt', type: 'UInt64' },
    { name: 'last', type: "DateTime64(6, 'UTC')" },
    { name: 'name', type: 'String' },
    { name: 'extra', type: 'String' },
  ];

  it('names each field the answer lacks, each retyped, each column undeclared, at their lines', () => {
    expect(shapeProblems(query, columns).map((p) => `${p.line}: ${p.message}`)).toEqual([
      '5: the answer has a column cnt (UInt64) that fields: does not declare.',
      '5: the answer has a column extra (String) that fields: does not declare.',
      '6: field n is declared, but the answer has no column n (its columns: cnt, last, name, extra).',
      '8: field name: declared integer, but the engine answers String (string).',
    ]);
  });

  it('checks nothing of a query that declares no fields', () => {
    const bare = readDefinition('/q/b.sql', 'SELECT 1 AS one\n', 'b', false).query;
    expect(bare && shapeProblems(bare, [{ name: 'one', type: 'UInt8' }])).toEqual([]);
  });

  it('writes the fields of the answer, in its order, keeping descriptions and the rest of the file', () => {
    const written = withFieldsWritten(FILE, [{ name: 'n', type: 'UInt64' }, ...columns.slice(1)], query.fields);
    expect(written).toBe(FILE.replace('  name: { type: integer }\n', '  name: { type: string }\n  extra: { type: string }\n'));
    const again = readDefinition('/q/n5.sql', written ?? '', 'n5', false).query;
    expect(again && withFieldsWritten(written ?? '', [{ name: 'n', type: 'UInt64' }, ...columns.slice(1)], again.fields)).toBeUndefined();
    // No header at all: one is made.
    expect(withFieldsWritten('SELECT 1 AS one\n', [{ name: 'one', type: 'UInt8' }], [])).toBe('/*\nfields:\n  one: { type: integer }\n*/\nSELECT 1 AS one\n');
  });
});

describe('the built-ins and the examples keep their own contract', () => {
  const lib = testLibrary();
  const files = [...readdirSync(builtinQueriesDir).map((f) => join(builtinQueriesDir, f)), ...readdirSync(examplesDir).map((f) => join(examplesDir, f))].filter((f) => f.endsWith('.sql'));
  const catalog = new QueryCatalog({ builtin: builtinQueriesDir, user: [examplesDir] });

  it.each(files)("%s: --write-fields of the engine's answer reproduces its declared fields", async (file) => {
    const query = (await catalog.scan()).queries.find((q) => q.file === file);
    expect(query, file).toBeDefined();
    if (!query) return;
    expect(query.fields.length).toBeGreaterThan(0);
    const { columns = [] } = await lib.executor.explain(query);
    expect(shapeProblems(query, columns)).toEqual([]);
    const text = readFileSync(file, 'utf8');
    expect(withFieldsWritten(text, columns, query.fields)).toBeUndefined();
    // Written afresh from nothing, the same names and types, but for JSON text (logs.all's metadata, a
    // String the query declares an object): the engine cannot tell it from text, so a string.
    const bare = text.replace(/^fields:\n(?: {2}.*\n)+/m, '');
    expect(bare).not.toBe(text);
    const rewritten = readDefinition(file, withFieldsWritten(bare, columns, []) ?? '', query.name, query.builtin).query;
    const jsonText = (name: string) => columns.find((c) => c.name === name)?.type === 'String';
    expect(rewritten?.fields.map((f) => [f.name, f.type])).toEqual(query.fields.map((f) => [f.name, f.type === 'object' && jsonText(f.name) ? 'string' : f.type]));
  });
});
