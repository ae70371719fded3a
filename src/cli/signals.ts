import { InterruptedError } from '../errors.js';
import { engineIdle } from '../warehouse/lane.js';

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
 * engine and the data directory, and exits 130. A process that exits while the embedded engine runs a
 * statement crashes inside the engine, so even the deadline below and a second signal exit only once
 * the engine's statement under way has ended (each is short, or bounded by its time limit). `serve`
 * drains on its own listener; this one stays too, for the second signal, and so that the lock
 * library's signal-exit never finds a signal unheard and re-raises it.
 */
export function interruptible(stderr: NodeJS.WritableStream): void {
  let signals = 0;
  const exit = () => void engineIdle().then(() => process.exit(130));
  const onSignal = (signal: NodeJS.Signals) => {
    if (signals++ > 0) {
      if (signals === 2 && !serving) stderr.write("savedq: stopping as soon as the engine's statement under way ends.\n");
      exit();
      return;
    }
    if (serving) return;
    stderr.write(`\nsavedq: interrupted (${signal}); stopping.\n`);
    interrupt.abort(new InterruptedError(`interrupted (${signal}).`));
    // Whatever the command is doing, it ends within seconds. Stopping at a safe point comes first; a
    // load that this cuts short between batches is finished by the next load, as one killed is.
    setTimeout(exit, STOP_WITHIN_MS).unref();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}
