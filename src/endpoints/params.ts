import { InputError } from '../errors.js';
import { closest } from '../suggest.js';
import { parseIsoTimestamp, toIsoMicros } from '../time.js';
import type { EndpointDefinition, NormalisedParams, ParamDefinition } from './types.js';

/** Raw parameters as given: name/value pairs, in order, possibly repeated. */
export type RawParams = ReadonlyArray<readonly [string, string]>;

/** Quotes a user's value for an error message: JSON-escaped, and shortened when long. */
export function quoteValue(value: string): string {
  const short = value.length > 60 ? `${value.slice(0, 57)}...` : value;
  return JSON.stringify(short);
}

function accepted(param: ParamDefinition): string {
  if (param.allowed) return `one of ${param.allowed.join(', ')}`;
  if (param.kind === 'timestamp') return 'an ISO 8601 timestamp such as 2026-01-31T12:00:00Z';
  if (param.kind === 'regex') return 'an RE2 regular expression';
  return 'a non-empty string';
}

/** Parses `k=v` command-line pairs. */
export function parsePairs(pairs: readonly string[]): RawParams {
  return pairs.map((pair) => {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new InputError(`invalid parameter ${quoteValue(pair)}: expected name=value.`);
    return [pair.slice(0, eq), pair.slice(eq + 1)] as const;
  });
}

/**
 * Validates raw parameters against an endpoint's declaration and returns every declared parameter
 * with defaults applied, so that equivalent calls normalise to the same object. Throws an
 * InputError naming the parameter and the accepted values; nothing is run on bad input.
 */
export function normaliseParams(endpoint: EndpointDefinition, raw: RawParams): NormalisedParams {
  const given = new Map<string, string>();
  for (const [name, value] of raw) {
    const param = endpoint.params.find((p) => p.name === name);
    if (!param) {
      const names = endpoint.params.map((p) => p.name);
      const guess = closest(name, names);
      throw new InputError(
        `unknown parameter ${quoteValue(name)} for ${endpoint.name}.${guess ? ` Did you mean ${guess}?` : ''} ` +
          `Parameters: ${names.join(', ')}.`,
      );
    }
    if (given.has(name)) throw new InputError(`parameter '${name}' is given more than once.`);
    given.set(name, value);
  }

  const result: Record<string, string> = {};
  for (const param of endpoint.params) {
    result[param.name] = normaliseValue(endpoint, param, given.get(param.name) ?? '');
  }
  return result;
}

function normaliseValue(endpoint: EndpointDefinition, param: ParamDefinition, value: string): string {
  if (value === '') {
    if (param.required) {
      throw new InputError(`missing parameter '${param.name}' for ${endpoint.name}: ${accepted(param)}.`);
    }
    return param.default ?? '';
  }
  if (param.allowed && !param.allowed.includes(value)) {
    if (param.otherValues === 'default' && param.default !== undefined) return param.default;
    throw new InputError(`invalid value ${quoteValue(value)} for parameter '${param.name}': ${accepted(param)}.`);
  }
  if (param.kind === 'timestamp') {
    const micros = parseIsoTimestamp(value);
    if (micros === undefined) {
      throw new InputError(`invalid value ${quoteValue(value)} for parameter '${param.name}': ${accepted(param)}.`);
    }
    return toIsoMicros(micros);
  }
  return value;
}
