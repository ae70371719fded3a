import { OverloadedError } from '../errors.js';

/** A call waiting for its turn at the engine. */
interface Waiter {
  readonly start: () => void;
  readonly refuse: (err: Error) => void;
}

/**
 * Turns at the engine, served fairly across callers: each caller (an API key, a token's name) has a
 * queue of its own, and the turns go round the callers in order, so one caller's thousand calls never
 * hold another's one call behind them. At most `maxWaiting` calls wait in all; one more is refused at
 * once (OverloadedError: 503 with Retry-After). The engine runs one statement at a time, so one call
 * has the turn at a time; other savedq processes' statements (through the socket) do not queue here.
 */
export class FairTurns {
  #maxWaiting = Infinity;
  #running = false;
  readonly #queues = new Map<string, Waiter[]>();
  #waiting = 0;
  #dropped = 0;

  /** How many calls may wait at most (serve's --max-queue). */
  limit(maxWaiting: number): void {
    this.#maxWaiting = maxWaiting;
  }

  /** Calls waiting for their turn, and those never run because everyone waiting for them had gone. */
  state(): { waiting: number; dropped: number } {
    return { waiting: this.#waiting, dropped: this.#dropped };
  }

  /** Runs `work` in its turn; a signal that aborts while it waits takes it out of the queue. */
  async run<T>(caller: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) throw signal.reason;
    // Waiting can fail (overloaded, or given up): then this call never had the turn to pass on.
    if (this.#running || this.#waiting > 0) await this.#wait(caller, signal);
    else this.#running = true;
    try {
      return await work();
    } finally {
      this.#next();
    }
  }

  #wait(caller: string, signal: AbortSignal | undefined): Promise<void> {
    if (this.#waiting >= this.#maxWaiting) {
      // Full: the caller with the most calls waiting gives up its newest to one with fewer (drop from
      // the longest queue, as fair queueing does), so a flood never keeps the others out.
      const mine = this.#queues.get(caller)?.length ?? 0;
      const [longest, queue] = [...this.#queues].reduce((a, b) => (b[1].length > a[1].length ? b : a));
      if (longest === caller || queue.length <= mine + 1) {
        return Promise.reject(new OverloadedError(`${this.#waiting} calls are waiting for the engine already; try again shortly.`));
      }
      const shed = queue.pop() as Waiter;
      this.#waiting -= 1;
      shed.refuse(new OverloadedError(`${this.#waiting + 1} calls were waiting for the engine, most of them this caller's; try again shortly.`));
    }
    return new Promise<void>((resolve, reject) => {
      const queue = this.#queues.get(caller) ?? [];
      const onAbort = () => {
        const at = queue.indexOf(waiter);
        if (at < 0) return;
        queue.splice(at, 1);
        if (queue.length === 0) this.#queues.delete(caller);
        this.#waiting -= 1;
        this.#dropped += 1;
        reject(signal?.reason as Error);
      };
      const waiter: Waiter = {
        start: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        refuse: reject,
      };
      queue.push(waiter);
      this.#queues.set(caller, queue);
      this.#waiting += 1;
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** The turn passes to the first waiter of the next caller in the round (a Map keeps callers in order). */
  #next(): void {
    const entry = this.#queues.entries().next();
    if (entry.done) {
      this.#running = false;
      return;
    }
    const [caller, queue] = entry.value;
    const waiter = queue.shift() as Waiter;
    this.#queues.delete(caller);
    // This caller goes to the back of the round with what it has left.
    if (queue.length > 0) this.#queues.set(caller, queue);
    this.#waiting -= 1;
    waiter.start();
  }
}
