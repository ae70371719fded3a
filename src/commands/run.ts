import type { AsOf } from '../time.js';
import type { CacheMode, Savedq } from '../library.js';
import { RUN_FORMATS } from '../output/index.js';
import { parsePairs } from '../queries/params.js';
import { checkInterrupted, note, outputFormat, writeRows, type CommonOptions, type Io } from './io.js';

/** Options of `savedq run`. */
export interface RunOptions extends CommonOptions {
  /** The saved query's name or id. */
  readonly nameOrId: string;
  /** `name=value` pairs. */
  readonly params: readonly string[];
  readonly format?: string | undefined;
  readonly cache?: CacheMode;
  readonly at?: AsOf;
  /** Your own SELECT over the query's answer (`--sql`, a sandboxed query's). */
  readonly sql?: string | undefined;
}

/** `savedq run`: runs a saved query and writes its rows to standard output. */
export async function runCommand(lib: Savedq, options: RunOptions, io: Io): Promise<void> {
  const format = outputFormat(io, options.format, RUN_FORMATS); // a bad format is refused before anything runs
  const result = await lib.run({
    nameOrId: options.nameOrId,
    params: parsePairs(options.params),
    at: options.at,
    sql: options.sql,
    cache: options.cache ?? 'use',
  });
  checkInterrupted(options.signal);
  await writeRows(io, options, format, result.rows, result.fields);
  if (result.cache === 'hit') {
    const age = Math.max(0, Math.round((lib.clock() - result.computedAt) / 1000));
    note(io, options, `${result.query.name}: from cache, computed ${age} s ago`);
  } else {
    const kept = result.cache === 'miss' ? `, kept in the cache for ${result.query.cacheSeconds} s` : '';
    note(io, options, `${result.query.name}: ${result.rows.length} rows${kept}`);
  }
}
