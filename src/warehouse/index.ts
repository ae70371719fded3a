import { isUnknownTable } from './errors.js';
import { makeTables } from './schema.js';
import type { HostsOptions, LoadBalance } from './hosts.js';
import { FairQueue, queued } from './queue.js';

/** Statements a process sends a server at once when nothing says (config's --warehouse-concurrency). */
const DEFAULT_CONCURRENCY = 8;
import { warehouseOf, wrapped, type Statements, type Warehouse } from './types.js';

export type { HostChange, LoadBalance } from './hosts.js';
export { FairQueue } from './queue.js';
export type { HostStatus, LinesFormat, StagedLines, StatementParams, Warehouse, WarehouseHosts, WarehouseRow } from './types.js';

/** Where the warehouse is: a ClickHouse server by URL, or the embedded engine on a data directory. */
export interface WarehouseOptions {
  /** The hosts of a server warehouse, each URL with its user, password and database; none: the embedded engine. */
  readonly urls: readonly string[];
  /** Which host a process uses when there are several. */
  readonly loadBalance: LoadBalance;
  /** Told once when a host goes down and once when it comes back. */
  readonly onHostChange?: HostsOptions['onChange'];
  /** Hosts another process found down lately, and where to record what this one finds (the store). */
  readonly suspects?: HostsOptions['suspects'];
  readonly recordHost?: HostsOptions['record'];
  /** The one queue of this process's statements to the warehouse (queue.ts); absent, one of its own (one slot for the embedded engine). */
  readonly queue?: FairQueue | undefined;
  readonly dataDir: string;
  /** How long to wait for another process to let go of the data directory. */
  readonly lockWaitMs: number;
  /** Bounds a server that stops answering (the engine enforces each query's own limit). */
  readonly timeoutSeconds: number;
  /** When aborted, waiting for the data directory ends with the abort reason. */
  readonly signal?: AbortSignal | undefined;
  /** Make the log tables when a query finds one missing (default); `init` applies its own DDL. */
  readonly createTables?: boolean;
  /** Send statements to a `savedq serve` that shares the embedded engine, if one does (default); serve itself: false. */
  readonly useShared?: boolean;
  /** Told once, with who holds it, when the data directory must be waited for. */
  readonly onWait?: ((holder: string) => void) | undefined;
}

/**
 * Opens the warehouse, each statement waiting its turn in the one queue. The log tables are made on
 * first use: when a statement of any kind finds a table missing, the schema is applied (idempotently)
 * and the statement tried once more, so the common case costs no extra statement.
 */
export async function openWarehouse(options: WarehouseOptions): Promise<Warehouse> {
  const opened =
    options.urls.length === 0
      ? await (await import('./embedded.js')).openEmbedded(options)
      : await (await import('./hosts.js')).openHosts({ urls: options.urls, loadBalance: options.loadBalance, timeoutSeconds: options.timeoutSeconds, onChange: options.onHostChange, suspects: options.suspects, record: options.recordHost });
  const statements = queued(opened, options.queue ?? new FairQueue(options.urls.length === 0 ? 1 : DEFAULT_CONCURRENCY));
  return warehouseOf(options.createTables === false ? statements : tablesOnFirstUse(statements));
}

/** Statements that make the log tables when one finds a table missing, then run once more. */
function tablesOnFirstUse(statements: Statements): Statements {
  return wrapped(statements, {
    run: async (kind, statement) => {
      try {
        return await statements.run(kind, statement);
      } catch (err) {
        if (!isUnknownTable(err)) throw err;
        await makeTables(warehouseOf(statements));
        return statements.run(kind, statement);
      }
    },
  });
}
