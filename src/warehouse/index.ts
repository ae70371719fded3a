import { randomUUID } from 'node:crypto';
import { accessSync, constants, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import type { Config } from '../config.js';
import { BusyError, WarehouseError } from '../errors.js';
import { makeDirectory } from '../fs.js';
import { readSqlFile } from '../package.js';
import { toWarehouseError } from './errors.js';
import { loadBatch, MARK_COLUMN, type Batch, type BatchOutcome, type ComputedColumn } from './load.js';

/** One row as ClickHouse returns it in JSONEachRow. */
export type WarehouseRow = Record<string, unknown>;

/** The log tables `load` writes to. */
export const TABLES = ['edge_logs', 'function_edge_logs'] as const;
export type TableName = (typeof TABLES)[number];

/** Settings every query runs with: ISO timestamps, and 64-bit counts as JSON numbers. */
const BASE_SETTINGS: ClickHouseSettings = {
  date_time_output_format: 'iso',
  output_format_json_quote_64bit_integers: 0,
};

/** The ClickHouse behind savedq: the embedded engine on a data directory, or a server by URL. */
export interface Warehouse {
  /** Where the data is, for messages; never contains a password. */
  readonly location: string;
  query(
    sql: string,
    params: Record<string, unknown>,
    settings?: ClickHouseSettings,
    signal?: AbortSignal,
  ): Promise<WarehouseRow[]>;
  /**
   * Stores one batch of newline-delimited JSON events; sql/load.sql decides what each line becomes.
   * Says which lines it refused (numbered within the batch); the others are stored.
   */
  loadLines(table: TableName, batch: Batch): Promise<BatchOutcome>;
  /** Runs a statement that returns no rows (DDL). */
  command(sql: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * Opens the warehouse the configuration names. The log tables are created on first use: when a query or
 * an insert finds a table missing, the schema is applied (idempotently) and the statement retried once,
 * so the common case costs no extra statement. `init` applies its own DDL and turns this off.
 */
export async function openWarehouse(
  config: Config,
  options: { createTables?: boolean; signal?: AbortSignal | undefined } = {},
): Promise<Warehouse> {
  const warehouse =
    config.url === undefined ? await openEmbedded(config, options.signal) : await openServer(config.url, config.queryTimeoutSeconds);
  if (options.createTables === false) return warehouse;
  const onceTablesExist = async <T>(op: () => Promise<T>): Promise<T> => {
    try {
      return await op();
    } catch (err) {
      if (!isUnknownTable(err)) throw err;
      await makeTables(warehouse);
      return op();
    }
  };
  return {
    ...warehouse,
    query: (...args) => onceTablesExist(() => warehouse.query(...args)),
    loadLines: (...args) => onceTablesExist(() => warehouse.loadLines(...args)),
    command: (...args) => onceTablesExist(() => warehouse.command(...args)),
  };
}

function isUnknownTable(err: unknown): boolean {
  const cause = (err as { cause?: { type?: unknown; code?: unknown } } | undefined)?.cause;
  return cause?.type === 'UNKNOWN_TABLE' || cause?.code === '60';
}

/** Makes the log tables, as far as they are missing: the statements of `sql/schema.sql`, in order. */
async function makeTables(warehouse: Pick<Warehouse, 'command'>): Promise<void> {
  for (const statement of schemaStatements()) await warehouse.command(statement);
}

/** The CREATE TABLE statements of `sql/schema.sql`. */
export function schemaStatements(): string[] {
  return readSqlFile('schema.sql')
    .replace(/^\s*--.*$/gm, '')
    .split(/;\s*$/m)
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** A URL with its password removed, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    u.password = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return '<invalid URL>';
  }
}

async function openServer(url: string, timeoutSeconds: number): Promise<Warehouse> {
  const { createClient, ClickHouseLogLevel } = await import('@clickhouse/client');
  const location = `ClickHouse at ${redactUrl(url)}`;
  let client: ClickHouseClient;
  try {
    client = createClient({
      url,
      clickhouse_settings: BASE_SETTINGS,
      // The server enforces max_execution_time; this bounds a server that stops answering at all.
      request_timeout: (timeoutSeconds + 5) * 1000,
      // Errors reach the caller as savedq errors; the client's own logging would print them twice.
      log: { level: ClickHouseLogLevel.OFF },
    });
  } catch (err) {
    throw new WarehouseError(`invalid ClickHouse URL ${redactUrl(url)}.`, { cause: err });
  }
  const warehouse = wrapClient(client, location);
  return {
    ...warehouse,
    // The batch travels as the insert's body; a query (rare: explaining refused lines) carries it as a literal.
    loadLines: (table, batch) =>
      loadBatch(table, batch, {
        forInsert: (_format, structure) => `input(${quoteText(structure)})`,
        forQuery: (format) => `format(${format}, ${bytesLiteral(batch.lines)})`,
        params: {},
        // A server's table may be Distributed over replicas: its own MATERIALIZED columns are its business.
        computed: [],
        async insert(statement, format, params, settings) {
          try {
            const r = await client.exec({
              query: `${statement}${settingsClause(settings)}\nFORMAT ${format}`,
              query_params: params,
              values: Readable.from([batch.lines]),
            });
            r.stream.destroy();
          } catch (err) {
            throw toWarehouseError(err, location);
          }
        },
        async query(statement, params, settings) {
          try {
            const result = await client.query({
              query: `${statement}${settingsClause(settings)}`,
              format: 'JSONEachRow',
              query_params: params,
              // The literal is part of the query text, which the server parses only up to this size.
              clickhouse_settings: { max_query_size: String(4 * batch.lines.length + 65_536) },
            });
            return await result.json<WarehouseRow>();
          } catch (err) {
            throw toWarehouseError(err, location);
          }
        },
      }),
  };
}

/** Text as a ClickHouse string literal. */
function quoteText(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** Bytes as a ClickHouse string literal in plain ASCII: exact whatever the bytes, valid UTF-8 or not. */
export function bytesLiteral(bytes: Buffer): string {
  const escaped = bytes
    .toString('latin1')
    // Anything but printable ASCII, and the quote and backslash, as \xNN.
    .replace(/[^\x20-\x26\x28-\x5b\x5d-\x7e]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return `'${escaped}'`;
}

/**
 * Per-query settings as a SETTINGS clause. The embedded engine applies `clickhouse_settings` as
 * session-wide SET statements that outlive the query (a `readonly` would then refuse the next insert);
 * a SETTINGS clause holds for its one query, on the embedded engine and on a server alike.
 */
export function settingsClause(settings: ClickHouseSettings | undefined): string {
  const entries = Object.entries(settings ?? {}).filter(([, v]) => v !== undefined);
  if (entries.length === 0) return '';
  const values = entries.map(([k, v]) => {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new Error(`invalid setting name ${k}`);
    // Numbers (the client types 64-bit settings as strings) go bare; anything else is a quoted literal.
    const text = String(v);
    return `${k} = ${/^\d+(\.\d+)?$/.test(text) ? text : quoteText(text)}`;
  });
  return `\nSETTINGS ${values.join(', ')}`;
}

/** What the embedded engine and a server share; each adds its own way of loading. */
function wrapClient(client: ClickHouseClient, location: string): Omit<Warehouse, 'loadLines'> {
  return {
    location,
    async query(sql, params, settings, signal) {
      try {
        const result = await client.query({
          query: `${sql}${settingsClause(settings)}`,
          format: 'JSONEachRow',
          query_params: params,
          abort_signal: signal,
        });
        return await result.json<WarehouseRow>();
      } catch (err) {
        throw toWarehouseError(err, location);
      }
    },
    async command(sql) {
      try {
        await client.command({ query: sql });
      } catch (err) {
        throw toWarehouseError(err, location);
      }
    },
    async close() {
      await client.close();
    },
  };
}

const LOCK_POLL_MS = 100;
/** A lock whose holder stopped refreshing it this long ago (killed, say) is taken over. */
const LOCK_STALE_MS = 10_000;
const LOCK_FILE = '.savedq.lock';
/** Where `load` puts the batch the engine is reading. */
const LOAD_DIR = 'savedq-load';
const OWNER_FILE = '.savedq.owner';
/**
 * Where `load` notes each batch while it stores it (see loadLines): a note left behind names a batch a
 * killed load was storing. Unlike LOAD_DIR, it outlives the process: the note stays until the batch is
 * loaded again.
 */
const UNFINISHED_DIR = 'savedq-unfinished';

/** Parts a batch is read in by its inserts on the embedded engine: a stream each (at most 8). */
const INSERT_STREAMS = Math.min(8, Math.max(2, availableParallelism()));

/** Whether a path can be part of a `file()` glob: it holds none of the glob's own characters. */
function globSafe(path: string): boolean {
  return !/[*?{}[\]]/.test(path);
}

/** A batch cut at line ends into about `count` parts of about equal size (fewer if it has fewer lines). */
export function splitLines(lines: Buffer, count: number): Buffer[] {
  const parts: Buffer[] = [];
  let start = 0;
  for (let k = 1; k < count && start < lines.length; k++) {
    const end = lines.indexOf(0x0a, Math.max(start, Math.floor((k * lines.length) / count) - 1));
    if (end === -1 || end + 1 >= lines.length) break;
    parts.push(lines.subarray(start, end + 1));
    start = end + 1;
  }
  parts.push(lines.subarray(start));
  return parts;
}

/** A batch written out for the engine (see writeBatchFiles). */
interface BatchFiles {
  /** A `file()` glob of the parts, for the inserts. */
  readonly partsGlob: string;
  /** The batch in one file, written on first use, for the query that names refused lines. */
  wholeFile(): Promise<string>;
  remove(): Promise<unknown>;
}

/**
 * Writes a batch out for the engine: in parts cut at line ends, one per core, which the inserts read
 * with a glob, a stream a part (from one file the engine checks the rows in a single stream); and,
 * only if asked, whole, for the query that names refused lines, which reads them in order.
 */
async function writeBatchFiles(dir: string, lines: Buffer): Promise<BatchFiles> {
  const name = join(dir, `${process.pid}-${randomUUID()}`);
  const parts = globSafe(name) ? splitLines(lines, INSERT_STREAMS) : [lines];
  const partFiles = parts.map((_, i) => `${name}.${i}.ndjson`);
  const wholeFile = `${name}.ndjson`;
  let whole: Promise<void> | undefined;
  const remove = () => Promise.all([...partFiles, wholeFile].map((f) => rm(f, { force: true })));
  try {
    makeDirectory(dir);
    await Promise.all(parts.map((part, i) => writeFile(partFiles[i] as string, part)));
  } catch (err) {
    await remove();
    throw err;
  }
  return {
    partsGlob: parts.length > 1 ? `${name}.{${parts.map((_, i) => i).join(',')}}.ndjson` : (partFiles[0] as string),
    async wholeFile() {
      await (whole ??= writeFile(wholeFile, lines));
      return wholeFile;
    },
    remove,
  };
}

/**
 * The notes of the batches a process is storing, one file each under UNFINISHED_DIR. A note there that
 * this process did not write was left by a load that died (this process holds the data directory):
 * its batch may be half stored. A batch stored keeps no note; a batch that failed keeps it, since the
 * engine may have stored part of it, and the next load of it finishes it.
 */
class BatchNotes {
  readonly #dir: string;
  /** Notes of batches in flight here, with how many (the same batch may be in flight twice). */
  readonly #mine = new Map<string, number>();

  constructor(dataDir: string) {
    this.#dir = join(dataDir, UNFINISHED_DIR);
  }

  /** Notes a batch as being stored; says whether a load that died left it unfinished. */
  begin(table: TableName, token: string): { note: string; unfinished: boolean } {
    const note = join(this.#dir, `${table}.${token}`);
    const unfinished = !this.#mine.has(note) && existsSync(note);
    this.#mine.set(note, (this.#mine.get(note) ?? 0) + 1);
    makeDirectory(this.#dir);
    writeFileSync(note, '');
    return { note, unfinished };
  }

  /** The batch is stored: its note goes, unless the same batch is still in flight. */
  stored(note: string): void {
    if (this.#mine.get(note) === 1) rmSync(note, { force: true });
  }

  /** The batch is no longer in flight here, stored or not. */
  end(note: string): void {
    const left = (this.#mine.get(note) ?? 1) - 1;
    if (left > 0) this.#mine.set(note, left);
    else this.#mine.delete(note);
  }
}

/** What a load needs to know of a table on the embedded engine. */
interface TableShape {
  readonly computed: readonly ComputedColumn[];
  readonly partitionKey: string;
}

/** The live process named in an owner file (ours, or the engine's own status file). */
function holderOf(dataDir: string): { pid: number; since: string } | undefined {
  for (const name of [OWNER_FILE, 'status']) {
    try {
      const status = readFileSync(join(dataDir, name), 'utf8');
      const pid = Number(/PID:\s*(\d+)/.exec(status)?.[1]);
      if (!pid || pid === process.pid) continue;
      process.kill(pid, 0);
      return { pid, since: /Started at:\s*(.+)/.exec(status)?.[1]?.trim() ?? '' };
    } catch {
      // no such file, or its process is gone
    }
  }
  return undefined;
}

/**
 * Takes the data directory for this process. The engine itself admits one process per directory, but
 * asking it is racy and makes it print its refusal on standard error; savedq processes queue on a lock
 * file of their own first (proper-lockfile: atomic mkdir, taken over when its holder stops refreshing
 * it), up to the configured bound, then fail naming the holder.
 */
async function lockDataDir(config: Config, signal: AbortSignal | undefined): Promise<() => Promise<void>> {
  // Within one process the engine shares a directory between connections, so the lock is shared too.
  const { dataDir } = config;
  let held = heldLocks.get(dataDir);
  if (!held) {
    held = { users: 0, release: acquireDataDir(config, signal) };
    heldLocks.set(dataDir, held);
    held.release.catch(() => heldLocks.delete(dataDir));
  }
  const entry = held;
  const release = await entry.release;
  entry.users += 1;
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    entry.users -= 1;
    if (entry.users === 0) {
      heldLocks.delete(dataDir);
      await release();
    }
  };
}

const heldLocks = new Map<string, { users: number; release: Promise<() => Promise<void>> }>();

async function acquireDataDir(config: Config, signal: AbortSignal | undefined): Promise<() => Promise<void>> {
  const { default: lockfile } = await import('proper-lockfile');
  const { dataDir } = config;
  const deadline = Date.now() + config.lockWaitMs;
  for (;;) {
    try {
      const release = await lockfile.lock(dataDir, {
        lockfilePath: join(dataDir, LOCK_FILE),
        realpath: false,
        stale: LOCK_STALE_MS,
        retries: 0,
        // A long synchronous stretch can delay the refresh; the engine's own lock still protects the data.
        onCompromised: () => undefined,
      });
      writeFileSync(join(dataDir, OWNER_FILE), `PID: ${process.pid}\nStarted at: ${new Date().toISOString()}\n`);
      // A batch file left by a load that was killed: nothing else can be reading it now.
      rmSync(join(dataDir, LOAD_DIR), { recursive: true, force: true });
      if (!holderOf(dataDir)) {
        return async () => {
          rmSync(join(dataDir, OWNER_FILE), { force: true });
          await release().catch(() => undefined);
        };
      }
      await release(); // a process that is not savedq holds the engine
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ELOCKED') throw toWarehouseError(err, `data directory ${dataDir}`);
    }
    // Waiting holds nothing of the engine, so an interrupt can end the wait at once.
    if (signal?.aborted) throw signal.reason;
    if (Date.now() >= deadline) {
      const h = holderOf(dataDir);
      const who = h ? `process ${h.pid}${h.since ? ` (started ${h.since})` : ''}` : 'another process';
      throw new BusyError(
        `data directory ${dataDir} is in use by ${who}; gave up after ${config.lockWaitMs / 1000} s (see --lock-wait).`,
      );
    }
    await new Promise((r) => setTimeout(r, LOCK_POLL_MS));
  }
}

function prepareDataDir(dataDir: string): void {
  try {
    if (existsSync(dataDir) && !statSync(dataDir).isDirectory()) {
      throw new WarehouseError(`data directory ${dataDir} is not a directory.`);
    }
    makeDirectory(dataDir);
    accessSync(dataDir, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch (err) {
    if (err instanceof WarehouseError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === 'EACCES' || code === 'EPERM' ? 'permission denied' : code === 'ENOTDIR' ? 'a parent is not a directory' : (code ?? String(err));
    throw new WarehouseError(`cannot use data directory ${dataDir}: ${reason}.`, { cause: err });
  }
}

/**
 * What a load needs to know of a table on the embedded engine. A missing table is made first, so no
 * batch is sent only to be refused; a table made before loads marked their rows gets the mark column
 * (a change of metadata only).
 */
async function readTableShape(warehouse: Pick<Warehouse, 'query' | 'command'>, table: TableName): Promise<TableShape> {
  const ask = () =>
    Promise.all([
      warehouse.query(
        'SELECT name, default_kind, default_expression FROM system.columns WHERE database = currentDatabase() AND table = {table:String} ORDER BY position',
        { table },
      ),
      warehouse.query('SELECT partition_key FROM system.tables WHERE database = currentDatabase() AND name = {table:String}', { table }),
    ]);
  let [columns, tables] = await ask();
  if (columns.length === 0) {
    await makeTables(warehouse);
    [columns, tables] = await ask();
  }
  if (!columns.some((c) => c.name === MARK_COLUMN)) await warehouse.command(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${MARK_COLUMN} UInt64`);
  const materialized = columns
    .filter((c) => c.default_kind === 'MATERIALIZED')
    .map((c) => ({ name: String(c.name), expression: String(c.default_expression) }));
  return {
    // A name that needs quoting (none of ours does): leave the columns to the table.
    computed: materialized.every((c) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(c.name)) ? materialized : [],
    partitionKey: String(tables[0]?.partition_key ?? '') || 'tuple()',
  };
}

/** The embedded engine on the configured data directory, once this process holds it. */
async function openEmbedded(config: Config, signal: AbortSignal | undefined): Promise<Warehouse> {
  const { dataDir } = config;
  prepareDataDir(dataDir);
  // Take the lock while the client and the engine load: each costs milliseconds on every run.
  const [loaded, locked] = await Promise.allSettled([
    Promise.all([import('@clickhouse/client'), import('chdb/connection')]),
    lockDataDir(config, signal),
  ]);
  if (loaded.status === 'rejected') {
    if (locked.status === 'fulfilled') await locked.value();
    throw loaded.reason;
  }
  if (locked.status === 'rejected') throw locked.reason;
  const [[{ createClient, ClickHouseLogLevel }, { createChdbConnection }], release] = [loaded.value, locked.value];
  const location = `the embedded engine at ${dataDir}`;
  try {
    const connection = inDirectory(dataDir, () => createChdbConnection({ path: dataDir }));
    // chdb declares the Connection type of @clickhouse/client-common, which the client now bundles as
    // its own copy: the same shape under two names, hence the cast.
    const client = createClient({
      connection: connection as unknown as NonNullable<Parameters<typeof createClient>[0]>['connection'],
      clickhouse_settings: BASE_SETTINGS,
      log: { level: ClickHouseLogLevel.OFF },
    });
    const warehouse = wrapClient(client, location);
    const batchDir = join(dataDir, LOAD_DIR);
    const shapes = new Map<TableName, Promise<TableShape>>();
    // Asked once a table (the batches in flight share the answer).
    const tableShape = (table: TableName): Promise<TableShape> => {
      let shape = shapes.get(table);
      if (!shape) {
        shape = readTableShape(warehouse, table);
        shapes.set(table, shape);
        shape.catch(() => shapes.delete(table));
      }
      return shape;
    };
    const notes = new BatchNotes(dataDir);
    return {
      ...warehouse,
      // The engine reads each batch from files of its own (its file reader is the fastest way in).
      async loadLines(table, batch) {
        const read = (param: string) => (format: string, structure: string): string =>
          `file({${param}:String}, '${format}', ${quoteText(structure)})`;
        let noted: string | undefined;
        let files: BatchFiles | undefined;
        try {
          const shape = await tableShape(table);
          const { note, unfinished } = notes.begin(table, batch.token);
          noted = note;
          files = await writeBatchFiles(batchDir, batch.lines);
          const { partsGlob, wholeFile } = files;
          const outcome = await loadBatch(table, batch, {
            forInsert: read('lines_parts'),
            forQuery: read('lines_file'),
            params: { lines_parts: partsGlob },
            computed: shape.computed,
            marking: { partitionKey: shape.partitionKey, unfinished },
            async insert(statement, _format, params, settings) {
              await client.command({ query: `${statement}${settingsClause(settings)}`, query_params: params });
            },
            async query(statement, params, settings) {
              return warehouse.query(statement, { ...params, lines_file: await wholeFile() }, settings);
            },
          });
          notes.stored(note);
          return outcome;
        } catch (err) {
          throw toWarehouseError(err, location);
        } finally {
          if (noted) notes.end(noted);
          await files?.remove();
        }
      },
      async close() {
        await warehouse.close().finally(release);
      },
    };
  } catch (err) {
    await release();
    throw toWarehouseError(err, location);
  }
}

/**
 * The engine reads a `config.xml` from the current directory when it starts; start it from the data
 * directory (which holds none) so a stray file where the user stands cannot reconfigure it.
 */
function inDirectory<T>(dir: string, fn: () => T): T {
  const previous = process.cwd();
  if (existsSync(`${dir}/config.xml`)) throw new WarehouseError(`data directory ${dir} holds a config.xml; remove it.`);
  process.chdir(dir);
  try {
    return fn();
  } finally {
    process.chdir(previous);
  }
}
