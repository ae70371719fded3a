import type { SqlSession } from './sql.js';
import type { AlertRecords, AlertState, BucketShare, Change, Delivery, ProcessRecord, StateRecord } from './types.js';

// What the store keeps in tables of its own beside the cached answers, in SQL both backends run as it
// is (store/sql.ts): alerts, leases, rate-limit buckets, the processes that share the store.

/** Changes kept an alert; older ones go. */
const HISTORY_KEPT = 1_000;
/** Delivered and abandoned notifications are kept this long (for `alerts`), then go. */
const SENT_KEPT_MS = 7 * 86_400_000;
/** A process that has said nothing for this long is forgotten. */
const PROCESSES_KEPT_MS = 3_600_000;

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
 * The alerts of one source's data (a data directory's, or a server's: Config.source) on a session
 * (docs/alerts.md): a decision one transaction, an alert evaluated under a lease. An alert's state,
 * history and outbox belong to the source it evaluated: one cache file or store shared by several
 * sources keeps each alert's apart. What a savedq from before kept without a source (`''`) is the
 * first source's to evaluate the alert (taken over at its lease), and listed for any until then.
 */
export function alertRecords(db: SqlSession, source: string): AlertRecords {
  // A source's own rows, and those kept before alerts had a source.
  const mine = "source IN (?, '')";
  return {
    async states() {
      // A source's own row after a row from before, so that its own is the one kept.
      const rows = await db.all<StateRow>(`SELECT name, state, since, holding_since, evaluated_at, notified_at, detail FROM {alert_state} WHERE ${mine} ORDER BY source = ? , name`, [source, source]);
      return new Map(rows.map((r) => [r.name, recordOf(r)]));
    },

    lease(name, owner, until, now, isGone) {
      return db.transaction(async (tx) => {
        // What was kept of the alert before alerts had a source becomes this source's, unless it has its own.
        const own = await tx.all<{ n: number | string }>('SELECT CAST(count(*) AS INTEGER) AS n FROM {alert_state} WHERE source = ? AND name = ?', [source, name]);
        if (Number(own[0]?.n ?? 0) === 0) {
          for (const table of ['alert_state', 'alert_history', 'alert_outbox']) await tx.run(`UPDATE {${table}} SET source = ? WHERE source = '' AND name = ?`, [source, name]);
        }
        await tx.run('INSERT INTO {alert_state} (source, name) VALUES (?, ?) ON CONFLICT (source, name) DO NOTHING', [source, name]);
        const [held] = await tx.all<{ lease_owner: string | null; lease_until: number | null }>('SELECT lease_owner, lease_until FROM {alert_state} WHERE source = ? AND name = ?', [source, name]);
        // A lease of a process that is gone (killed on this machine) is no one's.
        if (held?.lease_owner && held.lease_owner !== owner && (held.lease_until ?? 0) >= now && !isGone(held.lease_owner)) return undefined;
        const [taken] = await tx.all<StateRow>(
          'UPDATE {alert_state} SET lease_owner = ?, lease_until = ? WHERE source = ? AND name = ? RETURNING name, state, since, holding_since, evaluated_at, notified_at, detail',
          [owner, until, source, name],
        );
        return taken ? recordOf(taken) : undefined;
      });
    },

    async release(name, owner) {
      await db.run('UPDATE {alert_state} SET lease_owner = NULL, lease_until = NULL WHERE source = ? AND name = ? AND lease_owner = ?', [source, name, owner]);
    },

    decide(next, change, notifications, now) {
      return db.transaction(async (tx) => {
        await tx.run('UPDATE {alert_state} SET state = ?, since = ?, holding_since = ?, evaluated_at = ?, notified_at = ?, detail = ? WHERE source = ? AND name = ?', [
          next.state,
          next.since,
          next.holdingSince,
          next.evaluatedAt,
          next.notifiedAt,
          next.detail,
          source,
          next.name,
        ]);
        if (change) {
          await tx.run('INSERT INTO {alert_history} (source, name, at, old_state, new_state, detail) VALUES (?, ?, ?, ?, ?, ?)', [source, change.alert, change.at, change.oldState, change.newState, change.detail]);
          await tx.run('DELETE FROM {alert_history} WHERE source = ? AND name = ? AND id <= (SELECT id FROM {alert_history} WHERE source = ? AND name = ? ORDER BY id DESC LIMIT 1 OFFSET ?)', [
            source,
            change.alert,
            source,
            change.alert,
            HISTORY_KEPT,
          ]);
        }
        for (const n of notifications) {
          await tx.run('INSERT INTO {alert_outbox} (source, name, target, payload, created_at, next_at) VALUES (?, ?, ?, ?, ?, ?)', [source, next.name, n.target, n.payload, now, now]);
        }
      });
    },

    async waiting(name) {
      const rows = await db.all<{ id: number; name: string; target: string; payload: string; created_at: number; next_at: number; attempts: number }>(
        `SELECT id, name, target, payload, created_at, next_at, attempts FROM {alert_outbox} WHERE ${mine} AND name = ? AND delivered_at IS NULL AND given_up_at IS NULL ORDER BY id`,
        [source, name],
      );
      return rows.map((r): Delivery & { nextAt: number } => ({ id: r.id, alert: r.name, target: r.target, payload: r.payload, createdAt: r.created_at, nextAt: r.next_at, attempts: r.attempts }));
    },

    async owing() {
      return (await db.all<{ name: string }>(`SELECT DISTINCT name FROM {alert_outbox} WHERE ${mine} AND delivered_at IS NULL AND given_up_at IS NULL`, [source])).map((r) => r.name);
    },

    async delivered(id, now) {
      await db.run('UPDATE {alert_outbox} SET delivered_at = ?, attempts = attempts + 1, last_error = NULL WHERE id = ?', [now, id]);
    },

    async failed(id, error, nextAt, now) {
      if (nextAt === undefined) await db.run('UPDATE {alert_outbox} SET given_up_at = ?, attempts = attempts + 1, last_error = ? WHERE id = ?', [now, error, id]);
      else await db.run('UPDATE {alert_outbox} SET next_at = ?, attempts = attempts + 1, last_error = ? WHERE id = ?', [nextAt, error, id]);
    },

    async outboxSummary() {
      const rows = await db.all<{ name: string; waiting: number | string; last_error: string | null }>(
        `SELECT name, CAST(count(*) AS INTEGER) AS waiting, max(last_error) AS last_error FROM {alert_outbox} WHERE ${mine} AND delivered_at IS NULL AND given_up_at IS NULL GROUP BY name`,
        [source],
      );
      return new Map(rows.map((r) => [r.name, { waiting: Number(r.waiting), lastError: r.last_error }]));
    },

    async history(name, limit) {
      const rows = await db.all<{ name: string; at: number; old_state: AlertState | null; new_state: AlertState; detail: string }>(
        `SELECT name, at, old_state, new_state, detail FROM {alert_history} WHERE ${mine} AND name = ? ORDER BY id DESC LIMIT ?`,
        [source, name, limit],
      );
      return rows.map((r): Change => ({ alert: r.name, at: r.at, oldState: r.old_state, newState: r.new_state, detail: r.detail }));
    },

    forget(name) {
      return db.transaction(async (tx) => {
        for (const table of ['alert_state', 'alert_history', 'alert_outbox']) await tx.run(`DELETE FROM {${table}} WHERE ${mine} AND name = ?`, [source, name]);
      });
    },

    async prune(now) {
      await db.run('DELETE FROM {alert_outbox} WHERE coalesce(delivered_at, given_up_at) < ?', [now - SENT_KEPT_MS]);
    },
  };
}

