import { splitList } from './param-types.js';
import { columnShape, type EngineColumn, type ShapeOf } from './shape.js';
import { DATE_EXACT, ISO_TIMESTAMP_EXACT } from '../time.js';
import { BOOLEAN_TEXTS, type FieldType, type ParamDefinition, type SavedQuery } from './types.js';
import type { QueryStatistics } from '../warehouse/types.js';

/**
 * How a parameter's value travels, which decides its JSON Schema: `query-string`, as text in a URL
 * (OpenAPI, and the page's form built from it), or `json`, as a JSON value (an MCP tool's arguments).
 */
export type ValueCarrier = 'query-string' | 'json';

/** The JSON Schema of each kind of result field. */
const FIELD_SCHEMAS: Record<FieldType, object> = {
  string: { type: 'string' },
  integer: { type: 'integer' },
  number: { type: 'number' },
  boolean: { type: 'boolean' },
  timestamp: { type: 'string', format: 'date-time' },
  date: { type: 'string', format: 'date' },
  // Any keys, any items: a nested value is whatever the log holds (a generated client can read into it).
  object: { type: 'object', additionalProperties: true },
  array: { type: 'array', items: {} },
};

/** The JSON Schema of a result field of this type (null allowed too when its column may be null). */
export function fieldSchema(type: FieldType, nullable = false): object {
  const schema = FIELD_SCHEMAS[type] as { type: string };
  return nullable ? { ...schema, type: [schema.type, 'null'] } : schema;
}

/**
 * The JSON Schema of a query's rows, by its declared fields (each that the engine's column says may be
 * null allows null: `columns`, when the engine has described the answer, shape.ts): OpenAPI's `result`
 * and MCP's `rows`.
 */
export function rowsSchema(query: Pick<SavedQuery, 'fields' | 'maxRows' | 'sandbox'>, columns?: readonly EngineColumn[]): object {
  const nullable = new Set((columns ?? []).filter((c) => columnShape(c.type).nullable).map((c) => c.name));
  return {
    type: 'array',
    maxItems: query.maxRows,
    items: {
      type: 'object',
      // A caller's SQL over a sandboxed query's answer chooses its own fields: any, none required.
      ...(query.fields.length > 0 && !query.sandbox ? { required: query.fields.map((f) => f.name) } : {}),
      properties: Object.fromEntries(query.fields.map((f) => [f.name, { ...fieldSchema(f.type, nullable.has(f.name)), ...(f.description ? { description: f.description } : {}) }])),
    },
  };
}

/**
 * The rows of a query that keeps older versions: any version's rows (the current one's schema first),
 * each said by its version; of a query with one version, its rows schema.
 */
export function versionedRowsSchema(current: SavedQuery, kept: readonly SavedQuery[], shapeOf?: ShapeOf): object {
  if (kept.length === 0) return rowsSchema(current, shapeOf?.(current));
  return { anyOf: [current, ...kept].map((q) => ({ ...rowsSchema(q, shapeOf?.(q)), description: `The rows of version ${q.version}.` })) };
}

/** What a run cost, as every answer says it (docs/serve.md): the engine's figures, in this order. */
export function statisticsOf(s: QueryStatistics): QueryStatistics {
  return { elapsed: s.elapsed, rows_read: s.rows_read, bytes_read: s.bytes_read };
}

/** An answer's `statistics`, as OpenAPI and MCP declare them. */
export const STATISTICS_SCHEMA = {
  type: 'object',
  description: 'What the run that computed the rows cost, as the engine counts it (a cached answer: its run\'s).',
  required: ['elapsed', 'rows_read', 'bytes_read'],
  properties: {
    elapsed: { type: 'number', minimum: 0, description: 'Seconds the engine spent on the query.' },
    rows_read: { type: 'integer', minimum: 0, description: 'Rows it read from tables.' },
    bytes_read: { type: 'integer', minimum: 0, description: 'Bytes it read from tables (uncompressed).' },
  },
} as const;

/** What every answer says of itself besides its rows: whether they are whole, whether cached, how old, what they cost. */
export function answerFacts(maxRows: number, versions: readonly number[] = [1]): Record<string, object> {
  return {
    version: { type: 'integer', enum: [...versions], description: 'The version of the saved query that made the rows (the Savedq-Version header says it too).' },
    truncated: { type: 'boolean', description: `True when the query had more than ${maxRows} rows (savedq's row limit, max_rows): the rows stop there. A limit in the query's own SQL does not count.` },
    cached: { type: 'boolean', description: 'True when the rows came from the cache.' },
    age_seconds: { type: 'integer', minimum: 0, description: 'Seconds since the rows were computed.' },
    stale: { type: 'boolean', const: true, description: "Present only when no host of the warehouse answered and the rows are an expired answer from the cache, within the query's stale_if_error (X-Cache: STALE)." },
    statistics: STATISTICS_SCHEMA,
  };
}

/**
 * A caller's own SQL over a sandboxed query's answer, as OpenAPI and MCP declare it (docs/sandboxing.md):
 * at most 16 KiB in a body, and in an address no more than the address holds (8 KiB, the rest of the
 * address included: past it, 414).
 */
