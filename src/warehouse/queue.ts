import { OverloadedError } from '../errors.js';
import { wrapped, type EngineQueue, type StagedLines, type Statements } from './types.js';

// The one queue of a process's statements to its warehouse (CONTRACT §20): every statement (a run's
// query, an export, the engine's checks, an alert's query, a load's batches) waits here for one of the
// warehouse's slots, fairly across callers, and at most `--max-queue` wait.

/** A statement waiting for a slot. */
interface Waiter {
  readonly start: () => void;
  readonly refuse: (err: Error) => void;
}

/** What a load's statements are queued as: after every caller's, whoever came first (a batch waits for the queries queued). */
export const BACKGROUND = '\0background';

/**
 * Slots at the warehouse (`concurrency` at once: one for the embedded engine, which runs one statement
 * at a time; several for a server, which runs many side by side), given fairly across callers: each
 * caller (an API key, a token's name, a process sharing serve's engine) has a queue of its own, and
 * the slots go round the callers in order, so one caller's thousand statements never hold another's
 * one behind them. A load's statements (BACKGROUND) take a slot only when no one else waits. At most
 * `maxWaiting` statements wait in all; one more is refused at once (OverloadedError: 503 with
 * Retry-After), the longest queue giving up its newest first.
 */
export class FairQueue {
  #maxWaiting = Infinity;
  #running = 0;
  readonly #queues = new Map<string, Waiter[]>();
  #waiting = 0;
  #dropped = 0;

  constructor(readonly concurrency: number) {}

  /** How many statements may wait at most (serve's --max-queue). */
  limit(maxWaiting: number): void {
    this.#maxWaiting = maxWaiting;
  }

  /** Statements running and waiting, and those never run because whoever asked had gone. */
  state(): EngineQueue {
    return { running: this.#running, waiting: this.#waiting, dropped: this.#dropped };
  }

  /** Runs `work` in a slot of its own; a signal that aborts while it waits takes it out of the queue, never run. */
  async run<T>(caller: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) throw signal.reason;
    // Waiting can fail (overloaded, or given up): then this statement never had a slot to pass on.
    if (this.#running >= this.concurrency || this.#waiting > 0) await this.#wait(caller, signal);
    else this.#running += 1;
    try {
      return await work();
    } finally {
      this.#next();
    }
  }

  #wait(caller: string, signal: AbortSignal | undefined): Promise<void> {
    if (this.#waiting >= this.#maxWaiting) {
      // Full: the caller with the most statements waiting gives up its newest to one with fewer (drop
      // from the longest queue, as fair queueing does), so a flood never keeps the others out.
      const mine = this.#queues.get(caller)?.length ?? 0;
      const [longest, queue] = [...this.#queues].reduce((a, b) => (b[1].length > a[1].length ? b : a));
      if (longest === caller || queue.length <= mine + 1) {
        return Promise.reject(new OverloadedError(`${this.#waiting} statements are waiting for the warehouse already; try again shortly.`));
      }
      const shed = queue.pop() as Waiter;
      if (queue.length === 0) this.#queues.delete(longest);
      this.#waiting -= 1;
      shed.refuse(new OverloadedError(`${this.#waiting + 1} statements were waiting for the warehouse, most of them this caller's; try again shortly.`));
    }
    return new Promise<void>((resolve, reject) => {
      const queue = this.#queues.get(caller) ?? [];
      const onAbort = () => {
        const at = queue.indexOf(waiter);
        if (at < 0) return;
        queue.splice(at, 1);
        if (queue.length === 0 && this.#queues.get(caller) === queue) this.#queues.delete(caller);
        this.#waiting -= 1;
        this.#dropped += 1;
        reject(signal?.reason as Error);
      };
      const waiter: Waiter = {
        start: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        refuse: (err) => {
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      queue.push(waiter);
      this.#queues.set(caller, queue);
      this.#waiting += 1;
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** A slot freed: it passes to the first waiter of the next caller in the round (a Map keeps callers in order), a load's last. */
  #next(): void {
    const entry = [...this.#queues].find(([caller]) => caller !== BACKGROUND) ?? this.#queues.entries().next().value;
    if (entry === undefined) {
      this.#running -= 1;
      return;
    }
    const [caller, queue] = entry;
    const waiter = queue.shift() as Waiter;
    this.#queues.delete(caller);
    // This caller goes to the back of the round with what it has left.
    if (queue.length > 0) this.#queues.set(caller, queue);
    this.#waiting -= 1;
    waiter.start();
  }
}

/**
 * Statements that each take a slot of the queue: a call's own caller's turn (Statement.caller), a
 * load's batches in the background. A streamed answer holds its slot until its first part is read
 * (the statement begun), then streams beside the others.
 */
export function queued(statements: Statements, queue: FairQueue): Statements {
  return wrapped(statements, {
    run: (kind, statement) => queue.run(statement.caller ?? '', () => statements.run(kind, statement), statement.signal),
    queue: () => queue.state(),
    async stage(lines): Promise<StagedLines> {
      const staged = await statements.stage(lines);
      return {
        ...staged,
        insert: (...args) => queue.run(BACKGROUND, () => staged.insert(...args)),
        query: (...args) => queue.run(BACKGROUND, () => staged.query(...args)),
      };
    },
  });
}

/**
 * Exports streaming at once, at most `--max-exports` (serve's): its HTTP exports and the streams of the
 * processes sharing its engine alike (engine-socket-server.ts). An export holds its slot for as long as
 * it streams, beside the statements' queue (a stream takes a slot of the queue only until it begins).
 */
export class ExportSlots {
  #max = Infinity;
  #running = 0;

  /** How many exports may stream at once. */
  limit(max: number): void {
    this.#max = max;
  }

  get running(): number {
    return this.#running;
  }

  /** A slot, released by the function returned (once); none free is OverloadedError (503 with Retry-After). */
  take(): () => void {
    if (this.#running >= this.#max) {
      const n = this.#running;
      throw new OverloadedError(`${n} ${n === 1 ? 'export is' : 'exports are'} under way, the most serve's --max-exports lets run at once; try again shortly.`);
    }
    this.#running += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#running -= 1;
    };
  }
}
