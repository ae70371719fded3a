import { BadSqlError, SandboxRefusedError, WarehouseError, type EngineFailure } from '../errors.js';
import { readSqlFile } from '../package.js';
import { engineSays, isRefusal } from '../warehouse/errors.js';
import type { Warehouse } from '../warehouse/index.js';

/** The longest SQL a caller may send (docs/sandboxing.md). */
export const MAX_SANDBOX_SQL_BYTES = 16 * 1024;
/** The table a caller's SQL reads: the saved query's answer for the call's parameters. */
export const RESULT_TABLE = 'result';

/** The functions a caller's SQL may call: sql/sandbox-functions.json, decided by scripts/sandbox-functions.mjs. */
export interface FunctionDecisions {
  readonly engine: string;
  readonly allowed: readonly string[];
  readonly refused: Readonly<Record<string, string>>;
  /** Allowed functions the engine takes in any case, lower-cased. */
  readonly anyCase: readonly string[];
  readonly aggregates: readonly string[];
  /** The engine's aggregate combinators (`If`, `State`, …), the longest first. */
  readonly combinators: readonly string[];
}

/** The decisions file, as scripts/sandbox-functions.mjs wrote it. */
export function functionDecisions(): FunctionDecisions {
  return JSON.parse(readSqlFile('sandbox-functions.json')) as FunctionDecisions;
}

let decided: { allowed: Set<string>; anyCase: Set<string>; aggregates: Set<string>; refused: FunctionDecisions['refused']; combinators: readonly string[] } | undefined;

/** The decisions as sets, read once, when a caller's SQL is first checked. */
function decisions(): NonNullable<typeof decided> {
  if (!decided) {
    const d = functionDecisions();
    decided = { allowed: new Set(d.allowed), anyCase: new Set(d.anyCase), aggregates: new Set(d.aggregates), refused: d.refused, combinators: d.combinators };
  }
  return decided;
}

/** Why a caller's SQL may not call a function, or undefined when it may. */
function functionRefusal(name: string): string | undefined {
  const d = decisions();
  if (d.allowed.has(name) || d.anyCase.has(name.toLowerCase())) return undefined;
  // sumIf, uniqMerge, avgStateIf, quantilesTDigestForEach: an allowed aggregate and combinators.
  for (let base = name, suffix; (suffix = d.combinators.find((c) => base.length > c.length && base.endsWith(c))) !== undefined; ) {
    base = base.slice(0, -suffix.length);
    if (d.aggregates.has(base)) return undefined;
  }
  const reason = Object.hasOwn(d.refused, name) ? d.refused[name] : undefined;
  return reason === undefined ? `the function ${name}: the engine has none of that name savedq lets a caller's SQL call` : `the function ${name}: it ${reason}`;
}

/** One node of the engine's parse: its kind, the rest of its line (a name, an alias), and its children. */
interface AstNode {
  readonly kind: string;
  readonly text: string;
  readonly children: AstNode[];
}

/** The tree `EXPLAIN AST` prints, a node a line, each one space deeper than its parent. */
function treeOf(lines: readonly string[]): AstNode {
  const root: AstNode = { kind: '', text: '', children: [] };
  const path: AstNode[] = [root];
  for (const line of lines) {
    const depth = line.length - line.trimStart().length;
    const body = line.trim().replace(/ \(children \d+\)$/, '');
    const space = body.indexOf(' ');
    const node: AstNode = { kind: space < 0 ? body : body.slice(0, space), text: space < 0 ? '' : body.slice(space + 1), children: [] };
    (path[depth] ?? path[path.length - 1] ?? root).children.push(node);
    path.length = depth + 1;
    path[depth + 1] = node;
  }
  return root;
}

/** A node's name as the tree prints it: `TableIdentifier result (alias r)` is `result`. */
function nameOf(node: AstNode): string {
  return node.text.replace(/ \(alias .*\)$/, '');
}

