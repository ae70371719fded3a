import { redactUrl, type Config } from './config.js';
import type { Reporter } from './report.js';
import type { HostRecord, Store } from './store/types.js';
import type { Warehouse, WarehouseOptions } from './warehouse/index.js';
import { ExportSlots, FairQueue } from './warehouse/queue.js';
import type { EngineQueue, WarehouseHosts } from './warehouse/types.js';

/**
 * The warehouse as this process reaches it (a handle: not the engine, whatever the warehouse is), opened on first use (the engine and the client are imported
 * only then, so a cache hit never loads them) and kept until `close()`: a ClickHouse server by URL, the
 * engine a `savedq serve` shares on the embedded data directory when one does, else the engine itself.
 * `serve` owns the engine of its data directory: it never sends its statements to another's share.
 */
export class WarehouseHandle {
  readonly #config: Config;
  readonly #owns: boolean;
  readonly #signal: AbortSignal | undefined;
  readonly #reporter: Reporter;
  /** Where hosts found down are recorded for the next process (and read from, at opening). */
  readonly #store: Pick<Store, 'hostsDown' | 'markHost'> | undefined;
  /**
   * The one queue of this process's statements (warehouse/queue.ts): one slot for the embedded engine,
   * --warehouse-concurrency for a server; made now, so its bound and state hold before the warehouse opens.
   */
  readonly queue: FairQueue;
  /** Exports streaming at once (serve's --max-exports), counted across the ways an export comes. */
  readonly exports = new ExportSlots();
  #warehouse: Promise<Warehouse> | undefined;
  /** The warehouse once open, for a look at its queue that never opens it. */
  #opened: Warehouse | undefined;

  constructor(config: Config, options: { owns: boolean; signal: AbortSignal | undefined; reporter: Reporter; store?: Pick<Store, 'hostsDown' | 'markHost'> }) {
    this.#config = config;
    this.#owns = options.owns;
    this.#signal = options.signal;
    this.#reporter = options.reporter;
    this.#store = options.store;
    this.queue = new FairQueue(config.urls.length === 0 ? 1 : config.warehouseConcurrency);
  }

  /** The warehouse, opened on first use; a failure to open is tried afresh by the next call. */
  open(): Promise<Warehouse> {
    if (!this.#warehouse) {
      const opening = Promise.all([import('./warehouse/index.js'), this.#suspects()]).then(([m, suspects]) =>
        m.openWarehouse({ ...this.options(), signal: this.#signal, useShared: !this.#owns, queue: this.queue, suspects, recordHost: (host, down) => this.#record(host, down) }),
      );
      this.#warehouse = opening;
      opening.then(
        (warehouse) => (this.#opened = warehouse),
        () => {
          if (this.#warehouse === opening) this.#warehouse = undefined;
        },
      );
    }
    return this.#warehouse;
  }

  /** Writes under way of hosts found down or answering again: the store is closed only once they are done. */
  readonly #records = new Set<Promise<void>>();

  #record(host: string, down: HostRecord | undefined): void {
    const store = this.#store;
    if (store === undefined) return;
    const writing: Promise<void> = store
      .markHost(host, down)
      .catch(() => undefined)
      .finally(() => this.#records.delete(writing));
    this.#records.add(writing);
  }

  /** Resolves once what this process learnt of its hosts is in the store (before the store closes). */
  async recorded(): Promise<void> {
    await Promise.all([...this.#records]);
  }

  /** A server's hosts that a process sharing the store found down lately (none when the store does not say). */
  async #suspects(): Promise<WarehouseOptions['suspects']> {
    const { urls } = this.#config;
    if (urls.length < 2 || this.#store === undefined) return undefined;
    return this.#store.hostsDown(urls.map(redactUrl)).catch(() => undefined);
  }

  /** Where the warehouse is, as the configuration says, and who hears that a data directory is awaited. */
  options(): Pick<WarehouseOptions, 'urls' | 'loadBalance' | 'dataDir' | 'lockWaitMs' | 'timeoutSeconds' | 'onWait' | 'onHostChange'> {
    const { urls, loadBalance, dataDir, lockWaitMs, queryTimeoutSeconds } = this.#config;
    return {
      urls,
      loadBalance,
      dataDir,
      lockWaitMs,
      timeoutSeconds: queryTimeoutSeconds,
      onWait: (holder) => this.#reporter.note(`waiting for data directory ${dataDir}, in use by ${holder} (at most ${lockWaitMs / 1000} s; see --lock-wait)`),
      // Said once a change, not once a call: a host down is a warning, its return news. A command whose
      // last host went down says so once, in its error (or its stale answer's warning).
      onHostChange: ({ host, up, reason, answering }) => {
        if (up) this.#reporter.note(`ClickHouse at ${host} answers again`);
        else if (answering > 0) this.#reporter.warn(`ClickHouse at ${host} is down (${reason ?? 'no answer'}); the other hosts answer its calls.`);
        else if (this.#owns) this.#reporter.warn(`ClickHouse at ${host} is down (${reason ?? 'no answer'}): no host of the warehouse answers; calls are answered from the store where they can be.`);
      },
    };
  }

  /** The hosts of a server warehouse once open, and whether each answers. */
  hosts(): WarehouseHosts | undefined {
    return this.#opened?.hosts?.();
  }

  /** The statements running and waiting for the warehouse (warehouse/queue.ts). */
  queueState(): EngineQueue {
    return this.queue.state();
  }

  /** Releases the warehouse (and with it the embedded data directory). */
  async close(): Promise<void> {
    const warehouse = this.#warehouse;
    this.#warehouse = undefined;
    this.#opened = undefined;
    if (warehouse) await (await warehouse.catch(() => undefined))?.close();
  }
}
