import type { ClickHouseSettings } from '@clickhouse/client';
import { DefinitionError, InputError, LimitError, type EngineFailure, WarehouseError } from '../errors.js';
import { parseJson } from '../json.js';
import { packageVersion } from '../package.js';
import { toClickHouseDateTime, type Micros } from '../time.js';
import { engineSays, isBadPattern, isRefusal, isSyntaxError } from '../warehouse/errors.js';
import type { Warehouse } from '../warehouse/index.js';
import { UnsettableError } from '../warehouse/profile.js';
import type { CallContext, ChunkStream, QueryStatistics, StreamFormat } from '../warehouse/types.js';
import { RESULT_TABLE, sqlError } from '../sandbox/check.js';
import { displayPath } from './catalog.js';
import { bindValue, type BoundValue } from './param-types.js';
import { quoteValue } from './params.js';
import type { EngineColumn } from './shape.js';
import { NOW_PARAM, paramUses } from './sql.js';
import type { NormalisedParams, ParamType, QueryLimits, Row, SavedQuery } from './types.js';

/** How a saved query is run. */
export interface ExecuteOptions {
  /** The instant the query runs "as of". */
  readonly now: Micros;
  /** Per-query time limit, enforced by the engine. */
  readonly timeoutSeconds: number;
  /** Aborted when the call's time is up or no one waits for the answer any more: a query not yet begun is not begun. */
  readonly signal?: AbortSignal | undefined;
  /** When the call's time is up (epoch ms): its one deadline, through every statement it makes. */
  readonly deadline?: number | undefined;
  /**
   * A caller's own SQL over the query's answer (sandbox/check.ts checked it; the engine's spelling), run
   * over `result`; absent: the query's rows as they are.
   */
  readonly sql?: string | undefined;
  /** The memory a caller's SQL may take (--sandbox-max-memory-mb), in bytes. */
  readonly sandboxMaxMemoryBytes?: number | undefined;
  /** Who asked, as the warehouse's query log is to say it (log_comment), and the caller's trace. */
  readonly tags?: CallTags | undefined;
}

/** What a call's statements carry to the warehouse of it: its deadline, who it is for, its trace. */
function callContext(options: ExecuteOptions): CallContext {
  return { signal: options.signal, deadline: options.deadline, caller: options.tags?.caller, headers: options.tags?.trace };
}

/** Who asked for a call, carried to the warehouse: its log_comment, and a caller's W3C trace context. */
export interface CallTags {
  /** savedq's request id: serve's X-Request-Id (a caller's own included), a run's own. */
  readonly requestId?: string | undefined;
  /** The caller's label: an API key's or a token's name, never a secret. */
  readonly caller?: string | undefined;
  /** The caller's `traceparent` (and `tracestate`), passed on as they came. */
  readonly trace?: Readonly<Record<string, string>> | undefined;
}

/**
 * The log_comment of a saved query's statements: a JSON object of the query's name, the request id,
 * the caller's label and savedq's version, which system.query_log keeps beside the query.
 */
export function logComment(query: SavedQuery, tags: CallTags | undefined): string {
  return JSON.stringify({ query: query.name, request_id: tags?.requestId ?? null, caller: tags?.caller ?? null, version: packageVersion() });
}

/** The engine's settings of a query's `limits:` (result_overflow_mode left at throw: passing one fails the query). */
function limitSettings({ read_rows, read_bytes, result_bytes, threads }: QueryLimits): ClickHouseSettings {
  return {
    ...(read_rows !== undefined ? { max_rows_to_read: String(read_rows) } : {}),
    ...(read_bytes !== undefined ? { max_bytes_to_read: String(read_bytes) } : {}),
    ...(result_bytes !== undefined ? { max_result_bytes: String(result_bytes) } : {}),
    ...(threads !== undefined ? { max_threads: threads } : {}),
  };
}

/** The engine's errors of a limit passed, by code: the `limits:` key each comes from. */
const LIMIT_PASSED: ReadonlyMap<number, { key: keyof QueryLimits; what: string }> = new Map([
  [158, { key: 'read_rows', what: 'rows read' }],
  [307, { key: 'read_bytes', what: 'bytes read' }],
  [396, { key: 'result_bytes', what: 'bytes of result' }],
]);

