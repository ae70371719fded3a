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
  /** What the warehouse user's profile changed of the run's limits (profile.ts), as a person reads it: said by `run` and --stats. */
  readonly bounds?: readonly string[];
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

/** The warehouse's statements (queue.ts): those running, those waiting, and those never run because whoever asked had gone. */
export interface EngineQueue {
  readonly running: number;
  readonly waiting: number;
  readonly dropped: number;
}

/** What a statement of each kind answers: rows, rows with what they cost, the engine's parse, nothing. */
export interface Answers {
  /** Rows as JSONEachRow gives them. */
  readonly query: WarehouseRow[];
  /** A query's rows and what it cost, as the engine counts it (every saved query's run). */
  readonly measure: MeasuredRows;
  /**
   * The engine's own parse of one statement, as `EXPLAIN AST` prints it (a line a node, indented by
   * depth), sent as written: no FORMAT or SETTINGS is added to the text, which would bind to the
   * statement explained. The statement must be one the engine formatted (sandbox/check.ts), or a saved
   * query's own, with its parameters bound.
   */
  readonly explain: string[];
  /** A statement that returns no rows. */
  readonly command: undefined;
  /** A query's whole answer in a format (Statement.format), streamed as the engine writes it: `savedq export`. */
  readonly stream: ChunkStream;
}

/** A part of a streamed answer: bytes in the statement's format, and how many rows they hold when the engine says. */
export interface StreamChunk {
  readonly bytes: Uint8Array;
  /** Rows in these bytes (the embedded engine says; a server's binary formats do not: undefined). */
  readonly rows?: number | undefined;
  /** Bytes the warehouse wrote into the statement's file itself (Statement.file), beside these. */
  readonly inFile?: number | undefined;
}

/**
 * An answer streamed as the engine writes it (an export): its parts in order, the first already read
 * (so that a statement the engine refuses fails before any byte is given). A failure after the first
 * part is thrown by the iteration; ending the iteration early (break, return) stops the query.
 */
export type ChunkStream = AsyncIterable<StreamChunk>;

/** The engine's output formats an answer can be streamed in. */
export type StreamFormat = 'JSONEachRow' | 'Parquet' | 'ArrowStream';

/** The kinds of statement a warehouse runs. */
export type StatementKind = keyof Answers;

/**
 * The call a statement is part of (CONTRACT §20): one deadline for everything it does (its wait for a
 * slot, each host it tries, reading the answer, stopping the query), and who it is for.
 */
export interface CallContext {
  /** Aborted when the call's time is up or no one waits for it any more: a statement not yet begun is not begun. */
  readonly signal?: AbortSignal | undefined;
  /** When the call's time is up (epoch ms): the engine's own limit is what is left of it when the statement starts. */
  readonly deadline?: number | undefined;
  /** Who the call is for (an API key, a token's name): slots at the warehouse go round the callers. */
  readonly caller?: string | undefined;
  /** A caller's W3C trace context, passed on to a server's request (traceparent, tracestate). */
  readonly headers?: Readonly<Record<string, string>> | undefined;
  /** Told what a host's user's profile changed of the call's limits (lowered to a bound, or not set), as a person reads it. */
  readonly onBound?: ((said: string) => void) | undefined;
}

/** One statement: its text, the values of its `{name:Type}` parameters, settings of its own, and its call. */
export interface Statement extends CallContext {
  readonly sql: string;
  readonly params?: StatementParams | undefined;
  /** Settings for this statement alone (a SETTINGS clause: never a session's). */
  readonly settings?: ClickHouseSettings | undefined;
  /** The query id a server's request carries (hosts.ts gives every attempt its own). */
  readonly queryId?: string | undefined;
  /** Settings of a server's request itself (its URL), read before the statement is: hosts.ts's. */
  readonly requestSettings?: ClickHouseSettings | undefined;
  /** The format a `stream` statement's answer is written in (default JSONEachRow). */
  readonly format?: StreamFormat | undefined;
  /**
   * A file made for a `stream` statement's answer (an export's `-o`), which a warehouse that writes its
   * answers into files itself (the embedded engine's binary formats) writes into: no bytes of it then
   * pass through savedq (StreamChunk.inFile says how many were written there).
   */
  readonly file?: string | undefined;
  /** Settings the statement must not run without (a definition's `limits:`): a host that cannot apply them refuses it (profile.ts). */
  readonly required?: readonly string[] | undefined;
  /**
   * Set by hosts.ts for a host whose user may set nothing (readonly=1): its answers come in the server's
   * default output formats, and are read back as every other user's are (plain.ts).
   */
  readonly plain?: { readonly timezone: string } | undefined;
}

