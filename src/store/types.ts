import type { NormalisedParams, Row } from '../queries/types.js';
import type { QueryStatistics } from '../warehouse/types.js';

// What savedq keeps between calls, as the store holds it (a leaf of the rooms: it imports nothing above).

/** A stored result. */
export interface CachedResult {
  readonly rows: Row[];
  /** The query had more rows than its row limit (entries stored before savedq kept this: absent). */
  readonly truncated?: boolean;
  /** When the rows were computed (epoch ms, by the library's clock). */
  readonly computedAt: number;
  /** What the run that computed them cost (entries stored before savedq kept this: absent, and not served). */
  readonly statistics?: QueryStatistics;
}

/** What the store holds of a call: its result, and when its served record was last written (epoch ms). */
export interface Lookup {
  readonly result: CachedResult | undefined;
  readonly servedAt: number | undefined;
}

/** The call behind a cache entry, enough to run it again. */
export interface CachedCall {
  /** The data source the result was read from (Config.source): one store may serve several. */
  readonly source: string;
  /** The saved query's id. */
  readonly query: string;
  /** The digest of the definition the result was computed by. */
  readonly digest: string;
  readonly params: NormalisedParams;
  /** The call's instant as the cache records it (time.ts's storedAsOf: canonical ISO text, '' for now). */
  readonly at: string;
  /** The generation of the source's data it was computed on; '' for none. */
  readonly generation?: string;
  /** A caller's SQL over the answer, as the engine formats it (so spacing, case and comments make no new entry). */
  readonly sql?: string;
}

/** A call that someone asked for: the warm set is made of these. */
export interface ServedRecord {
  readonly call: CachedCall;
  /** Last time the result was served (epoch ms). */
  readonly servedAt: number;
  /**
   * When the result last served (or warmed) was computed, so that listing the cache and finding the
   * warm set read these small records, never the results' rows.
   */
  readonly computedAt?: number | undefined;
}

/**
 * The generation of a source's data, and whether a load is changing it now: while one is, the
 * generation stays the last whole data's (its answers are still served) and nothing computed is kept.
 */
export interface GenerationState {
  readonly current: string;
  readonly loading: boolean;
}

/** A load under way as the store records it for a source: who, until when it holds (renewed while it runs), and the generation it is when its holder is gone. */
export interface ChangeMark {
  readonly generation: string;
  readonly loading?: { readonly owner: string; readonly until: number; readonly mark: string };
}

/** What an alert is: its condition holds (firing), held for less than its `for` (pending), does not (ok), or could not be told (error). */
export type AlertState = 'ok' | 'pending' | 'firing' | 'error';
export const ALERT_STATES: readonly AlertState[] = ['ok', 'pending', 'firing', 'error'];

/** An alert's state as kept (times in epoch ms of the alerts' clock). */
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
  /** Where it goes, as the alert's file says it (JSON). */
  readonly target: string;
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

/**
 * Alerts' state, history and notifications not yet delivered (docs/alerts.md), each decision one
 * transaction, an alert evaluated under a lease so that one process at a time does it.
 */
export interface AlertRecords {
  states(): Promise<Map<string, StateRecord>>;
  /**
   * Takes an alert for `owner` until `until` (epoch ms of the real clock), unless another process
   * holds it (and is not gone): its state, or undefined when it is another's.
   */
  lease(name: string, owner: string, until: number, now: number, isGone: (owner: string) => boolean): Promise<StateRecord | undefined>;
  release(name: string, owner: string): Promise<void>;
  /** Keeps what an evaluation decided at once: the new state, the change in its history, the notifications it owes. */
  decide(next: StateRecord, change: Change | undefined, notifications: readonly { target: string; payload: string }[], now: number): Promise<void>;
  /** An alert's notifications not yet delivered nor abandoned, oldest first. */
  waiting(name: string): Promise<(Delivery & { nextAt: number })[]>;
  /** The names of alerts with notifications waiting. */
  owing(): Promise<string[]>;
  delivered(id: number, now: number): Promise<void>;
  /** A failed attempt: tried again at `nextAt`, or abandoned (`nextAt` undefined). */
  failed(id: number, error: string, nextAt: number | undefined, now: number): Promise<void>;
  outboxSummary(): Promise<Map<string, { waiting: number; lastError: string | null }>>;
  history(name: string, limit: number): Promise<Change[]>;
  /** Deletes all that is kept of an alert: its state, its history, its notifications. */
  forget(name: string): Promise<void>;
  /** Deletes notifications delivered or abandoned long ago. */
  prune(now: number): Promise<void>;
}

/** A process that shares the store, as it says of itself. */
export interface ProcessRecord {
  readonly host: string;
  readonly pid: number;
  readonly version: string;
  /** What it runs: `serve`, `warm`, `run`, `alerts check`, … */
  readonly role: string;
  /** When it last said so (epoch ms). */
  readonly seen: number;
}

/** A host of a server warehouse found down: since when (epoch ms), and why. */
export interface HostRecord {
  readonly since: number;
  readonly reason: string;
}

/** How long a host found down is tried last by the processes that start after. */
export const HOST_RECORD_MS = 30_000;

/** What a caller's shared bucket says after a process took its calls from it. */
export interface BucketShare {
  /** Tokens left in the shared bucket (below zero: owed, refused until refilled). */
  readonly tokens: number;
}

