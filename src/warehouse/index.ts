import { isUnknownTable } from './errors.js';
import { makeTables } from './schema.js';
import { warehouseOf, wrapped, type Statements, type Warehouse } from './types.js';

export type { LinesFormat, StagedLines, StatementParams, Warehouse, WarehouseRow } from './types.js';

/** Where the warehouse is: a ClickHouse server by URL, or the embedded engine on a data directory. */
export interface WarehouseOptions {
  /** A server's URL (may carry user, password, database); undefined = the embedded engine. */
  readonly url: string | undefined;
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
 * Opens the warehouse. The log tables are made on first use: when a statement of any kind finds a table
 * missing, the schema is applied (idempotently) and the statement tried once more, so the common case
 * costs no extra statement.
 */
export async function openWarehouse(options: WarehouseOptions): Promise<Warehouse> {
  const statements =
    options.url === undefined
      ? await (await import('./embedded.js')).openEmbedded(options)
      : await (await import('./remote.js')).openServer(options.url, options.timeoutSeconds);
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
