import { InputError } from '../errors.js';
import type { RawParams } from './params.js';
import type { SavedQuery } from './types.js';

/**
 * JSON arguments (an MCP tool call's, a POST body's params) as the raw parameters `run -p` would give: a string as it is, a number
 * or a boolean as its text, a list (for a `string[]`) as its comma-separated items, null as absent.
 * What JSON cannot say as text (an object; a list for a single value) is refused here, naming the
 * parameter; every value then goes through `run`'s own checks.
 */
export function argumentsAsParams(query: SavedQuery, args: Readonly<Record<string, unknown>> | undefined): RawParams {
  const params: [string, string][] = [];
  for (const [name, value] of Object.entries(args ?? {})) {
    if (value === null || value === undefined) continue;
    const list = query.params.find((p) => p.name === name)?.type === 'string[]';
    params.push([name, text(name, value, list)]);
  }
  return params;
}

function text(name: string, value: unknown, list: boolean): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value) && list) {
    return value
      .map((item) => {
        if (typeof item !== 'string' && typeof item !== 'number') throw new InputError(`parameter '${name}' takes a list of texts; an item is ${kind(item)}.`);
        if (String(item).includes(',')) throw new InputError(`parameter '${name}': an item of the list cannot hold a comma (${JSON.stringify(String(item).slice(0, 40))}).`);
        return String(item);
      })
      .join(',');
  }
  throw new InputError(`parameter '${name}' takes ${list ? 'a list of texts' : 'a text, a number or a boolean'}, not ${kind(value)}.`);
}

const kind = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value === 'object' ? 'an object' : `a ${typeof value}`);
