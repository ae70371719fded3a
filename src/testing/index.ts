import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { InputError, NotFoundError } from '../errors.js';
import { errnoText } from '../errno.js';
import { filesIn } from '../fs.js';
import { brokenText, displayPath, QueryCatalog } from '../queries/catalog.js';
import type { DefinitionProblem } from '../queries/definition.js';
import type { SavedQuery } from '../queries/types.js';
import { callName } from '../queries/version-ref.js';
import { TestEngine, type CaseResult, type FileResult, type TestLimits } from './runner.js';
import { isTestFileName, readTestFile, testFileOf, type Rewritable, type TestFile } from './spec.js';
import { rewrite, type Rewrite } from './update.js';

export type { CaseResult, FileResult } from './runner.js';
export type { Failure } from './expect.js';

/** Where saved queries and their tests are: the built-ins, the examples shipped beside them, the user's folders. */
export interface TestFolders {
  readonly builtin: string;
  readonly examples: string;
  readonly user: readonly string[];
}

/** How `savedq test` runs. */
export interface TestOptions {
  /** Names or ids of the queries whose tests run; none = every test file of the user's folders. */
  readonly names: readonly string[];
  /** Also the tests shipped with the built-in queries and the examples. */
  readonly builtin: boolean;
  /** Rewrite the rows, rows_unordered and row_count of failing cases with what the query returned. */
  readonly update: boolean;
  /** The limits its calls run under, as `run`'s: --timeout and --sandbox-max-memory-mb. */
  readonly limits: TestLimits;
  readonly signal?: AbortSignal | undefined;
  /** Hears each case as it ends, with its file and query. */
  readonly onCase?: (result: CaseResult, file: FileResult['file'], query: string) => void;
  /** Hears each test file as it ends (after its cases), broken ones included. */
  readonly onFile?: (result: FileResult) => void;
}

/** A set of folders whose test files test the queries of one catalog. */
interface TestSet {
  readonly catalog: QueryCatalog;
  readonly dirs: readonly string[];
}

/** A test file found, and the catalog its query is in. */
interface FoundTest {
  readonly file: string;
  readonly set: TestSet;
}

/**
 * `savedq test`: finds the test files asked for, reads them, and runs each on a warehouse of its own in
 * one embedded engine started for the run (TestEngine), started only when a file can run. Broken files
 * are reported with their problems and the others still run. The catalogs here keep no memo: nothing of
 * the user's cache is read or written.
 */
export async function runTests(folders: TestFolders, options: TestOptions): Promise<FileResult[]> {
  const user: TestSet = { catalog: new QueryCatalog({ builtin: folders.builtin, user: folders.user }), dirs: folders.user };
  const builtin: TestSet = { catalog: new QueryCatalog({ builtin: folders.builtin, user: [] }), dirs: [folders.builtin] };
  const examples: TestSet = { catalog: new QueryCatalog({ builtin: folders.builtin, user: [folders.examples] }), dirs: [folders.examples] };
  const found = options.names.length > 0 ? await namedTests(options.names, [user, builtin, examples]) : testFiles(options.builtin ? [user, builtin, examples] : [user]);
  if (found.length === 0) {
    const where = folders.user.length > 0 ? folders.user.map(displayPath).join(', ') : 'your queries folders (none: give --queries)';
    throw new InputError(`no test files in ${where}: a query's tests are <name>.test.yaml beside its <name>.sql (--builtin runs the shipped ones).`);
  }

  const results: FileResult[] = [];
  let engine: Promise<TestEngine> | undefined;
  try {
    for (const { file, set } of found) {
      options.signal?.throwIfAborted();
      const prepared = await prepareFile(file, set.catalog);
      if ('problems' in prepared) {
        const broken = { file, query: prepared.query, problems: prepared.problems, cases: [] };
        results.push(broken);
        options.onFile?.(broken);
        continue;
      }
      const { test, query, text } = prepared;
      engine ??= TestEngine.start(options.limits, options.signal);
      const rewrites: Rewrite[] = [];
      const onCase = (result: CaseResult) => {
        if (options.update) rewrites.push(...takeRewrites(test, result));
        options.onCase?.(result, file, callName(query));
      };
      const result = await (await engine).runFile(test, query, set.catalog, onCase, options.signal);
      if (rewrites.length > 0) writeFileSync(file, rewrite(text, rewrites));
      results.push(result);
      options.onFile?.(result);
    }
  } finally {
    if (engine) await (await engine.catch(() => undefined))?.close();
  }
  return results;
}

