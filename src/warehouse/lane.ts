import { withinDeadline } from './deadline.js';
import { wrapped, type StagedLines, type Statements } from './types.js';

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
 * The engine's statements, each counted busy while it runs (engineIdle): the process must not exit in
 * the middle of one. Once running a statement runs to its end, its signal not handed on (a streamed
 * answer aside, which stops between its parts): the embedded engine cannot interrupt a statement (its
 * time limit ends one), and a caller that stopped waiting for it would let the engine be closed under
 * it. The queue in front of the engine (queue.ts: one slot, fair across callers, a load's batches
 * after the queries) is what orders them.
 */
export function counting(engine: Statements): Statements {
  return wrapped(engine, {
    run: (kind, statement) =>
      counted(() => {
        // Begun in its turn: the engine's time limit is what is left of the call's deadline now.
        const settings = statement.deadline === undefined ? statement.settings : withinDeadline(statement.settings, statement.deadline - Date.now());
        return engine.run(kind, { ...statement, settings, signal: kind === 'stream' ? statement.signal : undefined });
      }),
    async stage(lines): Promise<StagedLines> {
      const staged = await engine.stage(lines);
      return {
        ...staged,
        insert: (...args) => counted(() => staged.insert(...args)),
        query: (...args) => counted(() => staged.query(...args)),
      };
    },
    // The engine is let go of once no statement runs in it.
    close: async () => {
      await engineIdle();
      await engine.close();
    },
  });
}
