import { readFileSync } from 'node:fs';
import { packageRoot } from '../package.js';
import type { EndpointDefinition, ParamDefinition } from './types.js';

/** The folder of SQL files: `sql/` at the package root. */
export const sqlDir = new URL('sql/', packageRoot);

/** The ClickHouse type each kind of parameter is bound as. */
const typeOfKind: Record<ParamDefinition['kind'], string> = {
  string: 'String',
  regex: 'String',
  timestamp: "Nullable(DateTime64(6, 'UTC'))",
};

/** The instant the query runs "as of", supplied by the library rather than by the caller. */
export const NOW_PARAM = 'now';
const NOW_TYPE = "DateTime64(6, 'UTC')";

/** Reads a file of `sql/`. */
export function readSqlFile(name: string): string {
  return readFileSync(new URL(name, sqlDir), 'utf8');
}

const cache = new Map<string, string>();

/**
 * The endpoint's SQL with each `@name` turned into a typed ClickHouse query parameter `{name:Type}`.
 * Values are never pasted into SQL: the engine binds them.
 */
export function endpointSql(endpoint: EndpointDefinition): string {
  let sql = cache.get(endpoint.name);
  if (sql === undefined) {
    const types = new Map<string, string>(endpoint.params.map((p) => [p.name, typeOfKind[p.kind]]));
    types.set(NOW_PARAM, NOW_TYPE);
    sql = toClickHouseParams(readSqlFile(`${endpoint.name}.sql`), types);
    cache.set(endpoint.name, sql);
  }
  return sql;
}

/**
 * Replaces `@name` tokens outside string literals, quoted identifiers and comments with `{name:Type}`.
 * An `@name` that is not declared is a programming error in the saved query, reported at once.
 */
export function toClickHouseParams(sql: string, types: ReadonlyMap<string, string>): string {
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
    } else if (ch === '@') {
      const match = /^@([A-Za-z_][A-Za-z0-9_]*)/.exec(sql.slice(i));
      if (match) {
        const name = match[1] as string;
        const type = types.get(name);
        if (!type) throw new Error(`saved query uses undeclared parameter @${name}`);
        out += `{${name}:${type}}`;
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