/** One host of a server warehouse, as /health and `savedq status` show it. */
export interface HostStatus {
  /** Its URL without its password. */
  readonly host: string;
  readonly state: 'up' | 'down';
  /** When it last went down or came back (ISO 8601). */
  readonly since: string;
  /** Why it is down, or last failed. */
  readonly last_error?: string;
  /** Statements moved from it to another host. */
  readonly failovers: number;
  /** What its user may not set, once savedq knows (profile.ts), and what that costs: absent for a user that may set anything. */
  readonly user?: HostUser;
}

/** A host's user whose profile restricts what savedq sends, as /health and `savedq status` say it. */
export interface HostUser {
  /** 1: no setting may be changed; 2: any but readonly; 0: settings bounded. */
  readonly readonly: 0 | 1 | 2;
  /** The bounds its profile puts on the settings savedq sends. */
  readonly bounds: Readonly<Record<string, { readonly min?: number; readonly max?: number; readonly fixed?: true }>>;
  /** What savedq does without what the user may not set, a sentence each. */
  readonly costs: readonly string[];
}

/** The hosts of a server warehouse (hosts.ts). */
export interface WarehouseHosts {
  readonly hosts: readonly HostStatus[];
  /** Queries given up on and stopped on their host (a timeout, an interrupt, a caller gone). */
  readonly cancelled: number;
  /** No host answers. */
  readonly unreachable: boolean;
}

/**
 * The one primitive of a warehouse: a statement of a kind, run. Every warehouse (the embedded engine,
 * a server, serve's socket) implements it, and every wrapper (the engine's lane, the tables made on
 * first use) wraps `run` and `stage` alone, so that none can miss a kind of statement: the methods of
 * a Warehouse are made from `run` once (warehouseOf).
 */
export interface Statements {
  /** Where the data is, for messages; never contains a password. */
  readonly location: string;
  /** Whether this is the embedded engine (which savedq owns whole: its tables, its disk). */
  readonly embedded: boolean;
  run<K extends StatementKind>(kind: K, statement: Statement): Promise<Answers[K]>;
  /** Puts a batch of lines where the engine can read them. */
  stage(lines: Buffer): Promise<StagedLines>;
  /** The queue of statements waiting for the warehouse (queue.ts). */
  queue?(): EngineQueue;
  /** The hosts of a server warehouse, and whether each answers. */
  hosts?(): WarehouseHosts;
  /** The same once each host has been asked now (its /ping, at most 2 s): `savedq status`. */
  probeHosts?(): Promise<WarehouseHosts>;
  close(): Promise<void>;
}

/**
 * The ClickHouse behind savedq: the embedded engine on a data directory, or a server by URL. Every
 * failure is a savedq error (classified in warehouse/errors.ts). Its methods are `run` of each kind.
 */
export interface Warehouse extends Statements {
  query(sql: string, params: StatementParams, settings?: ClickHouseSettings, call?: CallContext): Promise<WarehouseRow[]>;
  measure(sql: string, params: StatementParams, settings?: ClickHouseSettings, call?: CallContext & Pick<Statement, 'required'>): Promise<MeasuredRows>;
  explainAst(statement: string, params?: StatementParams, call?: CallContext): Promise<string[]>;
  command(sql: string, params?: StatementParams, settings?: ClickHouseSettings, call?: CallContext): Promise<void>;
}

/**
 * Statements wrapped: those given in `replaced` (a wrapper's own run, stage, queue or close), the rest
 * the wrapped ones', each bound to them (a class's methods are not an object's own: no spread copies them).
 */
export function wrapped(statements: Statements, replaced: Partial<Pick<Statements, 'run' | 'stage' | 'queue' | 'close'>>): Statements {
  const queue = replaced.queue ?? (statements.queue ? () => statements.queue?.() ?? { running: 0, waiting: 0, dropped: 0 } : undefined);
  const hosts = statements.hosts?.bind(statements);
  const probeHosts = statements.probeHosts?.bind(statements);
  return {
    location: statements.location,
    embedded: statements.embedded,
    run: replaced.run ?? ((kind, statement) => statements.run(kind, statement)),
    stage: replaced.stage ?? ((lines) => statements.stage(lines)),
    ...(queue ? { queue } : {}),
    ...(hosts ? { hosts } : {}),
    ...(probeHosts ? { probeHosts } : {}),
    close: replaced.close ?? (() => statements.close()),
  };
}

/** A warehouse of its statements: each method a kind of `run`. */
export function warehouseOf(statements: Statements): Warehouse {
  return {
    ...wrapped(statements, {}),
    query: (sql, params, settings, call) => statements.run('query', { ...call, sql, params, settings }),
    measure: (sql, params, settings, call) => statements.run('measure', { ...call, sql, params, settings }),
    explainAst: (sql, params, call) => statements.run('explain', { ...call, sql, params }),
    command: (sql, params, settings, call) => statements.run('command', { ...call, sql, params, settings }),
  };
}
