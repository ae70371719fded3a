import { renameSync } from 'node:fs';
import type Keyv from 'keyv';
import type { Database, Statement } from 'sqlite3';
import { InputError } from '../errors.js';
import { ownFile, sqlitePathCheck, type Unsafe } from '../fs.js';
import { generations, NAMESPACE } from './marks.js';
import { loadingSqlite } from './sqlite-module.js';
import { reasonOf, StoreHealth, type Warn } from './health.js';
import { alertRecords } from './records.js';
import { CommonStore, type EntryKind } from './common.js';
import { sessionWhenReady, withTables, type SqlSession } from './sql.js';
import type { AlertRecords, ServedRecord, Store, StoreProbe, StoreSignal } from './types.js';

/** SQLite waits this long for another process's write before giving up. */
const BUSY_TIMEOUT_MS = 10_000;

/** The columns of an alert's state: the source of the data it evaluated (Config.source) and its name are its key. */
const ALERT_STATE = `(
  source TEXT NOT NULL DEFAULT '',
  name TEXT NOT NULL,
  state TEXT,
  since INTEGER,
  holding_since INTEGER,
  evaluated_at INTEGER,
  notified_at INTEGER,
  detail TEXT,
  lease_owner TEXT,
  lease_until INTEGER,
  PRIMARY KEY (source, name)
)`;

