import type { Savedq } from '../library.js';
import type { Row, SavedQuery } from '../queries/types.js';
import { outputFormat, writeRows, type CommonOptions, type Io } from './io.js';

/** Options of `savedq list`. */
export interface ListOptions extends CommonOptions {
  readonly format?: string | undefined;
}

/** The saved queries as `list -f json` describes them (README, "list"), each parameter with its type. */
export function describeQueries(queries: readonly SavedQuery[], versions?: ReadonlyMap<string, readonly number[]>): Row[] {
  return queries.map((q) => ({
    name: q.name,
    id: q.id,
    version: q.version,
    // Every version callable (the older ones kept as <name>@<N>.sql), the current one last.
    versions: [...(versions?.get(q.name) ?? [q.version])],
    description: q.description,
    params: q.params.map((p) => ({
      name: p.name,
      type: p.type,
      required: p.required,
      ...(p.allowed ? { allowed: [...p.allowed] } : {}),
      ...(p.default !== undefined ? { default: p.default } : {}),
      ...(p.min !== undefined ? { min: p.min } : {}),
      ...(p.max !== undefined ? { max: p.max } : {}),
      description: p.description,
    })),
    max_rows: q.maxRows,
    cache_seconds: q.cacheSeconds,
    warm_seconds: q.warmSeconds,
    sandbox: q.sandbox,
  }));
}

/** A table of the queries: what a user copies into the next command (the name, the id) is never cut. */
const TABLE_FIELDS = [
  { name: 'name', type: 'string', key: true },
  { name: 'id', type: 'string', key: true },
  { name: 'params', type: 'string' },
  { name: 'cache_seconds', type: 'integer' },
  { name: 'description', type: 'string' },
] as const;

/** `savedq list`: the saved queries, built-in and the user's, by name; a broken definition is a warning line. */
export async function listCommand(lib: Savedq, options: ListOptions, io: Io): Promise<void> {
  const format = outputFormat(io, options.format);
  const scan = await lib.savedQueries();
  const rows = describeQueries([...scan.queries].sort((a, b) => a.name.localeCompare(b.name)), scan.versions);
  const isTable = format === 'table' || format === 'csv';
  const shown = isTable
    ? rows.map((r) => ({
        ...r,
        params: (r.params as { name: string; required: boolean }[])
          .map((p) => (p.required ? p.name : `[${p.name}]`))
          .join(' '),
        versions: (r.versions as number[]).join(' '),
      }))
    : rows;
  // The versions' column only where a query keeps an older one: most folders never do.
  const versioned = scan.kept.length > 0;
  const fields = isTable ? (versioned ? [...TABLE_FIELDS.slice(0, 2), { name: 'versions', type: 'string' } as const, ...TABLE_FIELDS.slice(2)] : TABLE_FIELDS) : Object.keys(rows[0] ?? {}).map((name) => ({ name, type: 'object' as const }));
  await writeRows(io, options, format, shown, fields);
}
