import type { EngineQueue, StagedLines, Warehouse } from './types.js';

/** What a statement is for: answering a query, or storing a batch of a load. */
type Kind = 'query' | 'load';

/**
 * The engine's statements one at a time, queries first: the embedded engine runs one statement at a
 * time anyway, in no order of its own, so a long load sent through one process (`serve`, for every
 * other process) would otherwise keep queries waiting behind batch after batch. Here a query waits at
 * most for the statement running when it came; a load's next batch waits for the queries queued.
 */
export function inLane(warehouse: Warehouse): Warehouse {
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
  const inTurn = <T>(kind: Kind, op: () => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      queue.push({ kind, start: () => void op().then(resolve, reject).finally(next) });
      if (!busy) next();
    });
  return {
    ...warehouse,
    // A query whose caller has gone (its signal aborted: a client of serve that was interrupted) before
    // its turn is not run. Once running it runs to its end: the embedded engine cannot interrupt a
    // statement, only its time limit ends one.
    query: (sql, params, settings, signal) =>
      inTurn('query', () => {
        if (!signal?.aborted) return warehouse.query(sql, params, settings);
        dropped += 1;
        return Promise.reject(signal.reason as Error);
      }),
    command: (...args) => inTurn('query', () => warehouse.command(...args)),
    explainAst: (statement, params) => inTurn('query', () => warehouse.explainAst(statement, params)),
    measure: (sql, params, settings, signal) =>
      inTurn('query', () => {
        if (!signal?.aborted) return warehouse.measure(sql, params, settings);
        dropped += 1;
        return Promise.reject(signal.reason as Error);
      }),
    queue: (): EngineQueue => ({ running: busy ? 1 : 0, waiting: queue.length, dropped }),
    async stage(lines): Promise<StagedLines> {
      const staged = await warehouse.stage(lines);
      return {
        ...staged,
        insert: (...args) => inTurn('load', () => staged.insert(...args)),
        query: (...args) => inTurn('load', () => staged.query(...args)),
      };
    },
  };
}
