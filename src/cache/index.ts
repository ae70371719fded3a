import { renameSync } from 'node:fs';
import { dirname } from 'node:path';
import type Keyv from 'keyv';
import { makeDirectory } from '../fs.js';
import type { NormalisedParams, Row } from '../queries/types.js';

/** A stored result. */
export interface CachedResult {
  readonly rows: Row[];
  /** When the rows were computed (epoch ms, by the library's clock). */
  readonly computedAt: number;
}

/** The call behind a cache entry, enough to run it again. */
export interface CachedCall {
  /** Endpoint id. */
  readonly endpoint: string;
  /** The digest of the definition the result was computed by (absent in entries of older versions). */
  readonly digest?: string;
  readonly params: NormalisedParams;
  /** Canonical --at instant, or '' for "now". */
  readonly at: string;
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

/** A served call, by its cache key. */
export interface CacheEntry extends ServedRecord {
  readonly key: string;
}

/** Every key savedq keeps: `result:`, `served:` and `definition:` ones under it. */
const NAMESPACE = 'savedq';
/** SQLite waits this long for another process's write before giving up. */
const BUSY_TIMEOUT_MS = 10_000;
/** Entries are kept in SQLite a little longer than they are served, so a slow warm can still see them. */
const RETENTION_MS = 3_600_000;
/** A definition's reading is kept while it is in use (it is looked up by its text, so never stale). */
const DEFINITION_RETENTION_MS = 7 * 24 * 3_600_000;

/**
 * The cache key of a call: endpoint id and the digest of its definition, then its normalised parameters
 * and --at as JSON. Kept as text rather than hashed: it is short and exact.
 */
export function cacheKey(call: CachedCall): string {
  return `${call.endpoint}:${call.digest ?? ''}:${JSON.stringify([Object.entries(call.params), call.at])}`;
}

/**
 * The results cache: a SQLite file through keyv + @keyv/sqlite, shared safely by several processes
 * (WAL journal, busy timeout, one statement per write). A broken cache never breaks a query: the first
 * failure disables it for this process and leaves a warning for the caller to show; a file that is not
 * a database is moved aside and rebuilt.
 */
export class ResultsCache {
  readonly file: string;
  #keyv: Promise<Keyv> | undefined;
  #disabled = false;
  readonly warnings: string[] = [];

  constructor(file: string) {
    this.file = file;
  }

  async #open(): Promise<Keyv> {
    const [{ default: KeyvClass }, { default: KeyvSqlite }] = await Promise.all([import('keyv'), import('@keyv/sqlite')]);
    makeDirectory(dirname(this.file));
    const connect = async (): Promise<Keyv> => {
      const store = new KeyvSqlite({ uri: `sqlite://${this.file}`, busyTimeout: BUSY_TIMEOUT_MS, iterationLimit: 1000 });
      store.on('error', () => undefined); // failures reach us through the rejected query below
      await store.query('PRAGMA journal_mode = WAL');
      await store.query('PRAGMA synchronous = NORMAL');
      // throwOnErrors: keyv otherwise turns a failed read into a silent miss, and we want to warn.
      const keyv = new KeyvClass({ store, namespace: NAMESPACE, throwOnErrors: true });
      keyv.on('error', () => undefined);
      return keyv;
    };
    try {
      return await connect();
    } catch (err) {
      if (!isCorrupt(err)) throw err;
      // Not a database (or damaged): keep the old file for inspection and start a new one.
      renameSync(this.file, `${this.file}.corrupt-${Date.now()}`);
      this.warnings.push(`cache file ${this.file} was damaged; moved it aside and started a new one.`);
      return connect();
    }
  }

  async #store(): Promise<Keyv | undefined> {
    if (this.#disabled) return undefined;
    this.#keyv ??= this.#open();
    try {
      return await this.#keyv;
    } catch (err) {
      this.#fail(err);
      return undefined;
    }
  }

  #fail(err: unknown): void {
    if (this.#disabled) return;
    this.#disabled = true;
    const reason = err instanceof Error ? err.message.replace(/^SQLITE_\w+:\s*/, '') : String(err);
    this.warnings.push(`results cache ${this.file} is not usable (${reason}); answering without it.`);
  }

  /** Runs a cache operation; any failure disables the cache and yields `fallback`. */
  async #guard<T>(fallback: T, op: (keyv: Keyv) => Promise<T>): Promise<T> {
    const keyv = await this.#store();
    if (!keyv) return fallback;
    try {
      return await op(keyv);
    } catch (err) {
      this.#fail(err);
      return fallback;
    }
  }

  /** The stored result of a call, if any (fresh or not: the caller judges its age). */
  get(key: string): Promise<CachedResult | undefined> {
    return this.#guard(undefined, (keyv) => keyv.get<CachedResult>(`result:${key}`));
  }

  /** Stores a result. */
  async set(key: string, result: CachedResult): Promise<void> {
    await this.#guard(undefined, async (keyv) => {
      await keyv.set(`result:${key}`, result, RETENTION_MS);
    });
  }

  /** A saved query's definition as read before (see QueryCatalog's memo), if the cache has it. */
  getDefinition(key: string): Promise<unknown> {
    return this.#guard(undefined, (keyv) => keyv.get(`definition:${key}`));
  }

  /** Keeps a definition as read, for the next call not to parse its file again. */
  async setDefinition(key: string, value: unknown): Promise<void> {
    await this.#guard(undefined, async (keyv) => {
      await keyv.set(`definition:${key}`, value, DEFINITION_RETENTION_MS);
    });
  }

  /** Records that a call was served (which keeps it in the warm set), and when its result was computed. */
  async markServed(key: string, record: ServedRecord): Promise<void> {
    await this.#guard(undefined, async (keyv) => {
      await keyv.set(`served:${key}`, record, RETENTION_MS);
    });
  }

  /**
   * Every served call, for `cache list` and `warm`: the served records alone are read (the store's
   * iterator narrowed to their prefix), never the results' rows.
   */
  entries(): Promise<CacheEntry[]> {
    return this.#guard([], async (keyv) => {
      const entries: CacheEntry[] = [];
      const store = keyv.store as { iterator(prefix: string): AsyncGenerator<[string, unknown]> };
      for await (const [rawKey, raw] of store.iterator(`${NAMESPACE}:served`)) {
        const data = (await keyv.deserializeData(raw as string)) as { value?: ServedRecord; expires?: number } | undefined;
        if (!data?.value || (typeof data.expires === 'number' && data.expires < Date.now())) continue;
        entries.push({ key: rawKey.slice(`${NAMESPACE}:served:`.length), ...data.value });
      }
      return entries;
    });
  }

  /** Removes every entry; returns how many calls were forgotten. */
  clear(): Promise<number> {
    return this.#guard(0, async (keyv) => {
      const n = (await this.entries()).length;
      await keyv.clear();
      return n;
    });
  }

  async close(): Promise<void> {
    const keyv = this.#keyv;
    this.#keyv = undefined;
    if (keyv) await (await keyv.catch(() => undefined))?.disconnect().catch(() => undefined);
  }
}

function isCorrupt(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT';
}