/** A test file as `check` reads it: its structure and its query, nothing run. */
export interface CheckedTestFile {
  readonly file: string;
  readonly query: SavedQuery | undefined;
  readonly problems: readonly DefinitionProblem[];
}

/** Reads every test file of the catalog's user folders, and finds each one's query, without running anything (`check`). */
export async function checkTestFiles(catalog: QueryCatalog): Promise<CheckedTestFile[]> {
  const checked: CheckedTestFile[] = [];
  for (const { file } of testFiles([{ catalog, dirs: catalog.folders.user }])) {
    const prepared = await prepareFile(file, catalog);
    checked.push('problems' in prepared ? { file, query: undefined, problems: prepared.problems } : { file, query: prepared.query, problems: [] });
  }
  return checked;
}

/** Every test file directly in the sets' folders, by name, each once. */
function testFiles(sets: readonly TestSet[]): FoundTest[] {
  const found: FoundTest[] = [];
  const seen = new Set<string>();
  for (const set of sets) {
    for (const { file } of filesIn(set.dirs, isTestFileName)) {
      const real = realPath(file);
      if (seen.has(real)) continue;
      seen.add(real);
      found.push({ file, set });
    }
  }
  return found;
}

/** The test files of the named queries, looked for in the user's folders, then among the built-ins and the examples. */
async function namedTests(names: readonly string[], sets: readonly TestSet[]): Promise<FoundTest[]> {
  const found: FoundTest[] = [];
  for (const name of names) {
    let query: SavedQuery | undefined;
    let set: TestSet | undefined;
    let unknown: unknown;
    for (const candidate of sets) {
      try {
        query = await candidate.catalog.find(name);
        set = candidate;
        break;
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
        unknown ??= err;
      }
    }
    if (!query || !set) throw unknown;
    const file = testFileOf(query.file);
    if (!existsSync(file)) throw new InputError(`${query.name} has no tests: write them in ${displayPath(file)}.`);
    if (!found.some((f) => f.file === file)) found.push({ file, set });
  }
  return found;
}

/** A test file read, with the query it tests; or why it cannot run. */
async function prepareFile(
  file: string,
  catalog: QueryCatalog,
): Promise<{ test: TestFile; query: SavedQuery; text: string } | { problems: readonly DefinitionProblem[]; query?: undefined }> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return { problems: [{ file, line: 0, message: `cannot read the test file: ${errnoText(err, 'file')}.` }] };
  }
  const read = readTestFile(file, text);
  if (!read.test) return { problems: read.problems };
  const found = await queryOf(read.test, catalog);
  if ('problem' in found) return { problems: [found.problem] };
  return { test: read.test, query: found.query, text };
}

/** The saved query a test file tests: the one its `.sql` neighbour defines. */
export async function queryOf(test: TestFile, catalog: QueryCatalog): Promise<{ query: SavedQuery } | { problem: DefinitionProblem }> {
  const scan = await catalog.scan();
  const query = [...scan.queries, ...scan.kept].find((q) => q.file === test.queryFile);
  if (query) return { query };
  const broken = scan.broken.find((b) => b.file === test.queryFile);
  const message = broken
    ? `the query it tests is broken: ${brokenText(broken)}`
    : `no ${displayPath(test.queryFile)} beside it: <name>.test.yaml tests the saved query of <name>.sql in its folder.`;
  return { problem: { file: test.file, line: 1, message } };
}

/** The expectations of a failing case that --update rewrites with what the query returned; they no longer count as failures. */
function takeRewrites(test: TestFile, result: CaseResult): Rewrite[] {
  const rows = result.outcome.rows;
  const testCase = test.cases.find((c) => c.name === result.name);
  if (!rows || !testCase) return [];
  const rewrites: Rewrite[] = [];
  result.failures = result.failures.filter((failure) => {
    const span = isRewritable(failure.expectation) ? testCase.spans[failure.expectation] : undefined;
    if (!span) return true;
    rewrites.push({ span, value: failure.expectation === 'row_count' ? rows.length : rows });
    result.updated.push(failure);
    return false;
  });
  return rewrites;
}

function isRewritable(expectation: string): expectation is Rewritable {
  return expectation === 'rows' || expectation === 'rows_unordered' || expectation === 'row_count';
}

function realPath(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}
