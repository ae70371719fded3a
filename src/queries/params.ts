import { InputError } from '../errors.js';
import { closest } from '../suggest.js';
import { allowedItems, boundsText, isLiteral, patternError, typeRules, withinBounds } from './param-types.js';
import type { NormalisedParams, ParamDefinition, SavedQuery } from './types.js';

/** Raw parameters as given: name/value pairs, in order, possibly repeated. */
export type RawParams = ReadonlyArray<readonly [string, string]>;

/** The longest value a parameter takes (a URL's whole length is 8 KiB): longer is a mistake or an attack. */
export const MAX_VALUE_LENGTH = 8192;

/** A call's parameters as `run -p` gives them, `name=value` each, those left empty left out, joined by `separator`. */
export function paramsText(params: Readonly<Record<string, string>>, separator = ' '): string {
  return Object.entries(params)
    .filter(([, value]) => value !== '')
    .map(([name, value]) => `${name}=${value}`)
    .join(separator);
}

/** Quotes a user's value for an error message: JSON-escaped, and shortened when long. */
export function quoteValue(value: string): string {
  const short = value.length > 60 ? `${value.slice(0, 57)}...` : value;
  return JSON.stringify(short);
}

/** What a parameter accepts, for messages. */
export function accepted(param: ParamDefinition): string {
  if (param.allowed) {
    const list = `one of ${param.allowed.join(', ')}`;
    return param.type === 'string[]' ? `comma-separated items, each ${list}` : list;
  }
  const bounds = boundsText(param);
  if (param.type === 'string') return param.required ? 'a non-empty string' : 'text';
  return `${typeRules(param.type).accepts}${bounds ? ` ${bounds}` : ''}`;
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
 * Checks raw parameters against a saved query's declaration and returns every declared parameter
 * in canonical text with defaults applied, so that equivalent calls normalise to the same object.
 * Throws an InputError naming the parameter and what it accepts; nothing is run on bad input.
 */
export function normaliseParams(query: SavedQuery, raw: RawParams): NormalisedParams {
  const given = new Map<string, string>();
  for (const [name, value] of raw) {
    const param = query.params.find((p) => p.name === name);
    if (!param) {
      const names = query.params.map((p) => p.name);
      const guess = closest(name, names);
      const known = names.length > 0 ? `Parameters: ${names.join(', ')}.` : 'It takes no parameters.';
      throw new InputError(`unknown parameter ${quoteValue(name)} for ${query.name}.${guess ? ` Did you mean ${guess}?` : ''} ${known}`);
    }
    if (given.has(name)) throw new InputError(`parameter '${name}' is given more than once.`);
    if (value.length > MAX_VALUE_LENGTH) throw new InputError(`parameter '${name}' is ${value.length} characters long; a value is at most ${MAX_VALUE_LENGTH}.`);
    given.set(name, value);
  }

  const missing = query.params.filter((param) => param.required && (given.get(param.name) ?? '') === '');
  if (missing.length > 0) throw new InputError(missingText(query.name, missing));
  const result: Record<string, string> = {};
  for (const param of query.params) {
    const value = given.get(param.name) ?? '';
    const checked = checkValue(param, value);
    if ('reason' in checked) {
      throw new InputError(`invalid value ${quoteValue(value)} for parameter '${param.name}': ${checked.reason}.`);
    }
    result[param.name] = checked.value;
  }
  // A value that is nothing once read (`projects=,`: a list of no item) is missing too, as `projects=` is:
  // an answer is never kept under parameters that warming would then refuse.
  const emptied = query.params.filter((param) => param.required && result[param.name] === '');
  if (emptied.length > 0) throw new InputError(missingText(query.name, emptied));
  return result;
}

/** Every required parameter a call left out, named at once with what each accepts (not one a try). */
function missingText(queryName: string, missing: readonly ParamDefinition[]): string {
  const [first] = missing;
  if (missing.length === 1 && first) return `missing parameter '${first.name}' for ${queryName}: ${accepted(first)}.`;
  const each = missing.map((param) => `'${param.name}' (${accepted(param)})`);
  return `missing parameters for ${queryName}: ${each.slice(0, -1).join(', ')} and ${each.at(-1)}.`;
}

/** Patterns known to compile, by their text (RE2's answer never changes for one text). */
export interface PatternMemo {
  get(pattern: string): Promise<unknown>;
  set(pattern: string): Promise<void>;
}

/**
 * Checks the values of a call's `regex` parameters with RE2: an InputError naming the first that does
 * not compile. Part of preparing a call, so a bad pattern is refused wherever a call comes from, before
 * anything is read or run. RE2 is loaded only for a pattern with special characters that the memo does
 * not know (a cache hit of a pattern checked before loads none).
 */
export async function checkPatterns(query: SavedQuery, params: NormalisedParams, memo?: PatternMemo): Promise<void> {
  for (const param of query.params) {
    const value = params[param.name] ?? '';
    if (param.type !== 'regex' || value === '' || isLiteral(value) || (await memo?.get(value))) continue;
    const reason = patternError(value);
    if (reason !== undefined) {
      throw new InputError(`invalid value ${quoteValue(value)} for parameter '${param.name}': not an RE2 regular expression (${reason}).`);
    }
    await memo?.set(value);
  }
}

/**
 * A value's canonical text, or why the parameter refuses it (a pattern is checked by checkPatterns). Empty is absent: the default, or ''. The
 * same check applies to command-line and HTTP values and to a definition's own default.
 */
export function checkValue(param: ParamDefinition, value: string): { value: string } | { reason: string } {
  if (value === '') return { value: param.default ?? '' };
  const typed = typeRules(param.type).canonical(value);
  // A value of the type's shape out of its range says the declared bounds, when the query sets some.
  const bounded = param.min !== undefined || param.max !== undefined;
  if ('reason' in typed) return { reason: bounded ? accepted(param) : (typed.reason ?? accepted(param)) };
  if (param.allowed && !allowedItems(param, typed.value).every((item) => param.allowed?.includes(item))) {
    if (param.other === 'default' && param.default !== undefined) return { value: param.default };
    return { reason: accepted(param) };
  }
  if (!withinBounds(param, typed.value)) return { reason: accepted(param) };
  return typed;
}
