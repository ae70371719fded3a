import { nodeCrypto } from '../lazy.js';
import Keyv from 'keyv';
import type pg from 'pg';
import { InputError, SavedqError } from '../errors.js';
import { StoreHealth, StoreUnreachable, reasonOf, withDeadline, type Warn } from './health.js';
import { alertRecords } from './records.js';
import { generations, NAMESPACE } from './marks.js';
import { loadPgDriver, type PgDriver } from './load-pg.js';
import { CommonStore, type EntryKind } from './common.js';
import { sessionWhenReady, withTables, type SqlSession } from './sql.js';
import type { AlertRecords, ServedRecord, Store, StoreProbe, StoreSignal } from './types.js';

// PostgreSQL as the store of a team's processes (docs/scaling.md). node-postgres is a bundle of its own
// (dist/store-pg.cjs, store/load-pg.ts), loaded only when a store URL is given: no other run loads it.

/** The version of the tables this savedq makes and reads; a store of a higher one is a newer savedq's. */
export const SCHEMA_VERSION = 2;
/** An operation that takes longer has failed: the store is as good as unreachable. */
const DEADLINE_MS = 1_000;
/** A store that failed is tried again this long after. */
const RETRY_MS = 5_000;

/** Where a PostgreSQL store is, and as whom. */
export interface PostgresOptions {
  /** libpq's URL, its password included when one is given (never shown). */
  readonly url: string;
  /** The URL as it may be shown: without its password. */
  readonly shown: string;
  /** The schema of savedq's tables. */
  readonly schema: string;
  /** Connections at once (serve more than a command). */
  readonly connections: number;
}

/**
 * The tables of a store, version 2. `keyv` is keyv's (key, value), with what savedq reads of a value
 * kept as columns of their own. An alert's state, history and outbox are those of a source's data
 * (version 1 kept them by the alert's name alone: MIGRATIONS).
 */
function schemaDdl(s: string): string[] {
  return [
    `CREATE SCHEMA IF NOT EXISTS ${s}`,
    `CREATE TABLE ${s}.meta (key text PRIMARY KEY, value text NOT NULL)`,
    `CREATE TABLE ${s}.keyv (
      key text PRIMARY KEY,
      value text NOT NULL,
      expires bigint GENERATED ALWAYS AS (CAST(substring(right(value, 40) FROM '"expires":([0-9]+)}$') AS bigint)) STORED,
      served_at bigint GENERATED ALWAYS AS (CASE WHEN key LIKE 'savedq:served:%' THEN CAST(CAST(value AS jsonb) #>> '{value,servedAt}' AS bigint) END) STORED,
      bytes integer GENERATED ALWAYS AS (octet_length(key) + octet_length(value)) STORED
    )`,
    `CREATE INDEX keyv_expires ON ${s}.keyv (expires) WHERE expires IS NOT NULL`,
    `CREATE INDEX keyv_served_at ON ${s}.keyv (served_at) WHERE served_at IS NOT NULL`,
    `CREATE TABLE ${s}.leases (name text PRIMARY KEY, owner text NOT NULL, until bigint NOT NULL)`,
    `CREATE TABLE ${s}.buckets (name text PRIMARY KEY, tokens double precision NOT NULL, at bigint NOT NULL)`,
    `CREATE TABLE ${s}.processes (id text PRIMARY KEY, host text NOT NULL, pid integer NOT NULL, version text NOT NULL, role text NOT NULL, seen bigint NOT NULL)`,
    `CREATE TABLE ${s}.alert_state (source text NOT NULL DEFAULT '', name text NOT NULL, state text, since bigint, holding_since bigint, evaluated_at bigint, notified_at bigint, detail text, lease_owner text, lease_until bigint, PRIMARY KEY (source, name))`,
    `CREATE TABLE ${s}.alert_history (id bigserial PRIMARY KEY, source text NOT NULL DEFAULT '', name text NOT NULL, at bigint NOT NULL, old_state text, new_state text NOT NULL, detail text NOT NULL)`,
    `CREATE INDEX alert_history_of ON ${s}.alert_history (source, name, id)`,
    `CREATE TABLE ${s}.alert_outbox (id bigserial PRIMARY KEY, source text NOT NULL DEFAULT '', name text NOT NULL, target text NOT NULL, payload text NOT NULL, created_at bigint NOT NULL, next_at bigint NOT NULL, attempts integer NOT NULL DEFAULT 0, last_error text, delivered_at bigint, given_up_at bigint)`,
    `CREATE INDEX alert_outbox_of ON ${s}.alert_outbox (source, name, id) WHERE delivered_at IS NULL AND given_up_at IS NULL`,
    `INSERT INTO ${s}.meta (key, value) VALUES ('version', '${SCHEMA_VERSION}')`,
  ];
}

