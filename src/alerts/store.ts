import type { Database } from 'sqlite3';
import { InputError } from '../errors.js';
import { ownFile, type Unsafe } from '../fs.js';
import { loadingSqlite } from '../cache/sqlite-module.js';
import type { Target } from './spec.js';

/** What an alert is: its condition holds (firing), held for less than its `for` (pending), does not (ok), or could not be told (error). */
export type AlertState = 'ok' | 'pending' | 'firing' | 'error';
export const ALERT_STATES: readonly AlertState[] = ['ok', 'pending', 'firing', 'error'];

/** An alert's state as kept in the cache file (times in epoch ms of the alerts' clock). */
export interface StateRecord {
  readonly name: string;
  /** null: never evaluated. */
  readonly state: AlertState | null;
  /** When it came into this state. */
  readonly since: number | null;
  /** When its condition began to hold, while it holds (what `for` is counted from). */
  readonly holdingSince: number | null;
  readonly evaluatedAt: number | null;
  /** When it last queued a notification (what `repeat` is counted from). */
  readonly notifiedAt: number | null;
  /** What the last evaluation found: rows matched, or the error. */
  readonly detail: string | null;
}

/** A notification waiting to be delivered to one target, in order after the alert's earlier ones. */
export interface Delivery {
  readonly id: number;
  readonly alert: string;
  readonly target: Target;
  /** The JSON sent. */
  readonly payload: string;
  readonly createdAt: number;
  readonly attempts: number;
}

/** A change of state as history keeps it. */
export interface Change {
  readonly alert: string;
  readonly at: number;
  readonly oldState: AlertState | null;
  readonly newState: AlertState;
  readonly detail: string;
}

