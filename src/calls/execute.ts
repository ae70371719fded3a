import { BoundedMap } from '../bounded.js';
import { DefinitionError, InputError } from '../errors.js';
import { nodeCrypto } from '../lazy.js';
import { memoKeys } from '../store/memo.js';
import type { LocalMemo } from '../store/types.js';
import type { CallTags, Explained } from '../queries/run.js';
import type { EngineColumn, ShapeOf } from '../queries/shape.js';
import type { SavedQuery } from '../queries/types.js';
import { microsFromDate } from '../time.js';
import type { Warehouse } from '../warehouse/index.js';
import type { QueryStatistics } from '../warehouse/types.js';
import type { Export, ExportOptions } from './export.js';
import type { PreparedCall } from './prepare.js';
import { fieldsOf, type Clock, type RunResult } from './runner.js';
import { callTime } from './call.js';

/** Texts of callers' SQL whose check is remembered. */
const SQL_CHECKS_KEPT = 1_000;
/** Answers' shapes kept in memory, at most: a folder of more definitions than this asks the memo again. */
const SHAPES_KEPT = 10_000;

/** What running calls on the warehouse takes: the warehouse (opened when first needed), and what the library decided of it. */
export interface ExecutorParts {
  readonly warehouse: () => Promise<Warehouse>;
  /** The data source's name (Config.source): what the engine took is remembered for it. */
  readonly source: string;
  readonly timeoutSeconds: number;
  /** The memory a caller's SQL over a sandboxed query's answer may take, in bytes. */
  readonly sandboxMaxMemoryBytes: number;
  readonly clock: Clock;
  /** Remembers the definitions the engine took, by digest. */
  readonly memo: LocalMemo;
}

/**
 * Runs prepared calls on the warehouse, below the cache: a definition first checked by the embedded
 * engine (once a digest), then the call, with one deadline (call.ts) through everything it does. Its
 * statements wait for the warehouse in the one queue (warehouse/queue.ts), in their caller's turn.
 */
export class CallExecutor {
  constructor(private readonly parts: ExecutorParts) {}

  readonly #runListeners = new Set<(query: SavedQuery, statistics: QueryStatistics) => void>();

  /** Tells `listener` of every run (serve's metrics of rows and bytes read: once a run, not once a cache hit); returns how to stop. */
  onRun(listener: (query: SavedQuery, statistics: QueryStatistics) => void): () => void {
    this.#runListeners.add(listener);
    return () => this.#runListeners.delete(listener);
  }

  /** Checked SQL by its text (refusals too): a text seen before costs no statement (at most SQL_CHECKS_KEPT). */
  readonly #checked = new BoundedMap<string, Promise<string>>(SQL_CHECKS_KEPT);
  /** The columns the engine described of each definition's answer, by its digest (shapeOf). */
  readonly #shapes = new BoundedMap<string, EngineColumn[]>(SHAPES_KEPT);

  /**
   * A caller's SQL over a sandboxed query's answer, checked on the engine's parse (sandbox/check.ts):
   * the engine's spelling of it, or its refusal (SandboxRefusedError, BadSqlError).
   */
  checkSql(sql: string): Promise<string> {
    return this.#check(`sql:${sql}`, async (check, warehouse) => check.checkSandboxSql(warehouse, sql));
  }

  /**
   * An alert's `when`, an expression over one row of a query's answer, checked on the engine's parse
   * (sandbox/check.ts): the SELECT over `result` it becomes, as the engine spells it, or its refusal.
   */
  checkCondition(when: string): Promise<string> {
    return this.#check(`when:${when}`, async (check, warehouse) => check.checkSandboxCondition(warehouse, when));
  }

