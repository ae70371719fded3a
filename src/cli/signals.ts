import { InterruptedError } from '../errors.js';

/** Aborted on SIGINT/SIGTERM (see interruptible). */
export const interrupt = new AbortController();
/** How long an interrupted command may take to reach a safe point before it exits anyway. */
const STOP_WITHIN_MS = 5_000;
/** Whether `serve` is running and listening (a signal then drains its requests in flight, and it exits). */
let serving = false;

/** `serve` listens: from now on a signal drains it (on serve's own listener) rather than interrupting its start. */
export function servingNow(): void {
  serving = true;
}

/**
 * Ctrl-C (or a SIGTERM from a supervisor) during run, load or warm stops the work at the next safe point
 * (between batches of a load, between refreshes of a warm, after the query of a run), releases the
 * engine and the data directory, and exits 130. Exiting while the engine is in the middle of an insert
 * would crash it, hence no process.exit here; a second signal insists. `serve` drains on its own
 * listener; this one stays too, for the second signal, and so that the lock library's signal-exit
 * never finds a signal unheard and re-raises it.
 */
export function interruptible(stderr: NodeJS.WritableStream): void {
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    if (signals++ > 0) process.exit(130);
    if (serving) return;
    stderr.write(`\nsavedq: interrupted (${signal}); stopping.\n`);
    interrupt.abort(new InterruptedError(`interrupted (${signal}).`));
    // Whatever the command is doing, it ends within seconds. Stopping at a safe point comes first; a
    // load that this cuts short mid-batch is finished by the next load, as one killed is.
    setTimeout(() => process.exit(130), STOP_WITHIN_MS).unref();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}