/** Changes kept an alert; older ones go. */
const HISTORY_KEPT = 1_000;
/** Delivered and abandoned notifications are kept this long (for `alerts`), then go. */
const SENT_KEPT_MS = 7 * 86_400_000;
const BUSY_TIMEOUT_MS = 10_000;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS savedq_alert_state (
  name TEXT PRIMARY KEY,
  state TEXT,
  since INTEGER,
  holding_since INTEGER,
  evaluated_at INTEGER,
  notified_at INTEGER,
  detail TEXT,
  lease_owner TEXT,
  lease_until INTEGER
);
CREATE TABLE IF NOT EXISTS savedq_alert_history (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  at INTEGER NOT NULL,
  old_state TEXT,
  new_state TEXT NOT NULL,
  detail TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS savedq_alert_history_name ON savedq_alert_history (name, id);
CREATE TABLE IF NOT EXISTS savedq_alert_outbox (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
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
CREATE INDEX IF NOT EXISTS savedq_alert_outbox_waiting ON savedq_alert_outbox (name, id) WHERE delivered_at IS NULL AND given_up_at IS NULL;
`;

interface StateRow {
  name: string;
  state: AlertState | null;
  since: number | null;
  holding_since: number | null;
  evaluated_at: number | null;
  notified_at: number | null;
  detail: string | null;
}

const recordOf = (r: StateRow): StateRecord => ({
  name: r.name,
  state: r.state,
  since: r.since,
  holdingSince: r.holding_since,
  evaluatedAt: r.evaluated_at,
  notifiedAt: r.notified_at,
  detail: r.detail,
});

/**
 * Alerts' state, history and notifications not yet delivered, in tables of their own in the cache's
 * SQLite file (the cache's pruning and `cache clear` touch only its own table). A connection of its
 * own, so that a decision (the new state, its history and its notifications) is one transaction; the
 * file's WAL journal and busy timeout let every savedq process on it share it.
 */
export class AlertStore {
  readonly #db: Database;
  /** Statements of this connection one after another: a transaction is never interleaved with another's. */
  #turn: Promise<unknown> = Promise.resolve();

  private constructor(db: Database) {
    this.#db = db;
  }

  static async open(file: string, pathProblem: () => Unsafe): Promise<AlertStore> {
    const unsafe = pathProblem() ?? ownFile(file);
    if (unsafe !== undefined) throw new InputError(`alerts keep their state in the cache file, and ${unsafe}.`);
    const { default: sqlite3 } = await loadingSqlite(import('sqlite3'));
    const db = await new Promise<Database>((resolve, reject) => {
      const opened: Database = new sqlite3.Database(file, (err) => (err ? reject(err) : resolve(opened)));
    });
    db.configure('busyTimeout', BUSY_TIMEOUT_MS);
    const store = new AlertStore(db);
    await store.#exec('PRAGMA journal_mode = WAL');
    await store.#exec(SCHEMA);
    return store;
  }

  #exec(sql: string): Promise<void> {
    return new Promise((resolve, reject) => this.#db.exec(sql, (err) => (err ? reject(err) : resolve())));
  }

  #all<T>(sql: string, ...params: unknown[]): Promise<T[]> {
    return new Promise((resolve, reject) => this.#db.all(sql, params, (err: Error | null, rows: T[]) => (err ? reject(err) : resolve(rows))));
  }

  #run(sql: string, ...params: unknown[]): Promise<number> {
    return new Promise((resolve, reject) =>
      this.#db.run(sql, params, function (err) {
        if (err) reject(err);
        else resolve(this.changes);
      }),
    );
  }

  /** Runs `work` in this connection's turn, in one transaction when `write`. */
  #inTurn<T>(work: () => Promise<T>, write = false): Promise<T> {
    const run = async () => {
      if (!write) return work();
      await this.#exec('BEGIN IMMEDIATE');
      try {
        const result = await work();
        await this.#exec('COMMIT');
        return result;
      } catch (err) {
        await this.#exec('ROLLBACK').catch(() => undefined);
        throw err;
      }
    };
    const next = this.#turn.then(run, run);
    this.#turn = next.catch(() => undefined);
    return next;
  }

  /** Every alert's state, by name. */
  states(): Promise<Map<string, StateRecord>> {
    return this.#inTurn(async () => new Map((await this.#all<StateRow>('SELECT * FROM savedq_alert_state')).map((r) => [r.name, recordOf(r)])));
  }

  /**
   * Takes an alert for `owner` until `until` (epoch ms of the real clock), unless another process holds
   * it: one evaluation of an alert at a time across the processes on one file. Returns its state, or
   * undefined when it is another's.
   */
  lease(name: string, owner: string, until: number, now: number, isGone: (owner: string) => boolean): Promise<StateRecord | undefined> {
    return this.#inTurn(async () => {
      await this.#run('INSERT OR IGNORE INTO savedq_alert_state (name) VALUES (?)', name);
      const [held] = await this.#all<{ lease_owner: string | null; lease_until: number | null }>('SELECT lease_owner, lease_until FROM savedq_alert_state WHERE name = ?', name);
      // A lease of a process that is gone (killed on this machine) is no one's.
      if (held?.lease_owner && held.lease_owner !== owner && (held.lease_until ?? 0) >= now && !isGone(held.lease_owner)) return undefined;
      const [taken] = await this.#all<StateRow>('UPDATE savedq_alert_state SET lease_owner = ?, lease_until = ? WHERE name = ? RETURNING *', owner, until, name);
      return taken ? recordOf(taken) : undefined;
    }, true);
  }

  /** Lets go of an alert taken with lease. */
  release(name: string, owner: string): Promise<void> {
    return this.#inTurn(async () => {
      await this.#run('UPDATE savedq_alert_state SET lease_owner = NULL, lease_until = NULL WHERE name = ? AND lease_owner = ?', name, owner);
    });
  }

  /**
   * Keeps what an evaluation decided, at once: the alert's new state, the change in its history, and
   * the notifications it owes, so a crash after it still delivers them (and none before it is half kept).
   */
  decide(next: StateRecord, change: Change | undefined, notifications: readonly { target: Target; payload: string }[], now: number): Promise<void> {
    return this.#inTurn(async () => {
      await this.#run(
        'UPDATE savedq_alert_state SET state = ?, since = ?, holding_since = ?, evaluated_at = ?, notified_at = ?, detail = ? WHERE name = ?',
        next.state,
        next.since,
        next.holdingSince,
        next.evaluatedAt,
        next.notifiedAt,
        next.detail,
        next.name,
      );
      if (change) {
        await this.#run('INSERT INTO savedq_alert_history (name, at, old_state, new_state, detail) VALUES (?, ?, ?, ?, ?)', change.alert, change.at, change.oldState, change.newState, change.detail);
        await this.#run(
          'DELETE FROM savedq_alert_history WHERE name = ? AND id <= (SELECT id FROM savedq_alert_history WHERE name = ? ORDER BY id DESC LIMIT 1 OFFSET ?)',
          change.alert,
          change.alert,
          HISTORY_KEPT,
        );
      }
      for (const n of notifications) {
        await this.#run('INSERT INTO savedq_alert_outbox (name, target, payload, created_at, next_at) VALUES (?, ?, ?, ?, ?)', next.name, JSON.stringify(n.target), n.payload, now, now);
      }
    }, true);
  }

  /** An alert's notifications not yet delivered nor abandoned, oldest first. */
  waiting(name: string): Promise<(Delivery & { nextAt: number })[]> {
    return this.#inTurn(async () => {
      const rows = await this.#all<{ id: number; name: string; target: string; payload: string; created_at: number; next_at: number; attempts: number }>(
        'SELECT id, name, target, payload, created_at, next_at, attempts FROM savedq_alert_outbox WHERE name = ? AND delivered_at IS NULL AND given_up_at IS NULL ORDER BY id',
        name,
      );
      return rows.map((r) => ({ id: r.id, alert: r.name, target: JSON.parse(r.target) as Target, payload: r.payload, createdAt: r.created_at, nextAt: r.next_at, attempts: r.attempts }));
    });
  }

  /** The names of alerts with notifications waiting (an alert whose file is gone still delivers what it owes). */
  owing(): Promise<string[]> {
    return this.#inTurn(async () => (await this.#all<{ name: string }>('SELECT DISTINCT name FROM savedq_alert_outbox WHERE delivered_at IS NULL AND given_up_at IS NULL')).map((r) => r.name));
  }

  delivered(id: number, now: number): Promise<void> {
    return this.#inTurn(async () => {
      await this.#run('UPDATE savedq_alert_outbox SET delivered_at = ?, attempts = attempts + 1, last_error = NULL WHERE id = ?', now, id);
    });
  }

  /** A failed attempt: tried again at `nextAt`, or abandoned (`nextAt` undefined). */
  failed(id: number, error: string, nextAt: number | undefined, now: number): Promise<void> {
    return this.#inTurn(async () => {
      if (nextAt === undefined) await this.#run('UPDATE savedq_alert_outbox SET given_up_at = ?, attempts = attempts + 1, last_error = ? WHERE id = ?', now, error, id);
      else await this.#run('UPDATE savedq_alert_outbox SET next_at = ?, attempts = attempts + 1, last_error = ? WHERE id = ?', nextAt, error, id);
    });
  }

  /** Per alert: notifications waiting, and the last failure's reason. */
  outboxSummary(): Promise<Map<string, { waiting: number; lastError: string | null }>> {
    return this.#inTurn(async () => {
      const rows = await this.#all<{ name: string; waiting: number; last_error: string | null }>(
        'SELECT name, count(*) AS waiting, max(last_error) AS last_error FROM savedq_alert_outbox WHERE delivered_at IS NULL AND given_up_at IS NULL GROUP BY name',
      );
      return new Map(rows.map((r) => [r.name, { waiting: r.waiting, lastError: r.last_error }]));
    });
  }

  /** An alert's latest changes, newest first. */
  history(name: string, limit: number): Promise<Change[]> {
    return this.#inTurn(async () =>
      (await this.#all<{ name: string; at: number; old_state: AlertState | null; new_state: AlertState; detail: string }>('SELECT * FROM savedq_alert_history WHERE name = ? ORDER BY id DESC LIMIT ?', name, limit)).map(
        (r) => ({ alert: r.name, at: r.at, oldState: r.old_state, newState: r.new_state, detail: r.detail }),
      ),
    );
  }

  /** Deletes all that is kept of an alert: its state, its history, its notifications. */
  forget(name: string): Promise<void> {
    return this.#inTurn(async () => {
      for (const table of ['savedq_alert_state', 'savedq_alert_history', 'savedq_alert_outbox']) await this.#run(`DELETE FROM ${table} WHERE name = ?`, name);
    }, true);
  }

  /** Deletes notifications delivered or abandoned more than a week ago. */
  prune(now: number): Promise<void> {
    return this.#inTurn(async () => {
      await this.#run('DELETE FROM savedq_alert_outbox WHERE coalesce(delivered_at, given_up_at) < ?', now - SENT_KEPT_MS);
    });
  }

  close(): Promise<void> {
    return this.#inTurn(() => new Promise<void>((resolve) => this.#db.close(() => resolve())));
  }
}
