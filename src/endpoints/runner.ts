import type { ClickHouseSettings } from '@clickhouse/client';
import { InputError, SavedqError } from '../errors.js';
import { parseIsoTimestamp, toClickHouseDateTime, type Micros } from '../time.js';
import type { Warehouse } from '../warehouse/index.js';
import { quoteValue } from './params.js';
import { endpointSql, NOW_PARAM } from './sql.js';
import type { EndpointDefinition, NormalisedParams, Row } from './types.js';

/** How a saved query is run. */
export interface ExecuteOptions {
  /** The instant the query runs "as of". */
  readonly now: Micros;
  /** Per-query time limit, enforced by the engine. */
  readonly timeoutSeconds: number;
  readonly signal?: AbortSignal | undefined;
}

/** A saved query can read, never write, and cannot take the whole machine. */
const MAX_MEMORY_BYTES = 4 * 1024 ** 3;

/** The values bound to the query's `{name:Type}` parameters. */
export function bindValues(
  endpoint: EndpointDefinition,
  params: NormalisedParams,
  now: Micros,
): Record<string, string | null> {
  const values: Record<string, string | null> = { [NOW_PARAM]: toClickHouseDateTime(now) };
  for (const param of endpoint.params) {
    const value = params[param.name] ?? '';
    if (param.kind === 'timestamp') {
      const micros = value === '' ? undefined : parseIsoTimestamp(value);
      values[param.name] = micros === undefined ? null : toClickHouseDateTime(micros);
    } else {
      values[param.name] = value;
    }
  }
  return values;
}

/**
 * The settings every saved query runs under: read-only, a time limit, a memory limit, and the row
 * limit, all set by the library so no saved query can write or exhaust the machine.
 */
export function querySettings(endpoint: EndpointDefinition, timeoutSeconds: number): ClickHouseSettings {
  return {
    readonly: '2',
    max_execution_time: timeoutSeconds,
    max_memory_usage: String(MAX_MEMORY_BYTES),
    limit: String(endpoint.maxRows),
  };
}

/** Runs a saved query with validated parameters and returns its rows, shaped as its fields declare. */
export async function executeEndpoint(
  warehouse: Warehouse,
  endpoint: EndpointDefinition,
  params: NormalisedParams,
  options: ExecuteOptions,
): Promise<Row[]> {
  const settings = querySettings(endpoint, options.timeoutSeconds);
  let rows;
  try {
    rows = await warehouse.query(endpointSql(endpoint), bindValues(endpoint, params, options.now), settings, options.signal);
  } catch (err) {
    throw asInputError(err, endpoint, params) ?? err;
  }
  const jsonFields = endpoint.fields.filter((f) => f.type === 'object').map((f) => f.name);
  const limited = rows.length > endpoint.maxRows ? rows.slice(0, endpoint.maxRows) : rows;
  for (const row of limited) {
    for (const name of jsonFields) row[name] = parseJsonField(row[name]);
  }
  return limited;
}

function parseJsonField(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/** A pattern the engine's RE2 cannot compile is the caller's mistake, not the warehouse's. */
function asInputError(err: unknown, endpoint: EndpointDefinition, params: NormalisedParams): InputError | undefined {
  const cause = err instanceof SavedqError ? err.cause : err;
  const type = (cause as { type?: unknown } | undefined)?.type;
  const message = String((cause as { message?: unknown } | undefined)?.message ?? '');
  if (type !== 'CANNOT_COMPILE_REGEXP' && !/cannot compile re2/i.test(message)) return undefined;
  const param = endpoint.params.find((p) => p.kind === 'regex');
  if (!param) return undefined;
  const reason = /cannot compile re2: .*?, error: ([^.]*)/.exec(message)?.[1];
  return new InputError(
    `invalid value ${quoteValue(params[param.name] ?? '')} for parameter '${param.name}': not an RE2 regular expression${reason ? ` (${reason})` : ''}.`,
  );
}