/** A query that passed a limit its definition sets, said naming both; undefined for any other failure. */
function limitPassed(err: unknown, query: SavedQuery): LimitError | undefined {
  const code = (err as Partial<WarehouseError>).engine?.code;
  const passed = code === undefined ? undefined : LIMIT_PASSED.get(code);
  if (passed === undefined) return undefined;
  const limit = query.limits[passed.key];
  // A limit of the server's own (a profile's) is the server's to say.
  if (limit === undefined) return undefined;
  return new LimitError(`${query.name} passed its limit of ${String(limit)} ${passed.what} (limits: ${passed.key} in its definition).`, { cause: err });
}

/** The `limits:` key of each engine setting they set. */
const LIMIT_KEYS: Readonly<Record<string, keyof QueryLimits>> = { max_rows_to_read: 'read_rows', max_bytes_to_read: 'read_bytes', max_result_bytes: 'result_bytes', max_threads: 'threads' };

/** A definition's limits the warehouse's user cannot apply, said naming the query, its limits, and the fix. */
function unsettable(err: UnsettableError, query: SavedQuery): WarehouseError {
  const keys = err.settings.map((name) => LIMIT_KEYS[name] ?? name).join(', ');
  const why =
    err.readonlyLevel === 1
      ? 'its user is read-only (readonly=1), so savedq can set no setting there; a profile with readonly=2 lets savedq set its limits (docs/scaling.md)'
      : "its user's profile fixes them, or bounds them looser than asked; a profile that lets them be set lets savedq apply them (docs/scaling.md)";
  return new UnsettableError(err.settings, err.readonlyLevel, `${query.name} sets limits: ${keys} in its definition, which the warehouse cannot apply: ${why}.`, {
    forCaller: `${query.name}'s limits cannot be applied by the warehouse's user.`,
  });
}

/** A saved query can read, never write, and cannot take the whole machine. */
const MAX_MEMORY_BYTES = 4 * 1024 ** 3;

/** The values bound to the query's `{name:Type}` parameters. */
export function bindValues(query: SavedQuery, params: NormalisedParams, now: Micros): Record<string, BoundValue> {
  const values: Record<string, BoundValue> = { [NOW_PARAM]: toClickHouseDateTime(now) };
  for (const param of query.params) values[param.name] = bindValue(param, params[param.name] ?? '');
  return values;
}

/**
 * The settings every saved query runs under: read-only, a time limit, a memory limit, and the row
 * limit, all set by the library so no saved query can write or exhaust the machine; and its answer
 * (`answer`: not savedq's own statements about it, such as the engine's check of its plan, whose
 * output is no answer) under the limits its definition sets.
 */
export function querySettings(query: SavedQuery, timeoutSeconds: number, tags?: CallTags, answer = true): ClickHouseSettings {
  return {
    ...(answer ? limitSettings(query.limits) : {}),
    log_comment: logComment(query, tags),
    readonly: '2',
    max_execution_time: timeoutSeconds,
    max_memory_usage: String(MAX_MEMORY_BYTES),
    // One row past the limit: read to know the result was cut there (`truncated`), never returned.
    limit: String(query.maxRows + 1),
  };
}

/**
 * The settings a caller's SQL over a query's answer runs under: read-only in the strict sense (no
 * setting changed, no table function: a second wall behind the check), the call's time limit, the
 * sandbox's memory limit, and the row limit on the caller's answer (not on `result`).
 */
export function sandboxSettings(query: SavedQuery, timeoutSeconds: number, maxMemoryBytes: number, tags?: CallTags, answer = true): ClickHouseSettings {
  return {
    ...(answer ? limitSettings(query.limits) : {}),
    log_comment: logComment(query, tags),
    max_execution_time: timeoutSeconds,
    max_memory_usage: String(maxMemoryBytes),
    limit: String(query.maxRows + 1),
    // Last: once it is 1, the statement may change no setting.
    readonly: '1',
  };
}

/**
 * The statement of SQL over a query's answer: it reads the answer as `result`; each part on lines of
 * its own, so that a comment ending the query's SQL ends there.
 */
function overAnswer(query: SavedQuery, sql: string): string {
  return `WITH ${RESULT_TABLE} AS (\n${query.boundSql}\n)\nSELECT * FROM (\n${sql}\n)`;
}

/** A saved query's rows, and whether there were more than its row limit (which the rows stop at). */
export interface QueryRows {
  readonly rows: Row[];
  readonly truncated: boolean;
  /** What the run cost, as the engine counts it. */
  readonly statistics: QueryStatistics;
}