/** The tables of savedq's own in the file, beside keyv's (`keyv`, savedq's keys under `savedq:`). */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS savedq_alert_state ${ALERT_STATE};
CREATE TABLE IF NOT EXISTS savedq_alert_history (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  source TEXT NOT NULL DEFAULT '',
  name TEXT NOT NULL,
  at INTEGER NOT NULL,
  old_state TEXT,
  new_state TEXT NOT NULL,
  detail TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS savedq_alert_outbox (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  source TEXT NOT NULL DEFAULT '',
  name TEXT NOT NULL,
  target TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  next_at INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  delivered_at INTEGER,
  given_up_at INTEGER
);
CREATE TABLE IF NOT EXISTS savedq_leases (name TEXT PRIMARY KEY, owner TEXT NOT NULL, until INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS savedq_buckets (name TEXT PRIMARY KEY, tokens REAL NOT NULL, at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS savedq_processes (id TEXT PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL, version TEXT NOT NULL, role TEXT NOT NULL, seen INTEGER NOT NULL);
`;

/**
 * The alert tables of a file a savedq from before made, when an alert was its name alone: each row
 * given the column of its source (`''`: the first source to evaluate the alert takes it, records.ts),
 * the state's key made (source, name), which SQLite makes only by a new table.
 */
const ALERT_SOURCES = `
ALTER TABLE savedq_alert_state RENAME TO savedq_alert_state_before;
CREATE TABLE savedq_alert_state ${ALERT_STATE};
INSERT INTO savedq_alert_state (source, name, state, since, holding_since, evaluated_at, notified_at, detail, lease_owner, lease_until)
  SELECT '', name, state, since, holding_since, evaluated_at, notified_at, detail, lease_owner, lease_until FROM savedq_alert_state_before;
DROP TABLE savedq_alert_state_before;
ALTER TABLE savedq_alert_history ADD COLUMN source TEXT NOT NULL DEFAULT '';
ALTER TABLE savedq_alert_outbox ADD COLUMN source TEXT NOT NULL DEFAULT '';
DROP INDEX IF EXISTS savedq_alert_history_name;
DROP INDEX IF EXISTS savedq_alert_outbox_waiting;
`;

/** The indexes of the alert tables, made once their columns are (after ALERT_SOURCES, for a file from before). */
const INDEXES = `
CREATE INDEX IF NOT EXISTS savedq_alert_history_of ON savedq_alert_history (source, name, id);
CREATE INDEX IF NOT EXISTS savedq_alert_outbox_of ON savedq_alert_outbox (source, name, id) WHERE delivered_at IS NULL AND given_up_at IS NULL;
`;

/**
 * The SQLite file savedq keeps what it keeps between calls in (the default: nothing to install): cached
 * answers, served records and servers' generations through keyv + @keyv/sqlite, and savedq's own tables
 * (alerts, leases, buckets, processes) on a connection of their own, opened when first needed (a cache
 * hit never opens it). Several processes share it safely: WAL journal, busy timeout, one statement a
 * write or one transaction. A file that is not usable is said once and not used for the rest of the
 * process (it will not become usable while it runs); a damaged database is moved aside and rebuilt,
 * and a path that is not a database's (a folder, a device, a file of other text) is left as it is.
 */
export class SqliteStore extends CommonStore implements Store {
  readonly backend = 'sqlite' as const;
  readonly file: string;
  readonly #warn: Warn;
  readonly #pathProblem: () => Unsafe;
  readonly #health: StoreHealth;
  #keyv: Promise<Keyv> | undefined;
  #sql: Promise<SqliteSession> | undefined;

  constructor(file: string, warn: Warn, pathProblem = sqlitePathCheck(file)) {
    super();
    this.file = file;
    this.#warn = warn;
    this.#pathProblem = pathProblem;
    this.#health = new StoreHealth(warn, { failed: (reason) => `results cache ${file} is not usable (${reason}); answering without it.` });
  }

  get location(): string {
    return this.file;
  }

  get up(): boolean {
    return this.#health.up;
  }

  observe(listener: (operation: string, seconds: number, up: boolean) => void): () => void {
    return this.#health.observe(listener);
  }

  async #open(): Promise<Keyv> {
    const [{ default: KeyvClass }, { default: KeyvSqlite }] = await loadingSqlite(Promise.all([import('keyv'), import('@keyv/sqlite')]));
    // A file that was never a database is someone's: left as it is, its mode too (the store is not used).
    const unsafe = this.#pathProblem() ?? ownFile(this.file);
    if (unsafe !== undefined) throw new Error(unsafe);
    const connect = async (): Promise<Keyv> => {
      const store = new KeyvSqlite({ uri: `sqlite://${this.file}`, busyTimeout: BUSY_TIMEOUT_MS, iterationLimit: 1000 });
      store.on('error', () => undefined); // failures reach us through the rejected query below
      try {
        await store.query('PRAGMA journal_mode = WAL');
        await store.query('PRAGMA synchronous = NORMAL');
      } catch (err) {
        await store.disconnect().catch(() => undefined);
        throw err;
      }
      // throwOnErrors: keyv otherwise turns a failed read into a silent miss, and we want to warn.
      const keyv = new KeyvClass({ store, namespace: NAMESPACE, throwOnErrors: true });
      keyv.on('error', () => undefined);
      return keyv;
    };
    try {
      return await whileBusy(connect);
    } catch (err) {
      if (!isCorrupt(err)) throw err;
      // A damaged database: keep the old file for inspection and start a new one.
      renameSync(this.file, `${this.file}.corrupt-${Date.now()}`);
      this.#warn(`cache file ${this.file} was damaged; moved it aside and started a new one.`);
      return connect();
    }
  }

  /** Runs an operation on keyv; any failure takes the file out of use and yields `fallback`. */
  protected kv<T>(operation: string, fallback: T, op: (keyv: Keyv) => Promise<T>): Promise<T> {
    return this.#health.run(operation, fallback, async () => op(await (this.#keyv ??= this.#open())));
  }

  /** SQL on keyv's own table (`keyv`): what keyv has no call for (listing, pruning). */
  #table<T>(operation: string, fallback: T[], statement: string, ...params: unknown[]): Promise<T[]> {
    return this.kv(operation, fallback, (keyv) => (keyv.store as { query(sql: string, ...params: unknown[]): Promise<T[]> }).query(statement, ...params));
  }

  /**
   * The connection of savedq's own tables, made on first use (the file checked as keyv's is), once
   * keyv's is open: one connection makes a new file WAL and its first table, the other then finds it so
   * (two at once, one was refused 'database is locked', which waits for no busy timeout).
   */
  #session(): Promise<SqliteSession> {
    this.#sql ??= (async () => {
      const unsafe = this.#pathProblem() ?? ownFile(this.file);
      if (unsafe !== undefined) throw new UnusableFile(unsafe);
      await (this.#keyv ??= this.#open());
      return whileBusy(() => SqliteSession.open(this.file));
    })();
    return this.#sql;
  }

  /** An operation on savedq's tables, taken as any other: a failure takes the file out of use. */
  protected sql<T>(operation: string, fallback: T, op: (db: SqliteSession) => Promise<T>): Promise<T> {
    return this.#health.run(operation, fallback, async () => op(await this.#session()));
  }

  protected entryKey(kind: EntryKind, key: string): string {
    return `${kind}:${key}`;
  }

  /** The live served records, read by the store's iterator narrowed to them, never the results. */
  served(): Promise<ServedRecord[]> {
    return this.kv('list', [] as ServedRecord[], async (keyv) => {
      const found: ServedRecord[] = [];
      const store = keyv.store as { iterator(prefix: string): AsyncGenerator<[string, unknown]> };
      const full = `${NAMESPACE}:served:`;
      for await (const [rawKey, raw] of store.iterator(`${NAMESPACE}:served`)) {
        if (!rawKey.startsWith(full)) continue;
        const data = await keyv.deserializeData<ServedRecord>(raw as string);
        if (data?.value === undefined || (typeof data.expires === 'number' && data.expires < Date.now())) continue;
        found.push(data.value);
      }
      return found;
    });
  }

  async forget(key: string): Promise<void> {
    await this.#table('forget', [], 'DELETE FROM keyv WHERE key IN (?, ?)', `${NAMESPACE}:result:${key}`, `${NAMESPACE}:served:${key}`);
  }

  async prune(maxBytes: number, now: number): Promise<{ expired: number; evicted: number }> {
    // A value that is not JSON (damaged) can never be read: it goes too.
    const past = "(key LIKE 'savedq:result:%' OR key LIKE 'savedq:served:%') AND CASE WHEN json_valid(value) THEN json_extract(value, '$.expires') < ? ELSE 1 END";
    // Counted as calls, as evictions are: a result and its served record are one.
    const expired = await this.#table<{ n: number }>('prune', [], `SELECT count(DISTINCT substr(key, 15)) AS n FROM keyv WHERE ${past}`, now);
    await this.#table('prune', [], `DELETE FROM keyv WHERE ${past}`, now);
    let evicted = 0;
    const [size] = await this.#table<{ bytes: number | null }>('prune', [], 'SELECT sum(length(key) + length(value)) AS bytes FROM keyv');
    let bytes = size?.bytes ?? 0;
    if (bytes > maxBytes) {
      // Oldest served first; each result goes with its served record.
      const served = await this.#table<{ key: string; bytes: number }>(
        'prune',
        [],
        "SELECT substr(s.key, 15) AS key, length(r.value) + length(s.value) AS bytes FROM keyv s LEFT JOIN keyv r ON r.key = 'savedq:result:' || substr(s.key, 15) WHERE s.key LIKE 'savedq:served:%' AND json_valid(s.value) ORDER BY json_extract(s.value, '$.value.servedAt')",
      );
      for (const entry of served) {
        if (bytes <= maxBytes) break;
        await this.forget(entry.key);
        bytes -= entry.bytes ?? 0;
        evicted += 1;
      }
    }
    return { expired: expired[0]?.n ?? 0, evicted };
  }

  /**
   * Bytes of the file in use (its pages less the free ones), in one statement. The file's
   * own size never shrinks (SQLite reuses freed pages), so a bound checked against it would prune on
   * every miss once the file had reached it.
   */
  async bytes(): Promise<number> {
    const [size] = await this.#table<{ bytes: number }>('size', [], 'SELECT (p.page_count - f.freelist_count) * s.page_size AS bytes FROM pragma_page_count() p, pragma_freelist_count() f, pragma_page_size() s');
    return size?.bytes ?? 0;
  }

  async clear(): Promise<number> {
    const [counted] = await this.#table<{ n: number }>('clear', [], "SELECT count(*) AS n FROM keyv WHERE key LIKE 'savedq:served:%'");
    await this.#table('clear', [], "DELETE FROM keyv WHERE key LIKE 'savedq:result:%' OR key LIKE 'savedq:served:%'");
    await this.signal({ kind: 'cleared' });
    return counted?.n ?? 0;
  }

  /** Counted in keyv (`signal:<kind>`): the others see the count change when they next look. */
  async signal(what: StoreSignal): Promise<void> {
    if (what.kind !== 'cleared') return; // a server's generation is looked at by whoever serves it
    await this.kv('signal', undefined, (keyv) => generations.cleared(keyv));
  }

  listen(onSignal: (what: StoreSignal) => void): () => void {
    return this.watchClears(onSignal);
  }

  /** Alerts keep their state here: a file that cannot be used is refused, naming it (alerts do not run blind). */
  alerts(source: string): AlertRecords {
    return alertRecords(this.#alertSession, source);
  }

  readonly #alertSession = sessionWhenReady(async () => {
    try {
      return await this.#session();
    } catch (err) {
      if (err instanceof UnusableFile) throw new InputError(`alerts keep their state in the cache file, and ${err.message}.`);
      throw err;
    }
  });

  async probe(): Promise<StoreProbe> {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const keyv = await (this.#keyv ??= this.#open());
      await (keyv.store as { query(sql: string): Promise<unknown> }).query('SELECT 1');
      return { up: true, seconds: seconds() };
    } catch (err) {
      return { up: false, seconds: seconds(), reason: reasonOf(err) };
    }
  }

  async close(): Promise<void> {
    await this.#health.settled();
    const [keyv, sql] = [this.#keyv, this.#sql];
    this.#keyv = undefined;
    this.#sql = undefined;
    if (keyv) await (await keyv.catch(() => undefined))?.disconnect().catch(() => undefined);
    if (sql) await (await sql.catch(() => undefined))?.close();
  }
}

