import { grantOf, type Caller } from '../access/index.js';
import { answerFacts, parameterSchema, sqlSchema, versionedRowsSchema } from '../queries/json-schema.js';
import type { CatalogScan } from '../queries/catalog.js';
import { SQL_PARAM } from '../queries/sql.js';
import type { SavedQuery } from '../queries/types.js';
import type { ShapeOf } from '../queries/shape.js';

/** Tool names many clients accept: letters, digits, `_` and `-`, at most 64. */
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** A saved query as a tool: its MCP definition, for one caller (a token's fixed parameters are not inputs). */
export interface QueryTool {
  readonly query: SavedQuery;
  /** The parameters the caller's token fixes (none for a key or a local agent). */
  readonly fixed: ReadonlyMap<string, string>;
  /** Whether the tool takes an `sql` argument: a sandboxed query, a caller who may send SQL. */
  readonly sql: boolean;
  /** Whether the tool takes a `version` argument: every query but one with a parameter of that name. */
  readonly version: boolean;
  readonly definition: ToolDefinition;
}

/** A tool as `tools/list` gives it. */
export interface ToolDefinition {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly inputSchema: object;
  readonly outputSchema: object;
  readonly annotations: object;
}

/** A query's tool name: its name with each `.` written `_`. */
export function toolName(query: SavedQuery): string {
  return query.name.replace(/\./g, '_');
}

/**
 * The tools of the saved queries a caller may run (undefined: a local agent, every query), by name.
 * Two queries that would share a tool name are both left out, as is one whose name no client takes;
 * `warn` hears of each once a listing.
 */
export function toolsOf(scan: Pick<CatalogScan, 'queries' | 'kept' | 'versions'>, caller: Caller | undefined, warn: (message: string) => void, shapeOf?: ShapeOf): Map<string, QueryTool> {
  const { queries, versions } = scan;
  const byName = new Map<string, SavedQuery[]>();
  for (const query of queries) {
    if (!grantOf(caller, query)) continue;
    const name = toolName(query);
    byName.set(name, [...(byName.get(name) ?? []), query]);
  }
  const tools = new Map<string, QueryTool>();
  for (const [name, same] of byName) {
    const [query] = same;
    if (!query) continue;
    if (same.length > 1) {
      warn(`saved queries ${same.map((q) => q.name).join(' and ')} would both be the tool ${name}; neither is offered to agents (rename one).`);
      continue;
    }
    if (!TOOL_NAME.test(name)) {
      warn(`saved query ${query.name} is not offered to agents: a tool name is at most 64 letters, digits, _ and -.`);
      continue;
    }
    const grant = grantOf(caller, query);
    const fixed = grant?.fixed ?? new Map<string, string>();
    // A sandboxed query's tool takes SQL of the caller's own, when the caller may send it.
    const sql = query.sandbox && grant?.sql === true;
    // A version argument where there is a version to choose (and no parameter of that name): an agent
    // reads every tool's schema, and a choice of one is only words to read.
    const versionsOf = versions?.get(query.name) ?? [query.version];
    const version = !query.params.some((p) => p.name === 'version');
    const kept = scan.kept.filter((k) => k.name === query.name);
    tools.set(name, { query, fixed, sql, version, definition: definition(query, name, fixed, sql, versionsOf, version && versionsOf.length > 1, versionedRowsSchema(query, kept, shapeOf)) });
  }
  return tools;
}

function definition(query: SavedQuery, name: string, fixed: ReadonlyMap<string, string>, sql: boolean, versions: readonly number[], pinnable: boolean, rows: object): ToolDefinition {
  const params = query.params.filter((p) => !fixed.has(p.name));
  const fields = query.fields.map((f) => `- ${f.name} (${f.type})${f.description ? `: ${f.description}` : ''}`);
  const description = [
    query.description || `The saved query ${query.name}.`,
    fields.length > 0 ? `Returns rows of:\n${fields.join('\n')}` : 'Returns rows (fields not declared).',
    `savedq returns at most ${query.maxRows} rows: truncated is true when the query had more, and the rows stop there. A limit written in the query's own SQL is the query's answer, not a cut: its description says so. ${query.cacheSeconds > 0 ? `Results are cached for ${query.cacheSeconds} s.` : 'Not cached.'}`,
    ...(sql ? [`Optional sql: your own SELECT over the answer, which it reads as the table result; the rows are then the SELECT's (savedq's row limit applies to them).`] : []),
    ...(fixed.size > 0 ? [`Fixed by your token: ${[...fixed].map(([k, v]) => `${k}=${v}`).join(', ')}.`] : []),
  ].join('\n\n');
  return {
    name,
    title: query.name,
    description,
    inputSchema: {
      type: 'object',
      properties: {
        ...Object.fromEntries(params.map((p) => [p.name, parameterSchema(p, 'json')])),
        ...(sql ? { [SQL_PARAM]: sqlSchema(query) } : {}),
        ...(pinnable ? { version: { type: 'integer', enum: [...versions], description: `The version of ${query.name} to run; default: the current one (${query.version}).` } } : {}),
      },
      ...(params.some((p) => p.required) ? { required: params.filter((p) => p.required).map((p) => p.name) } : {}),
      additionalProperties: false,
    },
    outputSchema: {
      type: 'object',
      properties: {
        rows,
        row_count: { type: 'integer', minimum: 0, description: 'Rows returned.' },
        ...answerFacts(query.maxRows, versions),
      },
      required: ['rows', 'row_count', 'version', 'truncated', 'cached', 'age_seconds', 'statistics'],
    },
    annotations: { title: query.name, readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  };
}