/** Runs a saved query with validated parameters and returns its rows, shaped as its fields declare. */
export async function executeQuery(
  warehouse: Warehouse,
  query: SavedQuery,
  params: NormalisedParams,
  options: ExecuteOptions,
): Promise<QueryRows> {
  const sandboxed = options.sql !== undefined;
  const settings = sandboxed ? sandboxSettings(query, options.timeoutSeconds, options.sandboxMaxMemoryBytes ?? MAX_MEMORY_BYTES, options.tags) : querySettings(query, options.timeoutSeconds, options.tags);
  const statement = sandboxed ? overAnswer(query, options.sql) : query.boundSql;
  let rows;
  let statistics: QueryStatistics;
  // What the warehouse user's profile changed of the limits, said where the run is read (profile.ts).
  const bounds = new Set<string>();
  try {
    const values = bindValues(query, params, options.now);
    // The definition's limits are the answer's: a host that cannot apply them refuses it.
    const required = Object.keys(limitSettings(query.limits));
    ({ rows, statistics } = await warehouse.measure(statement, values, settings, { ...callContext(options), required, onBound: (said) => bounds.add(said) }));
  } catch (err) {
    throw runFailure(err, warehouse, query, params, sandboxed);
  }
  if (bounds.size > 0) statistics = { ...statistics, bounds: [...bounds] };
  const jsonFields = jsonFieldsOf(query);
  const limited = rows.length > query.maxRows ? rows.slice(0, query.maxRows) : rows;
  if (jsonFields.length > 0) {
    for (const row of limited) {
      for (const name of jsonFields) row[name] = parseJsonField(row[name]);
    }
  }
  return { rows: limited, truncated: rows.length > query.maxRows, statistics };
}

/** A run's failure as its caller is to read it: a limit passed, the caller's SQL refused, the definition's mistake, a bad pattern, or as it was. */
function runFailure(err: unknown, warehouse: Warehouse, query: SavedQuery, params: NormalisedParams, sandboxed: boolean): unknown {
  const limit = limitPassed(err, query);
  if (limit) return limit;
  if (err instanceof UnsettableError) return unsettable(err, query);
  // The query's own SQL was checked before its first run: what the engine refuses now is the caller's.
  if (sandboxed) return sqlError(err);
  // The embedded engine is as new as savedq: SQL it cannot parse is the definition's mistake.
  if (warehouse.embedded && isSyntaxError(err)) return refusedDefinition(query, objection(query, err as WarehouseError));
  return asInputError(err, query, params) ?? err;
}

/**
 * The engine's settings of an export: in the binary formats texts as UTF-8 strings (not bytes), and an
 * Arrow stream uncompressed, which every Arrow reader reads (Arrow JS has no LZ4); in JSONEachRow a
 * slash not escaped and text that is not UTF-8 made valid (U+FFFD), as JSON.stringify writes a row
 * (calls/export.ts passes such lines through as `run`'s NDJSON).
 */
const EXPORT_FORMAT_SETTINGS: ClickHouseSettings = {
  output_format_json_escape_forward_slashes: 0,
  output_format_json_validate_utf8: 1,
  output_format_parquet_string_as_string: 1,
  output_format_arrow_string_as_string: 1,
  output_format_arrow_compression_method: 'none',
  // Parquet's writer holds a row group whole until it is written (a million rows, 512 MiB, by default),
  // and encodes several at once: groups of DuckDB's size, encoded one at a time, keep an export's memory
  // flat (4 M rows of 110 bytes: 1.2 GB with the defaults, about what 250 k rows take with these) at
  // about the same speed.
  output_format_parquet_row_group_size: '122880',
  output_format_parquet_row_group_size_bytes: String(32 * 1024 * 1024),
  output_format_parquet_parallel_encoding: 0,
};

/**
 * A saved query's whole answer streamed in an engine format (`savedq export`): the statement and the
 * settings of a run (limits, time, memory, read-only, the caller's SQL over the answer), but no row
 * limit, the query's own LIMIT aside. Fails as a run fails when the engine refuses it before its
 * first part; a failure after that is the stream's.
 */
