import type { Node, Pair, YAMLError } from 'yaml';
import { lazyRequire, nodeCrypto } from '../lazy.js';
import { closest } from '../suggest.js';
import { clickhouseType, patternError } from './param-types.js';
import { checkValue } from './params.js';
import { parseIsoTimestamp } from '../time.js';
import { keptVersionOf, MAX_VERSION } from './version-ref.js';
import { NOW_PARAM, NOW_TYPE, SQL_PARAM, paramUses, semicolons, toClickHouseParams } from './sql.js';
import {
  describeNode,
  flag,
  isMap,
  isNull,
  isScalar,
  isSeq,
  keyName,
  LineIndex,
  mapEntries,
  Problem,
  readKeys,
  scalarValue,
  text_,
  unknownKey,
  valueText,
  wholeNumber,
  yaml,
  yamlKeysOf,
  yamlMessage,
  type LineOf,
} from './yaml-reading.js';
import { FIELD_TYPES, NAME_PATTERN, PARAM_TYPES, type FieldDefinition, type FieldType, type ParamDefinition, type ParamType, type QueryLimits, type SavedQuery } from './types.js';

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PARAM_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** The namespace of derived ids: RFC 4122's URL namespace (README, "The header"). */
const ID_NAMESPACE = '6ba7b811-9dad-11d1-80b4-00c04fd430c8';
const MAX_ROWS_LIMIT = 1_000_000;

const HEADER_KEYS = ['name', 'id', 'version', 'sunset', 'deprecated', 'description', 'params', 'fields', 'max_rows', 'cache', 'warm', 'timeout', 'sandbox', 'stale_if_error', 'limits'];

/** The keys of `limits:`, each a setting of the engine's that savedq sets on every statement of the query, and its largest value. */
const LIMIT_MAX: { readonly [K in keyof Required<QueryLimits>]: number } = { read_rows: 1e15, read_bytes: 1e15, result_bytes: 1e15, threads: 1024 };
const LIMIT_KEYS = Object.keys(LIMIT_MAX) as (keyof QueryLimits)[];

/** A day: how long past its expiry a cached answer may be served while no host of the warehouse answers (stale_if_error's default). */
const STALE_IF_ERROR_SECONDS = 86_400;
const PARAM_KEYS = ['type', 'required', 'default', 'allowed', 'other', 'min', 'max', 'description'];
const FIELD_KEYS = ['type', 'description'];

/** Something wrong with a definition, at a line of its file. */
export interface DefinitionProblem {
  readonly file: string;
  /** 1-based line of the file. */
  readonly line: number;
  readonly message: string;
}

/** A definition read from its file: the query, or what is wrong with it. */
export type ReadDefinition =
  | { readonly query: SavedQuery; readonly problems?: undefined; readonly lines: { readonly name: number; readonly id: number } }
  | {
      readonly query?: undefined;
      readonly problems: readonly DefinitionProblem[];
      /** The name and id the header gives, those that read well (none when the header is no YAML map). */
      readonly declared?: { readonly name: string | undefined; readonly id: string | undefined };
    };

/** The UUID package, a bundle of its own: it loads node:crypto, which a cache hit never needs. */
const uuid = lazyRequire<typeof import('uuid')>('uuid', 'uuid.cjs');

/** The id a query gets when its header has none: the same on every machine. */
export function derivedId(name: string): string {
  return uuid().v5(`savedq:${name}`, ID_NAMESPACE);
}

/** Whether text is a UUID. */
export function isUuid(text: string): boolean {
  return UUID_PATTERN.test(text);
}

/**
 * Reads a saved query's definition: the YAML header in the file's leading block comment, then the SQL
 * (README, "The header"). Every problem is reported with its line; a definition with any problem yields no query.
 *
 * @param stem the file's name without `.sql`: the query's name when the header gives none (without `@N`,
 *   which names the version the file keeps).
 */