/** What brings a store's tables from each version to the next: from 1, the source of each alert's rows (`''` for those kept before). */
const MIGRATIONS: Readonly<Record<number, (s: string) => string[]>> = {
  1: (s) => [
    `ALTER TABLE ${s}.alert_state ADD COLUMN source text NOT NULL DEFAULT ''`,
    `ALTER TABLE ${s}.alert_state DROP CONSTRAINT alert_state_pkey`,
    `ALTER TABLE ${s}.alert_state ADD PRIMARY KEY (source, name)`,
    `ALTER TABLE ${s}.alert_history ADD COLUMN source text NOT NULL DEFAULT ''`,
    `ALTER TABLE ${s}.alert_outbox ADD COLUMN source text NOT NULL DEFAULT ''`,
    `DROP INDEX ${s}.alert_history_name`,
    `DROP INDEX ${s}.alert_outbox_waiting`,
    `CREATE INDEX alert_history_of ON ${s}.alert_history (source, name, id)`,
    `CREATE INDEX alert_outbox_of ON ${s}.alert_outbox (source, name, id) WHERE delivered_at IS NULL AND given_up_at IS NULL`,
  ],
};

/** A key as the store keeps it: keys hold parameters and callers' SQL, longer than an index takes, so a digest of them. */
function stored(kind: string, key: string): string {
  return `${kind}:${nodeCrypto().createHash('sha256').update(key).digest('base64url')}`;
}

/** bigint (int8, oid 20) columns as numbers: epoch milliseconds and counts, well within 2^53. */
const INT8 = 20;
function typesOf(driver: PgDriver): { getTypeParser: typeof pg.types.getTypeParser } {
  const parse = (oid: number, format?: 'text' | 'binary'): unknown =>
    // An oid is a number; node-postgres's types name the known ones in an enum.
    // eslint-disable-next-line @typescript-eslint/no-unsafe-enum-assignment
    oid === INT8 ? (value: string) => Number(value) : driver.pg.types.getTypeParser(oid, format);
  return { getTypeParser: parse as typeof pg.types.getTypeParser };
}

/** The PostgreSQL error codes that mean a table or schema of savedq's is not there yet. */
const MISSING = new Set(['42P01', '3F000']);

/**
 * PostgreSQL as the store (docs/scaling.md): cached answers and served records through keyv +
 * @keyv/postgres, on node-postgres's pool, which savedq's own SQL shares (listing, pruning, leases,
 * transactions, LISTEN/NOTIFY). The tables are created on first use in savedq's schema, versioned.
 * A store that does not answer within a second is down for the process: calls are answered from the
 * warehouse uncached, a warning is said once a minute, and it is tried again every few seconds.
 */
export class PostgresStore extends CommonStore implements Store {
  readonly backend = 'postgres' as const;
  readonly #options: PostgresOptions;
  readonly #health: StoreHealth;
  #pool: Promise<pg.Pool> | undefined;
  #ready: Promise<Keyv> | undefined;