/** Something another process changed that a long-lived process acts on: a source's data, or the cache emptied. */
export type StoreSignal = { readonly kind: 'generation'; readonly source: string } | { readonly kind: 'cleared' };

/**
 * What a store answers when asked directly (`savedq status`): whether it answers now and how fast, and
 * the version of savedq's tables in it (PostgreSQL; undefined for the SQLite file, and before they are made).
 */
export type StoreProbe =
  | { readonly up: true; readonly seconds: number; readonly tables?: { readonly schema: string; readonly version: number | undefined } }
  | { readonly up: false; readonly seconds: number; readonly reason: string };

/**
 * Where savedq keeps what it keeps between calls (docs/scaling.md): cached answers and what was served,
 * leases, the generation of servers' data, alerts, rate-limit buckets, and the processes that share
 * it. One interface, two backends: the SQLite file (the embedded default) and PostgreSQL (for a team).
 * A store that fails never fails a call: each operation answers its fallback and the store says it is
 * not up (`up`), once a minute in words, until it answers again.
 */
export interface Store {
  readonly backend: 'sqlite' | 'postgres';
  /** Where, as people may be shown it: a file, or a URL without its password. */
  readonly location: string;
  /** Whether it answered its last operation (or has not been asked yet). */
  readonly up: boolean;

  getResult(key: string): Promise<CachedResult | undefined>;
  /** A call's result and when it was last recorded as served, in one read (a cache hit's). */
  lookup(key: string): Promise<Lookup>;
  setResult(key: string, result: CachedResult, ttlMs: number): Promise<void>;
  markServed(key: string, record: ServedRecord, ttlMs: number): Promise<void>;
  /** Every served record still kept (never a result's rows). */
  served(): Promise<ServedRecord[]>;
  /** Forgets one call: its result and its served record. */
  forget(key: string): Promise<void>;
  /** Deletes what is past its time, then, while past `maxBytes`, the least recently served results with their records. */
  prune(maxBytes: number, now: number): Promise<{ expired: number; evicted: number }>;
  /** Bytes that what is kept takes now. */
  bytes(): Promise<number>;
  /** Forgets every cached answer and served record; how many calls were forgotten. */
  clear(): Promise<number>;

  /** The generation of a server's data, as loads through savedq set it ('' before the first). */
  generation(source: string): Promise<GenerationState>;
  /** A load into a server's data begins (or goes on: renewed), held by `owner` for `ms`. */
  changing(source: string, owner: string, ms: number): Promise<void>;
  /** A load into a server's data has ended: a new generation. */
  changed(source: string): Promise<void>;

  /** Takes a lease for `owner` for `ms` when no other owner holds it now; whether it was taken. */
  lease(name: string, owner: string, ms: number): Promise<boolean>;
  /**
   * Takes a lease as `lease` does, and reads a call's stored result in the same statement, once the
   * lease is taken (another process stores its answer before it lets go of the lease): one trip to
   * the store where a lease and a read took two. `result` is read only when the lease is taken.
   */
  leaseReading(name: string, owner: string, ms: number, key: string): Promise<{ taken: boolean; result?: CachedResult }>;
  release(name: string, owner: string): Promise<void>;

  /**
   * The hosts of a server warehouse that some process sharing the store found down (refused, hung)
   * within the last HOST_RECORD_MS, by host (its URL without its password): when, and why. A process
   * that starts meanwhile tries them last (CONTRACT §20: what one process learns, the next knows).
   */
  hostsDown(hosts: readonly string[]): Promise<Map<string, HostRecord>>;
  /** Records a host found down, or clears its record (undefined) once it answers a probe. */
  markHost(host: string, down: HostRecord | undefined): Promise<void>;

  /** Takes `used` calls from a caller's shared bucket (`perSecond`, bursts of `burst`), refilled as time passes. */
  takeFromBucket(bucket: string, used: number, perSecond: number, burst: number): Promise<BucketShare | undefined>;

  /** Says that this process shares the store, and what it runs (kept a minute). */
  beat(process: Omit<ProcessRecord, 'seen'>): Promise<void>;
  /** The processes that said so since `since`. */
  processes(since: number): Promise<ProcessRecord[]>;

  /** Tells the others what this process changed (a long-lived one listens, or asks every half second). */
  signal(what: StoreSignal): Promise<void>;
  /** Listens for the others' signals; returns how to stop. */
  listen(onSignal: (what: StoreSignal) => void): () => void;

  /** The alerts of one source's data (Config.source): each alert's state, history and outbox are the source's. */
  alerts(source: string): AlertRecords;

  /** Asks the store now, past its health (no fallback, no warning): for `savedq status`. */
  probe(): Promise<StoreProbe>;

  /** Tells `listener` how long each operation took, and whether the store is up after it. */
  observe(listener: (operation: string, seconds: number, up: boolean) => void): () => void;
  close(): Promise<void>;
}

/**
 * What this machine remembers of its own files and checks, beside the cache file's path (store/memo.ts:
 * a file a key, or a bounded map in a server's memory): never stale, each key naming what it is of
 * (memoKeys). Not kept in a team's store: what a machine read of its own files is its own.
 */
export interface LocalMemo {
  get(key: string): Promise<unknown>;
  set(key: string, value: unknown): Promise<void>;
}
