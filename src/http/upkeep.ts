import { stateWord } from '../alerts/index.js';
import { warmCounts, type Savedq } from '../library.js';
import { alertsOf } from '../admin.js';
import type { Log } from '../report.js';
import type { Metrics } from './metrics.js';
import { StoreUnreachable } from '../store/health.js';

/** How often serve does its own work while it runs; 0: never. */
export interface UpkeepEvery {
  /** Warming the calls people use (`savedq warm`'s work), in the server process. */
  readonly warmMs: number;
  /** Deleting what is past its retention, and the least recently served past --cache-max-mb. */
  readonly pruneMs: number;
  /** Evaluating the alerts that are due (`savedq alerts check`'s work), the first time at once. */
  readonly alertsMs: number;
}

/**
 * What serve does on its own while it runs: it warms the cache and keeps it within its bounds, each
 * told in the log (counted as `savedq warm` counts: warmCounts) and the metrics, and evaluates the
 * alerts on their schedule (a turn never overlaps the one before it; the alerts' leases keep other
 * processes from evaluating one at the same time). A turn that fails is logged, never fatal. The
 * timers hold no process open.
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
  let checking: Promise<void> | undefined;
  const waiting = { store: false };
  const checkAlerts = () => {
    checking ??= alertsTurn(lib, log, metrics, waiting).finally(() => (checking = undefined));
  };
  const alerting = every.alertsMs > 0 ? setInterval(checkAlerts, every.alertsMs) : undefined;
  if (alerting) checkAlerts();
  warming?.unref();
  pruning?.unref();
  alerting?.unref();
  return {
    stop() {
      clearInterval(warming);
      clearInterval(pruning);
      clearInterval(alerting);
    },
  };
}

/**
 * One turn of the alerts: what changed and what was delivered, in the log. A store that cannot be
 * reached is said once, when the alerts begin to wait for it, and again when they resume.
 */
async function alertsTurn(lib: Savedq, log: Log, metrics: Metrics, waiting: { store: boolean }): Promise<void> {
  try {
    const alerts = await alertsOf(lib);
    const report = await alerts.check();
    if (waiting.store) log.info('alerts resume: the store answers again');
    waiting.store = false;
    for (const e of report.evaluations) {
      if (e.newState !== e.oldState) log.info(`alert ${e.alert}: ${stateWord(e.oldState)} -> ${e.newState} (${e.detail})`);
    }
    metrics.alertStates(report.states);
    for (const d of report.deliveries) {
      metrics.notified(d.alert, d.delivered ? 'delivered' : d.gaveUp ? 'given_up' : 'failed');
      if (d.delivered) log.info(`alert ${d.alert}: notified ${d.newState} to ${d.target}`);
      else log.warn(`alert ${d.alert}: ${d.gaveUp ? 'gave up notifying' : 'could not notify'} ${d.newState} to ${d.target}: ${d.error ?? ''}`);
    }
  } catch (err) {
    if (err instanceof StoreUnreachable) {
      if (!waiting.store) log.warn(`warning: ${err.message}.`);
      waiting.store = true;
      return;
    }
    log.error(`alerts failed: ${err instanceof Error ? err.message : String(err)}`);
  }
}
