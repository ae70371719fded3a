import { warmCounts, type Savedq } from '../library.js';
import type { Log } from '../report.js';
import type { Metrics } from './metrics.js';

/** How often serve does its own work while it runs; 0: never. */
export interface UpkeepEvery {
  /** Warming the calls people use (`savedq warm`'s work), in the server process. */
  readonly warmMs: number;
  /** Deleting what is past its retention, and the least recently served past --cache-max-mb. */
  readonly pruneMs: number;
}

/**
 * What serve does on its own while it runs: it warms the cache and keeps it within its bounds, each
 * told in the log (counted as `savedq warm` counts: warmCounts) and the metrics. A turn that fails is
 * logged, never fatal. The timers hold no process open.
 */
export function startUpkeep(lib: Savedq, log: Log, metrics: Metrics, every: UpkeepEvery): { stop(): void } {
  const warming =
    every.warmMs > 0
      ? setInterval(() => {
          lib.warm().then(
            (outcomes) => {
              const { refreshed, failed, left } = warmCounts(outcomes);
              metrics.warmed('refreshed', refreshed);
              metrics.warmed('failed', failed);
              for (const o of outcomes) if (o.error) log.error(`warm failed for ${o.name}: ${o.error.message}`);
              if (outcomes.length > 0) log.info(`warm: ${refreshed} refreshed, ${failed} failed${left > 0 ? `, ${left} left for the next turn` : ''}`);
            },
            (err: unknown) => log.error(`warm failed: ${err instanceof Error ? err.message : String(err)}`),
          );
        }, every.warmMs)
      : undefined;
  const pruning =
    every.pruneMs > 0
      ? setInterval(() => {
          lib.pruneCache().then(
            ({ expired, evicted }) => (expired + evicted > 0 ? log.info(`cache: ${expired} expired and ${evicted} least recently served entries deleted`) : undefined),
            (err: unknown) => log.error(`cache pruning failed: ${err instanceof Error ? err.message : String(err)}`),
          );
        }, every.pruneMs)
      : undefined;
  warming?.unref();
  pruning?.unref();
  return {
    stop() {
      clearInterval(warming);
      clearInterval(pruning);
    },
  };
}