  constructor(options: PostgresOptions, warn: Warn) {
    super();
    this.#options = options;
    this.#health = new StoreHealth(warn, {
      failed: (reason) => `the store ${options.shown} cannot be reached (${reason}); answering from the warehouse, uncached, until it can.`,
      back: () => `the store ${options.shown} answers again: answers are cached again.`,
      retryMs: RETRY_MS,
      deadlineMs: DEADLINE_MS,
      warnEveryMs: 60_000,
    });
    this.#health.observe((_operation, _seconds, up) => {
      // A pool whose connections hang (a store cut off) is let go: the next try makes a new one.
      if (!up) void this.#reset();
    });
  }

  get location(): string {
    return this.#options.shown;
  }

  /** The schema savedq's tables are in. */
  get schema(): string {
    return this.#options.schema;
  }

  get up(): boolean {
    return this.#health.up;
  }

  observe(listener: (operation: string, seconds: number, up: boolean) => void): () => void {
    return this.#health.observe(listener);
  }

  #connections(): Promise<pg.Pool> {
    this.#pool ??= (async () => {
      const driver = await loadPgDriver();
      const pool = new driver.pg.Pool({
        connectionString: this.#options.url,
        max: this.#options.connections,
        connectionTimeoutMillis: DEADLINE_MS,
        idleTimeoutMillis: 10_000,
        keepAlive: true,
        application_name: 'savedq',
        types: typesOf(driver),
      });
      // A connection lost while idle says so here; the next query finds out for itself.
      pool.on('error', () => undefined);
      return pool;
    })();
    return this.#pool;
  }

  /** Lets go of the pool (and keyv on it): the next operation makes new ones. */
  #reset(): Promise<void> {
    const pool = this.#pool;
    this.#pool = undefined;
    this.#ready = undefined;
    return pool?.then((p) => p.end()).catch(() => undefined) ?? Promise.resolve();
  }

  /** SQL of {name} tables with `?` parameters, on the pool (any connection) or on a transaction's connection. */
  async #query<T>(sql: string, params: readonly unknown[] = [], on?: pg.PoolClient): Promise<Omit<pg.QueryResult, 'rows'> & { rows: T[] }> {
    let n = 0;
    const text = withTables(sql, (name) => `${this.#options.schema}.${name}`).replace(/\?/g, () => `$${++n}`);
    try {
      return (await (on ?? (await this.#connections())).query(text, [...params])) as pg.QueryResult & { rows: T[] };
    } catch (err) {
      throw this.#failure(err);
    }
  }

  /**
   * What a failure of PostgreSQL's is to savedq: a refusal naming what to do, or the store unreachable.
   * `doing` is what was asked when it failed: making savedq's tables, bringing them up to this
   * version, or using them (what a refused privilege needs granted differs).
   */
  #failure(err: unknown, doing: 'make' | 'upgrade' | 'use' = 'use'): unknown {
    if (err instanceof SavedqError) return err;
    const code = (err as { code?: string }).code;
    const store = `the store ${this.#options.shown}`;
    const url = new URL(this.#options.url);
    const user = decodeURIComponent(url.username) || 'that user';
    if (code === '42501') {
      const schema = this.#options.schema;
      const reason = reasonOf(err);
      if (doing === 'make') {
        const database = decodeURIComponent(url.pathname.slice(1)) || 'the database';
        return new InputError(`${store} refused: its user may not make savedq's tables (${reason}); GRANT CREATE ON DATABASE ${database} TO ${user}, or run savedq init --store as one who may.`);
      }
      if (doing === 'upgrade') return new InputError(`${store} refused: its user may not bring savedq's tables up to this savedq's version (${reason}); run savedq init --store as their owner.`);
      return new InputError(
        `${store} refused: its user may not use savedq's tables (${reason}); as their owner, GRANT USAGE ON SCHEMA ${schema} TO ${user}; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${user}; GRANT USAGE ON ALL SEQUENCES IN SCHEMA ${schema} TO ${user}.`,
      );
    }
    // The server asked for a password and none was given (node-postgres says so in words of its own, no code).
    if (url.password === '' && process.env.PGPASSWORD === undefined && err instanceof Error && /password/i.test(err.message) && code === undefined) {
      return new InputError(`${store} asks for a password: give --store-password-file (or SAVEDQ_STORE_PASSWORD_FILE), or put it in the URL.`);
    }
    if (code === '28P01' || code === '28000') return new InputError(`${store} refused savedq's credentials (the user ${user}, or its password).`);
    if (code === '3D000') return new InputError(`${store} has no such database.`);
    return new StoreUnreachable(reasonOf(err));
  }

  /** The tables, made when missing (once, whoever comes first), and keyv on them; a newer savedq's refused by name. */
  #open(): Promise<Keyv> {
    this.#ready ??= (async () => {
      await this.#ensureSchema();
      const query = async (sql: string, values?: unknown[]) => {
        // keyv's own CREATE TABLE: the table is savedq's, made with the columns savedq reads.
        if (/^\s*CREATE\b/i.test(sql)) return [];
        return (await (await this.#connections()).query<Record<string, unknown>>(sql, values)).rows;
      };
      const { KeyvPostgres } = await loadPgDriver();
      class SharedPool extends KeyvPostgres {
        override async connect() {
          return query;
        }
      }
      const store = new SharedPool({ schema: this.#options.schema, table: 'keyv' });
      store.on('error', () => undefined);
      const keyv = new Keyv({ store, namespace: NAMESPACE, throwOnErrors: true });
      keyv.on('error', () => undefined);
      return keyv;
    })();
    this.#ready.catch(() => (this.#ready = undefined));
    return this.#ready;
  }

  async #ensureSchema(): Promise<void> {
    let version: number;
    try {
      const rows = (await (await this.#connections()).query<{ value: string }>(`SELECT value FROM ${this.#options.schema}.meta WHERE key = 'version'`)).rows;
      version = Number(rows[0]?.value ?? 0);
    } catch (err) {
      if (!isMissing(err)) throw this.#failure(err);
      await this.create();
      return;
    }
    this.#checkVersion(version);
    if (version < SCHEMA_VERSION) await this.create();
  }

  #checkVersion(version: number): void {
    if (version > SCHEMA_VERSION) {
      throw new InputError(`the store ${this.#options.shown} holds savedq's tables of a newer savedq (version ${version}; this one knows ${SCHEMA_VERSION}): upgrade savedq.`);
    }
  }

  /**
   * Makes savedq's schema and tables when they are not there, or brings an older savedq's up to this
   * one's version (`savedq init --store`, or the first process to need them); one process at a time does.
   */
  async create(): Promise<'made' | 'there' | 'upgraded'> {
    const client = await this.#client().catch((err: unknown) => {
      throw err instanceof StoreUnreachable ? new StoreUnreachable(`the store ${this.#options.shown} cannot be reached (${err.message}).`) : err;
    });
    const schema = this.#options.schema;
    let doing: 'make' | 'upgrade' | 'use' = 'use';
    try {
      await client.query('BEGIN');
      await client.query("SELECT pg_advisory_xact_lock(hashtext('savedq schema'))");
      const there = await client.query<{ n: number }>('SELECT CAST(count(*) AS INTEGER) AS n FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2', [schema, 'meta']);
      if ((there.rows[0]?.n ?? 0) > 0) {
        const [row] = (await client.query<{ value: string }>(`SELECT value FROM ${schema}.meta WHERE key = 'version'`)).rows;
        const version = Number(row?.value ?? 0);
        this.#checkVersion(version);
        doing = 'upgrade';
        for (let from = version; from < SCHEMA_VERSION; from++) for (const statement of MIGRATIONS[from]?.(schema) ?? []) await client.query(statement);
        if (version < SCHEMA_VERSION) await client.query(`UPDATE ${schema}.meta SET value = $1 WHERE key = 'version'`, [String(SCHEMA_VERSION)]);
        await client.query('COMMIT');
        return version < SCHEMA_VERSION ? 'upgraded' : 'there';
      }
      doing = 'make';
      for (const statement of schemaDdl(this.#options.schema)) await client.query(statement);
      await client.query('COMMIT');
      return 'made';
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw this.#failure(err, doing);
    } finally {
      client.release();
    }
  }

  async #client(): Promise<pg.PoolClient> {
    try {
      return await (await this.#connections()).connect();
    } catch (err) {
      throw this.#failure(err);
    }
  }

  /** An operation through keyv, guarded: a store that fails answers `fallback`. */
  protected kv<T>(operation: string, fallback: T, op: (keyv: Keyv) => Promise<T>): Promise<T> {
    return this.#guarded(operation, fallback, async () => {
      const keyv = await this.#open();
      try {
        return await op(keyv);
      } catch (err) {
        throw this.#failure(err);
      }
    });
  }

  /**
   * An operation guarded by the store's health (its deadline, its fallback). node-postgres is loaded
   * first, outside the deadline: loading this process's own code, slow on a busy machine, is no
   * slowness of the store's.
   */
  async #guarded<T>(operation: string, fallback: T, work: () => Promise<T>): Promise<T> {
    await loadPgDriver();
    return this.#health.run(operation, fallback, work);
  }

  /** An operation of savedq's own SQL, guarded. */
  protected sql<T>(operation: string, fallback: T, op: (db: SqlSession) => Promise<T>): Promise<T> {
    return this.#guarded(operation, fallback, async () => {
      await this.#open();
      return op(this.#session);
    });
  }

  /** savedq's SQL on the pool: a statement on any connection, a transaction on one of its own. */
  readonly #session: SqlSession = {
    all: async <T>(sql: string, params: readonly unknown[] = []) => (await this.#query<T>(sql, params)).rows,
    run: async (sql: string, params: readonly unknown[] = []) => (await this.#query(sql, params)).rowCount ?? 0,
    transaction: async <T>(work: (tx: SqlSession) => Promise<T>): Promise<T> => {
      const client = await this.#client();
      const tx: SqlSession = {
        all: async <R>(sql: string, params: readonly unknown[] = []) => (await this.#query<R>(sql, params, client)).rows,
        run: async (sql: string, params: readonly unknown[] = []) => (await this.#query(sql, params, client)).rowCount ?? 0,
        transaction: (inner) => inner(tx),
      };
      try {
        await client.query('BEGIN');
        const result = await work(tx);
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err instanceof SavedqError ? err : this.#failure(err);
      } finally {
        client.release();
      }
    },
  };

  protected entryKey(kind: EntryKind, key: string): string {
    return stored(kind, key);
  }

  served(): Promise<ServedRecord[]> {
    return this.kv('list', [] as ServedRecord[], async (keyv) => {
      const rows = (await this.#query<{ value: string }>("SELECT value FROM {keyv} WHERE key LIKE 'savedq:served:%' AND (expires IS NULL OR expires >= ?)", [Date.now()])).rows;
      const records: ServedRecord[] = [];
      for (const row of rows) {
        const data = await keyv.deserializeData<ServedRecord>(row.value);
        if (data?.value !== undefined) records.push(data.value);
      }
      return records;
    });
  }

  async forget(key: string): Promise<void> {
    await this.sql('forget', undefined, async (db) => {
      await db.run('DELETE FROM {keyv} WHERE key IN (?, ?)', [`${NAMESPACE}:${stored('result', key)}`, `${NAMESPACE}:${stored('served', key)}`]);
    });
  }

  prune(maxBytes: number, now: number): Promise<{ expired: number; evicted: number }> {
    return this.sql('prune', { expired: 0, evicted: 0 }, async (db) => {
      const expired = callsIn(await db.all<{ key: string }>("DELETE FROM {keyv} WHERE (key LIKE 'savedq:result:%' OR key LIKE 'savedq:served:%') AND expires < ? RETURNING key", [now]));
      const excess = (await this.#bytes(db)) - maxBytes;
      if (excess <= 0) return { expired, evicted: 0 };
      // The least recently served first, each result with its served record, until they free the excess.
      const gone = await db.all<{ key: string }>(
        `WITH ranked AS (
           SELECT substr(s.key, 15) AS h, s.bytes + coalesce(r.bytes, 0) AS b,
                  sum(s.bytes + coalesce(r.bytes, 0)) OVER (ORDER BY s.served_at, s.key ROWS UNBOUNDED PRECEDING) AS upto
           FROM {keyv} s LEFT JOIN {keyv} r ON r.key = 'savedq:result:' || substr(s.key, 15)
           WHERE s.served_at IS NOT NULL),
         victims AS (SELECT h FROM ranked WHERE upto - b < ?)
         DELETE FROM {keyv} WHERE key IN (SELECT 'savedq:served:' || h FROM victims UNION ALL SELECT 'savedq:result:' || h FROM victims) RETURNING key`,
        [excess],
      );
      return { expired, evicted: callsIn(gone) };
    });
  }

  async #bytes(db: SqlSession): Promise<number> {
    const [row] = await db.all<{ bytes: number | string }>("SELECT CAST(coalesce(sum(bytes), 0) AS BIGINT) AS bytes FROM {keyv} WHERE key LIKE 'savedq:result:%' OR key LIKE 'savedq:served:%'");
    return Number(row?.bytes ?? 0);
  }

  bytes(): Promise<number> {
    return this.sql('size', 0, (db) => this.#bytes(db));
  }

  async clear(): Promise<number> {
    const n = await this.sql('clear', 0, async (db) => callsIn(await db.all<{ key: string }>("DELETE FROM {keyv} WHERE key LIKE 'savedq:served:%' OR key LIKE 'savedq:result:%' RETURNING key")));
    await this.signal({ kind: 'cleared' });
    return n;
  }

  /** NOTIFY on savedq's channel (the schema's), and, for `cleared`, a count the others can look at. */
  async signal(what: StoreSignal): Promise<void> {
    if (what.kind === 'cleared') {
      await this.kv('signal', undefined, (keyv) => generations.cleared(keyv));
    }
    await this.sql('signal', undefined, async (db) => {
      await db.all('SELECT pg_notify(?, ?)', [this.#channel, JSON.stringify(what)]);
    });
  }

  get #channel(): string {
    return `savedq_${this.#options.schema}`;
  }

  /**
   * Listens on a connection of its own (LISTEN), made again when it is lost, and looks every half second
   * too, for what it may have missed meanwhile.
   */
  listen(onSignal: (what: StoreSignal) => void): () => void {
    let stopped = false;
    let client: pg.Client | undefined;
    let connecting = false;
    const connect = async () => {
      if (stopped || client || connecting) return;
      connecting = true;
      try {
        await connectOnce();
      } finally {
        connecting = false;
      }
    };
    const connectOnce = async () => {
      const driver = await loadPgDriver();
      const c = new driver.pg.Client({ connectionString: this.#options.url, connectionTimeoutMillis: DEADLINE_MS, keepAlive: true, application_name: 'savedq listen', types: typesOf(driver) });
      c.on('error', () => {
        if (client === c) client = undefined;
        void c.end().catch(() => undefined);
      });
      c.on('notification', (message) => {
        try {
          onSignal(JSON.parse(message.payload ?? '') as StoreSignal);
        } catch {
          // not one of savedq's: nothing to do
        }
      });
      try {
        await c.connect();
        await c.query(`LISTEN ${this.#channel}`);
        if (stopped) await c.end();
        else client = c;
      } catch {
        await c.end().catch(() => undefined);
      }
    };
    // The clears counted, looked at as the SQLite store does; each look also makes the LISTEN connection
    // again if it was lost (a store back after a fault).
    const stopWatching = this.watchClears(onSignal, () => void connect());
    return () => {
      stopped = true;
      stopWatching();
      void client?.end().catch(() => undefined);
      client = undefined;
    };
  }

  alerts(source: string): AlertRecords {
    return alertRecords(this.#alertSession, source);
  }

  // Alerts do not run blind: a store that fails them says so (they wait until it answers).
  readonly #alertSession = sessionWhenReady(async () => {
    try {
      await this.#open();
    } catch (err) {
      if (err instanceof StoreUnreachable) throw new StoreUnreachable(`the store ${this.#options.shown} cannot be reached (${err.message}); alerts wait until it can`);
      throw err;
    }
    return this.#session;
  });

  async probe(): Promise<StoreProbe> {
    const started = performance.now();
    const schema = this.#options.schema;
    try {
      return await withDeadline(
        (async () => {
          const pool = await this.#connections();
          let version: number | undefined;
          try {
            version = Number((await pool.query<{ value: string }>(`SELECT value FROM ${schema}.meta WHERE key = 'version'`)).rows[0]?.value ?? 0);
          } catch (err) {
            if (!isMissing(err)) throw err;
          }
          // How long a question takes once connected (the connection made above is not what each call pays).
          const asked = performance.now();
          await pool.query('SELECT 1');
          return { up: true as const, seconds: (performance.now() - asked) / 1000, tables: { schema, version } };
        })(),
        DEADLINE_MS,
      );
    } catch (err) {
      const failure = this.#failure(err);
      // A refusal names what to fix (credentials, a database that is not there): said as an error.
      if (!(failure instanceof StoreUnreachable)) throw failure;
      void this.#reset();
      return { up: false, seconds: (performance.now() - started) / 1000, reason: reasonOf(failure) };
    }
  }

  async close(): Promise<void> {
    await this.#health.settled();
    await this.#reset();
  }
}

function isMissing(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return MISSING.has(e.code ?? '') || /does not exist/.test(e.message ?? '');
}

/** How many calls deleted rows were of: a result and its served record (`savedq:<kind>:<key>`) are one. */
function callsIn(deleted: { key: string }[]): number {
  return new Set(deleted.map((row) => row.key.slice('savedq:result:'.length))).size;
}
