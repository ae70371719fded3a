/** The instant the query runs "as of": a parameter every saved query may use, supplied by the library. */
export const NOW_PARAM = 'now';
/** The name a caller's own SQL over a sandboxed query's answer goes by (`?sql=`, `--sql`, MCP's `sql`): never a parameter's. */
export const SQL_PARAM = 'sql';
export const NOW_TYPE = "DateTime64(6, 'UTC')";

/** An `@name` in a query's SQL, and where it stands. */
export interface ParamUse {
  readonly name: string;
  /** Offset of the `@` in the SQL text. */
  readonly offset: number;
}

/** The `@name` tokens of SQL outside string literals, quoted identifiers and comments. */
export function paramUses(sql: string): ParamUse[] {
  const uses: ParamUse[] = [];
  walk(sql, (name, offset) => {
    uses.push({ name, offset });
    return '';
  });
  return uses;
}

/**
 * The `;` of SQL outside literals, quoted identifiers and comments: the one that ends the statement
 * (only blank space and comments after it), and any other. A saved query is one statement: the library
 * appends its read-only settings to it, and a second statement would run without them.
 */
export function semicolons(sql: string): { final: number | undefined; breaks: number[] } {
  const found: number[] = [];
  walk(sql, () => '', (offset) => found.push(offset));
  const last = found.at(-1);
  const endsHere = last !== undefined && sql.slice(last + 1).replace(/--[^\n]*|\/\*[\s\S]*?\*\//g, '').trim() === '';
  return endsHere ? { final: last, breaks: found.slice(0, -1) } : { final: undefined, breaks: found };
}

/**
 * The SQL with each `@name` turned into a typed ClickHouse query parameter `{name:Type}`: values are
 * never pasted into SQL, the engine binds them. Every name must have a type (definitions are checked
 * for that when they are read).
 */
export function toClickHouseParams(sql: string, types: ReadonlyMap<string, string>): string {
  return walk(sql, (name) => {
    const type = types.get(name);
    if (!type) throw new Error(`saved query uses undeclared parameter @${name}`);
    return `{${name}:${type}}`;
  });
}

const PARAM_TOKEN = /@([A-Za-z_][A-Za-z0-9_]*)/y;

/** Copies SQL, replacing each `@name` outside literals, quoted identifiers and comments (and telling each `;` there). */
function walk(sql: string, replace: (name: string, offset: number) => string, semicolon?: (offset: number) => void): string {
  let out = '';
  let i = 0;
  while (i < sql.length) {
    const ch = sql[i] as string;
    const next = sql[i + 1];
    let end = i + 1;
    if (ch === "'" || ch === '"' || ch === '`') {
      end = skipQuoted(sql, i, ch);
    } else if (ch === '-' && next === '-') {
      end = sql.indexOf('\n', i);
      if (end < 0) end = sql.length;
    } else if (ch === '/' && next === '*') {
      end = sql.indexOf('*/', i + 2);
      end = end < 0 ? sql.length : end + 2;
    } else if (ch === ';') {
      semicolon?.(i);
    } else if (ch === '@') {
      PARAM_TOKEN.lastIndex = i;
      const match = PARAM_TOKEN.exec(sql);
      if (match) {
        out += replace(match[1] as string, i);
        i += match[0].length;
        continue;
      }
    }
    out += sql.slice(i, end);
    i = end;
  }
  return out;
}

function skipQuoted(sql: string, start: number, quote: string): number {
  let i = start + 1;
  while (i < sql.length) {
    if (sql[i] === '\\') i += 2;
    else if (sql[i] === quote && sql[i + 1] === quote) i += 2;
    else if (sql[i] === quote) return i + 1;
    else i += 1;
  }
  return sql.length;
}