/** Takes a lease for `owner` until `now + ms` when it is free, past its time, or the owner's already. */
export async function takeLease(db: SqlSession, name: string, owner: string, ms: number, now = Date.now()): Promise<boolean> {
  const changed = await db.run(
    'INSERT INTO {leases} AS l (name, owner, until) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until WHERE l.until < ? OR l.owner = excluded.owner',
    [name, owner, now + ms, now],
  );
  return changed > 0;
}

/**
 * Takes a lease as takeLease does and, in the same statement, reads keyv's value under `key` (a call's
 * result): its text, read once the lease is this owner's; undefined (not read) when another holds it.
 * Another process stores its answer before it lets go of the lease, so what it stored is seen, but
 * for PostgreSQL's snapshot, taken as the statement began: a lease let go of while the statement
 * waited on it may leave an answer stored just before unseen, and the call is computed once more.
 */
export async function takeLeaseReading(db: SqlSession, name: string, owner: string, ms: number, key: string, now = Date.now()): Promise<{ value: string | null } | undefined> {
  const [row] = await db.all<{ value: string | null }>(
    'INSERT INTO {leases} AS l (name, owner, until) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until WHERE l.until < ? OR l.owner = excluded.owner RETURNING (SELECT value FROM {keyv} WHERE key = ?) AS value',
    [name, owner, now + ms, now, key],
  );
  return row;
}

export async function releaseLease(db: SqlSession, name: string, owner: string): Promise<void> {
  await db.run('DELETE FROM {leases} WHERE name = ? AND owner = ?', [name, owner]);
}

/**
 * Takes `used` calls from a shared token bucket: refilled at `perSecond` since it was last taken from,
 * up to `burst`, then `used` less (below zero: what the callers owe, refused until it is paid back).
 */
export async function takeFromBucket(db: SqlSession, name: string, used: number, perSecond: number, burst: number, now = Date.now()): Promise<BucketShare | undefined> {
  // Typed where PostgreSQL cannot tell a parameter's type (a rate of 2.5 is no bigint); SQLite takes the casts as they are.
  const number = 'CAST(? AS DOUBLE PRECISION)';
  const refilled = `b.tokens + (CAST(? AS BIGINT) - b.at) * ${number} / 1000.0`;
  const [row] = await db.all<{ tokens: number | string }>(
    `INSERT INTO {buckets} AS b (name, tokens, at) VALUES (?, ${number}, CAST(? AS BIGINT)) ON CONFLICT (name) DO UPDATE SET tokens = (CASE WHEN ${refilled} < ${number} THEN ${refilled} ELSE ${number} END) - ${number}, at = CAST(? AS BIGINT) RETURNING tokens`,
    [name, burst - used, now, now, perSecond, burst, now, perSecond, burst, used, now],
  );
  return row ? { tokens: Number(row.tokens) } : undefined;
}

/** Says that a process shares the store; forgets the ones silent for an hour. */
export async function beat(db: SqlSession, process: Omit<ProcessRecord, 'seen'>, now = Date.now()): Promise<void> {
  await db.run(
    'INSERT INTO {processes} (id, host, pid, version, role, seen) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET version = excluded.version, role = excluded.role, seen = excluded.seen',
    [`${process.host}:${process.pid}`, process.host, process.pid, process.version, process.role, now],
  );
  await db.run('DELETE FROM {processes} WHERE seen < ?', [now - PROCESSES_KEPT_MS]);
}

export async function processes(db: SqlSession, since: number): Promise<ProcessRecord[]> {
  const rows = await db.all<{ host: string; pid: number | string; version: string; role: string; seen: number | string }>('SELECT host, pid, version, role, seen FROM {processes} WHERE seen >= ? ORDER BY host, pid', [since]);
  return rows.map((r) => ({ host: r.host, pid: Number(r.pid), version: r.version, role: r.role, seen: Number(r.seen) }));
}