/** The file is not one savedq may use (what fs.ts says of it): said once, never tried again. */
class UnusableFile extends Error {}

/** savedq's own tables of the file, on a sqlite3 connection of their own: statements one at a time, a transaction never interleaved. */
class SqliteSession implements SqlSession {
  readonly #db: Database;
  readonly #statements = new Map<string, Statement>();
  #turn: Promise<unknown> = Promise.resolve();

  private constructor(db: Database) {
    this.#db = db;
  }

  static async open(file: string): Promise<SqliteSession> {
    const { default: sqlite3 } = await loadingSqlite(import('sqlite3'));
    const db = await new Promise<Database>((resolve, reject) => {
      const opened: Database = new sqlite3.Database(file, (err) => (err ? reject(err) : resolve(opened)));
    });
    db.configure('busyTimeout', BUSY_TIMEOUT_MS);
    const session = new SqliteSession(db);
    // As keyv's connection: a commit is not waited on the disk for (a WAL's fsync at checkpoints only),
    // so a process's crash loses nothing, and a power cut at most the last decisions, each whole (an
    // alert decided again at its next turn, a notification sent once more). The lease an uncached call
    // takes, and lets go of, would otherwise wait on the disk twice per call.
    try {
      await session.#exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL');
      await session.#exec(SCHEMA);
      await session.#giveAlertsSources();
      await session.#exec(INDEXES);
      return session;
    } catch (err) {
      await session.close();
      throw err;
    }
  }

