import { lazyRequire } from '../lazy.js';
import { isoTimestampProblem, parseIsoTimestamp, toClickHouseDateTime, toIsoMicros } from '../time.js';
import { BOOLEAN_TEXTS, type ParamDefinition, type ParamType } from './types.js';

/** A value bound to a `{name:Type}` query parameter. */
export type BoundValue = string | string[] | null;

/** How one parameter type reads, checks and binds its values. */
interface TypeRules {
  /** The ClickHouse type the value is bound as. */
  readonly clickhouse: string;
  /** Whether an absent value is NULL (so an optional parameter without a default is Nullable). */
  readonly nullable: boolean;
  /** What a value is, for messages: "an integer", "an ISO 8601 timestamp such as …". */
  readonly accepts: string;
  /**
   * The canonical text of a value, or a refusal: with a reason when there is more to say than what the
   * parameter accepts (a pattern's syntax error).
   */
  canonical(text: string): { value: string } | { reason: string | undefined };
  /** The canonical text as the engine takes it. */
  bind(text: string): BoundValue;
}

/** ClickHouse's Int64. */
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
/** What a ClickHouse Date holds. */
const DATE_MIN = '1970-01-01';
const DATE_MAX = '2149-06-06';

const NUMBER_PATTERN = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** RE2, the engine's own regular expressions: loaded only when a pattern has to be checked. */
const re2 = lazyRequire<typeof import('re2js')>('re2js', 're2.cjs');
/** No special character of RE2's, or one escaped: a backslash before ASCII punctuation is always that character. */
const LITERAL = /^(?:[^\\^$.|?*+()[\]{}]|\\[!-/:-@[-`{-~])*$/;

/**
 * Whether a pattern is a literal, which always compiles: none of RE2's special characters but escaped
 * ones (`project-7\.`, a host name's dots escaped), which RE2 is not asked to compile.
 */
export function isLiteral(pattern: string): boolean {
  return LITERAL.test(pattern);
}

/**
 * Why RE2 refuses a pattern, or undefined when it compiles. Not part of reading a value (a cache hit
 * never pays for RE2): the library checks patterns before it runs a query, and only valid ones are
 * ever stored.
 */
export function patternError(pattern: string): string | undefined {
  if (isLiteral(pattern)) return undefined;
  try {
    re2().RE2JS.compile(pattern);
    return undefined;
  } catch (err) {
    return (err as Error).message.replace(/^error parsing regexp: /, '');
  }
}

const same = (text: string): BoundValue => text;
const REFUSED = { reason: undefined };

const rules: Record<ParamType, TypeRules> = {
  string: {
    clickhouse: 'String',
    nullable: false,
    accepts: 'text',
    canonical: (text) => ({ value: text }),
    bind: same,
  },
  regex: {
    clickhouse: 'String',
    nullable: false,
    accepts: 'an RE2 regular expression',
    canonical: (text) => ({ value: text }),
    bind: same,
  },
  integer: {
    clickhouse: 'Int64',
    nullable: true,
    accepts: 'a base-10 integer',
    canonical(text) {
      if (!/^[+-]?\d+$/.test(text)) return REFUSED;
      const n = BigInt(text);
      if (n < INT64_MIN || n > INT64_MAX) return { reason: 'a base-10 integer within the 64-bit range' };
      return { value: n.toString() };
    },
    bind: same,
  },
  number: {
    clickhouse: 'Float64',
    nullable: true,
    accepts: 'a decimal number',
    canonical(text) {
      const n = Number(text);
      if (!NUMBER_PATTERN.test(text) || !Number.isFinite(n)) return REFUSED;
      return { value: String(n) };
    },
    bind: same,
  },
  boolean: {
    clickhouse: 'Bool',
    nullable: true,
    accepts: `${BOOLEAN_TEXTS.slice(0, -1).map(([t]) => t).join(', ')} or ${BOOLEAN_TEXTS.at(-1)?.[0] ?? ''}`,
    canonical(text) {
      const meaning = BOOLEAN_TEXTS.find(([t]) => t === text)?.[1];
      return meaning === undefined ? REFUSED : { value: String(meaning) };
    },
    bind: same,
  },
  timestamp: {
    clickhouse: "DateTime64(6, 'UTC')",
    nullable: true,
    accepts: 'an ISO 8601 timestamp such as 2026-01-31T12:00:00Z',
    canonical(text) {
      const micros = parseIsoTimestamp(text);
      return micros === undefined ? { reason: isoTimestampProblem(text) } : { value: toIsoMicros(micros) };
    },
    bind: (text) => toClickHouseDateTime(parseIsoTimestamp(text) as bigint),
  },
  date: {
    clickhouse: 'Date',
    nullable: true,
    accepts: `a date YYYY-MM-DD from ${DATE_MIN} to ${DATE_MAX}`,
    canonical(text) {
      if (!/^\d{4}-\d{2}-\d{2}$/.test(text) || parseIsoTimestamp(text) === undefined) return REFUSED;
      if (text < DATE_MIN || text > DATE_MAX) return REFUSED;
      return { value: text };
    },
    bind: same,
  },
  'string[]': {
    clickhouse: 'Array(String)',
    nullable: false,
    accepts: 'comma-separated texts',
    canonical: (text) => ({ value: splitList(text).join(',') }),
    bind: (text) => splitList(text),
  },
};

/** The items of a `string[]` value: comma-separated, each trimmed, empty ones dropped. */
export function splitList(text: string): string[] {
  return text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/** The rules of a parameter type. */
export function typeRules(type: ParamType): TypeRules {
  return rules[type];
}

/**
 * The ClickHouse type a parameter is bound as: Nullable only when it is optional, has no default and
 * its type has no empty value of its own (a string is '' and a list is [] when absent), so `LIMIT @top`
 * works for a required or defaulted integer.
 */
export function clickhouseType(param: Pick<ParamDefinition, 'type' | 'required' | 'default'>): string {
  const { clickhouse, nullable } = rules[param.type];
  return nullable && !param.required && param.default === undefined ? `Nullable(${clickhouse})` : clickhouse;
}

/** The value bound for a parameter's canonical text ('' = absent). */
export function bindValue(param: ParamDefinition, text: string): BoundValue {
  const r = rules[param.type];
  if (text === '') return r.nullable ? null : r.bind(text);
  return r.bind(text);
}

/** Whether a canonical value is within the parameter's `min` and `max` (which only numbers have). */
export function withinBounds(param: Pick<ParamDefinition, 'min' | 'max'>, text: string): boolean {
  const n = Number(text);
  return (param.min === undefined || n >= param.min) && (param.max === undefined || n <= param.max);
}

/** The bounds of a parameter as text, for messages: "from 1 to 90", "at least 1", "at most 90". */
export function boundsText(param: Pick<ParamDefinition, 'min' | 'max'>): string {
  if (param.min !== undefined && param.max !== undefined) return `from ${param.min} to ${param.max}`;
  if (param.min !== undefined) return `at least ${param.min}`;
  if (param.max !== undefined) return `at most ${param.max}`;
  return '';
}

/** The items a value is checked against `allowed` as: a list's items, or the value itself. */
export function allowedItems(param: Pick<ParamDefinition, 'type'>, text: string): string[] {
  return param.type === 'string[]' ? splitList(text) : [text];
}

