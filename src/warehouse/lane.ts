import { wrapped, type EngineQueue, type StagedLines, type Statements } from './types.js';

/** What a statement is for: answering a query, or storing a batch of a load. */
type Kind = 'query' | 'load';

/** Statements of this process's engine under way, and who waits for there to be none. */
let running = 0;
const whenIdle: (() => void)[] = [];

/**
 * Resolves once the embedded engine of this process runs no statement: the engine cannot be stopped in
 * the middle of one, and a process that exits then crashes inside it (cli/signals.ts waits for this).
 */
export function engineIdle(): Promise<void> {
  return running === 0 ? Promise.resolve() : new Promise((resolve) => whenIdle.push(resolve));
}

/**
 * Runs work the process must not exit in the middle of (several statements that stand or fall
 * together, a swap of tables): to engineIdle it is one statement.
 */
export async function counted<T>(op: () => Promise<T>): Promise<T> {
  const release = engaged();
  try {
    return await op();
  } finally {
    release();
  }
}

/** Counts the engine busy until the function returned is called (once): a streamed answer, for as long as it streams. */
export function engaged(): () => void {
  running += 1;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    running -= 1;
    if (running === 0) for (const resolve of whenIdle.splice(0)) resolve();
  };
}

/**
 * The engine's statements one at a time, queries first: the embedded engine runs one statement at a
 * time anyway, in no order of its own, so a long load sent through one process (`serve`, for every
 * other process) would otherwise keep queries waiting behind batch after batch. Here a query waits at
 * most for the statement running when it came; a load's next batch waits for the queries queued.
 * A statement whose caller has gone (its signal aborted: a client of serve that was interrupted) before
 * its turn is not run. Once running it runs to its end, its signal not handed on: the embedded engine
 * cannot interrupt a statement (its time limit ends one), and a client that stopped waiting for it
 * would let the engine be closed under it.
 */
export function inLane(engine: Statements): Statements {
  const queue: { kind: Kind; start: () => void }[] = [];
  let busy = false;
  let dropped = 0;
  const next = () => {
    busy = false;
    const at = queue.findIndex((item) => item.kind === 'query');
    const item = at >= 0 ? queue.splice(at, 1)[0] : queue.shift();
    if (item) {
      busy = true;
      item.start();
    }
  };
  const inTurn = <T>(kind: Kind, op: () => Promise<T>, signal?: AbortSignal): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const start = () => {
        if (signal?.aborted) {
          dropped += 1;
          reject(signal.reason as Error);
          next();
          return;
        }
        void counted(op).then(resolve, reject).finally(next);
      };
      queue.push({ kind, start });
      if (!busy) next();
    });
  return wrapped(engine, {
    // A streamed answer is handed over at its first part, and then streams beside the lane on a
    // connection of its own, counted busy until it ends (embedded.ts): it takes its signal, which
    // stops it between parts.
    run: (kind, statement) => inTurn('query', () => engine.run(kind, { ...statement, signal: kind === 'stream' ? statement.signal : undefined }), statement.signal),
    queue: (): EngineQueue => ({ running: busy ? 1 : 0, waiting: queue.length, dropped }),
    async stage(lines): Promise<StagedLines> {
      const staged = await engine.stage(lines);
      return {
        ...staged,
        insert: (...args) => inTurn('load', () => staged.insert(...args)),
        query: (...args) => inTurn('load', () => staged.query(...args)),
      };
    },
    // The engine is let go of once no statement runs in it.
    close: async () => {
      await engineIdle();
      await engine.close();
    },
  });
}
