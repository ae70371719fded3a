import type { Row } from '../queries/types.js';
import type { Savedq } from '../library.js';
import { outputFormat, report, warn, writeRows, type CommonOptions, type Io } from './io.js';

/** Options of `savedq cache list`. */
export interface CacheListOptions extends CommonOptions {
  readonly format?: string | undefined;
}

const FIELDS = [
  { name: 'endpoint', type: 'string' },
  { name: 'params', type: 'object' },
  { name: 'at', type: 'string' },
  { name: 'age_seconds', type: 'integer' },
  { name: 'served_seconds_ago', type: 'integer' },
  { name: 'expires_in_seconds', type: 'integer' },
] as const;

/** `savedq cache list`: what the cache holds, with ages in seconds. */
export async function cacheListCommand(lib: Savedq, options: CacheListOptions, io: Io): Promise<Row[]> {
  const format = outputFormat(io, options.format);
  const now = lib.clock();
  const { byId } = await lib.queries.scan();
  const rows: Row[] = (await lib.cache.entries()).map((entry) => {
    // A result of a definition since changed or removed is never served again: it only waits to expire.
    const query = byId.get(entry.call.endpoint);
    const current = query?.digest === entry.call.digest ? query : undefined;
    const age = entry.computedAt === undefined ? null : Math.round((now - entry.computedAt) / 1000);
    return {
      endpoint: query?.name ?? entry.call.endpoint,
      params: entry.call.params,
      at: entry.call.at || null,
      age_seconds: age,
      served_seconds_ago: Math.round((now - entry.servedAt) / 1000),
      expires_in_seconds: age === null || !current ? null : Math.max(0, current.cacheSeconds - age),
    };
  });
  rows.sort((a, b) => String(a.endpoint).localeCompare(String(b.endpoint)) || Number(a.age_seconds) - Number(b.age_seconds));
  warn(io, options, lib.takeWarnings());
  await writeRows(io, options, format, rows, FIELDS);
  return rows;
}

/** `savedq cache clear`: forgets every cached result. */
export async function cacheClearCommand(lib: Savedq, options: CommonOptions, io: Io): Promise<number> {
  const n = await lib.cache.clear();
  warn(io, options, lib.takeWarnings());
  report(io, options, `cache cleared: ${n} ${n === 1 ? 'entry' : 'entries'} removed`);
  return n;
}