export function readDefinition(file: string, text: string, stem: string, builtin: boolean): ReadDefinition {
  const lines = new LineIndex(text);
  // `<name>@<N>.sql` keeps version N of the query <name> (docs/queries.md, "Versions").
  const kept = keptVersionOf(stem);
  const defaultName = kept?.name ?? stem;
  const problems: DefinitionProblem[] = [];
  const problem = (line: number, message: string) => problems.push({ file, line, message });

  // The header: a block comment before anything else but blank space.
  const start = /^\uFEFF?\s*/.exec(text)?.[0].length ?? 0;
  let headerText = '';
  let headerOffset = 0;
  let sqlOffset = 0;
  if (text.startsWith('/*', start)) {
    const end = text.indexOf('*/', start + 2);
    if (end < 0) return { problems: [{ file, line: lines.lineAt(start), message: 'the header comment never ends: no */ after /*.' }] };
    headerOffset = start + 2;
    headerText = text.slice(headerOffset, end);
    sqlOffset = end + 2;
  } else if (frontMatter(text.slice(start))) {
    return { problems: [{ file, line: lines.lineAt(start), message: 'a header between --- lines is read as SQL: put it in a /* … */ comment before the SQL.' }] };
  }

  const header = parseHeader(headerText, (offset) => lines.lineAt(headerOffset + offset), problem);
  const sql = text.slice(sqlOffset);
  if (!header) return { problems };
  // A run by the name or id the header gives is told what is wrong, wherever in the file that is. Every
  // problem of the file is told at once: the SQL is checked too when the header has problems of its own.
  const broken = (): ReadDefinition => ({ problems: problems.sort((a, b) => a.line - b.line), declared: { name: header.name, id: header.id } });

  const sqlStart = sqlOffset + (/^\s*/.exec(sql)?.[0].length ?? 0);
  if (sql.trim() === '') problem(lines.lineAt(sqlOffset), 'no SQL after the header.');
  const { final, breaks } = semicolons(sql);
  for (const offset of breaks) {
    problem(lines.lineAt(sqlOffset + offset), 'a saved query is one statement: nothing may follow its ;.');
  }

  const name = header.name ?? defaultName;
  if (header.name === undefined && !NAME_PATTERN.test(name)) {
    problem(1, `the file name gives the query the name '${name}', which is not a valid name: lowercase letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64; set name: in the header or rename the file.`);
  }
  const version = kept?.version ?? header.version;
  if (kept && header.name !== undefined && header.name !== kept.name) {
    problem(header.lines.name, `this file keeps version ${kept.version} of '${kept.name}' (its name says so), but its header names '${header.name}': name it ${header.name}@${kept.version}.sql or drop name:.`);
  }
  if (kept && header.versionLine > 0 && header.version !== kept.version) {
    problem(header.versionLine, `this file keeps version ${kept.version} (its name ends @${kept.version}), but its header says version: ${header.version}.`);
  }
  if (!kept && header.sunset) {
    problem(header.sunset.line, `sunset: retires an older version kept in its own file (${name}@<N>.sql, savedq version ${name}); the current version cannot be retired.`);
  }
  if (!kept && header.deprecated) {
    problem(header.deprecated.line, `deprecated: marks an older version kept in its own file (${name}@<N>.sql); the current version is not deprecated.`);
  }
  if (header.sunset && header.deprecated && header.deprecated.ms > header.sunset.ms) {
    problem(header.deprecated.line, 'deprecated: must not be later than sunset: (RFC 9745).');
  }

  // Every @name must be declared, and every declared parameter used (one with a problem of its own too).
  const declared = new Map(header.named.map((p) => [p.name, p]));
  const used = new Set<string>();
  for (const use of paramUses(sql)) {
    used.add(use.name);
    if (use.name !== NOW_PARAM && !declared.has(use.name)) {
      const guess = closest(use.name, [...declared.keys()]);
      problem(
        lines.lineAt(sqlOffset + use.offset),
        `@${use.name} is used but not declared under params.${guess ? ` Did you mean @${guess}?` : ''}`,
      );
    }
  }
  for (const { name: param, line } of header.named) {
    if (!used.has(param)) problem(line, `parameter '${param}' is declared but the SQL never uses @${param}.`);
  }
  // In the order of the file, as an editor walks them (the checks above go by kind).
  if (problems.length > 0) return broken();

  const params = header.params.map((p) => p.definition);
  const types = new Map(params.map((p) => [p.name, clickhouseType(p)]));
  types.set(NOW_PARAM, NOW_TYPE);
  // A final ; goes: the library appends the query's settings after the statement.
  const body = (final === undefined ? sql : sql.slice(0, final) + sql.slice(final + 1)).trim();
  return {
    query: {
      name,
      id: header.id ?? derivedId(name),
      version,
      ...(kept ? { kept: true } : {}),
      ...(header.sunset ? { sunsetMs: header.sunset.ms } : {}),
      ...(header.deprecated ? { deprecatedMs: header.deprecated.ms } : {}),
      description: header.description,
      params,
      fields: header.fields,
      fieldsLine: header.fieldsLine,
      maxRows: header.maxRows,
      cacheSeconds: header.cache,
      warmSeconds: header.warm,
      sandbox: header.sandbox,
      ...(header.timeout === undefined ? {} : { timeoutSeconds: header.timeout }),
      staleIfErrorSeconds: header.staleIfError,
      limits: header.limits,
      file,
      builtin,
      sql: body,
      sqlLine: lines.lineAt(sqlStart),
      boundSql: toClickHouseParams(body, types),
      digest: definitionDigest(body, params, header.maxRows, version),
    },
    lines: header.lines,
  };
}