/** Nodes that only hold others, or name a column, a literal or a window: taken as they are, their children walked. */
const PLAIN = new Set([
  'SelectWithUnionQuery', 'SelectIntersectExceptQuery', 'SelectQuery', 'ExpressionList', 'Subquery', 'TablesInSelectQuery',
  'TablesInSelectQueryElement', 'TableJoin', 'ArrayJoin', 'WithElement', 'Identifier', 'Literal', 'Asterisk', 'QualifiedAsterisk',
  'ColumnsRegexpMatcher', 'ColumnsListMatcher', 'QualifiedColumnsRegexpMatcher', 'QualifiedColumnsListMatcher', 'ColumnsTransformerList',
  'ColumnsExceptTransformer', 'ColumnsReplaceTransformer', 'ColumnsApplyTransformer', 'ColumnsReplaceTransformerReplacement',
  'OrderByElement', 'WindowDefinition', 'WindowListElement', 'InterpolateElement', 'TableExpression', 'TableIdentifier', 'Function',
]);
/** What each refused kind of node is, for the refusal's message. */
const REFUSED_KINDS: Record<string, string> = {
  Set: 'a SETTINGS clause: the query runs with its own settings',
  QueryParameter: 'a query parameter ({name:Type}): write the value itself',
  SampleRatio: 'SAMPLE: result is not a table of the engine\'s',
};
/** Functions whose second argument, a bare name, is read as a table. */
const SET_FUNCTIONS = new Set(['in', 'notIn', 'nullIn', 'notNullIn']);

/**
 * The refusal of a caller's parsed statement, or undefined when every table it reads is `result` or
 * one of its own WITH names (checked apart to be none of the engine's tables, so a name used outside
 * its WITH is an error of the engine's, never another table). Allowed by list: a node of a kind not
 * known here is refused.
 */
export function refusalOf(lines: readonly string[], withNames: ReadonlySet<string>): string | undefined {
  const root = treeOf(lines);
  const top = root.children[0];
  if (root.children.length !== 1 || top?.kind !== 'SelectWithUnionQuery') return 'a statement that is not a SELECT: send one SELECT over result';
  // A FORMAT or INTO OUTFILE hangs from the statement beside its SELECTs.
  if (top.children.length !== 1 || top.children[0]?.kind !== 'ExpressionList') return 'FORMAT or INTO OUTFILE: the answer comes in the format the call asks for';
  const tableRefusal = (name: string) =>
    name === RESULT_TABLE || withNames.has(name) ? undefined : `the table ${name}: SQL sent to a query reads only ${RESULT_TABLE} (its answer) and its own WITH names`;
  const walk = (node: AstNode): string | undefined => {
    const refused = REFUSED_KINDS[node.kind];
    if (refused !== undefined) return refused;
    if (!PLAIN.has(node.kind)) return `${node.kind}, which SQL sent to a query may not hold`;
    if (node.kind === 'TableIdentifier') {
      const t = tableRefusal(nameOf(node));
      if (t) return t;
    }
    if (node.kind === 'TableExpression') {
      const fn = node.children.find((c) => c.kind === 'Function');
      if (fn) return `the table function ${nameOf(fn)}: SQL sent to a query reads only ${RESULT_TABLE} (its answer) and its own WITH names`;
    }
    if (node.kind === 'Function') {
      const name = nameOf(node);
      const refusedFunction = functionRefusal(name);
      if (refusedFunction) return refusedFunction;
      const right = SET_FUNCTIONS.has(name) ? node.children[0]?.children[1] : undefined;
      if (right?.kind === 'Identifier') {
        const t = tableRefusal(nameOf(right));
        if (t) return t;
      }
    }
    for (const child of node.children) {
      const found = walk(child);
      if (found) return found;
    }
    return undefined;
  };
  return walk(top);
}

/**
 * The names a statement's WITH elements define, from the engine's own formatting of it (the parse does
 * not print them, docs/sandboxing.md): a plain name followed by ` AS (` and a query (a named window's ` AS (`
 * is followed by ORDER BY or PARTITION BY), quoted text and quoted names stepped over. A WITH element
 * with a quoted name is not found, so a table of that name is refused: names are plain.
 */
