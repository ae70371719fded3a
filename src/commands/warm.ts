import type { AsOf } from '../time.js';
import { paramsText, parsePairs } from '../queries/params.js';
import { resolveSeconds } from '../config.js';
import { WarmFailedError } from '../errors.js';
import { StoreUnreachable } from '../store/health.js';
import { warmCounts, type Savedq, type WarmOutcome } from '../library.js';
import { checkInterrupted, commandLog, report, type CommonOptions, type Io } from './io.js';

/** Options of `savedq warm`. */
export interface WarmOptions extends CommonOptions {
  /** Warm one given call (a saved query's name or id, with params and at) instead of the warm set. */
  readonly nameOrId?: string | undefined;
  readonly params?: readonly string[];
  readonly at?: AsOf;
  /** Seconds warming may take (default 240). */
  readonly maxTime?: string | undefined;
}

function describeCall(outcome: WarmOutcome): string {
  const params = paramsText(outcome.call.params);
  return `${outcome.name}${params ? ` ${params}` : ''}${outcome.call.at ? ` at ${outcome.call.at}` : ''}`;
}

/**
 * `savedq warm`: re-runs every cached call served within its query's cache time whose result is its
 * warming age old or more, or computed before the data's latest load (or one given call), stores the
 * fresh results, and reports each. Meant for `*\/5 * * * * savedq warm`.
 */
export async function warmCommand(lib: Savedq, options: WarmOptions, io: Io): Promise<WarmOutcome[]> {
  const calls =
    options.nameOrId === undefined
      ? undefined
      : [await lib.cachedCallOf({ nameOrId: options.nameOrId, params: parsePairs(options.params ?? []), at: options.at })];
  const maxTimeMs = resolveSeconds(options.maxTime, '--max-time', 240) * 1000;
  const log = commandLog(io, options);
  void lib.announce('warm');
  const outcomes = await lib.warm({
    calls,
    signal: options.signal,
    onOutcome: (outcome, index, total) => {
      const n = `[${index + 1}/${total}]`;
      if (outcome.error) log.error(`${n} failed ${describeCall(outcome)}: ${outcome.error.message}`);
      else log.info(`${n} refreshed ${describeCall(outcome)} (${outcome.rows} rows)`);
    },
    maxTimeMs,
  });
  checkInterrupted(options.signal);
  // A store that did not answer hid what is due (and took nothing refreshed): cron's monitor must see a failure, not "0 refreshed".
  if (!lib.store.up) throw new StoreUnreachable(`the cache at ${lib.store.location} cannot be used now: nothing was warmed.`);
  const { refreshed, failed, left, loading, another } = warmCounts(outcomes);
  const leftText = left > 0 ? `, ${left} left for the next run (${loading ? 'a load is changing the data' : `--max-time ${maxTimeMs / 1000} s was up`})` : '';
  const anotherText = another > 0 ? `, ${another} refreshed by another savedq process` : '';
  report(io, options, `warm: ${refreshed} refreshed, ${failed} failed${anotherText}${leftText}`);
  if (failed > 0) throw new WarmFailedError(`${failed} of ${outcomes.length - left - another} refreshes failed.`);
  return outcomes;
}
