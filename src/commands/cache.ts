import type { Savedq } from '../library.js';
import { paramsText } from '../queries/params.js';
import type { Row } from '../queries/types.js';
import { outputFormat, report, writeRows, type CommonOptions, type Io } from './io.js';

/** Options of `savedq cache list`. */
export interface CacheListOptions extends CommonOptions {
  readonly format?: string | undefined;
}

const FIELDS = [
  { name: 'query', type: 'string', key: true },
  { name: 'params', type: 'string' },
  { name: 'at', type: 'string' },
  { name: 'sql', type: 'string' },
  { name: 'age_seconds', type: 'integer' },
  { name: 'served_seconds_ago', type: 'integer' },
  { name: 'expires_in_seconds', type: 'integer' },
  { name: 'source', type: 'string' },
] as const;

/** `savedq cache list`: what the cache holds, with ages in seconds. */
export async function cacheListCommand(lib: Savedq, options: CacheListOptions, io: Io): Promise<Row[]> {
  const format = outputFormat(io, options.format);
  const rows: Row[] = (await lib.cachedCalls()).map((c) => ({
    query: c.query,
    // In a table, as -p would give them (those given); for tools, the call's parameters whole.
    params: format === 'table' ? paramsText(c.params) : c.params,
    at: c.at,
    // A caller's own SQL over the answer (as the engine spells it): what tells apart answers of one call.
    sql: c.sql ?? null,
    age_seconds: c.ageSeconds,
    served_seconds_ago: c.servedSecondsAgo,
    expires_in_seconds: c.expiresInSeconds,
    source: c.source,
  }));
  // A table leaves out the columns no call has a value of (--at, a caller's SQL): most lists fit a terminal then.
  const fields = format === 'table' ? FIELDS.filter((f) => (f.name !== 'at' && f.name !== 'sql') || rows.some((r) => r[f.name] !== null)) : FIELDS;
  await writeRows(io, options, format, rows, fields);
  const megabytes = ((await lib.cache.size()) / 2 ** 20).toFixed(1);
  report(io, options, `${rows.length} cached ${rows.length === 1 ? 'call' : 'calls'}; ${lib.cache.location}: ${megabytes} MB (at most about ${lib.config.cacheMaxBytes / 2 ** 20} MB)`);
  return rows;
}

/** `savedq cache clear`: forgets every cached result. */
export async function cacheClearCommand(lib: Savedq, options: CommonOptions, io: Io): Promise<number> {
  const n = await lib.clearCache();
  report(io, options, `cache cleared: ${n} ${n === 1 ? 'entry' : 'entries'} removed`);
  return n;
}