export function sqlSchema(query: Pick<SavedQuery, 'fields'>, maxLength = 16 * 1024): object {
  const fields = query.fields.map((f) => f.name);
  return {
    type: 'string',
    maxLength,
    description:
      "Your own SELECT over this query's answer, which it reads as the table `result`" +
      (fields.length > 0 ? ` (its fields: ${fields.join(', ')})` : '') +
      ", e.g. SELECT count() AS n FROM result. One SELECT (WITH, subqueries, JOIN and UNION ALL of its own); no other table, table function, SETTINGS or FORMAT; functions of their arguments alone. The answer's fields are the SELECT's.",
  };
}

/** What a regex parameter's schema says of it: a text that is not RE2 is refused (400), before anything runs. */
const REGEX_TEXT = 'An RE2 regular expression (https://github.com/google/re2/wiki/Syntax); a text that is not one is refused.';

/** A parameter's value in the schema's own terms: a number for a number, a list for a list. */
function typedValue(param: ParamDefinition, text: string): unknown {
  switch (param.type) {
    case 'integer':
    case 'number':
      return Number(text);
    case 'boolean':
      return text === 'true';
    case 'string[]':
      return splitList(text);
    default:
      return text;
  }
}

/**
 * The JSON Schema of a parameter's value, exactly what the server takes (a test holds the two to each
 * other, tests/e2e/schema.test.ts): the one mapping OpenAPI, the page and MCP share. In a query string
 * a boolean is one of its words; as JSON (an MCP tool's arguments, a POST body's params) each value is
 * the JSON value its type takes (queries/arguments.ts), null standing for an optional one left out. A
 * timestamp is any ISO 8601 form savedq reads, a date one the engine holds, as exact patterns. A
 * required value may not be empty (empty is missing), and a required list has an item that is not
 * blank; in a query string an optional timestamp or date may be (empty is absent). A regex says it is
 * RE2, which the server checks. Allowed values are an `enum` where others are refused; where others behave as the default
 * (`other: default`), any value is taken, so they are `examples`.
 */
export function parameterSchema(p: ParamDefinition, carrier: ValueCarrier): object {
  const json = carrier === 'json';
  // In a query string, an optional text left empty is the value left out.
  const orEmpty = (pattern: string) => (json || p.required ? pattern : `^$|${pattern}`);
  const enumOf = (values: readonly string[]) =>
    p.other === 'reject' ? { enum: values.map((v) => typedValue({ ...p, type: p.type === 'string[]' ? 'string' : p.type }, v)) } : { examples: [...values] };
  const base: Record<string, unknown> = (() => {
    switch (p.type) {
      case 'integer':
        return json ? { type: 'integer' } : { type: 'integer', format: 'int64' };
      case 'number':
        return json ? { type: 'number' } : { type: 'number', format: 'double' };
      case 'boolean':
        // What the server takes in a query string: true, false, 1 or 0.
        return json ? { type: 'boolean' } : { type: 'string', enum: BOOLEAN_TEXTS.map(([t]) => t) };
      case 'timestamp':
        // ISO 8601 with Z, an offset or no zone (UTC): wider than RFC 3339's date-time, which needs a zone.
        // (The pattern cannot say the range of the instant once an offset is applied: the words do.)
        return { type: 'string', pattern: orEmpty(ISO_TIMESTAMP_EXACT), description: `ISO 8601; without a zone it is UTC; from 1900-01-01T00:00:00Z to 2299-12-31T23:59:59.999999Z once its offset is applied.${json || p.required ? '' : ' Empty: left out.'}` };
      case 'date':
        // (format date would refuse the empty value a query string may give.)
        return { type: 'string', ...(json || p.required ? { format: 'date' } : {}), pattern: orEmpty(DATE_EXACT) };
      case 'regex':
        return { type: 'string', ...(p.required ? { minLength: 1 } : {}), description: REGEX_TEXT };
      case 'string[]': {
        const items = { type: 'string', ...(p.allowed ? enumOf(p.allowed) : {}) };
        // As JSON, a list or one text of comma-separated items; required, an item that is not blank.
        const some = p.required ? { contains: { type: 'string', pattern: '\\S' }, ...(json ? { pattern: '[^,\\s]' } : {}) } : {};
        return { type: json ? ['array', 'string'] : 'array', items, ...some };
      }
      default:
        return { type: 'string', ...(p.required ? { minLength: 1 } : {}) };
    }
  })();
  const schema: Record<string, unknown> = {
    ...base,
    ...(p.allowed && p.type !== 'string[]' ? enumOf(p.allowed) : {}),
    ...(p.min !== undefined ? { minimum: p.min } : {}),
    ...(p.max !== undefined ? { maximum: p.max } : {}),
    ...(p.default !== undefined ? { default: p.type === 'boolean' && !json ? p.default : typedValue(p, p.default) } : {}),
    ...(json && p.description ? { description: typeof base.description === 'string' ? `${p.description} ${base.description}` : p.description } : {}),
  };
  // As JSON, null is an optional value left out.
  if (json && !p.required) {
    schema.type = [...(Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string]), 'null'];
    if (Array.isArray(schema.enum)) schema.enum = [...(schema.enum as unknown[]), null];
  }
  return schema;
}