/**
 * The digest of what decides a query's result: its SQL, its parameters, its row limit and its version
 * (each version its own cache key, even with the same SQL; version 1 adds nothing, so the keys of
 * queries made before versions stay as they were).
 */
function definitionDigest(sql: string, params: readonly ParamDefinition[], maxRows: number, version: number): string {
  const shape = params.map(({ description: _description, ...rest }) => rest);
  const parts = version === 1 ? [sql, shape, maxRows] : [sql, shape, maxRows, version];
  return nodeCrypto().createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 22);
}

/** A date or an instant of the header (sunset:, deprecated:), as milliseconds since the epoch. */
function instant(node: Node | null, line: number, what: string): number {
  const value = scalarValue(node);
  const text = typeof value === 'string' ? value : undefined; // YAML 1.2 reads a date as text
  const micros = text === undefined ? undefined : parseIsoTimestamp(text);
  if (micros === undefined) throw new Problem(line, `${what} must be a date (2027-01-31) or an instant (2027-01-31T12:00:00Z).`);
  return Number(micros / 1000n);
}

/** The header's settings, read and checked. */
interface Header {
  name: string | undefined;
  id: string | undefined;
  /** Lines of the name and the id (1, the file's first, when the header gives none). */
  lines: { name: number; id: number };
  description: string;
  params: { definition: ParamDefinition; line: number }[];
  /** Every parameter the header names, those with a problem too: what the SQL is checked against. */
  named: { name: string; line: number }[];
  fields: FieldDefinition[];
  fieldsLine: number;
  version: number;
  /** The line of `version:`; 0 when the header gives none. */
  versionLine: number;
  sunset: { ms: number; line: number } | undefined;
  deprecated: { ms: number; line: number } | undefined;
  maxRows: number;
  cache: number;
  warm: number;
  timeout: number | undefined;
  sandbox: boolean;
  staleIfError: number;
  limits: QueryLimits;
}

/**
 * Whether a file opens with a header written as Markdown's front matter (YAML between `---` lines, keys
 * savedq knows among them): to SQL, its first line is a comment and its keys a syntax error.
 */
function frontMatter(text: string): boolean {
  const block = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(text)?.[1];
  if (block === undefined) return false;
  const read = yamlKeysOf(block, 'a header', HEADER_KEYS);
  return 'root' in read && read.root.items.some(({ key }) => isScalar(key) && HEADER_KEYS.includes(String(key.value)));
}

/**
 * Reads the YAML header and reports each problem: undefined when it is no YAML map, else what read
 * well of it (a key with a problem is left at its default).
 */