export async function exportQuery(warehouse: Warehouse, query: SavedQuery, params: NormalisedParams, options: ExecuteOptions & { readonly format: StreamFormat; readonly file?: string | undefined }): Promise<ChunkStream> {
  const sandboxed = options.sql !== undefined;
  const settings = sandboxed ? sandboxSettings(query, options.timeoutSeconds, options.sandboxMaxMemoryBytes ?? MAX_MEMORY_BYTES, options.tags) : querySettings(query, options.timeoutSeconds, options.tags);
  delete settings.limit; // the whole answer: no row cap
  const statement = sandboxed ? overAnswer(query, options.sql) : query.boundSql;
  try {
    return await warehouse.run('stream', {
      sql: statement,
      params: bindValues(query, params, options.now),
      // The format's settings first: a sandbox's readonly, last, forbids changing any after it.
      settings: { ...EXPORT_FORMAT_SETTINGS, ...settings },
      ...callContext(options),
      format: options.format,
      file: options.file,
      required: Object.keys(limitSettings(query.limits)),
    });
  } catch (err) {
    throw runFailure(err, warehouse, query, params, sandboxed);
  }
}

/** The fields of a query whose values the tables keep as JSON text, given as the values (objects, arrays). */
export function jsonFieldsOf(query: SavedQuery): string[] {
  return query.fields.filter((f) => f.type === 'object' || f.type === 'array').map((f) => f.name);
}

/** An object field the tables keep as JSON text (`metadata`) is returned as the object. */
export function parseJsonField(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return parseJson(value);
  } catch {
    return value;
  }
}

/**
 * A pattern the engine's RE2 cannot compile is the caller's mistake, not the warehouse's. Patterns are
 * checked before anything runs; this covers the rare one the engine's RE2 refuses and the check let by.
 */
function asInputError(err: unknown, query: SavedQuery, params: NormalisedParams): InputError | undefined {
  if (!isBadPattern(err)) return undefined;
  const message = (err as WarehouseError).engine?.message ?? '';
  const param = query.params.find((p) => p.type === 'regex' && params[p.name] !== '');
  if (!param) return undefined;
  const reason = /cannot compile re2: .*?, error: ([^.]*)/.exec(message)?.[1];
  return new InputError(
    `invalid value ${quoteValue(params[param.name] ?? '')} for parameter '${param.name}': not an RE2 regular expression${reason ? ` (${reason})` : ''}.`,
  );
}

/** A value of each type for asking the engine about a query without running it. */
const SAMPLE_VALUES: Record<ParamType, string> = {
  string: 'x',
  regex: 'x',
  integer: '1',
  number: '1',
  boolean: 'true',
  timestamp: '2026-01-01T00:00:00Z',
  date: '2026-01-01',
  'string[]': 'x',
};

/** What the engine says of a saved query asked without running it: its objection, or its answer's columns. */
export type Explained = { readonly objection: { line: number; message: string }; readonly columns?: undefined } | { readonly objection?: undefined; readonly columns: EngineColumn[] };

/**
 * Has the engine parse and plan a saved query with its parameters bound (to their default, an allowed
 * value, or a value of their type), and describe its answer's columns, without running it. Returns the
 * engine's objection, with the line of the file it points at when it says, or the columns. A warehouse
 * that cannot be reached is thrown, as for a run.
 */
export async function explainQuery(warehouse: Warehouse, query: SavedQuery, now: Micros): Promise<Explained> {
  const params: Record<string, string> = {};
  for (const p of query.params) {
    const sample = p.default ?? p.allowed?.[0] ?? (p.min !== undefined ? String(p.min) : p.max !== undefined ? String(p.max) : SAMPLE_VALUES[p.type]);
    params[p.name] = sample;
  }
  const values = bindValues(query, params, now);
  try {
    // The engine's parse of the query's own text first: what kind of statement it is, and where it
    // cannot be read, in the file's own lines.
    const [top = ''] = await warehouse.explainAst(query.boundSql, values);
    const kind = /^\w+/.exec(top)?.[0] ?? '';
    if (kind !== 'SelectWithUnionQuery') {
      const words = kind.replace(/Query$/, '').replace(/([a-z])([A-Z])/g, '$1 $2').toUpperCase();
      return { objection: { line: query.sqlLine, message: `a saved query is one SELECT (WITH, UNION ALL and subqueries of its own included); the engine reads ${words === '' ? 'another statement' : `a ${words} statement`}.` } };
    }
    await warehouse.query(`EXPLAIN ${query.boundSql}`, values, querySettings(query, 30, undefined, false));
    // The answer's columns, described (DESCRIBE of the bound statement: nothing is run).
    const described = await warehouse.query(`DESCRIBE (\n${query.boundSql}\n)`, values, querySettings(query, 30, undefined, false));
    return { columns: described.map((row) => ({ name: String(row['name']), type: String(row['type']) })) };
  } catch (err) {
    // Only the engine refusing the query is the query's fault; anything else (unreachable, busy, out of
    // time) fails the check as it would fail a run.
    if (isSyntaxError(err)) return { objection: unreadable(query, err as WarehouseError, 'EXPLAIN AST '.length) };
    if (!isRefusal(err)) throw err;
    return { objection: objection(query, err as WarehouseError) };
  }
}

