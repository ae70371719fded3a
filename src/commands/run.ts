import { callName, sunsetText } from '../queries/version-ref.js';
import { bytesText, grouped } from '../words.js';
import { ageSeconds, fromCache } from '../calls/answer.js';
import type { AsOf } from '../time.js';
import type { CacheMode, RunResult, Savedq } from '../library.js';
import { RUN_FORMATS } from '../output/index.js';
import { parsePairs } from '../queries/params.js';
import { wrapped } from '../output/wrap.js';
import { checkInterrupted, hintWidth, note, noting, outputFormat, proseWidth, report, writeRows, type CommonOptions, type Io } from './io.js';

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
  /** One line on standard error after the answer: rows, cut or whole, cached and how old, what it cost. */
  readonly stats?: boolean | undefined;
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
    // Interrupted (Ctrl-C, SIGTERM), the run stops waiting, and a server's query is stopped on its host.
    signal: options.signal,
  });
  checkInterrupted(options.signal);
  // A run that went to the warehouse says so to the others sharing the store (a cache hit costs nothing
  // more, nor does a stale answer: no host answered it).
  const announced = result.cache === 'hit' || result.cache === 'stale' ? undefined : lib.announce('run');
  await writeRows(io, options, format, result.rows, result.fields);
  await announced;
  // A cut answer says so where a person reads it: whenever standard error is a terminal (the rows may
  // have gone to a file: `run q -f csv > out.csv` must not leave a short file unsaid), and when asked
  // (--stats) wherever it goes.
  const cut = result.truncated && (options.stats === true || (io.stderr.isTTY === true && !options.quiet));
  if (cut) {
    const again = ['savedq export', callName(result.query), ...options.params.map((p) => `-p ${shellWord(p)}`), ...(options.sql !== undefined ? [`--sql ${shellWord(options.sql)}`] : [])].join(' ');
    const what = io.stdout.isTTY === true ? 'showing the first' : 'wrote only the first';
    io.stderr.write(`${what} ${grouped(result.rows.length, 'row')}: the query has more (max_rows ${result.query.maxRows}); every row:\n  ${again}\n`);
  }
  // A stale answer is said wherever standard error goes: a cron job's mail must say it is old.
  if (result.cache === 'stale') {
    report(io, options, wrapped(`warning: the warehouse did not answer (no host of it); this is ${result.query.name}'s answer from the cache, computed ${ageSeconds(result.computedAt, lib.clock())} s ago and expired (stale_if_error ${result.query.staleIfErrorSeconds} s).`, 0, 2, hintWidth(io)));
  }
  // An older version past which callers must move: said wherever standard error goes, as a stale answer is.
  if (result.query.sunsetMs !== undefined) {
    const on = sunsetText(result.query.sunsetMs);
    report(io, options, wrapped(`warning: version ${result.query.version} of ${result.query.name} is deprecated: it stops answering on ${on} (sunset); run ${result.query.name} for the current version.`, 0, 2, hintWidth(io)));
  }
  if (options.stats === true) io.stderr.write(`${statsLine(result, lib.clock())}\n`);
  // A table ends with its count: the note does not say it again.
  else statusNote(lib, result, cut || format === 'table', options, io);
  // An empty answer on a new machine: said where a person reads it, and why, only when it is so.
  const empty = result.rows.length === 0 && noting(io, options) ? await lib.emptyWarehouse().catch(() => undefined) : undefined;
  if (empty !== undefined) note(io, options, wrapped(`(the log tables of ${empty} hold no events yet: savedq load --sample loads sample ones)`, 0, 1, proseWidth(io)));
}

/** What the answer was, from the cache or computed now, for a person watching; its count unless `counted` already (a table's last line, a cut answer's). */
function statusNote(lib: Savedq, result: RunResult, counted: boolean, options: RunOptions, io: Io): void {
  // Not made for no one: a count's grouping loads the locale's data the first time.
  if (!noting(io, options)) return;
  if (result.cache === 'hit') {
    note(io, options, `${callName(result.query)}: from cache, computed ${ageSeconds(result.computedAt, lib.clock())} s ago`);
  } else if (result.cache === 'miss') {
    note(io, options, `${callName(result.query)}: ${counted ? '' : `${grouped(result.rows.length, 'row')}, `}kept in the cache for ${result.query.cacheSeconds} s`);
  } else if (result.cache === 'shared') {
    note(io, options, `${callName(result.query)}: computed by another savedq process for the same call a moment ago, from the cache`);
  } else if (result.cache === 'bypass') {
    note(io, options, `${callName(result.query)}: ${counted ? '' : `${grouped(result.rows.length, 'row')}, `}straight from the warehouse: the store cannot be reached, so nothing was kept`);
  } else if (!counted) {
    note(io, options, `${callName(result.query)}: ${grouped(result.rows.length, 'row')}`);
  }
  // Computed now under limits the warehouse user's profile changed: said, as the run's own.
  if (!fromCache(result)) for (const bound of result.statistics.bounds ?? []) note(io, options, `${callName(result.query)}: ${bound}`);
}

/** `--stats`' line: `12 rows · cached 95 s ago · 0.041 s · read 1,204,332 rows, 61.2 MB`. */
export function statsLine(result: RunResult, now: number): string {
  const age = ageSeconds(result.computedAt, now);
  const { elapsed, rows_read, bytes_read } = result.statistics;
  return [
    `${grouped(result.rows.length, 'row')}${result.truncated ? ` (truncated at max_rows ${result.query.maxRows})` : ''}`,
    result.cache === 'stale' ? `cached ${age} s ago, stale (the warehouse did not answer)` : fromCache(result) ? `cached ${age} s ago` : result.cache === 'bypass' ? 'computed now, the store not reached (not kept)' : 'computed now',
    `${elapsed.toFixed(3)} s`,
    `read ${grouped(rows_read, 'row')}, ${bytesText(bytes_read)}`,
    `version ${result.query.version}`,
    ...(result.statistics.bounds ?? []),
  ].join(' · ');
}

/** A word as a shell reads it back: as it is when it holds nothing a shell treats specially, else in single quotes. */
function shellWord(word: string): string {
  return /^[\w.,:=@%+/-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}