function parseHeader(
  text: string,
  lineOf: (offset: number) => number,
  problem: (line: number, message: string) => void,
): Header | undefined {
  const { LineCounter, parseDocument } = yaml();
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, intAsBigInt: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    // The first error only: the parser's later ones mostly follow from it. One found only at the end of
    // the header (an unclosed bracket) is shown on the header's last line.
    const [err] = doc.errors as [YAMLError, ...YAMLError[]];
    const last = Math.max(0, text.trimEnd().length - 1);
    // `[` opens a list inside { }: the one type name with brackets needs quotes there.
    const hint = /\{[^}\n]*\bstring\[\][^}\n]*\}/.test(text) ? " (inside { } write 'string[]' in quotes)" : '';
    problem(lineOf(Math.min(err.pos[0], last)), `the header is not valid YAML: ${yamlMessage(err.message)}${hint}`);
    return undefined;
  }
  const header: Header = { name: undefined, id: undefined, lines: { name: 1, id: 1 }, description: '', params: [], named: [], fields: [], fieldsLine: 1, version: 1, versionLine: 0, sunset: undefined, deprecated: undefined, maxRows: 1000, cache: 0, warm: 0, timeout: undefined, sandbox: false, staleIfError: STALE_IF_ERROR_SECONDS, limits: {} };
  const root = doc.contents;
  if (root === null || (isScalar(root) && root.value === null)) return header;
  const at: LineOf = (node) => lineOf(node?.range?.[0] ?? 0);
  if (!isMap(root)) {
    problem(at(root), `the header must be YAML keys (${HEADER_KEYS.join(', ')}), not ${describeNode(root)}.`);
    return undefined;
  }

  const attempt = (fn: () => void) => {
    try {
      fn();
    } catch (err) {
      if (!(err instanceof Problem)) throw err;
      problem(err.line, err.message);
    }
  };
  let warmLine = 0;
  readKeys(mapEntries(root, 0, 'the header', at), {
    name: (value, line) => {
      const name = text_(value, line, 'name');
      if (!NAME_PATTERN.test(name)) throw new Problem(line, `invalid name '${name}': lowercase letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64.`);
      header.name = name;
      header.lines.name = line;
    },
    id: (value, line) => {
      const id = text_(value, line, 'id');
      if (!isUuid(id)) throw new Problem(line, `invalid id '${id}': expected a UUID such as 1b4e28ba-2fa1-41d2-883f-0016d3cca427.`);
      header.id = id.toLowerCase();
      header.lines.id = line;
    },
    version: (value, line) => {
      header.version = wholeNumber(value, line, 'version', 1, MAX_VERSION);
      header.versionLine = line;
    },
    sunset: (value, line) => void (header.sunset = { ms: instant(value, line, 'sunset'), line }),
    deprecated: (value, line) => void (header.deprecated = { ms: instant(value, line, 'deprecated'), line }),
    description: (value, line) => void (header.description = text_(value, line, 'description')),
    params: (value, line) => {
      for (const [paramPair, paramLine] of mapEntries(value, line, 'params', at)) {
        attempt(() => {
          const name = keyName(paramPair, paramLine, 'parameter name');
          if (PARAM_NAME_PATTERN.test(name)) header.named.push({ name, line: paramLine });
          const definition = readParam(paramPair, paramLine, at, problem);
          if (definition) header.params.push({ definition, line: paramLine });
        });
      }
    },
    fields: (value, line, pair) => {
      header.fieldsLine = at(pair.key);
      for (const [fieldPair, fieldLine] of mapEntries(value, line, 'fields', at)) attempt(() => header.fields.push(readField(fieldPair, fieldLine, at)));
    },
    max_rows: (value, line) => void (header.maxRows = wholeNumber(value, line, 'max_rows', 1, MAX_ROWS_LIMIT)),
    cache: (value, line) => void (header.cache = wholeNumber(value, line, 'cache', 0, 31_536_000)),
    warm: (value, line) => {
      header.warm = wholeNumber(value, line, 'warm', 0, 31_536_000);
      warmLine = line;
    },
    timeout: (value, line) => void (header.timeout = wholeNumber(value, line, 'timeout', 1, 86_400)),
    sandbox: (value, line) => void (header.sandbox = flag(value, line, 'sandbox')),
    stale_if_error: (value, line) => void (header.staleIfError = wholeNumber(value, line, 'stale_if_error', 0, 31_536_000)),
    limits: (value, line) => {
      const limits: Partial<Record<keyof QueryLimits, number>> = {};
      const read = (key: keyof QueryLimits) => (node: Node | null, keyLine: number) => attempt(() => void (limits[key] = wholeNumber(node, keyLine, `limits: ${key}`, 1, LIMIT_MAX[key])));
      readKeys(mapEntries(value, line, 'limits', at), Object.fromEntries(LIMIT_KEYS.map((key) => [key, read(key)])), 'limits', at, problem);
      header.limits = limits;
    },
  }, 'the header', at, problem);
  attempt(() => {
    if (header.warm > 0 && header.cache === 0) throw new Problem(warmLine, 'warm needs cache: a result that is never cached cannot be warmed.');
    if (header.warm > 0 && header.warm >= header.cache) {
      throw new Problem(warmLine, `warm (${header.warm} s) must be less than cache (${header.cache} s), or the result expires before it is warmed.`);
    }
  });
  return header;
}