/**
 * Where the engine could not parse a saved query, as a line and column of its file: its position (in
 * bytes, from 1, of the statement sent, which began with `prefix` characters before the query's text)
 * taken back through each `@name` bound as `{name:Type}`.
 */
function unreadable(query: SavedQuery, err: WarehouseError, prefix: number): { line: number; message: string } {
  const engine = err.engine as EngineFailure;
  const position = Number(/failed at position (\d+)/.exec(engine.message)?.[1] ?? NaN);
  if (!Number.isInteger(position)) return objection(query, err);
  const bound = Buffer.from(query.boundSql).subarray(0, Math.max(0, position - 1 - prefix)).toString('utf8').length;
  let grown = 0;
  for (const use of paramUses(query.sql)) {
    const start = use.offset + grown;
    if (bound <= start) break;
    const length = query.boundSql.indexOf('}', start) + 1 - start;
    if (bound < start + length) {
      grown = bound - use.offset;
      break;
    }
    grown += length - (use.name.length + 1);
  }
  const before = query.sql.slice(0, bound - grown);
  const line = query.sqlLine + (before.match(/\n/g)?.length ?? 0);
  const column = before.length - before.lastIndexOf('\n');
  return { line, message: `the engine cannot parse the query: ${engineSays({ ...engine, message: engine.message.replace(/failed at position \d+/, `failed at column ${column}`).replace(/ \(line \d+, col \d+\)/, '') })}` };
}

/**
 * Has the engine parse and plan SQL over a saved query's answer (checked as sandbox/check.ts checks
 * it) with the call's parameters bound, without running it: what the engine says of the SQL, or
 * undefined when it has nothing to say.
 */
export async function explainOver(warehouse: Warehouse, query: SavedQuery, params: NormalisedParams, sql: string, now: Micros): Promise<string | undefined> {
  try {
    await warehouse.query(`EXPLAIN ${overAnswer(query, sql)}`, bindValues(query, params, now), sandboxSettings(query, 30, MAX_MEMORY_BYTES, undefined, false));
    return undefined;
  } catch (err) {
    if (!isRefusal(err)) throw err;
    return engineSays((err as WarehouseError).engine as EngineFailure, { forCaller: true });
  }
}

/** The engine's refusal of a saved query, as one line about the file: the line it points at, and what it said. */
function objection(query: SavedQuery, err: WarehouseError): { line: number; message: string } {
  const engine = err.engine as EngineFailure;
  return { line: objectionLine(query, engine.message), message: `the engine refuses the query: ${engineSays(engine)}` };
}

/**
 * The engine's refusal of a saved query as the definition error it is: the file and line, what the
 * engine said, and that line of the user's SQL (never the statement as savedq rewrote it); a caller
 * of serve or an agent reads the same without the file's folder.
 */
export function refusedDefinition(query: SavedQuery, { line, message }: { line: number; message: string }): DefinitionError {
  const source = sourceLine(query, line);
  const shown = source === undefined ? '' : `\n  ${line} | ${source}`;
  return new DefinitionError(`${displayPath(query.file)}:${line}: ${message}${shown}`, {
    files: [query.file],
    forCaller: `${query.name}'s SQL, line ${line}: ${message}`,
  });
}

/** A line of a saved query's file, when it is one of its SQL's. */
export function sourceLine(query: SavedQuery, line: number): string | undefined {
  return line >= query.sqlLine ? query.sql.split('\n')[line - query.sqlLine]?.trimEnd() : undefined;
}

/** The line of the file an objection of the engine points at: its own line number, or the first line naming the identifier it means. */
function objectionLine(query: SavedQuery, message: string): number {
  const at = /\(line (\d+), col \d+\)/.exec(message);
  if (at) return query.sqlLine + Number(at[1]) - 1;
  const name = /(?:identifier|function with name) [`'"]([^`'"]+)[`'"]/i.exec(message)?.[1];
  const offset = name === undefined ? -1 : query.sql.search(new RegExp(`(?<![\\w.])${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w])`));
  return offset < 0 ? query.sqlLine : query.sqlLine + (query.sql.slice(0, offset).match(/\n/g)?.length ?? 0);
}