  /** A file's alert tables from a savedq before alerts had a source, brought up to date once (whoever opens it first). */
  async #giveAlertsSources(): Promise<void> {
    const hasSource = async () => (await this.#all<{ n: number }>("SELECT count(*) AS n FROM pragma_table_info('savedq_alert_state') WHERE name = 'source'", []))[0]?.n === 1;
    if (await hasSource()) return;
    await this.transaction(async () => {
      if (!(await hasSource())) await this.#exec(ALERT_SOURCES);
    });
  }

  #exec(sql: string): Promise<void> {
    return new Promise((resolve, reject) => this.#db.exec(sql, (err) => (err ? reject(err) : resolve())));
  }

  /**
   * A statement of savedq's SQL (a few fixed texts, values bound), prepared once: run again, it is one
   * trip to SQLite's thread, where a statement made for each use takes a second one to be prepared
   * (a lease is taken before every uncached call: docs/performance.md). One that failed is made anew.
   */
  #statement(sql: string): Statement {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(table(sql), () => undefined); // its failure reaches the statement's callers
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  #failed(sql: string, statement: Statement): void {
    if (this.#statements.get(sql) === statement) this.#statements.delete(sql);
    statement.finalize();
  }

  #all<T>(sql: string, params: readonly unknown[]): Promise<T[]> {
    const statement = this.#statement(sql);
    return new Promise((resolve, reject) =>
      statement.all(params, (err: Error | null, rows: T[]) => {
        if (err) {
          this.#failed(sql, statement);
          reject(err);
        } else resolve(rows);
      }),
    );
  }

  #run(sql: string, params: readonly unknown[]): Promise<number> {
    const statement = this.#statement(sql);
    const failed = (): void => this.#failed(sql, statement);
    return new Promise((resolve, reject) =>
      statement.run(params, function (err) {
        if (err) {
          failed();
          reject(err);
        } else resolve(this.changes);
      }),
    );
  }

  /** Runs `work` in this connection's turn. */
  #inTurn<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#turn.then(work, work);
    this.#turn = next.catch(() => undefined);
    return next;
  }

  all<T>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    return this.#inTurn(() => this.#all<T>(sql, params));
  }

  run(sql: string, params: readonly unknown[] = []): Promise<number> {
    return this.#inTurn(() => this.#run(sql, params));
  }

  transaction<T>(work: (tx: SqlSession) => Promise<T>): Promise<T> {
    // Inside the turn, the statements of the work go straight to the connection (not in turn again).
    const tx: SqlSession = { all: (sql, params = []) => this.#all(sql, params), run: (sql, params = []) => this.#run(sql, params), transaction: (inner) => inner(tx) };
    return this.#inTurn(async () => {
      await this.#exec('BEGIN IMMEDIATE');
      try {
        const result = await work(tx);
        await this.#exec('COMMIT');
        return result;
      } catch (err) {
        await this.#exec('ROLLBACK').catch(() => undefined);
        throw err;
      }
    });
  }

  close(): Promise<void> {
    return this.#inTurn(async () => {
      await Promise.all([...this.#statements.values()].map((statement) => new Promise<void>((resolve) => statement.finalize(() => resolve()))));
      this.#statements.clear();
      await new Promise<void>((resolve) => this.#db.close(() => resolve()));
    });
  }
}

/** savedq's tables are savedq_<name> in the file; keyv's is keyv. */
const table = (sql: string) => withTables(sql, (name) => (name === 'keyv' ? name : `savedq_${name}`));

/** How long opening the file is tried again while SQLite says another connection is making it (see whileBusy). */
const OPEN_BUSY_MS = 5_000;

/**
 * Opening the file (`open`), again while SQLite refuses it as busy: a new file made WAL, or its tables
 * made, by another connection at the same moment (another process, or this one's other connection) is
 * refused at once, SQLite's busy timeout waiting only for a write under way. Then the open is made
 * anew a few milliseconds on, for OPEN_BUSY_MS at most; any other failure is thrown at once.
 */
async function whileBusy<T>(open: () => Promise<T>): Promise<T> {
  const until = Date.now() + OPEN_BUSY_MS;
  for (let pause = 5; ; pause = Math.min(pause * 2, 200)) {
    try {
      return await open();
    } catch (err) {
      if ((err as { code?: unknown } | undefined)?.code !== 'SQLITE_BUSY' || Date.now() >= until) throw err;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

function isCorrupt(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT';
}