export function withNamesOf(formatted: string): string[] {
  const names: string[] = [];
  const element = /^([A-Za-z_][A-Za-z0-9_]*) AS \((?=SELECT |WITH |\()/;
  for (let i = 0; i < formatted.length; i += 1) {
    const c = formatted[i];
    if (c === "'" || c === '"') {
      // Quoted text or a quoted name: to its closing quote, a backslash escaping the next character.
      for (i += 1; i < formatted.length && formatted[i] !== c; i += formatted[i] === '\\' ? 2 : 1);
      continue;
    }
    const m = /[\s(,]/.test(formatted[i - 1] ?? ' ') ? element.exec(formatted.slice(i)) : null;
    if (m?.[1] !== undefined) {
      names.push(m[1]);
      i += m[1].length - 1;
    } else if (c === '`') {
      for (i += 1; i < formatted.length && formatted[i] !== '`'; i += formatted[i] === '\\' ? 2 : 1);
    }
  }
  return names;
}

/**
 * The engine's formatting of a statement it makes of bound text (`formatting`, an expression over the
 * bound parameters), and its parse of that statement (`EXPLAIN AST`, sent through exec so that no
 * FORMAT or SETTINGS is appended to bind to it). What the engine cannot parse is a BadSqlError; a
 * query parameter left in the text is refused.
 */
async function enginesParse(warehouse: Warehouse, formatting: string, values: Record<string, string>): Promise<{ formatted: string; lines: string[] }> {
  let formatted: string;
  try {
    const [row] = await warehouse.query(`SELECT ${formatting} AS f`, values, { readonly: '1' });
    formatted = String(row?.f ?? '');
  } catch (err) {
    throw sqlError(err);
  }
  try {
    return { formatted, lines: await warehouse.explainAst(formatted) };
  } catch (err) {
    if (err instanceof WarehouseError && (err.engine?.type === 'UNKNOWN_QUERY_PARAMETER' || err.engine?.code === 456)) {
      throw new SandboxRefusedError('refused: a query parameter ({name:Type}); write the value itself.');
    }
    throw sqlError(err);
  }
}

/**
 * Checks a caller's SQL on the engine's own parse (docs/sandboxing.md): the text reaches the engine only as a
 * bound parameter of `formatQuerySingleLine`, which refuses more than one statement; the one statement
 * that comes back, in the engine's spelling, is explained (`EXPLAIN AST`) and walked. A refusal is a
 * SandboxRefusedError naming the first thing refused; SQL the engine cannot parse is a BadSqlError.
 * Returns the statement as the engine formats it: what runs over `result`.
 */
export async function checkSandboxSql(warehouse: Warehouse, sql: string): Promise<string> {
  if (Buffer.byteLength(sql) > MAX_SANDBOX_SQL_BYTES) throw new SandboxRefusedError(`the SQL is longer than ${MAX_SANDBOX_SQL_BYTES / 1024} KiB; send less.`);
  if (sql.trim() === '') throw new BadSqlError('the SQL is empty.');
  const { formatted, lines } = await enginesParse(warehouse, 'formatQuerySingleLine({q:String})', { q: sql });
  const withNames = new Set(withNamesOf(formatted));
  if (withNames.has(RESULT_TABLE)) throw new SandboxRefusedError(`refused: a WITH element named ${RESULT_TABLE}, the query's own answer.`);
  // A WITH name that is a table of the engine's would be that table wherever the WITH is not seen.
  if (withNames.size > 0) {
    const engineTables = await warehouse.query('SELECT name FROM system.tables WHERE database = currentDatabase() AND has({names:Array(String)}, name)', { names: [...withNames] }, { readonly: '1' });
    const taken = engineTables[0]?.name;
    if (taken !== undefined) throw new SandboxRefusedError(`refused: a WITH element named ${String(taken)}, a table of the engine's; name it otherwise.`);
  }
  const refused = refusalOf(lines, withNames);
  if (refused) throw new SandboxRefusedError(`refused: ${refused}.`);
  return formatted;
}

/** The statement an alert's `when` becomes, the engine joining the two: its rows are the answer's rows that match. */
const CONDITION_PREFIX = `SELECT * FROM ${RESULT_TABLE} WHERE `;

/**
 * Checks an alert's `when` (docs/alerts.md): an expression over one row of the answer, its fields and
 * functions of them, nothing else. The text reaches the engine only as a bound parameter, which the
 * engine itself joins to `SELECT * FROM result WHERE ` and formats; the statement it gives back must
 * parse as exactly that SELECT and a WHERE (no other clause, no UNION, no subquery, no aggregate), and
 * pass the same check as any SQL sent to a query. Returns that statement as the engine formats it.
 */
export async function checkSandboxCondition(warehouse: Warehouse, when: string): Promise<string> {
  if (Buffer.byteLength(when) > MAX_SANDBOX_SQL_BYTES) throw new SandboxRefusedError(`the condition is longer than ${MAX_SANDBOX_SQL_BYTES / 1024} KiB.`);
  if (when.trim() === '') throw new BadSqlError('the condition is empty.');
  const { formatted, lines } = await enginesParse(warehouse, 'formatQuerySingleLine(concat({prefix:String}, {w:String}))', { prefix: CONDITION_PREFIX, w: when });
  const shape = conditionRefusal(lines);
  if (shape) throw new SandboxRefusedError(`refused: ${shape}.`);
  const refused = refusalOf(lines, new Set());
  if (refused) throw new SandboxRefusedError(`refused: ${refused}.`);
  return formatted;
}

/** Why a parse is not `SELECT * FROM result WHERE <one expression over a row>`, or undefined when it is. */
function conditionRefusal(lines: readonly string[]): string | undefined {
  const select = treeOf(lines).children[0]?.children[0];
  const parts = select?.children.length === 1 ? select.children[0]?.children : undefined;
  const [columns, tables, where] = parts ?? [];
  const plain =
    parts?.length === 3 &&
    columns?.kind === 'ExpressionList' &&
    columns.children.length === 1 &&
    columns.children[0]?.kind === 'Asterisk' &&
    tables?.kind === 'TablesInSelectQuery' &&
    tables.children.length === 1;
  if (!plain || !where) return 'a condition that is more than an expression over a row: write when_sql for a SELECT of your own';
  const walk = (node: AstNode): string | undefined => {
    if (node.kind === 'Subquery') return 'a subquery in a condition: when reads one row; write when_sql to read more';
    if (node.kind === 'Function' && isAggregate(nameOf(node))) return `the aggregate ${nameOf(node)} in a condition: when reads one row; write when_sql to aggregate`;
    if (node.kind === 'WindowDefinition') return 'a window function in a condition: when reads one row; write when_sql';
    for (const child of node.children) {
      const found = walk(child);
      if (found) return found;
    }
    return undefined;
  };
  return walk(where);
}

/** Whether a function is an aggregate, combinators and all (`countIf`, `sumState`). */
function isAggregate(name: string): boolean {
  const d = decisions();
  for (let base = name, suffix; ; base = base.slice(0, -suffix.length)) {
    if (d.aggregates.has(base) || d.aggregates.has(base.toLowerCase())) return true;
    suffix = d.combinators.find((c) => base.length > c.length && base.endsWith(c));
    if (suffix === undefined) return false;
  }
}

/** The engine's objection to a caller's SQL, as the caller's mistake (never a path or an address). */
export function sqlError(err: unknown): Error {
  if (!isRefusal(err)) return err as Error;
  const engine = (err as WarehouseError).engine as EngineFailure;
  if (/Multi-statements are not allowed/i.test(engine.message)) return new SandboxRefusedError('refused: more than one statement; send one SELECT.');
  return new BadSqlError(`the SQL failed in the engine: ${engineSays(engine, { forCaller: true })}.`);
}
