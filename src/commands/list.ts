import { endpoints } from '../endpoints/registry.js';
import type { Row } from '../endpoints/types.js';
import { outputFormat, writeRows, type CommonOptions, type Io } from './io.js';

/** Options of `savedq list`. */
export interface ListOptions extends CommonOptions {
  readonly format?: string | undefined;
}

/** The endpoints as `list -f json` describes them. */
export function describeEndpoints(): Row[] {
  return endpoints.map((e) => ({
    name: e.name,
    id: e.id,
    description: e.description,
    params: e.params.map((p) => ({
      name: p.name,
      required: p.required,
      ...(p.allowed ? { allowed: [...p.allowed] } : {}),
      ...(p.default !== undefined ? { default: p.default } : {}),
      description: p.description,
    })),
    max_rows: e.maxRows,
    cache_seconds: e.cacheSeconds,
    warm_seconds: e.warmSeconds,
  }));
}

const TABLE_FIELDS = [
  { name: 'name', type: 'string' },
  { name: 'id', type: 'string' },
  { name: 'params', type: 'string' },
  { name: 'cache_seconds', type: 'integer' },
  { name: 'description', type: 'string' },
] as const;

/** `savedq list`: the saved queries. */
export async function listCommand(options: ListOptions, io: Io): Promise<void> {
  const format = outputFormat(io, options.format);
  const rows = describeEndpoints();
  const isTable = format === 'table' || format === 'csv';
  const shown = isTable
    ? rows.map((r) => ({
        ...r,
        params: (r.params as { name: string; required: boolean }[])
          .map((p) => (p.required ? p.name : `[${p.name}]`))
          .join(' '),
      }))
    : rows;
  const fields = isTable ? TABLE_FIELDS : Object.keys(rows[0] ?? {}).map((name) => ({ name, type: 'object' as const }));
  await writeRows(io, options, format, shown, fields);
}
