import { InputError } from '../errors.js';
import type { RawParams } from './params.js';
import type { ParamType, SavedQuery } from './types.js';

/** The JSON value each parameter type takes as an argument (what its JSON Schema says: json-schema.ts). */
const JSON_KINDS: { readonly [T in ParamType]: { readonly kind: 'string' | 'number' | 'boolean'; readonly said: string } } = {
  string: { kind: 'string', said: 'a text' },
  regex: { kind: 'string', said: 'a text (an RE2 pattern)' },
  timestamp: { kind: 'string', said: 'a text (an ISO 8601 timestamp)' },
  date: { kind: 'string', said: 'a text (a date YYYY-MM-DD)' },
  integer: { kind: 'number', said: 'a number (an integer)' },
  number: { kind: 'number', said: 'a number' },
  boolean: { kind: 'boolean', said: 'true or false' },
  'string[]': { kind: 'string', said: 'a list of texts, or a text of comma-separated items' },
};

/**
 * JSON arguments (an MCP tool call's, a POST body's params) as the raw parameters `run -p` would give:
 * each the JSON value its type takes (a text for a text, a number for a number, true or false, a list
 * or a comma-separated text for a `string[]`) as its text, null as absent. Anything else is refused
 * here, naming the parameter and what it takes, as the schema OpenAPI and MCP declare says it: no
 * value the schema calls invalid is taken. A name the query does not declare goes on as text, for
 * `run`'s own check to name. Every value then goes through `run`'s own checks.
 */
export function argumentsAsParams(query: SavedQuery, args: Readonly<Record<string, unknown>> | undefined): RawParams {
  const params: [string, string][] = [];
  for (const [name, value] of Object.entries(args ?? {})) {
    if (value === null || value === undefined) continue;
    const type = query.params.find((p) => p.name === name)?.type;
    params.push([name, type === undefined ? String(value) : text(name, value, type)]);
  }
  return params;
}

function text(name: string, value: unknown, type: ParamType): string {
  const takes = JSON_KINDS[type];
  if (type === 'string[]' && Array.isArray(value)) {
    return value
      .map((item) => {
        if (typeof item !== 'string') throw new InputError(`parameter '${name}' takes a list of texts; an item is ${kind(item)}.`);
        if (item.includes(',')) throw new InputError(`parameter '${name}': an item of the list cannot hold a comma (${JSON.stringify(item.slice(0, 40))}).`);
        return item;
      })
      .join(',');
  }
  if (typeof value !== takes.kind) throw new InputError(`parameter '${name}' takes ${takes.said}, not ${kind(value)}.`);
  return String(value);
}

const kind = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value === 'object' ? 'an object' : typeof value === 'string' ? 'a text' : `a ${typeof value}`);