/**
 * A parameter's declaration, or undefined when a setting of it has a problem, each told to `problem`
 * (an unknown key, read as the key it was surely meant to be) or thrown (the first of the others).
 */
function readParam(pair: Pair<Node, Node | null>, line: number, at: LineOf, problem: (line: number, message: string) => void): ParamDefinition | undefined {
  const name = keyName(pair, line, 'parameter name');
  if (!PARAM_NAME_PATTERN.test(name)) {
    throw new Problem(line, `invalid parameter name '${name}': letters, digits and '_', not starting with a digit.`);
  }
  if (name === NOW_PARAM) throw new Problem(line, `'${NOW_PARAM}' is reserved: @now is the instant the query runs as of (run --at); do not declare it.`);
  if (name === SQL_PARAM) throw new Problem(line, `'${SQL_PARAM}' is reserved: it carries a caller's own SQL over the answer (sandbox: true); name the parameter otherwise.`);
  // The settings as given (each read in its turn below: the type first, then what depends on it).
  const settings = new Map<string, { node: Node | null; line: number }>();
  const misspelled = readKeys(mapEntries(pair.value, line, `parameter '${name}'`, at), Object.fromEntries(PARAM_KEYS.map((key) => [key, (node: Node | null, valueLine: number) => void settings.set(key, { node, line: valueLine })])), `parameter '${name}'`, at, problem) > 0;
  const get = (key: string) => settings.get(key);
  const what = (key: string) => `${key} of parameter '${name}'`;

  const typeSetting = get('type');
  const type = (typeSetting ? text_(typeSetting.node, typeSetting.line, what('type')) : 'string') as ParamType;
  if (!PARAM_TYPES.includes(type)) throw unknownKey(type, [...PARAM_TYPES], `parameter '${name}'`, typeSetting?.line ?? line, 'type');

  const required = get('required') ? flag(get('required')?.node ?? null, get('required')?.line ?? line, what('required')) : false;
  const description = get('description') ? text_(get('description')?.node ?? null, get('description')?.line ?? line, what('description')) : '';

  const numeric = type === 'integer' || type === 'number';
  const bound = (key: 'min' | 'max'): number | undefined => {
    const setting = get(key);
    if (!setting) return undefined;
    if (!numeric) throw new Problem(setting.line, `${key} applies only to integer and number parameters, not to '${name}' (${type}).`);
    const value = scalarValue(setting.node);
    const n = typeof value === 'bigint' ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isFinite(n) || (type === 'integer' && !Number.isInteger(n))) {
      throw new Problem(setting.line, `${what(key)} must be ${type === 'integer' ? 'an integer' : 'a number'}.`);
    }
    return n;
  };
  const min = bound('min');
  const max = bound('max');
  if (min !== undefined && max !== undefined && min > max) throw new Problem(get('min')?.line ?? line, `min (${min}) of parameter '${name}' is greater than its max (${max}).`);

  // Checked as values of the parameter's own type, the way a value from the command line is.
  const shape: ParamDefinition = { name, type, description, required, other: 'reject', ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) };
  const asValue = (node: Node | null, valueLine: number, key: string, of: ParamDefinition): string => {
    const raw = valueText(node, valueLine, what(key), type === 'string[]');
    const checked = checkValue(of, raw);
    if ('reason' in checked) throw new Problem(valueLine, `${what(key)} ${JSON.stringify(raw)} is not ${checked.reason}.`);
    const badPattern = type === 'regex' ? patternError(checked.value) : undefined;
    if (badPattern !== undefined) throw new Problem(valueLine, `${what(key)} ${JSON.stringify(raw)} is not an RE2 regular expression (${badPattern}).`);
    return checked.value;
  };

  let allowed: string[] | undefined;
  const allowedSetting = get('allowed');
  if (allowedSetting) {
    const node = allowedSetting.node;
    if (!isSeq(node) || node.items.length === 0) throw new Problem(allowedSetting.line, `${what('allowed')} must be a non-empty list of values.`);
    const itemType = { ...shape, type: type === 'string[]' ? ('string' as const) : type };
    allowed = (node.items as Node[]).map((item) => {
      const value = asValue(item, at(item), 'allowed', itemType);
      if (type === 'string[]' && value.includes(',')) throw new Problem(at(item), `${what('allowed')}: an item of a string[] cannot hold a comma.`);
      return value;
    });
  }

  const otherSetting = get('other');
  const other = otherSetting ? text_(otherSetting.node, otherSetting.line, what('other')) : 'reject';
  if (other !== 'reject' && other !== 'default') throw new Problem(otherSetting?.line ?? line, `${what('other')} must be reject or default, not '${other}'.`);
  if (otherSetting && !allowed) throw new Problem(otherSetting.line, `other of parameter '${name}' needs allowed: it says what a value outside allowed does.`);

  let defaultValue: string | undefined;
  const defaultSetting = get('default');
  if (defaultSetting && !isNull(defaultSetting.node)) {
    if (required) throw new Problem(defaultSetting.line, `parameter '${name}' is required, so a default would never be used; drop one of them.`);
    // A default outside `allowed` is refused even when `other: default` would let a value fall back to it.
    defaultValue = asValue(defaultSetting.node, defaultSetting.line, 'default', { ...shape, ...(allowed ? { allowed } : {}) });
    if (defaultValue === '') defaultValue = undefined;
  }
  if (other === 'default' && defaultValue === undefined) {
    throw new Problem(otherSetting?.line ?? line, `other: default of parameter '${name}' needs a default value to fall back to.`);
  }

  // Read whole, for what else is wrong with it; not a declaration while a key of it is misspelled.
  if (misspelled) return undefined;
  return {
    ...shape,
    other: other,
    ...(allowed ? { allowed } : {}),
    ...(defaultValue !== undefined ? { default: defaultValue } : {}),
  };
}

function readField(pair: Pair<Node, Node | null>, line: number, at: LineOf): FieldDefinition {
  const name = keyName(pair, line, 'field name');
  const field = { name, type: 'string' as FieldType, description: '', line };
  if (isNull(pair.value)) return field;
  for (const [setting, settingLine] of mapEntries(pair.value, line, `field '${name}'`, at)) {
    const key = keyName(setting, settingLine, 'key');
    const valueLine = setting.value ? at(setting.value) : settingLine;
    if (key === 'type') {
      const type = text_(setting.value, valueLine, `type of field '${name}'`);
      if (!(FIELD_TYPES as readonly string[]).includes(type)) throw unknownKey(type, [...FIELD_TYPES], `field '${name}'`, valueLine, 'type');
      field.type = type as FieldType;
    } else if (key === 'description') {
      field.description = text_(setting.value, valueLine, `description of field '${name}'`);
    } else {
      throw unknownKey(key, FIELD_KEYS, `field '${name}'`, settingLine);
    }
  }
  return field;
}
