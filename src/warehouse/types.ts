import type { ClickHouseSettings } from '@clickhouse/client';

/** One row as ClickHouse returns it in JSONEachRow. */
export type WarehouseRow = Record<string, unknown>;

/** A query's rows, with what the engine says it read to answer it. */
export interface MeasuredRows {
  readonly rows: WarehouseRow[];
  readonly statistics: QueryStatistics;
}

/** What a query cost, as the engine counts it (FORMAT JSON's `statistics`): on chDB and a server alike. */
export interface QueryStatistics {
  /** Seconds the engine spent on the query. */
  readonly elapsed: number;
  /** Rows it read from tables. */
  readonly rows_read: number;
  /** Bytes it read from tables (uncompressed). */
  readonly bytes_read: number;
}

/** Values bound to a statement's `{name:Type}` parameters. */
export type StatementParams = Readonly<Record<string, unknown>>;

/** How staged lines are read: as JSON objects, or as lines of text. */
export type LinesFormat = 'JSONEachRow' | 'LineAsString';

/**
 * A batch of lines put where the engine can read them, for the statements of a load: on the embedded
 * engine files in the data directory, on a server the body of the insert (or a literal, for a query).
 */
export interface StagedLines {
  /**
   * The lines as the table function a statement reads them from (`file(…)`, `input(…)`, `format(…)`),
   * in a format with a structure. For an insert the engine may read them in parallel; for a query, in
   * order.
   */
  source(use: 'insert' | 'query', format: LinesFormat, structure: string): string;
  /** Runs an insert that reads the lines. */
  insert(statement: string, format: LinesFormat, params: StatementParams, settings: ClickHouseSettings): Promise<void>;
  /** Runs a query that reads the lines, in order. */
  query(statement: string, params: StatementParams, settings: ClickHouseSettings): Promise<WarehouseRow[]>;
  /** Removes what staging left behind. */
  release(): Promise<void>;
}

/** The embedded engine's statements, one at a time: the one running, those waiting, and those never run because whoever asked had gone. */
export interface EngineQueue {
  readonly running: number;
  readonly waiting: number;
  readonly dropped: number;
}

/**
 * The ClickHouse behind savedq: the embedded engine on a data directory, or a server by URL. Every
 * failure is a savedq error (classified in warehouse/errors.ts).
 */
export interface Warehouse {
  /** Where the data is, for messages; never contains a password. */
  readonly location: string;
  /** Whether this is the embedded engine (which savedq owns whole: its tables, its disk). */
  readonly embedded: boolean;
  query(sql: string, params: StatementParams, settings?: ClickHouseSettings, signal?: AbortSignal): Promise<WarehouseRow[]>;
  /** A query's rows and what it cost, as the engine counts it (every saved query's run). */
  measure(sql: string, params: StatementParams, settings?: ClickHouseSettings, signal?: AbortSignal): Promise<MeasuredRows>;
  /**
   * The engine's own parse of one statement, as `EXPLAIN AST` prints it (a line a node, indented by
   * depth), sent as written: no FORMAT or SETTINGS is added to the text, which would bind to the
   * statement explained. The statement must be one the engine formatted (sandbox/check.ts), or a saved
   * query's own, with its parameters bound (`params`).
   */
  explainAst(statement: string, params?: StatementParams): Promise<string[]>;
  /** Runs a statement that returns no rows. */
  command(sql: string, params?: StatementParams, settings?: ClickHouseSettings): Promise<void>;
  /** Puts a batch of lines where the engine can read them. */
  stage(lines: Buffer): Promise<StagedLines>;
  /** The engine's queue, where this process runs the embedded engine itself. */
  queue?(): EngineQueue;
  close(): Promise<void>;
}
