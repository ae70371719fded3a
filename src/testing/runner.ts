import { closeSync, mkdtempSync, openSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { CallExecutor } from '../calls/execute.js';
import { prepareCall } from '../calls/prepare.js';
import { DefinitionError, InputError, QueryTimeoutError, SavedqError } from '../errors.js';
import { errnoText } from '../errno.js';
import { loadEvents } from '../load/index.js';
import type { QueryCatalog } from '../queries/catalog.js';
import type { DefinitionProblem } from '../queries/definition.js';
import { memoryMemo } from '../store/memo.js';
import type { SavedQuery } from '../queries/types.js';
import { toIsoMicros } from '../time.js';
import { callName, callRef } from '../queries/version-ref.js';
import { openWarehouse, type Warehouse } from '../warehouse/index.js';
import { makeTables } from '../warehouse/schema.js';
import { failures, type CallOutcome, type Failure } from './expect.js';
import type { Fixture, TestCase, TestFile } from './spec.js';

/** What became of one case. */
export interface CaseResult {
  readonly name: string;
  readonly line: number;
  readonly ms: number;
  readonly outcome: CallOutcome;
  /** Unmet expectations; none when the case passes. */
  failures: Failure[];
  /** The expectations `--update` rewrote with what the query returned. */
  updated: Failure[];
}

/** What became of a test file: its cases, or why they could not run (a setup statement or a fixture refused). */
export interface FileResult {
  readonly file: string;
  /** The query it tests, when known. */
  readonly query: string | undefined;
  readonly problems: readonly DefinitionProblem[];
  readonly cases: readonly CaseResult[];
}

/** The limits a test's calls run under, as `run`'s do: --timeout and --sandbox-max-memory-mb. */
export interface TestLimits {
  readonly timeoutSeconds: number;
  readonly sandboxMaxMemoryBytes: number;
}

/** The data a test's calls read: a warehouse of the test's own, whose calls are never cached. */
const TEST_SOURCE = { name: 'savedq-test', generation: '' };

/** Definitions the test engine remembers it took, by digest, for one run. */
const DEFINITIONS_KEPT = 10_000;

/**
 * Test files' warehouses: one embedded engine on a temporary data directory of its own, started once
 * for every test file of a run, and removed with everything in it when closed. Each test file's cases
 * run on a database that holds its setup and fixtures and nothing else, so two files' fixtures of one
 * table never meet. The user's data directory, cache and server are never touched.
 */
export class TestEngine {
  readonly #dir: string;
  readonly #warehouse: Warehouse;
  /** Runs a case's call as `run` runs one below the cache: the query's own timeout, the sandbox's memory limit, the definition checked first. */
  readonly #executor: CallExecutor;
  /** Databases made so far, by what they hold (warehouseKey). */
  readonly #databases = new Map<string, string>();
  #made = 0;

  private constructor(dir: string, warehouse: Warehouse, limits: TestLimits) {
    this.#dir = dir;
    this.#warehouse = warehouse;
    this.#executor = new CallExecutor({
      warehouse: () => Promise.resolve(warehouse),
      source: TEST_SOURCE.name,
      timeoutSeconds: limits.timeoutSeconds,
      sandboxMaxMemoryBytes: limits.sandboxMaxMemoryBytes,
      clock: Date.now,
      memo: memoryMemo(DEFINITIONS_KEPT),
    });
  }

  /** Starts the engine on a new temporary data directory (made 0700). */
  static async start(limits: TestLimits, signal?: AbortSignal): Promise<TestEngine> {
    const dir = mkdtempSync(join(tmpdir(), 'savedq-test-warehouse-'));
    try {
      const warehouse = await openWarehouse({ urls: [], loadBalance: 'in-order', dataDir: dir, lockWaitMs: 0, timeoutSeconds: limits.timeoutSeconds, signal, createTables: false, useShared: false });
      return new TestEngine(dir, warehouse, limits);
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  /**
   * Runs a test file's cases on a database of its own: setup, then fixtures, loaded once for all its
   * cases. Test files whose setup and fixtures are the same (the same statements, the same files
   * unchanged, the same events) share one: the cases only read (a saved query runs read-only), so what
   * one file's cases see is what its own database would hold. `onCase` hears each case as it ends.
   */
  async runFile(test: TestFile, query: SavedQuery, catalog: QueryCatalog, onCase: (result: CaseResult) => void, signal?: AbortSignal): Promise<FileResult> {
    const key = warehouseKey(test);
    let database = this.#databases.get(key);
    if (database === undefined) {
      const made = await this.#make(test);
      if ('problems' in made) return { file: test.file, query: callName(query), problems: made.problems, cases: [] };
      database = made.database;
      this.#databases.set(key, database);
    }
    await this.#warehouse.command(`USE ${database}`);
    const cases: CaseResult[] = [];
    for (const testCase of test.cases) {
      signal?.throwIfAborted();
      const result = await this.#runCase(query, catalog, testCase);
      cases.push(result);
      onCase(result);
    }
    return { file: test.file, query: callName(query), problems: [], cases };
  }

  /** A database for a test file: its log tables, its setup, then its fixtures; dropped again if any is refused. */
  async #make(test: TestFile): Promise<{ database: string } | { problems: DefinitionProblem[] }> {
    const warehouse = this.#warehouse;
    const database = `savedq_test_${++this.#made}`;
    await warehouse.command(`CREATE DATABASE ${database}`);
    const problems: DefinitionProblem[] = [];
    try {
      await warehouse.command(`USE ${database}`);
      await makeTables(warehouse);
      for (const statement of test.setup) {
        try {
          await warehouse.command(statement.sql);
        } catch (err) {
          problems.push({ file: test.file, line: statement.line, message: `the setup statement fails: ${engineMessage(err)}` });
          break;
        }
      }
      // Setup may have moved elsewhere (USE): the fixtures are this file's.
      await warehouse.command(`USE ${database}`);
      if (problems.length === 0) for (const fixture of test.fixtures) problems.push(...(await this.#load(test, fixture)));
    } finally {
      if (problems.length > 0) await warehouse.command(`DROP DATABASE ${database} SYNC`);
    }
    return problems.length > 0 ? { problems } : { database };
  }

  /** Loads a fixture through `savedq load`'s own rules: an event they refuse breaks the test file. */
  async #load(test: TestFile, fixture: Fixture): Promise<DefinitionProblem[]> {
    const refused: DefinitionProblem[] = [];
    const { table, source } = fixture;
    if ('file' in source) {
      let fd: number;
      try {
        fd = openSync(source.file, 'r');
      } catch (err) {
        return [{ file: test.file, line: fixture.line, message: `cannot read fixture ${source.file}: ${errnoText(err, 'file')}.` }];
      }
      try {
        await loadEvents(this.#warehouse, table, { kind: 'file', fd }, {
          onReject: (line, reason) => refused.push({ file: source.file, line, message: `the load refuses this event of the ${table} fixture: ${reason}.` }),
        });
      } finally {
        closeSync(fd);
      }
    } else {
      const lines = source.events.map((e) => `${e.json}\n`).join('');
      await loadEvents(this.#warehouse, table, [lines], {
        onReject: (line, reason) => refused.push({ file: test.file, line: source.events[line - 1]?.line ?? fixture.line, message: `the load refuses this event of the ${table} fixture: ${reason}.` }),
      });
    }
    return refused;
  }

  /** A case is a call, prepared and run through the door `run` takes (calls/), on the test file's database, never cached. */
  async #runCase(query: SavedQuery, catalog: QueryCatalog, testCase: TestCase): Promise<CaseResult> {
    const started = performance.now();
    let outcome: CallOutcome;
    try {
      const request = { nameOrId: callRef(query), params: testCase.params, at: toIsoMicros(testCase.at), sql: testCase.sql };
      const call = await prepareCall(catalog, TEST_SOURCE, request, undefined, (sql) => this.#executor.checkSql(sql));
      const { rows, truncated, statistics } = await this.#executor.execute(call);
      outcome = { rows, rowsRead: statistics.rows_read, truncated };
    } catch (err) {
      if (!(err instanceof SavedqError)) throw err;
      const kind = err instanceof InputError ? 'input' : err instanceof DefinitionError ? 'definition' : 'failure';
      // A time limit is said as a caller hears it: the test's warehouse (and its path) is gone by the report.
      outcome = { error: { kind, message: err instanceof QueryTimeoutError ? err.forCaller : err.message } };
    }
    const ms = performance.now() - started;
    return { name: testCase.name, line: testCase.line, ms, outcome, failures: failures(testCase, outcome), updated: [] };
  }

  /** Stops the engine and removes its data directory. */
  async close(): Promise<void> {
    try {
      await this.#warehouse.close();
    } finally {
      rmSync(this.#dir, { recursive: true, force: true });
    }
  }
}

/** What a test file's warehouse holds, as a key: its setup, and its fixtures (a file by its path, size and time). */
function warehouseKey(test: TestFile): string {
  const fixtures = test.fixtures.map(({ table, source }) => {
    if (!('file' in source)) return [table, source.events.map((e) => e.json)];
    const stat = statSync(source.file, { throwIfNoEntry: false });
    return [table, source.file, stat?.size, stat?.mtimeMs, stat?.ino];
  });
  return JSON.stringify([test.setup.map((s) => s.sql), fixtures]);
}

/** What the engine said, without savedq's own framing. */
function engineMessage(err: unknown): string {
  if (err instanceof SavedqError) {
    const engine = (err as { engine?: { message: string } }).engine;
    return engine?.message ?? err.message;
  }
  throw err;
}