  #check(key: string, check: (module: typeof import('../sandbox/check.js'), warehouse: Warehouse) => Promise<string>): Promise<string> {
    let checked = this.#checked.get(key);
    if (!checked) {
      checked = (async () => check(await import('../sandbox/check.js'), await this.parts.warehouse()))();
      // What the engine could not be asked (busy, unreachable) is asked again next time.
      checked.catch((err: unknown) => {
        if (!(err instanceof InputError)) this.#checked.delete(key);
      });
      this.#checked.set(key, checked);
    }
    return checked;
  }

  /** Runs a call for its caller (whose statements take their turns at the warehouse); a call whose callers have all gone before its turn is not run. */
  inTurn(call: PreparedCall, gone: AbortSignal, tags: CallTags): Promise<RunResult> {
    return this.execute(call, gone, tags);
  }

  /**
   * Runs a prepared call on the warehouse, bypassing the cache. Its time counts from when the
   * warehouse is at hand, never while the data directory is awaited, which is bounded on its own (a
   * busy directory is a BusyError): its wait for a slot, its statements, reading its answer.
   */
  async execute(call: PreparedCall, signal?: AbortSignal, tags?: CallTags): Promise<RunResult> {
    // The runner (and the warehouse client's types) is only needed when a query really runs: not on a hit.
    const { executeQuery } = await import('../queries/run.js');
    const warehouse = await this.parts.warehouse();
    const refused = await this.refusal(call.query, warehouse);
    if (refused) throw refused;
    const startedAt = this.parts.clock();
    const time = callTime(call, this.parts.timeoutSeconds, signal);
    try {
      const { rows, truncated, statistics } = await executeQuery(warehouse, call.query, call.params, {
        now: call.at ?? microsFromDate(startedAt),
        timeoutSeconds: time.seconds,
        signal: time.signal,
        deadline: time.deadline,
        sql: call.sql,
        sandboxMaxMemoryBytes: this.parts.sandboxMaxMemoryBytes,
        // A call that came with no request id (a command's run) is given one of its own.
        tags: { ...tags, requestId: tags?.requestId ?? nodeCrypto().randomUUID() },
      });
      for (const listener of this.#runListeners) listener(call.query, statistics);
      return { query: call.query, params: call.params, rows, fields: fieldsOf(call), truncated, cache: 'off', computedAt: startedAt, statistics };
    } catch (err) {
      throw time.passed(err, warehouse.location);
    } finally {
      time.end();
    }
  }

  /** Streams a call's whole answer in a format, past its row cap and never cached (`savedq export`: calls/export.ts). */
  async export(call: PreparedCall, options: ExportOptions): Promise<Export> {
    const { startExport } = await import('./export.js');
    const warehouse = await this.parts.warehouse();
    const refused = await this.refusal(call.query, warehouse);
    if (refused) throw refused;
    return startExport(warehouse, { ...this.parts }, call, options);
  }

  /**
   * Has the engine parse and plan a saved query with its parameters bound, and describe its answer,
   * without running it (`check`, `lock`): its objection, or its answer's columns and each way they
   * break the query's fields, at lines of the query's file (none when the engine takes it as declared).
   */
  async explain(query: SavedQuery): Promise<{ problems: { line: number; message: string }[]; columns?: EngineColumn[] }> {
    const explained = await this.#explained(query, await this.parts.warehouse(), false);
    if (explained.objection) return { problems: [explained.objection] };
    const { shapeProblems } = await import('../queries/shape.js');
    return { problems: shapeProblems(query, explained.columns).map(({ line, message }) => ({ line, message })), columns: explained.columns };
  }

  /**
   * What the engine says of a saved query's statement, asked without running it; an answer it took is
   * remembered with its columns by the definition's digest (the SQL and parameters decide the columns,
   * not the fields declared), so `remembered` asks the engine once a definition.
   */
  async #explained(query: SavedQuery, warehouse: Warehouse, remembered: boolean): Promise<Explained> {
    const taken = memoKeys.engineTook(this.parts.source, query.digest);
    if (remembered) {
      const columns = await this.parts.memo.get(taken);
      if (Array.isArray(columns)) {
        this.#shapes.set(query.digest, columns as EngineColumn[]);
        return { columns: columns as EngineColumn[] };
      }
    }
    const { explainQuery } = await import('../queries/run.js');
    const explained = await explainQuery(warehouse, query, microsFromDate(this.parts.clock()));
    if (explained.columns) {
      await this.parts.memo.set(taken, explained.columns);
      this.#shapes.set(query.digest, explained.columns);
    }
    return explained;
  }

  /** The columns of a query's answer, once this process has had the engine describe them (serve: at its start). */
  readonly shapeOf: ShapeOf = (query) => this.#shapes.get(query.digest);

  /**
   * Has the engine parse and plan a call with SQL over its answer (an alert's), its parameters bound,
   * without running it: what the engine says of the SQL (a column the answer has not), or undefined.
   * A plan the engine took is remembered by the call's key (its definition's digest, parameters and SQL
   * in it), so every `alerts check` can ask it of every alert and reach the engine once an alert.
   */
  async explainOver(call: PreparedCall): Promise<string | undefined> {
    if (call.sql === undefined) return undefined;
    const taken = memoKeys.engineTookOver(this.parts.source, call.key);
    if (await this.parts.memo.get(taken)) return undefined;
    const { explainOver } = await import('../queries/run.js');
    const said = await explainOver(await this.parts.warehouse(), call.query, call.params, call.sql, call.at ?? microsFromDate(this.parts.clock()));
    if (said === undefined) await this.parts.memo.set(taken, true);
    return said;
  }

  /**
   * The embedded engine's objection to a saved query, asked before the query is first trusted to run
   * (parsed and planned with its parameters bound, its answer described, not run): a definition error
   * naming the file and the line, or undefined; an answer that breaks the query's declared fields is
   * one too (docs/queries.md, "Fields are a contract"). The engine is as new as savedq, so what it
   * refuses is the definition's mistake (a server may be older: there a refusal is the run's). What the
   * engine took is remembered by the digest, so this costs two statements a definition, once.
   */
  async refusal(query: SavedQuery, warehouse: Warehouse): Promise<DefinitionError | undefined> {
    if (!warehouse.embedded) return undefined;
    const explained = await this.#explained(query, warehouse, true);
    const { refusedDefinition } = await import('../queries/run.js');
    if (explained.objection) return refusedDefinition(query, explained.objection);
    const { shapeProblems } = await import('../queries/shape.js');
    const [first, ...more] = shapeProblems(query, explained.columns);
    if (first === undefined) return undefined;
    const error = refusedDefinition(query, first);
    if (more.length === 0) return error;
    return new DefinitionError(`${error.message}\n  (and ${more.length} more; see savedq check)`, { files: [query.file], forCaller: error.forCaller });
  }

  /** The engine's objections to a set of saved queries (serve, at start and on SIGHUP): one error a refused query. */
  async refusals(queries: readonly SavedQuery[]): Promise<DefinitionError[]> {
    const warehouse = await this.parts.warehouse();
    const refused: DefinitionError[] = [];
    for (const query of queries) {
      const error = await this.refusal(query, warehouse);
      if (error) refused.push(error);
    }
    return refused;
  }
}
