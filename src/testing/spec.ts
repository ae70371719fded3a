import { statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { Node, Pair } from 'yaml';
import { errnoText } from '../errno.js';
import { jsonText } from '../json.js';
import type { DefinitionProblem } from '../queries/definition.js';
import type { RawParams } from '../queries/params.js';
import {
  describeNode,
  isMap,
  isNull,
  isScalar,
  isSeq,
  flag,
  keyName,
  LineIndex,
  mapEntries,
  Problem,
  readKeys,
  scalarValue,
  text_,
  unknownKey,
  valueText,
  yamlKeysOf,
  type LineOf,
} from '../queries/yaml-reading.js';
import { parseIsoTimestamp, type Micros } from '../time.js';
import { TABLES, type TableName } from '../warehouse/schema.js';

/** How a test file is named: `<name>.test.yaml`, beside the `<name>.sql` it tests. */
export const TEST_FILE_SUFFIX = '.test.yaml';

const FILE_KEYS = ['at', 'fixtures', 'setup', 'cases'];
/** What a case can expect; a case expects one or more. */
const EXPECTATIONS = ['rows', 'rows_unordered', 'row_count', 'error', 'max_rows_read', 'truncated'];
/** What `run` exits 2 for, as a case expects it: a bad value, or a definition the engine refuses. */
export const ERROR_KINDS = ['input', 'definition'] as const;
export type ErrorKind = (typeof ERROR_KINDS)[number];

/** The expectations `--update` rewrites with what the query returned. */
export type Rewritable = 'rows' | 'rows_unordered' | 'row_count';

/** Where an expectation's value sits in the file's text, for `--update` to put another in its place. */
export interface ValueSpan {
  /** Offsets of the value's text: [start, end). */
  readonly start: number;
  readonly end: number;
  /** The column of the expectation's key (its block value is indented past it). */
  readonly keyColumn: number;
  /** Whether the value starts on the key's line (a flow list or a number), rather than below it. */
  readonly onKeyLine: boolean;
}

/** A row as `run -f json` prints it. */
export type ExpectedRow = Readonly<Record<string, unknown>>;

/** One case of a test file: a call of the query, and what it must give. */
export interface TestCase {
  readonly name: string;
  readonly line: number;
  /** As `-p` gives them: each value as its text, a list as comma-separated items. */
  readonly params: RawParams;
  /** A caller's own SELECT over the answer (a sandboxed query's). */
  readonly sql?: string;
  /** @now of the call: the case's own `at`, else the file's. */
  readonly at: Micros;
  readonly rows?: readonly ExpectedRow[];
  readonly rowsUnordered?: readonly ExpectedRow[];
  readonly rowCount?: number;
  readonly error?: ErrorKind;
  readonly maxRowsRead?: number;
  /** Whether the query had more rows than its max_rows (the rows stop there). */
  readonly truncated?: boolean;
  readonly spans: Partial<Record<Rewritable, ValueSpan>>;
}

/** One event of a fixture, as a line `savedq load` reads, and where it was written. */
export interface FixtureEvent {
  readonly json: string;
  readonly line: number;
}

/** A log table's events for a test file: an NDJSON file, or events written in the test file. */
export interface Fixture {
  readonly table: TableName;
  readonly line: number;
  readonly source: { readonly file: string } | { readonly events: readonly FixtureEvent[] };
}

/** A statement of a test file's setup, run before its fixtures are loaded. */
export interface SetupStatement {
  readonly sql: string;
  readonly line: number;
}

/** A test file, read and checked. */
export interface TestFile {
  readonly file: string;
  /** The definition it tests: `<name>.sql` beside it. */
  readonly queryFile: string;
  readonly setup: readonly SetupStatement[];
  readonly fixtures: readonly Fixture[];
  readonly cases: readonly TestCase[];
}

/** A test file as read: its tests, or what is wrong with it. */
export type ReadTestFile = { readonly test: TestFile; readonly problems?: undefined } | { readonly test?: undefined; readonly problems: readonly DefinitionProblem[] };

/** Whether a file name is a test file's. */
export function isTestFileName(name: string): boolean {
  return name.endsWith(TEST_FILE_SUFFIX) && name.length > TEST_FILE_SUFFIX.length;
}

/** The definition a test file tests: the `.sql` file of the same name beside it. */
export function queryFileOf(testFile: string): string {
  return join(dirname(testFile), `${basename(testFile).slice(0, -TEST_FILE_SUFFIX.length)}.sql`);
}

/** The test file of a definition file: `<name>.test.yaml` beside `<name>.sql`. */
export function testFileOf(queryFile: string): string {
  return join(dirname(queryFile), `${basename(queryFile, '.sql')}${TEST_FILE_SUFFIX}`);
}

/**
 * Reads a test file (docs/testing.md, README "Testing your saved queries"). Every problem is reported with
 * its line; a file with any problem yields no tests. Fixture files are checked to be there, not read.
 */
export function readTestFile(file: string, text: string): ReadTestFile {
  const lines = new LineIndex(text);
  const problems: DefinitionProblem[] = [];
  const problem = (line: number, message: string) => problems.push({ file, line, message });
  const read = yamlKeysOf(text, 'a test file', FILE_KEYS);
  if ('message' in read) return { problems: [{ file, ...read }] };
  const { root, at } = read;
  const attempt = <T>(fn: () => T): T | undefined => {
    try {
      return fn();
    } catch (err) {
      if (!(err instanceof Problem)) throw err;
      problem(err.line, err.message);
      return undefined;
    }
  };

  let fileAt: Micros | undefined;
  let fixtures: Fixture[] = [];
  let setup: SetupStatement[] = [];
  let caseNodes: { node: Node | null; line: number } | undefined;
  readKeys(mapEntries(root, 1, 'the test file', at), {
    at: (value, line) => void (fileAt = instant(value, line, 'at')),
    fixtures: (value, line) => void (fixtures = readFixtures(value, line, file, at, attempt)),
    setup: (value, line) => void (setup = readSetup(value, line, at)),
    cases: (value, line) => void (caseNodes = { node: value, line }),
  }, 'the test file', at, problem);
  if (fileAt === undefined && !problems.some((p) => /^at /.test(p.message))) {
    problem(1, 'no at: a test file gives the instant its cases run as of (at: 2026-11-20T12:00:00Z); a test never reads the clock.');
  }
  const cases: TestCase[] = [];
  if (!caseNodes) {
    problem(1, 'no cases: a test file has a list of cases, each a name, params and what the query must give.');
  } else if (!isSeq(caseNodes.node) || caseNodes.node.items.length === 0) {
    problem(caseNodes.line, `cases must be a non-empty list, not ${describeNode(caseNodes.node)}.`);
  } else {
    const names = new Map<string, number>();
    for (const item of caseNodes.node.items as Node[]) {
      const read = attempt(() => readCase(item, at(item), fileAt ?? 0n, text, lines, at));
      if (!read) continue;
      const earlier = names.get(read.name);
      if (earlier !== undefined) problem(read.line, `another case is named '${read.name}' (line ${earlier}): each case needs a name of its own.`);
      names.set(read.name, read.line);
      cases.push(read);
    }
  }
  if (problems.length > 0) return { problems: problems.sort((a, b) => a.line - b.line) };
  return { test: { file, queryFile: queryFileOf(file), setup, fixtures, cases } };
}

/** An ISO 8601 instant. */
function instant(node: Node | null, line: number, what: string): Micros {
  const value = scalarValue(node);
  const text = typeof value === 'string' ? value : undefined;
  const micros = text === undefined ? undefined : parseIsoTimestamp(text);
  if (micros === undefined) {
    throw new Problem(line, `${what} must be an ISO 8601 instant such as 2026-11-20T12:00:00Z, not ${text === undefined ? describeNode(node) : JSON.stringify(text)}.`);
  }
  return micros;
}

function readFixtures(
  node: Node | null,
  line: number,
  file: string,
  at: LineOf,
  attempt: <T>(fn: () => T) => T | undefined,
): Fixture[] {
  const fixtures: Fixture[] = [];
  for (const [pair, keyLine] of mapEntries(node, line, 'fixtures', at)) {
    attempt(() => {
      const table = keyName(pair, keyLine, 'table name');
      if (!(TABLES as readonly string[]).includes(table)) {
        throw new Problem(keyLine, `fixtures: '${table}' is not a log table: ${TABLES.join(' or ')} (make tables of your own under setup).`);
      }
      const value = pair.value;
      const valueLine = value ? at(value) : keyLine;
      if (isScalar(value) && typeof value.value === 'string') {
        const path = resolve(dirname(file), value.value);
        fixtureFile(path, valueLine, value.value);
        fixtures.push({ table: table as TableName, line: valueLine, source: { file: path } });
      } else if (isSeq(value)) {
        const events = (value.items as Node[]).map((item) => {
          if (!isMap(item)) throw new Problem(at(item), `an event of the ${table} fixture must be YAML keys (its fields), not ${describeNode(item)}.`);
          return { json: jsonText(plain(item)), line: at(item) };
        });
        fixtures.push({ table: table as TableName, line: valueLine, source: { events } });
      } else {
        throw new Problem(valueLine, `the ${table} fixture must be an NDJSON file's path or a list of events, not ${describeNode(value)}.`);
      }
    });
  }
  return fixtures;
}

/** A fixture file must be there to be loaded. */
function fixtureFile(path: string, line: number, given: string): void {
  try {
    if (!statSync(path).isFile()) throw new Problem(line, `fixture ${given} is not a file.`);
  } catch (err) {
    if (err instanceof Problem) throw err;
    throw new Problem(line, `cannot read fixture ${given}: ${errnoText(err, 'file')}.`);
  }
}

function readSetup(node: Node | null, line: number, at: LineOf): SetupStatement[] {
  if (isNull(node)) return [];
  if (!isSeq(node)) throw new Problem(line, `setup must be a list of statements, not ${describeNode(node)}.`);
  return (node.items as Node[]).map((item) => ({ sql: text_(item, at(item), 'a setup statement'), line: at(item) }));
}

function readCase(node: Node, line: number, fileAt: Micros, text: string, lines: LineIndex, at: LineOf): TestCase {
  if (!isMap(node)) throw new Problem(line, `a case must be YAML keys (name, params, and what it expects), not ${describeNode(node)}.`);
  let name: string | undefined;
  let params: [string, string][] = [];
  let caseAt: Micros | undefined;
  let sql: string | undefined;
  const expected: { -readonly [K in keyof TestCase]?: TestCase[K] } = {};
  const spans: Partial<Record<Rewritable, ValueSpan>> = {};
  // A case's first problem is its refusal (the others of the file are read on).
  readKeys(mapEntries(node, line, 'a case', at), {
    name: (value, valueLine) => {
      name = text_(value, valueLine, 'name of a case');
      if (name.trim() === '') throw new Problem(valueLine, 'name of a case must not be empty.');
    },
    params: (value, valueLine) => {
      params = mapEntries(value, valueLine, 'params', at).map(([p, pLine]) => {
        const param = keyName(p, pLine, 'parameter name');
        return [param, isNull(p.value) ? '' : valueText(p.value, p.value ? at(p.value) : pLine, `parameter '${param}'`, true)];
      });
    },
    at: (value, valueLine) => void (caseAt = instant(value, valueLine, 'at of a case')),
    sql: (value, valueLine) => void (sql = text_(value, valueLine, 'sql of a case')),
    rows: (value, valueLine, pair) => {
      expected.rows = expectedRows(value, valueLine, 'rows', at);
      spans.rows = span(pair, text, lines);
    },
    rows_unordered: (value, valueLine, pair) => {
      expected.rowsUnordered = expectedRows(value, valueLine, 'rows_unordered', at);
      spans.rows_unordered = span(pair, text, lines);
    },
    row_count: (value, valueLine, pair) => {
      expected.rowCount = count(value, valueLine, 'row_count');
      spans.row_count = span(pair, text, lines);
    },
    max_rows_read: (value, valueLine) => void (expected.maxRowsRead = count(value, valueLine, 'max_rows_read')),
    truncated: (value, valueLine) => void (expected.truncated = flag(value, valueLine, 'truncated')),
    error: (value, valueLine) => {
      const kind = text_(value, valueLine, 'error');
      if (!(ERROR_KINDS as readonly string[]).includes(kind)) throw unknownKey(kind, ERROR_KINDS, 'error', valueLine, 'error kind');
      expected.error = kind as ErrorKind;
    },
  }, typeof node.get('name') === 'string' ? `case '${String(node.get('name'))}'` : 'a case', at, (problemLine, message) => {
    throw new Problem(problemLine, message);
  });
  if (name === undefined) throw new Problem(line, 'a case needs a name.');
  const expects = EXPECTATIONS.filter((k) => node.has(k));
  if (expects.length === 0) throw new Problem(line, `case '${name}' expects nothing: give one or more of ${EXPECTATIONS.join(', ')}.`);
  if (expected.error !== undefined && expects.length > 1) {
    throw new Problem(line, `case '${name}' expects an error and ${expects.filter((k) => k !== 'error').join(', ')}: a call that fails returns no rows.`);
  }
  return { name, line, params, ...(sql === undefined ? {} : { sql }), at: caseAt ?? fileAt, ...expected, spans };
}

/** A list of rows, each YAML keys. */
function expectedRows(node: Node | null, line: number, what: string, at: LineOf): ExpectedRow[] {
  if (!isSeq(node)) throw new Problem(line, `${what} must be a list of rows (an empty one is []), not ${describeNode(node)}.`);
  return (node.items as Node[]).map((item) => {
    if (!isMap(item)) throw new Problem(at(item), `a row of ${what} must be YAML keys, field: value, not ${describeNode(item)}.`);
    return plain(item) as ExpectedRow;
  });
}

function count(node: Node | null, line: number, what: string): number {
  const value = scalarValue(node);
  if (typeof value !== 'bigint' || value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new Problem(line, `${what} must be a whole number, 0 or more, not ${describeNode(node) === 'a number' ? String(value) : describeNode(node)}.`);
  }
  return Number(value);
}

/** Where a rewritable expectation's value is. */
function span(pair: Pair<Node, Node | null>, text: string, lines: LineIndex): ValueSpan {
  const keyStart = pair.key?.range?.[0] ?? 0;
  const value = pair.value;
  const [start, valueEnd] = value?.range ?? [keyStart, keyStart];
  // A block list's range runs on over the comments after its last item: they stay.
  const last = isSeq(value) && !value.flow ? (value.items.at(-1) as Node | undefined) : undefined;
  const end = start + text.slice(start, last?.range?.[1] ?? valueEnd).trimEnd().length;
  const lineStart = (offset: number) => text.lastIndexOf('\n', offset - 1) + 1;
  return { start, end, keyColumn: keyStart - lineStart(keyStart), onKeyLine: lines.lineAt(start) === lines.lineAt(keyStart) };
}

/**
 * A YAML node as JSON would hold it: whole numbers as numbers, those a double cannot hold as bigints of
 * every digit (as answers hold them: json.ts). Read from the nodes, which keep what YAML read: a node's
 * own toJSON makes every integer a double (an alias aside, which only it follows).
 */
function plain(node: unknown): unknown {
  if (isScalar(node)) return typeof node.value === 'bigint' && Number.isSafeInteger(Number(node.value)) ? Number(node.value) : node.value;
  if (isSeq(node)) return node.items.map(plain);
  if (isMap(node)) return Object.fromEntries(node.items.map((pair) => [String(isScalar(pair.key) ? pair.key.value : pair.key), plain(pair.value)]));
  return (node as { toJSON?: () => unknown } | null)?.toJSON?.() ?? null;
}
