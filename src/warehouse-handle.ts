import type { Config } from './config.js';
import type { Reporter } from './report.js';
import type { Warehouse, WarehouseOptions } from './warehouse/index.js';
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
  #warehouse: Promise<Warehouse> | undefined;
  /** The warehouse once open, for a look at its queue that never opens it. */
  #opened: Warehouse | undefined;

  constructor(config: Config, options: { owns: boolean; signal: AbortSignal | undefined; reporter: Reporter }) {
    this.#config = config;
    this.#owns = options.owns;
    this.#signal = options.signal;
    this.#reporter = options.reporter;
  }

  /** The warehouse, opened on first use; a failure to open is tried afresh by the next call. */
  open(): Promise<Warehouse> {
    if (!this.#warehouse) {
      const opening = import('./warehouse/index.js').then((m) => m.openWarehouse({ ...this.options(), signal: this.#signal, useShared: !this.#owns }));
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

  /** The embedded engine's queue, when this process has it open. */
  queue(): EngineQueue | undefined {
    return this.#opened?.queue?.();
  }

  /** Releases the warehouse (and with it the embedded data directory). */
  async close(): Promise<void> {
    const warehouse = this.#warehouse;
    this.#warehouse = undefined;
    this.#opened = undefined;
    if (warehouse) await (await warehouse.catch(() => undefined))?.close();
  }
}
