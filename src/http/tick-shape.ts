import { executionAsyncResource } from 'node:async_hooks';

/** The record kept (keepTickShape), held by the settled promise for the life of the process. */
let keeping: Promise<object> | undefined;

/**
 * Keeps one of Node's `process.nextTick` records alive for the life of the server, and with it the
 * hidden classes (V8's maps) every such record is built through; resolves to the record kept.
 *
 * Why: V8's memory reducer makes a memory-reducing full collection (`Mark-Compact (reduce)` under
 * `--trace-gc`) when the process looks idle, and about 100 s after its last full collection whatever
 * it does. Such a collection keeps no map that no live object has. When `serve` is idle at that
 * moment no tick record is alive, so the maps of Node's tick records go, and from then on every
 * `process.nextTick` (Node's HTTP server calls it several times a request) takes a slower path for the
 * rest of the process's life. With one record kept alive, the maps stay (the figures:
 * docs/performance.md).
 */
export function keepTickShape(): Promise<object> {
  // Inside a tick's callback, the resource being run is the tick's own record.
  keeping ??= new Promise((resolve) => process.nextTick(() => resolve(executionAsyncResource())));
  return keeping;
}
