/** Waits for work, or until the signal aborts, whichever comes first; the work itself goes on. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Work joined by a caller, and whether this caller started it. */
export interface Joined<T> {
  readonly work: Promise<T>;
  readonly leader: boolean;
}

/** Identical work in flight, and how many of its callers still wait for it. */
interface Entry<T> {
  readonly work: Promise<T>;
  /** Aborted when every caller has given up: work that has not begun is then never begun. */
  readonly controller: AbortController;
  waiting: number;
}

/**
 * Identical work in flight, in this process: a caller asking for work already under way (by key) joins
 * it rather than starting it again (across processes, a key's lease does: runner.ts). A caller with a signal (an HTTP client, an interruptible command) may
 * give up; when every caller has, the work is told so (`gone`): a query still waiting for its turn in
 * the engine is then never run, and the next identical call starts afresh. A caller without a signal
 * keeps the work going.
 */
export class InFlight<T> {
  readonly #inFlight = new Map<string, Entry<T>>();

  join(key: string, work: (gone: AbortSignal) => Promise<T>, signal?: AbortSignal): Joined<T> {
    let entry = this.#inFlight.get(key);
    const leader = entry === undefined;
    if (!entry) {
      const controller = new AbortController();
      const made: Entry<T> = {
        work: work(controller.signal).finally(() => {
          if (this.#inFlight.get(key) === made) this.#inFlight.delete(key);
        }),
        controller,
        waiting: 0,
      };
      this.#inFlight.set(key, made);
      entry = made;
    }
    const joined = entry;
    joined.waiting += 1;
    if (signal) {
      const leave = () => {
        joined.waiting -= 1;
        if (joined.waiting > 0) return;
        if (this.#inFlight.get(key) === joined) this.#inFlight.delete(key);
        joined.work.catch(() => undefined); // no one is left to hear how it ended
        joined.controller.abort(signal.reason);
      };
      if (signal.aborted) leave();
      else {
        signal.addEventListener('abort', leave, { once: true });
        void joined.work.finally(() => signal.removeEventListener('abort', leave)).catch(() => undefined);
      }
    }
    return { work: untilAborted(joined.work, signal), leader };
  }
}
